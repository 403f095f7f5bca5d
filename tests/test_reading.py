"""The context's single reading of the stream (rules/reading.py): every frame read once, for every monitor."""

from __future__ import annotations

import json

from acp_conformance.rules.monitor import MonitorContext
from acp_conformance.rules.reading import BATCH, RESPONSE, id_key
from acp_conformance.wire.transcript import EVENT, RECEIVED, SENT, Frame, parse_line


class Stream:
    def __init__(self):
        self.ctx = MonitorContext()
        self.seq = 0
        self.conn = 0

    def _add(self, direction, raw=b"", event=None):
        msg, problem = parse_line(raw) if raw else (None, None)
        f = Frame(self.seq, self.conn, direction, float(self.seq), raw, msg, problem, event, None)
        self.seq += 1
        self.rpc = self.ctx.reading.read(f)
        return f

    def start(self):
        self.conn += 1
        self._add(EVENT, event="start")

    def sent(self, value):
        return self._add(SENT, json.dumps(value).encode())

    def received(self, value):
        return self._add(RECEIVED, json.dumps(value).encode())


def req(i, method="session/new"):
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": {}}


def res(i):
    return {"jsonrpc": "2.0", "id": i, "result": {}}


def test_ids_match_by_type_and_value():
    assert id_key(1) != id_key("1") != id_key(True)
    assert id_key([1]) == id_key([1]) and id_key({"a": 1}) != id_key({"a": 2})  # illegal ids never crash


def test_responses_are_matched_to_requests_batch_members_and_duplicates_included():
    s = Stream()
    s.start()
    s.sent([req(1, "session/list"), req(2, "session/new")])
    assert s.rpc.kind == BATCH and len(s.rpc.msgs) == 2
    s.received(res(2))
    assert (s.rpc.kind, s.rpc.method) == (RESPONSE, "session/new")
    s.received(res(2))  # a second answer: a duplicate, named after no request
    assert s.rpc.method is None and s.rpc.msgs[0].duplicate and s.rpc.msgs[0].request.method == "session/new"
    s.received(res("1"))  # "1" is not 1
    assert s.rpc.method is None and s.rpc.msgs[0].request is None
    conn = s.ctx.reading.conn(1)
    assert [len(m.responses) for m in conn.msgs[:2]] == [0, 2]


def test_a_connection_ends_its_reading_when_another_starts():
    s = Stream()
    s.start()
    s.sent(req(1))
    s.start()  # a restart: the first connection is judged now
    s.conn = 1
    s.received(res(1))  # a late answer from the old process
    assert (s.rpc.kind, s.rpc.method, s.rpc.msgs) == (RESPONSE, "session/new", [])
    old = s.ctx.reading.conn(1)
    assert len(old.msgs) == 1 and not old.msgs[0].responses  # nothing recorded after its judgement
