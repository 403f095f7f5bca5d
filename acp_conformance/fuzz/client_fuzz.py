"""Fuzzing a client: the suite plays the Agent with generated answers, updates and requests.

A client drives the conversation, so an example is not a sequence of steps the fuzzer sends but a
script of how the agent reacts: a client scenario (``client_script.py`` draws it with hypothesis,
whole, before the client starts). For each example the client is started (through the relay when
its command holds ``{agent}``), the ordinary ``ClientRunner`` plays the script, every frame is
judged by the client monitors, and the client and relay are stopped (``client_run.py``). A
blocking finding, a client that dies (a failure status or a signal) or leaves in the middle of a
turn, or a run that cannot finish fails the example; a client that hangs fails CLIENT-017 (the
request it never answers). Hypothesis shrinks the script, and the smallest failing one is written
as a client scenario file that ``replay_client`` reruns with the same runner and judge.

Seeded: the same seed against the same deterministic client gives the same run (the scripts do
not depend on the client's timing). ``budget`` bounds the wall clock as in ``run.fuzz`` (examples
that would start after it do not, shrinking gets half of it more); ``ClientFuzzConfig.shrink_runs``
bounds shrinking by client runs instead, which does not depend on the machine's load.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import sys
import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from ..rules.catalog import load_catalog
from ..rules.monitors._client import UPDATE_KINDS
from ..scenarios.client_model import load_client_file
from ..scenarios.model import Scenario
from ..scenarios.runner import RunResult
from ..thresholds import FUZZ, Thresholds
from ..wire.socket_transport import uses_placeholder
from ..wire.transcript import RECEIVED, SENT
from .client_run import ClientJudge, harness_error, run_client_scenario, run_failures
from .client_script import AgentMoves, as_scenario, count_actions, plan_document, script_size, steps_of
from .run import SCENARIO_NAME, FuzzResult, ReplayResult, report_json
from .config import FuzzFailure, StepStats
from .strategies import strategies_for, without_local_constants

DEFAULT_CLIENT_ARGV = [sys.executable, "-m", "acp_conformance.reference.client", "--", "{agent}"]
# what the report counts by name (other methods and update variants are grouped)
_KNOWN_METHODS = ("initialize", "session/update", "session/request_permission", "elicitation/create",
                  "elicitation/complete", "$/cancel_request")
_FUZZ_DIR = "fuzz-client"
_DEBUG = bool(os.environ.get("ACP_FUZZ_DEBUG"))


# -- configuration -------------------------------------------------------------------------------

class ClientConfigError(ValueError):
    """The client command line cannot be used (empty, not a command, not parseable)."""


@dataclass
class ClientFuzzConfig:
    argv: list[str]  # the client's command line; ``{agent}`` in it becomes the path of the relay's launcher
    env: dict[str, str] = field(default_factory=dict)  # added to the client's environment
    cwd: str | None = None  # the client's working directory (default: a fresh temporary one per example)
    timeout: float = 5.0  # seconds to wait for each answer of the client
    startup_timeout: float = 10.0  # seconds for the client to start its agent and send its first message
    quiet: float = 1.0  # seconds of silence after which an example ends (a client that stays open)
    test_timeout: float = 60.0  # one example in all
    shutdown_grace: float = 2.0
    turns: int = 1  # prompts scripted per example; later prompts get the default turn
    shrink_runs: int | None = None  # client runs that shrinking may spend (None: until hypothesis or the budget stops)
    schema_path: str | None = None
    strict: bool = False  # SHOULD-level warnings fail too
    revision: str | None = None  # --acp-revision: whose rules fail an example (None: every rule)

    @property
    def via_relay(self) -> bool:
        return uses_placeholder(self.argv)

    @property
    def thresholds(self) -> Thresholds:
        """The run's thresholds as the judge reads them (the fuzzer's defaults, this config's values in place)."""
        return replace(FUZZ, timeout=self.timeout, startup_timeout=self.startup_timeout, test_timeout=self.test_timeout,
                       strict=self.strict, revision=self.revision)


def client_config(argv: list[str] | str | None = None, *, env: dict[str, str] | None = None,
                  cwd: str | None = None, timeout: float = 5.0, startup_timeout: float = 10.0,
                  quiet: float = 1.0, turns: int = 1, shrink_runs: int | None = None,
                  schema_path: str | None = None, strict: bool = False,
                  revision: str | None = None) -> ClientFuzzConfig:
    """The config for a client command line (a list, or one string split like a shell would).

    With ``{agent}`` in it, the client launches the relay as its agent; without, it is spoken to
    on its own stdio (as ``--client-cmd`` does). No command: the bundled reference client.
    Raises ``ClientConfigError`` for an unusable command (the console script's usage error)."""
    if argv is None or argv == [] or argv == "":
        argv = list(DEFAULT_CLIENT_ARGV)
    elif isinstance(argv, str):
        try:
            argv = shlex.split(argv)
        except ValueError as e:
            raise ClientConfigError(f"the client command cannot be parsed as a command line: {e}") from None
    argv = [str(a) for a in argv]
    if not argv:
        raise ClientConfigError("the client command is empty: give the command that starts your client")
    if shutil.which(argv[0]) is None and not Path(argv[0]).exists():
        raise ClientConfigError(f"{argv[0]!r} is not a command on PATH nor a file")
    if cwd is not None and not Path(cwd).is_dir():
        raise ClientConfigError(f"{cwd!r} is not a directory")
    for name, v in (("timeout", timeout), ("startup_timeout", startup_timeout), ("quiet", quiet)):
        if not v > 0:
            raise ClientConfigError(f"{name} must be a positive number of seconds (got {v!r})")
    if turns < 1:
        raise ClientConfigError(f"turns must be at least 1 (got {turns!r})")
    if shrink_runs is not None and shrink_runs < 0:
        raise ClientConfigError(f"shrink_runs must not be negative (got {shrink_runs!r})")
    return ClientFuzzConfig(argv, dict(env or {}), cwd, float(timeout), float(startup_timeout), float(quiet),
                            turns=int(turns), shrink_runs=shrink_runs, schema_path=schema_path, strict=strict,
                            revision=revision)


# -- the fuzz run ----------------------------------------------------------------------------------

@dataclass
class ClientRecord:
    doc: dict[str, Any]  # the scenario that failed, as written
    failure: str
    failures: list[str]
    rules: list[str]
    frames: list[str] = field(default_factory=list)  # the last frames, for the report


@dataclass
class ClientFuzzResult(FuzzResult):
    """``FuzzResult`` plus what only the client fuzzer knows."""

    scripts_sha256: str = ""  # of every example's script in order: the same seed gives the same run
    shrunk_from_actions: int | None = None  # actions of the first failing script, before shrinking
    found_after: tuple[int, float] | None = None  # (examples run, seconds) when the first failure was seen
    actions: int | None = None  # actions of the shrunk script
    failures: list[str] = field(default_factory=list)  # every failure of the shrunk example


class ClientFuzzFailure(FuzzFailure):
    def __init__(self, record: ClientRecord):
        super().__init__(record.failure)
        self.record = record


class BudgetSpent(BaseException):
    """The wall-clock budget (or the shrink runs) is spent. A BaseException, so that hypothesis does
    not take it for a failure of the example: it ends the run, which keeps the failures found."""


class ClientUnusable(Exception):
    """The client never sends a message, whatever the agent's script: nothing to fuzz."""


class ClientFuzzSession:
    """What outlives the examples of one run: config, strategies, stats, failures, the budget."""

    def __init__(self, config: ClientFuzzConfig, step_count: int):
        self.config = config
        self.gen = strategies_for(config.schema_path)
        self.validator = self.gen.validator
        self.catalog = set(load_catalog())
        self.moves = AgentMoves(self.gen, step_count, config.turns)
        self.plans = self.moves.plan()
        self.stats = StepStats()
        self.t_generate = 0.0
        self.digest = hashlib.sha256()  # of every example's script, in order: the same seed, the same run
        self.outcomes: dict[str, ClientRecord | None] = {}  # script digest -> its failure (None: passed)
        self.cached = 0  # examples whose script had already run
        self.shrink_runs = 0  # client runs since the first failure
        self.last_failure: ClientRecord | None = None
        self.best: ClientRecord | None = None  # the smallest failing script run (fewest actions, then bytes)
        self.unusable: str | None = None  # why the client cannot be fuzzed at all (it never starts talking)
        self.first_failure_size: int | None = None  # actions in the first failing script (before shrinking)
        self.first_failure_at: tuple[int, float] | None = None  # (examples run, perf_counter) when found
        self.deadline: float | None = None
        self.shrink_allowance = 0.0
        self._path = Path(f"{_FUZZ_DIR}/{SCENARIO_NAME}.yaml")

    def over_budget(self) -> bool:
        if self.deadline is None:
            return False
        extra = self.shrink_allowance if self.last_failure is not None else 0.0
        return time.perf_counter() > self.deadline + extra

    def example(self, data) -> None:
        t = time.perf_counter()
        plan = data.draw(self.plans, label="script")
        if self.over_budget():
            # past the budget no example runs, and hypothesis is stopped (after the draw: an example
            # that drew nothing would contradict the ones that drew, which hypothesis calls flaky)
            raise BudgetSpent()
        doc = plan_document(plan, env=self.config.env, quiet=self.config.quiet)
        text = json.dumps(doc, sort_keys=True).encode()
        self.digest.update(text)
        scn = as_scenario(doc, self.catalog, self._path)
        self.t_generate += time.perf_counter() - t
        if self.unusable is not None:
            raise ClientUnusable(self.unusable)  # no example can run: hypothesis ends at once
        key = hashlib.sha256(text).hexdigest()
        if key in self.outcomes:  # the same script again (shrinking meets it often): the same verdict
            self.cached += 1
            rec = self.outcomes[key]
        else:
            if self.last_failure is not None and self.config.shrink_runs is not None \
                    and self.shrink_runs >= self.config.shrink_runs:
                raise BudgetSpent()  # shrinking has had its runs: the smallest failure so far stands
            if self.last_failure is not None:
                self.shrink_runs += 1
            rec = self.outcomes[key] = self._run(doc, scn)
        if rec is not None:
            self.last_failure = rec
            if self.best is None or script_size(rec.doc) < script_size(self.best.doc):
                self.best = rec
            # one raise for every failure: hypothesis tells failures apart by where they are raised
            raise ClientFuzzFailure(rec)

    def _run(self, doc: dict[str, Any], scn: Scenario) -> ClientRecord | None:
        """Run one script against a fresh client; its failure, or None."""
        judge = ClientJudge(self.validator, dict(scn.options), self.stats, self.config.thresholds)
        t = time.perf_counter()
        result = run_client_scenario(scn, self.config, judge)
        self._account(judge, result, time.perf_counter() - t)
        if _DEBUG:
            print(f"[fuzz-client] run {self.stats.examples}: {time.perf_counter() - t:.2f} s, "
                  f"{len(judge.ctx.frames)} frames, {script_size(doc)}, {result.endings}", file=sys.stderr)
        if result.error and not any(f.direction == RECEIVED for f in judge.ctx.frames):
            # it never said a word, whatever the script: a client that cannot start, not a counterexample
            self.unusable = result.error
            raise ClientUnusable(result.error)
        failures, rules = run_failures(judge, result)
        if not failures:
            return None
        rec = ClientRecord(doc, failures[0], failures, rules, [f.text(300) for f in judge.ctx.frames[-12:]])
        if self.first_failure_size is None:
            self.first_failure_size = count_actions(doc)
            self.first_failure_at = (self.stats.examples, time.perf_counter())
        if _DEBUG:
            print(f"[fuzz-client] example {self.stats.examples}: {rec.failure[:200]} ({count_actions(doc)} actions)",
                  file=sys.stderr)
        return rec

    def _account(self, judge: ClientJudge, result: RunResult, seconds: float) -> None:
        s = self.stats
        s.examples += 1
        frames = judge.ctx.frames
        sent = [f for f in frames if f.direction == SENT]
        s.steps += len(sent)
        for f in sent:
            kind = _kind(f.msg)
            s.by_kind.setdefault(kind, [0, 0.0])[0] += 1
        # process start (until the client's first message) and stop (after the last frame) apart
        first = next((f.t for f in frames if f.direction == RECEIVED), None)
        last = frames[-1].t if frames else None
        end = time.monotonic() - result.transcript.t0
        start_stop = (first or 0.0) + (max(end - last, 0.0) if last is not None else 0.0)
        s.t_start += min(start_stop, seconds)
        s.t_target += max(seconds - start_stop, 0.0)


def _kind(msg: Any) -> str:
    """What a message of the suite is, for the counts of the report (unknown names grouped)."""
    if not isinstance(msg, dict):
        return "other"
    method = msg.get("method")
    if method == "session/update":
        u = msg["params"].get("update") if isinstance(msg.get("params"), dict) else None
        kind = u.get("sessionUpdate") if isinstance(u, dict) else None
        if kind in UPDATE_KINDS:
            return f"update:{kind}"
        return "update:_custom" if isinstance(kind, str) and kind.startswith("_") else "update:unknown"
    if isinstance(method, str):
        if method in _KNOWN_METHODS:
            return method
        return "_extension" if method.startswith("_") else "unknown method"
    return "response"


def fuzz_client(config: ClientFuzzConfig, *, seed: int = 0, max_examples: int = 50, budget: float | None = None,
                step_count: int = 30, report_dir: Path | str | None = None) -> ClientFuzzResult:
    """Fuzz a client: ``max_examples`` generated agent scripts (each at most ``step_count`` moves per
    turn), within ``budget`` seconds of wall clock (shrinking a failure gets half of it more).
    A failure is shrunk and, with ``report_dir``, written as a client scenario beside fuzz-report.json."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis.errors import Flaky

    fs = ClientFuzzSession(config, step_count)
    t0 = time.perf_counter()
    fs.deadline = t0 + budget if budget else None
    fs.shrink_allowance = (budget or 0) / 2

    @hseed(seed)
    @settings(max_examples=max_examples, database=None, deadline=None, derandomize=False, print_blob=False,
              phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
    @given(st.data())
    def client_examples(data):
        fs.example(data)

    error: BaseException | None = None
    try:
        with warnings.catch_warnings(), without_local_constants():
            # a filter retry renders the (huge) strategy once for hypothesis' event log
            warnings.filterwarnings("ignore", message="Generating overly large repr")
            client_examples()
    except ClientFuzzFailure:
        pass  # shrunk, and replayed last by hypothesis
    except BudgetSpent:
        pass  # the budget (or the shrink runs) ended the run: what was found so far stands
    except Exception as e:  # Flaky (the client did not fail again on the same script), or the fuzzer's own
        error = e
    seconds = time.perf_counter() - t0
    # every failing script was a real failing run; the one written is the smallest to read
    # (hypothesis' own order counts choices, which a long list of trivial moves can win)
    record = fs.best
    fs.stats.t_total = seconds
    result = ClientFuzzResult(seed, fs.stats.examples, fs.stats.steps, seconds, stats=fs.stats,
                              budget_spent=bool(fs.deadline and time.perf_counter() > fs.deadline),
                              scripts_sha256=fs.digest.hexdigest(), shrunk_from_actions=fs.first_failure_size,
                              found_after=None if fs.first_failure_at is None else
                              (fs.first_failure_at[0], round(fs.first_failure_at[1] - t0, 3)))
    if fs.unusable is not None:
        record = None
        result.failure = f"the client could not be fuzzed: {fs.unusable}"
    elif record is not None:
        result.failure, result.rules, result.step_log = record.failure, record.rules, steps_of(record.doc)
        result.actions, result.failures = count_actions(record.doc), record.failures
    elif error is not None:
        result.failure = f"the fuzzer failed: {type(error).__name__}: {error}"
    if report_dir is not None:
        out = Path(report_dir)
        out.mkdir(parents=True, exist_ok=True)
        if record is not None:
            result.scenario_path = write_client_scenario(out / f"{SCENARIO_NAME}.yaml", record, config, seed)
        rep = report_json(result, config)
        rep.update(side="client", generation_seconds=round(fs.t_generate, 3),
                   scripts_sha256=result.scripts_sha256, shrunk_from_actions=result.shrunk_from_actions,
                   found_after=result.found_after, cached_examples=fs.cached,
                   actions=result.actions, failures=result.failures,
                   last_frames=record.frames if record is not None else [],
                   flaky=isinstance(error, Flaky) and record is not None,
                   messages_by_kind={k: v[0] for k, v in sorted(fs.stats.by_kind.items())})
        result.report_path = out / "fuzz-report.json"
        result.report_path.write_text(json.dumps(rep, indent=1), encoding="utf-8")
    return result


class _NoAliases(yaml.SafeDumper):
    """A value generated once and used twice is written twice (no YAML anchors in a scenario)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def write_client_scenario(path: Path, record: ClientRecord, config: ClientFuzzConfig, seed: int) -> Path:
    """The failing script as a client scenario file (the format of scenarios/client/)."""
    catalog = load_catalog()
    item = {"name": SCENARIO_NAME,
            "description": f"Shrunk by the client fuzzer (seed {seed}) against {shlex.join(config.argv)}: "
                           f"{record.failure}"[:2000],
            "rules": [r for r in record.rules if r in catalog], **record.doc}
    text = yaml.dump({"scenarios": [item]}, Dumper=_NoAliases, sort_keys=False, allow_unicode=False, width=100000)
    back = yaml.safe_load(text)["scenarios"][0]
    if {k: back.get(k) for k in record.doc} != record.doc:  # the file must say exactly what ran
        raise RuntimeError("the counterexample does not survive YAML: " + json.dumps(record.doc)[:500])
    path.write_text(text, encoding="utf-8")
    return path


def is_client_scenario_file(path: Path | str) -> bool:
    """Whether a scenario file is a client scenario (side: client, or a scripted agent with no steps)."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return False
    items = data.get("scenarios") if isinstance(data, dict) and "scenarios" in data else [data]
    return any(isinstance(x, dict) and (x.get("side") == "client"
                                        or "steps" not in x and ("when" in x or "initialize" in x))
               for x in items or [])


def replay_client(path: Path | str, config: ClientFuzzConfig) -> ReplayResult:
    """Rerun a client scenario file (a fuzz counterexample or any client scenario) with the client
    runner and every client monitor; the failures are judged as in ``fuzz_client``."""
    scenarios = load_client_file(Path(path), set(load_catalog()))
    validator = strategies_for(config.schema_path).validator
    failures: list[str] = []
    error = None
    frames = 0
    for scn in scenarios:
        judge = ClientJudge(validator, dict(scn.options), StepStats(), config.thresholds)
        result = run_client_scenario(scn, config, judge)
        frames += len(judge.ctx.frames)
        found, _ = run_failures(judge, result)
        failures += [f for f in found if not f.startswith(("harness error", "the client run did not finish"))]
        error = error or result.error or harness_error(result)
    return ReplayResult(failures, error, frames)
