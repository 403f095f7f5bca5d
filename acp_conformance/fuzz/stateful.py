"""Stateful fuzzing of an agent: a hypothesis state machine over connections and sessions.

Every rule of ``AgentMachine`` is expressed as scenario steps (the format of ``scenarios/``) and
run by the ordinary scenario runner against ONE live target process, kept open across steps on
an event loop that the fuzzing thread runs one step at a time (a process is started per example,
and again only to resume in a new process). Every frame goes to a ``MonitorContext`` with all agent monitors, so every rule of the
catalog judges the generated traffic; a blocking FAIL finding, a timeout or a crash fails the
example. Hypothesis then shrinks the sequence, and the shrunk example's steps, already in scenario
form, are written as a scenario file that ``replay`` reruns through the same runner and monitors.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import hashlib
import json
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ..protocol.validate import Validator
from ..rules.catalog import load_catalog
from ..rules.findings import FAIL, Finding
from ..rules.monitor import MonitorContext
from ..rules.monitors import AGENT_MONITORS
from ..rules.monitors._common import raw_carries_id
from ..rules.reading import id_key
from ..scenarios.model import Scenario, Step
from ..scenarios.runner import HarnessError, RunSettings, Runner, ScenarioAbort, ScenarioSkip, TargetSpec
from ..wire.peer import TargetGone, WaitTimeout
from ..wire.transcript import Transcript
from ..wire.transport import TargetClosed, TargetError, Transport
from .envelope import (INFORMATIONAL_NOTE, EnvelopeCase, envelope_cases, informational_note, line_digest,
                       note_digests, step_for)
from ..scenarios.runner import _select_values
from .strategies import MAX_ITEMS, Invalid, fast_generator_for, invalid_request, request_ids, strategies_for

DEFAULT_PROMPTS = {"simple": "Say hello", "tool": "Use a tool to read the file notes.txt",
                   "permission": "Delete the build directory; ask my permission first.",
                   "long": "Count slowly to 500, one number per line.",
                   "cancellable": "Run the test suite as a cancellable tool call.",
                   "terminal": "Run make test in a terminal."}
PERMISSION_ANSWERS = ("allow", "reject", "cancelled", "not_offered", "unknown", "approved", "error")


_DEBUG = bool(__import__("os").environ.get("ACP_FUZZ_DEBUG"))
_VAR = re.compile(r"\$\{|^\$[A-Za-z_]")


class FuzzFailure(AssertionError):
    """The target broke a blocking rule, stopped answering, or died; the message says which."""


class BudgetSpent(BaseException):
    """The wall-clock budget is over: no new example starts. A BaseException, so that hypothesis does
    not take it for a failure of the example (and shrink it): it ends the whole run at once."""


@dataclass
class FuzzConfig:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    timeout: float = 5.0  # per awaited response or update
    startup_timeout: float = 10.0
    prompts: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_PROMPTS))
    schema_path: str | None = None
    strict: bool = False
    # start each example's process while the example before it runs (off: one process at a time)
    prestart: bool = True


@dataclass
class StepStats:
    steps: int = 0  # protocol steps: messages the fuzzer wrote
    examples: int = 0
    t_target: float = 0.0  # waiting on the target, inside the runner (includes monitor time, subtracted below)
    t_monitors: float = 0.0  # validation + all monitors, per frame
    t_total: float = 0.0
    t_start: float = 0.0  # process starts and shutdowns
    t_first: float = 0.0  # waiting for the first answer of each new process (its start-up; in t_target too)
    t_finish: float = 0.0  # monitors judging at the end of an example (in t_monitors, not in t_target)
    reductions: int = 0  # runs of candidate scenarios while shrinking a counterexample
    processes: int = 0  # target processes started
    spares_died: int = 0  # spare processes that died before their example could use them
    found_after: float | None = None  # seconds into the run when the first failing example ended
    found_steps: int = 0  # the length of that example (before shrinking), in scenario steps
    by_kind: dict[str, list[float]] = field(default_factory=dict)  # step kind -> [count, seconds]
    trace: Any = field(default_factory=hashlib.sha256)  # every step of every example, in order

    @property
    def digest(self) -> str:
        """Identifies the run: the same seed against the same deterministic target gives the same."""
        return self.trace.hexdigest()[:16]


def _has_var(value: Any) -> bool:
    """Generated text that the scenario runner would read as a variable ($x, ${x})."""
    if isinstance(value, str):
        return bool(_VAR.search(value))
    if isinstance(value, list):
        return any(_has_var(v) for v in value)
    if isinstance(value, dict):
        return any(_has_var(k) or _has_var(v) for k, v in value.items())
    return False


class Judge:
    """All agent monitors over one example's frames; blocking failures are the fuzzer's findings."""

    def __init__(self, validator: Validator, options: dict[str, Any], stats: StepStats, strict: bool = False):
        self.catalog = load_catalog()
        self.ctx = MonitorContext(target_side="agent", options={"validator": validator,
                                                                "insertion_work_threshold": 5.0,
                                                                "stop_reason_required": True, **options})
        self.ctx.add_monitors(AGENT_MONITORS)
        self.stats = stats
        self.strict = strict
        self.seen = 0
        self.informational: list[Finding] = []  # provoked by spec-silent envelope cases (recorded only)
        self.informational_seqs: set[int] = set()
        self.informational_ids: set[Any] = set()
        self.informational_doubles: set[float] = set()  # the numeric ids of those lines, as doubles
        self._mark_next = False
        self._informational: set[str] = set()  # digests of the lines an informational note announced
        # ids the suite wrote, per connection (parsed lines), and the lines it wrote that did not parse:
        # a response carrying an id that is in neither answers nothing the suite sent
        self._written: dict[int, set[tuple[str, str]]] = {}
        self._unparsed: dict[int, list[bytes]] = {}
        self.stray: str | None = None  # such a response arrived (the awaited answer will not come)
        self.finished = False
        self.on_stray = None  # called (in the event loop) when it does: the live target stops waiting

    def _provoked_by_informational(self, f: Finding) -> bool:
        frames = self.ctx.frames
        for seq in f.frames:
            if seq in self.informational_seqs:
                return True
            fr = frames[seq] if seq < len(frames) else None
            if fr is not None and fr.direction == "received" and isinstance(fr.msg, dict) and "id" in fr.msg \
                    and "method" not in fr.msg and self._answers_informational(fr.msg["id"]):
                return True
        return False

    def _answers_informational(self, rid: Any) -> bool:
        """An id of an informational line, or the same number as a reader that holds numbers as
        doubles writes it back (any JavaScript peer: 2**53 + 1 comes back as 2**53, -0.0 as 0)."""
        if id_key(rid) in self.informational_ids:
            return True
        if not isinstance(rid, (int, float)) or isinstance(rid, bool):
            return False
        try:
            return float(rid) in self.informational_doubles
        except OverflowError:
            return False

    def feed(self, frame) -> None:
        t = time.perf_counter()
        if frame.event == "note" and str((frame.detail or {}).get("text", "")).startswith(INFORMATIONAL_NOTE):
            digests = note_digests(frame.detail["text"])
            if digests is None:
                self._mark_next = True  # a note of an older scenario file: the next line written
            else:
                self._informational.update(digests)
        elif frame.direction == "sent" and (self._mark_next or (self._informational and
                                                                line_digest(frame.raw) in self._informational)):
            if self._mark_next:
                self._mark_next = False
            else:
                self._informational.discard(line_digest(frame.raw))
            self.informational_seqs.add(frame.seq)
            for item in frame.msg if isinstance(frame.msg, list) else [frame.msg]:
                if isinstance(item, dict) and "id" in item:
                    self.informational_ids.add(id_key(item["id"]))
                    if isinstance(item["id"], (int, float)) and not isinstance(item["id"], bool):
                        with contextlib.suppress(OverflowError):
                            self.informational_doubles.add(float(item["id"]))
        self.ctx.feed(frame)
        if frame.direction == "sent":
            self._note_written(frame)
        elif frame.direction == "received" and self.stray is None:
            self._check_stray(frame)
        self.stats.t_monitors += time.perf_counter() - t

    def _note_written(self, frame) -> None:
        msg = frame.msg
        if frame.problem is not None or not isinstance(msg, (dict, list)):
            self._unparsed.setdefault(frame.conn, []).append(frame.raw)
            return
        ids = self._written.setdefault(frame.conn, set())
        for item in msg if isinstance(msg, list) else [msg]:
            if isinstance(item, dict) and "id" in item:
                ids.add(id_key(item["id"]))

    def _check_stray(self, frame) -> None:
        """A response whose id the suite never wrote on this connection (not even inside a line that
        did not parse) cannot answer anything: ERR-004 fails when the connection is judged, and
        whatever the suite awaits now will not come. Stop waiting (instead of timing out) so that a
        target that mangles ids costs the fuzzer no timeout per example."""
        msg = frame.msg
        if not isinstance(msg, dict) or "method" in msg or msg.get("id") is None \
                or ("result" in msg) == ("error" in msg):
            return
        rid = msg["id"]
        if id_key(rid) in self._written.get(frame.conn, ()) or self._answers_informational(rid):
            return
        if any(raw_carries_id(raw, rid) for raw in self._unparsed.get(frame.conn, ())):
            return
        self.stray = (f"a response with id {json.dumps(rid)[:80]} arrived (frame #{frame.seq}), an id the suite "
                      "never sent on this connection")
        if self.on_stray is not None:
            self.on_stray()

    def finish(self) -> None:
        """The end of the example: the monitors that judge whole connections judge now (once)."""
        if self.finished:
            return
        self.finished = True
        t = time.perf_counter()
        self.ctx.finish()
        dt = time.perf_counter() - t
        self.stats.t_monitors += dt
        self.stats.t_finish += dt

    def blocking(self, findings: list[Finding]) -> list[Finding]:
        out = []
        for f in findings:
            rule = self.catalog.get(f.rule)
            if f.status == FAIL and rule is not None and (rule.blocking or self.strict):
                if self._provoked_by_informational(f):
                    self.informational.append(f)
                    continue
                out.append(f)
        return out

    def new_failures(self) -> list[Finding]:
        new = self.ctx.findings[self.seen:]
        self.seen = len(self.ctx.findings)
        return self.blocking(new)


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


@dataclass
class Recorded:
    """One example as a scenario: its steps (raw step dicts) and the options they need."""

    steps: list[dict[str, Any]]
    options: dict[str, Any]
    failure: str
    rules: list[str]
    frames: list[str] = field(default_factory=list)  # the last frames, as text
    findings: list[Finding] = field(default_factory=list)  # the blocking failures it was failed for
    transcript: list[Any] = field(default_factory=list)  # every frame of the example
    stderr: str = ""  # the tail of what the target wrote on stderr (known once its process ended)
    broken: str | None = None  # how the target broke: died | timeout | stray (None: a rule failed)
    answer_steps: list[int] = field(default_factory=list)  # options.permission_answers[i] is for this step
    fail_index: int = 0  # the steps before it led to the failure; the steps from it on wind down
    fail_start: int = 0  # the first step of the rule that failed (steps fail_start..fail_index-1)
    step_frames: list[int] = field(default_factory=list)  # the transcript's length when each step began
    rule_starts: list[int] = field(default_factory=list)  # the first step of each rule of the example

    def failing_rule(self) -> tuple[int, int]:
        """(first, last) step of the rule that failed: the rule of the step during which the first
        blocking finding's offending frame came (a failure judged at the end of a connection points
        back to it), or of the last step when the target broke."""
        n = len(self.steps)
        failing = min(self.fail_index or n, n) - 1
        if not self.broken and self.findings and self.findings[0].frames and self.step_frames:
            failing = min(max(bisect.bisect_right(self.step_frames, self.findings[0].frames[0]) - 1, 0), n - 1)
        starts = [r for r in self.rule_starts if r <= failing] or [min(self.fail_start, failing)]
        ends = [r - 1 for r in self.rule_starts if r > failing]  # the rule runs on to its end (an await)
        return max(max(starts), 0), max(min(ends + [failing if self.broken else self.fail_index - 1]), failing, 0)


class FuzzSession:
    """What outlives the examples of one run: the event loop, the config, the stats, the failures."""

    def __init__(self, config: FuzzConfig):
        self.config = config
        self.gen = strategies_for(config.schema_path)
        self.fast = fast_generator_for(config.schema_path)
        self.validator = self.gen.validator
        self.stats = StepStats()
        self.last_failure: Recorded | None = None  # the latest failing example
        self.best_failure: Recorded | None = None  # the shortest failing example (what is written out)
        self.failures_seen = 0
        self.deadline: float | None = None  # wall clock (perf_counter) after which no example starts
        self.budget_stopped = False  # the budget ended the run (BudgetSpent was raised)
        self.live: set[LiveTarget] = set()  # targets started and not yet closed
        self.spare: Spare | None = None  # the process the next example takes (config.prestart)
        self.prestart = config.prestart
        self.started = time.perf_counter()
        self.loop = asyncio.new_event_loop()  # run by this thread, a step at a time (see LiveTarget)

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


_SESSION_METHODS = ("session/prompt", "session/close", "session/delete", "session/resume", "session/set_config_option")


def machine_for(fs: FuzzSession) -> type[RuleBasedStateMachine]:
    gen = fs.gen
    # payloads (params, content blocks) come from the fast generator, hypothesis drawing only its seed:
    # one choice instead of dozens per payload (an eighth less CPU per step, and more rules fit in an
    # example); the counterexample is shrunk as a scenario (reduce.py), not through hypothesis' choices
    fast = fs.fast
    payload = fast.strategy

    def params_of(method: str) -> st.SearchStrategy:
        m = gen.schema.methods[method]
        return payload(m.params) if m.params else st.just({})

    any_block = payload("ContentBlock")
    block_of_type = fast.branches("ContentBlock")  # type -> its blocks (text, image, ..., resource)
    blocks_by_types: dict[tuple[str, ...] | None, st.SearchStrategy] = {}
    # envelope cases carry ids of their own: none that the example has used (built once, not per draw)
    used_now: list[set] = [set()]
    fresh_envelope_cases = envelope_cases(request_ids.filter(lambda i: (type(i).__name__, i) not in used_now[0]))

    def blocks_of(accepts: tuple[str, ...] | None) -> st.SearchStrategy:
        """1..MAX_ITEMS content blocks of the types ``accepts`` (None: of any type)."""
        s = blocks_by_types.get(accepts)
        if s is None:
            block = any_block if accepts is None else st.one_of([block_of_type[t] for t in accepts
                                                                  if t in block_of_type])
            # the number of blocks is drawn first, uniformly (hypothesis' own list sizes favour one or
            # two items: a prompt of three or more blocks came once in five)
            s = blocks_by_types[accepts] = st.integers(1, MAX_ITEMS).flatmap(
                lambda n: st.lists(block, min_size=n, max_size=n))
        return s

    invalid_of = {m: invalid_request(gen, m) for m in ("initialize", "session/new", "session/prompt",
                                                      "session/resume", "session/list", "session/set_config_option",
                                                      "session/close", "session/delete")}  # built once each
    invalid = st.sampled_from(sorted(invalid_of)).flatmap(invalid_of.__getitem__)
    other_methods = ["auth/login", "auth/logout", "tool_call/cancel", "terminal/cancel", "session/list"]

    class AgentMachine(RuleBasedStateMachine):
        """Connections and sessions of one agent; every rule is scenario steps, judged by every monitor."""

        def __init__(self):
            super().__init__()
            fs.stats.examples += 1
            self.options: dict[str, Any] = {"permission_answers": []}
            self.answer_steps: list[int] = []  # for each permission answer, the step of the prompt it is for
            self.scenario = Scenario("fuzz", Path("fuzz.yaml"), [], [], options=self.options)
            self.judge = Judge(fs.validator, self.options, fs.stats, fs.config.strict)
            self.steps: list[dict[str, Any]] = []
            if fs.over_budget():  # ends the run (not this example: see BudgetSpent)
                fs.budget_stopped = True
                raise BudgetSpent()
            self.open_target()
            self.accepts: tuple[str, ...] = ("text", "resource_link")  # prompt blocks the agent takes
            self.sessions: dict[str, dict[str, Any]] = {}  # ref -> {alive, busy, deleted, cwd, var, pending}
            self.used_ids: set[tuple[str, Any]] = set()
            self.n = 0
            self.broken: str | None = None
            self.target_broken: str | None = None
            self.fail_index: int | None = None  # steps before the failure (the rest winds down)
            self.rule_start = 0  # the first step of the rule running now
            self.rule_starts: list[int] = [0]
            self.step_frames: list[int] = []  # the transcript's length when each step began

        @property
        def failing(self) -> bool:
            """A failure was found: the steps that wind down run past the budget."""
            return self.fail_index is not None

        def open_target(self) -> None:
            self.target = fs.new_target(self.scenario, self.judge, fs.deadline)
            fs.stats.processes += 1
            self.judge.on_stray = self.target.interrupt
            self.fresh_process = True  # the next request waits for the process to start

        def spare_died_unasked(self) -> bool:
            """The example's process was a spare, and it died before it answered anything (a target that
            will not run twice at once, say): that is not the target's failure but the fuzzer's doing."""
            return self.target.prestarted and len(self.steps) == 1 and self.target.problem_kind == "died" \
                and not any(f.direction == "received" for f in self.judge.ctx.frames)

        def restart_without_spares(self) -> None:
            """Begin the example again on a process started now, with a judge that has seen nothing, and
            start no more spares in this run."""
            self.target.close()
            fs.stop_prestarting()
            self.judge = Judge(fs.validator, self.options, fs.stats, fs.config.strict)
            self.steps.clear()
            self.step_frames.clear()
            self.open_target()

        # -- running steps ---------------------------------------------------------------------
        def do(self, raw: dict[str, Any], *, tolerate: bool = False) -> str | None:
            """Run one step. A target that dies, stops answering or answers what it was not asked fails
            the example at once (unless ``tolerate``: then the problem is returned); the rules are
            judged after each rule of the machine (``no_blocking_failure``), so that a rule runs to its
            end (a prompt to its idle) and the written scenario never stops in the middle of a turn."""
            if self.broken:
                raise FuzzFailure(self.broken)
            if self.target is None:
                return None
            if fs.over_budget() and not self.failing:
                self.stop_for_budget()
            (kind, args), = raw.items()
            self.steps.append(raw)
            self.step_frames.append(len(self.judge.ctx.frames))
            fs.stats.trace.update(json.dumps(raw, sort_keys=True, default=str).encode())
            if kind in ("request", "notify", "raw", "restart", "cancel"):
                fs.stats.steps += 1
            if kind == "restart":
                fs.stats.processes += 1
                self.fresh_process = True
            t = time.perf_counter()
            problem = self.target.run(Step(kind, dict(args) if isinstance(args, dict) else args, len(self.steps) - 1))
            dt = time.perf_counter() - t
            if self.fresh_process and kind == "request":  # the first answer of a new process: its start-up
                fs.stats.t_first += dt
                self.fresh_process = False
            name = args["method"] if kind == "request" else \
                f"await {next(iter(args))}" if kind == "await" and isinstance(args, dict) and args else kind
            k = fs.stats.by_kind.setdefault(name, [0, 0.0])
            k[0] += 1
            k[1] += dt
            how = self.target.problem_kind
            if problem is not None and self.spare_died_unasked():
                self.restart_without_spares()
                return self.do(raw, tolerate=tolerate)
            if how == "budget" and not self.failing:  # (a failure found winds down, and is kept)
                self.stop_for_budget()
            if self.judge.stray is not None:  # the step was interrupted (or would wait in vain)
                problem, how = f"step {len(self.steps)} ({kind}): {self.judge.stray}", "stray"
            if problem is not None and not tolerate:
                self.fail_broken(problem, how)
            return problem

        def stop_for_budget(self) -> None:
            """The budget is over in the middle of this example: it ends unjudged (not a failure), and
            so does the run."""
            fs.budget_stopped = True
            raise BudgetSpent()

        def fail_broken(self, problem: str, how: str | None) -> None:
            """The target died, stopped answering, or answered what was never asked: end the connection
            so that the monitors judge it (a death or a stray answer fails a rule), then fail with both."""
            self.target_broken = how or "aborted"
            self.fail_index = len(self.steps)
            self.target.close()
            self.judge.finish()
            bad = self.judge.new_failures()
            self.fail(failure_message(problem, bool(self.judge.stray), bad), bad, epilogue=self.wind_down_steps())

        def wind_down_steps(self) -> list[dict[str, Any]]:
            """The steps that would end the work still running (not run: the target is gone). They close
            the written scenario, so that a correct target that runs it past the failure point ends its
            turns instead of being cut off in the middle of one."""
            out: list[dict[str, Any]] = []
            for ref, s in self.sessions.items():
                if s.get("ending"):
                    out += [{"await": {"response": "$" + save}} for save in s["queued"]]
                    out.append({"await": {"idle": ref, "after": "$" + (s["queued"] or [s["turn"]])[-1]}})
            for ref in self.alive(busy=True):
                out += [{"cancel": {"session": ref}}, {"await": {"idle": ref}}]
            for s in self.sessions.values():
                out += [{"await": {"response": "$" + save}} for save in s["pending"]]
            return out

        def check(self) -> None:
            bad = self.judge.new_failures()
            if bad:
                self.fail_index = len(self.steps)
                self.wind_down(tolerate=True)  # the turns it left running end, and are in the scenario
                self.target.close()
                self.judge.finish()
                bad += self.judge.new_failures()
                self.fail(failure_message(None, False, bad), bad)

        def wind_down(self, tolerate: bool = False) -> None:
            """Cancel the work still running and wait for the answers still owed."""
            for ref in list(self.sessions):
                if self.idle(ref, tolerate):
                    return
            for ref in self.alive(busy=True):
                if self.turn_over(ref):
                    if self.settle(ref, tolerate):
                        return
                    continue
                if self.do({"cancel": {"session": ref}}, tolerate=tolerate) \
                        or self.do({"await": {"idle": ref}}, tolerate=tolerate) or self.settle(ref, tolerate):
                    return
            for s in self.sessions.values():
                if self.await_answers(s["pending"], tolerate):
                    return
                s["pending"] = []

        def fail(self, message: str, bad: list[Finding] | None = None, epilogue: list | None = None) -> None:
            frames = [fr.text(300) for fr in self.judge.ctx.frames[-12:]]
            bad = bad or []
            stderr = [t for t in self.target.runner.result.stderr if t.strip()] if self.target is not None else []
            rec = Recorded(list(self.steps) + list(epilogue or []), _copy_options(self.options), message,
                           [f.rule for f in bad], frames,
                           findings=list(bad), transcript=list(self.judge.ctx.frames),
                           stderr=stderr[-1][-2000:] if stderr else "", broken=self.target_broken,
                           answer_steps=list(self.answer_steps),
                           fail_index=self.fail_index if self.fail_index is not None else len(self.steps),
                           fail_start=self.rule_start, step_frames=list(self.step_frames),
                           rule_starts=list(self.rule_starts))
            fs.last_failure = rec
            if fs.best_failure is None:
                fs.stats.found_after = time.perf_counter() - fs.started
                fs.stats.found_steps = len(rec.steps)
            if fs.best_failure is None or len(rec.steps) <= len(fs.best_failure.steps):
                fs.best_failure = rec
            fs.failures_seen += 1
            if _DEBUG:
                import sys
                print(f"[fuzz] failure {fs.failures_seen} after {len(self.steps)} steps: {message[:300]}", file=sys.stderr)
            self.broken = message
            raise FuzzFailure(message)

        def fresh_id(self, draw_id: Any) -> Any:
            if isinstance(draw_id, str) and _has_var(draw_id):  # the runner would read it as a variable
                draw_id = draw_id.replace("$", "S")
            key = (type(draw_id).__name__, draw_id)
            if key in self.used_ids:
                self.n += 1
                draw_id = f"fuzz-{self.n}" if isinstance(draw_id, str) else draw_id
                # integers move toward zero (and on): a step past 2**53 - 1 leaves the range every JSON
                # reader holds exactly (a JavaScript peer rounds 2**53 + 1 to 2**53)
                step = -1 if isinstance(draw_id, int) and draw_id > 0 else 1
                while (type(draw_id).__name__, draw_id) in self.used_ids:
                    draw_id = draw_id + step if isinstance(draw_id, int) else draw_id + "x"
            self.used_ids.add((type(draw_id).__name__, draw_id))
            return draw_id

        def name(self, prefix: str) -> str:
            self.n += 1
            return f"{prefix}{self.n}"

        def request(self, method: str, params: Any, rid: Any, *, wait: bool = True) -> str:
            save = self.name("r")
            self.do({"request": {"method": method, "params": params, "id": self.fresh_id(rid), "save": save,
                                 "wait": wait}})
            return save

        def ok(self, save: str) -> bool:
            p = self.target.var(save) if self.target is not None else None
            return p is not None and getattr(p, "error", None) is None and getattr(p, "response", None) is not None

        def alive(self, busy: bool | None = None) -> list[str]:
            return sorted(r for r, s in self.sessions.items() if s["alive"] and (busy is None or s["busy"] == busy))

        def pick(self, data, refs: list[str]) -> str:
            """One of ``refs``, drawn among those with no turn in flight when there are any: a step on
            such a session goes on at once, while the turns of the others run (a step on a session whose
            turn is in flight first waits for its idle)."""
            ready = [r for r in refs if not self.sessions[r].get("ending")]
            return data.draw(st.sampled_from(ready or refs), label="session")

        def known(self) -> list[str]:
            return sorted(r for r, s in self.sessions.items() if not s["deleted"])

        # -- rules -------------------------------------------------------------------------------
        # a connection starts with a session: hypothesis enables a random subset of the rules in each
        # example (swarm testing), and an example whose new_session is off would otherwise never
        # reach a session rule at all (half of them did)
        @initialize(params=payload("InitializeRequest"), rid=request_ids, session_rid=request_ids)
        def start(self, params, rid, session_rid):
            self.initialize_connection(params, rid)
            # the next example's process starts once this one has answered: not while it is still
            # starting, when the two could race for what only one may hold (a lock, a port)
            fs.refill_spare()
            self.new_session(None, session_rid)

        def initialize_connection(self, params, rid):
            # every request carries an explicit id (none from the runner's counter), so generated
            # ids never collide with the suite's own, in the fuzz run and in its replay alike
            params = {**params, "protocolVersion": 2}
            if _has_var(params):
                params = {"protocolVersion": 2, "info": {"name": "fuzz", "version": "0"}}
            save = self.request("initialize", params, rid)
            if self.target is not None and not self.ok(save):
                self.fail(f"initialize (protocolVersion 2, valid params) failed: {self.target.var(save).error}")
            if self.target is not None:
                self.accepts = _accepted_blocks(self.target.var(save).result)

        @precondition(lambda self: len(self.known()) < 4)
        @rule(generated=st.none() | params_of("session/new"), rid=request_ids)
        def new_session(self, generated, rid):
            params = {"cwd": "$cwd"} if generated is None or _has_var(generated) else generated
            save = self.request("session/new", params, rid)
            if self.ok(save):
                result = self.target.var(save).result
                self.sessions[f"${save}.result.sessionId"] = {
                    "alive": True, "busy": False, "ending": False, "queued": [], "deleted": False, "pending": [],
                    "cwd": params["cwd"],
                    "config": result.get("configOptions") if isinstance(result, dict) else None}

        # prompts are the heart of the protocol: two rules of their own (generated content blocks, and
        # the configured prompts that steer an agent into its behaviours), so that they get two
        # shares of the steps and swarm testing can switch either on alone
        @precondition(lambda self: self.alive(busy=False))
        @rule(data=st.data(), rid=request_ids, anything=st.integers(0, 3).map(lambda i: i == 3),
              keyed=st.booleans())
        def prompt_blocks(self, data, rid, anything, keyed):
            """1..MAX_ITEMS generated blocks: in three prompts of four only kinds the agent advertised
            (so that they get past its validation to its logic), else of any kind (it may reject them).
            Half of them carry an idempotencyKey, which ``prompt_retry`` may send again."""
            ref = self.pick(data, self.alive(busy=False))
            content = data.draw(blocks_of(None if anything else self.accepts), label="prompt")
            if _has_var(content):
                content = [{"type": "text", "text": ""}]
            self.prompt(ref, content, rid, key=f"fuzz-key-{len(self.steps)}" if keyed else None)

        @precondition(lambda self: any(self.sessions[r].get("keyed") for r in self.alive(busy=False)))
        @rule(data=st.data(), rid=request_ids, after_turn=st.booleans())
        def prompt_retry(self, data, rid, after_turn):
            """The session's last keyed prompt sent again, key and all: a retry of the same submission, after
            its turn ended or while it may still run (the IDEM monitors judge the answer and its effects).
            A retry starts no turn, so nothing waits for an idle of its own."""
            ref = data.draw(st.sampled_from([r for r in self.alive(busy=False) if self.sessions[r].get("keyed")]),
                            label="session")
            if after_turn:
                self.idle(ref)
            self.request("session/prompt", dict(self.sessions[ref]["keyed"]), rid)

        @precondition(lambda self: self.alive(busy=False))
        @rule(data=st.data(), rid=request_ids, kind=st.sampled_from(["simple", "tool", "permission"]),
              answer=st.sampled_from(PERMISSION_ANSWERS))
        def prompt_steered(self, data, rid, kind, answer):
            """A configured prompt: a plain answer, a tool call, a permission request (answered as drawn)."""
            ref = self.pick(data, self.alive(busy=False))
            if kind == "permission":
                # its own turn: sent while another turn runs, the agent may hold it (and ask later) or
                # insert it into that work (and never ask); the spec allows both, and the answers
                # scripted in order would then go to other requests than drawn
                self.idle(ref)
                self.options["permission_answers"].append(answer)
                self.answer_steps.append(len(self.steps))  # the prompt's step (for the reducer)
            self.prompt(ref, [{"type": "text", "text": fs.config.prompts[kind]}], rid)
            if kind == "permission":
                # answers are taken in the order the agent asks: this turn asks (and ends) before any
                # later step can make the agent ask, in the fuzz run and in its replay alike
                self.idle(ref)

        def prompt(self, ref: str, content: list, rid, key: str | None = None) -> None:
            """A prompt whose turn ends by itself: its idle is awaited only when a later step needs the
            session again (``idle``), so that steps on other sessions go on while the agent works (its
            turns interleave, and its time to answer overlaps the fuzzer's)."""
            s = self.sessions[ref]
            params: dict[str, Any] = {"sessionId": ref, "prompt": content}
            if key is not None:
                params["idempotencyKey"] = key
            if s.get("ending") and not s["queued"]:
                # the turn before it still runs: the agent holds this prompt and answers it when it
                # inserts it, at the end of that turn (a session's prompts, back to back, need no wait)
                s["queued"].append(self.request("session/prompt", params, rid, wait=False))
                return
            self.idle(ref)
            save = self.request("session/prompt", params, rid)
            if self.ok(save):
                s.update(ending=True, turn=save)
                if key is not None:
                    s["keyed"] = params  # what prompt_retry resends

        def idle(self, ref: str, tolerate: bool = False) -> str | None:
            """Wait for the end of the session's turn that ends by itself, if one runs (and of the turn
            of a prompt held behind it: its answer comes when it is inserted, its idle after that)."""
            s = self.sessions[ref]
            if not s.get("ending"):
                return None
            s["ending"] = False
            queued, s["queued"] = s["queued"], []
            problem = self.await_answers(queued, tolerate)
            if problem:
                return problem
            s["turn"] = next((q for q in reversed(queued) if self.ok(q)), s["turn"])  # the last to start a turn
            return self.do({"await": {"idle": ref, "after": "$" + s["turn"]}}, tolerate=tolerate)

        def await_answers(self, saves: list[str], tolerate: bool = False) -> str | None:
            """Wait for the answers to these saved requests, in order (the first problem ends the wait)."""
            for save in saves:
                problem = self.do({"await": {"response": "$" + save}}, tolerate=tolerate)
                if problem:
                    return problem
            return None

        @precondition(lambda self: self.alive(busy=False))
        @rule(data=st.data(), rid=request_ids, kind=st.sampled_from(["long", "hold"]))
        def prompt_long(self, data, rid, kind):
            """Work that runs until it is cancelled (or for seconds): the session is busy meanwhile."""
            ref = self.pick(data, self.alive(busy=False))
            self.idle(ref)
            text = fs.config.prompts["permission" if kind == "hold" else kind]
            if kind == "hold":
                self.options["permission_answers"].append("hold")
                self.answer_steps.append(len(self.steps))
            save = self.request("session/prompt", {"sessionId": ref, "prompt": [{"type": "text", "text": text}]}, rid)
            if self.ok(save):
                self.sessions[ref].update(busy=True, since=len(self.judge.ctx.frames))
                if kind == "hold":
                    # permission answers are taken in the order the agent asks: let this turn ask (and
                    # take its "hold") before any later step can ask, so that the order is the steps'
                    # order in the fuzz run and in its replay alike
                    # (or until the turn ends: an agent that asks no permission is not waited for in vain)
                    self.do({"await": {"update": {"session": ref, "kind": "state_update",
                                                  "state": ["requires_action", "idle"]},
                                       "optional": True, "timeout": min(fs.config.timeout, 1.0)}})

        @precondition(lambda self: self.alive(busy=True))
        @rule(data=st.data(), rid=request_ids)
        def prompt_while_busy(self, data, rid):
            """A prompt for a session whose work runs: held, answered when the turn ends (or -32800)."""
            ref = data.draw(st.sampled_from(self.alive(busy=True)), label="session")
            content = [{"type": "text", "text": fs.config.prompts["simple"]}]
            save = self.request("session/prompt", {"sessionId": ref, "prompt": content}, rid, wait=False)
            self.sessions[ref]["pending"].append(save)

        @precondition(lambda self: self.alive(busy=True))
        @rule(data=st.data())
        def cancel(self, data):
            ref = data.draw(st.sampled_from(self.alive(busy=True)), label="session")
            if self.turn_over(ref):  # nothing left to cancel: an idle after a cancel would never come
                self.settle(ref)
                return
            self.do({"cancel": {"session": ref}})
            # optional: the turn may have ended before the cancel (an agent that did not do what the
            # steering prompt does to the reference agent); a missing idle for active work is CANCEL-001's
            self.do({"await": {"idle": ref, "optional": True}})
            self.settle(ref)

        def turn_over(self, ref: str) -> bool:
            """Has the session's long turn ended by itself? The steering prompts make the reference agent
            work until cancelled; another agent may answer them at once, with an idle already sent."""
            sid = self.target.var(ref[1:]) if self.target is not None else None
            since = self.sessions[ref].get("since", 0)
            for f in self.judge.ctx.frames[since:]:
                m = f.msg
                if f.direction != "received" or not isinstance(m, dict) or m.get("method") != "session/update":
                    continue
                p = m.get("params")
                u = p.get("update") if isinstance(p, dict) else None
                if isinstance(u, dict) and p.get("sessionId") == sid and u.get("sessionUpdate") == "state_update" \
                        and u.get("state") == "idle":
                    return True
            return False

        def settle(self, ref: str, tolerate: bool = False) -> str | None:
            """The session's work is over: its held prompts are answered (-32800 or run) before we go on."""
            s = self.sessions[ref]
            s["busy"] = False
            pending, s["pending"] = s["pending"], []
            return self.await_answers(pending, tolerate)

        @precondition(lambda self: any(s["pending"] for s in self.sessions.values()))
        @rule(data=st.data())
        def cancel_request(self, data):
            """$/cancel_request for a held prompt: it is answered -32800 (or was already answered)."""
            ref = data.draw(st.sampled_from(sorted(r for r, s in self.sessions.items() if s["pending"])), label="s")
            save = self.sessions[ref]["pending"].pop(0)
            p = self.target.var(save) if self.target is not None else None
            if p is None:
                return
            self.do({"notify": {"method": "$/cancel_request", "params": {"requestId": p.id}}})
            self.do({"await": {"response": "$" + save}})

        def cancel_request_unknown(self, rid):
            """$/cancel_request for an id that is not in flight: ignored, never answered."""
            if (type(rid).__name__, rid) in self.used_ids or _has_var(rid):
                return
            self.do({"notify": {"method": "$/cancel_request", "params": {"requestId": rid}}})

        def list_sessions(self, rid, params):
            if _has_var(params):
                params = {}
            self.request("session/list", params, rid)

        # closing and deleting share one rule (a session ends one way or the other), so that ending
        # sessions does not take two shares of the steps from the traffic inside them
        @precondition(lambda self: self.known())
        @rule(data=st.data(), rid=request_ids, how=st.sampled_from(["close", "delete"]))
        def end_session(self, data, rid, how):
            # a refused close or delete (an agent without session/delete: -32601) leaves the session,
            # and the work it runs, as they were: the wind-down still cancels that work
            if how == "close" and self.alive():
                ref = self.pick(data, self.alive())
                self.idle(ref)
                if not self.ok(self.request("session/close", {"sessionId": ref}, rid)):
                    return
                self.sessions[ref]["alive"] = False
            else:
                ref = self.pick(data, self.known())
                self.idle(ref)
                if not self.ok(self.request("session/delete", {"sessionId": ref}, rid)):
                    return
                self.sessions[ref].update(alive=False, deleted=True)
            self.settle(ref)

        # one resume in sixteen first moves to a new process: a process start costs as much as dozens
        # of steps (with one in eight, restarts took a fifth of a run), so they are kept rare enough
        # that most time goes to traffic
        @precondition(lambda self: any(not s["busy"] for s in self.sessions.values() if not s["deleted"]))
        @rule(data=st.data(), rid=request_ids, replay=st.sampled_from(["none", "start", "null"]),
              new_process=st.integers(0, 15).map(lambda i: i == 15))
        def resume(self, data, rid, replay, new_process):
            ref = self.pick(data, sorted(r for r in self.known() if not self.sessions[r]["busy"]))
            if new_process and not self.alive(busy=True):
                self.restart()
            self.idle(ref)
            s = self.sessions[ref]
            params: dict[str, Any] = {"sessionId": ref, "cwd": s.get("cwd") or "$cwd"}
            if replay == "start":
                params["replayFrom"] = {"type": "start"}
            elif replay == "null":
                params["replayFrom"] = None
            save = self.request("session/resume", params, rid)
            if self.ok(save):
                s["alive"] = True

        def restart(self):
            """A new agent process in the same directory (sessions persist; none is active there)."""
            for ref in list(self.sessions):
                self.idle(ref)
            # no spare until the new process has answered: one still starting could take what the old
            # process frees (a lock) before the new one does
            fs.drop_spare()
            self.do({"restart": {}})
            self.used_ids.clear()
            for s in self.sessions.values():
                s["alive"] = False
            self.initialize_connection({"protocolVersion": 2, "info": {"name": "fuzz", "version": "0"}}, 0)
            fs.refill_spare()

        @precondition(lambda self: self.alive())
        @rule(data=st.data(), generated=st.none() | params_of("session/set_config_option"), rid=request_ids)
        def set_config(self, data, generated, rid):
            """An advertised option set to one of its values, or a generated (mostly unknown) one."""
            ref = self.pick(data, self.alive())
            self.idle(ref)
            options = [o for o in self.sessions[ref].get("config") or [] if isinstance(o, dict)
                       and o.get("type") in ("select", "boolean") and isinstance(o.get("configId"), str)]
            if generated is None and options:
                opt = data.draw(st.sampled_from(options), label="option")
                if opt["type"] == "boolean":
                    params = {"type": "boolean", "value": data.draw(st.booleans(), label="value")}
                else:
                    values = [v.get("value") for v in _select_values(opt)] or [opt.get("currentValue")]
                    params = {"type": "id", "value": data.draw(st.sampled_from(values), label="value")}
                params.update(sessionId=ref, configId=opt["configId"])
            elif generated is not None and not _has_var(generated):
                params = {**generated, "sessionId": ref}
            else:
                return
            save = self.request("session/set_config_option", params, rid)
            if self.ok(save):
                result = self.target.var(save).result
                if isinstance(result, dict) and isinstance(result.get("configOptions"), list):
                    self.sessions[ref]["config"] = result["configOptions"]

        def invalid_request(self, data, inv: Invalid, rid):
            """A malformed request: it must be rejected (monitors judge the code) and the agent survive."""
            params = dict(inv.params)
            if "sessionId" in params and isinstance(params["sessionId"], str) and self.alive(busy=False) \
                    and data.draw(st.booleans(), label="real session"):
                params["sessionId"] = self.pick(data, self.alive(busy=False))
                self.idle(params["sessionId"])  # a later await of its idle looks for one after this request
            if _has_var(params):
                return
            self.request(inv.method, params, rid)  # a failed re-initialize leaves the connection as it was

        def unknown_session(self, rid, method):
            params: dict[str, Any] = {"sessionId": "$unknown_session"}
            if method == "session/prompt":
                params["prompt"] = [{"type": "text", "text": "hello"}]
            elif method == "session/resume":
                params["cwd"] = "$cwd"
            elif method == "session/set_config_option":
                params.update(configId="mode", type="id", value="code")
            self.request(method, params, rid)

        def other_request(self, data, method, rid):
            params = data.draw(params_of(method), label="params")
            if not _has_var(params):
                self.request(method, params, rid)

        def envelope(self, case: EnvelopeCase, rid):
            """Raw framing / envelope input, then a liveness probe that must be answered."""
            for line in case.lines:
                if _has_var(line if isinstance(line, str) else ""):
                    return
            for line in case.lines:  # ids written in raw lines are taken, like those of requests
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                for item in msg if isinstance(msg, list) else [msg]:
                    if isinstance(item, dict) and isinstance(item.get("id"), (str, int, float)):
                        self.used_ids.add((type(item["id"]).__name__, item["id"]))
            if case.informational:
                self.do({"note": {"text": informational_note(case.lines)}})
            for line in case.lines:
                self.do(step_for(line))
            self.request("session/list", {}, rid)

        # the traffic mix: session rules each get a share of the steps; the rest (malformed,
        # unknown-session, envelope, other methods) shares one rule, so that it does not crowd them out
        @rule(data=st.data(), kind=st.sampled_from(["cancel_request_unknown", "list_sessions", "invalid_request",
                                                    "unknown_session", "other_request", "envelope"]))
        def other_traffic(self, data, kind):
            d = lambda s, label: data.draw(s, label=label)  # noqa: E731
            if kind == "cancel_request_unknown":
                self.cancel_request_unknown(d(request_ids, "rid"))
            elif kind == "list_sessions":
                self.list_sessions(d(request_ids, "rid"), d(params_of("session/list"), "params"))
            elif kind == "invalid_request":
                self.invalid_request(data, d(invalid, "invalid"), d(request_ids, "rid"))
            elif kind == "unknown_session":
                self.unknown_session(d(request_ids, "rid"), d(st.sampled_from(_SESSION_METHODS), "method"))
            elif kind == "other_request":
                self.other_request(data, d(st.sampled_from(other_methods), "method"), d(request_ids, "rid"))
            else:
                used_now[0] = self.used_ids
                self.envelope(d(fresh_envelope_cases, "case"), d(request_ids, "rid"))

        @invariant()
        def no_blocking_failure(self):
            self.check()
            self.rule_start = len(self.steps)  # the next rule's first step
            self.rule_starts.append(self.rule_start)

        def teardown(self):
            if self.target is None:
                return
            if fs.budget_stopped:  # the example was cut off: its process goes, nothing is judged
                self.target.close()
                return
            try:
                if not self.broken:
                    self.wind_down()
            finally:
                self.target.close()
            if not self.broken:
                self.judge.finish()
                self.check()

    return AgentMachine


def failure_message(problem: str | None, stray: bool, bad: list[Finding]) -> str:
    """One account of a failed example: the step that broke (if the target died, stopped answering or
    answered what it was not asked) and the blocking rules that failed."""
    if problem is None:
        return f"{bad[0].rule} failed: {bad[0].message}" if bad else "the example failed"
    named = "; ".join(f"{f.rule} failed: {f.message}" for f in bad[:3])
    what = "the target answered what it was never asked" if stray else "the target stopped answering or died"
    return f"{what}: {problem}" + (f" ({named})" if named else "")


# prompt capabilities (capabilities.session.prompt.*) -> the content block type they admit
_PROMPT_CAPABILITY_BLOCKS = {"image": "image", "audio": "audio", "embeddedContext": "resource"}


def _accepted_blocks(init_result: Any) -> tuple[str, ...]:
    """The content block types an agent takes in prompts: text and resource links always, the others
    when its initialize result advertises them."""
    caps = init_result.get("capabilities") if isinstance(init_result, dict) else None
    session = caps.get("session") if isinstance(caps, dict) else None
    prompt = session.get("prompt") if isinstance(session, dict) else None
    extra = [b for c, b in _PROMPT_CAPABILITY_BLOCKS.items() if isinstance(prompt, dict) and prompt.get(c) is not None]
    return ("text", "resource_link", *extra)


def _copy_options(options: dict[str, Any]) -> dict[str, Any]:
    out = {k: list(v) if isinstance(v, list) else v for k, v in options.items()}
    if not out.get("permission_answers"):
        out.pop("permission_answers", None)
    return out
