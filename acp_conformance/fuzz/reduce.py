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
import sys
from typing import Any

from .live import FuzzSession
from .recorded import Recorded
from .reduce_run import CandidateRuns, Outcome
from .reduce_steps import _dependents, _idles_owed, _prompt_blocks, _slice, closing_steps
from .reduce_values import (_EDIT_KINDS, _KEEP_KEYS, _apply_edits, _discriminators, _ladder, _params, _shape,
                            _validity, _value_edits)

__all__ = ["Outcome", "Reducer", "VALUE_RERUNS", "closed", "closing_steps",
           "_apply_edits", "_ladder", "_validity", "_value_edits"]  # (the tests use the value edits)

_DEBUG = bool(os.environ.get("ACP_FUZZ_DEBUG"))
VALUE_RERUNS = 40  # runs the value pass (5.) may spend, within the deadline


class Reducer(CandidateRuns):
    def __init__(self, fs: FuzzSession, rec: Recorded, deadline: float):
        super().__init__(fs, rec, deadline)
        self.value_runs = 0  # runs spent by the value pass (5.)
        self.value_stop: str | None = None  # why it stopped short: "deadline" | "cap" (None: it got through)

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
        self._slices()
        self._whole_kinds()
        self._chunks()
        self._content_blocks()
        self._simplify_values()
        if not self._confirmed():
            return closed(rec)
        return self._recorded()

    # -- 1. to 4. steps and blocks --------------------------------------------------------------
    def _slices(self) -> None:
        """1. the slice around the failing rule, then the wide one."""
        for wide in (False, True):
            if self._keep(_slice(self.steps, self.lo, self.failing, wide)):
                break

    def _whole_kinds(self) -> None:
        """2. whole kinds of steps at once (every await, every set_config_option request, every raw
        line, ...): most of an example is traffic of kinds the failure does not need."""
        for group in self._groups():
            if not self.time_left():
                break
            self._keep(set(range(len(self.steps))) - _dependents(self.steps, group))

    def _chunks(self) -> None:
        """3. chunks of the other steps, never the first (initialize) nor the failing rule's; a step
        removed takes along the steps that need it."""
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

    def _content_blocks(self) -> None:
        """4. single content blocks of the prompts left."""
        for i in range(len(self.steps)):
            blocks = _prompt_blocks(self.steps[i])
            j = 0
            while blocks is not None and len(blocks) > 1 and j < len(blocks) and self.time_left():
                step = copy.deepcopy(self.steps[i])
                del _prompt_blocks(step)[j]
                if not self._try(self.steps[:i] + [step] + self.steps[i + 1:], self.answers, self.lo, self.failing):
                    j += 1
                blocks = _prompt_blocks(self.steps[i])

    # -- 6. the last run --------------------------------------------------------------------------
    def _confirmed(self) -> bool:
        """6. the scenario kept must fail again (a failure that depends on timing may have passed a
        candidate once by luck): otherwise the previous one that failed is tried, and so on. False:
        none is left (the example as found stands)."""
        for _ in range(3):  # at most three tries; then the example as found
            if not self.history or not self.time_left():
                break  # (no time for another run: the candidate kept last was seen to fail once, it stands)
            if self.same_failure(self.run(self.history[-1][0], self.history[-1][1])):
                break
            self.history.pop()
        else:
            self.history.clear()
        return bool(self.history)

    def _recorded(self) -> Recorded:
        """The candidate kept last, as it is written (closed by ``closing_steps``)."""
        rec = self.rec
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


def closed(rec: Recorded) -> Recorded:
    """``rec`` with its closing steps (see ``closing_steps``)."""
    return dataclasses.replace(rec, steps=list(rec.steps) + closing_steps(rec.steps))
