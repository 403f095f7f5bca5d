"""The statuses a rule can have in a report: one table every writer (HTML, badge, summary, matrix) reads,
so a new status (``flaky``, ``xfail``) is one row here, not an edit in every writer."""

from __future__ import annotations

# status -> (label, colour, counts against conformance when the rule is blocking)
STATUSES: dict[str, tuple[str, str, bool]] = {
    "fail": ("FAIL", "#c62828", True),
    "flaky": ("FLAKY", "#ad1457", True),
    "warn": ("WARN", "#ef6c00", False),
    "xfail": ("XFAIL (waived)", "#6a1b9a", False),
    "pass": ("PASS", "#2e7d32", False),
    "not-tested": ("NOT TESTED", "#616161", True),
    "not-exercised": ("NOT EXERCISED", "#9e9e9e", False),
    "skip": ("SKIP", "#9e9e9e", False),
    "info": ("INFO", "#1565c0", False),
}
ORDER = list(STATUSES)
BAD = ("fail", "flaky", "warn")  # statuses whose evidence the reports open up


def label(status: str) -> str:
    return STATUSES.get(status, (status.upper(), "#000", False))[0]


def colour(status: str) -> str:
    return STATUSES.get(status, ("", "#000", False))[1]
