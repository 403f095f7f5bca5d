"""Unit tests of client-side monitors on synthetic transcripts (the suite plays the agent)."""

from __future__ import annotations

import json

from acp_conformance.rules.findings import FAIL, INFO
from acp_conformance.rules.monitor import MonitorContext
from acp_conformance.rules.monitors import CLIENT_MONITORS
from acp_conformance.wire.transcript import EVENT, RECEIVED, SENT, Frame, parse_line


def play(lines: list[tuple[str, object]]) -> list:
    """(direction, message or event name) in order; "<-" is the client writing, "->" the suite."""
    ctx = MonitorContext(target_side="client", options={})
    ctx.add_monitors(CLIENT_MONITORS)
    t = 0.0
    for seq, (way, item) in enumerate([("event", "start")] + lines):
        t += 0.05
        if way == "event":
            detail = {"returncode": 0, "signal": None} if item == "exit" else None
            ctx.feed(Frame(seq, 1, EVENT, t, b"", None, None, item, detail))
        else:
            raw = json.dumps(item).encode()
            msg, problem = parse_line(raw)
            ctx.feed(Frame(seq, 1, RECEIVED if way == "<-" else SENT, t, raw, msg, problem))
    ctx.finish()
    return ctx.findings


SETUP = [("<-", {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                 "params": {"protocolVersion": 2, "capabilities": {}, "info": {"name": "c", "version": "1"}}}),
         ("->", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2, "capabilities": {"session": {}},
                                                         "info": {"name": "a", "version": "1"}}}),
         ("<-", {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/p"}}),
         ("->", {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}})]
CLOSE = [("<-", {"jsonrpc": "2.0", "id": 2, "method": "session/close", "params": {"sessionId": "s1"}}),
         ("->", {"jsonrpc": "2.0", "id": 2, "result": {}})]
ASK = [("->", {"jsonrpc": "2.0", "id": "p1", "method": "session/request_permission",
               "params": {"sessionId": "s1", "title": "t", "options": []}}),
       ("event", "eof"), ("event", "exit")]


def statuses(findings, rule):
    return [f.status for f in findings if f.rule == rule]


def test_client_017_a_request_for_a_session_the_client_closed_is_not_owed_an_answer_on_its_way_out():
    got = statuses(play(SETUP + CLOSE + ASK), "CLIENT-017")
    assert FAIL not in got and INFO in got
    # the same request for a session still open, never answered: a failure
    assert FAIL in statuses(play(SETUP + ASK), "CLIENT-017")
