"""Running a candidate of the shrinker (``reduce.py``) against a fresh target, through the same runner,
judge and live target as the fuzzer, and telling whether it failed the same way; the deadline and the
count of runs are kept here."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..rules.findings import Finding
from ..scenarios.model import Scenario, Step
from .judge import Judge, failure_message
from .live import FuzzSession
from .recorded import Recorded
from .reduce_steps import closing_steps


@dataclass
class Outcome:
    failed: bool
    broken: str | None  # died | timeout | stray | ... (as Recorded.broken)
    rules: list[str]
    message: str
    findings: list[Finding] = field(default_factory=list)
    transcript: list[Any] = field(default_factory=list)
    stderr: str = ""


class CandidateRuns:
    """The runs of one reduction: each candidate against a fresh target, within the deadline."""

    def __init__(self, fs: FuzzSession, rec: Recorded, deadline: float):
        self.fs = fs
        self.rec = rec
        self.deadline = deadline
        self.longest = 0.0  # seconds, the longest run so far
        self.runs = 0

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
        judge = Judge(fs.validator, options, fs.stats, fs.config.thresholds)
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
