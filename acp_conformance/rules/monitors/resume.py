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

session/resume, across the connections of one test: replay of history, original ids, no replay
without replayFrom, unsupported cursors rejected, array-valued result members.

*History* of a session is what the test saw live (outside any resume window): user messages (id and
content of the live user_message), agent messages/thoughts and tool calls, by id. A replayed user
message "is" a live one when its content equals the live content (PROMPT-007). A resume window
is the time between a session/resume request and its response; the updates in it for the session are
the replay. The monitor keeps its own state across connections because history crosses restarts.

Each resume is tracked by its own request. When several resumes of one session are in flight on a
connection at once, each update in between goes to all of them and cannot be attributed: a finding
that depends on the attribution is then informational. What the response alone shows (a malformed
cursor accepted, the shape of the result) is judged whatever the overlap.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ...wire.transcript import RECEIVED, SENT
from ..monitor import REQUEST, RESPONSE
from ._common import (AGENT_MESSAGE_KINDS, TOOL_KINDS, USER_KINDS, ConnLog, ConnMonitor, Msg, fr, hashable, js, secs,
                      session_update)


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
                continue
            if m.direction != RECEIVED:
                continue
            if m.kind == RESPONSE:
                if m.request is not None and not m.duplicate and id(m.request) in by_req:
                    by_req[id(m.request)].resp = m
                continue
            su = session_update(m)
            if su is None:
                continue
            sid, upd = su
            kind = upd.get("sessionUpdate")
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
                        if kind in USER_KINDS or (kind in _FULL_HISTORY and upd.get("messageId") in r.replayed):
                            r.history_after_marker.append(m)
                    elif kind in _FULL_HISTORY and hashable(upd.get("messageId")):
                        r.replayed.add(upd.get("messageId"))
                elif kind == "replay_complete" and (r.stop_t is None or m.t < r.stop_t):
                    r.late_markers.append(m)

        for r in resumes:
            self._judge(log, r, window)

    def _judge(self, log: ConnLog, r: _Resume, window: float) -> None:
        resp, req = r.resp, r.req
        ok = resp is not None and resp.ok
        shared = bool(r.overlaps)  # the updates in the window may be another resume's
        if r.replay and ok:
            assert resp is not None
            # RESUME-002
            if not r.markers:
                # no replay_complete for the session at all in the window: whatever the attribution
                late = (f"; a replay_complete came only after the response (t={r.late_markers[0].t:.2f})"
                        if r.late_markers else "")
                self.failed("RESUME-002", f"{r.label()} succeeded at t={resp.t:.2f} without a replay_complete for "
                            f"the session before the response{late}.", fr([resp, req] + r.late_markers[:1]))
            elif shared:
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
            # RESUME-003
            if r.markers and shared:
                self.noted("RESUME-003", f"{r.overlap_note()}: the order of replay_complete, state_update and "
                           "response is not judged.", fr([resp, req, r.markers[0]]))
            elif r.markers:
                if r.states_after_marker:
                    self.pass_few("RESUME-003", f"{r.label()}: replay_complete (t={r.markers[0].t:.2f}), then "
                                  f"state_update {js(r.states_after_marker[0].msg['params']['update'].get('state'))} "
                                  f"(t={r.states_after_marker[0].t:.2f}), then the response (t={resp.t:.2f}).",
                                  [r.states_after_marker[0], r.markers[0], resp])
                else:
                    self.failed("RESUME-003", f"{r.label()}: no state_update for the session between the "
                                f"replay_complete (t={r.markers[0].t:.2f}) and the response (t={resp.t:.2f}).",
                                fr([resp, r.markers[0], req]))
        if ok and not r.replay:
            # RESUME-004: with replayFrom the same ordering is RESUME-003's (its check is the resume
            # without replay), so one missing state_update is not counted twice. A malformed cursor the
            # agent accepted: after its replay_complete, if it sent one.
            assert resp is not None
            anchored = r.cursor == MALFORMED and bool(r.markers)  # without replayFrom a marker is RESUME-005's
            states = r.states_after_marker if anchored else r.states
            after = f" after the replay_complete (t={r.markers[0].t:.2f})" if anchored else " after the request"
            if not r.states:
                # no state_update for the session at all in the window: whatever the attribution
                self.failed("RESUME-004", f"{r.label()} succeeded at t={resp.t:.2f} with no state_update for the "
                            "session after the request before the response.", fr([resp, req]))
            elif shared:
                self.noted("RESUME-004", f"{r.overlap_note()}: a state_update for the session (t={r.states[0].t:.2f}) "
                           "came before its response, but perhaps for the other resume.", fr([resp, req, r.states[0]]))
            elif states:
                self.pass_few("RESUME-004", f"{r.label()}: state_update "
                              f"{js(states[0].msg['params']['update'].get('state'))} at t={states[0].t:.2f} "
                              f"preceded the response (t={resp.t:.2f}).", [states[0], resp, req])
            else:
                self.failed("RESUME-004", f"{r.label()} succeeded at t={resp.t:.2f} with no state_update for the "
                            f"session{after} before the response.", fr([resp, req] + (r.markers[:1] if anchored else [])))
        if r.cursor == NO_CURSOR:
            # RESUME-005
            late = [x for x in r.late_markers if resp is not None and x.t - resp.t <= window]
            bad = r.markers + late
            if bad and shared:
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


_HISTORY = USER_KINDS + AGENT_MESSAGE_KINDS + TOOL_KINDS


def _cj(content: Any) -> str:
    return json.dumps(content, sort_keys=True)


def _ref(upd: dict) -> tuple[str, Any] | None:
    kind = upd.get("sessionUpdate")
    key = "toolCallId" if kind in TOOL_KINDS else "messageId"
    if kind in _HISTORY and hashable(upd.get(key)):
        return (key, upd.get(key))
    return None


@dataclass(eq=False)
class _Hist:
    refs: set = field(default_factory=set)
    users: dict = field(default_factory=dict)  # content (JSON) -> ids it was given live (echo and response)


@dataclass(eq=False)
class _R:
    req: Msg
    sid: str
    replay_from: Any
    resp: Msg | None = None
    inside: list[Msg] = field(default_factory=list)
    known: set = field(default_factory=set)  # history refs known when the resume was sent
    users: dict = field(default_factory=dict)
    after: list[Msg] = field(default_factory=list)  # history updates after the response, before new work
    after_open: bool = True
    overlaps: list["_R"] = field(default_factory=list)  # resumes of the session in flight at the same time

    def overlap_note(self, label: str) -> str:
        ids = ", ".join(f"id={js(o.req.id)}" for o in self.overlaps)
        return (f"{label} overlapped another resume of the session on this connection ({ids}: one was sent before "
                "the other was answered), so the session's updates in between cannot be attributed to one of them")


def _snapshot_state(inside: list[Msg]) -> Any:
    """The state the last state_update before the resume's response reported (its current-state snapshot)."""
    for x in reversed(inside):
        u = x.msg["params"]["update"]
        if u.get("sessionUpdate") == "state_update":
            return u.get("state")
    return None


class ResumeLifecycleMonitor(ConnMonitor):
    rules = ("RESUME-001", "RESUME-006", "RESUME-007", "RESUME-011", "PROMPT-007")

    def __init__(self, ctx):
        super().__init__(ctx)
        self.hist: dict[str, _Hist] = {}
        self.resumes: list[_R] = []
        self.open: dict[int, _R] = {}  # id() of the request -> the resume awaiting its response
        self.prompts: dict[int, tuple[str, Any]] = {}

    def on_msg(self, log: ConnLog, m: Msg) -> None:
        if m.direction == SENT:
            if m.kind == REQUEST and isinstance(m.session_id, str):
                if m.method == "session/resume":
                    h = self.hist.setdefault(m.session_id, _Hist())
                    r = _R(m, m.session_id, m.params.get("replayFrom"), known=set(h.refs),
                           users={k: set(v) for k, v in h.users.items()})
                    for o in self.resumes:
                        if o.sid == r.sid:
                            o.after_open = False
                    for o in self._open_for(m.conn, r.sid):
                        o.overlaps.append(r)
                        r.overlaps.append(o)
                    self.resumes.append(r)
                    self.open[id(m)] = r
                elif m.method == "session/prompt":
                    self.prompts[id(m)] = (m.session_id, m.params.get("prompt"))
            return
        if m.direction != RECEIVED:
            return
        if m.kind == RESPONSE:
            rq = m.request
            if rq is None or m.duplicate:
                return
            if rq.method == "session/resume":
                r = self.open.pop(id(rq), None)
                if r is not None:
                    r.resp = m
                    if _snapshot_state(r.inside) in ("running", "requires_action"):
                        r.after_open = False  # work runs: what follows the response is live, not replay
            elif rq.method == "session/prompt" and m.ok and isinstance(m.result, dict) and id(rq) in self.prompts:
                sid, content = self.prompts[id(rq)]
                mid = m.result.get("messageId")
                if isinstance(content, list) and hashable(mid):
                    self.hist.setdefault(sid, _Hist()).users.setdefault(_cj(content), set()).add(mid)
            return
        su = session_update(m)
        if su is None:
            return
        sid, upd = su
        inside = self._open_for(m.conn, sid)
        if inside:
            for r in inside:
                r.inside.append(m)
            return
        kind = upd.get("sessionUpdate")
        if kind == "state_update" and upd.get("state") in ("running", "requires_action"):
            for o in self.resumes:
                if o.sid == sid:
                    o.after_open = False
        ref = _ref(upd)
        if ref is None:
            return
        if kind == "user_message" and isinstance(upd.get("content"), list):
            self.hist.setdefault(sid, _Hist()).users.setdefault(_cj(upd["content"]), set()).add(upd.get("messageId"))
        for o in self.resumes:
            if o.sid == sid and o.resp is not None and o.after_open and o.req.conn == m.conn and ref in o.known:
                o.after.append(m)
        self.hist.setdefault(sid, _Hist()).refs.add(ref)

    def _open_for(self, conn: int, sid: str) -> list[_R]:
        return [r for r in self.open.values() if r.sid == sid and r.req.conn == conn]

    def finish_test(self) -> None:
        for r in self.resumes:
            self._judge(r)

    def _judge(self, r: _R) -> None:
        resp = r.resp
        label = f"session/resume id={js(r.req.id)} of {r.sid!r} with replayFrom {js(r.replay_from, 80)}"
        if resp is None:
            return
        rf = r.replay_from
        replayed = [m for m in r.inside if _ref(m.msg["params"]["update"]) is not None]
        markers = [m for m in r.inside if m.msg["params"]["update"].get("sessionUpdate") == "replay_complete"]
        if rf is not None and not (isinstance(rf, dict) and rf.get("type") == "start"):
            # RESUME-007
            if resp.ok:
                self.failed("RESUME-007", f"{label} succeeded ({js(resp.result, 80)}) instead of -32602.",
                            fr([resp, r.req]))
            elif resp.error_code == -32602:
                if (markers or replayed) and r.overlaps:
                    x = (markers + replayed)[0]
                    self.noted("RESUME-007", f"{r.overlap_note(label)}: it was rejected with -32602 and a "
                               f"{x.msg['params']['update'].get('sessionUpdate')} for the session came before the "
                               f"error (t={x.t:.2f}), perhaps for the other resume.", fr([x, resp, r.req]))
                elif markers or replayed:
                    x = (markers + replayed)[0]
                    self.failed("RESUME-007", f"{label} was rejected with -32602 but a "
                                f"{x.msg['params']['update'].get('sessionUpdate')} came before the error "
                                f"(t={x.t:.2f}).", fr([x, resp, r.req]))
                else:
                    self.pass_few("RESUME-007", f"{label} was rejected with -32602, nothing replayed.", [resp, r.req])
            elif resp.error_code == -32002:
                self.noted("RESUME-007", f"{label} was answered -32002 (session not found), so the cursor was not "
                           "judged.", fr([resp, r.req]))
            else:
                self.failed("RESUME-007", f"{label} was answered with error {js(resp.error)}, not -32602.",
                            fr([resp, r.req]))
            return
        if not resp.ok:
            return
        # RESUME-011
        res = resp.result if isinstance(resp.result, dict) else {}
        bad = [k for k in ("configOptions", "availableCommands") if k in res and not isinstance(res[k], list)]
        if bad:
            self.failed("RESUME-011", f"{label}: result {bad[0]} is {js(res[bad[0]], 80)}, not an array.",
                        fr([resp, r.req]))
        else:
            present = [k for k in ("configOptions", "availableCommands") if k in res]
            self.pass_few("RESUME-011", f"{label}: result members {present or 'none'} "
                          f"{'are arrays' if present else 'of configOptions/availableCommands present'}.",
                          [resp, r.req])
        if rf is None:
            # RESUME-006
            old = [m for m in replayed if _ref(m.msg["params"]["update"]) in r.known]
            if old and r.overlaps:
                x = old[0]
                self.noted("RESUME-006", f"{r.overlap_note(label)}: {x.msg['params']['update'].get('sessionUpdate')} "
                           f"{js(_ref(x.msg['params']['update']))} of the earlier history came at t={x.t:.2f}, before "
                           "its response, perhaps replayed for the other resume.", fr([x, r.req, resp]))
            elif old:
                x = old[0]
                self.failed("RESUME-006", f"{label}: {x.msg['params']['update'].get('sessionUpdate')} "
                            f"{js(_ref(x.msg['params']['update']))} of the earlier history was replayed at "
                            f"t={x.t:.2f}, before the response.", fr([x, r.req, resp]))
            elif r.known:
                self.pass_few("RESUME-006", f"{label}: none of the {len(r.known)} known history id(s) was "
                              f"replayed before the response (t={resp.t:.2f}).", [resp, r.req])
            return
        # with replayFrom {type: start}
        if not r.known:
            return
        if r.overlaps:
            self.noted("RESUME-001", f"{r.overlap_note(label)}: which history updates were its replay is not "
                       "judged.", fr([resp, r.req]))
            return
        if r.after:
            x = r.after[0]
            self.failed("RESUME-001", f"{label}: history update {x.msg['params']['update'].get('sessionUpdate')} "
                        f"{js(_ref(x.msg['params']['update']))} was replayed at t={x.t:.2f}, after the response "
                        f"(t={resp.t:.2f}).", fr([x, resp, r.req]))
        elif replayed:
            self.pass_few("RESUME-001", f"{label}: {len(replayed)} history update(s) replayed before the response "
                          f"(t={resp.t:.2f}), none after it.", [replayed[0], resp, r.req])
        else:
            self.untested("RESUME-001", f"{label}: nothing of the {len(r.known)} known history id(s) was replayed "
                          "(retention is optional).", fr([resp, r.req]))
        # PROMPT-007
        live_ids = set().union(*r.users.values()) if r.users else set()
        for content, mids in r.users.items():
            same = [m for m in replayed if m.msg["params"]["update"].get("sessionUpdate") in USER_KINDS
                    and isinstance(m.msg["params"]["update"].get("content"), list)
                    and _cj(m.msg["params"]["update"]["content"]) == content]
            if not same:
                continue
            ids = [m.msg["params"]["update"].get("messageId") for m in same]
            hit = [i for i in ids if i in mids]
            if hit:
                self.pass_few("PROMPT-007", f"{label}: the user message {js(hit[0])} was replayed with its original "
                              "messageId.", [same[ids.index(hit[0])], r.req])
            elif any(any(i in v for k, v in r.users.items() if k != content) for i in mids):
                self.noted("PROMPT-007", f"{label}: the user message with id(s) {js(sorted(mids, key=str))} was "
                           f"replayed as {js(ids[0])}, but that id was also given to other content (PROMPT-006 "
                           "judges duplicate ids).", fr([same[0], r.req]))
            elif not any(hashable(i) and i in live_ids for i in ids):
                self.failed("PROMPT-007", f"{label}: the user message inserted as {js(sorted(mids, key=str))} was "
                            f"replayed (same content) as {js(ids[0])}.", fr([same[0], r.req, resp]))
