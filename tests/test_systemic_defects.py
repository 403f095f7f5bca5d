"""Issue 31: a defect in every exchange gets its one sentence in seconds. Unit tests from frames: an agent that
answers with ids never sent (rules/first_contact.wrong_ids), turns that never end by themselves
(rules/turn_ends.py), batch arrays the agent writes (TRANSPORT-013) and their members read by the peer and the
runner's waits."""

from __future__ import annotations

import json

import anyio
import pytest

from acp_conformance.rules.first_contact import WRONG_IDS, judge_agent, wrong_ids
from acp_conformance.rules.monitors.transport import BatchLineMonitor
from acp_conformance.rules.turn_ends import turn_ends
from acp_conformance.scenarios.idle_owed import _IdleOwed
from acp_conformance.wire.peer import Peer, Pending
from acp_conformance.wire.transcript import EV_TIMEOUT, Transcript, members

from monitor_transcripts import A, C, U, Player, assert_fails, run, statuses

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2}}
RESULT = {"protocolVersion": 2, "capabilities": {}, "info": {"name": "a", "version": "1"}}


def transcript(*lines) -> Transcript:
    """Frames from ("C", msg) / ("A", msg or raw text) / ("timeout",) entries, on one connection."""
    t = Transcript()
    for line in lines:
        if line[0] == "C":
            t.sent(json.dumps(line[1]).encode(), line[1])
        elif line[0] == "A":
            t.received(line[1].encode() if isinstance(line[1], str) else json.dumps(line[1]).encode())
        else:
            t.event(EV_TIMEOUT, what="the response")
    return t


# --- an agent answering with ids never sent -------------------------------------------------------

def test_an_answer_to_initialize_with_an_id_never_sent_is_the_runs_one_sentence():
    t = transcript(("C", INIT), ("A", {"jsonrpc": "2.0", "id": 1, "result": RESULT}), ("timeout",))
    contact = judge_agent(t.frames, 15)
    assert contact is not None and contact.kind == WRONG_IDS
    assert contact.frame is t.frames[1]
    assert contact.sentence == ("the agent answers with ids the suite never sent (ERR-004): initialize (id 0, frame "
                                "#0) never got a response with its own id, while the response in frame #1 carries id 1")


def test_several_strays_are_listed_and_string_ids_count_too():
    req = {"jsonrpc": "2.0", "id": "a", "method": "session/list", "params": {}}
    t = transcript(("C", INIT), ("A", {"jsonrpc": "2.0", "id": 1, "result": RESULT}), ("C", req),
                   ("A", {"jsonrpc": "2.0", "id": "a-wrong", "result": {}}), ("timeout",))
    contact = wrong_ids(t.frames, 0)
    assert contact is not None and "frames #1, #3 carry ids 1, \"a-wrong\"" in contact.sentence


@pytest.mark.parametrize("case", ["no timeout", "one answered", "answered late", "answered in a line that did not parse",
                                  "only id null"])
def test_a_target_that_answers_anything_the_suite_sent_is_judged_by_the_rules(case):
    """No early stop: out of order, late, with errors or an id the suite wrote in a broken line are the rules'."""
    stray = ("A", {"jsonrpc": "2.0", "id": 7, "result": {}})
    lines = {
        "no timeout": [("C", INIT), stray],  # the suite did not give up waiting (the test went on)
        "one answered": [("C", INIT), stray, ("A", {"jsonrpc": "2.0", "id": 0, "result": RESULT}), ("timeout",)],
        "answered late": [("C", INIT), ("A", {"jsonrpc": "2.0", "id": 0, "result": RESULT}), stray, ("timeout",)],
        "answered in a line that did not parse": [("C", INIT), ("timeout",)],
        "only id null": [("C", INIT), ("A", {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}}),
                         ("timeout",)],
    }[case]
    t = transcript(*lines)
    if case == "answered in a line that did not parse":
        t.sent(b'{"jsonrpc":"2.0","id":7,"method":"session/list"', None)
        t.received(json.dumps(stray[1]).encode())
        t.event(EV_TIMEOUT, what="x")
    assert wrong_ids(t.frames, 0) is None
    contact = judge_agent(t.frames, 15)
    assert contact is None or contact.kind != WRONG_IDS


# --- turns that never end by themselves ---------------------------------------------------------

PROMPT = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}}
CANCEL = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}}


def update(state, **more):
    return {"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s", "update": {"sessionUpdate": "state_update", "state": state, **more}}}


def test_a_turn_still_running_at_the_timeout_is_unended():
    t = transcript(("C", PROMPT), ("A", {"jsonrpc": "2.0", "id": 2, "result": {"messageId": "m"}}),
                   ("A", update("running")), ("timeout",))
    ends = turn_ends(t.frames)
    assert ends.unended is t.frames[2] and ends.ended is None


def test_a_turn_ended_by_a_cancel_is_not_one_that_ended_by_itself():
    t = transcript(("C", PROMPT), ("A", update("running")), ("C", CANCEL), ("A", update("idle", stopReason="end_turn")))
    assert turn_ends(t.frames).ended is None
    t = transcript(("C", PROMPT), ("A", update("running")), ("A", update("idle", stopReason="end_turn")))
    assert turn_ends(t.frames).ended is t.frames[2]


def test_a_turn_waiting_for_the_suite_is_not_the_targets_time():
    t = transcript(("C", PROMPT), ("A", update("running")), ("A", update("requires_action")), ("timeout",))
    assert turn_ends(t.frames).unended is None


def test_the_run_stops_after_two_unended_tests_unless_a_turn_ever_ended(tmp_path):
    from acp_conformance.early_stop import TURNS_NEVER_END, reset, stopped, turn_ended
    from acp_conformance.plugin.contact import turns_never_end

    class Run:
        report_dir = tmp_path

    class State:
        run = Run()
    unended = transcript(("C", PROMPT), ("A", update("running")), ("timeout",)).frames
    turns_never_end(State, unended, "t1", 10)
    assert stopped(tmp_path) is None
    turns_never_end(State, unended, "t1", 10)  # the same test (a rerun) counts once
    assert stopped(tmp_path) is None
    turns_never_end(State, unended, "t2", 10)
    why = stopped(tmp_path)
    assert why["kind"] == TURNS_NEVER_END and "raise --acp-timeout" in why["sentence"]
    reset(tmp_path)
    turn_ended(tmp_path)  # a slow agent whose turns do end: never stopped for this
    for test in ("t1", "t2", "t3"):
        turns_never_end(State, unended, test, 10)
    assert stopped(tmp_path) is None


# --- batch arrays the agent writes: TRANSPORT-013 -------------------------------------------------

CHUNK = {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "text", "text": "hi"}}
IDLE = {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}


def batch_line(*updates):
    return "A->C " + json.dumps([{"jsonrpc": "2.0", "method": "session/update",
                                  "params": {"sessionId": "sess_1", "update": u}} for u in updates])


def test_transport_013_a_batch_array_written_by_the_agent_fails_once_with_its_frame():
    script = "\n".join([batch_line(CHUNK, IDLE), batch_line(CHUNK, CHUNK), U("sess_1", CHUNK)])
    findings = run(script, [BatchLineMonitor])
    assert_fails(findings, "TRANSPORT-013")
    first = [f for f in findings if f.rule == "TRANSPORT-013"]
    assert "batch array of 2 message(s)" in first[0].message and first[0].frames[0] == 1
    assert "1 more batch array(s)" in first[1].message


def test_transport_013_single_messages_pass_and_answers_to_the_suites_batch_are_transport_012s():
    assert statuses(run(U("sess_1", CHUNK), [BatchLineMonitor]), "TRANSPORT-013") == ["pass"]
    script = "\n".join([C('[{"jsonrpc":"2.0","id":20,"method":"session/list","params":{}}]'),
                        A('[{"jsonrpc":"2.0","id":20,"result":{"sessions":[]}}]')])
    assert statuses(run(script, [BatchLineMonitor]), "TRANSPORT-013") == ["pass"]


def test_transport_013_under_the_base_revision_an_array_does_not_block():
    # the revision data decides, as for every rule: v2 as released still described batches
    from acp_conformance.rules.catalog import load_catalog
    from acp_conformance.rules.verdicts import compute_by_revision
    findings = Player([BatchLineMonitor]).play(batch_line(CHUNK, IDLE)).finish()
    assert "fail" in statuses(findings, "TRANSPORT-013")
    v = compute_by_revision(load_catalog(), findings, {"TRANSPORT-013"}, {}, {}, side="agent", revision="base")
    assert v.conformant and not v.by_revision["preview"].conformant
    assert [r.rule.id for r in v.readiness] == ["TRANSPORT-013"]


def test_members_of_a_batch_array_are_frames_of_their_own():
    t = transcript(("A", json.dumps([update("running"), update("idle", stopReason="end_turn"), 3])))
    parts = members(t.frames[0])
    assert [p.msg["params"]["update"]["state"] for p in parts] == ["running", "idle"]
    assert all(p.seq == 0 for p in parts)
    assert not _IdleOwed("s", t.frames).owed()  # the idle inside the array ends the turn


class _FakeTransport:
    def __init__(self):
        self.on_frame = self.on_eof = None
        self.eof = anyio.Event()


def test_the_peer_matches_a_response_inside_a_batch_and_waits_see_its_members():
    async def main():
        t = Transcript()
        transport = _FakeTransport()
        peer = Peer(transport, t)
        seen = []
        peer.on_request = lambda frame, msg: seen.append(msg["id"])
        t.listeners.append(lambda f: transport.on_frame(f) if f.direction == "received" else None)  # as read
        p = Pending(5, "session/list", t.sent(b"{}", {"jsonrpc": "2.0", "id": 5, "method": "session/list"}))
        peer.pending[("int", 5)] = p
        t.received(json.dumps([{"jsonrpc": "2.0", "id": 5, "result": {"sessions": []}},
                               {"jsonrpc": "2.0", "id": 9, "method": "session/request_permission", "params": {}},
                               update("idle", stopReason="end_turn")]).encode())
        assert p.msg == {"jsonrpc": "2.0", "id": 5, "result": {"sessions": []}} and seen == [9]
        f = await peer.wait_for(lambda f: isinstance(f.msg, dict) and f.msg.get("method") == "session/update", 1, "x")
        assert f.msg["params"]["update"]["state"] == "idle"
    anyio.run(main)
