"""Shrinking a counterexample as a scenario: fewer steps, fewer content blocks, the same failure.

Hypothesis finds the failing example; this module makes it short. It works on what is written out
(the scenario steps) and reruns every candidate against the target through the same runner, judge
and live target as the fuzzer, so the scenario it keeps is one that was seen to fail. Hypothesis'
own shrinker works on its choice sequence and reinterprets every later rule when it removes one; each
of its attempts costs a process start and the whole example, and against an agent that takes a tenth
of a second to start it got through a few dozen attempts in a test's budget, rarely enough to shorten
an example of fifty steps at all.

The candidates, in order, each kept only if the target fails the same way (some of the
counterexample's blocking rules fail again and no others, and a target that died, stopped answering or
answered what it was not asked does so again):

1. slices: the first step (initialize), the failing step and the steps it refers to (``$r3``: the
   session/new that created its session), transitively; then also every step before it that touches
   those sessions (with, in both, the steps after it that wind down what is kept: the cancels and
   awaits that end the turns left running, so that no scenario stops in the middle of a turn);
2. removal of whole kinds of steps at once (every await, every set_config_option request, ...);
3. removal of chunks of the other steps, halving the chunk size down to single steps (delta
   debugging); a step removed takes along every step that refers to what it saved, and a permission
   answer its prompt;
4. removal of single content blocks from the prompts that remain;
5. simpler values in the params of the request steps left (``_simplify_values``): optional keys
   dropped (``_meta``, titles, annotations, the optional fields of initialize ...), strings made
   empty (else a one- then an eight-character prefix; a path "/", so that it stays absolute),
   numbers made 0 (else 1 or -1), lists cut to their first element. Coarse first, so that a few runs
   do most of the work: every step's params at once, then each step's at once (the largest first),
   then each kind of edit of the step at once (all its optional keys, all its strings, ...), then
   halves of a kind's edits down to single ones, and a finer value only for an edit refused alone.
   An edit that would make valid params invalid (a required key, an enum value) is skipped
   without a run (the schema's validator; invalid params must stay invalid). Left as they are: ids,
   ``$variables``, ``sessionId``, ``protocolVersion``, the discriminators (``type`` ...), the
   configured steering prompts, raw lines. At most ``VALUE_RERUNS`` runs;
6. a last run of the scenario kept: it must fail again (else the candidate kept before it is tried,
   up to three; then the example as found). Without time left for it, the candidate kept last (seen
   to fail once) stands.

Every candidate, and the scenario written, ends with ``closing_steps`` (cancels and a short settle),
so that a correct agent replaying it is never cut off in the middle of a turn. An attempt runs all its
steps (it stops early only when the target dies or stops answering), and the whole reduction stops at
its deadline with the shortest failing scenario so far: no run starts that the longest run so far says
would not end by then, and a run still going at the deadline is cut off.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..rules.findings import Finding
from ..scenarios.model import Scenario, Step
from .judge import Judge, failure_message
from .live import FuzzSession
from .recorded import Recorded

_DEBUG = bool(os.environ.get("ACP_FUZZ_DEBUG"))
_REF = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
VALUE_RERUNS = 40  # runs the value pass (5.) may spend, within the deadline
# keys whose values are never simplified nor dropped (besides the schema's discriminators)
_KEEP_KEYS = frozenset({"sessionId", "protocolVersion", "type"})
_DROP = object()  # an edit's value: the key goes


@dataclass
class Outcome:
    failed: bool
    broken: str | None  # died | timeout | stray | ... (as Recorded.broken)
    rules: list[str]
    message: str
    findings: list[Finding] = field(default_factory=list)
    transcript: list[Any] = field(default_factory=list)
    stderr: str = ""


def _refs(value: Any) -> set[str]:
    if isinstance(value, str):
        return set(_REF.findall(value))
    if isinstance(value, list):
        return set().union(*(_refs(v) for v in value)) if value else set()
    if isinstance(value, dict):
        return set().union(*(_refs(v) for v in value.values())) if value else set()
    return set()


def _save(step: dict[str, Any]) -> str | None:
    (_, args), = step.items()
    return args.get("save") if isinstance(args, dict) else None


def _session_of(step: dict[str, Any]) -> Any:
    """The session a cancel, an await of idle or a session/prompt request is about (as written: $r2...)."""
    (kind, args), = step.items()
    if not isinstance(args, dict):
        return None
    if kind == "cancel":
        return args.get("session")
    if kind == "await":
        return args.get("idle")
    if kind == "request" and args.get("method") == "session/prompt" and isinstance(args.get("params"), dict):
        return args["params"].get("sessionId")
    return None


def _idles_owed(steps: list[dict[str, Any]]) -> bool:
    """Every ``await: idle`` of a session follows a prompt of it not yet matched by an earlier await.

    A candidate that drops a prompt but keeps the await of its idle waits for an idle nobody owes: it
    "fails" against any agent, the correct one too, so it is no counterexample.
    """
    owed: dict[Any, int] = {}
    for step in steps:
        (kind, args), = step.items()
        sid = _session_of(step)
        if kind == "request" and sid is not None:
            owed[repr(sid)] = owed.get(repr(sid), 0) + 1
        elif kind == "prompt" and isinstance(args, dict):
            owed[repr(args.get("session"))] = owed.get(repr(args.get("session")), 0) + 1
        elif kind == "await" and sid is not None:
            if owed.get(repr(sid), 0) <= 0:
                return False
            owed[repr(sid)] -= 1
    return True


def _deps(steps: list[dict[str, Any]]) -> list[set[int]]:
    """For each step, the earlier steps it needs: those that saved what it refers to ($r2 ...), and, for
    a cancel or an await of idle, the last prompt sent to that session (without it there is no turn to
    cancel, and no idle to wait for)."""
    by_save: dict[str, int] = {}
    last_prompt: dict[Any, int] = {}
    out: list[set[int]] = []
    for j, st in enumerate(steps):
        d = {by_save[n] for n in _refs(st) if n in by_save}
        (kind, _), = st.items()
        sid = _session_of(st)
        if kind in ("cancel", "await") and sid is not None and sid in last_prompt:
            d.add(last_prompt[sid])
        out.append(d)
        if kind == "request" and sid is not None:
            last_prompt[sid] = j
        if _save(st):
            by_save[_save(st)] = j
    return out


def _dependents(steps: list[dict[str, Any]], removed: set[int]) -> set[int]:
    """``removed`` and every later step that needs one of them (directly or not)."""
    deps = _deps(steps)
    out = set(removed)
    for j in range(len(steps)):
        if j not in out and deps[j] & out:
            out.add(j)
    return out


def _needs(steps: list[dict[str, Any]], keep: set[int]) -> set[int]:
    """``keep`` and every earlier step they need (directly or not)."""
    deps = _deps(steps)
    out = set(keep)
    todo = list(keep)
    while todo:
        for i in deps[todo.pop()]:
            if i not in out:
                out.add(i)
                todo.append(i)
    return out


def _slice(steps: list[dict[str, Any]], lo: int, failing: int, wide: bool) -> set[int]:
    """The steps to keep: the first, the failing rule's (lo..failing) and what they need (and, wide,
    every step on the sessions they touch), and the cancels and awaits after them on the sessions kept
    (which end the turns left running, so that no scenario stops in the middle of a turn)."""
    keep = _needs(steps, {0, *range(lo, failing + 1)})
    if wide:
        names = {_save(steps[i]) for i in keep} - {None}
        keep = _needs(steps, keep | {j for j, st in enumerate(steps[:lo]) if _refs(st) & names})
    deps = _deps(steps)
    for j in range(failing + 1, len(steps)):
        (kind, _), = steps[j].items()
        if kind in ("cancel", "await") and deps[j] and deps[j] <= keep:
            keep.add(j)
    return keep


def closing_steps(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The steps that end a scenario cleanly for a correct target: a cancel for each session whose last
    prompt is not followed by an await of its idle, then a short ``settle`` (until the target has been
    quiet for 0.3 s), in which the cancelled turns end and held prompts are answered. A counterexample
    stops where the target under test failed (it died, or rejected a prompt); a correct target runs on,
    and without these it would be cut off in the middle of a turn (PROMPT-012, ERR-004) when the
    scenario ends. (A cancel for a turn that has already ended is ignored by a correct agent.)"""
    open_turns: dict[Any, None] = {}
    unanswered: dict[str, None] = {}
    for st in steps:
        (kind, args), = st.items()
        if not isinstance(args, dict):
            continue
        sid = _session_of(st)
        if kind == "request" and args.get("method") == "session/prompt":
            open_turns[sid] = None
        elif kind == "await" and "idle" in args:
            open_turns.pop(sid, None)
        if kind == "request" and args.get("wait") is False and args.get("save"):
            unanswered[args["save"]] = None
        elif kind == "await" and isinstance(args.get("response"), str):
            unanswered.pop(args["response"].lstrip("$"), None)
    if not open_turns and not unanswered:
        return []
    return [{"cancel": {"session": sid}} for sid in open_turns] + [{"settle": {"seconds": 0.3}}]


class Reducer:
    def __init__(self, fs: FuzzSession, rec: Recorded, deadline: float):
        self.fs = fs
        self.rec = rec
        self.deadline = deadline
        self.longest = 0.0  # seconds, the longest run so far
        self.runs = 0
        self.value_runs = 0  # runs spent by the value pass (5.)
        self.value_stop: str | None = None  # why it stopped short: "deadline" | "cap" (None: it got through)

    def time_left(self) -> bool:
        """Is there time for another run before the deadline? (The longest run so far is what one may
        take: the confirming run at the end must fit too, and a run still going at the deadline is cut.)"""
        return time.perf_counter() + self.longest < self.deadline

    def same_failure(self, out: Outcome) -> bool:
        """Some of the counterexample's rules fail again and no others (a candidate that only adds a
        failure, a turn cut short, is another story), and a target that broke breaks the same way."""
        rec = self.rec
        if not out.failed or out.broken != rec.broken:
            return False
        return not rec.rules or (bool(set(out.rules) & set(rec.rules)) and set(out.rules) <= set(rec.rules))

    def run(self, steps: list[dict[str, Any]], answers: list[tuple[int, str]]) -> Outcome:
        """The steps (closed by ``closing_steps``, as they are written) against a fresh target, with
        the permission answers of the prompts among them."""
        self.runs += 1
        fs = self.fs
        fs.stats.reductions += 1
        steps = steps + closing_steps(steps)
        options = {k: copy.deepcopy(v) for k, v in self.rec.options.items() if k != "permission_answers"}
        if answers:
            options["permission_answers"] = [a for _, a in answers]
        scenario = Scenario("fuzz-reduce", Path("fuzz-reduce.yaml"), [], [], options=options)
        judge = Judge(fs.validator, options, fs.stats, fs.config.strict)
        t0 = time.perf_counter()
        target = fs.new_target(scenario, judge, deadline=self.deadline)
        judge.on_stray = target.interrupt
        problem, how = None, None
        try:
            for i, raw in enumerate(steps):
                (kind, args), = raw.items()
                if kind in ("request", "notify", "raw", "restart", "cancel"):
                    fs.stats.steps += 1
                problem = target.run(Step(kind, dict(args) if isinstance(args, dict) else args, i))
                how = target.problem_kind
                if judge.stray is not None:
                    problem, how = f"step {i + 1} ({kind}): {judge.stray}", "stray"
                if problem is not None:
                    break
        finally:
            target.close()
            self.longest = max(self.longest, time.perf_counter() - t0)
        judge.finish()
        bad = judge.new_failures()
        stderr = [t for t in target.runner.result.stderr if t.strip()]
        return Outcome(problem is not None or bool(bad), (how or "aborted") if problem is not None else None,
                       [f.rule for f in bad],
                       failure_message(problem, judge.stray is not None, bad), bad, list(judge.ctx.frames),
                       stderr[-1][-2000:] if stderr else "")

    def reduce(self) -> Recorded:
        rec = self.rec
        if not rec.steps or not (rec.rules or rec.broken):
            return closed(rec)  # a failure the judge alone cannot tell again
        self.steps = list(rec.steps)
        self.answers = list(zip(rec.answer_steps, rec.options.get("permission_answers", [])))
        # the failing rule's steps lo..failing are kept whole
        self.lo, self.failing = rec.failing_rule()
        self.best: Outcome | None = None
        self.history: list[tuple] = []  # every candidate kept, in order (the last is the shortest)
        # 1. slices
        for wide in (False, True):
            if self._keep(_slice(self.steps, self.lo, self.failing, wide)):
                break
        # 2. whole kinds of steps at once (every await, every set_config_option request, every raw
        # line, ...): most of an example is traffic of kinds the failure does not need
        for group in self._groups():
            if not self.time_left():
                break
            self._keep(set(range(len(self.steps))) - _dependents(self.steps, group))
        # 3. chunks of the other steps, never the first (initialize) nor the failing rule's; a step
        # removed takes along the steps that need it
        n = 2
        while self.time_left():
            free = [i for i in range(1, len(self.steps)) if not self.lo <= i <= self.failing]
            if not free:
                break
            size = max(1, len(free) // n)
            progress = False
            for start in range(0, len(free), size):
                drop = _dependents(self.steps, set(free[start:start + size]))
                if self._keep(set(range(len(self.steps))) - drop):
                    n = max(n - 1, 2)
                    progress = True
                    break
            if not progress:
                if size == 1:
                    break
                n = min(n * 2, len(free))
        # 4. single content blocks of the prompts left
        for i in range(len(self.steps)):
            blocks = _prompt_blocks(self.steps[i])
            j = 0
            while blocks is not None and len(blocks) > 1 and j < len(blocks) and self.time_left():
                step = copy.deepcopy(self.steps[i])
                del _prompt_blocks(step)[j]
                if not self._try(self.steps[:i] + [step] + self.steps[i + 1:], self.answers, self.lo, self.failing):
                    j += 1
                blocks = _prompt_blocks(self.steps[i])
        # 5. simpler values in the params of the requests left
        self._simplify_values()
        # 6. the scenario kept must fail again (a failure that depends on timing may have passed a
        # candidate once by luck): otherwise the previous one that failed is tried, and so on
        for _ in range(3):  # at most three tries; then the example as found
            if not self.history or not self.time_left():
                break  # (no time for another run: the candidate kept last was seen to fail once, it stands)
            if self.same_failure(self.run(self.history[-1][0], self.history[-1][1])):
                break
            self.history.pop()
        else:
            self.history.clear()
        if not self.history:
            return closed(rec)
        self.steps, self.answers, self.lo, self.failing, out = self.history[-1]
        options = {k: v for k, v in rec.options.items() if k != "permission_answers"}
        if self.answers:
            options["permission_answers"] = [a for _, a in self.answers]
        return Recorded(list(self.steps) + closing_steps(self.steps), options, out.message,
                        out.rules,
                        [f.text(300) for f in out.transcript[-12:]], findings=out.findings,
                        transcript=out.transcript, stderr=out.stderr, broken=out.broken,
                        answer_steps=[i for i, _ in self.answers], fail_index=self.failing + 1,
                        fail_start=self.lo)

    # -- 5. values ------------------------------------------------------------------------------
    def _simplify_values(self) -> None:
        """Simpler values in the params of the request steps, each candidate rerun (see the module
        docstring, 5.). ``value_runs`` counts the runs spent."""
        start = self.runs
        self.value_runs, self.value_stop = 0, None
        self._values_tried: set[str] = set()

        def budget() -> bool:
            self.value_stop = None if self.time_left() else "deadline"
            if self.value_stop is None and self.runs - start >= VALUE_RERUNS:
                self.value_stop = "cap"
            return self.value_stop is None

        try:
            self._values(budget)
        finally:
            self.value_runs = self.runs - start
            if _DEBUG:
                print(f"[reduce] values: {self.value_runs} runs" + (f" (stopped: {self.value_stop})"
                                                                    if self.value_stop else ""), file=sys.stderr)

    def _values(self, budget) -> None:
        keep_texts = frozenset(v for v in (getattr(getattr(self.fs, "config", None), "prompts", None) or {}).values()
                               if isinstance(v, str))
        keep_keys = _KEEP_KEYS | _discriminators(getattr(self.fs, "validator", None))
        edits = {i: _value_edits(_params(st), (), keep_texts, keep_keys) for i, st in enumerate(self.steps)}
        edits = {i: e for i, e in edits.items() if e}
        # every step's params at once: most values of a counterexample are not what it fails for
        if not edits or budget() and len(edits) > 1 and self._try_values(edits) is not False:
            return
        # each step's params at once (the largest first), then each kind of its edits at once, then
        # halves of a kind down to single edits
        for i in sorted(edits, key=lambda i: -len(repr(_params(self.steps[i])))):
            if not budget():
                break
            edits_i = _value_edits(_params(self.steps[i]), (), keep_texts, keep_keys)
            if not edits_i or self._try_values({i: edits_i}) is not False:
                continue
            # by kind (the optional keys, the strings, the numbers, the lists): a failure needs few
            # values, of one kind or two
            refused: list[tuple[tuple, str]] = []
            for op in _EDIT_KINDS:
                remaining = [e for e in edits_i if e[1] == op]
                size = len(remaining)
                while size >= 1 and remaining and budget():
                    j = 0
                    while j < len(remaining) and budget():
                        if self._try_values({i: remaining[j:j + size]}) is False:
                            j += size
                        else:
                            del remaining[j:j + size]
                    size = size // 2
                refused += remaining
            # the edits refused alone: a finer value (a longer prefix, 1 for 0), each its own run
            for edit in refused:
                rung = 1
                while budget():
                    tried = self._try_values({i: [edit]}, rung)
                    if tried is None or tried:
                        break
                    rung += 1

    def _try_values(self, edits: dict[int, list[tuple[tuple, str]]], rung: int = 0) -> bool | None:
        """Try the steps with ``edits`` (step index -> edits of its params) applied, each edit at the
        first value of its ladder from ``rung`` on that keeps the params as valid as they were. None:
        nothing changed (no run)."""
        steps = list(self.steps)
        changed = False
        for i, es in edits.items():
            (kind, args), = steps[i].items()
            params = args["params"]
            new = _apply_edits(params, es, _validity(getattr(self.fs, "validator", None), args.get("method"), params),
                               rung)
            if _shape(new) != _shape(params):
                steps[i] = {kind: {**args, "params": new}}
                changed = True
        if not changed:
            return None
        key = json.dumps(steps, sort_keys=True, default=repr)
        if key in self._values_tried:  # (a finer rung may give the value a coarser one gave)
            return False
        self._values_tried.add(key)
        return self._try(steps, self.answers, self.lo, self.failing)

    def _groups(self) -> list[set[int]]:
        """The removable steps grouped by kind (a request by its method), the largest group first."""
        groups: dict[str, set[int]] = {}
        for i, st in enumerate(self.steps):
            if i == 0 or self.lo <= i <= self.failing:
                continue
            (kind, args), = st.items()
            key = f"{kind} {args.get('method')}" if kind == "request" and isinstance(args, dict) else kind
            groups.setdefault(key, set()).add(i)
        return sorted(groups.values(), key=len, reverse=True)

    def _keep(self, keep: set[int]) -> bool:
        """Try the scenario of only the steps ``keep``."""
        if len(keep) >= len(self.steps):
            return False
        if not set(range(self.lo, self.failing + 1)) <= keep:
            return False
        order = sorted(keep)
        new_index = {old: new for new, old in enumerate(order)}
        return self._try([self.steps[i] for i in order], [(new_index[i], a) for i, a in self.answers
                                                          if i in new_index],
                         new_index[self.lo], new_index[self.failing])

    def _try(self, steps: list[dict[str, Any]], answers: list[tuple[int, str]], lo: int, failing: int) -> bool:
        if not self.time_left() or not _idles_owed(steps):
            return False
        out = self.run(steps, answers)
        if _DEBUG:
            print(f"[reduce] {len(steps)} steps (rule {lo}..{failing}): {'same' if self.same_failure(out) else 'no'} "
                  f"- {out.broken} {out.rules[:4]} {out.message[:120]}", file=sys.stderr)
        if not self.same_failure(out):
            return False
        self.steps, self.answers, self.lo, self.failing, self.best = steps, answers, lo, failing, out
        self.history.append((steps, answers, lo, failing, out))
        return True


def _params(step: dict[str, Any]) -> Any:
    """The generated params of a request step (None for other steps and for params that are no
    object or array)."""
    args = step.get("request")
    params = args.get("params") if isinstance(args, dict) else None
    return params if isinstance(params, (dict, list)) else None


def _frozen(value: Any, keep_texts: frozenset) -> bool:
    """A value the value pass leaves whole: it holds a ``$variable`` or a configured steering prompt."""
    if isinstance(value, str):
        return bool(_REF.search(value)) or value in keep_texts
    if isinstance(value, list):
        return any(_frozen(v, keep_texts) for v in value)
    if isinstance(value, dict):
        return any(_frozen(v, keep_texts) for v in value.values())
    return False


def _ladder(value: Any) -> list[Any]:
    """The simpler values to try for ``value``, simplest first (empty when there is none)."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, str):  # an absolute path stays one (an agent rejects a relative cwd: a wasted run)
        simplest = ("/",) if value.startswith("/") else ("", value[:1])
        return list(dict.fromkeys(p for p in (*simplest, value[:8]) if len(p) < len(value)))
    if isinstance(value, int):
        return [] if value == 0 else [0] if abs(value) == 1 else [0, 1 if value > 0 else -1]
    if isinstance(value, float):
        return [0.0] if value != 0 else []
    if isinstance(value, list):
        return [value[:1]] if len(value) > 1 else []
    return []


_EDIT_KINDS = ("drop", "str", "num", "list")


def _value_edits(value: Any, path: tuple, keep_texts: frozenset, keep_keys: frozenset) -> list[tuple[tuple, str]]:
    """The edits of ``value`` the value pass tries, parents before their children: (path, "drop") for
    a key of an object, (path, "str" | "num" | "list") for a value made simpler (see ``_ladder``)."""
    if value is None or _frozen(value, keep_texts) and not isinstance(value, (dict, list)):
        return []
    out: list[tuple[tuple, str]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k in keep_keys:
                continue
            if not _frozen(v, keep_texts):
                out.append((path + (k,), "drop"))
            out += _value_edits(v, path + (k,), keep_texts, keep_keys)
        return out
    if isinstance(value, list):
        if len(value) > 1 and not _frozen(value[1:], keep_texts):
            out.append((path, "list"))
        for j, v in enumerate(value):
            out += _value_edits(v, path + (j,), keep_texts, keep_keys)
        return out
    return [(path, "str" if isinstance(value, str) else "num")] if _ladder(value) else []


_MISSING = object()


def _get(root: Any, path: tuple) -> Any:
    for p in path:
        if isinstance(root, dict) and isinstance(p, str) and p in root:
            root = root[p]
        elif isinstance(root, list) and isinstance(p, int) and p < len(root):
            root = root[p]
        else:
            return _MISSING
    return root


def _with(root: Any, path: tuple, value: Any) -> Any:
    """A copy of ``root`` with the value at ``path`` replaced (``_DROP``: its key removed)."""
    if not path:
        return value
    out = copy.copy(root)
    head, rest = path[0], path[1:]
    if not rest and value is _DROP:
        del out[head]
    else:
        out[head] = _with(root[head], rest, value)
    return out


def _apply_edits(params: Any, edits: list[tuple[tuple, str]], ok, rung: int = 0) -> Any:
    """``params`` with the edits applied in order, each at the first value of its ladder from ``rung``
    on for which ``ok`` holds (an edit whose path is gone, by an edit before it, is skipped)."""
    for path, op in edits:
        cur = _get(params, path)
        if cur is _MISSING:
            continue
        for value in ([_DROP] if op == "drop" else _ladder(cur))[rung:]:
            candidate = _with(params, path, value)
            if ok(candidate):
                params = candidate
                break
    return params


def _validity(validator: Any, method: Any, params: Any):
    """A predicate of candidate params: as valid as ``params`` against the method's params definition
    (anything goes when the schema does not know the method or cannot tell)."""
    m = validator.schema.methods.get(method) if validator is not None and isinstance(method, str) else None
    if m is None or not m.params:
        return lambda _: True

    def valid(p: Any) -> bool | None:
        try:
            return bool(validator.is_valid(m.params, p))
        except Exception:  # a value the validator cannot take (an integer beyond 64 bits ...)
            return None

    before = valid(params)
    if before is None:
        return lambda _: True
    return lambda p: valid(p) is before


def _discriminators(validator: Any) -> frozenset:
    """The discriminator keys of the schema's unions (``x-discriminator``)."""
    defs = getattr(getattr(validator, "schema", None), "defs", None) or {}
    return frozenset(d["x-discriminator"] for d in defs.values()
                     if isinstance(d, dict) and isinstance(d.get("x-discriminator"), str))


def _shape(value: Any) -> Any:
    """``value`` with the types of its scalars (so that 0 and 0.0, 1 and True differ)."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return (type(value).__name__, value)


def _prompt_blocks(step: dict[str, Any]) -> list | None:
    """The content blocks of a session/prompt request step (the list itself), else None."""
    args = step.get("request")
    if not isinstance(args, dict) or args.get("method") != "session/prompt":
        return None
    params = args.get("params")
    blocks = params.get("prompt") if isinstance(params, dict) else None
    return blocks if isinstance(blocks, list) else None


def closed(rec: Recorded) -> Recorded:
    """``rec`` with its closing steps (see ``closing_steps``)."""
    return dataclasses.replace(rec, steps=list(rec.steps) + closing_steps(rec.steps))
