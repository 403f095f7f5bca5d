"""Unit tests of the wire monitors (ERR, INIT, TRANSPORT, EXT) on synthetic transcripts, and of the
plugin's protocol-version-1 detection."""

from __future__ import annotations

import json
import re

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from monitor_transcripts import INIT, assert_fails, bad, run, statuses  # noqa: E402

from acp_conformance.plugin import _negotiated_v1  # noqa: E402
from acp_conformance.rules.findings import FAIL, INFO, NOT_EXERCISED, PASS, WARN  # noqa: E402
from acp_conformance.wire.transcript import RECEIVED, SENT, Frame  # noqa: E402


MALFORMED = INIT + r'''
C->A {"jsonrpc":"2.0","id":18,"method":"session/list",
A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}
C->A {"jsonrpc":"2.0","id":19}
A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}
C->A 42
A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}
C->A {"jsonrpc":"2.0","method":"_example.com/file_opened","params":{"path":"/home/user/project/a.rs"}}
C->A {"jsonrpc":"2.0","method":"$/conformance_probe","params":{}}
C->A {"jsonrpc":"2.0","id":17,"method":"session/frobnicate","params":{}}
A->C {"jsonrpc":"2.0","id":17,"error":{"code":-32601,"message":"Method not found"}}
C->A {"jsonrpc":"2.0","id":"ext-1","method":"_example.com/workspace/buffers","params":{}}
A->C {"jsonrpc":"2.0","id":"ext-1","error":{"code":-32601,"message":"Method not found"}}
'''

# the older JSON-RPC 2.0 reading of batches (members served): noted, never failed under ACP v2
BATCHES = INIT + r'''
C->A []
A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}
C->A [{"jsonrpc":"2.0","id":20,"method":"session/list","params":{}},1]
A->C [{"jsonrpc":"2.0","id":20,"result":{"sessions":[]}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}]
C->A [{"jsonrpc":"2.0","method":"_n1"},{"jsonrpc":"2.0","method":"_n2","params":{}}]
C->A [{"jsonrpc":"2.0","id":21,"method":"session/list"
A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}
C->A {"jsonrpc":"2.0","id":22,"method":"session/list","params":{}}
A->C {"jsonrpc":"2.0","id":22,"result":{"sessions":[]}}
'''

# ACP v2 (the v2 Preview): every batch is one invalid request, refused whole with one -32600 (id null)
V2_BATCHES = INIT + r'''
C->A []
A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}
C->A {"jsonrpc":"2.0","id":30,"method":"session/list","params":{}}
A->C {"jsonrpc":"2.0","id":30,"result":{"sessions":[]}}
C->A [{"jsonrpc":"2.0","id":20,"method":"session/list","params":{}},{"jsonrpc":"2.0","id":23,"method":"x/y","params":{}}]
A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}
C->A {"jsonrpc":"2.0","id":31,"method":"session/list","params":{}}
A->C {"jsonrpc":"2.0","id":31,"result":{"sessions":[]}}
C->A [{"jsonrpc":"2.0","method":"_n1"},{"jsonrpc":"2.0","method":"_n2","params":{}}]
A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}
C->A {"jsonrpc":"2.0","id":32,"method":"session/list","params":{}}
A->C {"jsonrpc":"2.0","id":32,"result":{"sessions":[]}}
'''

WIRE_RULES = ("ERR-005", "ERR-006", "ERR-007", "ERR-011", "ERR-012", "EXT-001", "EXT-002")


def test_reference_malformed_transcript_passes():
    f = run(MALFORMED)
    assert not bad(f), [(x.rule, x.status, x.message) for x in f if x.status in (FAIL, WARN)]
    for rule in WIRE_RULES:
        assert PASS in statuses(f, rule), rule


def test_v2_batch_refusal_passes_and_batch_members_are_not_owed_answers():
    f = run(V2_BATCHES)
    assert not bad(f), [(x.rule, x.status, x.message) for x in f if x.status in (FAIL, WARN)]
    assert statuses(f, "TRANSPORT-012").count(PASS) == 3 and PASS in statuses(f, "TRANSPORT-006")  # [] too
    assert PASS in statuses(f, "ERR-004")  # the members 20 and 23 got no response of their own: not owed one
    assert not [x for x in f if x.rule in ("TRANSPORT-005", "TRANSPORT-007", "TRANSPORT-008")]  # retired


def test_the_older_json_rpc_batch_reading_is_noted_never_failed():
    f = run(BATCHES)
    assert not bad(f), [(x.rule, x.status, x.message) for x in f if x.status in (FAIL, WARN)]
    # the target's legal choice: not exercised (never blocking, never not-tested), with the reading as reason
    assert NOT_EXERCISED in statuses(f, "TRANSPORT-012") and FAIL not in statuses(f, "TRANSPORT-012")
    assert PASS in statuses(f, "TRANSPORT-006") and PASS in statuses(f, "TRANSPORT-009")


def test_batch_members_answered_on_lines_of_their_own_are_the_older_reading_not_a_refusal():
    """Issue 25: an agent answering each member on its own line gives the invalid entry its -32600 with id
    null (JSON-RPC 2.0 § 6) beside the served request: that is the member's answer, not a refusal of the
    whole batch, so TRANSPORT-012 notes the older reading (it failed as 'both refused and served')."""
    f = run(BATCHES.replace(
        'A->C [{"jsonrpc":"2.0","id":20,"result":{"sessions":[]}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}]',
        'A->C {"jsonrpc":"2.0","id":20,"result":{"sessions":[]}}\n'
        'A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}'))
    assert not bad(f), [(x.rule, x.status, x.message) for x in f if x.status in (FAIL, WARN)]
    assert NOT_EXERCISED in statuses(f, "TRANSPORT-012") and FAIL not in statuses(f, "TRANSPORT-012")
    # a second refusal beyond the one invalid entry is a refusal of the whole batch: both readings at once
    f = run(BATCHES.replace(
        'A->C [{"jsonrpc":"2.0","id":20,"result":{"sessions":[]}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}]',
        'A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}\n'
        'A->C {"jsonrpc":"2.0","id":20,"result":{"sessions":[]}}\n'
        'A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}'))
    assert FAIL in statuses(f, "TRANSPORT-012")


def test_a_batch_without_any_answer_fails_transport_012():
    f = run(V2_BATCHES.replace('C->A [{"jsonrpc":"2.0","id":20,"method":"session/list","params":{}},{"jsonrpc":"2.0","id":23,"method":"x/y","params":{}}]\n'
                               'A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}',
                               'C->A [{"jsonrpc":"2.0","id":20,"method":"session/list","params":{}},{"jsonrpc":"2.0","id":23,"method":"x/y","params":{}}]'))
    assert_fails(f, "TRANSPORT-012")


def test_a_batch_both_refused_and_served_fails_transport_012():
    f = run(V2_BATCHES.replace('C->A {"jsonrpc":"2.0","id":31,',
                               'A->C {"jsonrpc":"2.0","id":20,"result":{"sessions":[]}}\nC->A {"jsonrpc":"2.0","id":31,'))
    assert FAIL in statuses(f, "TRANSPORT-012")


def test_parse_error_with_an_id_fails_err_006():
    f = run(MALFORMED.replace('{"jsonrpc":"2.0","id":null,"error":{"code":-32700',
                              '{"jsonrpc":"2.0","id":18,"error":{"code":-32700'))
    assert_fails(f, "ERR-006", also=("ERR-004",))


def test_unknown_method_success_fails_err_005():
    f = run(MALFORMED.replace('{"jsonrpc":"2.0","id":17,"error":{"code":-32601,"message":"Method not found"}}',
                              '{"jsonrpc":"2.0","id":17,"result":{}}'))
    assert_fails(f, "ERR-005", also=("SCHEMA-001",))


def test_answered_notification_fails_err_011_and_warns_ext_001():
    script = MALFORMED.replace(
        'C->A {"jsonrpc":"2.0","method":"$/conformance_probe","params":{}}',
        'A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found"}}\n'
        'C->A {"jsonrpc":"2.0","method":"$/conformance_probe","params":{}}')
    f = run(script)
    assert FAIL in statuses(f, "ERR-011")
    assert WARN in statuses(f, "EXT-001")
    assert bad(f) <= {"ERR-011", "EXT-001"}


def test_empty_batch_answered_with_an_array_fails_transport_006_and_012():
    f = run(BATCHES.replace('C->A []\nA->C {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}',
                            'C->A []\nA->C [{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}]'))
    assert_fails(f, "TRANSPORT-006", also=("TRANSPORT-012",))
    assert FAIL in statuses(f, "TRANSPORT-012")


def test_empty_batch_answered_with_an_empty_array_fails_transport_012():
    # an empty batch answered with an empty batch escaped every mandatory rule (issue 25): JSON-RPC 2.0 section 6
    # and v2 alike answer [] with one -32600 object with id null
    f = run(BATCHES.replace('C->A []\nA->C {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}',
                            'C->A []\nA->C []'))
    assert FAIL in statuses(f, "TRANSPORT-012") and FAIL in statuses(f, "TRANSPORT-006")


def test_retyped_id_fails_err_008():
    script = INIT + r'''
C->A {"jsonrpc":"2.0","id":"1","method":"session/list","params":{}}
A->C {"jsonrpc":"2.0","id":1,"result":{"sessions":[]}}
'''
    f = run(script)
    assert_fails(f, "ERR-008", also=("ERR-004",))


def test_request_before_initialize():
    script = r'''
C->A {"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}
A->C {"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Connection not initialized"}}
''' + INIT
    assert PASS in statuses(run(script), "ERR-014")
    f = run(script.replace('{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Connection not initialized"}}',
                           '{"jsonrpc":"2.0","id":1,"result":{"sessions":[]}}'))
    assert_fails(f, "ERR-014")
    f = run(script.replace('"code":-32600,"message":"Connection not initialized"',
                           '"code":-32603,"message":"Internal error"'))
    assert INFO in statuses(f, "ERR-014") and FAIL not in statuses(f, "ERR-014")


def test_error_shape_and_reserved_codes():
    script = INIT + r'''
C->A {"jsonrpc":"2.0","id":5,"method":"session/list","params":{}}
A->C {"jsonrpc":"2.0","id":5,"error":{"code":-32050,"message":""}}
'''
    f = run(script)
    assert FAIL in statuses(f, "ERR-012")
    assert WARN in statuses(f, "ERR-015")


def test_agent_request_ids():
    script = INIT + r'''
A->C {"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[]}}
A->C {"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"u"},"options":[]}}
C->A {"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"cancelled"}}}
'''
    f = run(script)
    assert FAIL in statuses(f, "ERR-010")
    assert FAIL not in statuses(f, "ERR-009")


def test_initialize_result_shape_and_markers():
    f = run(INIT.replace('"info":{"name":"minimal-agent","version":"1.0.0"}', '"info":{"name":"minimal-agent"}'))
    assert FAIL in statuses(f, "INIT-005")
    f = run(INIT.replace('"capabilities":{"session":{}}', '"capabilities":{"session":{"delete":true}}'))
    assert FAIL in statuses(f, "INIT-010")
    f = run(INIT)
    assert PASS in statuses(f, "INIT-005") and PASS in statuses(f, "INIT-010") and PASS in statuses(f, "INIT-007")


def test_a_v1_shaped_answer_to_a_request_for_1_is_not_judged_against_the_v2_shape():
    """claude-agent-acp 0.101.0, asked for 1, answers in v1's shape (agentInfo): legal for an agent of both."""
    v1 = r'''C->A {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"capabilities":{},"info":{"name":"c","version":"1"}}}
A->C {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{},"agentInfo":{"name":"a","version":"1"},"authMethods":[]}}
'''
    f = run(v1)
    assert FAIL not in statuses(f, "INIT-005") and "info" in statuses(f, "INIT-005")


def test_repeated_initialize():
    again = INIT.replace('"id":0', '"id":1')
    assert PASS in statuses(run(INIT + again), "INIT-006")
    refused = again.replace('"result":{"protocolVersion":2,"capabilities":{"session":{}},"info":{"name":"minimal-agent",'
                            '"version":"1.0.0"}}', '"error":{"code":-32600,"message":"Already initialized"}')
    assert FAIL in statuses(run(INIT + refused), "INIT-006")
    later = INIT + '''
C->A {"jsonrpc":"2.0","id":5,"method":"session/list","params":{}}
A->C {"jsonrpc":"2.0","id":5,"result":{"sessions":[]}}
''' + refused
    f = run(later)
    assert FAIL not in statuses(f, "INIT-006") and INFO in statuses(f, "INIT-006")


def test_malformed_initialize_and_recovery():
    script = r'''
C->A {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}
A->C {"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"Invalid params"}}
''' + INIT.replace('"id":0', '"id":1')
    f = run(script)
    assert PASS in statuses(f, "INIT-011") and PASS in statuses(f, "INIT-004")


def test_elicitation_without_capability_fails_init_007():
    script = INIT + r'''
A->C {"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"sessionId":"s","mode":"form","message":"?","requestedSchema":{"type":"object","properties":{}}}}
C->A {"jsonrpc":"2.0","id":3,"result":{"action":"decline"}}
'''
    assert FAIL in statuses(run(script), "INIT-007")


def test_custom_root_field_and_enum():
    script = INIT + r'''
C->A {"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}
A->C {"jsonrpc":"2.0","id":1,"result":{"sessions":[],"_vendor":1}}
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"finished"}}}
'''
    f = run(script)
    assert FAIL in statuses(f, "EXT-004")
    assert FAIL in statuses(f, "EXT-005")


def test_meta_equivalence():
    script = INIT + r'''
C->A {"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}
A->C {"jsonrpc":"2.0","id":1,"result":{"sessions":[]}}
C->A {"jsonrpc":"2.0","id":2,"method":"session/list","params":{"_meta":{"x.test/y":1}}}
A->C {"jsonrpc":"2.0","id":2,"result":{"sessions":[]}}
'''
    assert PASS in statuses(run(script), "EXT-003")
    f = run(script.replace('{"jsonrpc":"2.0","id":2,"result":{"sessions":[]}}',
                           '{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params"}}'))
    assert FAIL in statuses(f, "EXT-003")
    # a request cancelled (-32800) is not compared: its turn may have ended, whatever its _meta
    f = run(script.replace('{"jsonrpc":"2.0","id":2,"result":{"sessions":[]}}',
                           '{"jsonrpc":"2.0","id":2,"error":{"code":-32800,"message":"Request cancelled"}}'))
    assert FAIL not in statuses(f, "EXT-003")


def test_stdout_framing():
    script = INIT + '@raw {"jsonrpc": "2.0",\n'
    f = run(script)
    assert FAIL in statuses(f, "TRANSPORT-002")
    f = run(INIT + "@raw 42\n")
    assert FAIL in statuses(f, "TRANSPORT-002")
    f = run(INIT)
    assert PASS in statuses(f, "TRANSPORT-002") and PASS in statuses(f, "TRANSPORT-001")


def _echo_script(echo_first, echo_second, mids=True):
    """Two prompts of one session, each echoed; the second one's text (generated) holds "Ã" itself."""
    import json

    def update(mid, text):
        u = {"sessionUpdate": "user_message", "content": [{"type": "text", "text": text}]}
        if mids:
            u["messageId"] = mid
        return "A->C " + json.dumps({"jsonrpc": "2.0", "method": "session/update",
                                     "params": {"sessionId": "s1", "update": u}}, ensure_ascii=False) + "\n"

    def prompt(i, text, echo):
        return ('C->A ' + json.dumps({"jsonrpc": "2.0", "id": i, "method": "session/prompt", "params": {
            "sessionId": "s1", "prompt": [{"type": "text", "text": text}]}}, ensure_ascii=False) + "\n"
                + update(f"u{i}", echo) + f'A->C {{"jsonrpc":"2.0","id":{i},"result":{{"messageId":"u{i}"}}}}\n')

    return (INIT + 'C->A {"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p"}}\n'
            + 'A->C {"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}\n'
            + prompt(2, "héllo ✓", echo_first) + prompt(3, "fuzz Ã¿ text", echo_second))


def test_transport_001_echo_is_judged_against_the_prompt_it_echoes():
    # the faithful echo of a prompt whose text holds "Ã" is no mangled echo of the other prompt
    for mids in (True, False):  # paired by messageId, or by the text it holds
        f = run(_echo_script("héllo ✓", "fuzz Ã¿ text", mids))
        assert FAIL not in statuses(f, "TRANSPORT-001") and PASS in statuses(f, "TRANSPORT-001"), mids
        # a mangled echo still fails
        f = run(_echo_script("hÃ©llo âœ“", "fuzz Ã¿ text", mids))
        assert FAIL in statuses(f, "TRANSPORT-001"), mids


def _frames(answer_version):
    import json
    req = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
           "params": {"protocolVersion": 2, "info": {"name": "x", "version": "1"}}}
    resp = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": answer_version, "info": {"name": "a", "version": "1"}}}
    return [Frame(0, 1, SENT, 0.1, json.dumps(req).encode(), req),
            Frame(1, 1, RECEIVED, 0.2, json.dumps(resp).encode(), resp)]


def test_plugin_detects_a_v1_agent():
    assert _negotiated_v1(_frames(1)) is not None
    assert _negotiated_v1(_frames(2)) is None


def test_v1_agent_run_says_so(tmp_path):
    """End to end: a v1 agent (the reference agent negotiating 1) gets one verdict, in the terminal and in
    report.json, at once, in a run forced to judge version 2: no v2 rule is judged, and answering 1 to a request
    for 2 is no INIT failure (the negotiation picks the highest version it supports at or below the request). Exit
    status 6. (Without --acp-protocol the run judges the version the agent answers in: tests/test_v1.py.)"""
    import time

    from suite_run import mutant_cmd, run_suite
    t0 = time.monotonic()
    r = run_suite(mutant_cmd("v1-agent"), tmp_path, "--acp-protocol=2")  # a run forced to judge version 2
    assert time.monotonic() - t0 < 30  # the run itself: under 10 s (pytest's own duration, below)
    assert float(r.output.rsplit(" in ", 1)[1].split("s", 1)[0]) < 10, r.output[-500:]
    assert r.returncode == 6, r.output[-3000:]
    sentence = "the agent speaks ACP protocol version 1; this run judges version 2 (--acp-protocol 1 judges version 1)"
    assert f"ACP verdict: NOT CONFORMANT: {sentence}" in r.output
    v = r.report["verdict"]
    assert v["conformant"] is False and v["negotiated_version"] == 1 and v["reason"] == sentence
    assert v["reason_kind"] == "not-v2"
    assert not (r.with_status("fail") | r.with_status("warn")), r.with_status("fail")
    assert r.with_status("pass") <= {"INIT-002"}
    assert "HARNESS ERROR" not in r.output and re.search(r"1 failed, \d+ skipped", r.output), r.output[-500:]


def test_the_agent_methods_of_err_005_come_from_the_schema(tmp_path):
    # --acp-schema can add a method: a schema that defines session/frobnicate makes its success legal
    import json

    from acp_conformance.protocol.schema import cached_schema, load_schema
    from acp_conformance.protocol.validate import Validator

    bundled = cached_schema(None)
    assert bundled.requests_to("agent") >= {"initialize", "session/new", "session/prompt", "terminal/cancel"}
    assert "session/request_permission" in bundled.requests_to("client") - bundled.requests_to("agent")
    doc = json.loads(json.dumps(bundled.document))
    doc["x-acp-methods"]["session/frobnicate"] = {"direction": "client->agent", "kind": "request",
                                                  "params": "ListSessionsRequest", "result": "ListSessionsResponse"}
    path = tmp_path / "acp.schema.json"
    path.write_text(json.dumps(doc))
    script = MALFORMED.replace('{"jsonrpc":"2.0","id":17,"error":{"code":-32601,"message":"Method not found"}}',
                               '{"jsonrpc":"2.0","id":17,"result":{"sessions":[]}}')
    assert FAIL in statuses(run(script), "ERR-005")
    assert FAIL not in statuses(run(script, validator=Validator(load_schema(path))), "ERR-005")


def _exchange(*pairs):
    """Frames of request/answer pairs on connection 1: ((request, result-or-error), ...)."""
    frames, seq = [], 0
    for i, (method, params, answer) in enumerate(pairs):
        req = {"jsonrpc": "2.0", "id": i, "method": method, "params": params}
        resp = {"jsonrpc": "2.0", "id": i, **answer}
        for direction, msg in ((SENT, req), (RECEIVED, resp)):
            frames.append(Frame(seq, 1, direction, 0.1 * seq, json.dumps(msg).encode(), msg))
            seq += 1
    return frames


INIT_REQ = ("initialize", {"protocolVersion": 2, "info": {"name": "x", "version": "1"}})
PROMPT_REQ = ("session/prompt", {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]})


def test_v1_behind_a_v2_answer_is_told_only_on_unambiguous_evidence():
    from acp_conformance.rules.first_contact import NOT_V2, v1_behind_v2
    bare = {"result": {"protocolVersion": 2}}
    v1_prompt = {"result": {"stopReason": "end_turn"}}
    # the Python SDK's echo agent: a bare initialize answer, then a prompt answered with v1's stopReason
    found = v1_behind_v2(_exchange((*INIT_REQ, bare), (*PROMPT_REQ, v1_prompt)))
    assert found is not None and found.kind == NOT_V2 and "stopReason" in found.sentence
    # v1's names in the initialize answer are enough
    named = {"result": {"protocolVersion": 2, "agentCapabilities": {}, "authMethods": []}}
    assert "agentCapabilities" in v1_behind_v2(_exchange((*INIT_REQ, named))).sentence
    # a v2 answer (info present) is never taken for v1, whatever it does later (PROMPT-001 judges that)
    v2 = {"result": {"protocolVersion": 2, "info": {"name": "a", "version": "1"}}}
    assert v1_behind_v2(_exchange((*INIT_REQ, v2), (*PROMPT_REQ, v1_prompt))) is None
    assert v1_behind_v2(_exchange((*INIT_REQ, {"result": {"protocolVersion": 2, "info": {}, "agentInfo": {}}}))) is None
    # a bare answer alone, or with a v2 prompt answer, proves nothing
    assert v1_behind_v2(_exchange((*INIT_REQ, bare))) is None
    assert v1_behind_v2(_exchange((*INIT_REQ, bare), (*PROMPT_REQ, {"result": {"messageId": "m"}}))) is None
    # a session/new refused for want of mcpServers (required in v1 only), but only when none were sent
    want = {"error": {"code": -32602, "message": "Invalid params", "data": {"loc": ["mcpServers"]}}}
    assert v1_behind_v2(_exchange((*INIT_REQ, bare), ("session/new", {"cwd": "/p"}, want))) is not None
    assert v1_behind_v2(_exchange((*INIT_REQ, bare), ("session/new", {"cwd": "/p", "mcpServers": []}, want))) is None


def test_ext_004_a_name_the_type_does_not_define_at_a_result_or_update_root():
    # every name at a spec type's root is reserved (extensibility: "The _meta Field"); an underscore is not needed
    # for a field to be custom (a hidden mutant of issue 25 escaped with customField on a result)
    new = ('C->A {"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p"}}\n'
           'A->C {"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1","workspaceId":"w"}}\n')
    f = run(INIT + new)
    assert FAIL in statuses(f, "EXT-004") and "workspaceId" in " ".join(x.message for x in f if x.rule == "EXT-004")
    update = ('A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{'
              '"sessionUpdate":"state_update","state":"idle","mood":"calm"}}}\n')
    assert FAIL in statuses(run(INIT + new.replace(',"workspaceId":"w"', "") + update), "EXT-004")
    # the defined names, _meta and a custom `_` kind (whose shape the schema does not know) pass
    ok = new.replace('"workspaceId":"w"', '"configOptions":[],"_meta":{"x":1}') + update.replace(
        '"state_update","state":"idle","mood":"calm"', '"_x.example/kind","anything":1')
    assert FAIL not in statuses(run(INIT + ok), "EXT-004")
