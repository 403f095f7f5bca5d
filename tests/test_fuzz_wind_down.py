"""The fuzzer's wind-down against an agent whose turns end by themselves (bench/turn_agent.py: every prompt, the
steering ones too, a plain reply after 20-40 ms, as an agent written outside this project answers them).

An example ends by cancelling the turns it believes still run and waiting for their idle. A turn can end by
itself between the fuzzer's look at the frames (``turn_over``) and the cancel; no idle is owed after the cancel
then, and a required wait for one failed a correct agent as "stopped answering" (seen in a benchmark run). Here
every look says "still running", so that every wind-down takes that path; the agent is correct, so nothing may
fail."""

from __future__ import annotations

import sys
from pathlib import Path

from acp_conformance.fuzz.config import FuzzConfig
from acp_conformance.fuzz.example_steps import ExampleSteps
from acp_conformance.fuzz.run import fuzz

TURN_AGENT = [sys.executable, str(Path(__file__).resolve().parents[1] / "bench" / "turn_agent.py")]


def test_a_turn_that_ended_before_the_wind_down_s_cancel_is_not_a_failure(tmp_path, monkeypatch):
    looks: list[str] = []

    def never_over(self, ref: str) -> bool:
        looks.append(ref)
        return False

    monkeypatch.setattr(ExampleSteps, "turn_over", never_over)
    result = fuzz(FuzzConfig(TURN_AGENT, timeout=3.0), seed=1, max_examples=100_000, budget=6.0, step_count=40,
                  report_dir=tmp_path)
    assert result.failure is None, result.failure
    assert len(looks) >= 10 and result.examples >= 5, (len(looks), result.examples)  # the path was taken, often
