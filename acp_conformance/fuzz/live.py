"""The live target of a fuzz run: one scenario runner kept open across the steps of an example
(``LiveTarget``), the spare process started ahead for the next example (``Spare``), and what outlives
the examples of a run (``FuzzSession``: the event loop, the config, the stats, the failures found)."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import anyio

from ..scenarios.model import Scenario, Step
from ..scenarios.runner import HarnessError, RunSettings, Runner, ScenarioAbort, ScenarioSkip, TargetSpec
from ..wire.peer import TargetGone, WaitTimeout
from ..wire.transcript import Transcript
from ..wire.transport import TargetClosed, TargetError, Transport
from .config import FuzzConfig, StepStats
from .judge import Judge
from .recorded import Recorded
from .strategies import fast_generator_for, strategies_for

# how a step could not be completed: the target died, or stopped answering (or the harness failed)
_PROBLEM_KINDS = {TargetGone: "died", TargetClosed: "died", WaitTimeout: "timeout", TimeoutError: "timeout",
                  HarnessError: "harness"}


class LiveTarget:
    """One scenario runner kept open across the steps of an example.

    The runner's event loop belongs to the fuzzing thread: each step runs the loop until the step is
    done (``run_until_complete``), and between steps, while hypothesis draws the next rule, the loop
    (and with it the reading of the target's output) waits. One thread and no hand-over per step:
    with a blocking portal every step cost two wake-ups of the loop's thread and the GIL passing
    back and forth, which under load was most of a step's time. What the target writes meanwhile
    waits in the pipe and gets its timestamp when it is read, a millisecond or two late."""

    def __init__(self, loop: asyncio.AbstractEventLoop, config: FuzzConfig, scenario: Scenario, judge: Judge,
                 stats: StepStats, spare: Spare | None = None, deadline: float | None = None):
        self.loop = loop
        self.config = config
        self.scenario = scenario
        self.stats = stats
        self.tmp = spare.tmp if spare is not None else tempfile.mkdtemp(prefix="acp-fuzz-")
        self.deadline = deadline  # perf_counter time at which a running step is cut off (the budget)
        self._started = spare.transport if spare is not None else None  # taken over by the runner
        settings = RunSettings(timeout=config.timeout, startup_timeout=config.startup_timeout,
                               test_timeout=1e9, prompts=config.prompts, validate_sent=None, shutdown_grace=2.0)
        self.runner = Runner(scenario, TargetSpec(config.argv, config.env), settings, Path(self.tmp),
                             listeners=[judge.feed])
        self._stop: anyio.Event | None = None
        self._scope: anyio.CancelScope | None = None
        self.closed = False
        self.on_close = None  # called with this target when it closes
        self.problem_kind: str | None = None  # of the last step: died | timeout | stray | harness | aborted
        self.restart_spare: Transport | None = None  # started in this directory for a restart (start_restart_spare)
        self.restart_spare_died = False  # one was dead when the restart came: start no more
        self._dead: list[Transport] = []
        self.runner.take_started = self._take_restart_spare
        t = time.perf_counter()
        started = loop.run_until_complete(_new_event())
        self._host_task = loop.create_task(self._host(started))
        loop.run_until_complete(_first(started.wait(), self._host_task))
        self.stats.t_start += time.perf_counter() - t

    @property
    def prestarted(self) -> bool:
        """Is the process a spare, started ahead of this example?"""
        return self._started is not None

    async def _host(self, started: asyncio.Event) -> None:
        self._stop = anyio.Event()
        try:
            async with anyio.create_task_group() as tg:
                self.runner._tg = tg  # the runner's own task group, as Runner.run() would set it
                try:
                    await self.runner.connect(started=self._started)
                finally:
                    started.set()
                await self._stop.wait()
                with anyio.CancelScope(shield=True):
                    await self.runner.disconnect()
                tg.cancel_scope.cancel()
        except ScenarioAbort:  # the target could not be started: the first step says so
            pass

    async def _exec(self, step: Step) -> str | None:
        self.problem_kind = None
        left = self.deadline - time.perf_counter() if self.deadline is not None else None
        with anyio.move_on_after(left) as budget:  # the run's budget ends in the middle of a step
            with anyio.CancelScope() as scope:  # interrupt() cancels it: the awaited answer will not come
                self._scope = scope
                try:
                    with anyio.fail_after(max(self.config.timeout, self.config.startup_timeout) * 3):
                        await self.runner.step(step)
                except (WaitTimeout, TargetGone, TargetClosed, ScenarioAbort, HarnessError, ScenarioSkip,
                        TimeoutError) as e:
                    self.problem_kind = _PROBLEM_KINDS.get(type(e), "aborted")
                    return f"{step.describe()}: {e or type(e).__name__}"
                finally:
                    self._scope = None
        if budget.cancelled_caught:
            self.problem_kind = "budget"
            return f"{step.describe()}: the budget ran out"
        if scope.cancelled_caught:
            self.problem_kind = "stray"
            return f"{step.describe()}: the suite stopped waiting"
        return None

    def start_restart_spare(self) -> None:
        """Start the process that the next restart takes, in this target's directory (the restarted process
        must find what this one stored there): its start-up overlaps the example instead of adding to it."""
        if self.restart_spare is not None or self.closed:
            return
        t = time.perf_counter()
        transport = Transport(self.config.argv, Transcript(), cwd=str(self.runner.workdir), env=self.config.env)
        try:
            self.loop.run_until_complete(transport.spawn())
        except TargetError:  # the restart starts its own process, and says why it cannot
            return
        finally:
            self.stats.t_start += time.perf_counter() - t
        self.restart_spare = transport

    def _take_restart_spare(self) -> Transport | None:
        """The restart spare, if it still runs (called by the runner's restart, in the event loop)."""
        spare, self.restart_spare = self.restart_spare, None
        if spare is None:
            return None
        if not spare.running:  # it could not run beside the process it replaces (a lock?)
            self._dead.append(spare)
            self.restart_spare_died = True
            return None
        self.stats.restart_spares += 1
        return spare

    def interrupt(self) -> None:
        """Stop the running step (called in the event loop, by the judge's listener)."""
        if self._scope is not None:
            self._scope.cancel()

    def run(self, step: Step) -> str | None:
        t = time.perf_counter()
        try:
            return self.loop.run_until_complete(self._exec(step))
        finally:
            self.stats.t_target += time.perf_counter() - t

    def var(self, name: str) -> Any:
        try:
            return self.runner.lookup(name)
        except HarnessError:
            return None

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.on_close is not None:
            self.on_close(self)
        t = time.perf_counter()
        try:
            if self._stop is not None:
                self._stop.set()
            with contextlib.suppress(Exception):
                self.loop.run_until_complete(asyncio.wait_for(self._host_task, 15))
            unused = self._dead + ([self.restart_spare] if self.restart_spare is not None else [])
            self.restart_spare, self._dead = None, []
            for spare in unused:
                with contextlib.suppress(Exception):
                    self.loop.run_until_complete(spare.discard())
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.stats.t_start += time.perf_counter() - t


@dataclass
class Spare:
    """A target process started ahead, in a directory of its own, for the next example: its start-up
    (interpreter, imports, a runtime) overlaps the running example instead of adding to it."""

    transport: Transport
    tmp: str


async def _new_event() -> asyncio.Event:
    return asyncio.Event()


async def _first(*aws) -> None:
    """Until the first of ``aws`` is done (the host task ends early when the target cannot start)."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for t in tasks[:1]:
        if not t.done():
            t.cancel()




class FuzzSession:
    """What outlives the examples of one run: the event loop, the config, the stats, the failures."""

    def __init__(self, config: FuzzConfig, deadline: float | None = None):
        self.config = config
        self.stats = StepStats()
        self.last_failure: Recorded | None = None  # the latest failing example
        self.best_failure: Recorded | None = None  # the shortest failing example (what is written out)
        self.failures_seen = 0
        self.deadline = deadline  # wall clock (perf_counter) after which no example starts
        self.budget_stopped = False  # the budget ended the run (BudgetSpent was raised)
        self.live: set[LiveTarget] = set()  # targets started and not yet closed
        self.spare: Spare | None = None  # the process the next example takes (config.prestart)
        self.prestart = config.prestart
        # a restart's process too (off once one could not run beside the process it replaces)
        self.prestart_restarts = config.prestart and config.prestart_restarts
        self.started = time.perf_counter()
        self.loop = asyncio.new_event_loop()  # run by this thread, a step at a time (see LiveTarget)
        # the first example's process starts while the strategies are made (0.1 s) and hypothesis sets up
        self.refill_spare()
        try:
            self.gen = strategies_for(config.schema_path)
            self.fast = fast_generator_for(config.schema_path)
        except BaseException:  # (an unreadable --schema): the process started is not left behind
            self.drop_spare()
            self.loop.close()
            raise
        self.validator = self.gen.validator

    def new_target(self, scenario: Scenario, judge: Judge, deadline: float | None = None) -> LiveTarget:
        """A live target for an example: the spare process when there is one that still runs (the
        example starts the next spare once its process has answered: ``refill_spare``). A step still
        running at ``deadline`` is cut off."""
        spare, self.spare = self.spare, None
        if spare is not None and not spare.transport.running:  # it died waiting (a lock held by the other?)
            self._discard(spare)
            spare = None
            self.stop_prestarting()
        target = LiveTarget(self.loop, self.config, scenario, judge, self.stats, spare, deadline)
        self.live.add(target)
        target.on_close = self.live.discard
        return target

    def drop_spare(self) -> None:
        if self.spare is not None:
            self._discard(self.spare)
            self.spare = None

    def refill_spare(self) -> None:
        """Start the spare for the next example (when spares are on and the budget is not over)."""
        if self.spare is None and self.prestart and not self.over_budget():
            self.spare = self._start_spare()

    @contextlib.contextmanager
    def spare_paused(self) -> Iterator[None]:
        """The next example's spare, stopped (SIGSTOP) while a restart's process starts, and going on after.
        Kept, not discarded: its start-up was paid for and the next example takes it ready (discarded, it
        was started again after the restart, and an example shorter than a start then waited for it).
        Stopped, so that it cannot take what the old process frees (a lock it waited for) before the
        restarted process does."""
        spare = self.spare
        paused = spare is not None and spare.transport.running and spare.transport.pause()
        self.stats.spares_paused += paused
        try:
            yield
        finally:
            if paused:
                spare.transport.unpause()  # (also when it was discarded meanwhile: a no-op then)

    def prestart_restart(self, target: LiveTarget) -> None:
        """Start the process that a restart of ``target`` would take (when spares are on and the budget is
        not over). Once one was dead when its restart came, the target cannot run twice in one directory:
        restarts start their own processes from then on."""
        if target.restart_spare_died and self.prestart_restarts:
            self.prestart_restarts = False
            self.stats.spares_died += 1
        if self.prestart and self.prestart_restarts and not self.over_budget():
            target.start_restart_spare()

    def stop_prestarting(self) -> None:
        """No more spares in this run (one died before its example could use it)."""
        self.prestart = False
        self.stats.spares_died += 1
        self.drop_spare()

    def _start_spare(self) -> Spare | None:
        t = time.perf_counter()
        tmp = str(Path(tempfile.mkdtemp(prefix="acp-fuzz-")).resolve())
        transport = Transport(self.config.argv, Transcript(), cwd=tmp, env=self.config.env)
        try:
            self.loop.run_until_complete(transport.spawn())
        except TargetError:  # the next example starts its own process, and says why it cannot
            shutil.rmtree(tmp, ignore_errors=True)
            return None
        finally:
            self.stats.t_start += time.perf_counter() - t
        return Spare(transport, tmp)

    def _discard(self, spare: Spare) -> None:
        with contextlib.suppress(Exception):
            self.loop.run_until_complete(spare.transport.discard())
        shutil.rmtree(spare.tmp, ignore_errors=True)

    def over_budget(self) -> bool:
        """Past the budget no example starts (a running one finishes)."""
        return self.deadline is not None and time.perf_counter() > self.deadline

    def close(self) -> None:
        try:
            for target in list(self.live):  # an example that ended without its teardown: stop its process
                target.close()
            self.drop_spare()
            # the callbacks the processes' pipes left (connection lost) run before the loop closes: a
            # subprocess transport collected later would call into a closed loop
            self.loop.run_until_complete(asyncio.sleep(0.05))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        finally:
            self.loop.close()

