"""Unit tests of the wire monitors (ERR, INIT, TRANSPORT, EXT) on synthetic transcripts, and of the
plugin's protocol-version-1 detection."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_monitors import assert_fails, bad, msgs, run, statuses  # noqa: E402

from acp_conformance.plugin import _negotiated_v1  # noqa: E402
from acp_conformance.rules.findings import FAIL, INFO, PASS, WARN  # noqa: E402
from acp_conformance.wire.transcript import RECEIVED, SENT, Frame  # noqa: E402

INIT = r'''
C->A {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"capabilities":{},"info":{"name":"acp-conformance","version":"0.1.0"}}}
A->C {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"capabilities":{"session":{}},"info":{"name":"minimal-agent","version":"1.0.0"}}}
'''

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

WIRE_RULES = ("ERR-005", "ERR-006", "ERR-007", "ERR-011", "ERR-012", "EXT-001", "EXT-002")


def test_reference_malformed_transcript_passes():
    f = run(MALFORMED)
    assert not bad(f), [(x.rule, x.status, x.message) for x in f if x.status in (FAIL, WARN)]
    for rule in WIRE_RULES:
        assert PASS in statuses(f, rule), rule


def test_reference_batch_transcript_passes():
    f = run(BATCHES)
    assert not bad(f), [(x.rule, x.status, x.message) for x in f if x.status in (FAIL, WARN)]
    for rule in ("TRANSPORT-005", "TRANSPORT-006", "TRANSPORT-007", "TRANSPORT-008", "TRANSPORT-009"):
        assert PASS in statuses(f, rule), rule


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


def test_empty_batch_answered_with_an_array_fails_transport_006():
    f = run(BATCHES.replace('C->A []\nA->C {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}',
                            'C->A []\nA->C [{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}]'))
    assert_fails(f, "TRANSPORT-006")


def test_answered_notification_batch_fails_transport_007():
    f = run(BATCHES.replace('C->A [{"jsonrpc":"2.0","method":"_n1"},{"jsonrpc":"2.0","method":"_n2","params":{}}]',
                            'C->A [{"jsonrpc":"2.0","method":"_n1"},{"jsonrpc":"2.0","method":"_n2","params":{}}]\n'
                            'A->C [{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found"}}]'))
    assert FAIL in statuses(f, "TRANSPORT-007")


def test_dropped_invalid_batch_entry_fails_transport_008():
    f = run(BATCHES.replace(',{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}]', ']'))
    assert_fails(f, "TRANSPORT-008")


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


def test_stdout_framing():
    script = INIT + '@raw {"jsonrpc": "2.0",\n'
    f = run(script)
    assert FAIL in statuses(f, "TRANSPORT-002")
    f = run(INIT + "@raw 42\n")
    assert FAIL in statuses(f, "TRANSPORT-002")
    f = run(INIT)
    assert PASS in statuses(f, "TRANSPORT-002") and PASS in statuses(f, "TRANSPORT-001")


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
    """End to end (one scenario): a v1 agent is reported plainly, in the terminal and in report.json."""
    from suite_run import mutant_cmd, run_suite
    r = run_suite(mutant_cmd("v1-agent"), tmp_path, "-k", "initialize-v2 or wire-utf8")
    assert r.returncode == 1, r.output[-3000:]
    assert "the agent negotiated protocol version 1; v2 rules were not judged" in r.output
    v = r.report["verdict"]
    assert v["conformant"] is False and v["negotiated_version"] == 1 and "v2 rules were not judged" in v["note"]
    assert r.status("INIT-001") == "fail"
    assert not (r.with_status("fail") | r.with_status("warn")) - {"INIT-001"}
