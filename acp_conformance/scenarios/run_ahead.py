"""Run ahead: the next scenario tests' drives run while the current test runs; each is judged when pytest reaches it.

An agent test mostly waits on its target, and each test has a target process and a directory of its own: the
drives of the tests that come next can run beside the current one on the process's one event loop (the TestLoop's),
with their monitors fed as the frames come. Judging, reporting and the order of the tests are unchanged: pytest
reaches each test in turn, which waits for the rest of its drive and judges it.

``--acp-run-ahead K`` is how many drives run at once beside the current test. While the current test waits, each
drive ahead that ends makes room for the next one, as far ahead as is known (at most AHEAD_LIMIT tests ahead, whose
findings wait for their tests): a turn that takes seconds no longer holds the tests behind it. The window opens once a
target of the run has answered a request: a target that never answers (not an ACP program, a hang) costs one
test's timeout, not one per test beside it and one more for the test driven again. What is known to
come next: in a serial run the tests after this one in pytest's order; in an xdist worker the tests it has been
given (``xdist_queue.py``). The window stops before anything that must run alone: a fuzz test, a test of another
kind, a scenario with ``options: {prestart: false}`` or ``{run_ahead: false}`` (a scenario whose verdict depends on
timing: the cancel windows, for one); such a test also runs with nothing beside it, as does a rerun
(``--acp-rerun-failures``: the drives in flight end first). ``order_for_running_ahead`` puts the scenarios that run alone first (together, so
that the window empties once; under xdist they go to half of the workers and the long turns to the other half: xdist_deal.py),
then those that make the agent work long (started early, a long turn runs beside all the others instead of holding
the last ones up), then the rest.

The care for targets that cannot run twice at once: a drive that ran beside another and whose target died or would
not start (``RunResult.target_gone``) is driven again in place, alone, and running ahead is off for the rest of the
run (the drives then in flight are cancelled; their tests are driven in place). A drive beside others that ended
on a timeout (``--acp-timeout``, ``--acp-test-timeout``: the extra load may have made the target late) is driven
again alone, once the drives ahead have ended, and its verdict is the one of that drive; after LATE_LIMIT tests
that timed out also alone (a target that hangs), the rest of the run goes one test at a time. A test driven again
says so (its ``drive`` property), and the run counts it as flaky when its first drive's verdict was not a pass.
A signal's sweep kills every target (they are registered like any other); ``close`` cancels the drives in flight
and removes their directories.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from .prestart import TestLoop

DEFAULT_DEPTH = 5  # bench_suite.py, serial: 5 ahead took 0.66 (reference) and 0.80 (TypeScript) of the time of 2
# tests whose drives may have run ahead of the current one (their findings wait in memory). 32 stalled the window:
# while the current test waited on a 7 s turn, the 32 tests behind it had ended and nothing more started (reference
# agent, serial: 0.84 of the time with 128, the same peak memory)
AHEAD_LIMIT = 128
LATE_LIMIT = 3  # tests that timed out also alone before running ahead stops (a silent or hanging target)
CLOSE_WAIT = 10.0  # s: cancelled drives shut their targets down (the ladder's grace) within this


def add_options(group) -> None:
    group.addoption("--acp-run-ahead", dest="acp_run_ahead", type=int, default=None, metavar="N",
                    help=f"drive up to N of the next agent tests at once while the current one runs, judging each in turn "
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
    first: str = ""  # what the drive it replaced met (its error), when driven again
    answered: asyncio.Event = field(default_factory=asyncio.Event)  # set by the drive: its target answered a request
    task: asyncio.Task | None = None
    result: Any = None
    started: float = 0.0
    ended: float = 0.0
    waited: float = field(default=0.0)  # s its test waited for it (the rest of the drive)

    @property
    def driven_again(self) -> str | None:
        """Why it was driven again alone, and what the drive it replaced met (None: it was not)."""
        return self.why + (f" ({self.first})" if self.first else "") if self.again else None

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


ALONE, LONG, ANY = 0, 1, 2  # the ranks of order_for_running_ahead (and of the deal under xdist: xdist_deal.py)


def order_for_running_ahead(items: list, placed: Callable[[Any], int | None]) -> list:
    """``items`` with those that ``placed`` ranks (ALONE: runs alone, LONG: a long turn, ANY: any other; None: not
    moved) sorted by rank among their own places, each rank in its old order (see the module's text for why)."""
    ranks = [placed(i) for i in items]
    slots = [n for n, r in enumerate(ranks) if r is not None]
    moved = sorted(slots, key=lambda n: ranks[n])  # sorted() is stable: each rank keeps its order
    out = list(items)
    for slot, n in zip(slots, moved):
        out[slot] = items[n]
    return out


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
        self._next: Upcoming = []  # the tests after the current one whose drives may still start beside it
        self._beside = False  # a drive ran beside the current one
        self.opened = False  # a target of this run has answered a request: drives may start beside others

    @property
    def on(self) -> bool:
        return self.depth > 0 and self.off_reason is None

    def drive(self, key: str, make: Callable[[], Drive], upcoming: Upcoming) -> Drive:
        """Drive test ``key`` to its end (started ahead, or now) while up to ``depth`` drives of ``upcoming`` (the
        tests known to come next, in order, cut by the caller before anything that must run alone) run beside it,
        each that ends making room for the next. Returns its Drive."""
        rerun = key in self._driven  # --acp-rerun-failures runs a failed test again, alone
        self._driven.add(key)
        if rerun and self._drives:
            self.loop.run(self._settle)  # the drives ahead end first (their tests take their results later)
        drive = self._drives.pop(key, None)
        if drive is None:
            drive = make()
        if self.on and not rerun and upcoming:  # (none: a test that runs alone, or the last one)
            self._forget({k for k, _ in upcoming})
        self._next = [(k, m) for k, m in upcoming if k not in self._drives] if self.on and not rerun else []
        self._beside = drive.ahead or bool(self._running())
        self._wait(drive)
        beside = self._beside
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

    def _forget(self, coming: set[str]) -> None:
        """Cancel the drives of tests that no longer come here (``--dist worksteal`` gave them to another worker)."""
        gone = [self._drives.pop(k) for k in list(self._drives) if k not in coming]
        if gone:
            self._cancel_drives(gone)

    def _running(self) -> list[asyncio.Task]:
        """The tasks of the drives ahead that have not ended."""
        return [d.task for d in self._drives.values() if d.task is not None and not d.task.done()]

    def _top_up(self) -> None:
        """Start the next drives while fewer than ``depth`` run beside the current test (called inside the loop)."""
        running = len(self._running())
        while self.on and self.opened and self._next and running < self.depth and len(self._drives) < AHEAD_LIMIT:
            k, m = self._next.pop(0)
            d = m()
            d.ahead = True
            self._drives[k] = d
            d.start()
            running += 1
        if running:
            self._beside = True

    def _again(self, drive: Drive, make: Callable[[], Drive], why: str) -> Drive:
        """Drive the test again with nothing beside it (the drives ahead end first): its verdict is then the one a
        run without running ahead would give."""
        drive.cleanup()
        first = str(getattr(drive.result, "error", None) or "")
        self._next = []  # nothing starts beside it
        if self._drives:
            self.loop.run(self._settle)
        drive = make()
        drive.again, drive.why, drive.first = True, why, first
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
        drive.start()
        assert drive.task is not None
        answer = None if self.opened else asyncio.ensure_future(drive.answered.wait())
        try:
            self._top_up()  # also when this drive has ended already: the window moves on with the tests
            while not drive.task.done():
                # an interruption cancels this wait, not the drives (close() cancels those)
                await asyncio.wait([drive.task, *self._running(), *([answer] if answer else [])],
                                   return_when=asyncio.FIRST_COMPLETED)
                if answer is not None and answer.done():
                    self.opened, answer = True, None  # the target starts and answers: the window opens
                self._top_up()
        finally:
            if answer is not None:
                answer.cancel()
        if drive.answered.is_set():
            self.opened = True
        await drive.task

    async def _settle(self) -> None:
        """The drives ahead end (each was started when it was made)."""
        await asyncio.gather(*(asyncio.shield(t) for t in self._running()), return_exceptions=True)

    def turn_off(self, why: str) -> None:
        """No more drives beside each other in this run; those in flight are cancelled (their tests drive in place)."""
        self.off_reason = why
        self._cancel()

    def _cancel(self) -> None:
        drives, self._drives = list(self._drives.values()), {}
        self._cancel_drives(drives)

    def _cancel_drives(self, drives: list[Drive]) -> None:
        """Cancel ``drives`` (their targets shut down within CLOSE_WAIT) and remove their directories."""
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
