"""session/close of a known session: the empty result, cancelling active work first, silence after.

A session is *known* on a connection once a session/new or session/resume there answered it
successfully. Closes of unknown sessions are CLOSE-005's (err.py). "Active" work is a
running/requires_action state_update for the session with no idle since. A prompt is *pending* at
the close when the suite sent it for the session before the close and no response had come.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...wire.transcript import SENT
from ..monitor import NOTIFICATION, REQUEST
from ..sessions import end_sent
from ._common import USER_KINDS, WORK_STATES, ConnLog, ConnMonitor, Msg, answered_request, fr, js, secs, session_update


@dataclass(eq=False)
class _Close:
    req: Msg
    sid: str
    active: Msg | None  # the running/requires_action of the work active at the close
    pending: list[Msg]
    resp: Msg | None = None
    idle_before: Msg | None = None  # first idle for the session between request and response
    idle_after: Msg | None = None  # first idle after the response (close answered first)
    later: list[Msg] = field(default_factory=list)  # messages for the session after the response
    stop_t: float | None = None  # the session was resumed again on this connection


# a session is known here from its successful session/new or session/resume until the suite closes it
_OPENS, _CLOSE_SENT = ("session/new", "session/resume"), end_sent(["session/close"])


class CloseLifecycleMonitor(ConnMonitor):
    rules = ("CLOSE-001", "CLOSE-002", "CLOSE-003", "CLOSE-004")

    def analyze(self, log: ConnLog) -> None:
        model = log.sessions
        active: dict[str, Msg | None] = {}
        users: dict[str, list[tuple[Msg, Any]]] = {}
        closes: list[_Close] = []
        by_req: dict[int, _Close] = {}
        for m in log.msgs:
            if m.direction == SENT:
                sid = m.session_id
                if m.kind == REQUEST and m.method == "session/close" \
                        and sid in model.open_at(m, _CLOSE_SENT, opens=_OPENS):
                    s = model.sessions[sid]
                    pend = [t.request for t in s.turns if t.request.order < m.order
                            and not any(r.order < m.order for r in t.request.responses)]
                    resumed = next((r for r in s.resumes if r.order > m.order), None)
                    c = _Close(m, sid, active.get(sid), pend, stop_t=resumed.t if resumed is not None else None)
                    closes.append(c)
                    by_req[id(m)] = c
                continue
            rq = answered_request(m)
            if rq is not None:
                if id(rq) in by_req:
                    by_req[id(rq)].resp = m
                continue
            sid = m.session_id
            su = session_update(m)
            if su is not None:
                upd = su[1]
                kind = upd.get("sessionUpdate")
                if kind == "state_update":
                    if upd.get("state") in WORK_STATES:
                        if active.get(sid) is None:
                            active[sid] = m
                    elif upd.get("state") == "idle":
                        active[sid] = None
                        for c in closes:
                            if c.sid == sid and c.active is not None:
                                if c.resp is None and c.idle_before is None:
                                    c.idle_before = m
                                elif c.resp is not None and c.idle_before is None and c.idle_after is None:
                                    c.idle_after = m
                elif kind in USER_KINDS:
                    users.setdefault(sid, []).append((m, upd.get("messageId")))
            if m.kind in (NOTIFICATION, REQUEST) and isinstance(sid, str):
                for c in closes:
                    if c.sid == sid and c.resp is not None and c.resp.ok and (c.stop_t is None or m.t < c.stop_t):
                        c.later.append(m)
        for c in closes:
            self._judge(log, c, users.get(c.sid, []))

    def _judge(self, log: ConnLog, c: _Close, users: list[tuple[Msg, Any]]) -> None:
        label = f"session/close id={js(c.req.id)} of {c.sid!r} at t={c.req.t:.2f}"
        resp = c.resp
        if resp is None:
            self.untested("CLOSE-001", f"{label}: no response came ({log.end_desc}); ERR-004 judges a missing "
                          "response.", fr([c.req]))
            return
        # CLOSE-001 (idle sessions; an active one is CLOSE-002's)
        if c.active is None:
            if resp.ok and isinstance(resp.result, dict) and not (set(resp.result) - {"_meta"}):
                self.pass_few("CLOSE-001", f"{label} (idle session) answered {js(resp.result)}.", [resp, c.req])
            elif resp.ok and isinstance(resp.result, dict):
                self.noted("CLOSE-001", f"{label} answered an object with extra members {js(resp.result)}.",
                           fr([resp, c.req]))
            elif resp.ok:
                self.failed("CLOSE-001", f"{label} answered result {js(resp.result)}, not an object.", fr([resp, c.req]))
            else:
                self.failed("CLOSE-001", f"{label} (an idle session known on this connection) was answered with "
                            f"error {js(resp.error)}.", fr([resp, c.req]))
        # CLOSE-002
        cancelled_late = False
        if c.active is not None:
            where = f"{label} while work ran (since t={c.active.t:.2f})"
            ib = c.idle_before
            if not resp.ok:
                self.failed("CLOSE-002", f"{where}: the close was answered with error {js(resp.error)}.",
                            fr([resp, c.req]))
            elif ib is not None:
                sr = ib.msg["params"]["update"].get("stopReason")
                if sr == "cancelled":
                    self.pass_few("CLOSE-002", f"{where}: idle stopReason \"cancelled\" at t={ib.t:.2f}, then the "
                                  f"response at t={resp.t:.2f}.", [ib, resp, c.req])
                elif ib.t - c.req.t < float(self.opt("cancel_race", 0.5)):
                    self.untested("CLOSE-002", f"{where}: the work ended {secs(ib.t - c.req.t)} after the close "
                                  f"with stopReason {js(sr)}: it may have ended before the agent read the close; "
                                  "use a longer --acp-long-prompt.", fr([ib, c.req, resp]))
                else:
                    self.failed("CLOSE-002", f"{where}: the work ended with stopReason {js(sr)} at t={ib.t:.2f}, not "
                                "\"cancelled\".", fr([ib, c.req, resp]))
            else:
                after = (f"; the idle came only after it, at t={c.idle_after.t:.2f}" if c.idle_after is not None
                         else "; no idle for the work followed")
                cancelled_late = c.idle_after is not None
                self.failed("CLOSE-002", f"{where}: the close was answered at t={resp.t:.2f} before any idle for the "
                            f"work{after}.", fr([resp, c.req, c.idle_after]))
        # CLOSE-003
        if resp.ok:
            later = [x for x in c.later if not (cancelled_late and x is c.idle_after)]
            if later:
                x = later[0]
                what = x.method if x.method != "session/update" else \
                    f"session/update {x.msg['params'].get('update', {}).get('sessionUpdate')}"
                self.failed("CLOSE-003", f"{label}: {what} for the session at t={x.t:.2f}, after the close response "
                            f"(t={resp.t:.2f}).", fr([x, resp, c.req]))
            else:
                end = f"its resume at t={c.stop_t:.2f}" if c.stop_t is not None else log.end_desc
                self.pass_few("CLOSE-003", f"{label}: nothing for the session followed the response (t={resp.t:.2f}) "
                              f"until {end}.", [resp, c.req])
        # CLOSE-004: only a close that happened cancels what it held (a refused close, e.g. -32601 from an agent
        # without session/close, left the prompts pending as they were)
        if not resp.ok and c.pending:
            self.noted("CLOSE-004", f"{label} was refused with error {js(resp.error)}: no close happened, so the "
                       f"{len(c.pending)} prompt(s) pending at it are not judged by this rule.", fr([resp, c.req]))
            return
        for p in c.pending:
            self._judge_pending(log, c, p, users, label)

    def _judge_pending(self, log: ConnLog, c: _Close, p: Msg, users: list[tuple[Msg, Any]], label: str) -> None:
        rs = [r for r in p.responses]
        where = f"{label}: prompt id={js(p.id)} (sent t={p.t:.2f}, unanswered at the close)"
        if len(rs) > 1:
            self.failed("CLOSE-004", f"{where} got {len(rs)} responses.", fr([rs[1], rs[0], p, c.req]))
            return
        if not rs:
            patience = self.opt("observed_patience", None)  # observed traffic: see ERR-004 (err.py)
            if patience is not None and not log.alive and log.waited(c.req.t) < patience:
                self.noted("CLOSE-004", f"{where} got no response ({log.end_desc}), but the connection ended sooner "
                           f"than the {patience:g} s a scripted run waits: not judged on observed traffic.",
                           fr([c.req, p]))
                return
            self.failed("CLOSE-004", f"{where} got no response ({log.end_desc}).", fr([c.req, p]))
            return
        r = rs[0]
        if r.ok:
            mid = r.result.get("messageId") if isinstance(r.result, dict) else None
            u = next((u for u, i in users if i == mid and u.order > p.order), None)
            if u is not None and (c.resp is None or u.order < c.resp.order):
                self.pass_few("CLOSE-004", f"{where} was inserted (user message {js(mid)} at t={u.t:.2f}) and "
                              f"answered with its messageId.", [r, u, p])
            else:
                self.failed("CLOSE-004", f"{where} was answered with success {js(r.result)} but no user message "
                            "with that messageId was sent before the close response.", fr([r, p, c.resp]))
        elif r.error_code == -32800:
            self.pass_few("CLOSE-004", f"{where} was answered with -32800 at t={r.t:.2f}.", [r, p, c.req])
        else:
            self.failed("CLOSE-004", f"{where} was answered with error {js(r.error)}, not -32800.", fr([r, p, c.req]))
