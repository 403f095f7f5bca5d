"""A monitor that raises costs only its own rules: they end not-tested, saying it is a bug in the suite,
and every other monitor's findings of the test are kept (scripted runs and fuzzing share the context)."""

from __future__ import annotations

import pytest

from acp_conformance.rules.findings import NOT_TESTED, PASS
from acp_conformance.rules.monitor import RAISE_ENV, Monitor, MonitorContext
from acp_conformance.wire.transcript import SENT, Frame, parse_line


class Counts(Monitor):
    rules = ("INIT-001",)

    def __init__(self, ctx):
        super().__init__(ctx)
        self.seen = 0

    def on_frame(self, frame, rpc):
        self.seen += 1

    def finish(self):
        self.passed("INIT-001", f"saw {self.seen} frames")


class RaisesOnSecondFrame(Counts):
    rules = ("PROMPT-001", "PROMPT-002")

    def on_frame(self, frame, rpc):
        super().on_frame(frame, rpc)
        if self.seen == 2:
            raise TypeError("unhashable type: 'list'")


class RaisesAtFinish(Counts):
    rules = ("CANCEL-001",)

    def finish(self):
        raise KeyError("sessionId")


def frames(n):
    out = []
    for i in range(n):
        raw = b'{"jsonrpc":"2.0","id":%d,"method":"session/list","params":{}}' % i
        msg, problem = parse_line(raw)
        out.append(Frame(i, 0, SENT, float(i), raw, msg, problem))
    return out


def judged(monkeypatch):
    monkeypatch.delenv(RAISE_ENV, raising=False)
    ctx = MonitorContext()
    ctx.add_monitors([RaisesOnSecondFrame, Counts, RaisesAtFinish])
    for f in frames(3):
        ctx.feed(f)
    ctx.finish()
    return ctx


def test_the_other_monitors_keep_every_frame_and_finding(monkeypatch):
    ctx = judged(monkeypatch)
    kept = [f for f in ctx.findings if f.rule == "INIT-001"]
    assert [(f.status, f.message) for f in kept] == [(PASS, "saw 3 frames")]


def test_a_crash_while_reading_ends_its_rules_not_tested_at_that_frame(monkeypatch):
    ctx = judged(monkeypatch)
    crashed = {f.rule: f for f in ctx.findings if f.rule.startswith("PROMPT-")}
    assert set(crashed) == {"PROMPT-001", "PROMPT-002"}
    for f in crashed.values():
        assert f.status == NOT_TESTED
        assert f.frames == [1]
        assert "RaisesOnSecondFrame failed on frame #1" in f.message and "TypeError" in f.message
        assert "bug in the suite, not a finding about the target" in f.message


def test_a_crash_at_the_end_ends_its_rules_not_tested(monkeypatch):
    ctx = judged(monkeypatch)
    (f,) = [f for f in ctx.findings if f.rule == "CANCEL-001"]
    assert f.status == NOT_TESTED and "failed on the end of the test (KeyError" in f.message


def test_the_projects_own_tests_see_the_traceback(monkeypatch):
    monkeypatch.setenv(RAISE_ENV, "raise")
    ctx = MonitorContext()
    ctx.add_monitors([RaisesOnSecondFrame])
    ctx.feed(frames(1)[0])
    with pytest.raises(TypeError):
        ctx.feed(frames(2)[1])
