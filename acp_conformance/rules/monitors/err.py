"""Errors: unknown sessions (-32002 with data.sessionId), closing unknown sessions, one response per request,
sessions not active on the connection (ERR-003).

A session id is *known* in a test when a session/new result or a session/list result returned it,
when the agent announced it as a child session (subagent_update, a background subagent, a
``{"type": "session"}`` tool content), or when it is listed in ``ctx.options["known_sessions"]``.
Requests on a connection that has not been initialized yet are not judged (-32600 is the answer
there). ERR-001 and CLOSE-005 are judged at the end of the test, when every known id is known.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...wire.transcript import RECEIVED, SENT
from ..monitor import INVALID, REQUEST, RESPONSE
from ..sessions import ANNOUNCED, DELETE, END_ANSWERED, LISTED, NEW, OPENED, RESUME, Event, end_accepted
from ._common import (UNPARSED, ConnLog, ConnMonitor, Msg, fr, id_key, is_abs_path, js, offers_config_options,
                      raw_carries_id, secs)

SCOPED = ("session/prompt", "session/set_config_option", "session/resume")
SUBORDINATE = ("tool_call/cancel", "terminal/cancel")
NOT_FOUND = -32002
AUTH_REQUIRED = -32000  # ACP auth_required


def _well_formed(method: str, p: dict[str, Any]) -> bool:
    """Are the params valid apart from the session id (so that -32602 would not be a fair answer)?"""
    if method == "session/prompt":
        blocks = p.get("prompt")
        return (isinstance(blocks, list) and bool(blocks) and all(
            isinstance(b, dict) and ((b.get("type") == "text" and isinstance(b.get("text"), str))
                                     or (b.get("type") == "resource_link" and isinstance(b.get("uri"), str)
                                         and isinstance(b.get("name"), str))) for b in blocks))
    if method == "session/set_config_option":
        return isinstance(p.get("configId"), str) and isinstance(p.get("type"), str) and "value" in p
    if method == "session/resume":
        rf = p.get("replayFrom")
        return (is_abs_path(p.get("cwd")) and (rf is None or (isinstance(rf, dict) and rf.get("type") == "start"))
                and not p.get("mcpServers") and not p.get("additionalDirectories"))
    if method == "tool_call/cancel":
        return isinstance(p.get("toolCallId"), str)
    if method == "terminal/cancel":
        return isinstance(p.get("terminalId"), str)
    return True


def _makes_known(e: Event) -> bool:
    """What makes a session id known to ERR-001: a session/new result, a session/list entry, an announced child."""
    return (e.kind == OPENED and e.how == NEW) or e.kind in (LISTED, ANNOUNCED)


def _deleted(e: Event) -> bool:
    return e.kind == END_ANSWERED and e.how == DELETE and e.msg.ok


# CLOSE-005's "already closed": its close answered with success or -32002 and no session/new or resume since
_CLOSE_ACCEPTED = end_accepted(["session/close"])
# ERR-003's "active on this connection": created or resumed here, its close or delete not accepted since
_ENDED = end_accepted()


@dataclass(eq=False)
class _Cand:
    req: Msg
    sid: str
    resumed_before: bool
    closed_before: bool

    @property
    def resp(self) -> Msg | None:
        return self.req.responses[0] if self.req.responses else None


class SessionErrorMonitor(ConnMonitor):
    rules = ("ERR-001", "ERR-002", "CLOSE-005")

    def __init__(self, ctx):
        super().__init__(ctx)
        self.known: set[str] = {s for s in (self.opt("known_sessions", ()) or ()) if isinstance(s, str)}
        self.resumed: set[str] = set()
        self.cands: list[_Cand] = []
        self.config_offered = False

    def analyze(self, log: ConnLog) -> None:
        model = log.sessions
        self.known |= model.sids(_makes_known)
        initialized = False
        self.config_offered = self.config_offered or offers_config_options(log.msgs)
        for m in log.msgs:
            if m.direction == SENT:
                if (m.kind == REQUEST and initialized and isinstance(m.session_id, str)
                        and m.method in SCOPED + SUBORDINATE + ("session/close",)):
                    sid = m.session_id
                    resumed = sid in self.resumed or sid in model.known_at(m, hows=(RESUME,))
                    closed = sid in model.ended_at(m, _CLOSE_ACCEPTED, opens=(NEW, RESUME))
                    self.cands.append(_Cand(m, sid, resumed, closed))
                continue
            if m.direction != RECEIVED or m.kind != RESPONSE or m.request is None or m.duplicate:
                continue
            rq = m.request
            if rq.method == "initialize" and m.ok:
                initialized = True
            if m.error_code == NOT_FOUND and isinstance(rq.session_id, str):
                self._judge_002(m, rq, rq.session_id)
        self.resumed |= model.known_at(None, hows=(RESUME,))

    def _judge_002(self, resp: Msg, rq: Msg, sid: str) -> None:
        data = resp.error.get("data")
        label = f"{rq.method} id={js(rq.id)} for {sid!r}"
        if isinstance(data, dict) and data.get("sessionId") == sid:
            self.pass_few("ERR-002", f"{label} got -32002 with data.sessionId {js(sid)}.", [resp, rq])
        elif not isinstance(data, dict):
            self.failed("ERR-002", f"{label} got -32002 with error.data {js(data)}, not an object "
                        "{sessionId: ...}.", fr([resp, rq]))
        else:
            self.failed("ERR-002", f"{label} got -32002 with data.sessionId {js(data.get('sessionId'))} "
                        f"instead of {js(sid)}.", fr([resp, rq]))

    def finish_test(self) -> None:
        for c in self.cands:
            resp = c.resp
            if resp is None:
                continue
            unknown = c.sid not in self.known and not c.resumed_before
            method = c.req.method
            if method == "session/close":
                if unknown or c.closed_before:
                    self._judge_close(c, resp, "unknown" if unknown else "already closed")
            elif unknown:
                self._judge_001(c, resp)

    def _judge_001(self, c: _Cand, resp: Msg) -> None:
        rq = c.req
        label = (f"{rq.method} id={js(rq.id)} for session {c.sid!r}, which no session/new or session/list "
                 "returned in this test,")
        code = resp.error_code
        frames = fr([resp, rq])
        if rq.method in SCOPED:
            if resp.ok:
                self.failed("ERR-001", f"{label} succeeded (result {js(resp.result, 120)}).", frames)
            elif code == NOT_FOUND:
                self.pass_few("ERR-001", f"{label} got -32002.", frames)
            elif code == -32601 and rq.method == "session/set_config_option" and not self.config_offered:
                self.noted("ERR-001", f"{label} got -32601: the agent advertised no config options, so it need "
                           "not support session/set_config_option at all.", frames)
            elif code == AUTH_REQUIRED:
                # an agent that requires authentication before any session work may say so first: the
                # session lookup is never reached (codex-acp 2.6.0 without credentials)
                self.noted("ERR-001", f"{label} got auth_required (-32000): the agent requires authentication "
                           "before it looks the session up; not judged.", frames)
            elif _well_formed(rq.method, rq.params):
                self.failed("ERR-001", f"{label} got error {js(code)} instead of -32002.", frames)
            else:
                self.noted("ERR-001", f"{label} got error {js(code)}; its other params are also invalid, so that "
                           "error is plausible.", frames)
        else:
            if code == NOT_FOUND:
                self.pass_few("ERR-001", f"{label} got -32002.", frames)
            elif code in (-32602, -32601):
                self.noted("ERR-001", f"{label} got error {code}; the spec does not say which error an unknown "
                           "session gets here (-32002 and -32602 are both plausible).", frames)
            elif resp.ok:
                self.warned("ERR-001", f"{label} succeeded; -32002 was expected.", frames)
            else:
                self.warned("ERR-001", f"{label} got error {js(code)}; -32002 was expected.", frames)

    def _judge_close(self, c: _Cand, resp: Msg, why: str) -> None:
        rq = c.req
        label = f"session/close id={js(rq.id)} of {why} session {c.sid!r}"
        frames = fr([resp, rq])
        if resp.ok:
            self.pass_few("CLOSE-005", f"{label} succeeded.", frames)
        elif resp.error_code == NOT_FOUND:
            data = resp.error.get("data")
            if isinstance(data, dict) and data.get("sessionId") == c.sid:
                self.pass_few("CLOSE-005", f"{label} got -32002 with data.sessionId: SHOULD succeed; -32002 "
                              "tolerated.", frames)
            else:
                self.noted("CLOSE-005", f"{label} got -32002 (tolerated) without data.sessionId {js(c.sid)} "
                           "(ERR-002 judges the data).", frames)
        else:
            self.failed("CLOSE-005", f"{label} got error {js(resp.error_code)}; success (or -32002) was expected.",
                        frames)
            # close is the one session-scoped request that may succeed for an unknown session; any other answer
            # than success is still ERR-001's: a session that does not exist is reported with -32002
            self.failed("ERR-001", f"{label} got error {js(resp.error_code)}: a session that does not exist is "
                        "answered with -32002 (or, for session/close only, success).", frames)


class ResponseMonitor(ConnMonitor):
    rules = ("ERR-004",)

    def __init__(self, ctx):
        super().__init__(ctx)
        self.requests = 0
        self.bad = False

    def analyze(self, log: ConnLog) -> None:
        # a batch member is not a request owed an answer: ACP v2 has no batches, a batch is one invalid request
        # (answered by one -32600 with id null: TRANSPORT-012 judges it)
        reqs = [m for m in log.msgs if m.direction == SENT and m.kind == REQUEST and m.id is not None
                and m.index is None]
        self.requests += len(reqs)
        for r in reqs:
            label = f"{r.method} id={js(r.id)}"
            if not r.responses:
                self.bad = True
                same = [o for o in reqs if o is not r and id_key(o.id) == id_key(r.id)
                        and o.order < r.order and (not o.responses or o.responses[0].order > r.order)]
                waited = log.waited(r.t)
                msg = f"{label} got no response: the suite waited {secs(waited)}; {log.end_desc}"
                if log.alive:
                    msg += " (the request timed out)"
                patience = self.opt("observed_patience", None)  # observed traffic: how long the suite would wait
                if same:
                    self.noted("ERR-004", msg + ". Another request with the same id was pending at the same time "
                               "(sent by the suite on purpose?), so one answer may be all the agent owes.", fr([r]))
                elif patience is not None and not log.alive and waited < patience:
                    # a real client may end the session with a request in flight (its user quit): an answer
                    # not given in less time than the suite itself waits is not judged
                    self.noted("ERR-004", msg + f". The connection ended sooner than the {secs(patience)} a "
                               "scripted run waits for an answer: not judged on observed traffic.", fr([r]))
                else:
                    self.failed("ERR-004", msg + ".", fr([r]))
            elif len(r.responses) > 1:
                self.bad = True
                d = r.responses[1]
                self.failed("ERR-004", f"{label} got {len(r.responses)} responses (t="
                            f"{', '.join(f'{x.t:.2f}' for x in r.responses)}); exactly one is required.",
                            fr([d, r.responses[0], r]))
        sent_nonreq = [m for m in log.msgs if m.direction == SENT and m.kind in (INVALID, UNPARSED)]
        null_reqs = any(m.direction == SENT and m.kind == REQUEST and m.id is None for m in log.msgs)
        for m in log.msgs:
            if m.direction != RECEIVED or m.kind != RESPONSE or m.request is not None:
                continue
            if m.id is None:
                if m.error is not None:
                    continue  # answers a request whose id could not be read
                if null_reqs:
                    self.noted("ERR-004", f"a success response with id null arrived at t={m.t:.2f}; the suite had "
                               "sent a request with id null.", fr([m]))
                    continue
            carried = [s for s in sent_nonreq if (s.kind == INVALID and isinstance(s.msg, dict) and "id" in s.msg
                                                  and id_key(s.msg["id"]) == id_key(m.id))
                       or (s.kind == UNPARSED and raw_carries_id(s.frame.raw, m.id))]
            if carried and m.error is not None:
                self.noted("ERR-004", f"an error response with id {js(m.id)} arrived at t={m.t:.2f}; it answers the "
                           "invalid message the suite sent with that id (echoing a readable id is accepted).",
                           fr([m, carried[0]]))
                continue
            if carried:
                # a line that is not strict JSON (a byte order mark, say) read leniently and served: the
                # spec does not say such a line must be refused, and the id is the one the suite wrote
                self.noted("ERR-004", f"a success response with id {js(m.id)} arrived at t={m.t:.2f}; it answers a "
                           "line the suite sent with that id that is not a valid request as written (the "
                           "agent read it leniently).", fr([m, carried[0]]))
                continue
            self.bad = True
            self.failed("ERR-004", f"a response with id {js(m.id)} (type {type(m.id).__name__}) arrived at "
                        f"t={m.t:.2f}, but the suite had no request with that id pending on this connection.",
                        fr([m]))

    def finish_test(self) -> None:
        if self.requests and not self.bad:
            self.passed("ERR-004", f"all {self.requests} request(s) of the suite got exactly one response with an "
                        "identical id.")


ACTIVE_SCOPED = ("session/prompt", "session/set_config_option")


class InactiveSessionMonitor(ConnMonitor):
    """ERR-003: a session the test knows, used on a connection where it is not active."""

    rules = ("ERR-003",)

    def __init__(self, ctx):
        super().__init__(ctx)
        self.known: set[str] = set()  # created (or resumed) on the connections judged before
        self.deleted: set[str] = set()

    def analyze(self, log: ConnLog) -> None:
        model = log.sessions
        init = False
        for m in log.msgs:
            if m.direction == RECEIVED and m.kind == RESPONSE and m.request is not None and not m.duplicate:
                init = init or (m.request.method == "initialize" and m.ok)
                continue
            if m.direction != SENT or m.kind != REQUEST or m.method not in ACTIVE_SCOPED or not init:
                continue
            sid = m.session_id
            if not isinstance(sid, str) or sid in model.open_at(m, _ENDED, opens=(NEW, RESUME)):
                continue
            if sid not in self.known and sid not in model.known_at(m, hows=(NEW, RESUME)):
                continue  # unknown sessions are ERR-001's
            if sid in self.deleted or sid in model.sids(_deleted, m):
                continue
            if any(p.order < m.order and not p.responses for p in model.sessions[sid].named
                   if p.method in ("session/close", "session/delete", "session/resume")):
                continue  # a close or resume of it was still in flight
            if m.responses:
                self._judge(m, sid, m.responses[0])
        self.known |= model.known_at(None, hows=(NEW, RESUME))
        self.deleted |= model.sids(_deleted)

    def _judge(self, m: Msg, sid: str, r: Msg) -> None:
            label = f"{m.method} id={js(m.id)} for session {sid!r}, which is not active on this connection"
            if r.error_code == NOT_FOUND:
                self.pass_few("ERR-003", f"{label}, got -32002.", [r, m])
            elif r.ok:
                self.failed("ERR-003", f"{label} (closed here, or created on another connection and not resumed), "
                            f"succeeded: {js(r.result, 120)}.", fr([r, m]))
            elif _well_formed(m.method, m.params if isinstance(m.params, dict) else {}):
                self.failed("ERR-003", f"{label}, got error {js(r.error_code)} instead of -32002.", fr([r, m]))
            else:
                self.noted("ERR-003", f"{label}, got error {js(r.error_code)}; its other params are invalid too.",
                           fr([r, m]))

