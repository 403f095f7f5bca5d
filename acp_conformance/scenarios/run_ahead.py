"""Run ahead: the next scenario tests' drives run while the current test runs; each is judged when pytest reaches it.

An agent test mostly waits on its target, and each test has a target process and a directory of its own: the
drives of the next K tests (``--acp-run-ahead K``) can run beside the current one on the process's one event
loop (the TestLoop's), with their monitors fed as the frames come. Judging, reporting and the order of the tests
are unchanged: pytest reaches each test in turn, which waits for the rest of its drive and judges it.

What runs ahead is what is known to come next: in a serial run the next K tests in pytest's order; in an xdist
worker only the next test (pytest's ``nextitem``). The window stops before anything that must run alone: a fuzz
test, a test of another kind, a scenario with ``options: {prestart: false}`` or ``{run_ahead: false}`` (a scenario
whose verdict depends on timing: the cancel windows, for one); such a test also runs with nothing beside it, as
does a rerun (``--acp-rerun-failures``: the drives in flight end first).

The care for targets that cannot run twice at once: a drive that ran beside another and whose target died or would
not start (``RunResult.target_gone``) is driven again in place, alone, and running ahead is off for the rest of the
run (the drives then in flight are cancelled; their tests are driven in place). A drive beside others that ended
on a timeout (``--acp-timeout``, ``--acp-test-timeout``: the extra load may have made the target late) is driven
again alone, once the drives ahead have ended, and its verdict is the one of that drive; after LATE_LIMIT tests
that timed out also alone (a target that hangs), the rest of the run goes one test at a time. A signal's sweep kills every
target (they are registered like any other); ``close`` cancels the drives in flight and removes their directories.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from .prestart import TestLoop

DEFAULT_DEPTH = 5  # bench_suite.py, serial: 5 ahead took 0.66 (reference) and 0.80 (TypeScript) of the time of 2
LATE_LIMIT = 3  # tests that timed out also alone before running ahead stops (a silent or hanging target)
CLOSE_WAIT = 10.0  # s: cancelled drives shut their targets down (the ladder's grace) within this


def add_options(group) -> None:
    group.addoption("--acp-run-ahead", dest="acp_run_ahead", type=int, default=None, metavar="N",
                    help=f"drive the next N agent tests while the current one runs, judging each in turn "
                         f"(default {DEFAULT_DEPTH}; 0: one test at a time; off with --acp-no-prestart and "
                         f"--acp-agent-cwd)")


def depth_for_run(config, run) -> int:
    """How many tests run ahead: the option's N, 0 where the tests cannot run beside each other."""
    n = config.getoption("acp_run_ahead", default=None)
    n = DEFAULT_DEPTH if n is None else n
    if n < 0 or run.side != "agent" or run.cwd or config.getoption("acp_no_prestart", default=False):
        return 0
    return n


@dataclass
class Drive:
    """One scenario's run against its own target: ``body`` drives it; ``data`` is what the test judges with."""
    body: Callable[[], Awaitable[Any]]
    cleanup: Callable[[], None]
    data: Any = None
    ahead: bool = False  # started before its own test began (so it ran beside another)
    again: bool = False  # driven again in place, alone (``why``): its drive beside others lost its target or timed out
    why: str = ""
    task: asyncio.Task | None = None
    result: Any = None
    started: float = 0.0
    ended: float = 0.0
    waited: float = field(default=0.0)  # s its test waited for it (the rest of the drive)

    @property
    def seconds(self) -> float:
        return max(0.0, self.ended - self.started)

    async def _run(self) -> Any:
        self.started = time.monotonic()
        try:
            self.result = await self.body()
        finally:
            self.ended = time.monotonic()
        return self.result

    def start(self) -> None:
        """Starts the drive as a task of the running loop (called inside it)."""
        if self.task is None:
            self.task = asyncio.ensure_future(self._run())


Upcoming = list[tuple[str, Callable[[], Drive]]]  # (test id, a fresh Drive for it), in the order they will run


def _timed_out(result: Any) -> bool:
    """The drive ended on a timeout (an awaited answer, or the whole test's): a verdict the load can change."""
    return getattr(result, "error_kind", None) in ("timeout", "test-timeout")


class RunAhead:
    """Drives the current test, with the next ones' drives started beside it."""

    def __init__(self, loop: TestLoop, depth: int):
        self.loop = loop
        self.depth = depth if loop.one_loop else 0  # drives beside each other need the process's one loop
        self._drives: dict[str, Drive] = {}
        self._driven: set[str] = set()  # the tests driven so far (a second drive of one is a rerun)
        self.nextitem: Any = None  # the test pytest runs next (what an xdist worker knows of its order)
        self.ahead = 0  # drives that ran ahead and were judged
        self.again = 0  # drives done again alone
        self.late = 0  # drives that timed out beside others and again alone
        self.off_reason: str | None = None

    @property
    def on(self) -> bool:
        return self.depth > 0 and self.off_reason is None

    def drive(self, key: str, make: Callable[[], Drive], upcoming: Upcoming) -> Drive:
        """Drive test ``key`` to its end (started ahead, or now) while the drives of ``upcoming`` (cut by the
        caller before anything that must run alone; the first ``depth`` of it) run beside it. Returns its Drive."""
        rerun = key in self._driven  # --acp-rerun-failures runs a failed test again, alone
        self._driven.add(key)
        if rerun and self._drives:
            self.loop.run(self._settle)  # the drives ahead end first (their tests take their results later)
        drive = self._drives.pop(key, None)
        if drive is None:
            drive = make()
        if self.on and not rerun:
            for k, m in upcoming[:self.depth]:
                if k not in self._drives:
                    d = m()
                    d.ahead = True
                    self._drives[k] = d
        beside = drive.ahead or bool(self._drives)  # other targets ran while this one did
        self._wait(drive)
        if beside and getattr(drive.result, "target_gone", False) and self.off_reason is None:
            self.turn_off("a target driven beside another died or would not start: no more running ahead in this run")
            drive = self._again(drive, make, self.off_reason)  # what a target that cannot run twice at once needs
        elif beside and _timed_out(drive.result):
            drive = self._again(drive, make, "it timed out beside other tests")  # the load may have made it late
            if _timed_out(drive.result):  # late alone too: the target's own time, not the load's
                self.late += 1
                if self.late >= LATE_LIMIT:  # every timeout would cost twice: run the rest one at a time
                    self.turn_off(f"{LATE_LIMIT} tests timed out also alone: no more running ahead in this run")
        elif drive.ahead:
            self.ahead += 1
        return drive

    def _again(self, drive: Drive, make: Callable[[], Drive], why: str) -> Drive:
        """Drive the test again with nothing beside it (the drives ahead end first): its verdict is then the one a
        run without running ahead would give."""
        drive.cleanup()
        if self._drives:
            self.loop.run(self._settle)
        drive = make()
        drive.again, drive.why = True, why
        self._wait(drive)
        self.again += 1
        return drive

    def _wait(self, drive: Drive) -> None:
        waiting = time.monotonic()
        try:
            self.loop.run(lambda: self._finish(drive))
        except BaseException:  # an interruption: the drive is no test's any more
            if drive.task is not None:
                drive.task.cancel()
            drive.cleanup()
            raise
        drive.waited = time.monotonic() - waiting

    async def _finish(self, drive: Drive) -> None:
        for d in self._drives.values():
            d.start()
        drive.start()
        assert drive.task is not None
        await asyncio.shield(drive.task)  # an interruption cancels this wait; close() cancels the drive

    async def _settle(self) -> None:
        for d in self._drives.values():
            d.start()
        await asyncio.gather(*(asyncio.shield(d.task) for d in self._drives.values() if d.task is not None),
                             return_exceptions=True)

    def turn_off(self, why: str) -> None:
        """No more drives beside each other in this run; those in flight are cancelled (their tests drive in place)."""
        self.off_reason = why
        self._cancel()

    def _cancel(self) -> None:
        drives, self._drives = list(self._drives.values()), {}
        tasks = [d.task for d in drives if d.task is not None and not d.task.done()]
        for t in tasks:
            t.cancel()
        if tasks:
            async def reap() -> None:
                with contextlib.suppress(asyncio.TimeoutError):  # the sweep at the end kills what is left
                    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), CLOSE_WAIT)
            with contextlib.suppress(BaseException):
                self.loop.run(reap)
        for d in drives:
            d.cleanup()

    def close(self) -> None:
        """End of the run (or a signal): cancel the drives no test took, remove their directories."""
        self._cancel()
