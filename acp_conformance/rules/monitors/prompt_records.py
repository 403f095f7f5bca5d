"""The prompt monitor's reading of one connection (prompt.py judges it): each session/prompt request becomes a
record of what is attributed to it - its response, the user messages seen while it is in flight, the running
and the idle of its work - as prompt.py's docstring describes.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..monitor import REQUEST
from ..sessions import NEW, OPENED, ConnSessions
from ._common import USER_KINDS, WORK_STATES, Msg, TrackedSession, answered_request, hashable, js, session_update_kind


@dataclass(eq=False)
class UserMessage:
    mid: Any
    m: Msg
    new: bool
    update: dict[str, Any]


@dataclass(eq=False)
class PromptRecord:
    req: Msg
    sid: str
    skey: tuple[str, int]
    was_active: bool  # the session was busy with earlier work when the prompt was sent
    overlap: bool = False  # another prompt of the session was in flight at the same time
    resp: Msg | None = None
    running: Msg | None = None
    end_idle: Msg | None = None
    early_idle: Msg | None = None  # an idle before the response with no running: maybe stray, decided later
    joined_running: Msg | None = None  # accepted while earlier work ran: that work's running
    joined: tuple[Msg | None, Msg] | None = None  # (running, idle) of the busy work it was inserted into
    next_prompt_t: float | None = None
    users: list[UserMessage] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.resp is not None and self.resp.ok

    @property
    def rejected(self) -> bool:
        return self.resp is not None and not self.resp.ok

    @property
    def mid(self) -> Any:
        r = self.resp.result if self.resp is not None else None
        return r.get("messageId") if isinstance(r, dict) else None

    def in_flight(self) -> bool:
        return self.resp is None or (self.ok and self.end_idle is None)

    def collects(self, t: float, window: float) -> bool:
        if self.resp is None:
            return True
        if self.ok:
            return self.end_idle is None
        return t - self.resp.t <= window and (self.next_prompt_t is None or t < self.next_prompt_t)

    def label(self) -> str:
        return f"session/prompt id={js(self.req.id)} for {self.sid!r}"


@dataclass(eq=False)
class PromptSession(TrackedSession):
    running: Msg | None = None
    recs: list[PromptRecord] = field(default_factory=list)


class PromptWalk:
    """Attributes one connection's frames, in order, to its prompt records. ``instance`` (session id -> how often
    session/new returned it) and ``seen_users`` (the first frame of each user-message id) span the test."""

    def __init__(self, window: float, instance: dict[str, int], seen_users: dict[tuple[str, int], dict[Any, Msg]],
                 model: ConnSessions):
        self.window = window
        self.model = model
        self.instance = instance
        self.seen_users = seen_users
        self.sess: defaultdict[str, PromptSession] = defaultdict(PromptSession)
        self.by_req: dict[int, PromptRecord] = {}
        self.recs: list[PromptRecord] = []

    def skey(self, sid: str) -> tuple[str, int]:
        return (sid, self.instance.get(sid, 0))

    # -- the suite's requests -----------------------------------------------------------------
    def follow_request(self, m: Msg) -> None:
        if m.kind == REQUEST and isinstance(m.session_id, str):
            sid = m.session_id
            if m.method == "session/prompt":
                self._new_prompt(m, sid)

    def _new_prompt(self, m: Msg, sid: str) -> None:
        st = self.sess[sid]
        inflight = [r for r in st.recs if r.in_flight()]
        rec = PromptRecord(m, sid, self.skey(sid), was_active=st.active, overlap=bool(inflight))
        for r in inflight:
            r.overlap = True
        for r in st.recs:
            if r.rejected and r.next_prompt_t is None:
                r.next_prompt_t = m.t
        st.recs.append(rec)
        self.recs.append(rec)
        self.by_req[id(m)] = rec

    # -- the target's answers -----------------------------------------------------------------
    def follow_answer(self, m: Msg) -> PromptRecord | None:
        """The target's first answer to a request; the prompt record it answers (None: not a prompt's)."""
        rq = answered_request(m)
        if rq is None:
            return None
        if rq.method == "session/prompt" and id(rq) in self.by_req:
            rec = self.by_req[id(rq)]
            rec.resp = m
            st = self.sess[rec.sid]
            if m.ok and rec.was_active and st.active and st.running is not None:
                rec.joined_running = st.running  # inserted into the running work, maybe joining it
            return rec
        if rq.method == "session/new" and m.ok and isinstance(m.result, dict):
            sid = m.result.get("sessionId")
            if isinstance(sid, str):
                self.instance[sid] = self.instance.get(sid, 0) + 1
                self.sess.pop(sid, None)
        return None

    # -- the target's updates -----------------------------------------------------------------
    def follow_update(self, m: Msg) -> tuple[str, Msg, dict[str, Any], Msg | None] | None:
        """A session/update's user message or state, attributed to the session's prompts. For an idle that ended
        active work outside a resume window: (session id, the idle, its update, the work's running), for
        PROMPT-013; else None."""
        su = session_update_kind(m)  # None for a response: it was handled by follow_answer
        if su is None:
            return None
        sid, upd, kind = su
        st = self.sess[sid]
        pending = self._resumes_pending(sid, m)
        # a prompt written after the pending resume: its new user message and its running are live, not history
        prompted = bool(pending) and any(r.req.order > pending[0].order for r in st.recs if r.in_flight())
        if kind in USER_KINDS:
            self._user_message(m, sid, upd, st, bool(pending), prompted)
        elif kind == "state_update":
            state = upd.get("state")
            changed = st.follow_state(state)
            if state in WORK_STATES:
                self._running(m, st, changed, bool(pending), prompted)
            elif state == "idle" and not pending:
                self._idle(m, st, changed)
                if changed:
                    return sid, m, upd, st.running
        return None

    def _resumes_pending(self, sid: str, m: Msg) -> list[Msg]:
        """The session's resumes pending at ``m`` (what arrives may be history), sent since its last session/new
        answer: a session/new that returns the id again starts a new instance, with nothing pending."""
        facts = self.model.session(sid)
        pending = facts.resumes_pending_at(m) if facts is not None else []
        if not pending:  # most updates: no walk back through the session's events
            return []
        new = facts.last(m, lambda e: e.kind == OPENED and e.how == NEW)
        return [r for r in pending if new is None or r.order > new.order]

    def _user_message(self, m: Msg, sid: str, upd: dict[str, Any], st: PromptSession, resuming: bool,
                      prompted: bool) -> None:
        mid = upd.get("messageId")
        if not hashable(mid):
            return
        seen = self.seen_users.setdefault(self.skey(sid), {})
        new = mid not in seen
        if new:
            seen[mid] = m
        if resuming and not (prompted and new):
            return
        for r in st.recs:
            if r.collects(m.t, self.window):
                r.users.append(UserMessage(mid, m, new, upd))

    def _running(self, m: Msg, st: PromptSession, changed: bool, resuming: bool, prompted: bool) -> None:
        if changed:
            st.running = m
        if resuming and not prompted:
            return
        for r in st.recs:
            if r.end_idle is None and not r.rejected and not r.was_active and r.running is None:
                r.running = m

    def _idle(self, m: Msg, st: PromptSession, changed: bool) -> None:
        for r in st.recs:
            if r.end_idle is not None or r.rejected:
                continue
            if r.running is not None:
                r.end_idle = m
            elif r.was_active:
                r.was_active = False  # the earlier work ended; this prompt's starts now ...
                if r.joined_running is not None and changed:  # ... unless it joined that work
                    r.joined = (r.joined_running, m)  # (decided at the end)
            elif r.joined is not None and not changed:
                pass  # a repeated idle snapshot after the joined work: no work of its own ended
            elif r.resp is None:
                # Before the response and with no running: a stray idle of earlier work can
                # cross the new request on the wire. It ends this prompt's work only if no
                # running follows (decided once the connection is over).
                if r.early_idle is None:
                    r.early_idle = m
            else:
                r.end_idle = m

    # -- the end of the connection ------------------------------------------------------------
    def settle(self) -> None:
        """Decides what waited for the whole connection: joined work, and early idles."""
        for rec in self.recs:
            if rec.end_idle is None and rec.running is None and rec.joined is not None:
                rec.running, rec.end_idle = rec.joined  # no work of its own followed: it joined the busy work
            elif rec.running is None and rec.was_active and rec.joined_running is not None:
                rec.running = rec.joined_running  # joined work that was still running when observation ended
            if rec.end_idle is None and rec.running is None and rec.early_idle is not None:
                rec.end_idle = rec.early_idle
