"""RESUME-013 on synthetic transcripts: live updates held during a replay.

The suite resumes an idle session with replay and writes a prompt right after the request. Failed: the
prompt's running between replayed history and replay_complete. Legal: serving the prompt after
replay_complete (before the resume response, too), or before the replay began; a session already
working at the resume is not judged; no prompt, nothing judged."""

from __future__ import annotations

import json

from acp_conformance.rules.findings import FAIL, INFO, PASS, WARN
from monitor_transcripts import INIT2, run, upd


def U(update):
    return "A->C " + upd("s1", update)


def C(obj):
    return "C->A " + json.dumps(obj, separators=(",", ":"))


def A(obj):
    return "A->C " + json.dumps(obj, separators=(",", ":"))


def st(state, **kw):
    return U({"sessionUpdate": "state_update", "state": state, **kw})


def user(mid):
    return U({"sessionUpdate": "user_message", "messageId": mid, "content": [{"type": "text", "text": "hi"}]})


def agent(mid):
    return U({"sessionUpdate": "agent_message", "messageId": mid, "content": [{"type": "text", "text": "ok"}]})


def prompt(i):
    return C({"jsonrpc": "2.0", "id": i, "method": "session/prompt",
              "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]}})


def ok(i, result):
    return A({"jsonrpc": "2.0", "id": i, "result": result})


FIRST_TURN = "\n".join([INIT2, C({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/p"}}),
                        ok(1, {"sessionId": "s1"}), prompt(2), user("u1"), ok(2, {"messageId": "u1"}), st("running"),
                        U({"sessionUpdate": "agent_message_chunk", "messageId": "a1",
                           "content": {"type": "text", "text": "ok"}}),
                        st("idle", stopReason="end_turn")])
RESUME = C({"jsonrpc": "2.0", "id": 3, "method": "session/resume",
            "params": {"sessionId": "s1", "cwd": "/p", "replayFrom": {"type": "start"}}})
MARKER = U({"sessionUpdate": "replay_complete"})
REPLAY = [user("u1"), agent("a1")]
RESUMED = ok(3, {"configOptions": []})
TURN = [user("u2"), ok(4, {"messageId": "u2"}), st("running")]
END = st("idle", stopReason="end_turn")


def findings(*lines, first=FIRST_TURN):
    return run("\n".join([first, *lines]))


def hold(found):
    return [(f.status, f.message) for f in found if f.rule == "RESUME-013"]


def problems(found):
    return [(f.rule, f.status, f.message) for f in found if f.status in (FAIL, WARN)]


def test_an_agent_that_finishes_the_resume_first_passes():
    found = findings(RESUME, prompt(4), *REPLAY, MARKER, st("idle"), RESUMED, *TURN, END)
    assert [s for s, _ in hold(found)] == [PASS]
    assert not problems(found)


def test_the_prompts_running_during_the_replay_fails():
    found = findings(RESUME, prompt(4), REPLAY[0], *TURN, REPLAY[1], MARKER, st("running"), RESUMED, END)
    got = hold(found)
    assert [s for s, _ in got] == [FAIL] and "running" in got[0][1]
    assert {r for r, _, _ in problems(found)} == {"RESUME-013"}, problems(found)


def test_serving_the_prompt_after_replay_complete_but_before_the_response_is_legal():
    found = findings(RESUME, prompt(4), *REPLAY, MARKER, st("idle"), *TURN, RESUMED, END)
    assert [s for s, _ in hold(found)] == [PASS]
    assert not problems(found), problems(found)


def test_serving_the_prompt_before_the_replay_began_is_only_noted():
    found = findings(RESUME, prompt(4), *TURN, *REPLAY, user("u2"), MARKER, st("running"), RESUMED, END)
    assert [s for s, _ in hold(found)] == [INFO]


def test_a_session_working_when_resumed_or_no_prompt_is_not_judged():
    working = FIRST_TURN.rsplit("\n", 1)[0]  # no idle: the first turn still runs
    assert [s for s, _ in hold(findings(RESUME, prompt(4), REPLAY[0], st("running"), MARKER, RESUMED,
                                        first=working))] == [INFO]
    assert hold(findings(RESUME, *REPLAY, MARKER, st("idle"), RESUMED)) == []


def test_a_prompt_of_the_same_text_served_during_the_resume_is_no_replay_with_a_new_id():
    """The live echo of a prompt written after the resume request, served before the resume response, has the
    first prompt's text but the id its own response returned: PROMPT-007 must not take it for a re-id replay."""
    # the replay leaves the user message out (retention is optional); the live echo has its text
    found = findings(RESUME, prompt(4), agent("a1"), MARKER, st("idle"), *TURN, RESUMED, END)
    assert "PROMPT-007" not in {r for r, _, _ in problems(found)}, problems(found)
    # the control: a replayed user message of that text under an id no response returned is a re-id
    found = findings(RESUME, agent("a1"), user("u9"), MARKER, st("idle"), RESUMED)
    assert "PROMPT-007" in {r for r, _, _ in problems(found)}, problems(found)
