"""The signal guard when its raise is lost: Python swallows an exception raised in a finalizer or a garbage
collector's callback, so the handler's KeyboardInterrupt may never reach the run. The run must stop anyway:
no target starts after the signal, shutting one down waits for nothing, and the next test re-raises."""

from __future__ import annotations

import signal
import sys

import anyio
import pytest

from acp_conformance.interruption import Interrupted, SignalGuard
from acp_conformance.wire.transcript import Transcript
from acp_conformance.wire.transport import Transport


class _Swallows:
    """Runs the signal handler where CPython would run it inside a finalizer: the exception is lost."""

    def __del__(self):
        signal.raise_signal(signal.SIGHUP)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_swallowed_signal_still_stops_the_run(tmp_path):
    guard = SignalGuard(owner=True).install()
    try:
        # a live target, hanging as the run is signalled
        async def scenario() -> tuple[str, float]:
            t = Transport([sys.executable, "-c", "import time; time.sleep(60)"], Transcript(), cwd=tmp_path)
            await t.spawn()
            obj = _Swallows()
            del obj  # the handler runs in __del__: its Interrupted is printed as "ignored", not raised
            assert guard.signum == signal.SIGHUP
            t0 = anyio.current_time()
            how = await t.shutdown(grace=5.0)  # would wait 3 x 5 s on a target that ignores stdin EOF
            return how, anyio.current_time() - t0

        how, took = anyio.run(scenario)
        assert "SIGKILL" in how and "SIGHUP" in how and took < 1.0, (how, took)
        with pytest.raises(KeyboardInterrupt):  # no new target starts: the run unwinds as for Ctrl-C
            anyio.run(Transport([sys.executable, "-c", "pass"], Transcript(), cwd=tmp_path).spawn)
        with pytest.raises(Interrupted):
            guard.raise_if_stopped()  # what the plugin does before the next test
        assert guard.exit_status == 128 + signal.SIGHUP
    finally:
        guard.sweep()
        guard.uninstall()

    async def starts_again() -> None:  # uninstalled: a process that goes on may start targets again
        # a process that lives until discarded: one that exits at once may be seen gone under load
        t = Transport([sys.executable, "-c", "import time; time.sleep(60)"], Transcript(), cwd=tmp_path)
        await t.spawn()
        assert t.running
        await t.discard()

    anyio.run(starts_again)
