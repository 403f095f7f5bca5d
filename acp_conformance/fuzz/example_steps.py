"""Running one fuzz example against its live target: the machine's steps (each a scenario step, run
by the scenario runner and fed to the judge), how an example fails or is cut off by the budget, how the
work still running winds down, and the example's sessions (``Session``).

``ExampleSteps`` holds no hypothesis rule: ``stateful.AgentMachine`` adds them on top of it.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis.stateful import RuleBasedStateMachine

from ..rules.findings import Finding
from ..scenarios.model import Scenario, Step
from .base_strategies import sampled
from .config import BudgetSpent, FuzzFailure, has_var
from .judge import Judge, failure_message
from .live import FuzzSession
from .recorded import Recorded

_DEBUG = bool(__import__("os").environ.get("ACP_FUZZ_DEBUG"))


@dataclass
class Session:
    """A session the example opened, as the machine knows it (keyed by the variable of its id)."""

    cwd: Any
    config: list | None = None  # its config options, as last reported
    alive: bool = True  # open on the current connection (not closed, not left behind by a restart)
    deleted: bool = False
    busy: bool = False  # work runs that only a cancel ends (prompt_long)
    since: int = 0  # the transcript's length when that work began
    ending: bool = False  # a turn runs that ends by itself: its idle is awaited when the session is next used
    turn: str = ""  # the saved request of the last prompt that started a turn
    queued: list[str] = field(default_factory=list)  # a prompt sent behind that turn (answered when inserted)
    pending: list[str] = field(default_factory=list)  # prompts sent while busy (answered when the work ends)
    keyed: dict[str, Any] | None = None  # the last prompt sent with an idempotencyKey (prompt_retry resends it)
    keyed_save: str | None = None  # its saved request, on this connection (fault_duplicate writes its line again)


class ExampleSteps(RuleBasedStateMachine):
    """One example: its live target, its judge, the steps run so far, its sessions."""

    def __init__(self, fs: FuzzSession):
        super().__init__()
        self.fs = fs
        self.fs.stats.examples += 1
        self.options: dict[str, Any] = {"permission_answers": []}
        self.answer_steps: list[int] = []  # for each permission answer, the step of the prompt it is for
        self.scenario = Scenario("fuzz", Path("fuzz.yaml"), [], [], options=self.options)
        self.judge = Judge(self.fs.validator, self.options, self.fs.stats, self.fs.config.thresholds)
        self.steps: list[dict[str, Any]] = []
        if self.fs.over_budget():  # ends the run (not this example: see BudgetSpent)
            self.fs.budget_stopped = True
            raise BudgetSpent()
        self.open_target()
        self.accepts: tuple[str, ...] = ("text", "resource_link")  # prompt blocks the agent takes
        self.sessions: dict[str, Session] = {}  # ref (the variable of its id) -> the session
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
        self.target = self.fs.new_target(self.scenario, self.judge, self.fs.deadline)
        self.fs.stats.processes += 1
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
        self.fs.stop_prestarting()
        self.judge = Judge(self.fs.validator, self.options, self.fs.stats, self.fs.config.thresholds)
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
        if self.fs.over_budget() and not self.failing:
            self.stop_for_budget()
        (kind, args), = raw.items()
        self.steps.append(raw)
        self.step_frames.append(len(self.judge.ctx.frames))
        self.fs.stats.trace.update(json.dumps(raw, sort_keys=True, default=str).encode())
        if kind in ("request", "notify", "raw", "restart", "cancel"):
            self.fs.stats.steps += 1
        if kind == "restart":
            self.fs.stats.processes += 1
            self.fresh_process = True
        t = time.perf_counter()
        problem = self.target.run(Step(kind, dict(args) if isinstance(args, dict) else args, len(self.steps) - 1))
        dt = time.perf_counter() - t
        if self.fresh_process and kind == "request":  # the first answer of a new process: its start-up
            self.fs.stats.t_first += dt
            self.fresh_process = False
        name = args["method"] if kind == "request" else \
            f"await {next(iter(args))}" if kind == "await" and isinstance(args, dict) and args else kind
        k = self.fs.stats.by_kind.setdefault(name, [0, 0.0])
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
        self.fs.budget_stopped = True
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
            if s.ending:
                out += [{"await": {"response": "$" + save}} for save in s.queued]
                out.append({"await": {"idle": ref, "after": "$" + (s.queued or [s.turn])[-1]}})
        for ref in self.alive(busy=True):
            out += [{"cancel": {"session": ref}}, {"await": {"idle": ref, "optional": True}}]
        for s in self.sessions.values():
            out += [{"await": {"response": "$" + save}} for save in s.pending]
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
            # optional, as in the cancel rule: the turn may end by itself between turn_over() and the cancel,
            # and no idle is owed after it then (a missing idle for work still active is CANCEL-001's)
            if self.do({"cancel": {"session": ref}}, tolerate=tolerate) \
                    or self.do({"await": {"idle": ref, "optional": True}}, tolerate=tolerate) \
                    or self.settle(ref, tolerate):
                return
        for s in self.sessions.values():
            if self.await_answers(s.pending, tolerate):
                return
            s.pending = []

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
        self.fs.last_failure = rec
        if self.fs.best_failure is None:
            self.fs.stats.found_after = time.perf_counter() - self.fs.started
            self.fs.stats.found_steps = len(rec.steps)
        if self.fs.best_failure is None or len(rec.steps) <= len(self.fs.best_failure.steps):
            self.fs.best_failure = rec
        self.fs.failures_seen += 1
        if _DEBUG:
            print(f"[fuzz] failure {self.fs.failures_seen} after {len(self.steps)} steps: {message[:300]}",
                  file=sys.stderr)
        self.broken = message
        raise FuzzFailure(message)

    def fresh_id(self, draw_id: Any) -> Any:
        if isinstance(draw_id, str) and has_var(draw_id):  # the runner would read it as a variable
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
        return sorted(r for r, s in self.sessions.items() if s.alive and (busy is None or s.busy == busy))

    def pick(self, data, refs: list[str]) -> str:
        """One of ``refs``, drawn among those with no turn in flight when there are any: a step on
        such a session goes on at once, while the turns of the others run (a step on a session whose
        turn is in flight first waits for its idle)."""
        ready = [r for r in refs if not self.sessions[r].ending]
        return data.draw(sampled(ready or refs), label="session")

    def known(self) -> list[str]:
        return sorted(r for r, s in self.sessions.items() if not s.deleted)

    # -- steps shared by the rules ------------------------------------------------------------

    def initialize_connection(self, params, rid):
        # every request carries an explicit id (none from the runner's counter), so generated
        # ids never collide with the suite's own, in the fuzz run and in its replay alike
        params = {**params, "protocolVersion": 2}
        if has_var(params):
            params = {"protocolVersion": 2, "info": {"name": "fuzz", "version": "0"}}
        save = self.request("initialize", params, rid)
        if self.target is not None and not self.ok(save):
            self.fail(f"initialize (protocolVersion 2, valid params) failed: {self.target.var(save).error}")
        if self.target is not None:
            self.accepts = _accepted_blocks(self.target.var(save).result)

    def prompt(self, ref: str, content: list, rid, key: str | None = None) -> None:
        """A prompt whose turn ends by itself: its idle is awaited only when a later step needs the
        session again (``idle``), so that steps on other sessions go on while the agent works (its
        turns interleave, and its time to answer overlaps the fuzzer's)."""
        s = self.sessions[ref]
        params: dict[str, Any] = {"sessionId": ref, "prompt": content}
        if key is not None:
            params["idempotencyKey"] = key
        if s.ending and not s.queued:
            # the turn before it still runs: the agent holds this prompt and answers it when it
            # inserts it, at the end of that turn (a session's prompts, back to back, need no wait)
            s.queued.append(self.request("session/prompt", params, rid, wait=False))
            return
        self.idle(ref)
        save = self.request("session/prompt", params, rid)
        if self.ok(save):
            s.ending, s.turn = True, save
            if key is not None:
                s.keyed, s.keyed_save = params, save  # what prompt_retry resends, fault_duplicate writes again

    def idle(self, ref: str, tolerate: bool = False) -> str | None:
        """Wait for the end of the session's turn that ends by itself, if one runs (and of the turn
        of a prompt held behind it: its answer comes when it is inserted, its idle after that)."""
        s = self.sessions[ref]
        if not s.ending:
            return None
        s.ending = False
        queued, s.queued = s.queued, []
        problem = self.await_answers(queued, tolerate)
        if problem:
            return problem
        s.turn = next((q for q in reversed(queued) if self.ok(q)), s.turn)  # the last to start a turn
        return self.do({"await": {"idle": ref, "after": "$" + s.turn}}, tolerate=tolerate)

    def await_answers(self, saves: list[str], tolerate: bool = False) -> str | None:
        """Wait for the answers to these saved requests, in order (the first problem ends the wait)."""
        for save in saves:
            problem = self.do({"await": {"response": "$" + save}}, tolerate=tolerate)
            if problem:
                return problem
        return None

    def turn_over(self, ref: str) -> bool:
        """Has the session's long turn ended by itself? The steering prompts make the reference agent
        work until cancelled; another agent may answer them at once, with an idle already sent."""
        sid = self.target.var(ref[1:]) if self.target is not None else None
        since = self.sessions[ref].since
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
        s.busy = False
        pending, s.pending = s.pending, []
        return self.await_answers(pending, tolerate)

    def restart(self):
        """A new agent process in the same directory (sessions persist; none is active there)."""
        for ref in list(self.sessions):
            self.idle(ref)
        # the next example's spare is stopped until the new process has answered: running, it could take
        # what the old process frees (a lock) before the new one does
        with self.fs.spare_paused():
            self.do({"restart": {}})
            self.used_ids.clear()
            for s in self.sessions.values():
                s.alive = False
                s.keyed_save = None
            self.initialize_connection({"protocolVersion": 2, "info": {"name": "fuzz", "version": "0"}}, 0)
        self.fs.refill_spare()

    def crash(self):
        """The agent killed (SIGKILL) whatever it is doing, and a new process started in the same directory: the
        turns in flight end with it (none of its requests is still unanswered: see fault_crash's precondition)."""
        with self.fs.spare_paused():
            self.do({"kill": {}})
            self.do({"restart": {}})
            self.used_ids.clear()
            for s in self.sessions.values():
                s.alive = s.busy = s.ending = False
                s.keyed_save = None
            self.initialize_connection({"protocolVersion": 2, "info": {"name": "fuzz", "version": "0"}}, 0)
        self.fs.refill_spare()

    def teardown(self):
        if self.target is None:
            return
        if self.fs.budget_stopped:  # the example was cut off: its process goes, nothing is judged
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
