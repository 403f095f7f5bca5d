"""Lifecycle family: the monitors are discovered with their rules; the not-observable list loads."""

import json
from pathlib import Path

from acp_conformance.rules.monitors import RULES_CHECKED

MINE = {"CLOSE-001": "CloseLifecycleMonitor", "CLOSE-004": "CloseLifecycleMonitor",
        "STATE-007": "StateLifecycleMonitor", "PROMPT-014": "StateLifecycleMonitor",
        "RESUME-007": "ResumeLifecycleMonitor", "PROMPT-007": "ResumeLifecycleMonitor",
        "CANCEL-009": "CancelLifecycleMonitor", "PROMPT-009": "PromptBlocksMonitor"}


def test_rules_are_checked_by_lifecycle_monitors():
    for rule, cls in MINE.items():
        assert RULES_CHECKED[rule] == cls


def test_not_observable_list():
    p = Path(__file__).resolve().parents[1] / "acp_conformance/rules/not_observable_lifecycle.json"
    data = json.loads(p.read_text())
    assert not set(data) & set(RULES_CHECKED)
