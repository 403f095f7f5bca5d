"""session/cancel of active foreground work: the cancelled idle, no error, nothing after it.

A cancel judged here is the suite's ``session/cancel`` notification for a session whose work is
active on that connection (a running/requires_action seen and no idle since). The cancelled idle
is the first idle with stopReason "cancelled" after it; other idles in between are recorded. The
work's ids are the messageIds (agent_message*, agent_thought*) and toolCallIds (tool_call_update,
tool_call_content_chunk) first seen from the running that started the work until the cancelled
idle, minus tool calls listed in any ``background`` array of the session.

CANCEL-007 (``LateAnswerMonitor``):

A late "allow" to a permission request of cancelled work (CANCEL-007, SHOULD).

The situation: the agent asked ``session/request_permission`` for a tool call; the suite held the
request, sent ``session/cancel`` and saw the cancelled idle (stopReason "cancelled"); only then did
it answer the abandoned request with an allow option. Whether the agent had already withdrawn the
request ($/cancel_request) does not matter: the answer is late either way.

What the late allow may not cause: progress of *that* tool call (status in_progress or completed,
at any later point of the connection), or a new ``running`` state of the session before the suite
next asks the session for work (a prompt, a resume): nothing else could have started work then.
Work the agent starts afterwards for other reasons is legal and not judged. The suite bounds its
wait by events, not time: after the late answer it sends a request the agent must answer
(session/list), then a short prompt whose idle ends the scenario; the tool call's progress is
judged up to the end of the connection.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ...wire.transcript import RECEIVED, SENT
from ..monitor import NOTIFICATION, REQUEST, RESPONSE
from ._common import (AGENT_MESSAGE_KINDS, TOOL_KINDS, USER_KINDS, WORK_STATES, ConnLog, ConnMonitor, Msg,
                      TrackedSession, answered_request, fr, hashable, js, secs, session_update, session_update_kind)


def _refs(upd: dict[str, Any]) -> list[tuple[str, Any]]:
    kind = upd.get("sessionUpdate")
    if kind in AGENT_MESSAGE_KINDS and hashable(upd.get("messageId")):
        return [("messageId", upd.get("messageId"))]
    if kind in TOOL_KINDS and hashable(upd.get("toolCallId")):
        return [("toolCallId", upd.get("toolCallId"))]
    return []


def _background_tool_calls(upd: dict[str, Any]) -> set[Any]:
    out: set[Any] = set()
    bg = upd.get("background")
    if isinstance(bg, list):
        for item in bg:
            if isinstance(item, dict) and item.get("type") == "tool_call" and hashable(item.get("toolCallId")):
                out.add(item.get("toolCallId"))
    return out


@dataclass(eq=False)
class _Work:
    start: Msg
    ids: set[tuple[str, Any]] = field(default_factory=set)


@dataclass(eq=False)
class _Cancel:
    m: Msg
    sid: str
    work: _Work
    prompts: list[Msg]  # prompt requests of the session still unanswered when the cancel was sent
    idle: Msg | None = None  # the cancelled idle
    other_idles: list[Msg] = field(default_factory=list)  # idles without stopReason cancelled after the cancel
    # (response, request, the user messages inserted while it was pending): an error answer to a prompt after it
    error_resps: list[tuple[Msg, Msg, list[Msg]]] = field(default_factory=list)
    violation: tuple[Msg, tuple[str, Any]] | None = None  # CANCEL-003
    post_end: str = ""
    idles_before: int = 0  # work-ending idles of the session on this connection before the cancel


@dataclass(eq=False)
class _Sess(TrackedSession):
    work: _Work | None = None
    seen: set[tuple[str, Any]] = field(default_factory=set)
    cancel: _Cancel | None = None  # waiting for its cancelled idle
    post: _Cancel | None = None  # after its cancelled idle, until the next running
    last_end_idle: Msg | None = None
    end_idles: int = 0
    prompts: list[Msg] = field(default_factory=list)
    users_seen: set[Any] = field(default_factory=set)
    user_new: list[tuple[Msg, Any]] = field(default_factory=list)


class CancelMonitor(ConnMonitor):
    rules = ("CANCEL-001", "CANCEL-002", "CANCEL-003")

    def __init__(self, ctx):
        super().__init__(ctx)
        self._races: list[tuple[str, list]] = []  # end_turn-style idles right after a cancel

    def finish_test(self) -> None:
        if len(self._races) >= 2:
            self.failed("CANCEL-001", f"{len(self._races)} cancels in this test were each followed at once by an "
                        "idle with a stop reason other than \"cancelled\": " + "; ".join(w for w, _ in self._races),
                        [f for _, frames in self._races for f in frames])
        elif self._races:
            where, frames = self._races[0]
            self.untested("CANCEL-001", where + "; it may have finished before the agent read the cancel "
                          "(inconclusive; a second cancel in the same test decides): use a longer --acp-long-prompt.",
                          frames)

    def analyze(self, log: ConnLog) -> None:
        background = _background_by_session(log)
        sess: defaultdict[str, _Sess] = defaultdict(_Sess)
        cancels: list[_Cancel] = []
        for m in log.msgs:
            if m.direction == SENT:
                if isinstance(m.session_id, str):
                    self._on_sent(m, sess[m.session_id], cancels)
                continue
            rq = answered_request(m)
            if rq is not None and isinstance(rq.session_id, str):
                _on_answer(m, rq, sess[rq.session_id], cancels)
            su = session_update_kind(m)  # None for a response: it was handled above
            if su is None:
                continue
            sid, upd, kind = su
            st = sess[sid]
            facts = log.sessions.session(sid)
            resuming = facts is not None and bool(facts.resumes_pending_at(m))  # history or snapshots, not live
            if kind in USER_KINDS:
                _on_user_message(st, m, upd, resuming)
            elif kind == "state_update":
                _on_state(st, m, upd, resuming)
            else:
                _on_work_update(st, m, upd, background.get(sid, set()), resuming)
        self._insertions = _Insertions(log)
        for c in cancels:
            self._judge(log, c)

    def _on_sent(self, m: Msg, st: _Sess, cancels: list[_Cancel]) -> None:
        sid = m.session_id
        if m.kind == REQUEST and m.method == "session/prompt":
            st.prompts.append(m)
        elif m.kind == NOTIFICATION and m.method == "session/cancel":
            if st.active and st.work is not None:
                if st.cancel is None:
                    c = _Cancel(m, sid, st.work, [p for p in st.prompts if not p.responses
                                                   or p.responses[0].order > m.order])
                    c.idles_before = st.end_idles
                    st.cancel = c
                    cancels.append(c)
            else:
                self._inactive_cancel(st, m, sid)

    def _inactive_cancel(self, st: _Sess, m: Msg, sid: str) -> None:
        race = float(self.opt("cancel_idle_gap", 1.0))
        last_prompt = st.prompts[-1] if st.prompts else None
        if last_prompt is None:
            return  # a cancel of an idle or unknown session: nothing to send, nothing to judge
        idle = st.last_end_idle
        if idle is not None and idle.order > last_prompt.order:
            if m.t - idle.t <= race:
                self.untested("CANCEL-001", f"the work of session {sid!r} ended (idle {js(idle.msg['params']['update'].get('stopReason'))} "
                              f"at t={idle.t:.2f}) before the cancel was sent at t={m.t:.2f}: the work ended before "
                              "the cancel was sent: use a longer --acp-long-prompt.", fr([m, idle, last_prompt]))
            return
        resp = last_prompt.responses[0] if last_prompt.responses and last_prompt.responses[0].order < m.order else None
        if resp is None or resp.ok:
            self.untested("CANCEL-001", f"session/cancel for {sid!r} at t={m.t:.2f} was sent while prompt "
                          f"id={js(last_prompt.id)} was in flight but before the agent reported it running: "
                          "no active work to cancel yet; wait for the running state_update.",
                          fr([m, last_prompt]))

    def _judge(self, log: ConnLog, c: _Cancel) -> None:
        where = f"session/cancel for {c.sid!r} at t={c.m.t:.2f} (work running since t={c.work.start.t:.2f})"
        self._judge_cancelled_idle(log, c, where)
        self._judge_no_error(c, where)
        self._judge_nothing_after(log, c, where)

    def _judge_cancelled_idle(self, log: ConnLog, c: _Cancel, where: str) -> None:
        """CANCEL-001: the cancelled work ends with an idle stopReason "cancelled", in time."""
        timeout = float(self.opt("cancel_timeout", 30.0))
        # The check calls "idle before the cancel was written" inconclusive. An idle with another stop
        # reason right after the cancel (within the race window) may have been in the pipe already:
        # inconclusive once, but twice in one test no natural end is that punctual (see finish_test).
        race = float(self.opt("cancel_race", 0.5))
        cm = c.m
        if c.idle is not None:
            dt = c.idle.t - cm.t
            if dt > timeout:
                self.failed("CANCEL-001", f"{where}: the idle stopReason \"cancelled\" came only {secs(dt)} later "
                            f"(more than {secs(timeout)}).", fr([c.idle, cm]))
            else:
                self.pass_few("CANCEL-001", f"{where}: idle stopReason \"cancelled\" followed {secs(dt)} later.",
                              [c.idle, cm])
        elif c.other_idles:
            first = c.other_idles[0]
            sr = first.msg["params"]["update"].get("stopReason")
            dt = first.t - cm.t
            if sr is None:
                self.untested("CANCEL-001", f"{where}: the work ended {secs(dt)} later with an idle that carries no "
                              "stopReason, so whether it was cancelled is not reported (PROMPT-013 judges the "
                              "missing stopReason).", fr([first, cm]))
            elif sr == "error" and _auth_required(first):
                self.untested("CANCEL-001", f"{where}: the work ended {secs(dt)} later with error auth_required "
                              "(-32000): the agent requires authentication, so the cancel cannot be judged.",
                              fr([first, cm]))
            elif sr == "error":
                self.failed("CANCEL-001", f"{where}: the work ended {secs(dt)} later with stopReason \"error\" "
                            "instead of \"cancelled\".", fr([first, cm]))
            elif dt < race:
                self._races.append((f"{where}: the work ended {secs(dt)} later with stopReason {js(sr)}",
                                    fr([first, cm])))
            else:
                self.failed("CANCEL-001", f"{where}: the work ended {secs(dt)} later with stopReason {js(sr)} "
                            "instead of \"cancelled\".", fr([first, cm]))
        else:
            self._judge_no_idle(log, c, where)

    def _judge_no_idle(self, log: ConnLog, c: _Cancel, where: str) -> None:
        """CANCEL-001 when no idle of the session followed the cancel at all."""
        cm = c.m
        waited = log.waited(cm.t)
        msg = f"{where}: no idle state_update for the session followed; the suite waited {secs(waited)}: {log.end_desc}."
        if log.cut is not None:
            self.untested("CANCEL-001", msg + f" Not judged: {log.cut_desc()}.", fr([cm]))
        elif c.idles_before == 0:
            self.untested("CANCEL-001", msg + " The agent reported no idle for any earlier work of this session "
                          "on this connection either (PROMPT-012 judges a missing idle), so the cancel itself "
                          "cannot be judged.", fr([cm, c.work.start]))
        elif waited >= float(self.opt("idle_grace", 0.0)):
            self.failed("CANCEL-001", msg, fr([cm, c.work.start]))
        else:
            self.untested("CANCEL-001", msg + " Too short to judge.", fr([cm]))

    def _judge_no_error(self, c: _Cancel, where: str) -> None:
        """CANCEL-002: the cancelled work ends without an error idle or an error response to an inserted prompt."""
        cm = c.m
        bad = False
        # an auth_required error ends the work whatever the cancel does (a released agent without credentials)
        err_idles = [i for i in c.other_idles if i.msg["params"]["update"].get("stopReason") == "error"
                     and not _auth_required(i)]
        if err_idles:
            bad = True
            e = err_idles[0]
            tail = (f", before the cancelled idle at t={c.idle.t:.2f}" if c.idle is not None
                    else " and no cancelled idle followed")
            self.failed("CANCEL-002", f"{where}: an idle with stopReason \"error\" arrived at t={e.t:.2f}{tail}.",
                        fr([e, cm, c.idle]))
        for resp, rq, inserted in c.error_resps:
            code = resp.error_code
            ins, rival = self._insertions.of(rq, inserted)
            if ins is not None and rival is not None:
                self.noted("CANCEL-002", f"{where}: prompt id={js(rq.id)} was answered after the cancel with error "
                           f"{js(code)}; the user message {js(ins.msg['params']['update'].get('messageId'))} "
                           f"inserted at t={ins.t:.2f} may be prompt id={js(rival.id)}'s, which was pending too and "
                           "was not answered with another message, so this prompt may have been held (not "
                           "inserted), for which an error (-32800) is allowed.", fr([resp, cm, rq, ins, rival]))
            elif ins is not None:
                bad = True
                self.failed("CANCEL-002", f"{where}: prompt id={js(rq.id)} was answered after the cancel with error "
                            f"{js(code)} although its user message {js(ins.msg['params']['update'].get('messageId'))} "
                            f"had been inserted (t={ins.t:.2f}).", fr([resp, cm, rq, ins]))
            else:
                self.noted("CANCEL-002", f"{where}: prompt id={js(rq.id)} was answered after the cancel with error "
                           f"{js(code)}; no user message was seen for it, so it may have been a held (not inserted) "
                           "prompt, for which an error (-32800) is allowed.", fr([resp, cm, rq]))
        if c.idle is not None and not bad:
            self.pass_few("CANCEL-002", f"{where}: the work ended with stopReason \"cancelled\", no error idle and "
                          "no error response.", [c.idle, cm])

    def _judge_nothing_after(self, log: ConnLog, c: _Cancel, where: str) -> None:
        """CANCEL-003: no update of the cancelled work's messages or tool calls after the cancelled idle."""
        if c.idle is None:
            return
        cm = c.m
        if c.violation is not None:
            u, ref = c.violation
            self.failed("CANCEL-003", f"{where}: {u.msg['params']['update'].get('sessionUpdate')} for "
                        f"{ref[0]} {js(ref[1])} of the cancelled work arrived at t={u.t:.2f}, after the "
                        f"cancelled idle at t={c.idle.t:.2f}.", fr([u, c.idle, cm]))
        else:
            until = c.post_end or f"the end of the connection ({log.end_desc})"
            self.pass_few("CANCEL-003", f"{where}: no update for the cancelled work's {len(c.work.ids)} "
                          f"message/tool-call id(s) followed the cancelled idle at t={c.idle.t:.2f} until "
                          f"{until}.", [c.idle, cm])


def _background_by_session(log: ConnLog) -> dict[str, set[Any]]:
    """Tool calls each session listed in a ``background`` array of any state_update on the connection."""
    background: dict[str, set[Any]] = {}
    for m in log.msgs:
        su = session_update(m)
        if su and su[1].get("sessionUpdate") == "state_update":
            background.setdefault(su[0], set()).update(_background_tool_calls(su[1]))
    return background


def _on_answer(m: Msg, rq: Msg, st: _Sess, cancels: list[_Cancel]) -> None:
    """An answer to the suite's prompt: an error after a cancel."""
    if rq.method == "session/prompt" and not m.ok:
        for c in cancels:
            if c.sid == rq.session_id and rq in c.prompts:
                c.error_resps.append((m, rq, [u for u, _ in st.user_new if rq.order < u.order < m.order]))


class _Insertions:
    """Whose user message is it? A prompt's success answer names the message it inserted (its messageId); a
    message no answer names belongs to one of the prompts pending when it came."""

    def __init__(self, log: ConnLog):
        self.prompts = [m for m in log.msgs if m.direction == SENT and m.kind == REQUEST
                        and m.method == "session/prompt" and isinstance(m.session_id, str)]
        self.claims = {_answered_id(p): p for p in self.prompts if _answered_id(p) is not None}

    def of(self, rq: Msg, inserted: list[Msg]) -> tuple[Msg | None, Msg | None]:
        """(the first user message inserted while ``rq`` was pending that no other prompt's answer names, another
        prompt it may belong to as well): (None, None) when every such message is another prompt's."""
        own = [u for u in inserted if self.claims.get(_message_id(u), rq) is rq]
        if not own:
            return None, None
        u = own[0]
        rival = next((p for p in self.prompts if p is not rq and p.session_id == rq.session_id
                      and p.order < u.order and (not p.responses or p.responses[0].order > u.order)
                      and _answered_id(p) in (None, _message_id(u))), None)
        return u, rival


def _message_id(u: Msg) -> Any:
    mid = u.msg["params"]["update"].get("messageId")
    return mid if isinstance(mid, str) else None


def _answered_id(p: Msg) -> str | None:
    """The messageId of a prompt's success answer, if it has one."""
    r = p.responses[0] if p.responses else None
    mid = r.result.get("messageId") if r is not None and r.ok and isinstance(r.result, dict) else None
    return mid if isinstance(mid, str) else None


def _on_user_message(st: _Sess, m: Msg, upd: dict[str, Any], resuming: bool) -> None:
    mid = upd.get("messageId")
    if hashable(mid) and mid not in st.users_seen:
        st.users_seen.add(mid)
        if not resuming:
            st.user_new.append((m, mid))


def _on_state(st: _Sess, m: Msg, upd: dict[str, Any], resuming: bool) -> None:
    """A state_update: new work starts at a running; an idle may be the cancelled idle a cancel waits for."""
    state = upd.get("state")
    changed = st.follow_state(state)
    if state in WORK_STATES:
        if changed:
            st.work = _Work(m)
            if st.post is not None:
                st.post.post_end = f"the next running at t={m.t:.2f}"
                st.post = None
            if st.cancel is not None and st.cancel.other_idles:
                st.cancel = None  # it ended without a cancelled idle; new work starts
    elif state == "idle":
        if resuming:
            return
        if changed:
            st.last_end_idle = m
            st.end_idles += 1
        c = st.cancel
        if c is not None:
            if upd.get("stopReason") == "cancelled":
                c.idle = m
                st.cancel = None
                st.post = c
            else:
                c.other_idles.append(m)


def _on_work_update(st: _Sess, m: Msg, upd: dict[str, Any], background: set[Any], resuming: bool) -> None:
    """A message or tool-call update: it joins the running work's ids, or breaks CANCEL-003 after a cancelled idle."""
    refs = _refs(upd)
    if not refs:
        return
    if resuming:
        st.seen.update(refs)
        return
    if st.post is not None and st.post.violation is None:
        for ref in refs:
            if ref in st.post.work.ids and ref[1] not in background:
                st.post.violation = (m, ref)
    for ref in refs:
        if ref not in st.seen:
            st.seen.add(ref)
            if st.active and st.work is not None:
                st.work.ids.add(ref)


def _auth_required(idle) -> bool:
    """An idle whose error is auth_required (-32000): the turn failed for want of authentication."""
    err = idle.msg["params"]["update"].get("error")
    return isinstance(err, dict) and err.get("code") == -32000


PROGRESS = ("in_progress", "completed")
WORK_METHODS = ("session/prompt", "session/resume")  # requests of the suite that may legally start work


def _tool_call_id(q: Msg) -> Any:
    p = q.params if isinstance(q.params, dict) else {}
    subject = p.get("subject") if isinstance(p.get("subject"), dict) else {}
    tool = subject.get("toolCall") if isinstance(subject.get("toolCall"), dict) else p.get("toolCall")
    return tool.get("toolCallId") if isinstance(tool, dict) else None


def _allow_answer(q: Msg, a: Msg) -> Any:
    """The optionId when answer ``a`` selects an allow_* option that request ``q`` offered, else None."""
    outcome = a.result.get("outcome") if a.ok and isinstance(a.result, dict) else None
    if not isinstance(outcome, dict) or outcome.get("outcome") != "selected":
        return None
    options = (q.params or {}).get("options") if isinstance(q.params, dict) else None
    chosen = next((o for o in options or [] if isinstance(o, dict) and o.get("optionId") == outcome.get("optionId")),
                  None)
    if chosen is not None and str(chosen.get("kind", "")).startswith("allow"):
        return chosen.get("optionId")
    return None


class LateAnswerMonitor(ConnMonitor):
    rules = ("CANCEL-007",)

    def analyze(self, log: ConnLog) -> None:
        msgs = log.msgs
        for a in msgs:
            if a.direction != SENT or a.kind != RESPONSE or a.duplicate or a.request is None:
                continue
            q = a.request
            if q.direction != RECEIVED or q.method != "session/request_permission" or not isinstance(q.session_id, str):
                continue
            option = _allow_answer(q, a)
            if option is None:
                continue
            sid = q.session_id
            cancel = next((m for m in msgs if q.order < m.order < a.order and m.direction == SENT
                           and m.kind == NOTIFICATION and m.method == "session/cancel" and m.session_id == sid), None)
            if cancel is None:
                continue
            idle = next((m for m in msgs if cancel.order < m.order < a.order and (su := session_update(m))
                         and su[0] == sid and su[1].get("sessionUpdate") == "state_update"
                         and su[1].get("state") == "idle" and su[1].get("stopReason") == "cancelled"), None)
            if idle is None:
                continue  # the answer was not late: the work had not ended when it was sent (CANCEL-004's case)
            self._judge(log, q, a, cancel, idle, sid, option)

    def _judge(self, log: ConnLog, q: Msg, a: Msg, cancel: Msg, idle: Msg, sid: str, option: Any) -> None:
        where = (f"session/request_permission id={js(q.id)} answered with {js(option)} at t={a.t:.2f}, after "
                 f"session/cancel (t={cancel.t:.2f}) and the cancelled idle (t={idle.t:.2f})")
        tcid = _tool_call_id(q)
        later = [m for m in log.msgs if m.order > a.order]
        if tcid is not None:
            moved = next((m for m in later if (su := session_update(m)) and su[0] == sid
                          and su[1].get("toolCallId") == tcid and su[1].get("status") in PROGRESS), None)
            if moved is not None:
                self.warned("CANCEL-007", f"{where}: tool call {js(tcid)} of the cancelled work reported status "
                            f"{js(session_update(moved)[1].get('status'))} at t={moved.t:.2f}.", fr([moved, a, idle, q]))
                return
        # until the suite next asks this session for work (a prompt, a resume), only the late answer can have
        # started work; what bounds the wait is the first later request of the suite that was answered
        work = next((m for m in later if m.direction == SENT and m.kind == REQUEST and m.session_id == sid
                     and m.method in WORK_METHODS), None)
        # a prompt held behind the cancelled work (answered after the cancelled idle, or not yet) may legally
        # run now: a running may then be its own
        held = any(m.direction == SENT and m.kind == REQUEST and m.method == "session/prompt" and m.session_id == sid
                   and m.order < a.order and (not m.responses or m.responses[0].order > idle.order) for m in log.msgs)
        running = None if held else next(
            (m for m in later if (work is None or m.order < work.order) and (su := session_update(m))
             and su[0] == sid and su[1].get("sessionUpdate") == "state_update" and su[1].get("state") == "running"),
            None)
        if running is not None:
            self.warned("CANCEL-007", f"{where}: the session reported running at t={running.t:.2f}, before the suite "
                        "asked it for more work.", fr([running, a, idle, q]))
            return
        bound = next((m for m in later if m.direction == SENT and m.kind == REQUEST and m.responses), None)
        if bound is None:
            self.untested("CANCEL-007", f"{where}: nothing the agent had to answer followed the late answer, so "
                          f"whether it resumed the work later is unknown ({log.end_desc}).", fr([a, idle, q]))
            return
        self.pass_few("CANCEL-007", f"{where}: no progress of tool call {js(tcid)}, and no new running state before "
                      f"{bound.method} (t={bound.t:.2f}) was answered"
                      + (f" and before the suite asked for more work ({work.method} at t={work.t:.2f})."
                         if work is not None else "."), [a, idle, q])
