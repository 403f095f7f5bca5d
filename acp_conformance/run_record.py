"""One run, whichever driver ran it: the typed record every driver fills, one verdict, the reports' input.

The suite (pytest: each scenario, and the fuzzer's ``acp-fuzz`` item), ``replay`` (each scenario of the
file), ``tap`` and ``check`` (each side of each observed session) add one ``TestRecord`` per test to one
``RunRecord``. ``judge`` is the one function that computes a run's verdict from it (every ACP revision at once,
``compute_by_revision``), and ``report/write.py`` renders every report from the record and its verdict, in
memory, once. The thresholds a run was judged with are the record's ``thresholds`` (``thresholds.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .rules.findings import NOT_TESTED, Finding
from .rules.verdicts import Verdict
from .thresholds import Thresholds

SUITE, REPLAY, TAP, CHECK = "suite", "replay", "tap", "check"  # the drivers
OBSERVED = (TAP, CHECK)  # nobody scripted the traffic: verdicts with observed statuses


@dataclass
class TestRecord:
    """One test of a run: a scenario, the fuzzer's item, or one side of an observed session."""

    __test__ = False  # (not a pytest test class)

    id: str
    rules: list[str] = field(default_factory=list)  # the rules it exists to exercise (bound to it)
    findings: list[Finding] = field(default_factory=list)
    transcript: str | None = None  # the transcript file (report/transcripts.py wrote it)
    skipped: str | None = None  # why it does not apply to this target
    error: str | None = None  # why it could not be completed
    driven_again: str | None = None  # why it was driven again alone (run_ahead)
    summary: list[str] = field(default_factory=list)  # lines for the terminal (the fuzzer's)


@dataclass
class SessionRecord:
    """What the reports need of one observed session (``tap``, ``check``)."""

    name: str
    frames: list
    findings: list[Finding]
    client: dict[str, Any] | None
    agent: dict[str, Any] | None
    command: list[str] = field(default_factory=list)  # the agent's command line (tap), or []
    source: str = ""  # the file it was read from (check)
    end: str = ""  # how it ended
    stderr: str = ""  # the agent's stderr (tap), kept beside the transcript
    not_judged: str = ""  # the session negotiated a version the suite does not judge: why no rules were applied
    protocol: int = 2  # the version the session negotiated: whose rules judged it


@dataclass
class RunRecord:
    driver: str  # SUITE, REPLAY, TAP or CHECK
    side: str  # the target's role: "agent", "client", or "tap" (observed: both programs)
    argv: list[str]  # the target's command line
    schema: Any  # the loaded ACP JSON Schema the run validated with
    thresholds: Thresholds
    redact: bool = True  # secrets masked in the transcripts and the reports
    waivers: Mapping[str, Any] = field(default_factory=dict)  # rule id -> Waiver (--acp-expected-failures)
    waivers_file: str | None = None
    tests: list[TestRecord] = field(default_factory=list)  # in the order they were recorded
    agent_init: dict[str, Any] | None = None  # the agent's initialize answer (the first one seen)
    sessions: list[SessionRecord] = field(default_factory=list)  # observed sessions (tap, check)
    # the suite's hint for an inconclusive rule whose test could not be completed (what the user can change)
    incomplete_hint: str | None = None
    also: tuple[str, ...] = ()  # revisions of another protocol judged beside the selected one (observed v1 and v2)

    @property
    def observed(self) -> bool:
        return self.driver in OBSERVED

    def add(self, test: TestRecord) -> None:
        self.tests.append(test)

    # -- the views the verdict and the reports read, in the order the tests were recorded (a test recorded
    # twice: its findings add up, the last of each fact stands)
    @property
    def findings(self) -> list[Finding]:
        return [f for t in self.tests for f in t.findings]

    @property
    def bound(self) -> dict[str, list[str]]:
        """rule -> the tests that exist to exercise it."""
        out: dict[str, list[str]] = {}
        for t in self.tests:
            for r in t.rules:
                tests = out.setdefault(r, [])
                if t.id not in tests:
                    tests.append(t.id)
        return out

    def _facts(self, name: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for t in self.tests:
            if getattr(t, name):
                out[t.id] = getattr(t, name)
        return out

    @property
    def skipped(self) -> dict[str, str]:
        return self._facts("skipped")

    @property
    def errors(self) -> dict[str, str]:
        return self._facts("error")

    @property
    def driven_again(self) -> dict[str, str]:
        return self._facts("driven_again")

    @property
    def summaries(self) -> dict[str, list[str]]:
        return self._facts("summary")  # type: ignore[return-value]

    @property
    def transcripts(self) -> dict[str, str | None]:
        """test -> its transcript file (None: none was written), one entry per test."""
        return {t.id: t.transcript for t in self.tests}


def judge(record: RunRecord) -> Verdict:
    """The run's verdict: every catalog rule's status over the record's tests, under every ACP revision, the
    selected one (``thresholds.revision``) first. The one verdict function of every driver."""
    from .rules.catalog import load_catalog, load_not_observable
    from .rules.monitors import checked_on
    from .rules.verdicts import compute_by_revision
    t = record.thresholds
    checked = set(checked_on("agent")) | set(checked_on("client")) if record.observed else set(checked_on(record.side))
    errors = record.errors
    verdict = compute_by_revision(load_catalog(), record.findings, checked, record.bound, record.skipped,
                                  strict=t.strict, side=None if record.observed else record.side,
                                  not_observable=load_not_observable(), waivers=dict(record.waivers),
                                  require_coverage=t.require_coverage, observed=record.observed, revision=t.revision,
                                  also=record.also)
    if record.incomplete_hint is not None:
        for v in verdict.rules:  # an inconclusive rule says which of its tests could not be completed, and why
            if v.checked and v.status == NOT_TESTED:
                stuck = next((test for test in v.tests if test in errors), None)
                if stuck is not None:
                    v.reason = (f"{v.reason}; {stuck.rsplit('::', 1)[-1]} could not be completed: "
                                f"{errors[stuck][:300]} (if the agent was still working: {record.incomplete_hint})")
    return verdict
