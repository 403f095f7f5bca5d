"""Unit tests of the lifecycle monitors (CLOSE, STATE, RESUME, CANCEL around held prompts and
permissions, prompt content blocks) on synthetic transcripts: a correct transcript passes every
lifecycle rule, each broken variant fails its rule and no other."""

from __future__ import annotations

import json
from pathlib import Path

from acp_conformance.rules.findings import FAIL, INFO, NOT_TESTED, PASS, WARN
from acp_conformance.rules.monitors import RULES_CHECKED
from monitor_transcripts import INIT2, A, C, U, bad, change, run, statuses

LIFECYCLE = {r for r, cls in RULES_CHECKED.items()
             if cls in ("CloseLifecycleMonitor", "StateLifecycleMonitor", "ResumeLifecycleMonitor",
                        "CancelLifecycleMonitor", "PromptBlocksMonitor")}


def req(i, method, params):
    return C({"jsonrpc": "2.0", "id": i, "method": method, "params": params})


def ok(i, result):
    return A({"jsonrpc": "2.0", "id": i, "result": result})


def err(i, code, message="x"):
    return A({"jsonrpc": "2.0", "id": i, "error": {"code": code, "message": message}})


def st(sid, state, **kw):
    return U(sid, {"sessionUpdate": "state_update", "state": state, **kw})


def user(sid, mid, text):
    return U(sid, {"sessionUpdate": "user_message", "messageId": mid, "content": [{"type": "text", "text": text}]})


def prompt(i, sid, text=None, blocks=None):
    return req(i, "session/prompt", {"sessionId": sid, "prompt": blocks or [{"type": "text", "text": text}]})


def chunk(sid, mid, text):
    return U(sid, {"sessionUpdate": "agent_message_chunk", "messageId": mid, "content": {"type": "text", "text": text}})


NEW = "\n".join([req(1, "session/new", {"cwd": "/p"}), ok(1, {"sessionId": "s1"}),
                 req(2, "session/new", {"cwd": "/p"}), ok(2, {"sessionId": "s2"})])

# a prompt, a long turn cancelled with a held prompt, a cancel of the idle session, a prompt after it
CANCEL = "\n".join([
    prompt(3, "s1", "hello"), user("s1", "u1", "hello"), ok(3, {"messageId": "u1"}), st("s1", "running"),
    prompt(13, "s1", "next"),
    chunk("s1", "a1", "hi"), st("s1", "idle", stopReason="end_turn"),
    user("s1", "u13", "next"), ok(13, {"messageId": "u13"}), st("s1", "running"), st("s1", "idle", stopReason="end_turn"),
    prompt(4, "s1", "long"), user("s1", "u2", "long"), ok(4, {"messageId": "u2"}), st("s1", "running"),
    chunk("s1", "a2", "1 "),
    prompt(5, "s1", "held"),
    C({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}}),
    err(5, -32800, "Request cancelled"),
    st("s1", "idle", stopReason="cancelled"),
    prompt(6, "s1", "again"), user("s1", "u3", "again"), ok(6, {"messageId": "u3"}), st("s1", "running"),
    st("s1", "idle", stopReason="end_turn"),
    C({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}}),
    prompt(7, "s1", blocks=[{"type": "text", "text": "see"}, {"type": "resource_link", "uri": "file:///x", "name": "x"}]),
    user("s1", "u4", "see"), ok(7, {"messageId": "u4"}), st("s1", "running"), st("s1", "idle", stopReason="end_turn"),
    prompt(8, "s1", blocks=[{"type": "_conformance/unknown_block"}]), err(8, -32602),
    prompt(9, "s1", "fail"), user("s1", "u5", "fail"), ok(9, {"messageId": "u5"}), st("s1", "running"),
    st("s1", "idle", stopReason="error", error={"code": -32603, "message": "boom"}),
    req(10, "session/list", {}), ok(10, {"sessions": []}),
    C({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 10}}),
    req(11, "session/list", {}), ok(11, {"sessions": []}),
    req(12, "session/list", {}),
    C({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 12}}),
    err(12, -32800, "Request cancelled"),
])

# a permission: allowed (requires_action, running again), then withheld and cancelled
PERMISSION = "\n".join([
    prompt(20, "s2", "edit"), user("s2", "u20", "edit"), ok(20, {"messageId": "u20"}), st("s2", "running"),
    U("s2", {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "Edit", "kind": "edit", "status": "pending"}),
    A({"jsonrpc": "2.0", "id": 0, "method": "session/request_permission", "params": {
        "sessionId": "s2", "title": "Edit?", "subject": {"type": "tool_call", "toolCall": {"toolCallId": "c1"}},
        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}}),
    st("s2", "requires_action"),
    C({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}),
    st("s2", "running"),
    U("s2", {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"}),
    st("s2", "idle", stopReason="end_turn"),
    prompt(21, "s2", "edit"), user("s2", "u21", "edit"), ok(21, {"messageId": "u21"}), st("s2", "running"),
    U("s2", {"sessionUpdate": "tool_call_update", "toolCallId": "c2", "title": "Edit", "kind": "edit", "status": "pending"}),
    A({"jsonrpc": "2.0", "id": 1, "method": "session/request_permission", "params": {
        "sessionId": "s2", "title": "Edit?", "subject": {"type": "tool_call", "toolCall": {"toolCallId": "c2"}},
        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]}}),
    st("s2", "requires_action"),
    C({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s2"}}),
    A({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 1}}),
    U("s2", {"sessionUpdate": "tool_call_update", "toolCallId": "c2", "status": "cancelled"}),
    st("s2", "idle", stopReason="cancelled"),
])

# close an idle session; close a running one with a held prompt
CLOSE = "\n".join([
    req(30, "session/close", {"sessionId": "s2"}), ok(30, {}),
    req(31, "session/new", {"cwd": "/p"}), ok(31, {"sessionId": "s3"}),
    prompt(32, "s3", "long"), user("s3", "u30", "long"), ok(32, {"messageId": "u30"}), st("s3", "running"),
    prompt(33, "s3", "held"),
    req(34, "session/close", {"sessionId": "s3"}),
    err(33, -32800, "Request cancelled"),
    st("s3", "idle", stopReason="cancelled"),
    ok(34, {}),
])

RESUME = "\n".join([
    "@start", INIT2,
    req(40, "session/resume", {"sessionId": "s1", "cwd": "/p", "replayFrom": {"type": "_x/cursor"}}), err(40, -32602),
    req(41, "session/resume", {"sessionId": "s1", "cwd": "/p", "replayFrom": {"type": "start"}}),
    user("s1", "u1", "hello"), U("s1", {"sessionUpdate": "agent_message", "messageId": "a1",
                                        "content": [{"type": "text", "text": "hi"}]}),
    U("s1", {"sessionUpdate": "replay_complete"}), st("s1", "idle"), ok(41, {"configOptions": []}),
    "@start", INIT2,
    req(42, "session/resume", {"sessionId": "s1", "cwd": "/p"}), st("s1", "idle"), ok(42, {}),
])

BLOCKS = dict(init=INIT2, new=NEW, cancel=CANCEL, permission=PERMISSION, close=CLOSE, resume=RESUME)


def script(**over):
    return "\n".join({**BLOCKS, **over}.values())


BASE = script()


def test_correct_transcript_passes_every_lifecycle_rule():
    findings = run(BASE)
    problems = [(f.rule, f.status, f.message) for f in findings
                if f.rule in LIFECYCLE and f.status in (FAIL, WARN, NOT_TESTED)]
    assert not problems, problems
    passed = {f.rule for f in findings if f.status == PASS}
    assert not LIFECYCLE - passed, sorted(LIFECYCLE - passed)


def mine(findings):
    return [f for f in findings if f.rule in LIFECYCLE]


def fails(s, rule, levels=(FAIL,)):
    findings = mine(run(s))
    got = bad(findings, levels)
    assert rule in got, [(f.rule, f.status, f.message) for f in findings if f.rule == rule]
    others = bad(findings) - {rule}
    assert not others, [(f.rule, f.status, f.message) for f in findings if f.rule in others]
    return findings


def test_close_001_error_for_idle_session():
    fails(change(BASE, ok(30, {}), err(30, -32603)), "CLOSE-001")


def test_close_002_response_before_cancelled_idle():
    s = change(BASE, st("s3", "idle", stopReason="cancelled") + "\n" + ok(34, {}),
               ok(34, {}) + "\n" + st("s3", "idle", stopReason="cancelled"))
    f = fails(s, "CLOSE-002")
    assert not [x for x in f if x.rule == "CLOSE-003" and x.status == FAIL]


def test_close_003_update_after_close():
    fails(change(BASE, ok(30, {}), ok(30, {}) + "\n" + st("s2", "idle")), "CLOSE-003")


def test_close_004_held_prompt_wrong_code():
    fails(change(BASE, err(33, -32800, "Request cancelled"), err(33, -32603)), "CLOSE-004")


def test_close_004_is_not_judged_on_a_refused_close():
    # claude-agent-acp 0.101.0 answers session/close with -32601: nothing was closed, so the prompt held at it
    # is not CLOSE-004's (it was answered later with an error the held prompt's own rules judge)
    refused = change(BASE, err(33, -32800, "Request cancelled") + "\n" + st("s3", "idle", stopReason="cancelled")
                     + "\n" + ok(34, {}), err(34, -32601, "Method not found") + "\n" + err(33, -32603))
    assert FAIL not in statuses(run(refused), "CLOSE-004")
    assert INFO in statuses(run(refused), "CLOSE-004")
    # the same wrong answer to a close that happened still fails
    fails(change(BASE, err(33, -32800, "Request cancelled"), err(33, -32603)), "CLOSE-004")


def test_state_001_unknown_state():
    fails(change(BASE, st("s1", "running") + "\n" + chunk("s1", "a2", "1 "),
                 st("s1", "running") + "\n" + st("s1", "working") + "\n" + chunk("s1", "a2", "1 ")), "STATE-001")


def test_state_002_stuck_in_requires_action():
    s = change(BASE, st("s2", "running") + "\n" + U("s2", {"sessionUpdate": "tool_call_update", "toolCallId": "c1",
                                                          "status": "completed"}), "")
    s = s.split(st("s2", "idle", stopReason="end_turn"))[0]
    findings = mine(run(s))
    assert FAIL in [f.status for f in findings if f.rule == "STATE-002"]


def test_state_003_no_requires_action_warns():
    s = change(BASE, st("s2", "requires_action") + "\n" + C({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {
        "outcome": "selected", "optionId": "allow"}}}),
        C({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}))
    fails(s, "STATE-003", levels=(WARN,))


def test_state_003_requires_action_just_before_the_request_counts():
    # claude-agent-acp and codex-acp report requires_action, then write the permission request it announces
    request = A({"jsonrpc": "2.0", "id": 0, "method": "session/request_permission", "params": {
        "sessionId": "s2", "title": "Edit?", "subject": {"type": "tool_call", "toolCall": {"toolCallId": "c1"}},
        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}})
    assert request in BASE
    s = change(BASE, request + "\n" + st("s2", "requires_action"), st("s2", "requires_action") + "\n" + request)
    assert statuses(mine(run(s)), "STATE-003") == [PASS]  # the allowed request; the cancelled one never resumed
    # a requires_action of an earlier wait, with running reported since, does not announce this request
    s = change(s, st("s2", "requires_action") + "\n" + request, st("s2", "requires_action") + "\n" + st("s2", "running")
               + "\n" + request)
    assert WARN in statuses(mine(run(s)), "STATE-003")


def test_state_007_work_stopped_after_an_answer_that_allows_nothing():
    # codex-acp ends the turn "cancelled" when the suite's permission answer selects an option it never offered:
    # that answer allowed nothing (PERM-003), so the stop is the suite's doing, not the agent's choice
    allowed = "\n".join([C({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}),
                         st("s2", "running"),
                         U("s2", {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"}),
                         st("s2", "idle", stopReason="end_turn")])
    assert allowed in BASE

    def answered(option: str) -> str:
        return change(BASE, allowed, "\n".join([
            C({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": option}}}),
            U("s2", {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "cancelled"}),
            st("s2", "idle", stopReason="cancelled")]))
    assert FAIL not in statuses(run(answered("__conformance_not_offered__")), "STATE-007")
    assert FAIL in statuses(run(answered("allow")), "STATE-007")  # allowed, then "cancelled" by the agent's choice


def test_state_007_cancelled_without_a_stop():
    fails(change(BASE, st("s1", "idle", stopReason="error", error={"code": -32603, "message": "boom"}),
                 st("s1", "idle", stopReason="cancelled")), "STATE-007")


def test_state_007_work_cancelled_by_deleting_its_session():
    # deleting a session with running work cancels it, as closing it does: a stop the client chose
    delete = req(35, "session/delete", {"sessionId": "s3"})
    s = change(BASE, req(34, "session/close", {"sessionId": "s3"}), delete)
    s = change(s, ok(34, {}), ok(35, {}))
    assert statuses(mine(run(s)), "STATE-007") == [PASS] * 3  # s3 by the delete, s1 and s2 as before
    # without the delete the same idle is a stop the agent chose
    assert FAIL in statuses(run(change(s, delete, "")), "STATE-007")


def test_state_007_a_cancel_racing_the_end_of_work_may_stop_the_prompt_held_behind_it():
    # the cancel crosses turn 1's end_turn on the wire; the agent applies it to the prompt it held: not a
    # stop the agent chose (INFO), while the same cancelled idle with no cancel anywhere still fails
    script = "\n".join([INIT2, req(1, "session/new", {"cwd": "/p"}), ok(1, {"sessionId": "s1"}),
                         prompt(2, "s1", "one"), user("s1", "m1", "one"), st("s1", "running"), ok(2, {}),
                         prompt(3, "s1", "two"), C({"jsonrpc": "2.0", "method": "session/cancel",
                                                    "params": {"sessionId": "s1"}}),
                         st("s1", "idle", stopReason="end_turn"),
                         user("s1", "m2", "two"), st("s1", "running"), ok(3, {}),
                         st("s1", "idle", stopReason="cancelled")])
    assert statuses(run(script), "STATE-007") == [INFO]
    no_cancel = change(script, C({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}}) + "\n",
                       "")
    assert statuses(run(no_cancel), "STATE-007") == [FAIL]


def test_state_007_a_close_sent_while_work_ran_stops_the_prompt_held_behind_it():
    # found by fuzzing: the close crosses turn 1's end_turn; the agent inserts the held prompt, then the close ends
    # it (running, idle cancelled) before its answer: a stop the suite chose. With no close anywhere, it still fails.
    close = req(4, "session/close", {"sessionId": "s1"})
    script = "\n".join([INIT2, req(1, "session/new", {"cwd": "/p"}), ok(1, {"sessionId": "s1"}),
                         prompt(2, "s1", "one"), user("s1", "m1", "one"), ok(2, {}), st("s1", "running"),
                         prompt(3, "s1", "two"), close, st("s1", "idle", stopReason="end_turn"),
                         user("s1", "m2", "two"), ok(3, {}), st("s1", "running"),
                         st("s1", "idle", stopReason="cancelled"), ok(4, {})])
    assert statuses(run(script), "STATE-007") == [PASS]
    no_close = change(change(script, close + "\n", ""), ok(4, {}), "")
    assert statuses(run(no_close), "STATE-007") == [FAIL]


def test_prompt_014_invented_stop_reason():
    fails(change(BASE, st("s1", "idle", stopReason="end_turn"), st("s1", "idle", stopReason="done"), count=4),
          "PROMPT-014")


def test_prompt_015_error_object():
    fails(change(BASE, st("s1", "idle", stopReason="error", error={"code": -32603, "message": "boom"}),
                 st("s1", "idle", stopReason="error")), "PROMPT-015", levels=(WARN,))
    fails(change(BASE, st("s1", "idle", stopReason="error", error={"code": -32603, "message": "boom"}),
                 st("s1", "idle", stopReason="error", error={"code": "x"})), "PROMPT-015")


def test_prompt_007_replayed_with_new_id():
    resume = req(41, "session/resume", {"sessionId": "s1", "cwd": "/p", "replayFrom": {"type": "start"}})
    fails(change(BASE, resume + "\n" + user("s1", "u1", "hello"), resume + "\n" + user("s1", "u1-new", "hello")),
          "PROMPT-007")


def test_resume_001_history_after_response():
    s = change(BASE, U("s1", {"sessionUpdate": "replay_complete"}) + "\n" + st("s1", "idle") + "\n" + ok(41, {"configOptions": []}),
               U("s1", {"sessionUpdate": "replay_complete"}) + "\n" + st("s1", "idle") + "\n" + ok(41, {"configOptions": []})
               + "\n" + chunk("s1", "a2", "1 "))
    fails(s, "RESUME-001")


def test_resume_001_live_chunks_of_work_running_at_the_resume_are_not_replay():
    # the snapshot said running: the chunks of the message in progress that follow the response are
    # the live work going on, not history replayed late
    tail = U("s1", {"sessionUpdate": "replay_complete"}) + "\n" + st("s1", "idle") + "\n" + ok(41, {"configOptions": []})
    live = (U("s1", {"sessionUpdate": "replay_complete"}) + "\n" + st("s1", "running") + "\n"
            + ok(41, {"configOptions": []}) + "\n" + chunk("s1", "a2", "1 ") + "\n" + st("s1", "idle"))
    assert FAIL not in statuses(run(change(BASE, tail, live)), "RESUME-001")


def test_resume_006_replay_without_replay_from():
    fails(change(BASE, req(42, "session/resume", {"sessionId": "s1", "cwd": "/p"}),
                 req(42, "session/resume", {"sessionId": "s1", "cwd": "/p"}) + "\n" + user("s1", "u1", "hello")),
          "RESUME-006")


def test_resume_006_history_of_an_earlier_unfinished_replay_is_not_charged_to_a_later_resume():
    # resume 10 (replayFrom start) is answered before it replayed the history it owed; that history arrives
    # inside resume 11's window (no replayFrom): perhaps 10's replay late, so RESUME-006 is only noted
    head = [INIT2, req(1, "session/new", {"cwd": "/p"}), ok(1, {"sessionId": "s1"}), prompt(2, "s1", "hello"),
            user("s1", "u1", "hello"), st("s1", "running"), chunk("s1", "a1", "hi"), st("s1", "idle", stopReason="end_turn"),
            ok(2, {})]
    early = [req(10, "session/resume", {"sessionId": "s1", "cwd": "/p", "replayFrom": {"type": "start"}}),
             U("s1", {"sessionUpdate": "replay_complete"}), st("s1", "idle"), ok(10, {})]
    late = [req(11, "session/resume", {"sessionId": "s1", "cwd": "/p"}), user("s1", "u1", "hello"),
            st("s1", "idle"), ok(11, {})]
    assert statuses(run("\n".join(head + early + late)), "RESUME-006") == [INFO]
    assert statuses(run("\n".join(head + late)), "RESUME-006") == [FAIL]  # nothing else could have sent it


def test_resume_006_the_running_work_s_own_message_streaming_on_is_not_a_replay():
    # seen fuzzing an agent whose turns end by themselves: a resume (no replayFrom) sent while a turn streamed its
    # reply; the reply's next chunk, under the messageId seen before the resume, came inside the resume's window
    head = [INIT2, req(1, "session/new", {"cwd": "/p"}), ok(1, {"sessionId": "s1"}), prompt(2, "s1", "hello"),
            user("s1", "u1", "hello"), ok(2, {"messageId": "u1"}), st("s1", "running"), chunk("s1", "a1", "Thinking. ")]
    resume = [req(11, "session/resume", {"sessionId": "s1", "cwd": "/p"}), chunk("s1", "a1", "hello"),
              st("s1", "idle", stopReason="end_turn"), st("s1", "idle"), ok(11, {})]
    got = statuses(run("\n".join(head + resume)), "RESUME-006")
    assert INFO in got and FAIL not in got, got
    # the same chunk once the turn had ended (idle before the resume): history replayed, as before
    ended = head + [chunk("s1", "a1", "hello"), st("s1", "idle", stopReason="end_turn")]
    replayed = [req(11, "session/resume", {"sessionId": "s1", "cwd": "/p"}), chunk("s1", "a1", "hello"),
                st("s1", "idle"), ok(11, {})]
    assert FAIL in statuses(run("\n".join(ended + replayed)), "RESUME-006")
    # and a message of an earlier turn, while another turn runs, is still a replay
    earlier = ended + [prompt(3, "s1", "again"), user("s1", "u2", "again"), ok(3, {"messageId": "u2"}),
                       st("s1", "running"), chunk("s1", "a2", "Thinking. ")]
    assert FAIL in statuses(run("\n".join(earlier + replayed)), "RESUME-006")


def test_resume_006_a_late_chunk_of_work_cut_by_a_cancel_is_noted_not_failed():
    # seen fuzzing the TypeScript SDK agent: a turn closed mid-reply (idle cancelled), then a resume without
    # replayFrom, and the cut reply's next chunk came in the resume's window: late output of the cancelled work
    # (CANCEL-003/CLOSE-003 judge that), or a replay: not provably RESUME-006's
    head = [INIT2, req(1, "session/new", {"cwd": "/p"}), ok(1, {"sessionId": "s1"}), prompt(2, "s1", "hello"),
            user("s1", "u1", "hello"), ok(2, {"messageId": "u1"}), st("s1", "running"), chunk("s1", "a1", "Thinking. ")]
    resume = [req(11, "session/resume", {"sessionId": "s1", "cwd": "/p"}), chunk("s1", "a1", "hello"),
              st("s1", "idle"), ok(11, {})]
    cancelled = head + [C({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}}),
                        st("s1", "idle", stopReason="cancelled")]
    got = statuses(run("\n".join(cancelled + resume)), "RESUME-006")
    assert INFO in got and FAIL not in got, got
    # a message of an earlier turn that ended by itself is still history replayed
    earlier = head + [chunk("s1", "a1", "hello"), st("s1", "idle", stopReason="end_turn"), prompt(3, "s1", "again"),
                      user("s1", "u2", "again"), ok(3, {"messageId": "u2"}), st("s1", "running"),
                      chunk("s1", "a2", "Thinking. "),
                      C({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}}),
                      st("s1", "idle", stopReason="cancelled")]
    assert FAIL in statuses(run("\n".join(earlier + resume)), "RESUME-006")


def test_resume_001_the_running_work_s_message_after_the_response_is_not_history_replayed_late():
    head = [INIT2, req(1, "session/new", {"cwd": "/p"}), ok(1, {"sessionId": "s1"}), prompt(2, "s1", "hello"),
            user("s1", "u1", "hello"), ok(2, {"messageId": "u1"}), st("s1", "running"), chunk("s1", "a1", "Thinking. ")]
    # no state snapshot in the window: only the running state seen before the resume says the work goes on
    resume = [req(11, "session/resume", {"sessionId": "s1", "cwd": "/p", "replayFrom": {"type": "start"}}),
              user("s1", "u1", "hello"), U("s1", {"sessionUpdate": "replay_complete"}), ok(11, {}),
              chunk("s1", "a1", "hello"), st("s1", "idle", stopReason="end_turn")]
    assert FAIL not in statuses(run("\n".join(head + resume)), "RESUME-001")
    # a message of a turn that had ended, after the response: history replayed late
    ended = head + [chunk("s1", "a1", "hello"), st("s1", "idle", stopReason="end_turn")]
    late = [req(11, "session/resume", {"sessionId": "s1", "cwd": "/p", "replayFrom": {"type": "start"}}),
            user("s1", "u1", "hello"), U("s1", {"sessionUpdate": "replay_complete"}), ok(11, {}),
            chunk("s1", "a1", "hello")]
    assert FAIL in statuses(run("\n".join(ended + late)), "RESUME-001")


def test_resume_007_cursor_accepted():
    fails(change(BASE, err(40, -32602), ok(40, {})), "RESUME-007")


def test_resume_011_null_config_options():
    fails(change(BASE, ok(41, {"configOptions": []}), ok(41, {"configOptions": None})), "RESUME-011")


def test_cancel_004_tool_completes_after_cancel():
    fails(change(BASE, U("s2", {"sessionUpdate": "tool_call_update", "toolCallId": "c2", "status": "cancelled"}),
                 U("s2", {"sessionUpdate": "tool_call_update", "toolCallId": "c2", "status": "completed"})), "CANCEL-004")


def test_cancel_005_no_cancel_request_warns():
    fails(change(BASE, A({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 1}}), ""),
          "CANCEL-005", levels=(WARN,))


def test_cancel_009_held_prompt_two_responses():
    fails(change(BASE, err(5, -32800, "Request cancelled"), err(5, -32800, "Request cancelled") + "\n" + err(5, -32800)),
          "CANCEL-009")


def test_cancel_011_prompt_after_cancel_rejected():
    s = change(BASE, user("s1", "u3", "again") + "\n" + ok(6, {"messageId": "u3"}) + "\n" + st("s1", "running") + "\n"
               + st("s1", "idle", stopReason="end_turn"), err(6, -32603))
    fails(s, "CANCEL-011")


AFTER_CANCELLED = (user("s1", "u3", "again") + "\n" + ok(6, {"messageId": "u3"}) + "\n" + st("s1", "running") + "\n"
                   + st("s1", "idle", stopReason="end_turn"))
IMAGE = {"type": "image", "mimeType": "image/png", "data": "AA=="}


def test_cancel_011_prompt_refused_for_its_blocks_is_not_the_session_refusing_it():
    # the first prompt after the cancelled idle holds a block the agent does not advertise (image without
    # the prompt capability, a custom type): its -32602 refuses the prompt, not the session
    for block in (IMAGE, {"type": "_x/custom"}):
        s = change(change(BASE, prompt(6, "s1", "again"), prompt(6, "s1", blocks=[block])), AFTER_CANCELLED,
                   err(6, -32602))
        findings = mine(run(s))
        assert statuses(findings, "CANCEL-011") == [NOT_TESTED], block
        assert not bad(findings), [(f.rule, f.status, f.message) for f in findings if f.status in (FAIL, WARN)]
    # an image the agent advertises (or a text prompt) refused with -32602 is the session refusing prompts
    advertised = change(BASE, '"capabilities":{"session":{}}', '"capabilities":{"session":{"prompt":{"image":{}}}}',
                        count=3)
    fails(change(change(advertised, prompt(6, "s1", "again"), prompt(6, "s1", blocks=[IMAGE])), AFTER_CANCELLED,
                 err(6, -32602)), "CANCEL-011")
    assert FAIL in statuses(run(change(BASE, AFTER_CANCELLED, err(6, -32602))), "CANCEL-011")  # PROMPT-008 too


def test_cancel_013_answer_to_stale_cancel_request():
    fails(change(BASE, req(11, "session/list", {}), A({"jsonrpc": "2.0", "id": None, "error": {
        "code": -32602, "message": "unknown request"}}) + "\n" + req(11, "session/list", {})), "CANCEL-013")


STALE_CANCEL = C({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 10}})
INVALID_REQUEST = A({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}})


def test_cancel_013_answer_to_another_line_of_the_suite_is_not_the_cancels():
    # an invalid line written before the stale $/cancel_request is answered after it (id null, or the
    # line's readable id): that answer is the line's, not an answer to the cancel
    echoed = A({"jsonrpc": "2.0", "id": "w-7c", "error": {"code": -32600, "message": "Invalid Request"}})
    for line, answer in ((C({"foo": 1}), INVALID_REQUEST), ("C->A nul", INVALID_REQUEST.replace("-32600", "-32700")),
                         (C({"jsonrpc": "1.0", "id": "w-7c", "method": "session/list"}), echoed)):
        s = change(BASE, STALE_CANCEL, line + "\n" + STALE_CANCEL + "\n" + answer)
        assert statuses(mine(run(s)), "CANCEL-013") == [PASS], line
    # once that line has had its answer, a further id-null answer after the cancel is the cancel's
    s = change(BASE, STALE_CANCEL, C({"foo": 1}) + "\n" + INVALID_REQUEST + "\n" + STALE_CANCEL + "\n" + INVALID_REQUEST)
    assert FAIL in statuses(run(s), "CANCEL-013")


def test_cancel_013_answer_after_a_batch_written_after_the_cancel_is_not_charged_to_it():
    # an agent without batches refuses a batch of notifications whole (-32600, id null): written after
    # the stale cancel, that answer may be the batch's
    batch = C([{"jsonrpc": "2.0", "method": "_fuzz/ping", "params": {}}])
    s = change(BASE, STALE_CANCEL, STALE_CANCEL + "\n" + batch + "\n" + INVALID_REQUEST)
    got = statuses(mine(run(s)), "CANCEL-013")
    assert FAIL not in got and INFO in got
    # with no such line between, the same answer is the cancel's
    assert FAIL in statuses(run(change(BASE, STALE_CANCEL, STALE_CANCEL + "\n" + INVALID_REQUEST)), "CANCEL-013")


def test_prompt_008_resource_link_rejected():
    fails(change(BASE, user("s1", "u4", "see") + "\n" + ok(7, {"messageId": "u4"}) + "\n" + st("s1", "running") + "\n"
                 + st("s1", "idle", stopReason="end_turn"), err(7, -32602)), "PROMPT-008")


def test_prompt_008_a_resource_link_whose_uri_is_not_a_uri_may_be_refused():
    # the schema reference gives ResourceLink.uri "Format: uri": "" and a bare file name are not URIs
    rejected = change(BASE, user("s1", "u4", "see") + "\n" + ok(7, {"messageId": "u4"}) + "\n" + st("s1", "running")
                      + "\n" + st("s1", "idle", stopReason="end_turn"), err(7, -32602))
    for uri in ("", "notes.txt"):
        s = rejected.replace('"uri":"file:///x"', json.dumps({"uri": uri})[1:-1].replace(": ", ":"))
        assert f'"uri":"{uri}"' in s
        assert FAIL not in statuses(run(s), "PROMPT-008"), uri


def test_prompt_009_unknown_block_accepted():
    fails(change(BASE, err(8, -32602), ok(8, {"messageId": "u8"})), "PROMPT-009")


def test_cancel_012_two_responses():
    fails(change(BASE, err(12, -32800, "Request cancelled"), err(12, -32800, "Request cancelled") + "\n"
                 + ok(12, {"sessions": []})), "CANCEL-012")


def test_cancel_014_agent_cancels_a_client_id():
    fails(change(BASE, A({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 1}}),
                 req(50, "session/list", {}) + "\n"
                 + A({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 50}}) + "\n"
                 + A({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 1}}) + "\n"
                 + ok(50, {"sessions": []})), "CANCEL-014")


def test_prompt_017_held_prompt_answered_twice():
    fails(change(BASE, ok(13, {"messageId": "u13"}), ok(13, {"messageId": "u13"}) + "\n" + ok(13, {"messageId": "u13"})),
          "PROMPT-017")


def test_not_observable_list():
    p = Path(__file__).resolve().parents[1] / "acp_conformance/rules/not_observable_lifecycle.json"
    data = json.loads(p.read_text())
    assert data and not set(data) & set(RULES_CHECKED)


# --- resumes of one session that overlap (resume-cursors-and-replay against the Python SDK agent) --

def _resume_test(*after_restart):
    """A session with one turn of history, then a new connection with the given frames."""
    return "\n".join([
        INIT2, req(1, "session/new", {"cwd": "/p"}), ok(1, {"sessionId": "s1"}),
        prompt(2, "s1", "see file"), user("s1", "u1", "see file"), ok(2, {"messageId": "u1"}), st("s1", "running"),
        U("s1", {"sessionUpdate": "agent_message", "messageId": "a1", "content": [{"type": "text", "text": "ok"}]}),
        st("s1", "idle", stopReason="end_turn"),
        "@start", INIT2, *after_restart])


def _replay(sid="s1"):
    return [user(sid, "u1", "see file"),
            U(sid, {"sessionUpdate": "agent_message", "messageId": "a1", "content": [{"type": "text", "text": "ok"}]}),
            U(sid, {"sessionUpdate": "replay_complete"}), st(sid, "idle")]


def _bad(i, cursor):
    return req(f"resume-bad-{i}", "session/resume", {"sessionId": "s1", "cwd": "/p", "replayFrom": cursor})


def _by(findings, rule, status):
    return [f for f in findings if f.rule == rule and f.status == status]


def test_malformed_cursors_written_back_to_back_are_each_judged_and_overlap_is_informational():
    # the frames of the Python SDK agent (1.0.0rc3): {} becomes a replay from the start, "start" and {type: 7} a
    # resume without replay; all three succeed. resume-bad-2's state_update precedes resume-bad-1's replay_complete
    # and resume-bad-2 is answered right after it: before, RESUME-003 failed for resume-bad-2 ("no state_update
    # between the replay_complete and the response") and no cursor was judged by RESUME-007.
    s = _resume_test(
        _bad(1, {}), _bad(2, "start"),
        st("s1", "idle"), *_replay()[:3], ok("resume-bad-2", {"configOptions": []}),
        st("s1", "idle"), ok("resume-bad-1", {"configOptions": []}),
        _bad(3, {"type": 7}), st("s1", "idle"), ok("resume-bad-3", {"configOptions": []}),
    )
    findings = run(s)
    # RESUME-007: every malformed cursor that was accepted fails, each under its own request id
    fails007 = _by(findings, "RESUME-007", FAIL)
    assert sorted(f.message.split(" ")[1] for f in fails007) == \
        ['id="resume-bad-1"', 'id="resume-bad-2"', 'id="resume-bad-3"'], [f.message for f in fails007]
    # the updates cannot be attributed: nothing else fails, the overlap is reported as information
    assert bad(findings) == {"RESUME-007"}, [(f.rule, f.status, f.message) for f in findings if f.status in (FAIL, WARN)]
    assert not [f for f in findings if f.rule in ("RESUME-002", "RESUME-003") and f.status != INFO]
    notes = _by(findings, "RESUME-004", INFO)
    assert notes and all("overlapped another resume" in f.message for f in notes)


def test_malformed_cursors_answered_one_by_one():
    accepted = _resume_test(
        _bad(1, {}), *_replay(), ok("resume-bad-1", {}),
        _bad(2, "start"), st("s1", "idle"), ok("resume-bad-2", {}),
        _bad(3, {"type": 7}), st("s1", "idle"), ok("resume-bad-3", {}))
    findings = run(accepted)
    assert len(_by(findings, "RESUME-007", FAIL)) == 3
    assert bad(findings) == {"RESUME-007"}
    assert len(_by(findings, "RESUME-004", PASS)) >= 1  # a successful resume, whatever its cursor, has its state
    assert not [f for f in findings if f.rule in ("RESUME-002", "RESUME-003", "RESUME-005")]  # not a cursor
    rejected = _resume_test(
        _bad(1, {}), err("resume-bad-1", -32602), _bad(2, "start"), err("resume-bad-2", -32602),
        _bad(3, {"type": 7}), err("resume-bad-3", -32602))
    findings = run(rejected)
    assert statuses(findings, "RESUME-007") == [PASS] * 3
    assert not bad(findings)


def test_overlapping_replays_are_not_misattributed():
    # two resumes from the start, the second sent before the first is answered: each is replayed in turn.
    # Before: the first replay_complete counted for both, so the second "had two" (RESUME-002 fail).
    r1 = req(50, "session/resume", {"sessionId": "s1", "cwd": "/p", "replayFrom": {"type": "start"}})
    r2 = req(51, "session/resume", {"sessionId": "s1", "cwd": "/p", "replayFrom": {"type": "start"}})
    findings = run(_resume_test(r1, r2, *_replay(), ok(50, {}), *_replay(), ok(51, {})))
    assert not bad(findings), [(f.rule, f.status, f.message) for f in findings if f.status in (FAIL, WARN)]
    for rule in ("RESUME-002", "RESUME-003", "RESUME-001"):
        assert INFO in statuses(findings, rule) and PASS not in statuses(findings, rule), rule
    # what holds whatever the attribution is still judged: no replay_complete at all in a window fails
    no_marker = [x for x in _replay() if "replay_complete" not in x]
    findings = run(_resume_test(r1, r2, *no_marker, ok(50, {}), *no_marker, ok(51, {})))
    assert len(_by(findings, "RESUME-002", FAIL)) == 2
