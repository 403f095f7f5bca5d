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


def test_a_signal_under_the_ast_constructor_is_raised_once_out_of_it():
    """CPython 3.11 turns an exception raised by Python code run mid-``ast.parse`` (a finalizer the garbage collector
    runs there, under pytest's assertion rewriting of a module imported late) into "SystemError: AST constructor
    recursion depth mismatch": the run would end with a traceback and status 1. The handler puts the raise off and
    the signal comes again; then it raises."""
    import time
    from types import SimpleNamespace

    from acp_conformance.interruption import _under_the_ast_constructor
    caller = SimpleNamespace(f_code=SimpleNamespace(co_filename="/usr/lib/python3.11/ast.py"), f_back=None)
    finalizer = SimpleNamespace(f_code=SimpleNamespace(co_filename="/x/asyncio/base_subprocess.py"), f_back=caller)
    assert _under_the_ast_constructor(finalizer) and not _under_the_ast_constructor(sys._getframe())
    guard = SignalGuard(owner=True).install()
    try:
        guard._handle(signal.SIGHUP, finalizer)  # no raise here
        assert guard.signum == signal.SIGHUP
        with pytest.raises(Interrupted):
            for _ in range(200):  # the signal, sent again, interrupts this wait (10 s at most)
                time.sleep(0.05)
        assert guard.exit_status == 128 + signal.SIGHUP
    finally:
        guard.sweep()
        guard.uninstall()


def test_a_target_shut_down_as_the_run_stops_leaves_nothing_to_a_closed_loop(tmp_path, monkeypatch):
    """Its pipes are closed inside the loop: a subprocess transport left open is collected after the loop has closed
    and prints "Exception ignored ... Event loop is closed" as the run unwinds."""
    import gc
    import threading

    from acp_conformance.wire import transport

    monkeypatch.setattr(transport, "_STOPPING", [])
    lost: list = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: lost.append(f"{u.exc_type.__name__}: {u.exc_value}"))

    async def stopped_target() -> str:
        t = Transport([sys.executable, "-c", "import time; time.sleep(60)"], Transcript(), cwd=tmp_path)
        await t.spawn()
        transport._STOPPING.append("SIGHUP")  # as the signal handler does
        return await t.shutdown(grace=5.0)

    gc.disable()  # the transports are collected below, once their loops have closed, as at the end of a run
    try:
        for _ in range(3):  # (asyncio's own timing may close a transport in time: three chances to see one left)
            transport._STOPPING.clear()
            assert anyio.run(stopped_target) == "killed with SIGKILL (SIGHUP)"
    finally:
        gc.enable()
    for waiter in [t for t in threading.enumerate() if t.name.startswith("asyncio-waitpid")]:
        waiter.join(5)  # asyncio's thread that waited for the killed process lets go of its transport
    gc.collect()
    assert lost == []
