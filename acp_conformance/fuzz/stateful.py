"""Stateful fuzzing of an agent: a hypothesis state machine over connections and sessions.

Every rule of ``AgentMachine`` is expressed as scenario steps (the format of ``scenarios/``) and
run by the ordinary scenario runner against ONE live target process, kept open across steps
through an anyio blocking portal (a process is started per example, and again only to resume in a
new process). Every frame goes to a ``MonitorContext`` with all agent monitors, so every rule of the
catalog judges the generated traffic; a blocking FAIL finding, a timeout or a crash fails the
example. Hypothesis then shrinks the sequence, and the shrunk example's steps, already in scenario
form, are written as a scenario file that ``replay`` reruns through the same runner and monitors.
"""

from __future__ import annotations

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
import anyio.from_thread
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ..protocol.validate import Validator
from ..rules.catalog import load_catalog
from ..rules.findings import FAIL, Finding
from ..rules.monitor import MonitorContext
from ..rules.monitors import AGENT_MONITORS
from ..scenarios.model import Scenario, Step
from ..scenarios.runner import HarnessError, RunSettings, Runner, ScenarioAbort, ScenarioSkip, TargetSpec
from ..wire.peer import TargetGone, WaitTimeout
from ..wire.transport import TargetClosed
from .envelope import INFORMATIONAL_NOTE, EnvelopeCase, envelope_cases, step_for
from ..scenarios.runner import _select_values
from .strategies import MAX_ITEMS, Invalid, invalid_request, request_ids, strategies_for

DEFAULT_PROMPTS = {"simple": "Say hello", "tool": "Use a tool to read the file notes.txt",
                   "permission": "Delete the build directory; ask my permission first.",
                   "long": "Count slowly to 500, one number per line.",
                   "cancellable": "Run the test suite as a cancellable tool call.",
                   "terminal": "Run make test in a terminal."}
PERMISSION_ANSWERS = ("allow", "reject", "cancelled", "not_offered", "unknown", "approved", "error")
# rules whose FAIL findings on fuzz traffic are known false failures of a monitor, reported to the
# lead (fuzz-findings.md in the brief); each entry is a narrow predicate, not the whole rule, and goes
# when the monitor is fixed


def _delete_with_malformed_id(finding: Finding, frames: list) -> bool:
    """DELETE-001 on a session/delete whose sessionId is not a string (a malformed request that the
    agent rightly rejects with -32602): the monitor counts it as a delete of a session of this connection."""
    for seq in finding.frames:
        msg = frames[seq].msg if seq < len(frames) else None
        if isinstance(msg, dict) and msg.get("method") == "session/delete":
            params = msg.get("params")
            return not isinstance(params, dict) or not isinstance(params.get("sessionId"), str)
    return False


def _idle_cancelled_after_delete(finding: Finding, frames: list) -> bool:
    """STATE-007 on a 'cancelled' idle that follows a session/delete of that session: deleting a
    session with running work cancels it (as session/close does), which the monitor does not count."""
    if not finding.frames:
        return False
    seq = finding.frames[0]
    msg = frames[seq].msg if seq < len(frames) else None
    sid = msg.get("params", {}).get("sessionId") if isinstance(msg, dict) and isinstance(msg.get("params"), dict) else None
    return any(f.direction == "sent" and isinstance(f.msg, dict) and f.msg.get("method") == "session/delete"
               and isinstance(f.msg.get("params"), dict) and f.msg["params"].get("sessionId") == sid
               for f in frames[:seq])


def _answer_to_another_message(finding: Finding, frames: list) -> bool:
    """CANCEL-013 'answered a $/cancel_request' where the answer is the agent's answer to another line
    the suite wrote: an id null (a line it could not read), or the id of an earlier line that was not
    a request (no "jsonrpc", a wrong version, a method that is not a string; an envelope case). The
    monitor pairs an unmatched error response with the cancel by time."""
    for seq in finding.frames:
        msg = frames[seq].msg if seq < len(frames) else None
        if not isinstance(msg, dict) or "method" in msg or "id" not in msg:
            continue
        if msg["id"] is None:
            return True
        key = _idkey(msg["id"])
        for f in frames[:seq]:
            m = f.msg
            if f.direction == "sent" and isinstance(m, dict) and "id" in m and _idkey(m["id"]) == key \
                    and (m.get("jsonrpc") != "2.0" or not isinstance(m.get("method"), str)):
                return True
    return False


def _lenient_json_line(finding: Finding, frames: list) -> bool:
    """ERR-007 on a line that Python's json reads (NaN, Infinity) but that is not JSON: the agent's
    -32700 (parse error) is right; the transcript parsed the line leniently and expected -32600."""
    for seq in finding.frames:
        f = frames[seq] if seq < len(frames) else None
        if f is not None and f.direction == "sent" and f.problem is None and not _strict_json(f.raw):
            return True
    return False


def _strict_json(raw: bytes) -> bool:
    def reject(name: str) -> Any:
        raise ValueError(name)
    try:
        json.loads(raw, parse_constant=reject)
        return True
    except ValueError:
        return False


def _idkey(value: Any) -> tuple[str, str]:
    return (type(value).__name__, json.dumps(value, sort_keys=True))


# rule -> predicate(finding, frames): True for a known false failure of that rule's monitor
MONITOR_FALSE_FAILURE_ALLOWLIST = {"DELETE-001": _delete_with_malformed_id, "STATE-007": _idle_cancelled_after_delete,
                                   "CANCEL-013": _answer_to_another_message, "ERR-007": _lenient_json_line}

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


@dataclass
class StepStats:
    steps: int = 0  # protocol steps: messages the fuzzer wrote
    examples: int = 0
    t_target: float = 0.0  # waiting on the target, inside the runner (includes monitor time, subtracted below)
    t_monitors: float = 0.0  # validation + all monitors, per frame
    t_total: float = 0.0
    t_start: float = 0.0  # process starts and shutdowns
    t_first: float = 0.0  # waiting for the first answer of each new process (its start-up; in t_target too)
    processes: int = 0  # target processes started
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
        self.allowlisted: list[Finding] = []  # known false failures of monitors (not counted)
        self.informational: list[Finding] = []  # provoked by spec-silent envelope cases (recorded only)
        self.informational_seqs: set[int] = set()
        self.informational_ids: set[Any] = set()
        self._mark_next = False
        # ids the suite wrote, per connection (parsed lines), and the lines it wrote that did not parse:
        # a response carrying an id that is in neither answers nothing the suite sent
        self._written: dict[int, set[tuple[str, str]]] = {}
        self._unparsed: dict[int, list[bytes]] = {}
        self.stray: str | None = None  # such a response arrived (the awaited answer will not come)
        self.on_stray = None  # called (in the event loop) when it does: the live target stops waiting

    def _provoked_by_informational(self, f: Finding) -> bool:
        frames = self.ctx.frames
        for seq in f.frames:
            if seq in self.informational_seqs:
                return True
            fr = frames[seq] if seq < len(frames) else None
            if fr is not None and fr.direction == "received" and isinstance(fr.msg, dict) and "id" in fr.msg \
                    and "method" not in fr.msg and _idkey(fr.msg["id"]) in self.informational_ids:
                return True
        return False

    def feed(self, frame) -> None:
        t = time.perf_counter()
        if frame.event == "note" and (frame.detail or {}).get("text") == INFORMATIONAL_NOTE:
            self._mark_next = True
        elif frame.direction == "sent" and self._mark_next:
            self._mark_next = False
            self.informational_seqs.add(frame.seq)
            for item in frame.msg if isinstance(frame.msg, list) else [frame.msg]:
                if isinstance(item, dict) and "id" in item:
                    self.informational_ids.add(_idkey(item["id"]))
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
                ids.add(_idkey(item["id"]))

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
        if _idkey(rid) in self._written.get(frame.conn, ()):
            return
        needle = json.dumps(rid).encode()
        if any(needle in raw for raw in self._unparsed.get(frame.conn, ())):
            return
        self.stray = (f"a response with id {json.dumps(rid)[:80]} arrived (frame #{frame.seq}), an id the suite "
                      "never sent on this connection")
        if self.on_stray is not None:
            self.on_stray()

    def finish(self) -> None:
        """The end of the example: the monitors that judge whole connections judge now."""
        t = time.perf_counter()
        self.ctx.finish()
        self.stats.t_monitors += time.perf_counter() - t

    def blocking(self, findings: list[Finding]) -> list[Finding]:
        out = []
        for f in findings:
            rule = self.catalog.get(f.rule)
            if f.status == FAIL and rule is not None and (rule.blocking or self.strict):
                if self._provoked_by_informational(f):
                    self.informational.append(f)
                    continue
                known = MONITOR_FALSE_FAILURE_ALLOWLIST.get(f.rule)
                if known is not None and known(f, self.ctx.frames):
                    self.allowlisted.append(f)
                    continue
                out.append(f)
        return out

    def new_failures(self) -> list[Finding]:
        new = self.ctx.findings[self.seen:]
        self.seen = len(self.ctx.findings)
        return self.blocking(new)


class LiveTarget:
    """One scenario runner kept open across the steps of an example (through a blocking portal)."""

    def __init__(self, portal, config: FuzzConfig, scenario: Scenario, judge: Judge, stats: StepStats):
        self.portal = portal
        self.config = config
        self.scenario = scenario
        self.stats = stats
        self.tmp = tempfile.mkdtemp(prefix="acp-fuzz-")
        settings = RunSettings(timeout=config.timeout, startup_timeout=config.startup_timeout,
                               test_timeout=1e9, prompts=config.prompts, validate_sent=None, shutdown_grace=2.0)
        self.runner = Runner(scenario, TargetSpec(config.argv, config.env), settings, Path(self.tmp),
                             listeners=[judge.feed])
        self._stop: anyio.Event | None = None
        self._scope: anyio.CancelScope | None = None
        self._done = None
        self.closed = False
        t = time.perf_counter()
        self._done, _ = portal.start_task(self._host)
        self.stats.t_start += time.perf_counter() - t

    async def _host(self, *, task_status) -> None:
        self._stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            self.runner._tg = tg  # the runner's own task group, as Runner.run() would set it
            try:
                await self.runner.connect()
            finally:
                task_status.started()
            await self._stop.wait()
            with anyio.CancelScope(shield=True):
                await self.runner.disconnect()
            tg.cancel_scope.cancel()

    async def _exec(self, step: Step) -> str | None:
        with anyio.CancelScope() as scope:  # interrupt() cancels it: the awaited answer will not come
            self._scope = scope
            try:
                with anyio.fail_after(max(self.config.timeout, self.config.startup_timeout) * 3):
                    await self.runner.step(step)
            except (WaitTimeout, TargetGone, TargetClosed, ScenarioAbort, HarnessError, ScenarioSkip,
                    TimeoutError) as e:
                return f"{step.describe()}: {e or type(e).__name__}"
            finally:
                self._scope = None
        if scope.cancelled_caught:
            return f"{step.describe()}: the suite stopped waiting"
        return None

    def interrupt(self) -> None:
        """Stop the running step (called in the event loop, by the judge's listener)."""
        if self._scope is not None:
            self._scope.cancel()

    def run(self, step: Step) -> str | None:
        t = time.perf_counter()
        try:
            return self.portal.call(self._exec, step)
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
        t = time.perf_counter()
        try:
            if self._stop is not None:
                self.portal.call(self._stop.set)
            with contextlib.suppress(Exception):
                self._done.result(timeout=15)
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.stats.t_start += time.perf_counter() - t


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


class FuzzSession:
    """What outlives the examples of one run: the portal, the config, the stats, the last failure."""

    def __init__(self, config: FuzzConfig):
        self.config = config
        self.gen = strategies_for(config.schema_path)
        self.validator = self.gen.validator
        self.stats = StepStats()
        self.last_failure: Recorded | None = None  # the latest failing example
        self.best_failure: Recorded | None = None  # the shortest failing example (what is written out)
        self.failures_seen = 0
        self.deadline: float | None = None  # wall clock (perf_counter) after which no example starts
        self.shrink_allowance = 0.0
        self._stack = contextlib.ExitStack()
        self.portal = self._stack.enter_context(anyio.from_thread.start_blocking_portal())

    def over_budget(self) -> bool:
        """Past the budget no example runs; with a failure found, shrinking gets half the budget more."""
        if self.deadline is None:
            return False
        now = time.perf_counter()
        return now > self.deadline + (self.shrink_allowance if self.last_failure is not None else 0.0)

    def close(self) -> None:
        self._stack.close()


_SESSION_METHODS = ("session/prompt", "session/close", "session/delete", "session/resume", "session/set_config_option")


def machine_for(fs: FuzzSession) -> type[RuleBasedStateMachine]:
    gen = fs.gen
    any_block = gen.definition("ContentBlock")
    block_of_type = gen.branches("ContentBlock")  # type -> its blocks (text, image, ..., resource)
    prompts_by_caps: dict[tuple[str, ...], st.SearchStrategy] = {}

    def prompt_blocks(accepts: tuple[str, ...]) -> st.SearchStrategy:
        """1..MAX_ITEMS blocks; three in four of the kinds the agent advertised (so that most prompts get
        past its validation to its logic), one in four of any kind (which it may rightly reject)."""
        s = prompts_by_caps.get(accepts)
        if s is None:
            taken = st.one_of([block_of_type[t] for t in accepts if t in block_of_type])
            s = prompts_by_caps[accepts] = st.lists(st.one_of(taken, taken, taken, any_block), min_size=1,
                                                     max_size=MAX_ITEMS)
        return s
    invalid = st.sampled_from(["initialize", "session/new", "session/prompt", "session/resume", "session/list",
                               "session/set_config_option", "session/close", "session/delete"]) \
        .flatmap(lambda m: invalid_request(gen, m))
    other_methods = ["auth/login", "auth/logout", "tool_call/cancel", "terminal/cancel", "session/list"]

    class AgentMachine(RuleBasedStateMachine):
        """Connections and sessions of one agent; every rule is scenario steps, judged by every monitor."""

        def __init__(self):
            super().__init__()
            fs.stats.examples += 1
            self.options: dict[str, Any] = {"permission_answers": []}
            self.scenario = Scenario("fuzz", Path("fuzz.yaml"), [], [], options=self.options)
            self.judge = Judge(fs.validator, self.options, fs.stats, fs.config.strict)
            self.steps: list[dict[str, Any]] = []
            if fs.over_budget():  # ends the run (not this example: see BudgetSpent)
                raise BudgetSpent()
            self.target = LiveTarget(fs.portal, fs.config, self.scenario, self.judge, fs.stats)
            fs.stats.processes += 1
            self.judge.on_stray = self.target.interrupt
            self.fresh_process = True  # the next request waits for the process to start
            self.accepts: tuple[str, ...] = ("text", "resource_link")  # prompt blocks the agent takes
            self.sessions: dict[str, dict[str, Any]] = {}  # ref -> {alive, busy, deleted, cwd, var, pending}
            self.used_ids: set[tuple[str, Any]] = set()
            self.n = 0
            self.broken: str | None = None

        # -- running steps ---------------------------------------------------------------------
        def do(self, raw: dict[str, Any], *, check: bool = True) -> str | None:
            if self.broken:
                raise FuzzFailure(self.broken)
            if self.target is None:
                return None
            (kind, args), = raw.items()
            self.steps.append(raw)
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
            k = fs.stats.by_kind.setdefault(kind if kind != "request" else args["method"], [0, 0.0])
            k[0] += 1
            k[1] += dt
            problem = problem or self.judge.stray
            if problem is not None:
                self.fail_broken(problem)
            if check:
                self.check()
            return problem

        def fail_broken(self, problem: str) -> None:
            """The target died, stopped answering, or answered what was never asked: end the connection
            so that the monitors judge it (a death or a stray answer fails a rule), then fail with both."""
            self.target.close()
            self.judge.finish()
            bad = self.judge.new_failures()
            named = "; ".join(f"{f.rule} failed: {f.message}" for f in bad[:3])
            self.fail(f"the target stopped answering or died: {problem}" + (f" ({named})" if named else ""), bad)

        def check(self) -> None:
            bad = self.judge.new_failures()
            if bad:
                f = bad[0]
                self.fail(f"{f.rule} failed: {f.message}", bad)

        def fail(self, message: str, bad: list[Finding] | None = None) -> None:
            frames = [fr.text(300) for fr in self.judge.ctx.frames[-12:]]
            bad = bad or []
            stderr = [t for t in self.target.runner.result.stderr if t.strip()] if self.target is not None else []
            rec = Recorded(list(self.steps), _copy_options(self.options), message, [f.rule for f in bad], frames,
                           findings=list(bad), transcript=list(self.judge.ctx.frames),
                           stderr=stderr[-1][-2000:] if stderr else "")
            fs.last_failure = rec
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
                while (type(draw_id).__name__, draw_id) in self.used_ids:
                    draw_id = draw_id + 1 if isinstance(draw_id, int) else draw_id + "x"
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

        def known(self) -> list[str]:
            return sorted(r for r, s in self.sessions.items() if not s["deleted"])

        # -- rules -------------------------------------------------------------------------------
        @initialize(params=gen.definition("InitializeRequest"), rid=request_ids)
        def start(self, params, rid):
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

        @precondition(lambda self: len(self.sessions) < 4)
        @rule(generated=st.none() | gen.params("session/new"), rid=request_ids)
        def new_session(self, generated, rid):
            params = {"cwd": "$cwd"} if generated is None or _has_var(generated) else generated
            save = self.request("session/new", params, rid)
            if self.ok(save):
                result = self.target.var(save).result
                self.sessions[f"${save}.result.sessionId"] = {
                    "alive": True, "busy": False, "deleted": False, "pending": [], "cwd": params["cwd"],
                    "config": result.get("configOptions") if isinstance(result, dict) else None}

        @precondition(lambda self: self.alive(busy=False))
        @rule(data=st.data(), rid=request_ids, kind=st.sampled_from(["blocks", "simple", "tool", "permission"]),
              answer=st.sampled_from(PERMISSION_ANSWERS))
        def prompt(self, data, rid, kind, answer):
            ref = data.draw(st.sampled_from(self.alive(busy=False)), label="session")
            if kind == "blocks":
                content = data.draw(prompt_blocks(self.accepts), label="prompt")
                if _has_var(content):
                    content = [{"type": "text", "text": ""}]
            else:
                if kind == "permission":
                    self.options["permission_answers"].append(answer)
                content = [{"type": "text", "text": fs.config.prompts[kind]}]
            save = self.request("session/prompt", {"sessionId": ref, "prompt": content}, rid)
            if self.ok(save):
                self.do({"await": {"idle": ref}})

        @precondition(lambda self: self.alive(busy=False))
        @rule(data=st.data(), rid=request_ids, kind=st.sampled_from(["long", "hold"]))
        def prompt_long(self, data, rid, kind):
            """Work that runs until it is cancelled (or for seconds): the session is busy meanwhile."""
            ref = data.draw(st.sampled_from(self.alive(busy=False)), label="session")
            text = fs.config.prompts["permission" if kind == "hold" else kind]
            if kind == "hold":
                self.options["permission_answers"].append("hold")
            save = self.request("session/prompt", {"sessionId": ref, "prompt": [{"type": "text", "text": text}]}, rid)
            if self.ok(save):
                self.sessions[ref]["busy"] = True

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
            self.do({"cancel": {"session": ref}})
            self.do({"await": {"idle": ref}})
            self.settle(ref)

        def settle(self, ref: str) -> None:
            """The session's work is over: its held prompts are answered (-32800 or run) before we go on."""
            s = self.sessions[ref]
            s["busy"] = False
            for save in s["pending"]:
                self.do({"await": {"response": "$" + save}})
            s["pending"] = []

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

        @precondition(lambda self: self.alive())
        @rule(data=st.data(), rid=request_ids)
        def close(self, data, rid):
            ref = data.draw(st.sampled_from(self.alive()), label="session")
            self.request("session/close", {"sessionId": ref}, rid)
            self.sessions[ref]["alive"] = False
            self.settle(ref)

        @precondition(lambda self: self.known())
        @rule(data=st.data(), rid=request_ids)
        def delete(self, data, rid):
            ref = data.draw(st.sampled_from(self.known()), label="session")
            self.request("session/delete", {"sessionId": ref}, rid)
            s = self.sessions[ref]
            s.update(alive=False, deleted=True)
            self.settle(ref)

        # one resume in five first moves to a new process: a process start costs as much as dozens of
        # steps, so restarts are kept rare enough that most time goes to traffic
        @precondition(lambda self: any(not s["busy"] for s in self.sessions.values() if not s["deleted"]))
        @rule(data=st.data(), rid=request_ids, replay=st.sampled_from(["none", "start", "null"]),
              new_process=st.integers(0, 4).map(lambda i: i == 4))
        def resume(self, data, rid, replay, new_process):
            ref = data.draw(st.sampled_from(sorted(r for r in self.known() if not self.sessions[r]["busy"])),
                            label="session")
            if new_process and not self.alive(busy=True):
                self.restart()
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
            self.do({"restart": {}})
            self.used_ids.clear()
            for s in self.sessions.values():
                s["alive"] = False
            self.start({"protocolVersion": 2, "info": {"name": "fuzz", "version": "0"}}, 0)

        @precondition(lambda self: self.alive())
        @rule(data=st.data(), generated=st.none() | gen.params("session/set_config_option"), rid=request_ids)
        def set_config(self, data, generated, rid):
            """An advertised option set to one of its values, or a generated (mostly unknown) one."""
            ref = data.draw(st.sampled_from(self.alive()), label="session")
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
                params["sessionId"] = data.draw(st.sampled_from(self.alive(busy=False)), label="session")
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
            params = data.draw(gen.params(method), label="params")
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
                self.do({"note": {"text": INFORMATIONAL_NOTE}}, check=False)
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
                self.list_sessions(d(request_ids, "rid"), d(gen.params("session/list"), "params"))
            elif kind == "invalid_request":
                self.invalid_request(data, d(invalid, "invalid"), d(request_ids, "rid"))
            elif kind == "unknown_session":
                self.unknown_session(d(request_ids, "rid"), d(st.sampled_from(_SESSION_METHODS), "method"))
            elif kind == "other_request":
                self.other_request(data, d(st.sampled_from(other_methods), "method"), d(request_ids, "rid"))
            else:
                fresh = request_ids.filter(lambda i: (type(i).__name__, i) not in self.used_ids)
                self.envelope(d(envelope_cases(fresh), "case"), d(request_ids, "rid"))

        @invariant()
        def no_blocking_failure(self):
            self.check()

        def teardown(self):
            if self.target is None:
                return
            try:
                if not self.broken:
                    for ref in self.alive(busy=True):
                        self.do({"cancel": {"session": ref}})
                        self.do({"await": {"idle": ref}})
                        self.settle(ref)
                    for ref, s in self.sessions.items():
                        for save in s["pending"]:
                            self.do({"await": {"response": "$" + save}})
            finally:
                self.target.close()
            if not self.broken:
                self.judge.finish()
                self.check()

    return AgentMachine


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
