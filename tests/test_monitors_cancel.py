"""Unit tests of the CANCEL checks of the agent-side monitors, on synthetic transcripts
(tests/monitor_transcripts.py: a broken variant of the reference transcripts must fail its rule and no other)."""

from __future__ import annotations

from acp_conformance.rules.findings import FAIL, NOT_TESTED, PASS

from monitor_transcripts import (
    A, BASE, C, CANCEL, INIT2, LIST_LATER, PROMPT, SESSION_NEW, assert_fails, bad, change, msgs, run, statuses,
    upd,
)


# --- CANCEL ---------------------------------------------------------------------------------------

CANCELLED_IDLE_1 = ('A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}}}    # never stopReason error, never an error response')


def test_cancel_001_not_cancelled():
    s = change(BASE, CANCELLED_IDLE_1, "@+5\n" + CANCELLED_IDLE_1.replace('"cancelled"', '"end_turn"'))
    findings = run(s)
    assert_fails(findings, "CANCEL-001")
    assert any('"end_turn"' in x for x in msgs(findings, "CANCEL-001", FAIL))


def test_cancel_of_work_that_failed_for_authentication_is_not_judged():
    """claude-agent-acp 0.101.0 without credentials: the turn ends at once with error auth_required (-32000),
    whatever the cancel does; any other error still fails CANCEL-001/002."""
    err = CANCELLED_IDLE_1.replace('"stopReason":"cancelled"}',
                                   '"stopReason":"error","error":{"code":-32000,"message":"Authentication required"}}')
    findings = run(change(BASE, CANCELLED_IDLE_1, err))
    assert FAIL not in statuses(findings, "CANCEL-001") and FAIL not in statuses(findings, "CANCEL-002")
    findings = run(change(BASE, CANCELLED_IDLE_1, err.replace("-32000", "-32603")))
    assert_fails(findings, "CANCEL-001", also=("CANCEL-002",))
    assert_fails(findings, "CANCEL-002", also=("CANCEL-001",))


def test_cancel_001_race_is_inconclusive():
    # one end_turn right after the cancel (within cancel_race, 0.5 s by default) is inconclusive ...
    s = change(BASE, CANCELLED_IDLE_1, CANCELLED_IDLE_1.replace('"cancelled"', '"end_turn"'))
    findings = run(s)
    assert NOT_TESTED in statuses(findings, "CANCEL-001")
    assert not bad(findings)
    assert FAIL in statuses(run(s, cancel_race=0.0), "CANCEL-001")
    # ... but two such punctual "natural" ends in one test are not a coincidence
    second = ('A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"cancelled"}}}\n'
              'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}}}')
    s2 = change(s, second, second.replace('"stopReason":"cancelled"', '"stopReason":"end_turn"'))
    assert_fails(run(s2), "CANCEL-001")


def test_cancel_001_work_ended_before_cancel():
    s = "\n".join([INIT2, SESSION_NEW, PROMPT.strip().splitlines()[0], *PROMPT.strip().splitlines()[1:7],
                   C('{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess_1"}}')])
    findings = run(s)
    m = msgs(findings, "CANCEL-001", NOT_TESTED)
    assert m and "use a longer --acp-long-prompt" in m[0]
    assert not bad(findings)


def test_cancel_001_no_idle_after_cancel():
    lines = CANCEL.strip().splitlines()
    # an earlier prompt of the session ended with idle: the missing idle after the cancel is CANCEL-001's
    s = "\n".join([INIT2, SESSION_NEW, PROMPT, *lines[:7], "@+4", LIST_LATER])
    findings = run(s)
    assert_fails(findings, "CANCEL-001", also={"PROMPT-012"})
    assert any("waited" in x for x in msgs(findings, "CANCEL-001", FAIL))
    # an agent that never reports idle at all: that is PROMPT-012's failure, the cancel is not judged
    findings = run("\n".join([INIT2, SESSION_NEW, *lines[:7], "@+4", LIST_LATER]))
    assert_fails(findings, "PROMPT-012")
    assert statuses(findings, "CANCEL-001") == [NOT_TESTED]


def test_cancel_001_idle_without_stop_reason_is_prompt_013s():
    bare = CANCELLED_IDLE_1.replace(',"stopReason":"cancelled"', "")
    findings = run(change(BASE, CANCELLED_IDLE_1, bare))
    assert_fails(findings, "PROMPT-013")
    assert NOT_TESTED in statuses(findings, "CANCEL-001")


def test_cancel_002_error_idle_between():
    err = CANCELLED_IDLE_1.replace('"cancelled"', '"error"').split("    #")[0]
    findings = run(change(BASE, CANCELLED_IDLE_1, err + "\n" + CANCELLED_IDLE_1))
    assert_fails(findings, "CANCEL-002")
    assert PASS in statuses(findings, "CANCEL-001")


def test_cancel_002_work_ends_with_error():
    err = CANCELLED_IDLE_1.replace('"cancelled"', '"error"').split("    #")[0]
    findings = run(change(BASE, CANCELLED_IDLE_1, err))
    assert_fails(findings, "CANCEL-002", also={"CANCEL-001"})


def test_cancel_002_error_response_after_cancel():
    # prompt 5: the user message is echoed, then after the cancel the prompt gets an error
    s = change(BASE, 'A->C {"jsonrpc":"2.0","id":5,"result":{"messageId":"msg_u3"}}\n', "")
    s = change(s, 'A->C {"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":0}}',
               'A->C {"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"aborted"}}\n'
               'A->C {"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":0}}')
    findings = run(s)
    assert_fails(findings, "CANCEL-002", also={"PROMPT-003"})


def test_cancel_003_update_after_cancelled_idle():
    late = A(upd("sess_1", {"sessionUpdate": "agent_message_chunk", "messageId": "msg_a2", "content": {"type": "text", "text": "!"}}))
    findings = run(change(BASE, CANCELLED_IDLE_1, CANCELLED_IDLE_1 + "\n" + late))
    assert_fails(findings, "CANCEL-003")
    assert any("msg_a2" in x for x in msgs(findings, "CANCEL-003", FAIL))


def test_cancel_003_background_tool_call_is_exempt():
    last_idle = 'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}}}\n'
    s = change(BASE, 'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"cancelled"}}}\n' + last_idle,
               A(upd("sess_1", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled",
                                "background": [{"type": "tool_call", "toolCallId": "call_1"}]})) + "\n"
               + A(upd("sess_1", {"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "completed"})) + "\n")
    findings = run(s)
    assert FAIL not in statuses(findings, "CANCEL-003")
    s2 = s.replace('"background":[{"type":"tool_call","toolCallId":"call_1"}]', '"background":[]')
    assert FAIL in statuses(run(s2), "CANCEL-003")


def test_cancel_of_idle_session_is_not_judged():
    s = "\n".join([INIT2, SESSION_NEW, C('{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess_1"}}')])
    findings = run(s)
    # nothing to judge: at most a not-tested note that says what would exercise the rule
    assert not [f for f in findings if f.rule.startswith("CANCEL") and f.status != NOT_TESTED]
    assert any(f.rule == "CANCEL-010" for f in findings)


def _held_prompts_then_cancel(answer_claims_it: bool) -> str:
    """Prompt 10 runs; 11 and 12 are written while it runs (held). The agent ends 10, inserts a user message,
    and then either answers 11 with that message id (the message is 11's) or does not (it may be 12's). A cancel
    follows, and 12 (with 13) is answered -32800."""
    def st(state, **kw):
        return A(upd("sess_1", {"sessionUpdate": "state_update", "state": state, **kw}))

    def user(mid):
        return A(upd("sess_1", {"sessionUpdate": "user_message", "messageId": mid,
                                "content": [{"type": "text", "text": "hi"}]}))

    def prompt(i):
        return C({"jsonrpc": "2.0", "id": i, "method": "session/prompt",
                  "params": {"sessionId": "sess_1", "prompt": [{"type": "text", "text": "hi"}]}})

    lines = [INIT2, SESSION_NEW, prompt(10), user("msg_u10"),
             A({"jsonrpc": "2.0", "id": 10, "result": {"messageId": "msg_u10"}}), st("running"),
             prompt(11), prompt(12), st("idle", stopReason="end_turn"), user("msg_u11")]
    if answer_claims_it:
        lines.append(A({"jsonrpc": "2.0", "id": 11, "result": {"messageId": "msg_u11"}}))
    lines += [st("running"), prompt(13), C({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "sess_1"}})]
    if not answer_claims_it:
        lines.append(A({"jsonrpc": "2.0", "id": 11, "error": {"code": -32800, "message": "Request cancelled"}}))
    lines += [A({"jsonrpc": "2.0", "id": 12, "error": {"code": -32800, "message": "Request cancelled"}}),
              A({"jsonrpc": "2.0", "id": 13, "error": {"code": -32800, "message": "Request cancelled"}}),
              st("idle", stopReason="cancelled")]
    return "\n".join(lines)


def test_cancel_002_a_user_message_another_prompt_was_answered_with_is_not_a_held_prompts():
    """The user message inserted for prompt 11 (its response carries that messageId) does not make prompt 12,
    held behind it and refused -32800 after the cancel, an inserted prompt (found by fuzzing a 20-40 ms agent)."""
    findings = run(_held_prompts_then_cancel(answer_claims_it=True))
    assert FAIL not in statuses(findings, "CANCEL-002"), msgs(findings, "CANCEL-002", FAIL)


def test_cancel_002_an_unclaimed_user_message_with_two_prompts_pending_is_only_noted():
    # msg_u11 may be prompt 11's or prompt 12's: both were pending when it came, and both were refused
    findings = run(_held_prompts_then_cancel(answer_claims_it=False))
    assert FAIL not in statuses(findings, "CANCEL-002"), msgs(findings, "CANCEL-002", FAIL)
    assert any("may" in m for m in msgs(findings, "CANCEL-002", "info"))
