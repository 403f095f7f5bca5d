"""The single reading of the JSON-RPC stream of a test, owned by its ``MonitorContext``.

Every frame is read once, before any monitor sees it: expanded into ``Msg`` objects (a batch becomes
one ``Msg`` per member) and, per connection, responses matched to requests by direction and exact id
(batch members and duplicate responses included). Monitors get the frame's ``Rpc`` (its kind, the
method, its messages); the per-connection monitors share the connection's message list.

A connection's reading ends when another connection starts (the monitors judge it then): a late frame
of it is still classified, and a response still named after the request it answers, but nothing more
is recorded there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..wire.transcript import EV_START, EVENT, RECEIVED, SENT, Frame

REQUEST = "request"
NOTIFICATION = "notification"
RESPONSE = "response"
BATCH = "batch"
INVALID = "invalid"  # parsed JSON that is not a JSON-RPC 2.0 message
UNPARSED = "unparsed"  # not JSON at all (or a line the suite wrote on purpose that is not JSON)


def classify(msg: Any) -> str:
    if isinstance(msg, list):
        return BATCH
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        return INVALID
    if "method" in msg:
        if not isinstance(msg["method"], str):
            return INVALID
        return REQUEST if "id" in msg else NOTIFICATION
    if "id" in msg and (("result" in msg) != ("error" in msg)):
        return RESPONSE
    return INVALID


def id_key(value: Any) -> tuple[str, Any]:
    # JSON-RPC ids match by type and value: 1 and "1" differ, True is not 1.
    try:
        hash(value)
    except TypeError:
        return (type(value).__name__, json.dumps(value, sort_keys=True))
    return (type(value).__name__, value)


@dataclass(eq=False, slots=True)
class Msg:
    """One JSON-RPC message: a frame, or one member of a batch frame."""

    frame: Frame
    kind: str
    msg: Any
    index: int | None = None  # position in a batch
    request: "Msg | None" = None  # for a response: the request it answers
    duplicate: bool = False  # a further response to an already answered request
    responses: list["Msg"] = field(default_factory=list)  # for a request: every response, in order

    @property
    def t(self) -> float:
        return self.frame.t

    @property
    def conn(self) -> int:
        return self.frame.conn

    @property
    def direction(self) -> str:
        return self.frame.direction

    @property
    def order(self) -> tuple[int, int]:
        return (self.frame.seq, self.index or 0)

    @property
    def is_dict(self) -> bool:
        return isinstance(self.msg, dict)

    @property
    def id(self) -> Any:
        return self.msg.get("id") if self.is_dict else None

    @property
    def method(self) -> str | None:
        if self.kind in (REQUEST, NOTIFICATION):
            return self.msg["method"]
        if self.kind == RESPONSE and self.request is not None:
            return self.request.method
        return None

    @property
    def params(self) -> Any:
        return self.msg.get("params") if self.is_dict else None

    @property
    def result(self) -> Any:
        return self.msg.get("result") if self.is_dict else None

    @property
    def error(self) -> Any:
        return self.msg.get("error") if self.is_dict else None

    @property
    def ok(self) -> bool:
        return self.kind == RESPONSE and "result" in self.msg

    @property
    def error_code(self) -> Any:
        e = self.error
        return e.get("code") if isinstance(e, dict) else None

    @property
    def session_id(self) -> Any:
        """params.sessionId; None when absent, or when it is an array or object (no session has such an
        id, and monitors use it as a key: the schema check judges that shape)."""
        p = self.params
        sid = p.get("sessionId") if isinstance(p, dict) else None
        return None if isinstance(sid, (list, dict)) else sid

    def frames(self) -> list[Frame]:
        return [self.frame]


def expand(frame: Frame) -> list[Msg]:
    # A line the suite wrote that is not JSON (a deliberately truncated request) is recorded with msg None.
    sent_garbage = frame.direction == SENT and frame.msg is None and frame.raw.strip() not in (b"", b"null")
    if frame.problem is not None or sent_garbage:
        return [Msg(frame, UNPARSED, None)]
    if isinstance(frame.msg, list):
        return [Msg(frame, classify(x), x, index=i) for i, x in enumerate(frame.msg)]
    return [Msg(frame, classify(frame.msg), frame.msg)]


@dataclass(eq=False)
class ConnReading:
    """The messages of one connection in order, and responses matched to requests (by direction
    and exact id; a further response to an answered request is a duplicate of the last one)."""

    closed: bool = False  # another connection started: nothing more is recorded here

    msgs: list[Msg] = field(default_factory=list)
    pending: dict[tuple[str, tuple[str, Any]], list[Msg]] = field(default_factory=dict)
    answered: dict[tuple[str, tuple[str, Any]], list[Msg]] = field(default_factory=dict)

    def match(self, m: Msg) -> None:
        if m.kind == REQUEST and m.id is not None:
            self.pending.setdefault((m.direction, id_key(m.id)), []).append(m)
        elif m.kind == RESPONSE:
            other = RECEIVED if m.direction == SENT else SENT
            key = (other, id_key(m.id))
            waiting = self.pending.get(key)
            if waiting:
                req = waiting.pop(0)
                m.request = req
                req.responses.append(m)
                self.answered.setdefault(key, []).append(req)
            elif self.answered.get(key):
                req = self.answered[key][-1]
                m.request = req
                m.duplicate = True
                req.responses.append(m)

    def request_method(self, m: Msg) -> str | None:
        """The method of the request a response would answer, without recording it (a late frame)."""
        other = RECEIVED if m.direction == SENT else SENT
        waiting = self.pending.get((other, id_key(m.id)))
        return waiting[0].method if waiting else None


@dataclass(eq=False, slots=True)
class Rpc:
    """The reading of one message frame, as every monitor gets it with the frame."""

    frame: Frame
    kind: str  # request | notification | response | batch | invalid | unparsed
    method: str | None  # a response's is its request's (None: unknown id)
    msgs: list[Msg]  # its messages (a batch's members), as recorded for the connection ([] once it is closed)


class Reading:
    """The messages of every connection of one test, read once per frame."""

    def __init__(self) -> None:
        self.conns: dict[int, ConnReading] = {}

    def conn(self, conn: int) -> ConnReading:
        c = self.conns.get(conn)
        if c is None:
            c = self.conns[conn] = ConnReading()
        return c

    def read(self, frame: Frame) -> Rpc | None:
        """Record ``frame``; its ``Rpc``, or None for an event."""
        c = self.conn(frame.conn)
        if frame.direction == EVENT:
            if frame.event == EV_START:
                for n, other in self.conns.items():
                    if n != frame.conn:
                        other.closed = True
            return None
        msgs = expand(frame)
        if not c.closed:
            for m in msgs:
                c.match(m)
                c.msgs.append(m)
        if frame.problem is None and isinstance(frame.msg, list):
            return Rpc(frame, BATCH, None, msgs if not c.closed else [])
        m = msgs[0]
        method = m.method if not c.closed or m.kind != RESPONSE else c.request_method(m)
        return Rpc(frame, m.kind, method if not m.duplicate else None, msgs if not c.closed else [])
