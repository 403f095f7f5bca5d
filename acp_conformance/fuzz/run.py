"""Running the fuzzer and replaying what it found (shared by the console script and pytest).

``fuzz()`` runs the state machine under hypothesis with a seed, an example count and a wall-clock
budget; the first failing example is shrunk as a scenario (``reduce.py``, with half the budget more)
and written as a scenario file next to ``fuzz-report.json``. ``replay()`` loads such a file with the
ordinary scenario loader and runs it with the ordinary runner and every agent monitor.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..rules.catalog import load_catalog
from ..rules.findings import Finding
from ..protocol.schema import cached_schema
from ..report.transcripts import write_transcript
from ..rules.first_contact import FirstContact, for_fuzzer, judge_agent
from ..run_record import REPLAY, RunRecord, TestRecord, judge as judge_run
from ..thresholds import REPLAY_TEST_TIMEOUT
from .reduce import Reducer
from .config import BudgetSpent, FuzzConfig, StepStats
from .judge import Judge
from .live import FuzzSession
from .stateful import machine_for
from .strategies import without_local_constants

SCENARIO_NAME = "fuzz-counterexample"


@dataclass
class FuzzResult:
    seed: int
    examples: int
    steps: int
    seconds: float
    failure: str | None = None
    rules: list[str] = field(default_factory=list)
    scenario_path: Path | None = None
    report_path: Path | None = None
    stats: StepStats | None = None
    budget_spent: bool = False
    step_log: list[dict[str, Any]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # the blocking failures of the counterexample
    transcript: list[Any] = field(default_factory=list)  # its frames (wire.transcript.Frame)
    transcript_path: Path | None = None
    stderr: str = ""  # what the target wrote on stderr in the counterexample (its tail)
    # the target is no ACP v2 agent at all (it echoed, printed non-JSON, another version...): the run's one sentence
    first_contact: FirstContact | None = None

    @property
    def digest(self) -> str:
        """Every step of every example, hashed: equal for equal runs."""
        return self.stats.digest if self.stats is not None else ""

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds else 0.0


def fuzz(config: FuzzConfig, *, seed: int = 0, max_examples: int = 50, budget: float | None = None,
         step_count: int = 30, report_dir: Path | str | None = None) -> FuzzResult:
    from hypothesis import HealthCheck, Phase, Verbosity, settings
    from hypothesis import seed as hseed
    from hypothesis.stateful import run_state_machine_as_test

    t0 = time.perf_counter()
    deadline = t0 + budget if budget else None
    fs = FuzzSession(config, deadline)  # (it starts the first example's process at once)
    machine = machine_for(fs)

    def factory():
        return machine()

    error: BaseException | None = None
    spent = False
    done = chunk = 0
    try:
        # hypothesis runs in rounds of at most CHUNK examples, each with a seed derived from ``seed``:
        # with max_examples of 10 or more hypothesis first spends up to 50 examples on small ones
        # (a minimal example, then one capped at five times its size, in turn), and against an agent
        # whose start costs as much as dozens of steps those examples were most of a short run
        while done < max_examples and not fs.budget_stopped:
            n = min(CHUNK, max_examples - done)
            st_settings = settings(max_examples=n, stateful_step_count=step_count, database=None,
                                   deadline=None, derandomize=False, print_blob=False,
                                   # hypothesis finds; reduce.py shrinks (see there why not hypothesis')
                                   phases=[Phase.explicit, Phase.reuse, Phase.generate],
                                   suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
                                   verbosity=Verbosity.quiet)
            with without_local_constants():
                run_state_machine_as_test(hseed(_round_seed(seed, chunk))(factory), settings=st_settings)
            done += n
            chunk += 1
    except BudgetSpent:
        spent = True  # the run ends with what it has (a failure found, possibly not fully shrunk)
    except Exception as e:  # FuzzFailure, hypothesis' Flaky*, or an error of the machine
        # hypothesis may report the budget's stop in the middle of a replayed example as an
        # inconsistency of the data (the example drew less than the last time): that is the stop
        if fs.budget_stopped:
            spent = True
        else:
            error = e  # a failure inside the machine that is not ours is still a finding
    rec = fs.best_failure
    fs.drop_spare()  # no next example: the shrinker's reruns start their own processes
    try:
        if rec is not None:  # shrinking gets half the budget more (a minute without a budget)
            rec = Reducer(fs, rec, time.perf_counter() + (budget / 2 if budget else 60.0)).reduce()
    finally:
        fs.close()
    seconds = time.perf_counter() - t0
    fs.stats.t_total = seconds
    result = FuzzResult(seed, fs.stats.examples, fs.stats.steps, seconds, stats=fs.stats, budget_spent=spent)
    if error is not None and rec is None:
        result.failure = _fuzzer_error(error)
    if rec is not None:
        result.failure, result.rules, result.step_log = rec.failure, list(dict.fromkeys(rec.rules)), rec.steps
        result.findings, result.transcript, result.stderr = rec.findings, rec.transcript, rec.stderr
        result.first_contact = for_fuzzer(judge_agent(rec.transcript, config.startup_timeout))
        if result.first_contact is not None:  # no rule can be judged on it: say what it is, as the suite does
            result.failure, result.rules = result.first_contact.sentence, []
    if report_dir is not None:
        out = Path(report_dir)
        out.mkdir(parents=True, exist_ok=True)
        if rec is not None:
            result.scenario_path = write_scenario(out / "fuzz-counterexample.yaml", rec, config, seed)
            # the frames of the shrunk run, as they were (the replayable evidence beside the scenario)
            result.transcript_path = write_transcript(out, SCENARIO_NAME, rec.transcript, redact=False)
        result.report_path = out / "fuzz-report.json"
        result.report_path.write_text(json.dumps(report_json(result, config), indent=1), encoding="utf-8")
    return result


CHUNK = 9  # examples per round of hypothesis (below 10 it skips its phase of small examples)


def _round_seed(seed: int, chunk: int) -> int:
    """The seed of round ``chunk`` of a run with ``seed`` (round 0 uses the seed itself)."""
    return seed if chunk == 0 else (seed * 0x9E3779B97F4A7C15 + chunk) % 2 ** 64


def _fuzzer_error(error: BaseException) -> str:
    """One sentence for an error of the fuzzing itself (not a finding about the target)."""
    from hypothesis.errors import FlakyStrategyDefinition
    if isinstance(error, FlakyStrategyDefinition):
        return ("the target answered the same steps differently from one run to the next, so the fuzzer could "
                "not replay an example (is it deterministic?); no failure was seen")
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"the fuzzer failed: {type(error).__name__}" + (f": {first[:300]}" if first else "")


def write_scenario(path: Path, rec, config: FuzzConfig, seed: int) -> Path:
    catalog = load_catalog()
    doc = {"scenarios": [{
        "name": SCENARIO_NAME,
        "description": f"Shrunk by the fuzzer (seed {seed}) against {' '.join(config.argv)}: {rec.failure}"[:2000],
        "rules": [r for r in dict.fromkeys(rec.rules) if r in catalog],
        "options": rec.options,
        "steps": rec.steps,
    }]}
    path.write_text(yaml.dump(doc, Dumper=_NoAliases, sort_keys=False, allow_unicode=False, width=100000),
                    encoding="utf-8")
    return path


class _NoAliases(yaml.SafeDumper):
    """Every value written out in full (a generated value used twice is not an &anchor/*alias)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def report_json(result: FuzzResult, config: FuzzConfig) -> dict[str, Any]:
    s = result.stats
    return {"target": config.argv, "seed": result.seed, "examples": result.examples, "steps": result.steps,
            "seconds": round(result.seconds, 3), "steps_per_second": round(result.steps_per_second, 1),
            "time_split": {k: round(v, 3) for k, v in time_split(result).items()},
            "budget_spent": result.budget_spent, "digest": result.digest,
            "found_after_seconds": round(s.found_after, 3) if s is not None and s.found_after is not None else None,
            "found_in_steps": s.found_steps if s is not None and s.found_after is not None else None,
            "shrink_reruns": s.reductions if s is not None else 0, "shrunk_steps": len(result.step_log),
            "target_processes": s.processes if s is not None else 0,
            "spares_died": s.spares_died if s is not None else 0,
            "failure": result.failure, "rules": result.rules,
            "scenario": str(result.scenario_path) if result.scenario_path else None,
            "transcript": str(result.transcript_path) if result.transcript_path else None}


def time_split(result: FuzzResult) -> dict[str, float]:
    """Where the run's wall clock went, as fractions: generation (hypothesis drawing steps and the
    machine's bookkeeping), validation and monitors (every frame), the target (waiting for its
    answers, less the monitors that ran meanwhile), and process start/stop (spawning, the first answer
    of each new process, shutting down)."""
    s = result.stats
    if s is None or not result.seconds:
        return {}
    total = result.seconds
    target = max(s.t_target - s.t_first - s.t_monitors, 0.0)
    start = s.t_start + s.t_first
    return {"generation": max(total - s.t_target - s.t_start - s.t_finish, 0.0) / total,
            "validation_and_monitors": s.t_monitors / total,
            "target": target / total, "process_start_stop": start / total}


@dataclass
class ReplayResult:
    failures: list[str]
    error: str | None
    frames: int
    # one entry per scenario of the file: (name, "passed" | "failed" | "skipped", the rules failed or the reason)
    scenarios: list[tuple[str, str, str]] = field(default_factory=list)
    report_path: Path | None = None
    first_contact: FirstContact | None = None  # the target is no ACP v2 agent: nothing was judged

    @property
    def failed(self) -> bool:
        return bool(self.failures or self.error)


def replay(path: Path | str, config: FuzzConfig, report_dir: Path | None = None) -> ReplayResult:
    """Rerun a scenario file (a fuzz counterexample or any scenario) with the runner and all monitors;
    with ``report_dir``, write the reports a suite run writes (report.json, report.html, badge.json and
    the transcripts) for the scenarios of the file."""
    import anyio

    from ..scenarios.model import load_file
    from ..scenarios.runner import RunSettings, Runner, TargetSpec
    from .strategies import strategies_for

    scenarios = load_file(path, set(load_catalog()))
    validator = strategies_for(config.schema_path).validator
    failures: list[str] = []
    error = None
    frames = 0
    outcomes: list[tuple[str, str, str]] = []
    record = RunRecord(REPLAY, "agent", list(config.argv), cached_schema(config.schema_path), config.thresholds)
    for scn in scenarios:
        judge = Judge(validator, scn.options, StepStats(), config.thresholds)
        settings = RunSettings(timeout=config.timeout, startup_timeout=config.startup_timeout,
                               test_timeout=REPLAY_TEST_TIMEOUT, prompts=config.prompts, validate_sent=None)
        tmp = tempfile.mkdtemp(prefix="acp-replay-")
        try:
            result = anyio.run(Runner(scn, TargetSpec(config.argv, config.env), settings, Path(tmp),
                                      listeners=[judge.feed]).run)
            judge.finish()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        frames += len(judge.ctx.frames)
        contact = for_fuzzer(judge_agent(result.transcript.frames, config.startup_timeout))
        if contact is not None:  # not an ACP v2 agent: the suite's one sentence, and the file stops here
            outcomes.append((scn.name, "failed", contact.sentence))
            return ReplayResult([contact.sentence], None, frames, outcomes, None, contact)
        blocking = judge.blocking(judge.ctx.findings)
        for f in blocking:
            failures.append(f"{f.rule} failed: {f.message}")
        scn_error = result.error or result.harness_error
        error = error or scn_error
        if blocking or scn_error:
            rules = ", ".join(dict.fromkeys(f.rule for f in blocking))
            outcomes.append((scn.name, "failed", rules or f"could not be completed: {scn_error}"))
        elif result.skipped:
            outcomes.append((scn.name, "skipped", result.skipped))
        else:
            outcomes.append((scn.name, "passed", ""))
        if report_dir is not None:
            record.add(_replayed(report_dir, Path(path), scn, result, judge.ctx.findings, outcomes[-1]))
            record.agent_init = record.agent_init or result.agent_init
    if report_dir is None:
        return ReplayResult(failures, error, frames, outcomes)
    from ..report.write import write_reports
    write_reports(report_dir, judge_run(record), record)
    return ReplayResult(failures, error, frames, outcomes, report_dir / "report.json")


def _replayed(report_dir: Path, file: Path, scn, result, findings: list[Finding],
              outcome: tuple[str, str, str]) -> TestRecord:
    """One replayed scenario as a test of the run's record, its transcript written (secrets masked)."""
    from ..report.redact import redact_outcome
    test = f"{file.name}::{scn.name}"
    redact_outcome(findings, result, result.transcript.frames)
    for f in findings:
        f.test = test
    path = write_transcript(report_dir / "transcripts", test, result.transcript.frames, redact=True)
    return TestRecord(test, list(scn.rules), findings, transcript=str(path),
                      skipped=outcome[2] if outcome[1] == "skipped" else None,
                      error=result.harness_error or result.error or None)
