"""The v1 monitors (rules/monitors/v1_*.py) on hand-written v1 transcripts, and the routing of each connection to
the monitors of the version it negotiated (MonitorContext): one correct exchange and one broken one per rule, and
the other legal behaviours each check must accept."""

from __future__ import annotations

import json

from monitor_transcripts import A, C, Player, U, assert_fails, bad, statuses

from acp_conformance.rules.findings import FAIL, INFO, PASS, WARN
from acp_conformance.rules.monitors import AGENT_MONITORS

V1_MONITORS = [c for c in AGENT_MONITORS if getattr(c, "protocol", 2) == 1]
V2_MONITORS = [c for c in AGENT_MONITORS if getattr(c, "protocol", 2) == 2]


def play(script, protocol=1, monitors=None):
    p = Player(monitors=[])
    p.ctx.protocol = protocol
    p.ctx.add_monitors(AGENT_MONITORS if monitors is None else monitors)
    return p.play(script).finish()


def req(i, method, params):
    return C({"jsonrpc": "2.0", "id": i, "method": method, "params": params})


def ok(i, result):
    return A({"jsonrpc": "2.0", "id": i, "result": result})


def note(method, params):
    return C({"jsonrpc": "2.0", "method": method, "params": params})


INIT = "\n".join([
    req(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}),
    ok(0, {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}, "agentInfo": {"name": "a", "version": "1"},
           "authMethods": []}),
    req(1, "session/new", {"cwd": "/w", "mcpServers": []}),
    ok(1, {"sessionId": "s1"}),
])
CHUNK = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}
TURN = "\n".join([
    req(2, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "hello"}]}),
    U("s1", CHUNK),
    ok(2, {"stopReason": "end_turn"}),
])


def cancelled_turn(i, reason="cancelled", late=False):
    lines = [req(i, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "long"}]}),
             U("s1", CHUNK), note("session/cancel", {"sessionId": "s1"}), "@ +0.5", U("s1", CHUNK),
             ok(i, {"stopReason": reason})]
    return "\n".join(lines + ([U("s1", CHUNK)] if late else []))


def test_a_correct_v1_turn_passes_and_no_v2_rule_judges_it():
    fs = play(INIT + "\n" + TURN)
    assert not bad(fs), [(f.rule, f.message) for f in fs if f.status in (FAIL, WARN)]
    assert {f.rule for f in fs} and all(f.rule.startswith("V1-") for f in fs)
    for rule in ("V1-INIT-001", "V1-INIT-002", "V1-INIT-003", "V1-SESSION-001", "V1-PROMPT-001", "V1-PROMPT-002",
                 "V1-UPDATE-001", "V1-UPDATE-002", "V1-CONTENT-001", "V1-ERR-001", "V1-TRANSPORT-001"):
        assert PASS in statuses(fs, rule), rule


def test_routing_follows_the_negotiated_version_per_connection():
    """protocol None (tap, check): a v1 connection is judged by the V1 monitors only, a v2 one by the v2 ones."""
    v2 = "\n".join([C('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"capabilities":{},'
                      '"info":{"name":"c","version":"1"}}}'),
                    A('{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"capabilities":{},'
                      '"info":{"name":"a","version":"1"}}}')])
    fs = play(INIT + "\n" + TURN + "\n# --- new connection\n" + v2, protocol=None)
    by_conn = {}
    for f in fs:
        by_conn.setdefault(f.rule.startswith("V1-"), set()).add(f.rule)
    assert "V1-PROMPT-001" in by_conn[True] and "INIT-001" in by_conn[False]
    assert not bad(fs), [(f.rule, f.message) for f in fs if f.status in (FAIL, WARN)]
    # "2" said in version 1's words is version 1 (an agent that echoes the version asked)
    echo = INIT.replace('"protocolVersion":1', '"protocolVersion":2')
    fs = play(echo + "\n" + TURN, protocol=None)
    judged = [f for f in fs if f.status in (PASS, FAIL, WARN, INFO)]
    assert judged and all(f.rule.startswith("V1-") for f in judged), [f.rule for f in judged if f.rule[:3] != "V1-"]


def test_a_v2_run_never_feeds_the_v1_monitors():
    fs = play(INIT + "\n" + TURN, protocol=2, monitors=V1_MONITORS)
    assert fs == []


def test_v1_init_002_answer_above_the_version_asked_fails():
    assert_fails(play(INIT.replace('"result":{"protocolVersion":1', '"result":{"protocolVersion":3')), "V1-INIT-002")
    later = INIT.replace('"params":{"protocolVersion":1', '"params":{"protocolVersion":99')
    assert PASS in statuses(play(later), "V1-INIT-002")  # its latest, 1, below the 99 asked


def test_v1_prompt_001_stop_reason_outside_v1_fails():
    assert_fails(play(INIT + "\n" + TURN.replace('"end_turn"', '"done"')), "V1-PROMPT-001")


def test_v1_prompt_002_update_after_the_response_fails_and_one_after_the_next_prompt_does_not():
    assert_fails(play(INIT + "\n" + TURN + "\n" + U("s1", CHUNK)), "V1-PROMPT-002")
    nxt = TURN.replace('"id":2', '"id":3')
    assert not bad(play(INIT + "\n" + TURN + "\n" + nxt))
    # a mode change between turns is no update of the turn
    mode = U("s1", {"sessionUpdate": "current_mode_update", "currentModeId": "ask"})
    assert not bad(play(INIT + "\n" + TURN + "\n" + mode))


def test_v1_cancel_001_and_002():
    good = INIT + "\n" + cancelled_turn(2) + "\n" + cancelled_turn(3)
    fs = play(good)
    assert not bad(fs) and statuses(fs, "V1-CANCEL-001") == [PASS, PASS] and PASS in statuses(fs, "V1-CANCEL-002")
    assert_fails(play(INIT + "\n" + cancelled_turn(2, late=True)), "V1-CANCEL-002")
    err = cancelled_turn(2).replace('{"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled"}}',
                                    '{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"aborted"}}')
    assert_fails(play(INIT + "\n" + err), "V1-CANCEL-001")


def test_v1_cancel_001_one_answer_crossing_the_cancel_is_noted_two_fail():
    crossing = "\n".join([req(2, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "x"}]}),
                          U("s1", CHUNK), note("session/cancel", {"sessionId": "s1"}),
                          A({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}})])
    fs = play(INIT + "\n" + crossing)
    assert statuses(fs, "V1-CANCEL-001") == [INFO] and not bad(fs)
    two = INIT + "\n" + crossing + "\n" + crossing.replace('"id":2', '"id":3')
    assert_fails(play(two), "V1-CANCEL-001")
    slow = crossing.replace(note("session/cancel", {"sessionId": "s1"}),
                            note("session/cancel", {"sessionId": "s1"}) + "\n@ +1")
    assert_fails(play(INIT + "\n" + slow), "V1-CANCEL-001")


def test_v1_cancel_003_a_late_cancel_that_ends_the_next_turn_warns():
    late = note("session/cancel", {"sessionId": "s1"})
    nxt = TURN.replace('"id":2', '"id":3')
    assert PASS in statuses(play(INIT + "\n" + TURN + "\n" + late + "\n" + nxt), "V1-CANCEL-003")
    broken = nxt.replace('"end_turn"', '"cancelled"')
    fs = play(INIT + "\n" + TURN + "\n" + late + "\n" + broken)
    assert FAIL in statuses(fs, "V1-CANCEL-003")  # a SHOULD: the verdict reads it as a warning


def _load(replay_before=True, replay_after=False):
    restart = "# --- new connection\n" + INIT.split("\n")[0] + "\n" + INIT.split("\n")[1]
    replay = U("s1", {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hello"}})
    lines = [restart, req(5, "session/load", {"sessionId": "s1", "cwd": "/w", "mcpServers": []})]
    lines += [replay] if replay_before else []
    lines += [ok(5, {})]
    lines += [replay] if replay_after else []
    return INIT + "\n" + TURN + "\n" + "\n".join(lines)


def test_v1_session_002_003_replay_before_the_load_response():
    fs = play(_load())
    assert PASS in statuses(fs, "V1-SESSION-002") and PASS in statuses(fs, "V1-SESSION-003") and not bad(fs)
    assert_fails(play(_load(replay_before=False)), "V1-SESSION-002")
    assert_fails(play(_load(replay_before=False, replay_after=True)), "V1-SESSION-003", also=("V1-SESSION-002",))


def test_v1_update_and_tool_shapes():
    tool = "\n".join([req(2, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "x"}]}),
                      U("s1", {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read", "kind": "read",
                               "status": "pending", "locations": [{"path": "/w/a"}]}),
                      U("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}),
                      ok(2, {"stopReason": "end_turn"})])
    fs = play(INIT + "\n" + tool)
    assert not bad(fs) and PASS in statuses(fs, "V1-TOOL-001") and PASS in statuses(fs, "V1-FS-002")
    assert_fails(play(INIT + "\n" + tool.replace('"status":"completed"', '"status":"done"')), "V1-TOOL-002")
    assert_fails(play(INIT + "\n" + tool.replace('"/w/a"', '"a"')), "V1-FS-002")
    assert_fails(play(INIT + "\n" + TURN.replace('"content":{"type":"text","text":"hi"}', '"text":"hi"')),
                 "V1-UPDATE-001")
    other = U("s9", CHUNK)
    assert_fails(play(INIT + "\n" + other), "V1-UPDATE-002")
    unknown_kind = U("s1", {"sessionUpdate": "_vendor_thing"})
    assert statuses(play(INIT + "\n" + unknown_kind), "V1-UPDATE-001") == [INFO]


def test_v1_fs_001_and_term_001_follow_the_client_capabilities():
    read = A({"jsonrpc": "2.0", "id": 0, "method": "fs/read_text_file", "params": {"sessionId": "s1", "path": "/w/a"}})
    assert_fails(play(INIT + "\n" + read), "V1-FS-001")
    allowed = INIT.replace('"clientCapabilities":{}', '"clientCapabilities":{"fs":{"readTextFile":true}}')
    assert PASS in statuses(play(allowed + "\n" + read), "V1-FS-001")
    term = A({"jsonrpc": "2.0", "id": 0, "method": "terminal/create", "params": {"sessionId": "s1", "command": "ls"}})
    assert_fails(play(INIT + "\n" + term), "V1-TERM-001")


def test_v1_term_002_a_terminal_never_released_fails():
    caps = INIT.replace('"clientCapabilities":{}', '"clientCapabilities":{"terminal":true}')
    create = A({"jsonrpc": "2.0", "id": 0, "method": "terminal/create", "params": {"sessionId": "s1", "command": "ls"}})
    made = C({"jsonrpc": "2.0", "id": 0, "result": {"terminalId": "t1"}})
    release = A({"jsonrpc": "2.0", "id": 1, "method": "terminal/release", "params": {"sessionId": "s1",
                                                                                    "terminalId": "t1"}})
    assert PASS in statuses(play("\n".join([caps, create, made, release])), "V1-TERM-002")
    assert_fails(play("\n".join([caps, create, made])), "V1-TERM-002")


def test_v1_perm_001_and_002():
    perm = {"jsonrpc": "2.0", "id": 0, "method": "session/request_permission",
            "params": {"sessionId": "s1", "toolCall": {"toolCallId": "t1"},
                       "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"}]}}
    turn = "\n".join([req(2, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "x"}]}),
                      A(perm), note("session/cancel", {"sessionId": "s1"}),
                      C({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "cancelled"}}}),
                      ok(2, {"stopReason": "cancelled"})])
    fs = play(INIT + "\n" + turn)
    assert PASS in statuses(fs, "V1-PERM-001") and PASS in statuses(fs, "V1-PERM-002") and not bad(fs)
    assert_fails(play(INIT + "\n" + turn.replace('"kind":"allow_once"', '"kind":"yes"')), "V1-PERM-001")
    ended = turn.replace('{"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled"}}',
                         '{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}')
    assert "V1-PERM-002" in bad(play(INIT + "\n" + ended))
    # a cancelled outcome the client chose with no session/cancel: the agent may go on, nothing to judge
    chosen = ended.replace(json.dumps({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}},
                                      separators=(",", ":")), '{"jsonrpc":"2.0","method":"$/noop","params":{}}')
    assert statuses(play(INIT + "\n" + chosen), "V1-PERM-002") == []


def test_v1_err_and_transport():
    unknown = "\n".join([req(7, "_conformance/unknown", {}),
                         A({"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "nope"}})])
    assert PASS in statuses(play(INIT + "\n" + unknown), "V1-ERR-002")
    assert_fails(play(INIT + "\n" + unknown.replace('"error":{"code":-32601,"message":"nope"}', '"result":{}')),
                 "V1-ERR-002")
    twice = INIT + "\n" + ok(1, {"sessionId": "s1"})
    assert_fails(play(twice), "V1-ERR-001")
    assert_fails(play(INIT + "\n@raw starting up..."), "V1-TRANSPORT-001")


def test_v1_auth_001_internal_error_for_missing_authentication_warns():
    init = INIT.replace('"authMethods":[]', '"authMethods":[{"id":"login","name":"Log in"}]')
    refused = init.replace('{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}',
                           '{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Not authenticated"}}')
    assert FAIL in statuses(play(refused), "V1-AUTH-001")
    right = refused.replace('"code":-32603', '"code":-32000')
    assert statuses(play(right), "V1-AUTH-001") == [PASS]


def test_v1_cancel_004_a_request_named_by_cancel_request_is_answered():
    named = "\n".join([req(2, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "x"}]}),
                       U("s1", CHUNK), note("$/cancel_request", {"requestId": 2})])
    assert PASS in statuses(play(INIT + "\n" + named + "\n" + ok(2, {"stopReason": "cancelled"})), "V1-CANCEL-004")
    refused = A({"jsonrpc": "2.0", "id": 2, "error": {"code": -32800, "message": "Request cancelled"}})
    assert PASS in statuses(play(INIT + "\n" + named + "\n" + refused), "V1-CANCEL-004")
    assert_fails(play(INIT + "\n" + named), "V1-CANCEL-004")
    # naming a request already answered cancels nothing
    done = INIT + "\n" + TURN + "\n" + note("$/cancel_request", {"requestId": 2})
    assert statuses(play(done), "V1-CANCEL-004") == ["not-exercised"]


def test_v1_session_006_resume_without_replay():
    restart = "# --- new connection\n" + "\n".join(INIT.split("\n")[:2])
    resume = req(5, "session/resume", {"sessionId": "s1", "cwd": "/w", "mcpServers": []})
    replay = U("s1", {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hello"}})
    good = "\n".join([INIT, TURN, restart, resume, ok(5, {})])
    assert statuses(play(good), "V1-SESSION-006") == [PASS]
    assert_fails(play("\n".join([INIT, TURN, restart, resume, replay, ok(5, {})])), "V1-SESSION-006")


def test_v1_session_007_close_cancels_the_running_turn():
    running = "\n".join([req(2, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "x"}]}),
                         U("s1", CHUNK), req(3, "session/close", {"sessionId": "s1"}), ok(3, {})])
    assert PASS in statuses(play(INIT + "\n" + running + "\n" + ok(2, {"stopReason": "cancelled"})), "V1-SESSION-007")
    went_on = running + "\n@ +1\n" + ok(2, {"stopReason": "end_turn"})
    assert_fails(play(INIT + "\n" + went_on), "V1-SESSION-007")
    crossing = running.replace(ok(3, {}), ok(2, {"stopReason": "end_turn"}) + "\n" + ok(3, {}))
    assert statuses(play(INIT + "\n" + crossing), "V1-SESSION-007") == [INFO]


def test_v1_tool_001_a_tool_call_introduced_by_a_permission_request_is_known():
    """gemini-cli 0.61.0 introduces a tool call in session/request_permission and then updates it: the v1 pages show a
    tool_call first but do not forbid that, so it is noted, not warned; an update of a call seen nowhere still warns."""
    perm = {"jsonrpc": "2.0", "id": 0, "method": "session/request_permission",
            "params": {"sessionId": "s1", "toolCall": {"toolCallId": "t1", "title": "Write a", "kind": "edit"},
                       "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"}]}}
    turn = "\n".join([req(2, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "x"}]}),
                      A(perm), C({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected",
                                                                                    "optionId": "a"}}}),
                      U("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}),
                      ok(2, {"stopReason": "end_turn"})])
    fs = play(INIT + "\n" + turn)
    assert not bad(fs) and statuses(fs, "V1-TOOL-001") == [INFO, PASS]
    stray = turn.replace('"toolCallId":"t1","status"', '"toolCallId":"t2","status"')
    assert FAIL in statuses(play(INIT + "\n" + stray), "V1-TOOL-001")  # (a SHOULD: the verdict warns)
