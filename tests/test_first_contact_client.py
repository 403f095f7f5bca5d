"""The client side of first contact (rules/first_contact.judge_client), from frames: a client that sends
nothing JSON at all is not an ACP client; one that sends initialize (or anything JSON) is judged by the rules."""

from __future__ import annotations

import json

from acp_conformance.rules.first_contact import NOT_ACP, NOT_V2, judge_client
from acp_conformance.wire.transcript import EV_EXIT, EV_STDIN_CLOSED, EVENT, RECEIVED, SENT, Frame

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": 2, "info": {"name": "c", "version": "1"}}}


def received(seq, msg=None, raw=None):
    raw = raw if raw is not None else json.dumps(msg).encode()
    return Frame(seq, 1, RECEIVED, 0.1 * seq, raw, msg, None if msg is not None else "not JSON")


def test_a_client_that_sends_nothing_is_not_an_acp_client():
    contact = judge_client([], waited=3)
    assert contact is not None and contact.kind == NOT_ACP and "sent no initialize within 3 s" in contact.sentence
    assert judge_client([]) is None  # without the time waited: no sentence (the older call)


def test_non_json_or_an_exit_before_initialize_is_named():
    contact = judge_client([received(1, raw=b"Welcome!")], waited=3)
    assert contact.kind == NOT_ACP and "printed non-JSON" in contact.sentence and "Welcome!" in contact.sentence
    ended = Frame(1, 1, EVENT, 0.2, event=EV_EXIT, detail={"status": "exited with status 3"})
    assert "ended (exited with status 3) before sending initialize" in judge_client([ended], waited=3).sentence
    # an exit after the suite closed the client's stdin is the suite's shutdown, not the client's doing
    closed = Frame(1, 1, EVENT, 0.1, event=EV_STDIN_CLOSED)
    assert "sent no initialize" in judge_client([closed, ended], waited=3).sentence


def test_a_client_that_speaks_json_is_judged_by_the_rules():
    assert judge_client([received(1, INIT)], waited=3) is None
    other = {"jsonrpc": "2.0", "id": 0, "method": "session/new", "params": {"cwd": "/"}}
    assert judge_client([received(1, other)], waited=3) is None  # no initialize first: INIT rules judge that
    v1 = dict(INIT, params={"protocolVersion": 1, "info": {"name": "c", "version": "1"}})
    assert judge_client([received(1, v1)], waited=3).kind == NOT_V2  # in a run that judges version 2
    assert "--acp-protocol 1 judges version 1" in judge_client([received(1, v1)], waited=3).sentence
    assert judge_client([received(1, v1)], waited=3, protocol=1) is None  # a version-1 run judges it
    forced = judge_client([received(1, INIT)], waited=3, protocol=1, forced=True)
    assert forced.kind == NOT_V2 and "which --acp-protocol 1 asks for" in forced.sentence
    # a version that is no integer is the rules' to judge (V1-INIT-005), not a stop
    assert judge_client([received(1, dict(INIT, params={"protocolVersion": "1"}))], waited=3, protocol=1) is None
    assert judge_client([Frame(1, 1, SENT, 0.1, b"{}", {})], waited=3).kind == NOT_ACP
