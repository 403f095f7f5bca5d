"""Around session/cancel and $/cancel_request: permission requests of cancelled work, held prompts,
the session staying usable, ignored cancel_requests; on a client target, the ``$/cancel_request`` it gets
and sends (``ClientCancelRequestMonitor``, CANCEL-012/013/014).

*Active* work of a session: a running/requires_action state_update with no idle since. A prompt is
*held* at a cancel when the suite sent it, it has no response yet, and the session's work is active.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

from ...wire.transcript import EV_STDIN_CLOSED, RECEIVED, SENT
from ..monitor import NOTIFICATION, REQUEST, RESPONSE
from ._attribution import attribute
from ._client import agent_msgs, cap, client_msgs, crashed
from ._common import (USER_KINDS, WORK_STATES, ConnLog, ConnMonitor, FrameLogMixin, Msg, fr, id_key, js, secs,
                      session_update)
from .prompt_blocks import init_capabilities, prompt_blocks, unadvertised_blocks, unknown_blocks


def _upd(m: Msg) -> dict:
    return m.msg["params"]["update"]


@dataclass(eq=False)
class _Scan:
    """What one pass over a connection collects for the judgements that follow it."""
    active: dict[Any, Msg | None] = field(default_factory=dict)  # session -> the state_update that began its work
    prompts: dict[str, list[Msg]] = field(default_factory=dict)
    users: list[tuple[Msg, str, Any]] = field(default_factory=list)
    # (cancel, sid, active, held, perms)
    cancels: list[tuple[Msg, str, bool, list[Msg], list[Msg]]] = field(default_factory=list)
    pending_suite: dict[tuple, Msg] = field(default_factory=dict)
    perms_pending: dict[tuple, Msg] = field(default_factory=dict)
    cancel_reqs: list[Msg] = field(default_factory=list)
    # (suite $/cancel_request, the pending request it names)
    pending_cancels: list[tuple[Msg, Msg]] = field(default_factory=list)
    held_all: list[Msg] = field(default_factory=list)
    agent_pending: dict[tuple, Msg] = field(default_factory=dict)  # the agent's requests to the suite, unanswered
    caps: dict | None = None  # the agent's capabilities (initialize)


def _on_sent(scan: _Scan, m: Msg) -> None:
    """The suite's requests (prompts, possibly held), answers, session/cancel and $/cancel_request."""
    sid = m.session_id
    if m.kind == REQUEST and m.id is not None:
        scan.pending_suite[id_key(m.id)] = m
        if m.method == "session/prompt" and isinstance(sid, str):
            if scan.active.get(sid) is not None:
                scan.held_all.append(m)
            scan.prompts.setdefault(sid, []).append(m)
    elif m.kind == RESPONSE and m.request is not None:
        scan.perms_pending.pop(id_key(m.id), None)
        scan.agent_pending.pop(id_key(m.id), None)
    elif m.kind == NOTIFICATION and m.method == "session/cancel" and isinstance(sid, str):
        is_active = scan.active.get(sid) is not None
        held = [p for p in scan.prompts.get(sid, []) if not any(r.order < m.order for r in p.responses)]
        perms = [p for p in scan.perms_pending.values() if p.session_id == sid]
        scan.cancels.append((m, sid, is_active, held if is_active else [], perms if is_active else []))
    elif m.kind == NOTIFICATION and m.method == "$/cancel_request":
        rid = (m.params or {}).get("requestId") if isinstance(m.params, dict) else None
        if id_key(rid) not in scan.pending_suite:
            scan.cancel_reqs.append(m)
        else:
            scan.pending_cancels.append((m, scan.pending_suite[id_key(rid)]))


def _on_received(scan: _Scan, m: Msg) -> None:
    """The agent's answers (and its capabilities), permission requests, and work/idle states and user messages."""
    if m.kind == RESPONSE:
        if m.request is not None and not m.duplicate:
            scan.pending_suite.pop(id_key(m.id), None)
        if (c := init_capabilities(m)) is not None:
            scan.caps = c
        return
    if m.kind == REQUEST and m.method == "session/request_permission" and m.id is not None:
        scan.perms_pending[id_key(m.id)] = m
    su = session_update(m)
    if su is None:
        return
    sid, upd = su
    if upd.get("sessionUpdate") == "state_update":
        if upd.get("state") in WORK_STATES:
            scan.active[sid] = scan.active.get(sid) or m
        elif upd.get("state") == "idle":
            scan.active[sid] = None
    elif upd.get("sessionUpdate") in USER_KINDS:
        scan.users.append((m, sid, upd.get("messageId")))


class CancelLifecycleMonitor(FrameLogMixin, ConnMonitor):
    rules = ("CANCEL-004", "CANCEL-005", "CANCEL-006", "CANCEL-008", "CANCEL-009", "CANCEL-011", "CANCEL-012",
             "CANCEL-013", "CANCEL-014", "PROMPT-017")

    def analyze(self, log: ConnLog) -> None:
        scan = _Scan()
        for m in log.msgs:
            if m.direction == SENT:
                _on_sent(scan, m)
                continue
            if m.kind == NOTIFICATION and m.method == "$/cancel_request":
                self._judge_agent_cancel_request(m, scan.agent_pending, scan.pending_suite)
            if m.kind == REQUEST and m.id is not None:
                scan.agent_pending[id_key(m.id)] = m
            if m.direction == RECEIVED:
                _on_received(scan, m)
        for c, sid, is_active, held, perms in scan.cancels:
            if is_active:
                self._judge_held(log, c, sid, held, scan.users)
                self._judge_perms(log, c, sid, perms)
                self._judge_after(log, c, sid, scan.prompts.get(sid, []), scan.caps)
            else:
                self._judge_idle_cancel(log, c, sid, scan.prompts.get(sid, []))
        # re-reads the connection's lines: only once an answer is in question
        answered_lines = functools.cache(lambda: self._answers_to_other_lines(log))
        for cr in scan.cancel_reqs:
            self._judge_cancel_request(log, cr, answered_lines)
        for cr, rq in scan.pending_cancels:
            self._judge_pending_cancel(log, cr, rq)
        self._judge_held_prompts(log, scan)

    def _judge_held_prompts(self, log: ConnLog, scan: _Scan) -> None:
        """Each prompt held behind active work, unless a cancel or a close stopped it, is judged on its answer."""
        stopped = ({id(p) for _c, _s, _a, held, _p in scan.cancels for p in held}
                   | {id(rq) for _c, rq in scan.pending_cancels})
        closed = [m for m in log.msgs if m.direction == SENT and m.kind == REQUEST and m.method == "session/close"]
        for p in scan.held_all:
            if id(p) in stopped or any(c.session_id == p.session_id and c.order > p.order
                                       and not any(r.order < c.order for r in p.responses) for c in closed):
                continue  # cancelled or closed while pending: CANCEL-009 / CANCEL-012 / CLOSE-004 judge it
            self._judge_held_answer(log, p)

    def _judge_agent_cancel_request(self, m: Msg, agent_pending: dict, pending_suite: dict) -> None:
        p = m.params if isinstance(m.params, dict) else {}
        rid = p.get("requestId")
        where = f"the agent's $/cancel_request for requestId {js(rid)} at t={m.t:.2f}"
        own = [agent_pending[id_key(rid)]] if id_key(rid) in agent_pending else []
        if own:
            self.pass_few("CANCEL-014", f"{where} names its own pending {own[0].method} (t={own[0].t:.2f}).",
                          [m, own[0]])
        elif id_key(rid) in pending_suite:
            self.failed("CANCEL-014", f"{where} names no pending request of the agent but the suite's pending "
                        f"{pending_suite[id_key(rid)].method} with that id (each direction has its own ids).",
                        fr([m, pending_suite[id_key(rid)]]))
        else:
            self.noted("CANCEL-014", f"{where} names no request of the agent that is still pending (already "
                       "answered or unknown).", fr([m]))

    def _judge_pending_cancel(self, log: ConnLog, cr: Msg, rq: Msg) -> None:
        where = f"$/cancel_request (t={cr.t:.2f}) for the pending {rq.method} id={js(rq.id)}"
        rs = rq.responses
        if len(rs) > 1:
            self.failed("CANCEL-012", f"{where}: {len(rs)} responses.", fr([rs[1], rs[0], cr, rq]))
        elif not rs:
            if log.waited(cr.t) >= float(self.opt("held_answer_grace", 2.0)):
                self.failed("CANCEL-012", f"{where}: no response ({log.end_desc}).", fr([cr, rq]))
            else:
                self.untested("CANCEL-012", f"{where}: no response yet, too little time observed.", fr([cr, rq]))
        elif rs[0].ok or rs[0].error_code == -32800:
            what = "a result" if rs[0].ok else "-32800"
            self.pass_few("CANCEL-012", f"{where}: exactly one response ({what}) at t={rs[0].t:.2f}.", [rs[0], cr, rq])
        else:
            self.noted("CANCEL-012", f"{where}: one response, error {js(rs[0].error)} (neither a result nor -32800; "
                       "it may be the method's ordinary error).", fr([rs[0], cr, rq]))

    def _judge_held_answer(self, log: ConnLog, p: Msg) -> None:
        where = f"prompt id={js(p.id)} for {p.session_id!r} sent while work ran (t={p.t:.2f})"
        rs = p.responses
        if len(rs) > 1:
            self.failed("PROMPT-017", f"{where}: {len(rs)} responses.", fr([rs[1], rs[0], p]))
        elif rs:
            self.pass_few("PROMPT-017", f"{where}: exactly one response ({'success' if rs[0].ok else 'error'}) at "
                          f"t={rs[0].t:.2f}.", [rs[0], p])
        else:
            idle = self._first_idle(log, p.session_id, p)
            grace = float(self.opt("held_answer_grace", 2.0))
            if idle is not None and log.waited(idle.t) >= grace:
                self.failed("PROMPT-017", f"{where}: no response, although the session reported idle at "
                            f"t={idle.t:.2f} and the suite waited {log.waited(idle.t):.2f} s ({log.end_desc}).",
                            fr([p, idle]))
            else:
                self.untested("PROMPT-017", f"{where}: no response and the work it waited for did not end "
                              f"({log.end_desc}).", fr([p]))

    def _first_idle(self, log: ConnLog, sid: str, after: Msg) -> Msg | None:
        for m in log.msgs:
            if m.order > after.order:
                su = session_update(m)
                if su and su[0] == sid and su[1].get("sessionUpdate") == "state_update" and su[1].get("state") == "idle":
                    return m
        return None

    def _judge_held(self, log: ConnLog, c: Msg, sid: str, held: list[Msg], users) -> None:
        for p in held:
            where = f"prompt id={js(p.id)} held when session/cancel for {sid!r} was sent (t={c.t:.2f})"
            rs = p.responses
            if len(rs) > 1:
                self.failed("CANCEL-009", f"{where} got {len(rs)} responses.", fr([rs[1], rs[0], p, c]))
            elif not rs:
                if log.waited(c.t) >= float(self.opt("held_answer_grace", 2.0)):
                    self.failed("CANCEL-009", f"{where} got no response ({log.end_desc}).", fr([c, p]))
                else:
                    self.untested("CANCEL-009", f"{where}: no response yet and too little time after the cancel "
                                  f"({log.end_desc}).", fr([c, p]))
            elif rs[0].ok:
                mid = rs[0].result.get("messageId") if isinstance(rs[0].result, dict) else None
                if any(s == sid and i == mid for _, s, i in users):
                    self.pass_few("CANCEL-009", f"{where} was inserted and answered with its messageId {js(mid)}.",
                                  [rs[0], p, c])
                else:
                    self.noted("CANCEL-009", f"{where} was answered with success {js(rs[0].result, 80)} but no user "
                               "message with that id was seen (PROMPT-002 judges the insertion).", fr([rs[0], p]))
            elif rs[0].error_code == -32800:
                self.pass_few("CANCEL-009", f"{where} was answered with -32800 at t={rs[0].t:.2f}.", [rs[0], p, c])
            else:
                self.noted("CANCEL-009", f"{where} was answered with error {js(rs[0].error)}; -32800 is expected "
                           "(the sources disagree on the code, see WIRE-NOTES 13).", fr([rs[0], p, c]))

    def _judge_perms(self, log: ConnLog, c: Msg, sid: str, perms: list[Msg]) -> None:
        for q in perms:
            where = f"session/request_permission id={js(q.id)} pending when session/cancel for {sid!r} was sent " \
                    f"(t={c.t:.2f})"
            idle = self._first_idle(log, sid, c)
            ans = q.responses[0] if q.responses else None
            if idle is None:
                self.failed("CANCEL-004", f"{where}: no idle followed ({log.end_desc}).", fr([c, q]))
            else:
                how = ("without an answer" if ans is None or ans.order > idle.order
                       else f"(the suite answered {js(ans.result if ans.ok else ans.error, 80)} at t={ans.t:.2f}, "
                            "after the cancel)")
                sr = _upd(idle).get("stopReason")
                tool = ((q.params or {}).get("subject") or {}).get("toolCall", {}) if isinstance(q.params, dict) else {}
                tcid = tool.get("toolCallId") if isinstance(tool, dict) else None
                done = next((m for m in log.msgs if c.order < m.order < idle.order and session_update(m)
                             and _upd(m).get("toolCallId") == tcid and tcid is not None
                             and _upd(m).get("status") == "completed"), None)
                if done is not None:
                    self.failed("CANCEL-004", f"{where}: tool call {js(tcid)} reached completed at t={done.t:.2f} "
                                "without permission.", fr([done, c, q]))
                elif sr == "cancelled":
                    self.pass_few("CANCEL-004", f"{where}: the work ended with idle \"cancelled\" at t={idle.t:.2f} "
                                  f"{how}.", [idle, c, q])
                else:
                    self.noted("CANCEL-004", f"{where}: the work ended {how} with stopReason {js(sr)} at "
                               f"t={idle.t:.2f} (CANCEL-001 judges the stop reason).", fr([idle, c, q]))
            # CANCEL-005
            cr = next((m for m in log.msgs if m.order > c.order and m.direction == RECEIVED and m.kind == NOTIFICATION
                       and m.method == "$/cancel_request" and isinstance(m.params, dict)
                       and id_key(m.params.get("requestId")) == id_key(q.id)), None)
            if cr is not None:
                self.pass_few("CANCEL-005", f"{where}: $/cancel_request for it at t={cr.t:.2f}.", [cr, c, q])
            elif ans is None or (idle is not None and ans.order > idle.order):
                self.warned("CANCEL-005", f"{where}: no $/cancel_request for it followed ({log.end_desc}).",
                            fr([c, q]))

    def _next_prompt(self, prompts: list[Msg], after: Msg) -> Msg | None:
        return next((p for p in prompts if p.order > after.order), None)

    def _judge_after(self, log: ConnLog, c: Msg, sid: str, prompts: list[Msg], caps: dict | None) -> None:
        idle = self._first_idle(log, sid, c)
        if idle is None or _upd(idle).get("stopReason") != "cancelled":
            return
        limit = float(self.opt("cancel_warn_after", 10.0))
        dt = idle.t - c.t
        if dt > limit:
            self.warned("CANCEL-006", f"session/cancel for {sid!r} at t={c.t:.2f}: the cancelled idle came {secs(dt)} "
                        f"later (more than {secs(limit)}).", fr([idle, c]))
        else:
            self.pass_few("CANCEL-006", f"session/cancel for {sid!r} at t={c.t:.2f}: the cancelled idle followed "
                          f"{secs(dt)} later.", [idle, c])
        p = self._next_prompt(prompts, idle)
        if p is None:
            return
        r = p.responses[0] if p.responses else None
        stop = next((m for m in log.msgs if m.order > p.order and m.direction == SENT and m.session_id == sid
                     and m.method in ("session/cancel", "session/close")), None)
        if r is not None and stop is not None and stop.order < r.order:
            return  # answered only after a later cancel/close: CANCEL-002/009 judge that
        if r is None:
            self.untested("CANCEL-011", f"the prompt id={js(p.id)} after the cancelled idle got no response "
                          "(ERR-004 judges that).", fr([p, idle]))
        elif r.ok:
            self.pass_few("CANCEL-011", f"after idle \"cancelled\" (t={idle.t:.2f}) prompt id={js(p.id)} succeeded.",
                          [r, p, idle])
        elif r.error_code == -32602 and (refused := self._unsupported_blocks(p, caps)):
            self.untested("CANCEL-011", f"after idle \"cancelled\" (t={idle.t:.2f}) prompt id={js(p.id)} was rejected "
                          f"with -32602 for block types {js(refused)} the agent does not advertise: the prompt was "
                          "refused, not the session (PROMPT-009 judges that).", fr([r, p, idle]))
        else:
            self.failed("CANCEL-011", f"after idle \"cancelled\" (t={idle.t:.2f}) prompt id={js(p.id)} was answered "
                        f"with error {js(r.error)}.", fr([r, p, idle]))

    @staticmethod
    def _unsupported_blocks(p: Msg, caps: dict | None) -> list:
        blocks = prompt_blocks(p)
        types = [b.get("type") for b in blocks if isinstance(b, dict)] if isinstance(blocks, list) else []
        return unknown_blocks(types) + unadvertised_blocks(types, caps)

    def _judge_idle_cancel(self, log: ConnLog, c: Msg, sid: str, prompts: list[Msg]) -> None:
        reply = next((m for m in log.msgs if m.order > c.order and m.direction == RECEIVED and m.kind == RESPONSE
                      and m.request is None and m.id is None), None)
        p = self._next_prompt(prompts, c)
        where = f"session/cancel for {sid!r} without active work (t={c.t:.2f})"
        if reply is not None and (p is None or reply.order < p.order):
            self.noted("CANCEL-008", f"{where}: a response without id followed at t={reply.t:.2f}.", fr([reply, c]))
        elif p is not None and p.responses and p.responses[0].ok:
            self.pass_few("CANCEL-008", f"{where}: no response, and the next prompt id={js(p.id)} succeeded.",
                          [p.responses[0], c])
        elif p is not None and p.responses:
            self.noted("CANCEL-008", f"{where}: the next prompt id={js(p.id)} was answered with error "
                       f"{js(p.responses[0].error)}.", fr([p.responses[0], c]))

    def _answers_to_other_lines(self, log: ConnLog) -> set[int]:
        """Frames of the answers that belong, or may belong, to a line of the suite that no request id matches
        (not JSON, an invalid request, an id null...; see ``_attribution.attribute``): such an answer is that
        line's, not an answer to a $/cancel_request written meanwhile."""
        sent, _stray = attribute(self._frames_of(log.conn), log.msgs)
        return {f.seq for s in sent for f in s.answers + s.maybe}

    def _judge_cancel_request(self, log: ConnLog, cr: Msg, answered_lines: Callable[[], set[int]]) -> None:
        rid = cr.params.get("requestId") if isinstance(cr.params, dict) else None
        nxt = next((m for m in log.msgs if m.order > cr.order and m.direction == SENT and m.kind == REQUEST), None)
        where = f"$/cancel_request for requestId {js(rid)} (not pending) at t={cr.t:.2f}"
        if nxt is None or not nxt.responses:
            return
        end = nxt.responses[0]
        bad = next((m for m in log.msgs if cr.order < m.order < end.order and m.direction == RECEIVED
                    and m.kind == RESPONSE and (m.duplicate or m.id is None or m.request is None)
                    and m.frame.seq not in answered_lines()), None)
        other = next((f for f in self._frames_of(log.conn) if cr.frame.seq < f.seq < bad.frame.seq
                      and f.direction == SENT and not _plain_message(f.msg)), None) if bad is not None else None
        if bad is not None and other is not None:
            # a batch (which an agent without batches refuses whole, id null) or a line that is no
            # message came between: the answer may be that line's
            self.noted("CANCEL-013", f"{where}: the agent answered with {js(bad.msg, 160)} at t={bad.t:.2f}, "
                       f"after the suite also wrote {other.text(80)!r}, which that answer may be for.",
                       fr([bad, other, cr]))
        elif bad is not None:
            self.failed("CANCEL-013", f"{where}: the agent answered with {js(bad.msg, 160)} at t={bad.t:.2f}.",
                        fr([bad, cr]))
        else:
            self.pass_few("CANCEL-013", f"{where}: nothing came back before the next request id={js(nxt.id)} was "
                          f"answered (t={end.t:.2f}).", [end, cr])

def _plain_message(msg: Any) -> bool:
    """One JSON-RPC 2.0 request or notification (not a batch, not a line that is no message)."""
    return isinstance(msg, dict) and msg.get("jsonrpc") == "2.0" and isinstance(msg.get("method"), str)


class ClientCancelRequestMonitor(ConnMonitor):
    side = "client"
    rules = ("CANCEL-012", "CANCEL-013", "CANCEL-014")

    def analyze(self, log: ConnLog) -> None:
        self._received(log)
        self._sent(log)

    def _received(self, log: ConnLog) -> None:
        ours = agent_msgs(log, REQUEST)
        for c in agent_msgs(log, NOTIFICATION, "$/cancel_request"):
            rid = cap(c.params, "requestId")
            target = next((q for q in ours if q.order < c.order and id_key(q.id) == id_key(rid)), None)
            pending = target is not None and not any(r.order < c.order for r in target.responses)
            if target is None and (own := next((q for q in client_msgs(log, REQUEST) if q.order < c.order
                                                and id_key(q.id) == id_key(rid)
                                                and not any(r.order < c.order for r in q.responses)), None)):
                self._judge_foreign_cancel(log, c, own)
                continue
            if target is not None and target.responses and not pending and not any(
                    m.order < c.order for m in agent_msgs(log) if m.order > target.order):
                # the suite cancelled its request at once and the client's answer crossed that cancel
                self.not_exercised("CANCEL-012", f"the client answered {target.method} (id {js(rid)}) at "
                                   f"t={target.responses[0].t:.2f}, before the agent's $/cancel_request for it "
                                   "arrived (a client that answers at once wins that race; its right).",
                                   fr([c, target.responses[0], target]))
            if pending:
                n = len(target.responses)
                if n == 1:
                    self.pass_few("CANCEL-012", f"{target.method} (id {js(rid)}), cancelled by $/cancel_request, got "
                                  f"exactly one response: {js(target.responses[0].msg, 120)}.",
                                  [target.responses[0], c, target])
                elif n > 1:
                    self.failed("CANCEL-012", f"{target.method} (id {js(rid)}) got {n} responses after "
                                "$/cancel_request.", fr([target.responses[1], c, target]))
                elif not crashed(log) and (log.end is None or log.end.t > c.t):
                    self.failed("CANCEL-012", f"{target.method} (id {js(rid)}) got no response after "
                                f"$/cancel_request ({log.end_desc or 'the test ended'}).", fr([c, target]))
                continue
            # unknown or already answered: nothing may come back
            back = [m for m in client_msgs(log, RESPONSE) if m.order > c.order
                    and (m.request is None or m.duplicate) and (m.id is None or id_key(m.id) == id_key(rid))]
            if target is not None and any(e.order < c.order and id_key(cap(e.params, "requestId")) == id_key(rid)
                                          and not any(r.order < e.order for r in target.responses)
                                          for e in agent_msgs(log, NOTIFICATION, "$/cancel_request")):
                # an earlier $/cancel_request found it pending: a second answer to it is that one's (CANCEL-012)
                back = [m for m in back if m.id is None]
            what = "an already-answered" if target is not None else "an unknown"
            if back:
                self.failed("CANCEL-013", f"$/cancel_request naming {what} request id {js(rid)} was answered: "
                            f"{js(back[0].msg, 140)}.", fr([back[0], c]))
            elif any(m.order > c.order for m in client_msgs(log)):
                self.pass_few("CANCEL-013", f"$/cancel_request naming {what} request id {js(rid)} was ignored.", [c])

    def _judge_foreign_cancel(self, log: ConnLog, c: Msg, own: Msg) -> None:
        """The agent's $/cancel_request names an id the agent never used, which the client's own pending request
        ``own`` has: it names no request of the client's side, so the client answers nothing (CANCEL-013) and
        does not take its own request as cancelled: it keeps waiting and goes on with the answer (CANCEL-014)."""
        where = (f"the agent's $/cancel_request (t={c.t:.2f}) names id {js(own.id)}, which is no request of the "
                 f"agent but the client's own pending {own.method}")
        back = next((m for m in client_msgs(log, RESPONSE) if m.order > c.order and (m.request is None or m.duplicate)
                     and (m.id is None or id_key(m.id) == id_key(own.id))), None)
        if back is not None:  # an id unknown on the client's side, answered: CANCEL-013's failure
            self.failed("CANCEL-013", f"{where}; the client answered that notification: {js(back.msg, 140)}.",
                        fr([back, c, own]))
        ans = own.responses[0] if own.responses else None
        if ans is None:
            gave_up = any(m.order > c.order and id_key(cap(m.params, "requestId")) == id_key(own.id)
                          for m in client_msgs(log, NOTIFICATION, "$/cancel_request"))
            # it left with nothing but that notification seen since, and nobody had closed its side
            told = any(m.order > c.order and m.t < log.end.t for m in agent_msgs(log)) if log.end else True
            shut = any(e.event == EV_STDIN_CLOSED and e.seq < log.end.seq for e in log.events) if log.end else True
            if log.end is not None and not (gave_up or told or shut) and log.end.seq > c.frame.seq:
                self.failed("CANCEL-014", f"{where}; the client stopped waiting for it: it ended the connection "
                            f"at t={log.end.t:.2f} ({log.end_desc or log.end.event}) with its {own.method} still "
                            "unanswered, as if that notification had cancelled it.", fr([c, own]))
            return
        sid = cap(ans.result, "sessionId")
        went_on = next((m for m in client_msgs(log) if m.order > ans.order
                        and (not isinstance(sid, str) or m.session_id == sid)), None)
        if went_on is not None:
            self.pass_few("CANCEL-014", f"{where}; the client kept waiting for it, and after its answer "
                          f"(t={ans.t:.2f}) went on with {went_on.method or 'a message'}"
                          f"{f' for {sid!r}' if isinstance(sid, str) else ''} at t={went_on.t:.2f}.",
                          [went_on, ans, c, own])
        else:
            self.noted("CANCEL-014", f"{where}; it was answered at t={ans.t:.2f}, and the client sent nothing after "
                       f"that{' for ' + repr(sid) if isinstance(sid, str) else ''}: whether it took the answer is "
                       "not seen.", fr([ans, c, own]))

    def _sent(self, log: ConnLog) -> None:
        mine = client_msgs(log, REQUEST)
        for c in client_msgs(log, NOTIFICATION, "$/cancel_request"):
            rid = cap(c.params, "requestId")
            target = next((q for q in mine if q.order < c.order and id_key(q.id) == id_key(rid)), None)
            if target is None:
                theirs = any(id_key(q.id) == id_key(rid) for q in agent_msgs(log, REQUEST) if q.order < c.order)
                self.failed("CANCEL-014", f"the client's $/cancel_request names id {js(rid)}, "
                            f"{'a request of the agent, not its own' if theirs else 'which it never used'}.", fr([c]))
            elif any(r.order < c.order for r in target.responses):
                self.noted("CANCEL-014", f"the client's $/cancel_request names its {target.method} (id {js(rid)}), "
                           "already answered (a race; the agent ignores it).", fr([c, target]))
            else:
                self.pass_few("CANCEL-014", f"the client's $/cancel_request names its own pending {target.method} "
                              f"(id {js(rid)}).", [c, target])

