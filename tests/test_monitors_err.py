"""Unit tests of the ERR and CLOSE checks of the agent-side monitors, on synthetic transcripts
(tests/monitor_transcripts.py: a broken variant of the reference transcripts must fail its rule and no other)."""

from __future__ import annotations

import pytest

from acp_conformance.rules.findings import FAIL, INFO, PASS, WARN

from monitor_transcripts import (
    A, BASE, C, INIT2, SESSION_NEW, assert_fails, bad, change, msgs, run, statuses, upd,
)


# --- ERR / CLOSE ----------------------------------------------------------------------------------

NOPE22 = '{"jsonrpc":"2.0","id":22,"error":{"code":-32002,"message":"Session not found","data":{"sessionId":"sess_nope"}}}'


@pytest.mark.parametrize("answer, status", [
    ('{"jsonrpc":"2.0","id":22,"result":{"configOptions":[]}}', FAIL),
    ('{"jsonrpc":"2.0","id":22,"error":{"code":-32602,"message":"bad"}}', FAIL),
])
def test_err_001_unknown_session(answer, status):
    findings = run(change(BASE, NOPE22, answer))
    assert_fails(findings, "ERR-001", levels=(status,))


def test_err_001_subordinate_cancels_warn_only():
    base = "\n".join([INIT2, SESSION_NEW])
    tc = C('{"jsonrpc":"2.0","id":30,"method":"tool_call/cancel","params":{"sessionId":"sess_x","toolCallId":"c"}}')
    f1 = run("\n".join([base, tc, A('{"jsonrpc":"2.0","id":30,"error":{"code":-32602,"message":"unknown"}}')]))
    assert statuses(f1, "ERR-001") == [INFO]
    f2 = run("\n".join([base, tc, A('{"jsonrpc":"2.0","id":30,"result":{}}')]))
    assert_fails(f2, "ERR-001", levels=(WARN,))
    assert FAIL not in statuses(f2, "ERR-001")


def test_err_001_not_judged_before_initialize_or_for_known_sessions():
    s = "\n".join([C('{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"sess_nope","prompt":[{"type":"text","text":"hi"}]}}'),
                   A('{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Connection not initialized"}}')])
    assert not statuses(run(s), "ERR-001")
    # a session listed by session/list is known: its success is not an ERR-001 failure
    s = "\n".join([INIT2, C('{"jsonrpc":"2.0","id":5,"method":"session/list","params":{}}'),
                   A('{"jsonrpc":"2.0","id":5,"result":{"sessions":[{"sessionId":"old","cwd":"/x"}]}}'),
                   C('{"jsonrpc":"2.0","id":6,"method":"session/resume","params":{"sessionId":"old","cwd":"/x"}}'),
                   A(upd("old", {"sessionUpdate": "state_update", "state": "idle"})),
                   A('{"jsonrpc":"2.0","id":6,"result":{}}')])
    findings = run(s)
    assert not statuses(findings, "ERR-001") and not bad(findings)


@pytest.mark.parametrize("data", ['null', '{"sessionId":"other"}', '"sess_nope"'])
def test_err_002_data(data):
    findings = run(change(BASE, NOPE22, NOPE22.replace('{"sessionId":"sess_nope"}', data)))
    assert_fails(findings, "ERR-002")


def test_err_004_duplicate_response():
    r = 'A->C {"jsonrpc":"2.0","id":15,"result":{"sessions":[]}}'
    findings = run(change(BASE, r, r + "\n" + r))
    assert_fails(findings, "ERR-004")


def test_err_004_missing_response():
    r = 'A->C {"jsonrpc":"2.0","id":17,"error":{"code":-32601,"message":"Method not found"}}\n'
    findings = run(change(BASE, r, ""))
    assert_fails(findings, "ERR-004")
    assert not statuses(findings, "ERR-004").count(PASS)


def test_err_004_wrong_id_type():
    r = 'A->C {"jsonrpc":"2.0","id":17,"error"'
    findings = run(change(BASE, r, 'A->C {"jsonrpc":"2.0","id":"17","error"'))
    assert_fails(findings, "ERR-004", also=("ERR-008",))  # ERR-008 judges the same retyped id
    m = msgs(findings, "ERR-004", FAIL)
    assert len(m) == 2 and any("no response" in x for x in m) and any('"17"' in x for x in m)


def test_err_004_target_exit():
    s = "\n".join([INIT2, C('{"jsonrpc":"2.0","id":5,"method":"session/list","params":{}}'), "@+1", "@eof", "@exit"])
    findings = run(s)
    assert_fails(findings, "ERR-004")
    assert any("exited" in x or "closed its stdout" in x for x in msgs(findings, "ERR-004", FAIL))


def test_err_004_echoed_invalid_request_id_is_accepted():
    r = 'A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}    # echoing id 19 is also accepted'
    findings = run(change(BASE, r, 'A->C {"jsonrpc":"2.0","id":19,"error":{"code":-32600,"message":"Invalid Request"}}'))
    assert not bad(findings)


def test_close_005():
    r = 'A->C {"jsonrpc":"2.0","id":12,"result":{}}'
    f1 = run(change(BASE, r, 'A->C {"jsonrpc":"2.0","id":12,"error":{"code":-32002,"message":"nf","data":{"sessionId":"sess_nope"}}}'))
    assert statuses(f1, "CLOSE-005") == [PASS]
    assert "tolerated" in msgs(f1, "CLOSE-005")[0]
    assert not bad(f1)
    f2 = run(change(BASE, r, 'A->C {"jsonrpc":"2.0","id":12,"error":{"code":-32603,"message":"boom"}}'))
    # neither success nor -32002: the SHOULD of CLOSE-005 and the MUST of ERR-001 (a missing session is -32002)
    assert_fails(f2, "CLOSE-005", also=("ERR-001",))
    assert FAIL in statuses(f2, "ERR-001")


def test_close_005_already_closed():
    s = "\n".join([INIT2, SESSION_NEW,
                   C('{"jsonrpc":"2.0","id":9,"method":"session/close","params":{"sessionId":"sess_1"}}'),
                   A('{"jsonrpc":"2.0","id":9,"result":{}}'),
                   C('{"jsonrpc":"2.0","id":10,"method":"session/close","params":{"sessionId":"sess_1"}}'),
                   A('{"jsonrpc":"2.0","id":10,"error":{"code":-32603,"message":"no such session"}}')])
    findings = run(s)
    assert_fails(findings, "CLOSE-005", also=("ERR-001",))
    assert "already closed" in msgs(findings, "CLOSE-005", FAIL)[0]
    assert "already closed" in msgs(findings, "ERR-001", FAIL)[0]


# --- session/set_config_option from an agent without config options (issue 11: the alternative agent) ----
def _no_config_agent(with_options: bool) -> str:
    new = ('{"jsonrpc":"2.0","id":1,"result":{"sessionId":"sess_1"%s}}'
           % (',"configOptions":[{"configId":"mode","name":"Mode","type":"select","currentValue":"a","options":[{"value":"a","name":"A"}]}]'
              if with_options else ""))
    missing = '{"jsonrpc":"2.0","id":%d,"error":{"code":-32601,"message":"Method not found"}}'
    return "\n".join([INIT2, C('{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/user/project"}}'), A(new),
                      C('{"jsonrpc":"2.0","id":22,"method":"session/set_config_option","params":{"sessionId":"sess_nope","configId":"mode","type":"id","value":"code"}}'),
                      A(missing % 22),
                      C('{"jsonrpc":"2.0","id":"w-13d","method":"session/set_config_option","params":{"sessionId":"sess_1","type":"id","value":"code"}}'),
                      A(missing.replace("%d", '"w-13d"'))])


def test_set_config_option_missing_without_config_options_is_legal():
    findings = run(_no_config_agent(False))
    assert statuses(findings, "ERR-001") == [INFO]
    assert statuses(findings, "ERR-013") == [INFO]
    assert not bad(findings), [(f.rule, f.status, f.message) for f in findings if f.status in (FAIL, WARN)]


def test_set_config_option_missing_with_config_options_is_still_caught():
    findings = run(_no_config_agent(True))
    assert FAIL in statuses(findings, "ERR-001")
    assert WARN in statuses(findings, "ERR-013")
