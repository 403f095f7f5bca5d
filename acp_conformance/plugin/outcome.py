"""One test's outcome (its findings and what the run says of the target), from the test to the controller.

Inside a process the outcome travels as an object: the test sets it on its item, the call-phase report
carries it (``pytest_runtest_makereport``). Only where a report leaves an xdist worker is it written as
JSON into the report's ``user_properties`` (once), and the controller reads it back from there.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

import pytest

from ..rules.findings import Finding

OUTCOME_KEY = "acp_outcome"  # the user property that carries an outcome from an xdist worker


@dataclass
class TestOutcome:
    __test__ = False  # not a pytest test class

    findings: list[Finding] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)  # the rules the test exists to exercise
    error: str | None = None  # why the test could not be completed (the target's doing)
    skipped: str | None = None  # why it does not apply to this target
    harness_error: str | None = None  # a defect of the suite
    transcript: str | None = None  # the path of its transcript
    agent_init: dict[str, Any] | None = None  # the target's initialize answer (its identity)
    endings: list[Any] = field(default_factory=list)
    negotiated_version: int | None = None
    first_contact: dict[str, Any] | None = None  # {"kind", "sentence"}: the target cannot be judged at all
    auth_blocked: str | None = None  # it stopped at authentication
    stopped: bool = False  # not run: the run had stopped (early_stop.py)
    summary: list[str] = field(default_factory=list)  # lines for the terminal summary (the fuzzer's)
    driven_again: str | None = None  # why its drive beside other tests was replaced by one alone (run_ahead.py)

    def with_flaky(self, flaky: list[Finding]) -> TestOutcome:
        return replace(self, findings=self.findings + flaky)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["findings"] = [f.to_json() for f in self.findings]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any], test: str) -> TestOutcome:
        known = {f.name for f in fields(cls)}
        out = cls(**{k: v for k, v in d.items() if k in known and k != "findings"})
        out.findings = [Finding(x["rule"], x["status"], x["message"], x.get("expected", ""), x.get("frames", []),
                                x.get("test") or test) for x in d.get("findings", [])]
        return out


class AcpFailure(Exception):
    """A test failed: the message is the readable verdict for this test."""


class JudgedItem(pytest.Item):
    """A test whose outcome feeds the verdict (a scenario, the fuzzer)."""

    acp_outcome: TestOutcome | None = None

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, AcpFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)


def attach(item: pytest.Item, report: pytest.TestReport) -> None:
    """The call-phase report carries the item's outcome (``pytest_runtest_makereport``)."""
    if report.when == "call" and isinstance(item, JudgedItem) and item.acp_outcome is not None:
        report.acp_outcome = item.acp_outcome


def reported(report: pytest.TestReport) -> TestOutcome | None:
    return getattr(report, "acp_outcome", None)


def to_wire(report: pytest.TestReport) -> None:
    """On an xdist worker, before the report is serialized: the outcome as one JSON user property."""
    outcome = report.__dict__.pop("acp_outcome", None)
    if outcome is not None:
        report.user_properties.append((OUTCOME_KEY, json.dumps(outcome.to_json())))


def take(report: pytest.TestReport) -> TestOutcome | None:
    """On the controller: the report's outcome (an object, or JSON from a worker, taken out of its
    user properties so that JUnit does not show it)."""
    outcome = report.__dict__.pop("acp_outcome", None)
    props = []
    for key, value in report.user_properties:
        if key == OUTCOME_KEY:
            outcome = TestOutcome.from_json(json.loads(value), report.nodeid)
        else:
            props.append((key, value))
    report.user_properties = props
    return outcome
