"""Unit tests of the INIT checks of the agent-side monitors, on synthetic transcripts
(tests/monitor_transcripts.py: a broken variant of the reference transcripts must fail its rule and no other)."""

from __future__ import annotations

import pytest

from acp_conformance.rules.findings import FAIL, INFO, PASS, WARN

from monitor_transcripts import A, C, assert_fails, bad, run, statuses


# --- INIT -----------------------------------------------------------------------------------------

def _init(P, answer):
    return "\n".join([
        C({"jsonrpc": "2.0", "id": 0, "method": "initialize",
           "params": {"protocolVersion": P, "info": {"name": "acp-conformance", "version": "0.1.0"}, "capabilities": {}}}),
        A({"jsonrpc": "2.0", "id": 0, **answer})])


def _ok(v):
    return {"result": {"protocolVersion": v, "capabilities": {"session": {}}, "info": {"name": "a", "version": "1"}}}


def _err(code, data=None):
    return {"error": {"code": code, "message": "x", **({"data": data} if data is not None else {})}}


@pytest.mark.parametrize("P, answer, rule, status, also", [
    (2, _ok(1), "INIT-001", FAIL, ()),
    (3, _err(-32602), "INIT-001", FAIL, ()),
    (65535, _ok(3), "INIT-001", INFO, ()),
    (3, _ok(4), "INIT-002", FAIL, {"INIT-001"}),
    (1, _ok(2), "INIT-002", FAIL, ()),
    (0, _ok(2), "INIT-003", FAIL, {"INIT-002"}),
    (0, _err(-32600), "INIT-003", FAIL, ()),
    (0, _err(-32022, {"requested": 0, "supported": []}), "INIT-003", FAIL, ()),
    (1, _err(-32022, {"requested": 1, "supported": [1, 2]}), "INIT-003", FAIL, ()),
    (1, _err(-32022, {"requested": 1, "supported": [2]}), "INIT-003", PASS, ()),
    (1, _ok(1), "INIT-003", INFO, ()),
])
def test_init(P, answer, rule, status, also):
    findings = run(_init(P, answer))
    assert status in statuses(findings, rule), [(f.rule, f.status, f.message) for f in findings]
    if status in (FAIL, WARN):
        assert_fails(findings, rule, also=also, levels=(status,))
    else:
        assert not bad(findings), [(f.rule, f.status, f.message) for f in findings if f.status in (FAIL, WARN)]


def test_init_repeated_initialize_error_is_not_judged():
    s = _init(2, _ok(2)) + "\n" + _init(2, _err(-32600)).replace('"id":0', '"id":1')
    findings = run(s)
    assert not bad(findings) - {"INIT-006"}  # INIT-001..003 do not judge it; INIT-006 (repeat allowed) does
