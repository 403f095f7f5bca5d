"""session/prompt: the response (insertion), the echoed user message, and the work's lifecycle.

Per connection and session the monitor follows the state updates (work is *active* after a
running/requires_action and until an idle) and attributes to each prompt request:

* its response (PROMPT-001; an error response: PROMPT-003/004),
* the user-message updates seen while it is in flight (PROMPT-002/003/004),
* the first running/requires_action after the request (PROMPT-011) - if the session was busy with
  earlier work when the prompt was sent, only updates after that work's idle count, unless the prompt
  was answered (inserted) while that work was running and no work of its own followed: then it joined
  the running work ("A prompt starts or contributes to foreground work"), whose running and idle are its own,
* the idle that ends its work (PROMPT-005/011/012): the first idle after its running; an idle with
  no running since the request ends it too (and fails PROMPT-011).

Updates while a session/resume of the session is pending are history or snapshots: they are not
insertions and an idle among them ends no work (except the new user message and the running of a prompt
the suite wrote after the resume request: those are that prompt's). PROMPT-013 judges every idle that follows active
work, outside resume windows.

A keyed retry (an accepted prompt repeating the ``idempotencyKey`` of a submission accepted earlier
in the session) is not a new submission: it owes no echo, no work and no fresh messageId, so the
judgements of accepted prompts (PROMPT-002/005/006/011/012) skip it; idem.py judges it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

from ...wire.transcript import RECEIVED, SENT
from ..monitor import REQUEST, RESPONSE
from ._common import (USER_KINDS, WORK_STATES, ConnLog, ConnMonitor, Msg, TrackedSession, answered_request, fr, hashable, js, secs,
                      session_update, session_update_kind)
from .idem import idempotency_key


@dataclass(eq=False)
class _User:
    mid: Any
    m: Msg
    new: bool
    update: dict[str, Any]


STILL_REPORTING = 1.0  # seconds: an update this close to the end of the connection shows work going on


@dataclass(eq=False)
class _Rec:
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
    users: list[_User] = field(default_factory=list)

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
class _Sess(TrackedSession):
    running: Msg | None = None
    recs: list[_Rec] = field(default_factory=list)


def _text_of(blocks: Any) -> str | None:
    if isinstance(blocks, dict):
        blocks = [blocks]
    if not isinstance(blocks, list):
        return None
    parts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    parts = [p for p in parts if isinstance(p, str)]
    return "".join(parts) if parts else None


class PromptMonitor(ConnMonitor):
    rules = ("PROMPT-001", "PROMPT-002", "PROMPT-003", "PROMPT-004", "PROMPT-005", "PROMPT-006",
             "PROMPT-011", "PROMPT-012", "PROMPT-013")

    def __init__(self, ctx):
        super().__init__(ctx)
        self.instance: dict[str, int] = {}  # session id -> how often session/new returned it
        self.seen_users: dict[tuple[str, int], dict[Any, Msg]] = {}  # first frame of each user-message id
        self.accepted: dict[tuple[str, int], list[_Rec]] = {}
        self.keys: set[tuple[tuple[str, int], str]] = set()  # (session, idempotencyKey) of accepted submissions

    def _skey(self, sid: str) -> tuple[str, int]:
        return (sid, self.instance.get(sid, 0))

    # -- per connection -----------------------------------------------------------------------
    def analyze(self, log: ConnLog) -> None:
        window = float(self.opt("rejection_window", 2.0))
        sess: defaultdict[str, _Sess] = defaultdict(_Sess)
        by_req: dict[int, _Rec] = {}
        recs: list[_Rec] = []

        for m in log.msgs:
            if m.direction == SENT:
                if m.kind == REQUEST and isinstance(m.session_id, str):
                    sid = m.session_id
                    if m.method == "session/prompt":
                        st = sess[sid]
                        inflight = [r for r in st.recs if r.in_flight()]
                        rec = _Rec(m, sid, self._skey(sid), was_active=st.active, overlap=bool(inflight))
                        for r in inflight:
                            r.overlap = True
                        for r in st.recs:
                            if r.rejected and r.next_prompt_t is None:
                                r.next_prompt_t = m.t
                        st.recs.append(rec)
                        recs.append(rec)
                        by_req[id(m)] = rec
                    elif m.method == "session/resume":
                        sess[sid].resume_pending.append(m)
                continue
            rq = answered_request(m)
            if rq is not None:
                if rq.method == "session/prompt" and id(rq) in by_req:
                    rec = by_req[id(rq)]
                    rec.resp = m
                    st = sess[rec.sid]
                    if m.ok and rec.was_active and st.active and st.running is not None:
                        rec.joined_running = st.running  # inserted into the running work, maybe joining it
                    self._judge_001(rec)
                elif rq.method == "session/resume" and isinstance(rq.session_id, str):
                    sess[rq.session_id].resume_answered(rq)
                elif rq.method == "session/new" and m.ok and isinstance(m.result, dict):
                    sid = m.result.get("sessionId")
                    if isinstance(sid, str):
                        self.instance[sid] = self.instance.get(sid, 0) + 1
                        sess.pop(sid, None)
            su = session_update_kind(m)  # None for a response: it was handled above
            if su is None:
                continue
            sid, upd, kind = su
            st = sess[sid]
            # a prompt written after the pending resume: its new user message and its running are live, not history
            prompted = st.in_resume and any(r.req.order > st.resume_pending[0].order for r in st.recs if r.in_flight())
            if kind in USER_KINDS:
                mid = upd.get("messageId")
                if not hashable(mid):
                    continue
                seen = self.seen_users.setdefault(self._skey(sid), {})
                new = mid not in seen
                if new:
                    seen[mid] = m
                if st.in_resume and not (prompted and new):
                    continue
                for r in st.recs:
                    if r.collects(m.t, window):
                        r.users.append(_User(mid, m, new, upd))
            elif kind == "state_update":
                state = upd.get("state")
                changed = st.follow_state(state)
                if state in WORK_STATES:
                    if changed:
                        st.running = m
                    if st.in_resume and not prompted:
                        continue
                    for r in st.recs:
                        if r.end_idle is None and not r.rejected and not r.was_active and r.running is None:
                            r.running = m
                elif state == "idle":
                    if st.in_resume:
                        continue
                    if changed:
                        self._judge_013(sid, m, upd, st.running)
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

        for rec in recs:
            if rec.end_idle is None and rec.running is None and rec.joined is not None:
                rec.running, rec.end_idle = rec.joined  # no work of its own followed: it joined the busy work
            elif rec.running is None and rec.was_active and rec.joined_running is not None:
                rec.running = rec.joined_running  # joined work that was still running when observation ended
            if rec.end_idle is None and rec.running is None and rec.early_idle is not None:
                rec.end_idle = rec.early_idle
        claimed = {r.mid for r in recs if r.ok and hashable(r.mid)}
        retries = self._keyed_retries(recs)
        for rec in recs:
            if rec.resp is None:
                continue  # no response: ERR-004's business
            if rec.ok:
                if not isinstance(rec.mid, str) or id(rec) in retries:
                    continue  # PROMPT-001 failed (no messageId to follow), or a keyed retry (IDEM rules)
                self._judge_accepted(log, rec)
            else:
                self._judge_rejected(rec, claimed, window)

    def _keyed_retries(self, recs: list[_Rec]) -> set[int]:
        """The accepted prompts that repeat the idempotencyKey of a submission accepted before them (in
        answer order: a retry may cross its original on the wire)."""
        out: set[int] = set()
        for rec in sorted((r for r in recs if r.ok), key=lambda r: r.resp.order):
            key = idempotency_key(rec.req)
            if key is None:
                continue
            if (rec.skey, key) in self.keys:
                out.add(id(rec))
            else:
                self.keys.add((rec.skey, key))
        return out

    # -- judgements ---------------------------------------------------------------------------
    def _judge_001(self, rec: _Rec) -> None:
        resp = rec.resp
        assert resp is not None
        if not resp.ok:
            return
        res = resp.result
        frames = fr([resp, rec.req])
        if not isinstance(res, dict):
            self.failed("PROMPT-001", f"{rec.label()} succeeded with result {js(res)}, not an object with "
                        "messageId.", frames)
        elif "messageId" not in res:
            self.failed("PROMPT-001", f"{rec.label()} succeeded with result {js(res)}: messageId is missing "
                        "(the old upstream `{}` shape).", frames)
        elif not isinstance(res["messageId"], str):
            self.failed("PROMPT-001", f"{rec.label()} succeeded with messageId {js(res['messageId'])}, "
                        "not a string.", frames)
        elif res["messageId"] == "":
            self.warned("PROMPT-001", f"{rec.label()} succeeded with an empty messageId \"\".", frames)
        else:
            self.pass_few("PROMPT-001", f"{rec.label()} succeeded with messageId {js(res['messageId'])}.", frames)

    def _still_reporting(self, log: ConnLog, rec: _Rec) -> Msg | None:
        """The session's last update after the response when it came within STILL_REPORTING seconds of
        the connection's end (the work was visibly going on), else None."""
        assert rec.resp is not None
        end = rec.resp.t + log.waited(rec.resp.t)
        for m in reversed(log.msgs):
            if m.order <= rec.resp.order:
                return None
            su = session_update(m)
            if su is not None and su[0] == rec.sid:
                return m if end - m.t <= STILL_REPORTING else None
        return None

    def _no_end(self, log: ConnLog, rec: _Rec) -> tuple[bool, str]:
        """For work that never reached idle: (judge it?, how long the suite waited)."""
        assert rec.resp is not None
        waited = log.waited(rec.resp.t)
        how = f"{secs(waited)} after the response: {log.end_desc}"
        return waited >= float(self.opt("idle_grace", 0.0)), how

    def _judge_unended(self, rule: str, log: ConnLog, rec: _Rec, message: Callable[[str], str],
                       too_short: str) -> None:
        """Something the work owed before its idle never came, and the work never reached idle: FAIL once the
        suite waited idle_grace after the response, else untested with ``too_short`` appended."""
        judge, how = self._no_end(log, rec)
        assert rec.resp is not None
        if judge:
            self.failed(rule, message(how), fr([rec.resp, rec.req]))
        else:
            self.untested(rule, message(how) + too_short, fr([rec.resp, rec.req]))

    def _judge_accepted(self, log: ConnLog, rec: _Rec) -> None:
        resp = rec.resp
        assert resp is not None
        M = rec.mid
        req = rec.req
        skey = rec.skey
        # PROMPT-002: the echo
        match = [u for u in rec.users if u.mid == M]
        if match:
            u = match[0]
            self.pass_few("PROMPT-002", f"{rec.label()}: messageId {js(M)} was echoed by "
                          f"{u.update.get('sessionUpdate')} at t={u.m.t:.2f}.", [u.m, resp, req])
            self._compare_content(rec, match)
        else:
            if rec.end_idle is not None:
                self.failed("PROMPT-002", f"{rec.label()} returned messageId {js(M)} but no user_message/"
                            f"user_message_chunk with that id arrived for the session between the request "
                            f"(t={req.t:.2f}) and the idle that ended the work (t={rec.end_idle.t:.2f}).",
                            fr([resp, req, rec.end_idle]))
            else:
                self._judge_unended("PROMPT-002", log, rec, lambda how: (
                    f"{rec.label()} returned messageId {js(M)} but no user_message/user_message_chunk with "
                    f"that id arrived for the session (the work never reached idle; observed until {how})."),
                    " Too short to judge: wait for the idle.")
        if not rec.overlap:
            for u in rec.users:
                if u.new and u.mid != M:
                    self.failed("PROMPT-002", f"{rec.label()} returned messageId {js(M)}, but with only this "
                                f"prompt in flight another new user-message id {js(u.mid)} appeared for the "
                                f"session at t={u.m.t:.2f}.", fr([u.m, resp, req]))
                    break
        # PROMPT-005: response before the end of the work
        idle = rec.end_idle
        if idle is not None and rec.overlap:
            pass  # with another prompt in flight the idle may end that prompt's work: not attributable
        elif idle is not None:
            if resp.order > idle.order:
                work = idle.t - req.t
                threshold = float(self.opt("insertion_work_threshold", 5.0))
                msg = (f"{rec.label()} was answered at t={resp.t:.2f}, only after the idle that ended its work "
                       f"(t={idle.t:.2f}); the work lasted {secs(work)} from the request")
                if work > threshold:
                    self.failed("PROMPT-005", msg + f" (> {secs(threshold)}): the agent waited for the work.",
                                fr([resp, idle, req]))
                else:
                    self.warned("PROMPT-005", msg + f" (short work, <= {secs(threshold)}: may be a race).",
                                fr([resp, idle, req]))
            else:
                self.pass_few("PROMPT-005", f"{rec.label()} was answered at t={resp.t:.2f}, before the idle "
                              f"that ended its work (t={idle.t:.2f}).", [resp, idle, req])
        # PROMPT-006: distinct messageIds
        earlier = self.seen_users.get(skey, {}).get(M)
        dup = next((r for r in self.accepted.get(skey, []) if r.mid == M), None)
        if dup is not None:
            self.failed("PROMPT-006", f"{rec.label()} returned messageId {js(M)}, the same id as the earlier "
                        f"prompt id={js(dup.req.id)} in this session.", fr([resp, req, dup.resp]))
        elif earlier is not None and earlier.order < req.order:
            self.failed("PROMPT-006", f"{rec.label()} returned messageId {js(M)}, which an earlier user message "
                        f"of the session already had (t={earlier.t:.2f}).", fr([resp, req, earlier]))
        else:
            prev = self.accepted.get(skey, [])
            if prev:
                self.pass_few("PROMPT-006", f"{len(prev) + 1} accepted prompts in session {rec.sid!r} got "
                              f"distinct messageIds (latest {js(M)}, previous {js(prev[-1].mid)}).",
                              [resp, prev[-1].resp], key=rec.sid, limit=1)
        self.accepted.setdefault(skey, []).append(rec)
        # PROMPT-011: running before the end
        if rec.running is not None:
            self.pass_few("PROMPT-011", f"{rec.label()}: the work was reported running/requires_action at "
                          f"t={rec.running.t:.2f}.", [rec.running, req])
        elif idle is not None:
            self.failed("PROMPT-011", f"{rec.label()} was accepted, but the idle at t={idle.t:.2f} ended its work "
                        "with no state_update running or requires_action for the session since the request.",
                        fr([idle, resp, req]))
        else:
            self._judge_unended("PROMPT-011", log, rec, lambda how: (
                f"{rec.label()} was accepted, but no state_update running or requires_action for the session "
                f"followed (observed until {how})."), " Too short to judge.")
        # PROMPT-012: idle at the end
        if idle is not None:
            self.pass_few("PROMPT-012", f"{rec.label()}: the work ended with idle at t={idle.t:.2f}.", [idle, req])
        else:
            judge, how = self._no_end(log, rec)
            last = rec.running.t if rec.running is not None else None
            msg = (f"{rec.label()} was accepted (t={resp.t:.2f})"
                   + (f", work running since t={last:.2f}," if last is not None else "")
                   + f" but no idle state_update for the session followed: the suite waited {how}.")
            busy = self._still_reporting(log, rec)
            if busy is not None:
                # the rule is for work that ends: work still reporting progress when the connection
                # ended (a long task the suite did not cancel) had not ended, so there was no idle to owe
                self.untested("PROMPT-012", msg + f" The work was still reporting progress (an update at t={busy.t:.2f}, "
                              "just before the connection ended): not judged.", fr([busy, resp, req]))
            elif judge:
                self.failed("PROMPT-012", msg, fr([resp, rec.running, req]))
            else:
                self.untested("PROMPT-012", msg + " Shorter than idle_grace: not judged.", fr([resp, req]))

    def _compare_content(self, rec: _Rec, match: list[_User]) -> None:
        prompt = rec.req.params.get("prompt") if isinstance(rec.req.params, dict) else None
        if not isinstance(prompt, list) or not prompt:
            return
        if not all(isinstance(b, dict) and b.get("type") == "text" for b in prompt):
            return  # resources may be expanded: compare plain text prompts only
        want = _text_of(prompt)
        full = [u for u in match if u.update.get("sessionUpdate") == "user_message"]
        if full:
            got = _text_of(full[0].update.get("content"))
        else:
            texts = [_text_of(u.update.get("content")) for u in match]
            got = "".join(t for t in texts if t) or None
        if want is not None and got is not None and got != want:
            self.warned("PROMPT-002", f"{rec.label()}: the echoed user message text {js(got, 120)} differs from "
                        f"the prompt text {js(want, 120)}.", fr([match[0].m, rec.req]))

    def _judge_insertion(self, rule: str, rec: _Rec, msg: str, frames: list) -> None:
        """A user message inserted around a rejected prompt: FAIL, but only noted while another prompt of
        the session was in flight (the insertion may be that prompt's)."""
        if rec.overlap:
            self.noted(rule, msg + " Another prompt of the session was in flight, so the insertion "
                       "cannot be attributed.", frames)
        else:
            self.failed(rule, msg, frames)

    def _judge_rejected(self, rec: _Rec, claimed: set, window: float) -> None:
        resp = rec.resp
        assert resp is not None
        code = resp.error_code
        new = [u for u in rec.users if u.new and u.mid not in claimed]
        before = [u for u in new if u.m.order < resp.order]
        after = [u for u in new if u.m.order > resp.order]
        # PROMPT-003
        if before:
            u = before[0]
            msg = (f"{rec.label()} was answered with error {js(code)} at t={resp.t:.2f} after a new user message "
                   f"{js(u.mid)} had appeared for the session at t={u.m.t:.2f}.")
            self._judge_insertion("PROMPT-003", rec, msg, fr([resp, u.m, rec.req]))
        else:
            self.pass_few("PROMPT-003", f"{rec.label()} was rejected with error {js(code)} and no user message "
                          "had been inserted for it.", [resp, rec.req])
        # PROMPT-004
        if after:
            u = after[0]
            msg = (f"{rec.label()} was rejected with error {js(code)} at t={resp.t:.2f}, but a new user message "
                   f"{js(u.mid)} appeared for the session {secs(u.m.t - resp.t)} later.")
            self._judge_insertion("PROMPT-004", rec, msg, fr([u.m, resp, rec.req]))
        elif not before:
            self.pass_few("PROMPT-004", f"{rec.label()} was rejected with error {js(code)} and no new user "
                          f"message followed within {secs(window)}.", [resp, rec.req])

    def _judge_013(self, sid: str, idle: Msg, upd: dict[str, Any], running: Msg | None) -> None:
        sr = upd.get("stopReason")
        frames = fr([idle, running])
        where = f"the idle for {sid!r} at t={idle.t:.2f} that ended work" + (
            f" running since t={running.t:.2f}" if running is not None else "")
        if isinstance(sr, str) and sr:
            self.pass_few("PROMPT-013", f"{where} carried stopReason {js(sr)}.", frames)
        elif sr == "":
            self.warned("PROMPT-013", f"{where} carried an empty stopReason \"\".", frames)
        else:
            what = "no stopReason" if "stopReason" not in upd else f"stopReason {js(sr)}"
            if self.opt("stop_reason_required", True):
                self.failed("PROMPT-013", f"{where} carried {what}.", frames)
            else:
                self.warned("PROMPT-013", f"{where} carried {what} (stop_reason_required is off: the schema's "
                            "SHOULD).", frames)
