"""The per-connection session model (rules/sessions.py), on hand-built frame lists."""

from __future__ import annotations

import json

from acp_conformance.rules.monitor import MonitorContext
from acp_conformance.rules.sessions import (ANNOUNCED, CLOSE, DELETE, END_ANSWERED, END_SENT, LIST, LISTED, LOAD, NEW,
                                            OPENED, RESUME, end_accepted, end_ok, end_sent)
from acp_conformance.wire.transcript import EVENT, RECEIVED, SENT, Frame, parse_line


class Stream:
    def __init__(self, side: str = "agent"):
        self.ctx = MonitorContext(target_side=side)
        self.seq = 0
        self.conn = 0
        self.side = side

    def _add(self, direction, value=None, event=None):
        raw = json.dumps(value).encode() if value is not None else b""
        msg, problem = parse_line(raw) if raw else (None, None)
        f = Frame(self.seq, self.conn, direction, float(self.seq), raw, msg, problem, event, None)
        self.seq += 1
        self.ctx.feed(f)
        return f

    def start(self):
        self.conn += 1
        self._add(EVENT, event="start")

    def client(self, value):
        return self._add(SENT if self.side == "agent" else RECEIVED, value)

    def agent(self, value):
        return self._add(RECEIVED if self.side == "agent" else SENT, value)

    def model(self, conn=None):
        return self.ctx.sessions.conn(self.conn if conn is None else conn)

    def msg(self, frame):
        return next(m for m in self.ctx.reading.conn(frame.conn).msgs if m.frame is frame)


def rq(i, method, **params):
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": params}


def ok(i, **result):
    return {"jsonrpc": "2.0", "id": i, "result": result}


def err(i, code):
    return {"jsonrpc": "2.0", "id": i, "error": {"code": code, "message": "x"}}


def update(sid, **upd):
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": upd}}


def two_sessions() -> "Stream":
    """A connection on which session/new answered "a", then "b"."""
    s = Stream()
    s.start()
    s.client(rq(1, NEW))
    s.agent(ok(1, sessionId="a"))
    s.client(rq(2, NEW))
    s.agent(ok(2, sessionId="b"))
    return s


def test_how_and_when_each_session_became_known():
    s = Stream()
    s.start()
    s.client(rq(1, NEW, cwd="/w"))
    s.agent(ok(1, sessionId="a"))
    s.client(rq(2, LIST))
    s.agent(ok(2, sessions=[{"sessionId": "a", "cwd": "/w"}, {"sessionId": "b", "cwd": "/w"}, {"cwd": "/x"}]))
    s.client(rq(3, RESUME, sessionId="b", cwd="/w"))
    s.agent(ok(3))
    s.client(rq(4, LOAD, sessionId="c"))
    s.agent(ok(4))
    s.client(rq(5, RESUME, sessionId="d"))
    s.agent(err(5, -32002))  # refused: never known
    s.agent(update("a", sessionUpdate="subagent_update", sessionId="child"))
    m = s.model()
    assert [(e.kind, e.sid, e.how) for e in m.timeline] == [
        (OPENED, "a", NEW), (LISTED, "a", LIST), (LISTED, "b", LIST), (OPENED, "b", RESUME), (OPENED, "c", LOAD),
        (ANNOUNCED, "child", "subagent_update")]
    assert m.sessions["b"].known(LIST)[0].entry == {"sessionId": "b", "cwd": "/w"}
    assert m.sessions["a"].known(NEW)[0].request.params == {"cwd": "/w"}
    assert m.sessions["d"].known() == [] and len(m.sessions["d"].resumes) == 1
    assert m.known_at(None) == {"a", "b", "c"}
    assert m.known_at(None, kinds=(LISTED,)) == {"a", "b"}


def test_session_new_count_and_duplicate_answers_count_once():
    s = Stream()
    s.start()
    s.client(rq(1, NEW))
    s.agent(ok(1, sessionId="a"))
    s.agent(ok(1, sessionId="a"))  # a duplicate answer: not a second session
    s.client(rq(2, NEW))
    s.agent(ok(2, sessionId="a"))  # the same id again: counted
    s.client(rq(3, NEW))
    s.agent(ok(3, sessionId=7))  # not an id
    m = s.model()
    assert m.sessions["a"].new_count == 2 and len(m.new_answers) == 2


def test_ends_under_each_policy():
    s = two_sessions()
    close = s.client(rq(3, CLOSE, sessionId="a"))
    delete = s.client(rq(4, DELETE, sessionId="b"))
    s.agent(ok(3))
    s.agent(err(4, -32601))  # refused: b is still there
    probe = s.client(rq(5, "session/prompt", sessionId="a", prompt=[]))
    m = s.model()
    p = s.msg(probe)
    assert m.open_at(s.msg(close), end_sent()) == {"a", "b"}
    assert m.open_at(s.msg(delete), end_sent()) == {"b"}
    assert m.open_at(p, end_sent()) == set()
    assert m.open_at(p, end_accepted()) == {"b"}
    assert m.open_at(p, end_ok([CLOSE])) == {"b"}
    assert m.open_at(p, end_sent([CLOSE])) == {"b"}
    assert set(m.ended_at(p, end_accepted())) == {"a"}
    kinds = [(e.kind, e.sid, e.accepted) for e in m.timeline if e.kind in (END_SENT, END_ANSWERED)]
    assert kinds == [(END_SENT, "a", False), (END_SENT, "b", False), (END_ANSWERED, "a", True),
                     (END_ANSWERED, "b", False)]


def test_a_resume_reopens_and_pending_resumes_are_known():
    s = Stream()
    s.start()
    s.client(rq(1, NEW))
    s.agent(ok(1, sessionId="a"))
    s.client(rq(2, CLOSE, sessionId="a"))
    s.agent(ok(2))
    r = s.client(rq(3, RESUME, sessionId="a"))
    mid = s.agent(update("a", sessionUpdate="agent_message", content={"type": "text", "text": "old"}))
    s.agent(ok(3))
    after = s.client(rq(4, "session/prompt", sessionId="a", prompt=[]))
    m = s.model()
    a = m.sessions["a"]
    assert a.resumes_pending_at(s.msg(mid)) == [s.msg(r)]
    assert a.resumes_pending_at(s.msg(after)) == []
    assert m.open_at(s.msg(mid), end_ok()) == set()
    assert m.open_at(s.msg(after), end_ok()) == {"a"}
    assert m.open_at(s.msg(after), end_ok(), opens=(NEW,)) == set()


def test_turns_states_and_infos():
    s = two_sessions()
    s.client(rq(3, "session/prompt", sessionId="a", prompt=[]))
    run = s.agent(update("a", sessionUpdate="state_update", state="running"))
    other = s.agent(update("b", sessionUpdate="agent_message"))
    info = s.agent(update("a", sessionUpdate="session_info_update", title="t"))
    idle = s.agent(update("a", sessionUpdate="state_update", state="idle"))
    s.agent(ok(3, messageId="m"))
    late = s.agent(update("a", sessionUpdate="agent_message"))
    m = s.model()
    a = m.sessions["a"]
    (turn,) = a.turns
    assert [x.frame for x in turn.updates] == [run, info, idle]
    assert turn.response.result == {"messageId": "m"}
    assert [(x.frame, st) for x, st in a.states] == [(run, "running"), (idle, "idle")]
    assert [x.frame for x in a.infos] == [info]
    assert other is not late and m.sessions["b"].turns == []


def test_an_unanswered_turn_collects_until_the_end_and_the_model_follows_the_stream():
    s = Stream()
    s.start()
    s.client(rq(1, NEW))
    s.agent(ok(1, sessionId="a"))
    s.client(rq(2, "session/prompt", sessionId="a", prompt=[]))
    first = s.model()
    assert first.sessions["a"].turns[0].updates == []
    s.agent(update("a", sessionUpdate="agent_message"))
    assert s.model() is not first and len(s.model().sessions["a"].turns[0].updates) == 1
    assert s.model() is s.model()  # computed once while nothing more was read


def test_connections_are_separate_and_the_client_side_reads_the_other_direction():
    s = Stream(side="client")
    s.start()
    s.client(rq(1, NEW, cwd="/w"))
    s.agent(ok(1, sessionId="a"))
    s.start()
    s.client(rq(1, RESUME, sessionId="a", cwd="/w"))
    s.agent(ok(1))
    assert [(e.kind, e.how) for e in s.model(1).timeline] == [(OPENED, NEW)]
    assert [(e.kind, e.how) for e in s.model(2).timeline] == [(OPENED, RESUME)]
    # requests from the agent's direction never open a session
    t = Stream()
    t.start()
    t.agent(rq(1, NEW))
    t.client(ok(1, sessionId="x"))
    assert t.model().timeline == []


def test_announced_children_anywhere_in_an_update():
    s = Stream()
    s.start()
    s.agent(update("a", sessionUpdate="tool_call_update", toolCallId="t",
                   content=[{"type": "session", "sessionId": "kid"}]))
    assert {(e.kind, e.sid) for e in s.model().timeline} == {(ANNOUNCED, "kid")}


def test_nothing_is_computed_until_a_monitor_asks():
    s = Stream()
    s.start()
    s.client(rq(1, NEW))
    s.agent(ok(1, sessionId="a"))
    assert s.ctx._sessions is None
    assert s.model().sessions["a"].new_count == 1
