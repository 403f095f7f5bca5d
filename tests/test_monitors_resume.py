"""Unit tests of the RESUME checks of the agent-side monitors, on synthetic transcripts
(tests/monitor_transcripts.py: a broken variant of the reference transcripts must fail its rule and no other)."""

from __future__ import annotations

import pytest

from acp_conformance.rules.findings import FAIL, PASS

from monitor_transcripts import (
    A, BASE, RESUME_PLAIN, RESUME_REPLAY, assert_fails, bad, base, change, edit, run, statuses, upd,
)


# --- RESUME ---------------------------------------------------------------------------------------

MARKER_1 = 'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"replay_complete"}}}    # end of history (shape inferred from seed)'
STATE_1 = 'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"idle"}}}    # current state\n'


def test_resume_002_missing_marker():
    findings = run(change(BASE, MARKER_1, ""))
    assert_fails(findings, "RESUME-002")


def test_resume_002_two_markers():
    findings = run(change(BASE, MARKER_1, MARKER_1 + "\n" + MARKER_1))
    assert_fails(findings, "RESUME-002")


def test_resume_002_history_after_marker():
    hist = A(upd("sess_1", {"sessionUpdate": "user_message", "messageId": "msg_u1", "content": [{"type": "text", "text": "Say hello"}]}))
    findings = run(change(BASE, MARKER_1, MARKER_1 + "\n" + hist))
    assert_fails(findings, "RESUME-002")


def test_resume_003_state_before_marker():
    s = change(BASE, STATE_1, "")
    s = change(s, MARKER_1, STATE_1 + MARKER_1)
    findings = run(s)
    assert_fails(findings, "RESUME-003", also={"RESUME-004"})


def test_resume_003_accepts_a_live_update_in_flight_before_replay_complete():
    # the reworded replay_complete (Rust SDK 5.5.0): a live update the agent sent before the client's resume
    # request may still arrive after it, i.e. among the replayed history: not a failure of RESUME-003
    live = A(upd("sess_1", {"sessionUpdate": "agent_message_chunk", "messageId": "msg_live",
                            "content": {"type": "text", "text": "still working"}}))
    findings = run(change(BASE, MARKER_1, live + "\n" + MARKER_1))
    assert PASS in statuses(findings, "RESUME-003")
    assert not bad(findings) & {"RESUME-002", "RESUME-003", "RESUME-004"}


def test_resume_004_no_state_without_replay():
    s = change(BASE, 'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"idle"}}}    # current state, before the response\n', "")
    findings = run(s)
    assert_fails(findings, "RESUME-004")


def test_resume_004_judges_a_replay_without_replay_complete():
    # v2 as released has no replay_complete (--acp-revision base): the state_update before the response of a
    # replaying resume is still judged, by RESUME-004, where RESUME-003 has no marker to order it after
    findings = run(change(BASE, MARKER_1, ""))
    assert PASS in statuses(findings, "RESUME-004") and FAIL not in statuses(findings, "RESUME-004")
    findings = run(change(change(BASE, MARKER_1, ""), STATE_1, ""))
    assert FAIL in statuses(findings, "RESUME-004") and FAIL in statuses(findings, "RESUME-002")


@pytest.mark.parametrize("delay, fails", [(None, True), (3, True), (6, False)])
def test_resume_005_marker_without_replay(delay, fails):
    marker = A(upd("sess_1", {"sessionUpdate": "replay_complete"}))
    resp = 'A->C {"jsonrpc":"2.0","id":1,"result":{}}'
    if delay is None:
        s = base(resume_plain=edit(RESUME_PLAIN, resp, marker + "\n" + resp))
    else:
        s = base(resume_plain=edit(RESUME_PLAIN, resp, f"{resp}\n@+{delay}\n{marker}"))
    findings = run(s)
    if fails:
        assert_fails(findings, "RESUME-005")
    else:
        assert FAIL not in statuses(findings, "RESUME-005")


def test_resume_005_null_replay_from():
    s = change(BASE, '"id":1,"method":"session/resume","params":{"sessionId":"sess_1","cwd":"/home/user/project"}}',
               '"id":1,"method":"session/resume","params":{"sessionId":"sess_1","cwd":"/home/user/project","replayFrom":null}}')
    findings = run(s)
    assert PASS in statuses(findings, "RESUME-005")
    assert not bad(findings)


def test_resume_error_is_not_judged():
    findings = run("\n".join(RESUME_REPLAY.strip().splitlines()[:4]))
    assert not [f for f in findings if f.rule in ("RESUME-002", "RESUME-003", "RESUME-004")]
    assert not bad(findings)


# --- RESUME-014: each submitted user message replayed at most once, whole (a crash mid-turn, a restart) -----------

U2_REPLAYED = 'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"user_message","messageId":"msg_u2","content":[{"type":"text","text":"Write a long story"}]}}}    # history'


def test_resume_014_the_reference_transcript_passes():
    assert PASS in statuses(run(BASE), "RESUME-014")


def test_resume_014_a_message_replayed_twice_under_two_ids_fails():
    """The interrupted prompt re-inserted on recovery: one submission, two messages in the history."""
    again = U2_REPLAYED.replace("msg_u2", "msg_u2_recovered")
    assert_fails(run(change(BASE, U2_REPLAYED, U2_REPLAYED + "\n" + again)), "RESUME-014")


def test_resume_014_a_message_cut_short_under_its_id_fails():
    half = U2_REPLAYED.replace("Write a long story", "Write a lo")
    findings = run(change(BASE, U2_REPLAYED, half))
    assert FAIL in statuses(findings, "RESUME-014")


def test_resume_014_a_message_missing_from_the_replay_is_not_judged_a_duplicate():
    findings = run(change(BASE, U2_REPLAYED + "\n", ""))
    assert FAIL not in statuses(findings, "RESUME-014")


def test_resume_014_counts_submissions_one_per_key_and_the_same_text_sent_twice():
    """Two prompts of the same text are two messages; two attempts under one key are one."""
    from monitor_transcripts import C

    def prompt(i, key=None):
        params = {"sessionId": "sess_9", "prompt": [{"type": "text", "text": "ping"}]}
        if key:
            params["idempotencyKey"] = key
        return C({"jsonrpc": "2.0", "id": i, "method": "session/prompt", "params": params})

    def user(mid):
        return A(upd("sess_9", {"sessionUpdate": "user_message", "messageId": mid,
                                "content": [{"type": "text", "text": "ping"}]}))

    def turn(i, mid):
        return "\n".join([user(mid), A({"jsonrpc": "2.0", "id": i, "result": {"messageId": mid}}),
                          A(upd("sess_9", {"sessionUpdate": "state_update", "state": "running"})),
                          A(upd("sess_9", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}))])

    def resume(i, mids):
        return "\n".join([C({"jsonrpc": "2.0", "id": i, "method": "session/resume",
                             "params": {"sessionId": "sess_9", "cwd": "/tmp", "replayFrom": {"type": "start"}}}),
                          *[user(m) for m in mids], A(upd("sess_9", {"sessionUpdate": "replay_complete"})),
                          A(upd("sess_9", {"sessionUpdate": "state_update", "state": "idle"})),
                          A({"jsonrpc": "2.0", "id": i, "result": {}})])

    init = "\n".join([C({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2, "capabilities": {}}}),
                      A({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2, "capabilities": {"session": {}}}}),
                      C({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}),
                      A({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "sess_9"}})])
    twice = "\n".join([init, prompt(2), turn(2, "m1"), prompt(3), turn(3, "m2"), "@start", resume(1, ["m1", "m2"])])
    assert PASS in statuses(run(twice), "RESUME-014") and FAIL not in statuses(run(twice), "RESUME-014")
    keyed = "\n".join([init, prompt(2, "k"), turn(2, "m1"), prompt(3, "k"),
                       A({"jsonrpc": "2.0", "id": 3, "result": {"messageId": "m1"}}),
                       "@start", resume(1, ["m1", "m9"])])
    assert FAIL in statuses(run(keyed), "RESUME-014")
