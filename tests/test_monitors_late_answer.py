"""CANCEL-007 on synthetic transcripts: a late "allow" to the permission request of cancelled work.

Warned: progress of that tool call, or a running state before the suite asked for more work. Legal:
the agent withdrew the request first; later work the suite asked for; an answer sent before the
cancelled idle (not late: CANCEL-004's case); nothing to judge without a later answered request."""

from __future__ import annotations


from acp_conformance.rules.findings import NOT_TESTED, PASS, WARN
from monitor_transcripts import INIT2, A, C, U, run


def st(state, **kw):
    return U("s1", {"sessionUpdate": "state_update", "state": state, **kw})


def tool(status):
    return U("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": status})


PERMISSION = A({"jsonrpc": "2.0", "id": 0, "method": "session/request_permission", "params": {
    "sessionId": "s1", "subject": {"type": "tool_call", "toolCall": {"toolCallId": "c1"}},
    "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"},
                {"optionId": "no", "name": "Reject", "kind": "reject_once"}]}})
CANCEL = C({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}})
WITHDRAW = A({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 0}})
CANCELLED = st("idle", stopReason="cancelled")
ALLOW = C({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "ok"}}})
REJECT = C({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "no"}}})
LIST = "\n".join([C({"jsonrpc": "2.0", "id": 5, "method": "session/list", "params": {}}),
                  A({"jsonrpc": "2.0", "id": 5, "result": {"sessions": []}})])
PROMPT = "\n".join([C({"jsonrpc": "2.0", "id": 6, "method": "session/prompt",
                       "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]}}),
                    U("s1", {"sessionUpdate": "user_message", "messageId": "u2",
                             "content": [{"type": "text", "text": "hi"}]}),
                    A({"jsonrpc": "2.0", "id": 6, "result": {"messageId": "u2"}}),
                    st("running"), st("idle", stopReason="end_turn")])
START = "\n".join([INIT2, C({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/p"}}),
                   A({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}}),
                   C({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                      "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "edit"}]}}),
                   U("s1", {"sessionUpdate": "user_message", "messageId": "u1",
                            "content": [{"type": "text", "text": "edit"}]}),
                   A({"jsonrpc": "2.0", "id": 2, "result": {"messageId": "u1"}}),
                   st("running"), tool("pending"), PERMISSION, st("requires_action")])


def verdicts(*lines):
    return [(f.status, f.message) for f in run("\n".join([START, *lines])) if f.rule == "CANCEL-007"]


def only(found, status):
    assert found and {s for s, _ in found} == {status}, found


def test_a_late_allow_ignored_passes_whether_or_not_the_request_was_withdrawn():
    only(verdicts(CANCEL, WITHDRAW, tool("cancelled"), CANCELLED, ALLOW, LIST, PROMPT), PASS)
    only(verdicts(CANCEL, tool("cancelled"), CANCELLED, ALLOW, LIST, PROMPT), PASS)


def test_the_tool_call_progressing_after_the_late_allow_warns():
    for late in (tool("in_progress"), tool("completed")):
        found = verdicts(CANCEL, WITHDRAW, tool("cancelled"), CANCELLED, ALLOW, st("running"), late,
                         st("idle", stopReason="end_turn"), LIST, PROMPT)
        only(found, WARN)
        assert "c1" in found[0][1]
    # even when it comes late, during the turn of the next prompt
    only(verdicts(CANCEL, CANCELLED, ALLOW, LIST, PROMPT, tool("completed")), WARN)


def test_a_running_state_before_the_suite_asked_for_more_work_warns():
    found = verdicts(CANCEL, WITHDRAW, CANCELLED, ALLOW, LIST, st("running"), st("idle", stopReason="end_turn"),
                     PROMPT)
    only(found, WARN)
    assert "running" in found[0][1]


def test_work_the_suite_asked_for_afterwards_is_legal():
    only(verdicts(CANCEL, WITHDRAW, CANCELLED, ALLOW, PROMPT), PASS)


def test_an_answer_before_the_cancelled_idle_or_a_reject_is_not_judged_here():
    assert verdicts(CANCEL, ALLOW, tool("cancelled"), CANCELLED, LIST, PROMPT) == []
    assert verdicts(CANCEL, WITHDRAW, CANCELLED, REJECT, LIST, PROMPT) == []
    assert verdicts(ALLOW, tool("completed"), st("idle", stopReason="end_turn"), LIST) == []


def test_nothing_answered_after_the_late_allow_leaves_it_not_tested():
    only(verdicts(CANCEL, WITHDRAW, CANCELLED, ALLOW), NOT_TESTED)


def test_a_running_of_a_prompt_held_behind_the_cancelled_work_is_not_charged_to_the_late_allow():
    held = C({"jsonrpc": "2.0", "id": 7, "method": "session/prompt",
              "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "next"}]}})
    inserted = "\n".join([U("s1", {"sessionUpdate": "user_message", "messageId": "u3",
                                   "content": [{"type": "text", "text": "next"}]}),
                          A({"jsonrpc": "2.0", "id": 7, "result": {"messageId": "u3"}})])
    only(verdicts(held, CANCEL, WITHDRAW, CANCELLED, ALLOW, inserted, st("running"), st("idle", stopReason="end_turn"),
                  LIST), PASS)
