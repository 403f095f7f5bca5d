"""`settle` waits for the target to be quiet for its seconds, and at most twice that: against a target that keeps
sending (a turn streaming its work) it ends at the bound, not after five times the quiet it asked for."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import anyio

from acp_conformance.scenarios.model import Scenario, Step
from acp_conformance.scenarios.runner import Runner, RunSettings, TargetSpec
from acp_conformance.scenarios.steps_await import SETTLE_BOUND

TARGET = Path(__file__).resolve().parent / "turn_targets" / "agent.py"
QUIET = 0.5


def settle_seconds(mode: str) -> tuple[float, int]:
    """How long the settle after the prompt's answer took (from the answer to the close of stdin, which follows
    the settle at once), and how many updates came meanwhile; its note in the transcript says the same."""
    steps = [Step("initialize", {}, 0), Step("new_session", {"save": "s"}, 1),
             Step("prompt", {"session": "$s", "text": "hi", "wait": "response"}, 2),
             Step("settle", {"seconds": QUIET}, 3)]
    s = RunSettings(timeout=30.0, startup_timeout=30.0, test_timeout=60.0, shutdown_grace=1.0)
    with tempfile.TemporaryDirectory() as d:
        result = anyio.run(Runner(Scenario(mode, TARGET, [], steps), TargetSpec([sys.executable, str(TARGET), mode]),
                                  s, Path(d)).run)
    assert result.error is None and result.harness_error is None, result.error or result.harness_error
    frames = result.transcript.frames
    answered = next(f for f in frames if f.msg and f.msg.get("id") == 2 and "result" in f.msg)
    closed = next(f for f in frames if f.event == "stdin-closed")
    updates = sum(1 for f in frames if answered.t < f.t < closed.t and f.msg and f.msg.get("method") == "session/update")
    note, = [f for f in frames if f.event == "note" and "settle" in (f.detail or {})]
    assert note.detail["settle"] == QUIET and answered.t < note.t <= closed.t
    assert note.detail["waited"] <= closed.t - answered.t + 0.01  # (the event loop's clock, not the transcript's)
    quiet = "the target was quiet for 0.5 s" in note.detail["text"]
    assert quiet == (mode == "plain"), note.detail["text"]  # the streaming target was never quiet that long
    return closed.t - answered.t, updates


def test_a_settle_against_a_quiet_target_waits_its_seconds():
    took, _ = settle_seconds("plain")
    assert QUIET <= took < QUIET * SETTLE_BOUND + 0.5  # the margin is for a loaded machine


def test_a_settle_against_a_target_that_keeps_sending_ends_at_twice_its_seconds():
    took, updates = settle_seconds("stream")
    assert updates >= 10  # it was never quiet for 0.5 s: a chunk every 20 ms
    # the bound: 1.0 s (2 x 0.5), where the old one (5 x) took 2.5 s; the margin is for a loaded machine
    assert 1.0 <= took < 2.0
