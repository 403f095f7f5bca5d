"""Unit tests of the wire monitors on malformed input: how answers to malformed lines are paired (by id,
by echoed content, by order only when unambiguous), and malformed or overlapping initialize requests."""

from __future__ import annotations

import pytest

from acp_conformance.rules.findings import FAIL, INFO, PASS, WARN
from acp_conformance.wire.transcript import SENT

from monitor_transcripts import INIT, assert_fails, bad, run, statuses


# --- answers to malformed lines: paired by id, by echoed content, by order only when unambiguous -----
# (wire-malformed-input against the agents on the official SDKs)

ERR_MALFORMED = ("ERR-006", "ERR-007", "ERR-009")
PROBE_N = iter(range(100, 1000))


def _probe():
    """A liveness request (session/list) and its answer: it closes the answer window of the lines before it."""
    n = next(PROBE_N)
    return (f'C->A {{"jsonrpc":"2.0","id":{n},"method":"session/list","params":{{}}}}\n'
            f'A->C {{"jsonrpc":"2.0","id":{n},"result":{{"sessions":[]}}}}\n')


W6 = 'C->A {"jsonrpc":"2.0","id":"w-6","method":"session/list",\n'
W7A = 'C->A {"jsonrpc":"2.0","id":"w-7a"}\n'
FOO = 'C->A {"foo":1}\n'
W7C = 'C->A {"jsonrpc":"1.0","id":"w-7c","method":"session/list"}\n'
N42 = 'C->A 42\n'
STR = 'C->A "str"\n'
NULLID = 'C->A {"jsonrpc":"2.0","id":null,"method":"session/list","params":{}}\n'
PARSE_ERR = 'A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n'


def _ts_invalid(data):
    """The TypeScript SDK's -32600: id null, the invalid message in error.data."""
    import json
    return 'A->C ' + json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid request",
                                                                           "data": data}}, separators=(",", ":")) + "\n"


TS_NULLID = 'A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: ACP v2 request IDs must be strings or integers"}}\n'
PY_W7C = 'A->C {"jsonrpc":"2.0","id":"w-7c","error":{"code":-32602,"message":"Invalid params"}}\n'
PY_NULLID = 'A->C {"jsonrpc":"2.0","id":null,"result":{"sessions":[]}}\n'


def _mine(findings, rule, status=None):
    return [f for f in findings if f.rule == rule and (status is None or f.status == status)]


def test_ts_sdk_unanswered_line_does_not_shift_the_pairing_with_probes():
    # the TypeScript SDK takes {"jsonrpc":"2.0","id":"w-7a"} for a response to nothing and answers nothing
    script = INIT + W6 + PARSE_ERR + _probe() + W7A + _probe() + FOO + _ts_invalid({"foo": 1}) + _probe() \
        + W7C + _ts_invalid({"jsonrpc": "1.0", "id": "w-7c", "method": "session/list"}) + _probe() \
        + N42 + _ts_invalid(42) + _probe() + STR + _ts_invalid("str") + _probe() + NULLID + TS_NULLID + _probe()
    f = run(script)
    # a line with an id and no method reads as a malformed response too, and responses are not answered: silence
    # on it is noted, never failed (it was the one failure of codex-acp, issue 25)
    w7a = [x for x in _mine(f, "ERR-007") if "w-7a" in x.message]
    assert [x.status for x in w7a] == [INFO] and "reads as a malformed response" in w7a[0].message, w7a
    assert not any("w-7a" in x.message for x in _mine(f, "ERR-007", PASS))  # before: passed on foo's -32600
    assert PASS in statuses(f, "ERR-009") and PASS in statuses(f, "ERR-006")  # before: ERR-009 not-tested
    assert not bad(f), [(x.rule, x.message) for x in f if x.status in (FAIL, WARN)]


def test_ts_sdk_without_probes_pairs_by_echoed_content_and_never_guesses():
    # the old scenario (a settle only between lines): the echoed error.data still pairs the answers, and the
    # id-null answer of the id-null request, which could also be w-7a's, is paired with neither
    script = INIT + W6 + PARSE_ERR + _probe() + W7A + FOO + _ts_invalid({"foo": 1}) \
        + W7C + _ts_invalid({"jsonrpc": "1.0", "id": "w-7c", "method": "session/list"}) \
        + N42 + _ts_invalid(42) + STR + _ts_invalid("str") + NULLID + TS_NULLID + _probe()
    f = run(script)
    assert not bad(f), [(x.rule, x.status, x.message) for x in f if x.status in (FAIL, WARN)]
    w7a = [x for x in _mine(f, "ERR-007") if "w-7a" in x.message]
    assert w7a and all(x.status == INFO for x in w7a), [(x.status, x.message) for x in w7a]
    assert any('"foo' in x.message for x in _mine(f, "ERR-007", PASS))
    assert statuses(f, "ERR-009") == [INFO]


def test_python_sdk_answer_with_an_echoed_id_is_paired_by_id():
    # the Python SDK drops w-6, w-7a, {"foo":1}, 42 and "str", runs the jsonrpc-1.0 line (-32602, id w-7c)
    # and the id-null request (a result with id null). Before: w-6 got w-7c's -32602 (FIFO).
    script = INIT + W6 + _probe() + W7A + FOO + W7C + PY_W7C + N42 + STR + NULLID + PY_NULLID + _probe()
    f = run(script)
    err6 = _mine(f, "ERR-006")
    assert [x.status for x in err6] == [FAIL] and "-32602" not in err6[0].message, [x.message for x in err6]
    w7c = [x for x in _mine(f, "ERR-007") if "w-7c" in x.message]
    assert [x.status for x in w7c] == [FAIL] and "-32602 instead of -32600" in w7c[0].message
    # the id-null result could be any of five lines' answer: none of them is judged on it
    others = [x for x in _mine(f, "ERR-007") if "w-7c" not in x.message]
    assert len(others) == 4 and all(x.status == INFO for x in others), [(x.status, x.message) for x in others]
    assert statuses(f, "ERR-009") == [INFO]
    # with a liveness request after each line every verdict is decidable
    script = INIT + W6 + _probe() + W7A + _probe() + FOO + _probe() + W7C + PY_W7C + _probe() + N42 + _probe() \
        + STR + _probe() + NULLID + PY_NULLID + _probe()
    f = run(script)
    err7 = _mine(f, "ERR-007")
    assert [x.status for x in err7] == [INFO] + [FAIL] * 4 and "w-7a" in err7[0].message  # w-7a: no answer owed
    assert statuses(f, "ERR-009") == [INFO] and "without an error object" in _mine(f, "ERR-009")[0].message


def test_late_id_null_answer_after_the_window_closed_is_not_guessed():
    # w-7a's window closes unanswered (the probe after it is answered), then an id-null -32600 arrives when no
    # line is open: it may be w-7a's late answer, so w-7a is neither failed nor passed, and the notification
    # written just before it is not blamed either
    note = 'C->A {"jsonrpc":"2.0","method":"_conformance/unknown_notification","params":{}}\n'
    script = INIT + W7A + _probe() + note + _ts_invalid(None).replace(',"data":null', '') + _probe()
    f = run(script)
    assert statuses(f, "ERR-007") == [INFO]
    assert FAIL not in statuses(f, "ERR-011") and PASS not in statuses(f, "ERR-011")
    assert not bad(f), [(x.rule, x.status, x.message) for x in f if x.status in (FAIL, WARN)]
    # without the unanswered line the same answer is the notification's (ERR-011 still fails)
    f = run(INIT + _probe() + note + _ts_invalid(None).replace(',"data":null', '') + _probe())
    assert FAIL in statuses(f, "ERR-011")


def test_nan_and_infinity_are_not_json():
    # Python's json reads NaN, Infinity and -Infinity; JSON has none of them: such a line is owed a parse
    # error (-32700, ERR-006), not the -32600 of a JSON value that is not a request (ERR-007)
    from acp_conformance.wire.transcript import parse_line
    for raw in (b"NaN", b'{"jsonrpc":"2.0","id":1,"method":"session/list","params":{"n":-Infinity}}', b"[Infinity]"):
        assert parse_line(raw)[0] is None and "not valid JSON" in parse_line(raw)[1], raw
    for line in ("NaN", '{"jsonrpc":"2.0","id":Infinity,"method":"session/list","params":{}}'):
        f = run(INIT + f"C->A {line}\n" + PARSE_ERR + _probe())
        assert statuses(f, "ERR-006") == [PASS] and not _mine(f, "ERR-007"), line
        assert not bad(f), [(x.rule, x.status, x.message) for x in f if x.status in (FAIL, WARN)]
        f = run(INIT + f"C->A {line}\n" + _ts_invalid(None).replace(',"data":null', '') + _probe())
        assert statuses(f, "ERR-006") == [FAIL], line
    # a JSON value that is not a request answered with a parse error still fails ERR-007
    f = run(INIT + FOO + PARSE_ERR + _probe())
    assert statuses(f, "ERR-007") == [FAIL]


# --- initialize: an accepted malformed initialize, and repeats that overlap ------------------------

def _init_req(rid, params):
    """``rid`` as JSON text (like the answers below): '"w-i11a"' or 0."""
    import json
    return "C->A " + json.dumps({"jsonrpc": "2.0", "id": json.loads(str(rid)), "method": "initialize",
                                 "params": params}, separators=(",", ":")) + "\n"


def _init_ok(rid):
    return ('A->C {"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":2,"capabilities":{"session":{}},'
            '"info":{"name":"minimal-agent","version":"1.0.0"}}}\n' % rid)


def _init_err(rid, code, message="x"):
    return 'A->C {"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"%s"}}\n' % (rid, code, message)


INFO_ = {"name": "acp-conformance", "version": "0.1.0"}
I11A = _init_req('"w-i11a"', {})
I11B = _init_req('"w-i11b"', {"protocolVersion": "2", "info": INFO_})
I11C = _init_req('"w-i11c"', {"protocolVersion": 2})
I11D = _init_req('"w-i11d"', {"protocolVersion": 70000, "info": INFO_})
I0 = _init_req(0, {"protocolVersion": 2, "capabilities": {}, "info": INFO_})


@pytest.mark.parametrize("pipelined", [True, False])
def test_coerced_string_version_is_not_a_failed_initialize(pipelined):
    # the Python SDK turns protocolVersion "2" into 2: w-i11b succeeds and initializes the connection, so the
    # corrected initialize at the end is a repeat and is refused (-32600, "may only be initialized once")
    answers = [_init_err('"w-i11a"', -32602), _init_ok('"w-i11b"'), _init_err('"w-i11c"', -32602),
               _init_err('"w-i11d"', -32602), _init_err(0, -32600, "ACP v2 connections may only be initialized once")]
    reqs = [I11A, I11B, I11C, I11D, I0]
    script = "".join(reqs + answers) if pipelined else "".join(r + a for r, a in zip(reqs, answers))
    f = run(script)
    assert WARN not in statuses(f, "INIT-004") and INFO in statuses(f, "INIT-004")  # before: warned
    assert "accepted" in _mine(f, "INIT-004", INFO)[0].message
    assert [x for x in _mine(f, "INIT-011", WARN) if "w-i11b" in x.message]  # the acceptance is INIT-011's
    assert FAIL not in statuses(f, "INIT-006")
    assert bad(f) <= {"INIT-011"}, [(x.rule, x.status, x.message) for x in f if x.status in (FAIL, WARN)]


def test_failed_initialize_then_refused_corrected_one_still_warns():
    f = run(I11A + _init_err('"w-i11a"', -32602) + I0 + _init_err(0, -32600))
    assert WARN in statuses(f, "INIT-004")
    # ... but not when the corrected one was written before the failure was answered
    f = run(I11A + I0 + _init_err('"w-i11a"', -32602) + _init_err(0, -32600, "initialize is already in progress"))
    assert WARN not in statuses(f, "INIT-004") and PASS not in statuses(f, "INIT-004")


def test_repeat_overlapping_an_initialize_in_progress_is_informational():
    # the TypeScript SDK refuses an initialize that arrives while an earlier one is still being handled
    i9a = _init_req('"w-i9a"', {"protocolVersion": 2, "capabilities": {"elicitation": "yes"}, "info": INFO_})
    i9b = _init_req('"w-i9b"', {"protocolVersion": 2, "capabilities": {"auth": []}, "info": INFO_})
    i7 = _init_req('"w-i7"', {"protocolVersion": 2, "info": INFO_})
    busy = "ACP v2 initialize is already in progress"
    script = INIT + i9a + i9b + i7 + _init_err('"w-i9b"', -32600, busy) + _init_err('"w-i7"', -32600, busy) \
        + _init_ok('"w-i9a"')
    f = run(script)
    assert FAIL not in statuses(f, "INIT-006"), [x.message for x in _mine(f, "INIT-006")]  # before: two failures
    assert len(_mine(f, "INIT-006", INFO)) == 2 and PASS in statuses(f, "INIT-006")
    assert WARN not in statuses(f, "INIT-009") and INFO in statuses(f, "INIT-009")  # the {auth: []} probe
    assert not bad(f), [(x.rule, x.status, x.message) for x in f if x.status in (FAIL, WARN)]
    # the same repeats, each written after the previous answer and refused, still fail
    script = INIT + i9a + _init_ok('"w-i9a"') + i9b + _init_err('"w-i9b"', -32600) + i7 + _init_err('"w-i7"', -32600)
    f = run(script)
    assert len(_mine(f, "INIT-006", FAIL)) == 2


def test_err_004_a_lenient_answer_to_a_line_that_is_not_strict_json_is_not_a_stray():
    # a byte order mark before the JSON: the suite cannot read the line as written, the agent did and
    # answered it with the id it carries; the spec says nothing of such lines, so that is noted only
    bom = INIT + 'C->A \ufeff{"jsonrpc":"2.0","id":55,"method":"session/list","params":{}}\n' \
        + 'A->C {"jsonrpc":"2.0","id":55,"result":{"sessions":[]}}\n'
    f = run(bom)
    assert FAIL not in statuses(f, "ERR-004")
    assert INFO in statuses(f, "ERR-004")
    # an id that no line of the suite carried is still a stray answer
    assert_fails(run(bom.replace('"id":55,"result"', '"id":56,"result"')), "ERR-004", also=("ERR-006",))


def test_err_006_json_in_bad_utf8_or_after_a_bom_may_be_read_leniently():
    from monitor_transcripts import Player

    def played(line: bytes, answer: str | None):
        p = Player().play(INIT)
        p._add(SENT, line, None)
        if answer is not None:
            p.received(answer)
        return p.finish()

    served = '{"jsonrpc":"2.0","id":7,"result":{"sessions":[]}}'
    bad_utf8 = b'{"jsonrpc":"2.0","id":7,"method":"session/list","params":{"cwd":"\xff\xfe"}}'
    bom = "\ufeff".encode() + b'{"jsonrpc":"2.0","id":7,"method":"session/list","params":{}}'
    for line in (bad_utf8, bom):
        f = played(line, served)
        assert FAIL not in statuses(f, "ERR-006") and INFO in statuses(f, "ERR-006"), line
        parse_error = '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}'
        assert PASS in statuses(played(line, parse_error), "ERR-006"), line
    # a line that is not JSON however it is read is still owed -32700
    assert FAIL in statuses(played(b'{"jsonrpc":"2.0","id":7,', None), "ERR-006")


def test_err_004_a_lenient_answer_carries_a_non_ascii_id_as_the_line_wrote_it():
    # the line holds the id's characters as they are (UTF-8), not as \u escapes
    bom = INIT + 'C->A \ufeff{"jsonrpc":"2.0","id":"\u00bb<","method":"session/list","params":{}}\n' \
        + 'A->C {"jsonrpc":"2.0","id":"\\u00bb<","result":{"sessions":[]}}\n'
    f = run(bom)
    assert FAIL not in statuses(f, "ERR-004") and INFO in statuses(f, "ERR-004")


def test_unknown_session_answered_auth_required_is_not_an_err_001_failure():
    """codex-acp 2.6.0 without credentials answers session/resume of any session -32000: the auth gate comes
    before the lookup (legal), so ERR-001 is not judged; -32603 (claude-agent-acp 0.101.0) still fails."""
    resume = ('C->A {"jsonrpc":"2.0","id":3,"method":"session/resume","params":{"sessionId":"sess_never","cwd":"/tmp"}}\n'
              'A->C {"jsonrpc":"2.0","id":3,"error":{"code":%d,"message":"x"}}\n')
    f = run(INIT + resume % -32000)
    assert FAIL not in statuses(f, "ERR-001") and "info" in statuses(f, "ERR-001")
    f = run(INIT + resume % -32603)
    assert FAIL in statuses(f, "ERR-001")


def test_v1_auth_methods_of_a_v1_answer_are_not_judged_against_v2():
    v1 = r'''C->A {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"capabilities":{},"info":{"name":"c","version":"1"}}}
A->C {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{},"authMethods":[{"id":"api-key","name":"API key"}]}}
'''
    assert FAIL not in statuses(run(v1), "AUTH-003")
    v2 = v1.replace('"protocolVersion":1,"agentCapabilities"', '"protocolVersion":2,"info":{"name":"a","version":"1"},"capabilities"')
    v2 = v2.replace('"protocolVersion":1,"capabilities"', '"protocolVersion":2,"capabilities"')
    assert FAIL in statuses(run(v2), "AUTH-003")


def test_a_v1_answer_is_not_validated_against_the_v2_schema():
    v1 = r'''C->A {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"capabilities":{},"info":{"name":"c","version":"1"}}}
A->C {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{},"agentInfo":{"name":"a","version":"1"}}}
'''
    assert FAIL not in statuses(run(v1), "SCHEMA-001")
    v2 = run(v1.replace('"result":{"protocolVersion":1', '"result":{"protocolVersion":2'))
    assert FAIL in statuses(v2, "SCHEMA-001") + statuses(v2, "INIT-005")  # one defect, one verdict


def test_an_id_without_method_answered_or_not_is_never_failed_but_a_foo_object_is():
    # answering {"jsonrpc":"2.0","id":"w-7a"} with -32600 passes; silence is noted; {"foo":1} still owes -32600
    answered = INIT + W7A + 'A->C {"jsonrpc":"2.0","id":"w-7a","error":{"code":-32600,"message":"Invalid request"}}\n' \
        + _probe() + FOO + _probe()
    f = run(answered)
    assert [x.status for x in _mine(f, "ERR-007") if "w-7a" in x.message] == [PASS]
    assert [x.status for x in _mine(f, "ERR-007") if "foo" in x.message] == [FAIL]
