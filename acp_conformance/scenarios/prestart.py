"""Start-ups off the critical path: the next test's target process starts while the current test runs.

A real agent spends most of a short scenario starting (Node loading its SDK, Python importing its
package): started one test ahead, in a fresh directory of its own, it is ready when its test begins,
as the fuzzer's spare is for its next example. The tests of one pytest process then run on one event
loop (``asyncio.Runner``, Python 3.11+), since a process started on a loop is read through that loop.

The care for targets that cannot run twice at once (a lock, a port, a single-instance check): a
spare that died before its test took it is discarded, the test starts its own process, and no spare
is started again in this run. ``--acp-no-prestart`` turns spares off; they are off by themselves with
``--acp-cwd`` (every test would share the directory) and on Python 3.10. A scenario that must see its
target start with it sets ``options: {prestart: false}`` (it then starts its own; the spare waits for
the next test). Only the first connection of a test uses a spare; a ``restart`` starts its own.

Spares are registered like every target (the transport's live registry): a signal's sweep kills them,
and ``close`` (pytest_unconfigure) discards the last one with its directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio

from ..wire.transcript import Transcript
from ..wire.transport import TargetError, Transport

TMP_PREFIX = "acp-conformance-"


@dataclass
class Spare:
    transport: Transport
    workdir: Path
    key: tuple  # (argv, env): a spare serves only a test of the same target


def add_options(group) -> None:
    group.addoption("--acp-no-prestart", dest="acp_no_prestart", action="store_true", default=False,
                    help="start each test's agent when the test starts, not during the test before it (for an "
                         "agent that cannot run twice at once; on by itself with --acp-agent-cwd)")


def for_run(config, run) -> "TestLoop":
    """The run's TestLoop (``run``: its RunConfig): spares for an agent in fresh directories, unless
    --acp-no-prestart."""
    return TestLoop(enabled=run.side == "agent" and not run.cwd
                    and not config.getoption("acp_no_prestart", default=False))


class TestLoop:
    """Runs each test's driver, and keeps the spare for the next test (when ``enabled``)."""

    __test__ = False  # not a pytest test class, despite its name

    def __init__(self, enabled: bool):
        self.enabled = enabled and sys.version_info >= (3, 11)
        self._runner = asyncio.Runner() if self.enabled else None  # one loop for the process's tests
        self.spare: Spare | None = None
        self.started = 0  # spares started
        self.used = 0  # spares a test took
        self.died = 0  # spares that died before a test could take them (prestarting then stops)

    @property
    def one_loop(self) -> bool:
        """The process's tests run on one event loop (what lets drives run beside each other: run_ahead.py)."""
        return self._runner is not None

    def run(self, fn: Callable[[], Awaitable[Any]]) -> Any:
        if self._runner is None:
            return anyio.run(fn)
        return self._runner.run(fn())

    def take(self, argv: list[str], env: dict[str, str], wanted: bool = True) -> Spare | None:
        """The spare started for this test, when it is alive and of this target; then the next test's
        spare starts (it boots while this test runs). None: the test starts its own process."""
        if not self.enabled:
            return None
        key = (tuple(argv), tuple(sorted(env.items())))
        spare, self.spare = self.spare, None
        if spare is not None and (not wanted or spare.key != key):
            if spare.key == key:
                self.spare = spare  # kept for the next test, which may want it
            else:
                self._discard(spare)
            spare = None
        elif spare is not None and not self._alive(spare):  # a lock or a port held by the other process?
            self._discard(spare)
            self.died += 1
            self.enabled = False  # this target cannot run twice at once: no more spares in this run
            return None
        if spare is not None:
            self.used += 1
        if self.spare is None:
            self.spare = self._start(argv, env, key)
        return spare

    def _alive(self, spare: Spare) -> bool:
        """Still running: its exit, if it came while no test ran, is read first (the loop runs a moment), and
        the process is asked for directly too (a reaped child whose exit the loop has not seen yet)."""
        self.run(lambda: anyio.sleep(0))
        process = spare.transport.process
        if not spare.transport.running or process is None:
            return False
        try:
            os.kill(process.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # pragma: no cover - not ours any more
            return False
        return not _exited(process.pid)

    def _start(self, argv: list[str], env: dict[str, str], key: tuple) -> Spare | None:
        workdir = Path(tempfile.mkdtemp(prefix=TMP_PREFIX)).resolve()
        transport = Transport(argv, Transcript(), cwd=workdir, env=env)
        try:
            self.run(transport.spawn)
        except TargetError:  # the test starts its own process, and says why it cannot
            shutil.rmtree(workdir, ignore_errors=True)
            return None
        self.started += 1
        return Spare(transport, workdir, key)

    def _discard(self, spare: Spare) -> None:
        with contextlib.suppress(Exception):
            self.run(spare.transport.discard)
        shutil.rmtree(spare.workdir, ignore_errors=True)

    def close(self) -> None:
        """Discard the spare no test took, and close the loop (end of the run, or after a signal)."""
        if self.spare is not None:
            spare, self.spare = self.spare, None
            self._discard(spare)
        if self._runner is not None:
            with contextlib.suppress(Exception):
                self._runner.close()
            self._runner = None


def _exited(pid: int) -> bool:
    """An exited child not reaped yet (a zombie) still answers kill(pid, 0): /proc tells, where there is one."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return False
