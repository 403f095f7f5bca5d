"""session/resume: the replay marker, the current-state update, and no marker without replayFrom.

For each ``session/resume`` the suite sends, the updates for that session between the request
and its response are collected on that connection. "With replayFrom" means params.replayFrom is a
well-formed cursor: an object whose ``type`` is "start" or a custom ("_"-prefixed) string. A
malformed cursor ({}, "start", {"type": 7}) must be rejected (RESUME-007 judges that); when the
agent accepts one anyway, only RESUME-004 (a state_update before every successful response) is
judged here, since nothing says whether it then replays. Error responses are not judged here
(RESUME-006 is about them), except that RESUME-005 (no marker without replayFrom) holds whatever
the answer.

Each resume is tracked by its own request. When several resumes of one session overlap (one is sent
before another is answered), the session's updates in between cannot be attributed to one of them:
a finding that depends on that attribution is informational; what holds whatever the attribution
(no replay_complete, or no state_update, at all in a resume's window) is still judged.

RESUME-013 (``ResumeLiveHoldMonitor``):

Live updates held during a replay (RESUME-013, MUST since the v2 Preview's reworded replay_complete).

While it replays a session for ``session/resume`` with a replayFrom cursor, the agent holds the
session's live updates until ``replay_complete``; a live update it wrote before it read the request may
still arrive after the request (in flight), and is allowed. Only what is provably live *and* provably
written during the replay is judged:

* the replay had begun: an update of the session after the request carries a messageId/toolCallId
  that was seen on this connection before the request (history; the first such update marks it);
* the session was not working when the request was written (its last state_update was idle, or none),
  and the suite then wrote a ``session/prompt`` for it (the only cause of new work);
* after that prompt and after the first replayed update, before replay_complete, a state_update
  reports running or requires_action: a state change is never history, and only the prompt written
  after the resume request can have caused it.

The suite creates the situation by writing a prompt right after the resume request (scenario
resume-then-prompt): an agent that finishes the resume before it serves the prompt passes, one that
serves it during the replay without holding its updates fails. A resume without replay_complete is
RESUME-002's (successful) or a truncation (error or no response), not judged here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...wire.transcript import RECEIVED, SENT
from ..monitor import REQUEST, RESPONSE
from ._common import (AGENT_MESSAGE_KINDS, TOOL_KINDS, USER_KINDS, WORK_STATES, ConnLog, ConnMonitor, Msg, fr,
                      hashable, js, secs, session_update, session_update_kind)

_FULL_HISTORY = ("agent_message", "agent_thought")
NO_CURSOR, CURSOR, MALFORMED = "none", "cursor", "malformed"


def cursor_kind(params: Any) -> str:
    """``none`` (replayFrom omitted or null), ``cursor`` (a well-formed cursor: {type: "start"} or a custom
    "_"-prefixed type) or ``malformed`` (anything else: {}, "start", {"type": 7}, {"type": "later"})."""
    rf = params.get("replayFrom") if isinstance(params, dict) else None
    if rf is None:
        return NO_CURSOR
    t = rf.get("type") if isinstance(rf, dict) else None
    if isinstance(t, str) and (t == "start" or t.startswith("_")):
        return CURSOR
    return MALFORMED


@dataclass(eq=False)
class _Resume:
    req: Msg
    sid: str
    cursor: str  # NO_CURSOR | CURSOR | MALFORMED
    resp: Msg | None = None
    markers: list[Msg] = field(default_factory=list)  # replay_complete between request and response
    states: list[Msg] = field(default_factory=list)  # state_update between request and response
    states_after_marker: list[Msg] = field(default_factory=list)
    history_after_marker: list[Msg] = field(default_factory=list)
    replayed: set[Any] = field(default_factory=set)  # ids of full agent messages replayed before the marker
    late_markers: list[Msg] = field(default_factory=list)  # replay_complete after the response
    stop_t: float | None = None  # the next resume of the session (later markers are its own)
    overlaps: list["_Resume"] = field(default_factory=list)  # resumes of the session in flight at the same time
    prompted: bool = False  # a session/prompt for the session was sent after the request: its echo is live

    @property
    def replay(self) -> bool:
        return self.cursor == CURSOR

    def label(self) -> str:
        return (f"session/resume id={js(self.req.id)} of {self.sid!r} "
                + (f"with replayFrom {js(self.req.params.get('replayFrom'), 80)}" if self.cursor != NO_CURSOR
                   else "without replayFrom"))

    def overlap_note(self) -> str:
        ids = ", ".join(f"id={js(o.req.id)}" for o in self.overlaps)
        return (f"{self.label()} overlapped another resume of the session ({ids}: one was sent before the other "
                "was answered), so the session's updates in between cannot be attributed to one of them")


class ResumeMonitor(ConnMonitor):
    rules = ("RESUME-002", "RESUME-003", "RESUME-004", "RESUME-005")

    def analyze(self, log: ConnLog) -> None:
        window = float(self.opt("replay_marker_window", 5.0))
        resumes: list[_Resume] = []
        by_req: dict[int, _Resume] = {}
        for m in log.msgs:
            if m.direction == SENT:
                if m.kind == REQUEST and m.method == "session/resume" and isinstance(m.session_id, str):
                    r = _Resume(m, m.session_id, cursor_kind(m.params))
                    for o in resumes:
                        if o.sid == r.sid and o.stop_t is None:
                            o.stop_t = m.t
                        if o.sid == r.sid and o.resp is None:
                            o.overlaps.append(r)
                            r.overlaps.append(o)
                    resumes.append(r)
                    by_req[id(m)] = r
                elif m.kind == REQUEST and m.method == "session/prompt":
                    for o in resumes:
                        o.prompted = o.prompted or o.sid == m.session_id
                continue
            if m.direction != RECEIVED:
                continue
            if m.kind == RESPONSE:
                if m.request is not None and not m.duplicate and id(m.request) in by_req:
                    by_req[id(m.request)].resp = m
                continue
            su = session_update_kind(m)
            if su is None:
                continue
            sid, upd, kind = su
            for r in resumes:
                if r.sid != sid:
                    continue
                if r.resp is None:
                    if kind == "replay_complete":
                        r.markers.append(m)
                    elif kind == "state_update":
                        r.states.append(m)
                        if r.markers:
                            r.states_after_marker.append(m)
                    elif r.markers:
                        if (kind in USER_KINDS and not r.prompted
                                or kind in _FULL_HISTORY and upd.get("messageId") in r.replayed):
                            r.history_after_marker.append(m)
                    elif kind in _FULL_HISTORY and hashable(upd.get("messageId")):
                        r.replayed.add(upd.get("messageId"))
                elif kind == "replay_complete" and (r.stop_t is None or m.t < r.stop_t):
                    r.late_markers.append(m)

        for r in resumes:
            self._judge(log, r, window)

    def _judge(self, log: ConnLog, r: _Resume, window: float) -> None:
        resp = r.resp
        ok = resp is not None and resp.ok
        if r.replay and ok:
            assert resp is not None
            self._judge_one_marker(r, resp)
            self._judge_state_after_marker(r, resp)
        if ok and (not r.replay or not r.markers):
            # a replay without replay_complete (v2 as released has none; the Preview's RESUME-002 fails it): the
            # current state_update before the response is still RESUME-004's, RESUME-003 having no marker to order
            assert resp is not None
            self._judge_state_before_response(r, resp)
        if r.cursor == NO_CURSOR:
            self._judge_no_marker(log, r, window)

    def _judge_one_marker(self, r: _Resume, resp: Msg) -> None:
        """RESUME-002: a successful resume with replayFrom sends exactly one replay_complete, history before it."""
        req = r.req
        if not r.markers:
            # no replay_complete for the session at all in the window: whatever the attribution
            late = (f"; a replay_complete came only after the response (t={r.late_markers[0].t:.2f})"
                    if r.late_markers else "")
            self.failed("RESUME-002", f"{r.label()} succeeded at t={resp.t:.2f} without a replay_complete for "
                        f"the session before the response{late}.", fr([resp, req] + r.late_markers[:1]))
        elif r.overlaps:
            self.noted("RESUME-002", f"{r.overlap_note()}: {len(r.markers)} replay_complete update(s) for the "
                       "session before its response; not judged.", fr([resp, req, r.markers[0]]))
        elif len(r.markers) > 1:
            self.failed("RESUME-002", f"{r.label()}: {len(r.markers)} replay_complete updates for the session "
                        f"before the response (t={', '.join(f'{x.t:.2f}' for x in r.markers)}); exactly one "
                        "is required.", fr([r.markers[1], r.markers[0], req, resp]))
        elif r.history_after_marker:
            h = r.history_after_marker[0]
            self.failed("RESUME-002", f"{r.label()}: a history update "
                        f"({h.msg['params']['update'].get('sessionUpdate')} "
                        f"{js(h.msg['params']['update'].get('messageId'))}) followed the replay_complete "
                        f"(t={r.markers[0].t:.2f}) at t={h.t:.2f}.", fr([h, r.markers[0], req, resp]))
        else:
            self.pass_few("RESUME-002", f"{r.label()}: exactly one replay_complete (t={r.markers[0].t:.2f}) "
                          f"before the response (t={resp.t:.2f}).", [r.markers[0], req, resp])

    def _judge_state_after_marker(self, r: _Resume, resp: Msg) -> None:
        """RESUME-003: replay_complete, then a state_update, then the response."""
        if r.markers and r.overlaps:
            self.noted("RESUME-003", f"{r.overlap_note()}: the order of replay_complete, state_update and "
                       "response is not judged.", fr([resp, r.req, r.markers[0]]))
        elif r.markers:
            if r.states_after_marker:
                self.pass_few("RESUME-003", f"{r.label()}: replay_complete (t={r.markers[0].t:.2f}), then "
                              f"state_update {js(r.states_after_marker[0].msg['params']['update'].get('state'))} "
                              f"(t={r.states_after_marker[0].t:.2f}), then the response (t={resp.t:.2f}).",
                              [r.states_after_marker[0], r.markers[0], resp])
            else:
                self.failed("RESUME-003", f"{r.label()}: no state_update for the session between the "
                            f"replay_complete (t={r.markers[0].t:.2f}) and the response (t={resp.t:.2f}).",
                            fr([resp, r.markers[0], r.req]))

    def _judge_state_before_response(self, r: _Resume, resp: Msg) -> None:
        """RESUME-004: a successful resume without replay sends a state_update before its response.

        With replayFrom the same ordering is RESUME-003's (its check is the resume without replay), so one
        missing state_update is not counted twice. A malformed cursor the agent accepted: after its
        replay_complete, if it sent one."""
        req = r.req
        anchored = r.cursor == MALFORMED and bool(r.markers)  # without replayFrom a marker is RESUME-005's
        states = r.states_after_marker if anchored else r.states
        after = f" after the replay_complete (t={r.markers[0].t:.2f})" if anchored else " after the request"
        if not r.states:
            # no state_update for the session at all in the window: whatever the attribution
            self.failed("RESUME-004", f"{r.label()} succeeded at t={resp.t:.2f} with no state_update for the "
                        "session after the request before the response.", fr([resp, req]))
        elif r.overlaps:
            self.noted("RESUME-004", f"{r.overlap_note()}: a state_update for the session (t={r.states[0].t:.2f}) "
                       "came before its response, but perhaps for the other resume.", fr([resp, req, r.states[0]]))
        elif states:
            self.pass_few("RESUME-004", f"{r.label()}: state_update "
                          f"{js(states[0].msg['params']['update'].get('state'))} at t={states[0].t:.2f} "
                          f"preceded the response (t={resp.t:.2f}).", [states[0], resp, req])
        else:
            self.failed("RESUME-004", f"{r.label()} succeeded at t={resp.t:.2f} with no state_update for the "
                        f"session{after} before the response.", fr([resp, req] + (r.markers[:1] if anchored else [])))

    def _judge_no_marker(self, log: ConnLog, r: _Resume, window: float) -> None:
        """RESUME-005: a resume without replayFrom sends no replay_complete, before or soon after its answer."""
        resp, req = r.resp, r.req
        late = [x for x in r.late_markers if resp is not None and x.t - resp.t <= window]
        bad = r.markers + late
        if bad and r.overlaps:
            self.noted("RESUME-005", f"{r.overlap_note()}: a replay_complete for the session arrived at "
                       f"t={bad[0].t:.2f}, perhaps for the other resume.", fr([bad[0], req, resp]))
        elif bad:
            b = bad[0]
            when = ("before the response" if b in r.markers else
                    f"{secs(b.t - resp.t)} after the response" if resp is not None else "")
            self.failed("RESUME-005", f"{r.label()}: a replay_complete for the session arrived at t={b.t:.2f} "
                        f"({when}).", fr([b, req, resp]))
        elif resp is not None:
            observed = min(window, log.waited(resp.t)) if r.stop_t is None else min(window, r.stop_t - resp.t)
            self.pass_few("RESUME-005", f"{r.label()}: no replay_complete before the response (t={resp.t:.2f}) "
                          f"nor in the {secs(max(0.0, observed))} observed after it.", [resp, req])


_ID_KINDS = {**{k: "messageId" for k in (*USER_KINDS, *AGENT_MESSAGE_KINDS)}, **{k: "toolCallId" for k in TOOL_KINDS}}


def _ref(upd: dict[str, Any]) -> tuple[str, Any] | None:
    key = _ID_KINDS.get(upd.get("sessionUpdate"))
    return (key, upd.get(key)) if key and hashable(upd.get(key)) else None


class ResumeLiveHoldMonitor(ConnMonitor):
    rules = ("RESUME-013",)

    def analyze(self, log: ConnLog) -> None:
        msgs = log.msgs
        for r in msgs:
            if (r.direction == SENT and r.kind == REQUEST and r.method == "session/resume"
                    and isinstance(r.session_id, str) and cursor_kind(r.params) == CURSOR):
                self._judge(log, r, r.session_id)

    def _judge(self, log: ConnLog, r: Msg, sid: str) -> None:
        msgs = log.msgs
        before = [m for m in msgs if m.order < r.order]
        after = [m for m in msgs if m.order > r.order]
        marker = next((m for m in after if (su := session_update(m)) and su[0] == sid
                       and su[1].get("sessionUpdate") == "replay_complete"), None)
        prompt = next((m for m in after if m.direction == SENT and m.kind == REQUEST and m.method == "session/prompt"
                       and m.session_id == sid), None)
        if marker is None or prompt is None or prompt.order > marker.order:
            return  # no replay_complete (RESUME-002's), or nothing written during the replay that makes work
        label = (f"session/resume id={js(r.id)} of {sid!r} with replayFrom {js(r.params.get('replayFrom'), 80)} "
                 f"(t={r.t:.2f}), then session/prompt id={js(prompt.id)} (t={prompt.t:.2f}), replay_complete at "
                 f"t={marker.t:.2f}")
        if any(m.direction == SENT and m.kind == REQUEST and m.method == "session/resume" and m.session_id == sid
               for m in after if m.order < marker.order):
            self.noted("RESUME-013", f"{label}: another resume of the session overlapped it, so whose replay the "
                       "updates belong to is unknown; not judged.", fr([r, prompt, marker]))
            return
        states = [su[1].get("state") for m in before if (su := session_update(m)) and su[0] == sid
                  and su[1].get("sessionUpdate") == "state_update"]
        if states and states[-1] in WORK_STATES:
            self.noted("RESUME-013", f"{label}: the session was {states[-1]} when the resume was written, so a "
                       "state change during the replay may come from that work; not judged.", fr([r, marker]))
            return
        known = {ref for m in before if (su := session_update(m)) and su[0] == sid and (ref := _ref(su[1]))}
        window = [m for m in after if m.order < marker.order and (su := session_update(m)) and su[0] == sid]
        first = next((m for m in window if (ref := _ref(session_update(m)[1])) and ref in known), None)
        def running(since: Msg) -> Msg | None:
            return next((m for m in window if m.order > since.order
                         and session_update(m)[1].get("sessionUpdate") == "state_update"
                         and session_update(m)[1].get("state") in WORK_STATES), None)

        live = running(max(prompt, first, key=lambda m: m.order)) if first is not None else None
        early = running(prompt)
        if live is not None:
            self.failed("RESUME-013", f"{label}: the session reported {session_update(live)[1].get('state')} at "
                        f"t={live.t:.2f}, after the replay had begun (replayed "
                        f"{session_update(first)[1].get('sessionUpdate')} at t={first.t:.2f}) and before "
                        "replay_complete: a live update caused by the prompt written after the request was not held.",
                        fr([live, first, prompt, r, marker]))
        elif early is not None:
            self.noted("RESUME-013", f"{label}: the session reported {session_update(early)[1].get('state')} at "
                       f"t={early.t:.2f}, before any replayed history: the agent may have served the prompt before "
                       "it began the replay (allowed).", fr([early, prompt, r, marker]))
        else:
            self.pass_few("RESUME-013", f"{label}: no update caused by the prompt (no running state) arrived "
                          "before replay_complete.", [marker, prompt, r])
