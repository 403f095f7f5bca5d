"""The idempotency-key monitor (IDEM-001..003) and the prompt monitor's exemption of keyed retries,
from hand-written frames."""

from __future__ import annotations

from acp_conformance.rules.findings import FAIL, INFO, PASS, WARN
from monitor_transcripts import A, C, run, upd

S = "sess_1"
INIT = "\n".join([
    C({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2, "capabilities": {}}}),
    A({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2, "capabilities": {"session": {}}}}),
    C({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}),
    A({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": S}}),
])


def prompt(i, key="k1", text="ping"):
    params = {"sessionId": S, "prompt": [{"type": "text", "text": text}]}
    if key is not None:
        params["idempotencyKey"] = key
    return C({"jsonrpc": "2.0", "id": i, "method": "session/prompt", "params": params})


def answer(i, mid):
    return A({"jsonrpc": "2.0", "id": i, "result": {"messageId": mid}})


def user(mid, text="ping"):
    return A(upd(S, {"sessionUpdate": "user_message", "messageId": mid, "content": [{"type": "text", "text": text}]}))


def turn(mid_agent):
    return "\n".join([
        A(upd(S, {"sessionUpdate": "state_update", "state": "running"})),
        A(upd(S, {"sessionUpdate": "agent_message_chunk", "messageId": mid_agent,
                  "content": {"type": "text", "text": "pong"}})),
        A(upd(S, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})),
    ])


FIRST = "\n".join([prompt(2), user("msg_u1"), answer(2, "msg_u1"), turn("msg_a1")])


def by(findings, rule, status=None):
    return [f for f in findings if f.rule == rule and (status is None or f.status == status)]


# the rules a keyed retry touches (the hand-written initialize is minimal: other families may object to it)
JUDGED = ("IDEM-", "PROMPT-001", "PROMPT-002", "PROMPT-003", "PROMPT-004", "PROMPT-005", "PROMPT-006",
          "PROMPT-011", "PROMPT-012", "PROMPT-013")


def bad(findings):
    return {(f.rule, f.status) for f in findings if f.status in (FAIL, "warn") and f.rule.startswith(JUDGED)}


def test_retry_after_the_turn_answered_with_the_original_passes_and_is_not_a_prompt_006_failure():
    script = "\n".join([INIT, FIRST, prompt(3), answer(3, "msg_u1"), "@+3", C({"jsonrpc": "2.0", "id": 9,
                        "method": "session/list", "params": {}}), A({"jsonrpc": "2.0", "id": 9, "result": {"sessions": []}})])
    f = run(script)
    assert not bad(f), bad(f)
    assert by(f, "IDEM-001", PASS) and by(f, "IDEM-002", PASS) and by(f, "IDEM-003", PASS)


def test_same_message_id_without_a_key_is_still_prompt_006():
    script = "\n".join([INIT, FIRST.replace(',"idempotencyKey":"k1"', ""), prompt(3, key=None), answer(3, "msg_u1"),
                        "@+3"])
    f = run(script)
    assert by(f, "PROMPT-006", FAIL)
    assert not by(f, "IDEM-001")


def test_same_message_id_under_another_key_is_prompt_006():
    script = "\n".join([INIT, FIRST, prompt(3, key="k2"), answer(3, "msg_u1"), "@+3"])
    f = run(script)
    assert by(f, "PROMPT-006", FAIL)


def test_retry_with_a_fresh_message_id_fails_idem_001_only():
    script = "\n".join([INIT, FIRST, prompt(3), answer(3, "msg_u9"), "@+3"])
    f = run(script)
    assert bad(f) == {("IDEM-001", FAIL)}, bad(f)
    assert "msg_u9" in by(f, "IDEM-001", FAIL)[0].message


def test_key_ignored_entirely_fails_all_three():
    script = "\n".join([INIT, FIRST, prompt(3), user("msg_u2"), answer(3, "msg_u2"), turn("msg_a2"), "@+3"])
    f = run(script)
    assert {r for r, _ in bad(f)} == {"IDEM-001", "IDEM-002", "IDEM-003"}, bad(f)


def test_second_insertion_answered_with_the_original_fails_idem_002():
    script = "\n".join([INIT, FIRST, prompt(3), user("msg_u2"), answer(3, "msg_u1"), "@+3"])
    f = run(script)
    assert bad(f) == {("IDEM-002", FAIL)}, bad(f)


def test_work_started_again_fails_idem_003():
    script = "\n".join([INIT, FIRST, prompt(3), answer(3, "msg_u1"), turn("msg_a2"), "@+3"])
    f = run(script)
    assert bad(f) == {("IDEM-003", FAIL)}, bad(f)


def test_concurrent_retry_while_running_passes():
    script = "\n".join([INIT, prompt(2), user("msg_u1"), answer(2, "msg_u1"),
                        A(upd(S, {"sessionUpdate": "state_update", "state": "running"})),
                        prompt(3), answer(3, "msg_u1"), "@+1",
                        A(upd(S, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})), "@+3"])
    f = run(script)
    assert not bad(f), bad(f)
    assert by(f, "IDEM-001", PASS) and by(f, "IDEM-003", PASS)


def test_retry_crossing_the_original_on_the_wire():
    """The retry is answered first: the first success response defines the original."""
    script = "\n".join([INIT, prompt(2), prompt(3), user("msg_u1"), answer(3, "msg_u1"), answer(2, "msg_u1"),
                        turn("msg_a1"), "@+3"])
    f = run(script)
    assert not bad(f), bad(f)


def test_a_new_submission_in_the_window_is_not_blamed_on_the_key():
    script = "\n".join([INIT, FIRST, prompt(3), answer(3, "msg_u1"), prompt(4, key="k2", text="other"),
                        user("msg_u2", "other"), answer(4, "msg_u2"), turn("msg_a2"), "@+3"])
    f = run(script)
    assert not bad(f), bad(f)


def test_refused_retry_is_noted_not_failed():
    script = "\n".join([INIT, FIRST, prompt(3),
                        A({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "busy"}}), "@+3"])
    f = run(script)
    assert not bad(f), bad(f)
    assert by(f, "IDEM-001", INFO)


def test_agent_without_session_capability_is_not_judged():
    script = "\n".join([INIT.replace('{"session":{}}', "{}"), FIRST, prompt(3), answer(3, "msg_u9"), "@+3"])
    f = run(script)
    assert not by(f, "IDEM-001")


def test_retry_after_a_restart_answered_differently_is_noted_under_idem_001_and_fails_idem_005():
    resume = "\n".join([
        C({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2, "capabilities": {}}}),
        A({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2, "capabilities": {"session": {}}}}),
        C({"jsonrpc": "2.0", "id": 1, "method": "session/resume", "params": {"sessionId": S, "cwd": "/tmp"}}),
        A(upd(S, {"sessionUpdate": "state_update", "state": "idle"})),
        A({"jsonrpc": "2.0", "id": 1, "result": {}}),
    ])
    script = "\n".join([INIT, FIRST, "@+1", "@start", resume, prompt(3), answer(3, "msg_u9"), "@+3"])
    f = run(script)
    assert not by(f, "IDEM-001", FAIL)
    assert by(f, "IDEM-001", INFO)
    assert by(f, "IDEM-005", WARN)  # accepted as a new submission (msg_u9) under a key already used


def test_work_restarting_before_any_retry_is_not_blamed_on_the_key():
    """Two cycles of work before the retry was sent are the agent's own (agent-initiated work may follow a turn)."""
    script = "\n".join([INIT, FIRST, turn("msg_a2"), "@+1", prompt(3), answer(3, "msg_u1"), "@+3"])
    f = run(script)
    assert not by(f, "IDEM-003", FAIL), by(f, "IDEM-003")


# -- IDEM-005: a retry in a new agent process (a lost response, a crash) ------------------------------------------

def _resumed(replayed=("msg_u1",)):
    """A new connection that resumes S from the start, replaying the user messages ``replayed``."""
    return "\n".join([
        "@+1", "@start",
        C({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2, "capabilities": {}}}),
        A({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2, "capabilities": {"session": {}}}}),
        C({"jsonrpc": "2.0", "id": 1, "method": "session/resume",
           "params": {"sessionId": S, "cwd": "/tmp", "replayFrom": {"type": "start"}}}),
        *[user(mid) for mid in replayed],
        A(upd(S, {"sessionUpdate": "replay_complete"})),
        A(upd(S, {"sessionUpdate": "state_update", "state": "idle"})),
        A({"jsonrpc": "2.0", "id": 1, "result": {}}),
    ])


def test_idem_005_a_retry_after_a_restart_answered_with_the_original_passes():
    script = "\n".join([INIT, FIRST, _resumed(), prompt(2), answer(2, "msg_u1"), "@+3"])
    f = run(script)
    assert by(f, "IDEM-005", PASS) and not by(f, "IDEM-005", WARN)
    assert not bad(f), bad(f)


def test_idem_005_a_retry_after_a_restart_accepted_as_a_new_submission_warns():
    """The agent kept the session but not the key: the message is inserted a second time (a warning: the RFD does
    not say how long keys are kept)."""
    script = "\n".join([INIT, FIRST, _resumed(), prompt(2), user("msg_u9"), answer(2, "msg_u9"), turn("msg_a9"), "@+3"])
    f = run(script)
    assert by(f, "IDEM-005", WARN) and not by(f, "IDEM-005", FAIL)
    assert not by(f, "IDEM-001", FAIL) and by(f, "IDEM-001", INFO)  # the answer alone stays IDEM-001's note
    assert {r for r, _ in bad(f)} == {"IDEM-005"}, bad(f)


def test_idem_005_a_new_user_message_after_a_retry_answered_with_the_original_warns():
    script = "\n".join([INIT, FIRST, _resumed(), prompt(2), user("msg_u9"), answer(2, "msg_u1"), "@+3"])
    f = run(script)
    assert by(f, "IDEM-005", WARN)


def test_idem_005_a_refused_retry_is_noted_not_failed():
    """The draft's operation_outcome_unknown: the agent did not keep the key and says so, inserting nothing."""
    for code in (-32603, -32002):
        script = "\n".join([INIT, FIRST, _resumed(), prompt(2),
                            A({"jsonrpc": "2.0", "id": 2, "error": {"code": code, "message": "unknown outcome"}}),
                            "@+3"])
        f = run(script)
        assert by(f, "IDEM-005", INFO) and not by(f, "IDEM-005", FAIL) and not by(f, "IDEM-005", WARN), code


def test_idem_005_the_replay_before_the_retry_is_history_not_an_insertion():
    script = "\n".join([INIT, FIRST, _resumed(("msg_u1", "msg_u0")), prompt(2), answer(2, "msg_u1"), "@+3"])
    f = run(script)
    assert by(f, "IDEM-005", PASS) and not by(f, "IDEM-005", WARN)
