"""Shared helpers of the agent-side monitors (private to ``rules/monitors``).

``ConnMonitor`` reads every message frame into ``Msg`` objects (a batch becomes one ``Msg`` per
member), matches responses to requests itself (so batch members and duplicate responses are
matched too: ``Rpc`` only matches single messages), and keeps one ``ConnLog`` per connection.
A connection is closed, and handed to ``analyze``, when a new connection starts or at the end of
the test; its end time is its first ``eof``/``exit`` event (or the start of the next connection,
or the last frame of the test when it was still alive). Judgements that need "nothing more
arrived" therefore run in ``analyze`` with the whole connection known.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from ...wire.transcript import EV_EOF, EV_EXIT, EV_START, EV_STDIN_CLOSED, EVENT, RECEIVED, SENT, Frame
from ..findings import Finding
from ..monitor import NOTIFICATION, REQUEST, RESPONSE, Monitor, Rpc, classify

UNPARSED = "unparsed"

USER_KINDS = ("user_message", "user_message_chunk")
AGENT_MESSAGE_KINDS = ("agent_message", "agent_message_chunk", "agent_thought", "agent_thought_chunk")
TOOL_KINDS = ("tool_call_update", "tool_call_content_chunk")
WORK_STATES = ("running", "requires_action")
ENDING_METHODS = ("session/close", "session/delete")  # requests that end a session (and cancel its running work)


def id_key(value: Any) -> tuple[str, Any]:
    # JSON-RPC ids match by type and value: 1 and "1" differ, True is not 1.
    try:
        hash(value)
    except TypeError:
        return (type(value).__name__, json.dumps(value, sort_keys=True))
    return (type(value).__name__, value)


def js(value: Any, limit: int = 200) -> str:
    """Compact JSON for messages, cut to ``limit`` characters."""
    if isinstance(value, str) and len(value) > limit:
        value = value[: limit + 1]  # never serialise a huge string only to cut it
    try:
        s = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        s = repr(value)
    return s if len(s) <= limit else s[:limit] + "..."


def secs(x: float) -> str:
    return f"{x:.2f} s"


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
        p = self.params
        return p.get("sessionId") if isinstance(p, dict) else None

    def frames(self) -> list[Frame]:
        return [self.frame]


def session_update(m: Msg) -> tuple[str, dict[str, Any]] | None:
    """(sessionId, update) for a session/update notification from the target, else None."""
    if m.direction != RECEIVED or m.kind != NOTIFICATION or m.method != "session/update":
        return None
    p = m.params
    if not isinstance(p, dict):
        return None
    sid, upd = p.get("sessionId"), p.get("update")
    if not isinstance(sid, str) or not isinstance(upd, dict):
        return None
    return sid, upd


def offers_config_options(msgs: Iterable[Msg]) -> bool:
    """Whether the agent advertised config options (a non-empty configOptions array in a response or a
    config_option_update). Without them, session/set_config_option is a method it need not have: agents
    "MUST support this method for any session where they advertise config options", so -32601 is a
    legal answer to it."""
    for m in msgs:
        if m.direction != RECEIVED:
            continue
        carrier = m.result if m.kind == RESPONSE and m.ok else None
        su = session_update(m)
        if su is not None and su[1].get("sessionUpdate") == "config_option_update":
            carrier = su[1]
        if isinstance(carrier, dict) and isinstance(carrier.get("configOptions"), list) and carrier["configOptions"]:
            return True
    return False


def hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def expand(frame: Frame) -> list[Msg]:
    # A line the suite wrote that is not JSON (a deliberately truncated request) is recorded with msg None.
    sent_garbage = frame.direction == SENT and frame.msg is None and frame.raw.strip() not in (b"", b"null")
    if frame.problem is not None or sent_garbage:
        return [Msg(frame, UNPARSED, None)]
    if isinstance(frame.msg, list):
        return [Msg(frame, classify(x), x, index=i) for i, x in enumerate(frame.msg)]
    return [Msg(frame, classify(frame.msg), frame.msg)]


@dataclass(eq=False)
class ConnLog:
    conn: int
    msgs: list[Msg] = field(default_factory=list)
    events: list[Frame] = field(default_factory=list)
    end: Frame | None = None  # first eof/exit event
    end_t: float | None = None  # set when the connection is closed for analysis
    end_desc: str = ""
    alive: bool = False  # still running when the test ended
    closed: bool = False
    pending: dict[tuple[str, tuple[str, Any]], list[Msg]] = field(default_factory=dict)
    answered: dict[tuple[str, tuple[str, Any]], list[Msg]] = field(default_factory=dict)

    @property
    def suite_closed(self) -> bool:
        return any(e.event == EV_STDIN_CLOSED for e in self.events)

    def waited(self, since: float) -> float:
        return max(0.0, (self.end_t if self.end_t is not None else since) - since)


@dataclass(eq=False)
class _Matcher:
    """The messages of one connection in order, and responses matched to requests (by direction
    and exact id)."""

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


class _SharedReading:
    """The message reading of a test, done once for every ConnMonitor of its context.

    Each monitor used to expand and match every frame itself: with twenty monitors that was twenty
    Msg objects per frame (most of the suite's memory and per-frame cost). The reading is the same
    for all of them, so the first monitor to see a frame reads it and the others reuse the result;
    frames reach the monitors one at a time, in order, so remembering the last frame is enough.
    """

    def __init__(self) -> None:
        self.matchers: dict[int, _Matcher] = {}
        self.frame: Frame | None = None  # the frame last read (by identity: seqs may restart)
        self.msgs: list[Msg] = []

    def matcher(self, conn: int) -> _Matcher:
        m = self.matchers.get(conn)
        if m is None:
            m = self.matchers[conn] = _Matcher()
        return m

    def read(self, frame: Frame) -> list[Msg]:
        if self.frame is not frame:
            matcher = self.matcher(frame.conn)
            msgs = expand(frame)
            for m in msgs:
                matcher.match(m)
                matcher.msgs.append(m)
            self.frame, self.msgs = frame, msgs
        return self.msgs


def _shared_reading(ctx: Any) -> _SharedReading:
    reading = getattr(ctx, "_conn_reading", None)
    if reading is None:
        reading = _SharedReading()
        ctx._conn_reading = reading
    return reading


class ConnMonitor(Monitor):
    """A monitor that judges per connection, with its own message reading and matching."""

    pass_limit = 3  # passes per rule (and key) and test

    def __init__(self, ctx):
        super().__init__(ctx)
        self.conns: dict[int, ConnLog] = {}
        self.last_t = 0.0
        self._passes: dict[tuple[str, Any], int] = {}

    # -- options ------------------------------------------------------------------------------
    def opt(self, name: str, default: Any) -> Any:
        v = (self.ctx.options or {}).get(name, default)
        return default if v is None else v

    # -- the stream ---------------------------------------------------------------------------
    def _log(self, conn: int) -> ConnLog:
        log = self.conns.get(conn)
        if log is None:
            matcher = _shared_reading(self.ctx).matcher(conn)
            log = self.conns[conn] = ConnLog(conn, msgs=matcher.msgs, pending=matcher.pending,
                                             answered=matcher.answered)
        return log

    def on_frame(self, frame: Frame, rpc: Rpc | None) -> None:
        self.last_t = max(self.last_t, frame.t)
        if frame.direction == EVENT:
            if frame.event == EV_START:
                for c, log in list(self.conns.items()):
                    if c != frame.conn and not log.closed:
                        self._close(log, frame.t, f"the target was restarted (new connection at t={frame.t:.2f})")
            log = self._log(frame.conn)
            log.events.append(frame)
            if frame.event in (EV_EOF, EV_EXIT) and log.end is None:
                log.end = frame
            self.on_event(log, frame)
            return
        log = self._log(frame.conn)
        if log.closed:
            return  # a late frame of an analysed connection: nothing more to judge there
        for m in _shared_reading(self.ctx).read(frame):  # read() also appends them to log.msgs
            self.on_msg(log, m)

    def _close(self, log: ConnLog, t: float, desc: str, alive: bool = False) -> None:
        log.closed = True
        if log.end is not None:
            log.end_t = log.end.t
            if log.end.event == EV_EXIT:
                d = log.end.detail or {}
                how = f"returncode {d.get('returncode')}" if d.get("signal") is None else f"signal {d.get('signal')}"
                log.end_desc = f"the target exited ({how}) at t={log.end.t:.2f}"
            else:
                log.end_desc = f"the target closed its stdout at t={log.end.t:.2f}"
            if log.suite_closed:
                log.end_desc += " after the suite closed its stdin"
        else:
            log.end_t = t
            log.end_desc = desc
            log.alive = alive
        self.analyze(log)

    def finish(self) -> None:
        for log in list(self.conns.values()):
            if not log.closed:
                self._close(log, self.last_t, f"the test ended at t={self.last_t:.2f} with the target still running",
                            alive=True)
        self.finish_test()

    # -- hooks --------------------------------------------------------------------------------
    def on_event(self, log: ConnLog, frame: Frame) -> None:
        pass

    def on_msg(self, log: ConnLog, m: Msg) -> None:
        pass

    def analyze(self, log: ConnLog) -> None:
        pass

    def finish_test(self) -> None:
        pass

    # -- reporting ----------------------------------------------------------------------------
    def pass_few(self, rule: str, message: str, frames: Iterable[Frame | int | Msg] = (),
                 key: Any = None, limit: int | None = None) -> Finding | None:
        k = (rule, key)
        n = self._passes.get(k, 0)
        if n >= (self.pass_limit if limit is None else limit):
            return None
        self._passes[k] = n + 1
        return self.passed(rule, message, fr(frames))


class FrameLogMixin:
    """Keeps every frame of each connection (ConnLog keeps messages only; an empty batch has none)."""

    def _frames_of(self, conn: int) -> list[Frame]:
        d = self.__dict__.setdefault("_frames", {})
        return d.setdefault(conn, [])

    def on_frame(self, frame: Frame, rpc: Rpc | None) -> None:
        if frame.direction != EVENT:
            log = self.conns.get(frame.conn)
            if log is None or not log.closed:
                self._frames_of(frame.conn).append(frame)
        super().on_frame(frame, rpc)


def fr(items: Iterable[Frame | int | Msg | None]) -> list[Frame | int]:
    """Frames for a finding, in order, without repeats (Msg -> its frame, None dropped)."""
    out: list[Frame | int] = []
    seen: set[int] = set()
    for x in items:
        if x is None:
            continue
        if isinstance(x, Msg):
            x = x.frame
        s = x.seq if isinstance(x, Frame) else int(x)
        if s not in seen:
            seen.add(s)
            out.append(x)
    return out


def raw_carries_id(raw: bytes, value: Any) -> bool:
    """Does an unreadable line (truncated JSON) visibly carry ``"id": value``?"""
    try:
        text = raw.decode("utf-8", errors="replace")
        # the id as JSON, with non-ASCII characters escaped or written as they are
        return any(re.search(r'"id"\s*:\s*' + re.escape(json.dumps(value, ensure_ascii=ascii)), text) is not None
                   for ascii in (True, False))
    except (TypeError, ValueError):
        return False


def is_abs_path(p: Any) -> bool:
    return isinstance(p, str) and (p.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", p) is not None)
