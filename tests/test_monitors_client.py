"""Unit tests of client-side monitors on synthetic transcripts (the suite plays the agent)."""

from __future__ import annotations

import json

from acp_conformance.rules.findings import FAIL, INFO, PASS
from acp_conformance.rules.monitor import MonitorContext
from acp_conformance.rules.monitors import CLIENT_MONITORS
from acp_conformance.wire.transcript import EVENT, RECEIVED, SENT, Frame, parse_line


def play(lines: list[tuple[str, object]]) -> list:
    """(direction, message or event name) in order; "<-" is the client writing, "->" the suite."""
    ctx = MonitorContext(target_side="client", options={})
    ctx.add_monitors(CLIENT_MONITORS)
    t = 0.0
    for seq, (way, item) in enumerate([("event", "start")] + lines):
        t += 0.05
        if way == "event":
            name, _, code = str(item).partition(":")  # "exit:1": a failure status
            detail = {"returncode": int(code or 0), "signal": None} if name == "exit" else None
            ctx.feed(Frame(seq, 1, EVENT, t, b"", None, None, name, detail))
        else:
            raw = json.dumps(item).encode()
            msg, problem = parse_line(raw)
            ctx.feed(Frame(seq, 1, RECEIVED if way == "<-" else SENT, t, raw, msg, problem))
    ctx.finish()
    return ctx.findings


SETUP = [("<-", {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                 "params": {"protocolVersion": 2, "capabilities": {}, "info": {"name": "c", "version": "1"}}}),
         ("->", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2, "capabilities": {"session": {}},
                                                         "info": {"name": "a", "version": "1"}}}),
         ("<-", {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/p"}}),
         ("->", {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}})]
CLOSE = [("<-", {"jsonrpc": "2.0", "id": 2, "method": "session/close", "params": {"sessionId": "s1"}}),
         ("->", {"jsonrpc": "2.0", "id": 2, "result": {}})]
ASK = [("->", {"jsonrpc": "2.0", "id": "p1", "method": "session/request_permission",
               "params": {"sessionId": "s1", "title": "t", "options": []}}),
       ("event", "eof"), ("event", "exit")]


def statuses(findings, rule):
    return [f.status for f in findings if f.rule == rule]


def test_client_017_a_request_for_a_session_the_client_closed_is_not_owed_an_answer_on_its_way_out():
    got = statuses(play(SETUP + CLOSE + ASK), "CLIENT-017")
    assert FAIL not in got and INFO in got
    # the same request for a session still open, never answered: a failure
    assert FAIL in statuses(play(SETUP + ASK), "CLIENT-017")


def _cancel_with_permission_pending(client_answer_first: bool) -> list[tuple[str, object]]:
    """The client cancels while the suite's permission request is pending; its "cancelled" answer to that request
    and the suite's tool_call_update after the cancel cross on the wire (in either order); then it crashes."""
    prompt = [("<-", {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                      "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]}}),
              ("->", {"jsonrpc": "2.0", "id": 2, "result": {"messageId": "m1"}}),
              ("->", {"jsonrpc": "2.0", "method": "session/update",
                      "params": {"sessionId": "s1", "update": {"sessionUpdate": "state_update", "state": "running"}}}),
              ("->", {"jsonrpc": "2.0", "id": "p1", "method": "session/request_permission",
                      "params": {"sessionId": "s1", "title": "t", "options": []}}),
              ("<-", {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}})]
    answer = ("<-", {"jsonrpc": "2.0", "id": "p1", "result": {"outcome": {"outcome": "cancelled"}}})
    update = ("->", {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {
        "sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "cancelled"}}})
    crossing = [answer, update] if client_answer_first else [update, answer]
    return SETUP + prompt + crossing + [("event", "eof"), ("event", "exit:1")]


def test_client_014_an_answer_written_before_the_update_arrived_is_no_proof_the_client_read_it():
    # seen under load: the client's "cancelled" answer, written at its cancel, reached the suite after the
    # tool_call_update it then crashed on, and counted as the client working on after the update
    for first in (True, False):
        got = statuses(play(_cancel_with_permission_pending(first)), "CLIENT-014")
        assert got == [FAIL], (first, got)  # (a SHOULD: the verdict makes it a warning)
    # a client that goes on (a request after the update) passes
    kept = _cancel_with_permission_pending(False)[:-2] + CLOSE
    assert statuses(play(kept), "CLIENT-014") == [PASS]


def _elicit(request_id) -> tuple[str, object]:
    return ("->", {"jsonrpc": "2.0", "id": "e1", "method": "elicitation/create",
                   "params": {"mode": "url", "message": "m", "url": "https://example.com/x", "elicitationId": "x",
                              "requestId": request_id}})


def test_client_017_an_elicitation_tied_to_no_pending_request_of_the_client_is_noted_when_unanswered():
    # seen fuzzing the TypeScript client: an elicitation tied to request 147622, which the client never sent,
    # after the client had closed its session; the client then ended without answering it
    got = statuses(play(SETUP + CLOSE + [_elicit(147622), ("event", "eof"), ("event", "exit")]), "CLIENT-017")
    assert FAIL not in got and INFO in got, got
    # tied to a request of the client still waiting for its answer (its session/new): it is owed an answer
    pending = SETUP[:2] + [SETUP[2], _elicit(1), ("event", "eof"), ("event", "exit")]
    assert FAIL in statuses(play(pending), "CLIENT-017")


def _foreign_cancel(after: list[tuple[str, object]]) -> list:
    """The suite's $/cancel_request names the client's own pending session/new id (no request of the agent's)."""
    return play(SETUP[:2] + [
        ("<-", {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/p"}}),
        ("->", {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 1}})] + after)


ANSWER_NEW = ("->", {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}})
PROMPT_S1 = ("<-", {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                    "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]}})


def test_cancel_014_a_client_keeps_waiting_for_its_own_request_named_by_the_agents_cancel_request():
    # it ignores the notification, and uses the session the answer brings: pass (the suite created the situation)
    f = _foreign_cancel([ANSWER_NEW, PROMPT_S1])
    assert statuses(f, "CANCEL-014") == [PASS] and FAIL not in statuses(f, "CANCEL-013")
    # it takes the notification as cancelling its session/new and leaves without waiting for the answer
    f = _foreign_cancel([("event", "eof"), ("event", "exit")])
    assert statuses(f, "CANCEL-014") == [FAIL]
    # it left after more than that notification (here an unknown notification): why is not seen, no verdict
    other = ("->", {"jsonrpc": "2.0", "method": "_x/odd", "params": {}})
    assert statuses(_foreign_cancel([other, ("event", "eof"), ("event", "exit")]), "CANCEL-014") == []
    # it gave the request up itself ($/cancel_request of its own) before leaving: its right
    own = ("<-", {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 1}})
    assert FAIL not in statuses(_foreign_cancel([own, ("event", "eof"), ("event", "exit")]), "CANCEL-014")
    # it answers the notification (an id it never got from the agent): CANCEL-013's failure
    f = _foreign_cancel([("<-", {"jsonrpc": "2.0", "id": 1, "error": {"code": -32800, "message": "cancelled"}}),
                         ANSWER_NEW, PROMPT_S1])
    assert statuses(f, "CANCEL-013") == [FAIL] and statuses(f, "CANCEL-014") == [PASS]
    # answered, and the client never used the session: not seen either way (a note, no verdict)
    assert statuses(_foreign_cancel([ANSWER_NEW, ("event", "eof")]), "CANCEL-014") == [INFO]


def test_cancel_012_a_client_answering_before_the_cancel_arrives_won_a_legal_race():
    ask = ("->", {"jsonrpc": "2.0", "id": 7, "method": "session/request_permission",
                  "params": {"sessionId": "s1", "title": "t", "options": [{"optionId": "a", "name": "A",
                                                                            "kind": "allow_once"}]}})
    answer = ("<-", {"jsonrpc": "2.0", "id": 7, "result": {"outcome": {"outcome": "selected", "optionId": "a"}}})
    cancel = ("->", {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 7}})
    f = play(SETUP + [PROMPT_S1, ask, answer, cancel])
    assert statuses(f, "CANCEL-012") == ["not-exercised"]
    assert PASS in statuses(play(SETUP + [PROMPT_S1, ask, cancel, answer]), "CANCEL-012")


def test_cancel_013_a_late_second_answer_belongs_to_the_cancel_that_found_the_request_pending():
    ask = ("->", {"jsonrpc": "2.0", "id": 7, "method": "session/request_permission",
                  "params": {"sessionId": "s1", "title": "t", "options": [{"optionId": "a", "name": "A",
                                                                            "kind": "allow_once"}]}})
    cancel = ("->", {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 7}})
    answer = ("<-", {"jsonrpc": "2.0", "id": 7, "result": {"outcome": {"outcome": "cancelled"}}})
    nxt = [("->", {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "never-used"}}),
           ("<-", {"jsonrpc": "2.0", "id": 9, "method": "session/close", "params": {"sessionId": "s1"}})]
    # the client answered twice after the first cancel; the second answer came after the suite's second cancel
    f = play(SETUP + [PROMPT_S1, ask, cancel, answer, cancel, answer] + nxt)
    assert FAIL in statuses(f, "CANCEL-012") and FAIL not in statuses(f, "CANCEL-013")
    # the same second answer to a request that no cancel found pending is CANCEL-013's failure
    f = play(SETUP + [PROMPT_S1, ask, answer, ("->", {"jsonrpc": "2.0", "method": "_x/n", "params": {}}), cancel,
                      answer] + nxt)
    assert FAIL in statuses(f, "CANCEL-013")
