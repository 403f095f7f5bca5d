"""Unit tests of the PROMPT checks of the agent-side monitors, on synthetic transcripts
(tests/monitor_transcripts.py: a broken variant of the reference transcripts must fail its rule and no other)."""

from __future__ import annotations

import pytest

from acp_conformance.rules.findings import FAIL, NOT_TESTED, PASS, WARN

from monitor_transcripts import (
    A, BASE, C, INIT2, LIST_LATER, PROMPT, RESUME_PLAIN, RUNNING, SESSION_NEW, SLICE_MONITORS, UNKNOWN_SESSION,
    assert_fails, bad, base, change, edit, msgs, run, statuses, upd,
)


# --- PROMPT ---------------------------------------------------------------------------------------

R2 = '"id":2,"result":{"messageId":"msg_u1"}'


@pytest.mark.parametrize("result, status", [("{}", FAIL), ('{"messageId":null}', FAIL), ('{"messageId":7}', FAIL),
                                            ("[]", FAIL), ('{"messageId":""}', WARN)])
def test_prompt_001_result_shape(result, status):
    findings = run(change(BASE, R2, '"id":2,"result":' + result))
    # an empty id cannot match the echoed msg_u1: PROMPT-002 fails as well
    assert_fails(findings, "PROMPT-001", levels=(status,), also={"PROMPT-002"} if status == WARN else ())
    assert status in statuses(findings, "PROMPT-001")


def test_prompt_001_error_response_is_not_its_business():
    findings = run(UNKNOWN_SESSION)
    assert statuses(findings, "PROMPT-001") == []


def test_prompt_002_wrong_echo_id():
    s = base(prompt=edit(PROMPT, '"sessionUpdate":"user_message","messageId":"msg_u1"', '"sessionUpdate":"user_message","messageId":"msg_uX"'))
    findings = run(s)
    assert_fails(findings, "PROMPT-002")
    m = msgs(findings, "PROMPT-002", FAIL)
    assert any("no user_message" in x and "msg_u1" in x for x in m)
    assert any("msg_uX" in x for x in m)


def test_prompt_002_missing_echo_without_idle_names_the_wait():
    s = "\n".join([INIT2, SESSION_NEW,
                   C('{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"hi"}]}}'),
                   A('{"jsonrpc":"2.0","id":2,"result":{"messageId":"msg_u1"}}'), A(RUNNING), "@+3", "@exit"])
    findings = run(s)
    assert FAIL in statuses(findings, "PROMPT-002")
    assert any("exited" in x for x in msgs(findings, "PROMPT-012", FAIL))


def test_prompt_002_chunks_and_content_warning():
    s = base(prompt=edit(PROMPT, A('{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"user_message","messageId":"msg_u1","content":[{"type":"text","text":"Say hello"}]}}}').split("    #")[0],
               A(upd("sess_1", {"sessionUpdate": "user_message_chunk", "messageId": "msg_u1", "content": {"type": "text", "text": "Say "}})) + "\n"
               + A(upd("sess_1", {"sessionUpdate": "user_message_chunk", "messageId": "msg_u1", "content": {"type": "text", "text": "hello"}}))))
    assert not bad(run(s))
    s2 = base(prompt=edit(PROMPT, '"messageId":"msg_u1","content":[{"type":"text","text":"Say hello"}]', '"messageId":"msg_u1","content":[{"type":"text","text":"Say goodbye"}]'))
    findings = run(s2)
    assert_fails(findings, "PROMPT-002", levels=(WARN,))
    assert FAIL not in statuses(findings, "PROMPT-002")


def test_prompt_003_error_after_insertion():
    s = change(BASE, '{"jsonrpc":"2.0","id":3,"error"',
               '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"user_message","messageId":"msg_bad"}}}\n'
               'A->C {"jsonrpc":"2.0","id":3,"error"')
    findings = run(s)
    assert_fails(findings, "PROMPT-003")
    assert any("msg_bad" in x for x in msgs(findings, "PROMPT-003", FAIL))


REJECT = 'A->C {"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Unsupported content block type"}}'
LATE_USER = A(upd("sess_1", {"sessionUpdate": "user_message", "messageId": "msg_late"}))


def test_prompt_004_insertion_after_rejection():
    findings = run(change(BASE, REJECT, REJECT + "\n@+0.5\n" + LATE_USER))
    assert_fails(findings, "PROMPT-004")
    assert PASS in statuses(findings, "PROMPT-003")


def test_prompt_004_window():
    # later than rejection_window: not attributed
    findings = run(change(BASE, REJECT, REJECT + "\n@+3\n" + LATE_USER))
    assert FAIL not in statuses(findings, "PROMPT-004")
    findings = run(change(BASE, REJECT, REJECT + "\n@+3\n" + LATE_USER), rejection_window=5.0)
    assert FAIL in statuses(findings, "PROMPT-004")


def _slow_response(delay):
    # prompt id 2: the response only after the idle
    s = change(BASE, 'A->C {"jsonrpc":"2.0","id":2,"result":{"messageId":"msg_u1"}}    # same messageId as the user_message\n', "")
    idle = 'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}}'
    return change(s, idle, f"@+{delay}\n" + idle + '\nA->C {"jsonrpc":"2.0","id":2,"result":{"messageId":"msg_u1"}}')


def test_prompt_005_response_after_long_work_fails():
    findings = run(_slow_response(6))
    assert_fails(findings, "PROMPT-005")
    assert any("waited" in x for x in msgs(findings, "PROMPT-005", FAIL))


def test_prompt_005_response_after_short_work_warns():
    findings = run(_slow_response(0))
    assert_fails(findings, "PROMPT-005", levels=(WARN,))
    assert FAIL not in statuses(findings, "PROMPT-005")
    findings = run(_slow_response(3), insertion_work_threshold=2.0)
    assert FAIL in statuses(findings, "PROMPT-005")


def test_prompt_006_duplicate_message_id():
    s = change(BASE, '"id":4,"result":{"messageId":"msg_u2"}', '"id":4,"result":{"messageId":"msg_u1"}')
    s = change(s, '"sessionUpdate":"user_message","messageId":"msg_u2","content":[{"type":"text","text":"Write a long story"}]}}}    # after',
               '"sessionUpdate":"user_message","messageId":"msg_u1","content":[{"type":"text","text":"Write a long story"}]}}}    # after')
    findings = run(s)
    assert_fails(findings, "PROMPT-006")


def test_prompt_011_no_running():
    s = change(BASE, 'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"running"}}}\n'
                     'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","messageId":"msg_a1"',
               'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","messageId":"msg_a1"')
    findings = run(s)
    assert_fails(findings, "PROMPT-011")
    assert PASS in statuses(findings, "PROMPT-012")


PROMPT_NO_IDLE = "\n".join(PROMPT.strip().splitlines()[:6])


def test_prompt_012_no_idle():
    # ten silent seconds, then other traffic: the work had stopped reporting, and no idle came
    findings = run("\n".join([INIT2, SESSION_NEW, PROMPT_NO_IDLE, "@+10", LIST_LATER]))
    assert_fails(findings, "PROMPT-012")
    assert any("still running" in x for x in msgs(findings, "PROMPT-012", FAIL))
    findings = run("\n".join([INIT2, SESSION_NEW, PROMPT_NO_IDLE, "@+1"]), idle_grace=5.0)
    assert statuses(findings, "PROMPT-012") == [NOT_TESTED]


def test_prompt_012_not_judged_while_the_work_still_reports_progress():
    # a long task still streaming when the connection ends has not ended: there is no idle to owe yet
    chunk = A('{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":'
              '{"sessionUpdate":"agent_message_chunk","messageId":"msg_a9","content":{"type":"text","text":"7 "}}}}')
    findings = run("\n".join([INIT2, SESSION_NEW, PROMPT_NO_IDLE, "@+5", chunk, "@+0.5"]))
    assert statuses(findings, "PROMPT-012") == [NOT_TESTED]
    assert any("still reporting progress" in f.message for f in findings if f.rule == "PROMPT-012")
    # the same update long before the end shows nothing about the end: no idle is a failure
    findings = run("\n".join([INIT2, SESSION_NEW, PROMPT_NO_IDLE, chunk, "@+5", LIST_LATER]))
    assert_fails(findings, "PROMPT-012")


def test_prompt_012_restart_ends_pending_work():
    findings = run("\n".join([INIT2, SESSION_NEW, PROMPT_NO_IDLE, "@+2", "@start", RESUME_PLAIN]))
    assert_fails(findings, "PROMPT-012")
    assert any("restarted" in x for x in msgs(findings, "PROMPT-012", FAIL))
    # the idle on the new connection is a resume snapshot: no PROMPT finding of connection 2 fails
    assert PASS in statuses(findings, "RESUME-004")


@pytest.mark.parametrize("required, status", [(True, FAIL), (False, WARN)])
def test_prompt_013_missing_stop_reason(required, status):
    s = change(BASE, '"state":"idle","stopReason":"end_turn"', '"state":"idle"')
    findings = run(s, stop_reason_required=required)
    assert_fails(findings, "PROMPT-013", levels=(status,))


def test_prompt_013_repeated_idle_is_exempt():
    idle = A(upd("sess_1", {"sessionUpdate": "state_update", "state": "idle"}))
    s = change(BASE, REJECT, REJECT + "\n" + idle)
    assert not bad(run(s))


def test_prompt_overlapping_prompts_are_not_misattributed():
    # two prompts in flight; the second is rejected while the first's user message is echoed
    s = "\n".join([INIT2, SESSION_NEW,
                   C('{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"a"}]}}'),
                   C('{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"b"}]}}'),
                   A(upd("sess_1", {"sessionUpdate": "user_message", "messageId": "m1", "content": [{"type": "text", "text": "a"}]})),
                   A('{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"busy"}}'),
                   A('{"jsonrpc":"2.0","id":2,"result":{"messageId":"m1"}}'),
                   A(RUNNING),
                   A(upd("sess_1", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}))])
    findings = run(s)
    assert not bad(findings), [(f.rule, f.status, f.message) for f in findings if f.status in (FAIL, WARN)]


def test_stray_idle_crossing_the_next_prompt_is_not_its_end():
    # A second idle of earlier work that the agent wrote before it read the next prompt arrives before
    # that prompt's response: it is not the end of the new work (found by a CI run under load).
    stray = upd("sess_1", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"})
    s = "\n".join([INIT2, SESSION_NEW, PROMPT.strip().split("\n# ---")[0],
                   C('{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"again"}]}}'),
                   A(stray),
                   A('{"jsonrpc":"2.0","id":7,"result":{"messageId":"msg_u7"}}'),
                   A(upd("sess_1", {"sessionUpdate": "user_message", "messageId": "msg_u7",
                                    "content": [{"type": "text", "text": "again"}]})),
                   A(RUNNING),
                   A(upd("sess_1", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}))])
    findings = run(s, SLICE_MONITORS)
    assert not bad(findings) & {"PROMPT-005", "PROMPT-011", "PROMPT-012"}, \
        [(f.rule, f.status, f.message) for f in findings if f.status in (FAIL, WARN)]
    # with no running at all, the early idle still ends the work, and PROMPT-011 fails
    findings = run(s.replace(A(RUNNING) + "\n", "", 1), SLICE_MONITORS)
    assert FAIL in statuses(findings, "PROMPT-011")


# --- a prompt that joins running work (issue 11: frames of the alternative reference agent) --------
def _joined(end_with_idle: bool) -> str:
    """A long turn; a second prompt arrives while it runs and is inserted into it at once: its response and
    user message follow straight away, no second running, and the running work's idle (if any) ends both."""
    first = upd("sess_1", {"sessionUpdate": "user_message_chunk", "messageId": "nachricht-ü→1",
                           "content": {"type": "text", "text": "Count slowly to 500, one number per line."}})
    second = upd("sess_1", {"sessionUpdate": "user_message_chunk", "messageId": "nachricht-ü→2",
                            "content": {"type": "text", "text": "Say hello"}})
    reply = upd("sess_1", {"sessionUpdate": "agent_message", "messageId": "antwort-ü→1",
                           "content": [{"type": "text", "text": "1 "}]})
    lines = [INIT2, SESSION_NEW,
             C('{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"Count slowly to 500, one number per line."}]}}'),
             A(RUNNING), A('{"jsonrpc":"2.0","id":2,"result":{"messageId":"nachricht-ü→1"}}'),
             C('{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"Say hello"}]}}'),
             A(first), A(reply), A('{"jsonrpc":"2.0","id":3,"result":{"messageId":"nachricht-ü→2"}}'), A(second),
             "@+3", A(reply)]
    if end_with_idle:
        lines.append(A(upd("sess_1", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})))
    return "\n".join(lines)


@pytest.mark.parametrize("end_with_idle", [True, False])
def test_prompt_joining_running_work_is_not_a_missing_running(end_with_idle):
    findings = run(_joined(end_with_idle), SLICE_MONITORS, idle_grace=1.0)
    assert not bad(findings), [(f.rule, f.status, f.message) for f in findings if f.status in (FAIL, WARN)]
    assert PASS in statuses(findings, "PROMPT-011")


def test_prompt_joined_then_later_updates():
    # after the busy work's idle: a message and a repeated idle snapshot (no work of its own), or real work
    late = "\n".join([A(upd("sess_1", {"sessionUpdate": "agent_message", "messageId": "antwort-ü→2",
                                        "content": [{"type": "text", "text": "hello"}]})),
                      A(upd("sess_1", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}))])
    findings = run(_joined(True) + "\n" + late, SLICE_MONITORS, idle_grace=1.0)
    assert not bad(findings) & {"PROMPT-011"}  # a repeated idle snapshot is not work of its own
    queued = _joined(True) + "\n" + A(RUNNING) + "\n" + late
    findings = run(queued, SLICE_MONITORS, idle_grace=1.0)
    assert not bad(findings), [(f.rule, f.status, f.message) for f in findings if f.status in (FAIL, WARN)]


def test_prompt_answered_after_the_busy_work_still_needs_its_running():
    # held behind the work (answered only after its idle): its own work must be reported running
    s = _joined(True).replace(A('{"jsonrpc":"2.0","id":3,"result":{"messageId":"nachricht-ü→2"}}') + "\n", "")
    s += "\n" + "\n".join([A('{"jsonrpc":"2.0","id":3,"result":{"messageId":"nachricht-ü→2"}}'),
                           A(upd("sess_1", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}))])
    findings = run(s, SLICE_MONITORS, idle_grace=1.0)
    assert FAIL in statuses(findings, "PROMPT-011")
