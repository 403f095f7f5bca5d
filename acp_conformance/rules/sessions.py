"""The session model of a test: per connection, the sessions it knows and what happened to them.

Built from the context's single reading of the stream (``reading.py``), lazily: a connection's model is
computed the first time a monitor asks for it (``ctx.sessions.conn(n)``) and again only if the connection
has read more messages since. It holds *facts*, never a rule's policy:

* ``timeline``: the lifecycle events of the connection in frame order, each naming its session, the frame
  that made it happen and how: ``OPENED`` (a successful first answer to the client's session/new,
  session/resume or session/load), ``LISTED`` (an entry of a successful session/list answer),
  ``ANNOUNCED`` (the agent named it as a child session: a subagent_update, or a ``{"type": "session"}`` /
  ``{"type": "subagent"}`` object in an update), ``END_SENT`` (the client sent session/close or
  session/delete for it) and ``END_ANSWERED`` (the first answer to that request, success or error);
* ``sessions``: per session id (every id the connection made known or the client named), its events, the
  session/resume requests naming it (answered or not), its state_update and session_info_update
  notifications and its turns (session/prompt request -> first response, with the session's updates
  between).

Monitors differ on purpose in what "known", "active" or "closed" means (a list entry makes a session known
for ERR-001 but not open for CLOSE-001; an agent's message may cross a close the suite already sent): each
keeps its own policy, asking ``open_at`` with its own notion of what opens and ends a session.
Only the first answer to a request counts; a duplicate answer is ERR-004's business, not a new session.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..wire.transcript import RECEIVED, SENT
from .reading import NOTIFICATION, REQUEST, RESPONSE, Msg, Reading
from .turns import STATE_UPDATE, session_update

NEW, RESUME, LOAD, LIST = "session/new", "session/resume", "session/load", "session/list"
CLOSE, DELETE, PROMPT = "session/close", "session/delete", "session/prompt"
ENDING = (CLOSE, DELETE)
OPENING = (NEW, RESUME, LOAD)
NOT_FOUND = -32002

OPENED, LISTED, ANNOUNCED, END_SENT, END_ANSWERED = "opened", "listed", "announced", "end sent", "end answered"


@dataclass(eq=False, slots=True)
class Event:
    """One lifecycle fact of a session on a connection."""

    kind: str  # OPENED | LISTED | ANNOUNCED | END_SENT | END_ANSWERED
    sid: str
    msg: Msg  # the frame that made it happen: the answer, the update, or (END_SENT) the request
    how: str  # the request's method (session/new, ...), or the update's sessionUpdate kind for ANNOUNCED
    request: Msg | None = None  # the request answered (END_SENT: the request itself)
    entry: Any = None  # LISTED: the SessionInfo entry

    @property
    def order(self) -> tuple[int, int]:
        return self.msg.order

    @property
    def accepted(self) -> bool:
        """An END_ANSWERED that ended the session: success, or -32002 (it was already gone)."""
        return self.kind == END_ANSWERED and (self.msg.ok or self.msg.error_code == NOT_FOUND)


@dataclass(eq=False)
class Turn:
    """A session/prompt of the client and the session's updates until its first answer."""

    request: Msg
    updates: list[Msg] = field(default_factory=list)

    @property
    def response(self) -> Msg | None:
        return self.request.responses[0] if self.request.responses else None


@dataclass(eq=False)
class Session:
    sid: str
    events: list[Event] = field(default_factory=list)
    resumes: list[Msg] = field(default_factory=list)  # the client's session/resume requests naming it
    named: list[Msg] = field(default_factory=list)  # every request of the client naming it in params.sessionId
    states: list[tuple[Msg, Any]] = field(default_factory=list)  # state_update notifications: (frame, state)
    infos: list[Msg] = field(default_factory=list)  # session_info_update notifications
    turns: list[Turn] = field(default_factory=list)

    def known(self, *hows: str) -> list[Event]:
        """The events that made it known (OPENED, LISTED, ANNOUNCED), of the given methods/kinds if any."""
        return [e for e in self.events if e.kind in (OPENED, LISTED, ANNOUNCED) and (not hows or e.how in hows)]

    @property
    def new_count(self) -> int:
        """How many times session/new returned this id on the connection."""
        return len(self.known(NEW))

    def last(self, upto: Msg | None, which: Callable[[Event], bool]) -> Event | None:
        """Its last event that ``which`` accepts before ``upto`` (None: on the whole connection)."""
        return next((e for e in reversed(self.events) if (upto is None or e.order < upto.order) and which(e)), None)

    def resumes_pending_at(self, m: Msg) -> list[Msg]:
        """Its session/resume requests sent before ``m`` and not answered before it."""
        pending = []
        for r in self.resumes:  # in the order sent
            if r.order >= m.order:
                break
            if not r.responses or r.responses[0].order >= m.order:  # its answers come in the order read
                pending.append(r)
        return pending


EndPolicy = Callable[[Event], bool]


def end_sent(methods: Iterable[str] = ENDING) -> EndPolicy:
    """A session ends when the client sends one of ``methods`` for it."""
    ms = tuple(methods)
    return lambda e: e.kind == END_SENT and e.how in ms


def end_accepted(methods: Iterable[str] = ENDING) -> EndPolicy:
    """A session ends when the agent answers one of ``methods`` for it with success or -32002."""
    ms = tuple(methods)
    return lambda e: e.accepted and e.how in ms


def end_ok(methods: Iterable[str] = ENDING) -> EndPolicy:
    """A session ends when the agent answers one of ``methods`` for it with success."""
    ms = tuple(methods)
    return lambda e: e.kind == END_ANSWERED and e.msg.ok and e.how in ms


def announced_sessions(node: Any, out: set[str], depth: int = 0) -> None:
    """The ids of the ``{"type": "session"|"subagent", "sessionId": ...}`` objects in ``node`` (6 levels deep)."""
    if depth > 6:
        return
    if isinstance(node, dict):
        if node.get("type") in ("session", "subagent") and isinstance(node.get("sessionId"), str):
            out.add(node["sessionId"])
        for v in node.values():
            if isinstance(v, (dict, list)):
                announced_sessions(v, out, depth + 1)
    elif isinstance(node, list):
        for v in node:
            announced_sessions(v, out, depth + 1)


class ConnSessions:
    """The sessions of one connection (see the module's docstring)."""

    def __init__(self, conn: int, msgs: list[Msg], client: str):
        self.conn = conn
        self.client = client  # the direction of the client's messages (SENT when the target is an agent)
        self.timeline: list[Event] = []
        self.sessions: dict[str, Session] = {}
        self.turns: list[Turn] = []
        self._read(msgs)

    def session(self, sid: Any) -> Session | None:
        return self.sessions.get(sid) if isinstance(sid, str) else None

    def _of(self, sid: str) -> Session:
        s = self.sessions.get(sid)
        if s is None:
            s = self.sessions[sid] = Session(sid)
        return s

    def _add(self, e: Event) -> None:
        self.timeline.append(e)
        self._of(e.sid).events.append(e)

    @property
    def new_answers(self) -> list[Event]:
        """Every session/new answer of the connection that returned an id, in order."""
        return [e for e in self.timeline if e.kind == OPENED and e.how == NEW]

    def _read(self, msgs: list[Msg]) -> None:
        open_turns: list[Turn] = []
        for m in msgs:
            if m.direction == self.client:
                self._client_msg(m, open_turns)
            elif m.kind == RESPONSE and m.request is not None and not m.duplicate:
                self._answer(m)
            elif m.kind == NOTIFICATION and m.method == "session/update":
                self._update(m, open_turns)

    def _client_msg(self, m: Msg, open_turns: list[Turn]) -> None:
        sid = m.session_id
        if m.kind != REQUEST or not isinstance(sid, str):
            return
        s = self._of(sid)
        s.named.append(m)
        if m.method == RESUME:
            s.resumes.append(m)
        elif m.method in ENDING:
            self._add(Event(END_SENT, sid, m, m.method, m))
        elif m.method == PROMPT:
            t = Turn(m)
            s.turns.append(t)
            self.turns.append(t)
            open_turns.append(t)

    def _answer(self, m: Msg) -> None:
        rq = m.request
        if rq.direction != self.client:
            return
        method, sid = rq.method, rq.session_id
        if m.ok and method == NEW and isinstance(m.result, dict) and isinstance(m.result.get("sessionId"), str):
            self._add(Event(OPENED, m.result["sessionId"], m, NEW, rq))
        elif m.ok and method in (RESUME, LOAD) and isinstance(sid, str):
            self._add(Event(OPENED, sid, m, method, rq))
        elif m.ok and method == LIST and isinstance(m.result, dict) and isinstance(m.result.get("sessions"), list):
            for entry in m.result["sessions"]:
                if isinstance(entry, dict) and isinstance(entry.get("sessionId"), str):
                    self._add(Event(LISTED, entry["sessionId"], m, LIST, rq, entry))
        elif method in ENDING and isinstance(sid, str):
            self._add(Event(END_ANSWERED, sid, m, method, rq))

    def _update(self, m: Msg, open_turns: list[Turn]) -> None:
        upd = session_update(m.msg)
        sid = m.params.get("sessionId") if upd is not None else None
        if not isinstance(sid, str) or upd is None:
            return
        kind = upd.get("sessionUpdate")
        announced: set[str] = set()
        if kind == "subagent_update" and isinstance(upd.get("sessionId"), str):
            announced.add(upd["sessionId"])
        announced_sessions(upd, announced)
        for child in sorted(announced):
            self._add(Event(ANNOUNCED, child, m, kind if isinstance(kind, str) else ""))
        s = self._of(sid)
        if kind == STATE_UPDATE:
            s.states.append((m, upd.get("state")))
        elif kind == "session_info_update":
            s.infos.append(m)
        for t in list(open_turns):
            r = t.response
            if r is not None and r.order < m.order:
                open_turns.remove(t)
            elif t.request.session_id == sid and t.request.order < m.order:
                t.updates.append(m)

    # -- questions a monitor asks, with its own policy --------------------------------------------
    def open_at(self, upto: Msg | None, ends: EndPolicy, opens: Iterable[str] = OPENING) -> set[str]:
        """The sessions open just before ``upto`` (None: at the end of the connection): the last of their
        OPENED events (of the methods ``opens``) and their ends (``ends``) before it was an opening."""
        return {sid for sid, e in self.last_at(upto, ends, opens).items() if e.kind == OPENED}

    def ended_at(self, upto: Msg | None, ends: EndPolicy, opens: Iterable[str] = OPENING) -> dict[str, Event]:
        """The sessions whose last opening-or-ending event before ``upto`` ended them: sid -> that event."""
        return {sid: e for sid, e in self.last_at(upto, ends, opens).items() if e.kind != OPENED}

    def last_at(self, upto: Msg | None, ends: EndPolicy, opens: Iterable[str] = OPENING) -> dict[str, Event]:
        ops = tuple(opens)
        last: dict[str, Event] = {}
        for e in self.timeline:
            if upto is not None and e.order >= upto.order:
                break
            if (e.kind == OPENED and e.how in ops) or ends(e):
                last[e.sid] = e
        return last

    def known_at(self, upto: Msg | None, kinds: Iterable[str] = (OPENED,), hows: Iterable[str] | None = None) -> set[str]:
        """The sessions with an event of ``kinds`` (and methods ``hows``) before ``upto`` on this connection."""
        ks, hs = tuple(kinds), None if hows is None else tuple(hows)
        return self.sids(lambda e: e.kind in ks and (hs is None or e.how in hs), upto)

    def sids(self, which: Callable[[Event], bool], upto: Msg | None = None) -> set[str]:
        """The sessions with an event ``which`` accepts before ``upto`` (None: on the whole connection)."""
        return {e.sid for e in self.timeline if (upto is None or e.order < upto.order) and which(e)}


class SessionModel:
    """The per-connection session models of one test, computed on first use from the context's reading."""

    def __init__(self, reading: Reading, target_side: str):
        self.reading = reading
        self.client = SENT if target_side != "client" else RECEIVED
        self._conns: dict[int, tuple[int, ConnSessions]] = {}

    def conn(self, conn: int) -> ConnSessions:
        msgs = self.reading.conn(conn).msgs
        cached = self._conns.get(conn)
        if cached is None or cached[0] != len(msgs):
            cached = self._conns[conn] = (len(msgs), ConnSessions(conn, msgs, self.client))
        return cached[1]
