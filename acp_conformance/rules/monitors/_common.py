"""Shared helpers of the agent-side monitors (private to ``rules/monitors``).

``ConnMonitor`` keeps one ``ConnLog`` per connection over the context's reading of the stream
(``rules/reading.py``: ``Msg`` objects, a batch's members, responses matched to requests).
A connection is closed, and handed to ``analyze``, when a new connection starts or at the end of
the test; its end time is its first ``eof``/``exit`` event (or the start of the next connection,
or the last frame of the test when it was still alive). Judgements that need "nothing more
arrived" therefore run in ``analyze`` with the whole connection known.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from ...wire.transcript import EV_EOF, EV_EXIT, EV_NOTE, EV_START, EV_STDIN_CLOSED, EVENT, RECEIVED, Frame
from ..findings import Finding
from ..monitor import NOTIFICATION, RESPONSE, Monitor, Rpc
from ..reading import UNPARSED, Msg, id_key  # noqa: F401 - the monitors read them from here
from ..sessions import ConnSessions, SessionModel
from ..turns import IDLE, WORKING, session_update as update_of

USER_KINDS = ("user_message", "user_message_chunk")
AGENT_MESSAGE_KINDS = ("agent_message", "agent_message_chunk", "agent_thought", "agent_thought_chunk")
TOOL_KINDS = ("tool_call_update", "tool_call_content_chunk")
WORK_STATES = WORKING  # (rules/turns.py: the one vocabulary of turns and states)
ENDING_METHODS = ("session/close", "session/delete")  # requests that end a session (and cancel its running work)

CUTS = ("kill", "half-close")  # the faults by which the suite itself ends a connection mid-work (steps_fault.py)


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


def session_update(m: Msg) -> tuple[str, dict[str, Any]] | None:
    """(sessionId, update) for a session/update notification from the target, else None."""
    if m.direction != RECEIVED or m.kind != NOTIFICATION:
        return None
    upd = update_of(m.msg)
    sid = m.params.get("sessionId") if upd is not None else None
    if not isinstance(sid, str) or upd is None:
        return None
    return sid, upd


def answered_request(m: Msg) -> Msg | None:
    """The request that ``m`` answers when ``m`` is the target's first response to it; None for any other frame
    (a repeated answer, an answer to no request, anything but a response from the target)."""
    if m.direction != RECEIVED or m.kind != RESPONSE or m.duplicate:
        return None
    return m.request


def session_update_kind(m: Msg) -> tuple[str, dict[str, Any], Any] | None:
    """(sessionId, update, its sessionUpdate kind) for a session/update notification from the target, else None."""
    su = session_update(m)
    return None if su is None else (su[0], su[1], su[1].get("sessionUpdate"))


def session_updates_after(msgs: Iterable[Msg], after: Msg, sid: str) -> Iterator[tuple[Msg, dict[str, Any], Any]]:
    """The session/update notifications of session ``sid`` that follow ``after``, in frame order:
    (frame, update, its sessionUpdate kind)."""
    for m in msgs:
        if m.order <= after.order:
            continue
        su = session_update(m)
        if su is not None and su[0] == sid:
            yield m, su[1], su[1].get("sessionUpdate")


def request_id_faults(reqs: Iterable[Msg], answers: Iterable[Msg]) -> Iterator[tuple[Msg, Msg | None]]:
    """Walks one side's requests and the other side's responses in frame order and yields each faulty request:
    (request, None) when its id is not an integer or string, (request, earlier) when it reuses the id of an
    earlier request still awaiting its response."""
    pending: dict[tuple[str, Any], Msg] = {}
    for m in sorted(list(reqs) + list(answers), key=lambda m: m.order):
        if m.kind == RESPONSE:
            pending.pop(id_key(m.id), None)
            continue
        if not (isinstance(m.id, str) or (isinstance(m.id, int) and not isinstance(m.id, bool))):
            yield m, None
            continue
        k = id_key(m.id)
        if k in pending:
            yield m, pending[k]
        pending[k] = m


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
    model: SessionModel | None = None  # the context's session model

    @property
    def sessions(self) -> ConnSessions:
        """The session model of this connection (rules/sessions.py), computed once for every monitor."""
        assert self.model is not None
        return self.model.conn(self.conn)

    @property
    def suite_closed(self) -> bool:
        return any(e.event == EV_STDIN_CLOSED for e in self.events)

    @property
    def cut(self) -> Frame | None:
        """The fault note of a kill or a half-close the suite injected on this connection (docs/faults.md), if any:
        work in flight then owes nothing more here (its idle, its answers); the fault's own rules judge it."""
        return next((e for e in self.events if e.event == EV_NOTE and (e.detail or {}).get("fault") in CUTS), None)

    def cut_desc(self) -> str:
        assert self.cut is not None
        what = (self.cut.detail or {}).get("text")
        return f"the suite itself cut the connection mid-work ({what}, t={self.cut.t:.2f})"

    def waited(self, since: float) -> float:
        return max(0.0, (self.end_t if self.end_t is not None else since) - since)


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
            matcher = self.ctx.reading.conn(conn)
            log = self.conns[conn] = ConnLog(conn, msgs=matcher.msgs, pending=matcher.pending,
                                             answered=matcher.answered, model=self.ctx.sessions)
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
        for m in rpc.msgs:  # the context's reading, already in log.msgs
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


@dataclass(eq=False)
class TrackedSession:
    """One session as a monitor follows it: whether its work runs. Its pending resumes (while one is pending, what
    arrives may be replayed history) come from the session model: ``log.sessions.session(sid).resumes_pending_at``."""
    active: bool = False  # reported running/requires_action and not idle since

    def follow_state(self, state: Any) -> bool:
        """Follows a state_update's state; whether it changed ``active`` (work started, or this idle ended it)."""
        was_active = self.active
        if state in WORK_STATES:
            self.active = True
        elif state == IDLE:
            self.active = False
        return self.active != was_active


@dataclass(eq=False)
class CancelCapable:
    """A tool call or terminal of a session, which may advertise ``capabilities.cancel``: each update carrying a
    ``capabilities`` field replaces the stored one."""
    sid: str
    tid: str
    first: Msg
    cancel: Any = None  # the stored capabilities.cancel
    had_cancel: bool = False  # whether it ever advertised one

    def store_capabilities(self, upd: dict[str, Any]) -> None:
        if "capabilities" in upd:
            caps = upd.get("capabilities")
            self.cancel = caps.get("cancel") if isinstance(caps, dict) else None
            self.had_cancel = self.had_cancel or self.cancel is not None


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
