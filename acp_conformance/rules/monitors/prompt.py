"""session/prompt: the response (insertion), the echoed user message, and the work's lifecycle.

Per connection and session the monitor follows the state updates (work is *active* after a
running/requires_action and until an idle) and attributes to each prompt request (prompt_records.py):

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

from typing import Any, Callable

from ...wire.transcript import SENT
from ._common import ConnLog, ConnMonitor, Msg, fr, hashable, js, secs, session_update
from .idem import idempotency_key
from .prompt_records import PromptRecord, PromptWalk, UserMessage

STILL_REPORTING = 1.0  # seconds: an update this close to the end of the connection shows work going on


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
        self.accepted: dict[tuple[str, int], list[PromptRecord]] = {}
        self.keys: set[tuple[tuple[str, int], str]] = set()  # (session, idempotencyKey) of accepted submissions

    # -- per connection -----------------------------------------------------------------------
    def analyze(self, log: ConnLog) -> None:
        window = float(self.opt("rejection_window", 2.0))
        walk = PromptWalk(window, self.instance, self.seen_users, log.sessions)
        for m in log.msgs:
            if m.direction == SENT:
                walk.follow_request(m)
                continue
            answered = walk.follow_answer(m)
            if answered is not None:
                self._judge_001(answered)
            ended = walk.follow_update(m)
            if ended is not None:
                self._judge_013(*ended)
        walk.settle()
        self._judge_answered(log, walk.recs, window)

    def _judge_answered(self, log: ConnLog, recs: list[PromptRecord], window: float) -> None:
        """The judgements that need the whole connection, for every answered prompt."""
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

    def _keyed_retries(self, recs: list[PromptRecord]) -> set[int]:
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
    def _judge_001(self, rec: PromptRecord) -> None:
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

    def _still_reporting(self, log: ConnLog, rec: PromptRecord) -> Msg | None:
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

    def _no_end(self, log: ConnLog, rec: PromptRecord) -> tuple[bool, str]:
        """For work that never reached idle: (judge it?, how long the suite waited)."""
        assert rec.resp is not None
        waited = log.waited(rec.resp.t)
        how = f"{secs(waited)} after the response: {log.end_desc}"
        return waited >= float(self.opt("idle_grace", 0.0)), how

    def _judge_unended(self, rule: str, log: ConnLog, rec: PromptRecord, message: Callable[[str], str],
                       too_short: str) -> None:
        """Something the work owed before its idle never came, and the work never reached idle: FAIL once the
        suite waited idle_grace after the response, else untested with ``too_short`` appended."""
        judge, how = self._no_end(log, rec)
        assert rec.resp is not None
        if log.cut is not None:
            self.untested(rule, message(how) + f" Not judged: {log.cut_desc()}.", fr([rec.resp, rec.req]))
        elif judge:
            self.failed(rule, message(how), fr([rec.resp, rec.req]))
        else:
            self.untested(rule, message(how) + too_short, fr([rec.resp, rec.req]))

    def _judge_accepted(self, log: ConnLog, rec: PromptRecord) -> None:
        self._judge_echo(log, rec)
        self._judge_no_other_echo(rec)
        self._judge_answered_before_idle(rec)
        self._judge_distinct_id(rec)
        self.accepted.setdefault(rec.skey, []).append(rec)
        self._judge_running(log, rec)
        self._judge_idle(log, rec)

    def _judge_echo(self, log: ConnLog, rec: PromptRecord) -> None:
        """PROMPT-002: the accepted prompt's messageId is echoed by a user message."""
        resp, req, M = rec.resp, rec.req, rec.mid
        assert resp is not None
        match = [u for u in rec.users if u.mid == M]
        if match:
            u = match[0]
            self.pass_few("PROMPT-002", f"{rec.label()}: messageId {js(M)} was echoed by "
                          f"{u.update.get('sessionUpdate')} at t={u.m.t:.2f}.", [u.m, resp, req])
            self._compare_content(rec, match)
        elif rec.end_idle is not None:
            self.failed("PROMPT-002", f"{rec.label()} returned messageId {js(M)} but no user_message/"
                        f"user_message_chunk with that id arrived for the session between the request "
                        f"(t={req.t:.2f}) and the idle that ended the work (t={rec.end_idle.t:.2f}).",
                        fr([resp, req, rec.end_idle]))
        else:
            self._judge_unended("PROMPT-002", log, rec, lambda how: (
                f"{rec.label()} returned messageId {js(M)} but no user_message/user_message_chunk with "
                f"that id arrived for the session (the work never reached idle; observed until {how})."),
                " Too short to judge: wait for the idle.")

    def _judge_no_other_echo(self, rec: PromptRecord) -> None:
        """PROMPT-002: with only this prompt in flight, no other new user-message id appears."""
        if rec.overlap:
            return
        M = rec.mid
        for u in rec.users:
            if u.new and u.mid != M:
                self.failed("PROMPT-002", f"{rec.label()} returned messageId {js(M)}, but with only this "
                            f"prompt in flight another new user-message id {js(u.mid)} appeared for the "
                            f"session at t={u.m.t:.2f}.", fr([u.m, rec.resp, rec.req]))
                break

    def _judge_answered_before_idle(self, rec: PromptRecord) -> None:
        """PROMPT-005: the response comes before the idle that ends the work."""
        resp, req, idle = rec.resp, rec.req, rec.end_idle
        assert resp is not None
        if idle is None or rec.overlap:
            return  # with another prompt in flight the idle may end that prompt's work: not attributable
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

    def _judge_distinct_id(self, rec: PromptRecord) -> None:
        """PROMPT-006: each accepted prompt of a session gets a messageId of its own."""
        resp, req, M, skey = rec.resp, rec.req, rec.mid, rec.skey
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

    def _judge_running(self, log: ConnLog, rec: PromptRecord) -> None:
        """PROMPT-011: the work is reported running (or requires_action) before it ends."""
        idle = rec.end_idle
        if rec.running is not None:
            self.pass_few("PROMPT-011", f"{rec.label()}: the work was reported running/requires_action at "
                          f"t={rec.running.t:.2f}.", [rec.running, rec.req])
        elif idle is not None:
            self.failed("PROMPT-011", f"{rec.label()} was accepted, but the idle at t={idle.t:.2f} ended its work "
                        "with no state_update running or requires_action for the session since the request.",
                        fr([idle, rec.resp, rec.req]))
        else:
            self._judge_unended("PROMPT-011", log, rec, lambda how: (
                f"{rec.label()} was accepted, but no state_update running or requires_action for the session "
                f"followed (observed until {how})."), " Too short to judge.")

    def _judge_idle(self, log: ConnLog, rec: PromptRecord) -> None:
        """PROMPT-012: the work ends with an idle."""
        resp, req, idle = rec.resp, rec.req, rec.end_idle
        assert resp is not None
        if idle is not None:
            self.pass_few("PROMPT-012", f"{rec.label()}: the work ended with idle at t={idle.t:.2f}.", [idle, req])
            return
        judge, how = self._no_end(log, rec)
        last = rec.running.t if rec.running is not None else None
        msg = (f"{rec.label()} was accepted (t={resp.t:.2f})"
               + (f", work running since t={last:.2f}," if last is not None else "")
               + f" but no idle state_update for the session followed: the suite waited {how}.")
        busy = self._still_reporting(log, rec)
        if log.cut is not None:
            self.untested("PROMPT-012", msg + f" Not judged: {log.cut_desc()}.", fr([resp, req]))
        elif busy is not None:
            # the rule is for work that ends: work still reporting progress when the connection
            # ended (a long task the suite did not cancel) had not ended, so there was no idle to owe
            self.untested("PROMPT-012", msg + f" The work was still reporting progress (an update at t={busy.t:.2f}, "
                          "just before the connection ended): not judged.", fr([busy, resp, req]))
        elif judge:
            self.failed("PROMPT-012", msg, fr([resp, rec.running, req]))
        else:
            self.untested("PROMPT-012", msg + " Shorter than idle_grace: not judged.", fr([resp, req]))

    def _compare_content(self, rec: PromptRecord, match: list[UserMessage]) -> None:
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

    def _judge_insertion(self, rule: str, rec: PromptRecord, msg: str, frames: list) -> None:
        """A user message inserted around a rejected prompt: FAIL, but only noted while another prompt of
        the session was in flight (the insertion may be that prompt's)."""
        if rec.overlap:
            self.noted(rule, msg + " Another prompt of the session was in flight, so the insertion "
                       "cannot be attributed.", frames)
        else:
            self.failed(rule, msg, frames)

    def _judge_rejected(self, rec: PromptRecord, claimed: set, window: float) -> None:
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
