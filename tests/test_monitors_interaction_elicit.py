"""Unit tests of the ELICIT monitor and of TOOL-005 / TOOL-010 on synthetic transcripts."""

from __future__ import annotations

import json

from acp_conformance.rules.findings import FAIL, PASS, SKIP, WARN
from acp_conformance.rules.monitors.tool import diff_problems
from monitor_transcripts import run, statuses


def init(caps):
    return ('C->A {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"capabilities":%s,'
            '"info":{"name":"c","version":"1"}}}\n' % json.dumps(caps)
            + 'A->C {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"capabilities":{"session":{}},'
              '"info":{"name":"a","version":"1"}}}\n'
            + 'C->A {"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p"}}\n'
            + 'A->C {"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}\n')


def upd(u, sid="s1"):
    return 'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s","update":%s}}\n' % (
        sid, json.dumps(u))


def a2c(msg):
    return "A->C " + json.dumps(dict({"jsonrpc": "2.0"}, **msg)) + "\n"


def c2a(msg):
    return "C->A " + json.dumps(dict({"jsonrpc": "2.0"}, **msg)) + "\n"


FORM = {"sessionId": "s1", "mode": "form", "message": "Name?",
        "requestedSchema": {"type": "object", "properties": {"projectName": {"type": "string"}}}}
IDLE = upd({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
RA = upd({"sessionUpdate": "state_update", "state": "requires_action"})


def test_form_elicitation_declined_and_turn_ends_passes():
    f = run(init({"elicitation": {"form": {}}}) + a2c({"id": 5, "method": "elicitation/create", "params": FORM}) + RA
            + c2a({"id": 5, "result": {"action": "decline", "content": {"x": 1}}}) + IDLE)
    for rule in ("ELICIT-001", "ELICIT-002", "ELICIT-004", "ELICIT-006", "ELICIT-007"):
        assert statuses(f, rule) == [PASS], rule


def test_unadvertised_mode_bad_scope_and_secret_fail():
    params = dict(FORM, sessionId="nope", requestedSchema={"type": "object", "properties": {"apiKey": {}}})
    f = run(init({"elicitation": {}}) + a2c({"id": 5, "method": "elicitation/create", "params": params}))
    assert statuses(f, "ELICIT-001") == [FAIL]
    assert statuses(f, "ELICIT-002") == [FAIL]
    assert statuses(f, "ELICIT-007") == [FAIL]


def test_url_ids_complete_and_decline_then_complete():
    url = {"sessionId": "s1", "mode": "url", "message": "Go", "elicitationId": "e1", "url": "http://example.com/x"}
    f = run(init({"elicitation": {"url": {}}})
            + a2c({"id": 5, "method": "elicitation/create", "params": url})
            + a2c({"id": 6, "method": "elicitation/create", "params": url})
            + c2a({"id": 5, "result": {"action": "decline"}})
            + a2c({"method": "elicitation/complete", "params": {"elicitationId": "e1"}})
            + a2c({"method": "elicitation/complete", "params": {"elicitationId": "zz"}}) + IDLE)
    assert statuses(f, "ELICIT-003") == [PASS, FAIL]
    assert statuses(f, "ELICIT-005") == [PASS, FAIL]
    assert statuses(f, "ELICIT-004") == [FAIL]  # completed although declined
    assert WARN in statuses(f, "ELICIT-007")  # http outside loopback
    assert WARN in statuses(f, "ELICIT-006")  # no requires_action


def test_cancel_without_withdrawal_warns_and_probe_skips():
    f = run(init({"elicitation": {"form": {}}}) + a2c({"id": 5, "method": "elicitation/create", "params": FORM}) + RA
            + c2a({"method": "session/cancel", "params": {"sessionId": "s1"}})
            + upd({"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}))
    assert statuses(f, "ELICIT-006") == [PASS, WARN]
    f = run(init({"elicitation": {"form": {}, "url": {}}}) + IDLE, elicit_probe=True)
    assert statuses(f, "ELICIT-002") == [SKIP] and statuses(f, "ELICIT-005") == [SKIP]


def test_tool_diff_and_session_reference():
    good = {"type": "diff", "changes": [{"operation": "modify", "path": "/p/a"}],
            "patch": {"format": "git_patch", "text": "diff --git /p/a /p/a\n--- /p/a\n+++ /p/a\n@@ -1 +1 @@\n-x\n+y\n"}}
    assert diff_problems(good) == ([], ["/p/a"])
    bad = dict(good, patch={"format": "git_patch", "text": "From abc\n--- a/p/a\n+++ /q/b\n"})
    assert len(diff_problems(bad)[0]) == 3
    assert diff_problems({"type": "diff", "changes": [{"operation": "move", "path": "/p/a"}]})[0]
    f = run(init({}) + upd({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "t",
                            "content": [good, {"type": "session", "sessionId": "s1"}]})
            + upd({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c1",
                   "content": {"type": "session", "sessionId": "s9"}})
            + upd({"sessionUpdate": "subagent_update", "sessionId": "s9"})
            + upd({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c1",
                   "content": {"type": "session", "sessionId": "s9"}}))
    assert statuses(f, "TOOL-005") == [PASS]
    assert statuses(f, "TOOL-010") == [PASS, FAIL, PASS]
