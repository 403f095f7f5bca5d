"""Stopping on a signal: SIGTERM (what a CI timeout sends) and SIGHUP (a closed terminal) kill every
target process at once, then unwind the run like Ctrl-C, so that the partial report is written and
the exit status is 128 + the signal's number. SIGINT keeps Python's own handler (asyncio cancels the
running test gracefully on it); the sweep at the end of the run catches what it might leave.

The targets run in sessions of their own (so that the shutdown ladder reaches their descendants),
which also means a signal to the suite's process group never reaches them: without this, a CI
timeout leaves every target running. Killing them first, synchronously, is what makes the unwinding
safe: nothing then waits on a target that ignores stdin EOF or SIGTERM.
"""

from __future__ import annotations

import os
import signal
import threading
import uuid
from typing import Callable

from .wire.transport import RUN_VAR, kill_live_targets, kill_run, resume_starts, stop_all

SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """Raised by the handler: a KeyboardInterrupt, so that pytest and anyio unwind as for Ctrl-C."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


class SignalGuard:
    """Installs the handlers (in the main thread only) and remembers the first signal received.

    ``run_id`` marks the run's processes (RUN_VAR, inherited by xdist workers and the targets); the
    process that owns the run sweeps the targets of all of them by it.
    """

    def __init__(self, *, owner: bool, on_signal: Callable[[int], None] | None = None):
        self.owner = owner
        self.on_signal = on_signal
        self.signum: int | None = None
        self._previous: dict[int, object] = {}
        self._env_before: str | None = None
        self._owed = False  # the raise was put off (the signal landed under the AST constructor)
        self._later: threading.Timer | None = None
        self.run_id = os.environ.get(RUN_VAR) if not owner else uuid.uuid4().hex
        # while the run is being set up (pytest_configure: the version probe starts the target), a signal kills
        # the targets and is remembered, not raised: a raise there would escape pytest's unwinding; the first
        # test's setup raises it (raise_if_stopped), so the partial report and the exit status are as always
        self.defer = False

    def install(self) -> "SignalGuard":
        if self.owner:
            self._env_before = os.environ.get(RUN_VAR)
            os.environ[RUN_VAR] = self.run_id
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                try:
                    self._previous[sig] = signal.signal(sig, self._handle)
                except (ValueError, OSError):  # pragma: no cover - a platform without the signal
                    pass
        return self

    def sweep(self) -> None:
        """Kill whatever target is still running (this process's, and with the owner, the whole run's)."""
        kill_live_targets()
        if self.owner and self.run_id:
            kill_run(self.run_id)

    def uninstall(self) -> None:
        if self._later is not None:
            self._later.cancel()  # never a signal sent again once the default handlers are back
        for sig, handler in self._previous.items():
            try:
                signal.signal(sig, handler)
            except (ValueError, OSError, TypeError):  # pragma: no cover
                pass
        self._previous.clear()
        resume_starts()  # a process that goes on (a test calling the CLI in-process) may start targets again
        if self.owner:
            if self._env_before is None:
                os.environ.pop(RUN_VAR, None)
            else:
                os.environ[RUN_VAR] = self._env_before

    @property
    def exit_status(self) -> int | None:
        return None if self.signum is None else 128 + self.signum

    def raise_if_stopped(self) -> None:
        """Raise again what the handler raised: a raise that landed where Python swallows exceptions (a
        finalizer, a callback run by the garbage collector) must not let the run go on to the next test."""
        if self.signum is not None:
            raise Interrupted(self.signum)

    def _handle(self, signum: int, frame) -> None:
        stop_all(f"the run was stopped by {signal.Signals(signum).name}")
        self.sweep()
        if self.signum is None:
            self.signum = signum
            if self.on_signal is not None:
                self.on_signal(signum)
        elif not self._owed:
            return  # a second signal while the run unwinds: the targets are dead again, the report is being written
        if self.defer:
            return
        if _under_the_ast_constructor(frame):  # CPython 3.11 turns a raise there into SystemError: raise it later
            self._owed = True
            self._later = threading.Timer(AGAIN_AFTER, os.kill, (os.getpid(), self.signum))
            self._later.daemon = True
            self._later.start()
            return
        self._owed = False
        raise Interrupted(self.signum)


AGAIN_AFTER = 0.05  # s: a signal that landed under the AST constructor is sent again after this
_AST_FILES = (os.sep + "ast.py", os.sep + os.path.join("assertion", "rewrite.py"))  # ast.parse; pytest's rewriting


def _under_the_ast_constructor(frame) -> bool:
    """The signal landed in Python code run while C code builds or reads AST objects (a finalizer the garbage
    collector runs mid-``ast.parse``, under pytest's assertion rewriting of a module imported late): an exception
    raised there comes out as "SystemError: AST constructor recursion depth mismatch", not as the interruption."""
    depth = 0
    while frame is not None and depth < 64:
        if frame.f_code.co_filename.endswith(_AST_FILES):
            return True
        frame, depth = frame.f_back, depth + 1
    return False
