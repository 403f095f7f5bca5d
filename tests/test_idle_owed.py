"""An await of an idle the session no longer owes ends at once, not at --acp-timeout: a session/cancel of a session
whose turn has already ended, a prompt refused with an error (no turn). While a turn runs, or a prompt it accepted
has not reported idle yet, the wait goes on as before (to the idle, or to the timeout)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import anyio

from acp_conformance.scenarios.model import Scenario, Step
from acp_conformance.scenarios.runner import Runner, RunSettings, TargetSpec

TARGET = Path(__file__).resolve().parent / "turn_targets" / "agent.py"
NOT_OWED = "none is owed"


def run(mode: str, steps: list[tuple[str, dict]], timeout: float = 60.0):
    all_steps = [Step("initialize", {}, 0), Step("new_session", {"save": "s"}, 1)]
    all_steps += [Step(kind, args, 2 + i) for i, (kind, args) in enumerate(steps)]
    s = RunSettings(timeout=timeout, startup_timeout=30.0, test_timeout=120.0, shutdown_grace=1.0)
    with tempfile.TemporaryDirectory() as d:
        runner = Runner(Scenario(mode, TARGET, [], all_steps), TargetSpec([sys.executable, str(TARGET), mode]), s,
                        Path(d))
        return anyio.run(runner.run)


def notes(result) -> list[str]:
    return [str((f.detail or {}).get("text")) for f in result.transcript.frames if f.event == "note"]


def test_cancel_after_the_turn_ended_owes_no_idle_optional_wait_goes_on():
    # the 60 s timeout would say "did not arrive within 60 s": this message only comes from the frames
    result = run("plain", [("prompt", {"session": "$s", "text": "hi"}), ("cancel", {"session": "$s"}),
                           ("await", {"idle": "$s", "optional": True})])
    assert result.error is None and result.harness_error is None
    assert any(NOT_OWED in n for n in notes(result))


def test_cancel_after_the_turn_ended_required_wait_fails_as_before_only_sooner():
    result = run("plain", [("prompt", {"session": "$s", "text": "hi"}), ("cancel", {"session": "$s"}),
                           ("await", {"idle": "$s"})])
    assert result.error_kind == "timeout"  # the verdict the timeout gave: the same kind of end
    assert NOT_OWED in result.error


def test_a_refused_prompt_owes_no_idle_the_wait_ends_at_its_error():
    result = run("refuse", [("prompt", {"session": "$s", "text": "hi", "wait": "response"}),
                            ("await", {"idle": "$s", "optional": True})])
    assert result.error is None
    assert any(NOT_OWED in n for n in notes(result))


def test_a_prompt_still_unanswered_is_waited_for_until_it_settles():
    # wait: none: the await starts before the answer; the -32602 that comes then settles it
    result = run("refuse", [("prompt", {"session": "$s", "text": "hi", "wait": "none"}),
                            ("await", {"idle": "$s"})])
    assert result.error_kind == "timeout" and NOT_OWED in result.error


def test_a_running_turn_owes_its_idle_the_cancel_gets_it():
    result = run("until-cancel", [("prompt", {"session": "$s", "text": "hi", "wait": "response"}),
                                  ("cancel", {"session": "$s"}), ("await", {"idle": "$s"})])
    assert result.error is None and result.harness_error is None
    assert not any(NOT_OWED in n for n in notes(result))


def test_an_accepted_prompt_without_idle_still_gets_the_timeout():
    result = run("no-idle", [("prompt", {"session": "$s", "text": "hi", "wait": "response"}),
                             ("await", {"idle": "$s"})], timeout=0.5)
    assert result.error_kind == "timeout"
    assert "did not arrive within" in result.error


def test_a_prompt_held_behind_a_turn_owes_the_idle_after_its_answer():
    # answered after the idle of the turn before it: that idle is not its own, its turn is still to come
    result = run("queue", [("prompt", {"session": "$s", "text": "one", "wait": "response"}),
                           ("prompt", {"session": "$s", "text": "two", "wait": "none", "save": "p"}),
                           ("await", {"idle": "$s", "after": "$p"})])
    assert result.error is None and result.harness_error is None, result.error
    assert not any(NOT_OWED in n for n in notes(result))
    idles = [f for f in result.transcript.frames if f.direction == "received" and b'"idle"' in f.raw]
    assert len(idles) == 2
