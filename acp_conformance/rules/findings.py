"""Findings: what a monitor concluded about one rule, with the evidence a vendor needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PASS = "pass"
FAIL = "fail"
WARN = "warn"
SKIP = "skip"
NOT_TESTED = "not-tested"
INFO = "info"  # an INFORMATIONAL observation: recorded, never counted
FLAKY = "flaky"  # failed, then passed when its test was rerun alone (--acp-rerun-failures)
NOT_EXERCISED = "not-exercised"

# A rule's status is the worst over all findings for it; one inconclusive run does not undo a
# pass seen elsewhere, so not-tested ranks below pass.
# A flaky blocking rule still counts against conformance: it was broken once and not shown reliable.
SEVERITY = {FAIL: 6, FLAKY: 5, WARN: 4, PASS: 3, NOT_TESTED: 2, NOT_EXERCISED: 1.5, SKIP: 1, INFO: 0}


def worst(statuses: list[str], default: str = NOT_TESTED) -> str:
    return max(statuses, key=SEVERITY.__getitem__) if statuses else default


@dataclass
class Finding:
    rule: str
    status: str
    message: str  # the observed behaviour, in one or two sentences
    expected: str = ""  # what the rule requires, in one sentence
    frames: list[int] = field(default_factory=list)  # transcript seqs that show it (first = offending)
    test: str = ""  # pytest node id, filled in by the runner

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"rule": self.rule, "status": self.status, "message": self.message}
        if self.expected:
            d["expected"] = self.expected
        if self.frames:
            d["frames"] = self.frames
        if self.test:
            d["test"] = self.test
        return d
