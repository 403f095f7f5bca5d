"""An await for what only the target decides to do (a tool call, a requires_action...) ends with its turn:
once the turn reports idle without it, the scenario is not exercised at once, not after the timeout; a bare idle
snapshot before any work does not end the turn, and an agent that never reports idle still gets the timeout."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import anyio

from acp_conformance.scenarios.model import Scenario, Step
from acp_conformance.scenarios.runner import Runner, RunSettings, TargetSpec

TARGET = Path(__file__).resolve().parent / "turn_targets" / "agent.py"


def run(mode: str, await_args: dict, timeout: float = 60.0):
    steps = [Step("initialize", {}, 0), Step("new_session", {"save": "s"}, 1),
             Step("prompt", {"session": "$s", "text": "hi", "wait": "response"}, 2),
             Step("await", await_args, 3)]
    s = RunSettings(timeout=timeout, startup_timeout=30.0, test_timeout=120.0, shutdown_grace=1.0)
    with tempfile.TemporaryDirectory() as d:
        runner = Runner(Scenario(mode, TARGET, [], steps), TargetSpec([sys.executable, str(TARGET), mode]), s,
                        Path(d))
        return anyio.run(runner.run)


def test_a_turn_over_without_the_tool_call_ends_the_wait_as_not_exercised():
    # the 60 s timeout would say "did not arrive within 60 s": this message only comes from the turn's end
    result = run("plain", {"update": {"session": "$s", "kind": "tool_call_update"}})
    assert result.error_kind == "target-never"
    assert "the turn ended without it" in result.error


def test_a_turn_over_without_requires_action_ends_the_wait_too():
    result = run("plain", {"update": {"session": "$s", "kind": "state_update", "state": "requires_action"}})
    assert result.error_kind == "target-never"
    assert "the turn ended without it" in result.error


def test_an_optional_wait_ends_with_the_turn_and_the_scenario_goes_on():
    result = run("plain", {"update": {"session": "$s", "kind": "terminal_update"}, "optional": True})
    assert result.error is None and result.harness_error is None


def test_a_bare_idle_snapshot_before_the_work_does_not_end_the_turn():
    result = run("idle-first", {"update": {"session": "$s", "kind": "tool_call_update"}})
    assert result.error is None and result.harness_error is None


def test_an_agent_that_never_reports_idle_still_gets_the_timeout():
    result = run("no-idle", {"update": {"session": "$s", "kind": "tool_call_update"}}, timeout=0.5)
    assert result.error_kind == "target-never"
    assert "did not arrive within" in result.error


def test_an_update_the_target_owes_is_not_cut_short_by_the_turn():
    # a state_update running is no choice of the target's: its wait is not bound to the turn
    result = run("plain", {"update": {"session": "$s", "kind": "state_update", "state": "running"}}, timeout=0.5)
    assert result.error_kind == "timeout"
    assert "did not arrive within" in result.error
