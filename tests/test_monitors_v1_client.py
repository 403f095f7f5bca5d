"""The v1 client-side monitors (rules/monitors/v1_client.py) on frames: the suite plays a v1 agent, "<-" is the
client writing, "->" the suite. Each rule: a correct exchange passes, the broken one fails, and a legal choice of
the client (no load, no cancel, a refused write) is no failure."""

from __future__ import annotations

import json

from acp_conformance.rules.findings import FAIL, INFO, PASS
from acp_conformance.rules.monitor import MonitorContext
from acp_conformance.rules.monitors import CLIENT_MONITORS
from acp_conformance.wire.transcript import EVENT, RECEIVED, SENT, Frame, parse_line
from monitor_transcripts import bad, msgs, statuses

V1_RULES = {r for c in CLIENT_MONITORS if getattr(c, "protocol", 2) == 1 for r in c.rules}


def play(lines) -> list:
    """(direction, message, raw line or JSON) in order, on one version-1 connection."""
    ctx = MonitorContext(target_side="client", protocol=1, options={})
    ctx.add_monitors(CLIENT_MONITORS)
    ctx.feed(Frame(0, 1, EVENT, 0.0, b"", None, None, "start", None))
    for seq, (way, item) in enumerate(lines, start=1):
        raw = item if isinstance(item, bytes) else json.dumps(item).encode()
        msg, problem = parse_line(raw)
        ctx.feed(Frame(seq, 1, RECEIVED if way == "<-" else SENT, seq * 0.05, raw, msg, problem))
    ctx.finish()
    return ctx.findings


def req(i, method, params):
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": params}


def res(i, result):
    return {"jsonrpc": "2.0", "id": i, "result": result}


def err(i, code, message):
    return {"jsonrpc": "2.0", "id": i, "error": {"code": code, "message": message}}


def init(caps=None, version=1):
    return [("<-", req(0, "initialize", {"protocolVersion": version, "clientCapabilities": {
                 "fs": {"readTextFile": True, "writeTextFile": True}}})),
            ("->", res(0, {"protocolVersion": 1, "agentCapabilities": caps or {}, "authMethods": []}))]


NEW = [("<-", req(1, "session/new", {"cwd": "/home/u/project", "mcpServers": []})), ("->", res(1, {"sessionId": "s1"}))]


def prompt(i=2, sid="s1", blocks=None):
    return [("<-", req(i, "session/prompt", {"sessionId": sid, "prompt": blocks or [{"type": "text", "text": "hi"}]})),
            ("->", res(i, {"stopReason": "end_turn"}))]


BASIC = init() + NEW + prompt()


def test_a_plain_v1_client_passes_and_is_judged_by_the_v1_rules_only():
    got = play(BASIC)
    assert not bad(got)
    for rule in ("V1-INIT-005", "V1-CLIENT-001", "V1-CLIENT-002", "V1-CLIENT-003", "V1-SESSION-005"):
        assert PASS in statuses(got, rule), rule
    assert {f.rule for f in got} <= V1_RULES
    # the situations it never created: no finding at all (not exercised)
    for rule in ("V1-SESSION-004", "V1-CLIENT-004", "V1-CANCEL-005", "V1-FS-003", "V1-TERM-003"):
        assert not statuses(got, rule), rule


def test_v1_init_005_a_version_that_is_not_an_integer():
    got = play(init(version="1") + NEW + prompt())
    assert bad(got) == {"V1-INIT-005"}
    assert 'protocolVersion "1", not an integer' in msgs(got, "V1-INIT-005", FAIL)[0]


def test_v1_client_001_a_session_before_initialize_and_a_prompt_in_an_unknown_session():
    got = play(NEW + init() + prompt())
    assert FAIL in statuses(got, "V1-CLIENT-001")
    got = play(init() + NEW + prompt(sid="s_never"))
    assert bad(got) == {"V1-CLIENT-001"}
    assert '"s_never"' in msgs(got, "V1-CLIENT-001", FAIL)[0]
    # a session the client asked to load (from an earlier run) may be prompted
    load = [("<-", req(3, "session/load", {"sessionId": "s_old", "cwd": "/p", "mcpServers": []})), ("->", res(3, {}))]
    got = play(init({"loadSession": True}) + load + prompt(4, "s_old"))
    assert not bad(got) and PASS in statuses(got, "V1-SESSION-004")
    # a session another answer of the agent's created (an unstable session/fork) may be prompted too
    fork = [("<-", req(3, "session/fork", {"sessionId": "s1", "cwd": "/p", "mcpServers": []})),
            ("->", res(3, {"sessionId": "s_fork"}))]
    assert not bad(play(init() + NEW + fork + prompt(4, "s_fork")))


def test_v1_session_004_a_load_the_agent_did_not_advertise():
    load = [("<-", req(3, "session/load", {"sessionId": "s1", "cwd": "/p", "mcpServers": []})), ("->", res(3, {}))]
    got = play(BASIC + load)
    assert bad(got) == {"V1-SESSION-004"}
    assert "loadSession was null" in msgs(got, "V1-SESSION-004", FAIL)[0]


def test_v1_session_005_a_relative_cwd():
    relative = [("<-", req(1, "session/new", {"cwd": "project", "mcpServers": []})),
                ("->", res(1, {"sessionId": "s1"}))]
    got = play(init() + relative + prompt())
    assert bad(got) == {"V1-SESSION-005"}
    windows = [("<-", req(1, "session/new", {"cwd": "C:\\Users\\u\\project", "mcpServers": []})),
               ("->", res(1, {"sessionId": "s1"}))]
    assert not bad(play(init() + windows + prompt()))


def test_v1_client_002_content_the_agent_did_not_advertise():
    image = [{"type": "text", "text": "look"}, {"type": "image", "mimeType": "image/png", "data": "AA=="}]
    got = play(init() + NEW + prompt(blocks=image))
    assert bad(got) == {"V1-CLIENT-002"}
    assert "image" in msgs(got, "V1-CLIENT-002", FAIL)[0]
    assert not bad(play(init({"promptCapabilities": {"image": True}}) + NEW + prompt(blocks=image)))
    link = [{"type": "resource_link", "uri": "file:///p/a.py", "name": "a.py"}]
    assert PASS in statuses(play(init() + NEW + prompt(blocks=link)), "V1-CLIENT-002")
    # a block type the v1 pages do not name: an extension, noted, not failed
    got = play(init() + NEW + prompt(blocks=[{"type": "_x/sketch"}]))
    assert not bad(got) and INFO in statuses(got, "V1-CLIENT-002")


def test_v1_client_003_a_line_that_is_not_json_rpc():
    got = play(init() + [("<-", b"client ready")] + NEW + prompt())
    assert bad(got) == {"V1-CLIENT-003"}
    got = play(init() + [("<-", {"id": 9, "method": "session/new"})] + NEW + prompt())
    assert "V1-CLIENT-003" in bad(got)


def test_v1_client_004_session_methods_the_agent_did_not_advertise():
    listing = [("<-", req(5, "session/list", {})), ("->", res(5, {"sessions": []}))]
    got = play(BASIC + listing)
    assert bad(got) == {"V1-CLIENT-004"}
    advertised = init({"sessionCapabilities": {"list": {}}}) + NEW + prompt() + listing
    got = play(advertised)
    assert not bad(got) and PASS in statuses(got, "V1-CLIENT-004")


def _permission_then_cancel(answer):
    ask = ("->", req("p1", "session/request_permission", {
        "sessionId": "s1", "toolCall": {"toolCallId": "c1"},
        "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}]}))
    cancel = ("<-", {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}})
    turn = [("<-", req(2, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "rm"}]})),
            ask, cancel]
    if answer is not None:
        turn.append(("<-", answer))
    return init() + NEW + turn + [("->", res(2, {"stopReason": "cancelled"}))]


def test_v1_cancel_005_pending_permissions_answered_cancelled_after_the_cancel():
    ok = play(_permission_then_cancel(res("p1", {"outcome": {"outcome": "cancelled"}})))
    assert not bad(ok) and PASS in statuses(ok, "V1-CANCEL-005")
    allowed = play(_permission_then_cancel(res("p1", {"outcome": {"outcome": "selected", "optionId": "ok"}})))
    assert bad(allowed) == {"V1-CANCEL-005"}
    assert "not {\"outcome\": {\"outcome\": \"cancelled\"}}" in msgs(allowed, "V1-CANCEL-005", FAIL)[0]
    never = play(_permission_then_cancel(None))
    assert bad(never) == {"V1-CANCEL-005"}
    # -32800 (request cancelled): the answer to a $/cancel_request of the agent's, noted, not failed
    noted = play(_permission_then_cancel(err("p1", -32800, "Request cancelled")))
    assert not bad(noted) and INFO in statuses(noted, "V1-CANCEL-005")


def test_v1_cancel_005_a_permission_answered_before_the_cancel_is_not_pending():
    lines = _permission_then_cancel(None)
    cancel_at = next(i for i, (w, m) in enumerate(lines) if isinstance(m, dict) and m.get("method") == "session/cancel")
    lines.insert(cancel_at, ("<-", res("p1", {"outcome": {"outcome": "selected", "optionId": "ok"}})))
    assert not statuses(play(lines), "V1-CANCEL-005")


def _write_then_read(write_answer, read_answer):
    path = "/tmp/project/new.txt"
    return init() + NEW + [
        ("<-", req(2, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "write"}]})),
        ("->", req("w1", "fs/write_text_file", {"sessionId": "s1", "path": path, "content": "a\nb\n"})),
        ("<-", write_answer),
        ("->", req("r1", "fs/read_text_file", {"sessionId": "s1", "path": path})),
        ("<-", read_answer),
        ("->", res(2, {"stopReason": "end_turn"}))]


def test_v1_fs_003_a_written_file_reads_back():
    ok = play(_write_then_read(res("w1", None), res("r1", {"content": "a\r\nb\r\n"})))
    assert not bad(ok) and PASS in statuses(ok, "V1-FS-003")
    missing = play(_write_then_read(res("w1", None), err("r1", -32603, "No such file or directory")))
    assert bad(missing) == {"V1-FS-003"}
    assert "answered with success, yet reading the file back failed" in msgs(missing, "V1-FS-003", FAIL)[0]
    # a write the client refused claims nothing; a file changed in between is noted
    assert not statuses(play(_write_then_read(err("w1", -32603, "denied"), err("r1", -32603, "nope"))), "V1-FS-003")
    changed = play(_write_then_read(res("w1", None), res("r1", {"content": "other"})))
    assert not bad(changed) and INFO in statuses(changed, "V1-FS-003")


def _terminal_output(output, truncated=True):
    return init() + NEW + [
        ("<-", req(2, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "run"}]})),
        ("->", req("t1", "terminal/output", {"sessionId": "s1", "terminalId": "term_1"})),
        ("<-", res("t1", {"output": output, "truncated": truncated})),
        ("->", res(2, {"stopReason": "end_turn"}))]


def test_v1_term_003_truncated_output_starts_at_a_character():
    ok = play(_terminal_output("\u00e9\u00e9"))
    assert not bad(ok) and PASS in statuses(ok, "V1-TERM-003")
    cut = play(_terminal_output("\ufffd\u00e9\u00e9"))
    assert bad(cut) == {"V1-TERM-003"}
    assert "U+FFFD" in msgs(cut, "V1-TERM-003", FAIL)[0]
    # output that was not truncated, or the command's own invalid bytes further in: not this rule's
    assert not statuses(play(_terminal_output("\ufffd", truncated=False)), "V1-TERM-003")
    assert not bad(play(_terminal_output("a\ufffdb")))


def test_the_v1_client_monitors_leave_version_2_connections_alone():
    ctx = MonitorContext(target_side="client", protocol=2, options={})
    ctx.add_monitors(CLIENT_MONITORS)
    assert not [m for m in ctx.monitors if type(m).__name__.startswith("V1Client")]
