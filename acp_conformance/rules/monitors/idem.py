"""session/prompt retries under one idempotency key (RFD "v2 Idempotency Keys").

Prompts of one session that carry the same ``idempotencyKey`` are attempts of one submission (a
*group*). Once an attempt is accepted with messageId M, the agent answers every other attempt with M
(IDEM-001), inserts no second user message for the key (IDEM-002) and does not start the work again
(IDEM-003). The original is the attempt whose success response came first; the others are retries,
whatever order they were sent in (a retry may cross the original on the wire). A retry in a later agent process
(the session resumed after a restart: a response lost, a crash) should not be a new submission (IDEM-005): the
original messageId, or an error saying the agent cannot prove the outcome.

Insertions and work starts are attributed to a group inside its window (those after its first retry
request count against the retry): from its first request until
a short while (``rejection_window``) after the later of its last response and the end of the
original's work, cut at the next prompt of the session that is not part of the group. A prompt of
another submission still unanswered when the group starts makes the window ambiguous: not judged.
Updates while a session/resume is pending are history, never insertions or work. On a later
connection (after a restart) a retry's answer is IDEM-005's: how long an agent keeps its keys is not specified,
so an error is noted, and accepting the retry as a new submission (the message inserted twice under one key,
against the RFD's "at most once for that key") warns, without failing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...wire.transcript import RECEIVED, SENT
from ..monitor import REQUEST, RESPONSE
from ..sessions import NEW
from ._common import USER_KINDS, WORK_STATES, ConnLog, ConnMonitor, Msg, fr, hashable, js, session_update

CANCELLED = -32800  # an attempt the client (or the end of its session) cancelled: not judged


def idempotency_key(m: Msg) -> str | None:
    """The idempotencyKey of a session/prompt request, when it carries one (a non-empty string)."""
    p = m.params
    k = p.get("idempotencyKey") if isinstance(p, dict) else None
    return k if isinstance(k, str) and k else None


@dataclass(eq=False)
class _Group:
    sid: str
    key: str
    reqs: list[Msg] = field(default_factory=list)

    def resp(self, r: Msg) -> Msg | None:
        return next((x for x in r.responses if not x.duplicate), None) if r.responses else None

    def label(self) -> str:
        return f"idempotencyKey {js(self.key)} in session {self.sid!r}"



@dataclass(eq=False)
class _Effects:
    """What a group's window holds, walked over the connection's frames: the new user messages inserted after
    the first retry (IDEM-002) and the starts of work (IDEM-003). Updates while a session/resume is pending
    are history: neither."""
    sid: str
    M: str  # the messageId the submission was accepted as
    first: Msg  # the group's first request
    first_retry: Msg  # only what follows a retry is the retry's doing
    claimed: set  # the messageIds of the other submissions' accepted prompts
    seen: set  # user-message ids seen so far in the session
    resume_pending: int = 0
    active: bool = False
    starts: list[Msg] = field(default_factory=list)
    inserted: list[tuple[Any, Msg]] = field(default_factory=list)
    orig_end: Msg | None = None  # the idle that ended the first work started

    def walk(self, msgs: list[Msg], cut: int | None, last_resp: Msg, window: float) -> None:
        """Follows ``msgs`` up to ``cut`` (the next prompt of another submission), or until ``window`` seconds
        after both the last answer and the original's work are over."""
        end_t: float | None = None
        for m in msgs:
            if cut is not None and m.order >= cut:
                break
            if end_t is not None and m.t > end_t:
                break
            if end_t is None and self.orig_end is not None and m.order > last_resp.order:
                # both the last answer and the original's work are over: a short tail more
                end_t = max(last_resp.t, self.orig_end.t) + window
            self._follow(m)

    def _follow(self, m: Msg) -> None:
        if m.direction == SENT and m.kind == REQUEST and m.method == "session/resume" and m.session_id == self.sid:
            self.resume_pending += 1
            return
        if m.direction == RECEIVED and m.kind == RESPONSE and m.request is not None \
                and m.request.method == "session/resume" and m.request.session_id == self.sid:
            self.resume_pending = max(0, self.resume_pending - 1)
            return
        su = session_update(m)
        if su is None or su[0] != self.sid:
            return
        upd = su[1]
        kind = upd.get("sessionUpdate")
        if kind in USER_KINDS:
            self._user_message(m, upd.get("messageId"))
        elif kind == "state_update":
            self._state(m, upd.get("state"))

    def _user_message(self, m: Msg, mid: Any) -> None:
        if hashable(mid) and mid not in self.seen:
            self.seen.add(mid)
            if m.order > self.first_retry.order and not self.resume_pending and mid != self.M \
                    and mid not in self.claimed:
                self.inserted.append((mid, m))

    def _state(self, m: Msg, state: Any) -> None:
        if state in WORK_STATES:
            if not self.active and m.order >= self.first.order and not self.resume_pending:  # not before the group
                self.starts.append(m)
            self.active = True
        elif state == "idle":
            self.active = False
            if self.starts and self.orig_end is None and not self.resume_pending:
                self.orig_end = m


class PromptRetryMonitor(ConnMonitor):
    rules = ("IDEM-001", "IDEM-002", "IDEM-003", "IDEM-005")

    def __init__(self, ctx):
        super().__init__(ctx)
        self.instance: dict[str, int] = {}  # session id -> how often session/new returned it
        self.seen_users: dict[tuple[str, int], set] = {}  # user-message ids already seen per session
        self.keyed: dict[tuple[tuple[str, int], str], tuple[Any, Msg]] = {}  # (session, key) -> (M, its response)

    def _skey(self, sid: str) -> tuple[str, int]:
        return (sid, self.instance.get(sid, 0))

    @staticmethod
    def _session_capable(log: ConnLog) -> bool:
        """False when the agent's initialize result on this connection does not advertise capabilities.session
        (the rules bind agents that do); True when it does or when no initialize was answered."""
        for m in log.msgs:
            if m.direction == RECEIVED and m.kind == RESPONSE and m.ok and m.request is not None \
                    and m.request.method == "initialize":
                caps = m.result.get("capabilities") if isinstance(m.result, dict) else None
                return isinstance(caps, dict) and isinstance(caps.get("session"), dict)
        return True

    def analyze(self, log: ConnLog) -> None:
        window = float(self.opt("rejection_window", 2.0))
        if not self._session_capable(log):
            return
        model = log.sessions
        groups: dict[tuple[tuple[str, int], str], _Group] = {}
        for t in model.turns:  # the suite's prompts, in order
            key = idempotency_key(t.request)
            if key is not None:
                sid = t.request.session_id
                # the session's instance: a session/new that returns its id again starts a new one
                n = self.instance.get(sid, 0) + sum(1 for e in model.sessions[sid].known(NEW)
                                                    if e.order < t.request.order)
                g = groups.setdefault(((sid, n), key), _Group(sid, key))
                g.reqs.append(t.request)
        for sid, s in model.sessions.items():
            if s.new_count:
                self.instance[sid] = self.instance.get(sid, 0) + s.new_count
        for (skey, key), g in groups.items():
            self._judge(log, skey, g, [t.request for t in model.sessions[g.sid].turns], window)
        # user-message ids of this connection, for the next connection's "new" test
        for m in log.msgs:
            su = session_update(m)
            mid = su[1].get("messageId") if su is not None else None
            if su is not None and su[1].get("sessionUpdate") in USER_KINDS and mid is not None and hashable(mid):
                self.seen_users.setdefault(self._skey(su[0]), set()).add(mid)

    # -- one group ----------------------------------------------------------------------------
    def _judge(self, log: ConnLog, skey: tuple[str, int], g: _Group, prompts: list[Msg], window: float) -> None:
        answered = [(r, g.resp(r)) for r in g.reqs if g.resp(r) is not None]
        accepted = sorted([(r, a) for r, a in answered if a.ok], key=lambda x: x[1].order)
        earlier = self.keyed.get((skey, g.key))  # accepted on an earlier connection
        if earlier is None and not accepted:
            return
        if earlier is not None:
            M, orig_resp = earlier
            orig_req = None
            retries = answered
        else:
            orig_req, orig_resp = accepted[0]
            M = orig_resp.result.get("messageId") if isinstance(orig_resp.result, dict) else None
            if not isinstance(M, str):
                return  # PROMPT-001's business: no messageId to compare with
            self.keyed[(skey, g.key)] = (M, orig_resp)
            retries = [(r, a) for r, a in answered if r is not orig_req]
        if not retries:
            return
        self._judge_answers(g, M, orig_resp, retries, cross=earlier is not None)
        if earlier is not None:  # the original's insertion and work happened on another connection
            self._judge_after_restart(log, skey, g, M, orig_resp, retries, prompts)
            return
        self._judge_effects(log, skey, g, M, orig_req, orig_resp, answered, prompts, window)

    def _judge_answers(self, g: _Group, M: Any, orig_resp: Msg, retries: list[tuple[Msg, Msg]],
                       cross: bool) -> None:
        for r, a in retries:
            label = f"the retry session/prompt id={js(r.id)} ({g.label()})"
            if a.ok:
                mid = a.result.get("messageId") if isinstance(a.result, dict) else None
                if mid == M:
                    self.pass_few("IDEM-001", f"{label} was answered with the original messageId {js(M)}.",
                                  [a, r, orig_resp])
                elif cross:
                    self.noted("IDEM-001", f"{label}, sent after a restart, was answered with messageId {js(mid)}; "
                               f"the submission was accepted on an earlier connection as {js(M)}. How long an "
                               "agent keeps its keys is not specified: not judged.", fr([a, r, orig_resp]))
                else:
                    self.failed("IDEM-001", f"{label} was answered with messageId {js(mid)}, not with the "
                                f"messageId {js(M)} of the submission accepted under that key.",
                                fr([a, r, orig_resp]))
            elif a.error_code != CANCELLED:
                self.noted("IDEM-001", f"{label} was answered with error {js(a.error_code)} although the "
                           f"submission had been accepted as {js(M)}; the RFD answers retries with the original "
                           "messageId, but a refused retry inserts nothing: noted only.", fr([a, r, orig_resp]))

    def _judge_effects(self, log: ConnLog, skey: tuple[str, int], g: _Group, M: str, orig_req: Msg,
                       orig_resp: Msg, answered: list[tuple[Msg, Msg]], prompts: list[Msg], window: float) -> None:
        """IDEM-002/003: the retries inserted no second user message and started no second work."""
        first = min(g.reqs, key=lambda r: r.order)
        members = {id(r) for r in g.reqs}
        others = [p for p in prompts if id(p) not in members]
        if self._ambiguous_window(g, first, others):
            return
        cut = min((p.order for p in others if p.order > first.order), default=None)
        claimed = {a.result.get("messageId") for p in others for a in [g.resp(p)]
                   if a is not None and a.ok and isinstance(a.result, dict)}
        first_retry = min((r for r in g.reqs if r is not orig_req), key=lambda r: r.order)
        fx = _Effects(g.sid, M, first, first_retry, claimed, set(self.seen_users.get(skey, set())))
        fx.walk(log.msgs, cut, max((a for _, a in answered), key=lambda a: a.order), window)
        retry_frames = [r for r, _ in answered if r is not orig_req]
        self._judge_one_insertion(g, M, fx, retry_frames, orig_resp)
        self._judge_one_start(g, fx, retry_frames)

    def _ambiguous_window(self, g: _Group, first: Msg, others: list[Msg]) -> bool:
        """Another submission still unanswered when the group starts: its insertion and work could be anywhere
        in the window, so IDEM-002/003 are not judged."""
        for p in others:
            pr = g.resp(p)
            if p.order < first.order and (pr is None or pr.order > first.order):
                for rule in ("IDEM-002", "IDEM-003"):
                    self.untested(rule, f"{g.label()}: the prompt id={js(p.id)} of another submission was still "
                                  "unanswered when the first attempt was sent, so insertions and work cannot be "
                                  "attributed.", fr([first, p]))
                return True
        return False

    def _judge_one_insertion(self, g: _Group, M: str, fx: _Effects, retry_frames: list[Msg], orig_resp: Msg) -> None:
        """IDEM-002: no new user message after a retry."""
        if fx.inserted:
            mid, m = fx.inserted[0]
            self.failed("IDEM-002", f"{g.label()}: the submission was inserted as {js(M)}, yet after "
                        f"{len(g.reqs)} attempts under the key another new user message {js(mid)} appeared for "
                        f"the session at t={m.t:.2f}.", fr([m, *retry_frames, orig_resp]))
        else:
            self.pass_few("IDEM-002", f"{g.label()}: {len(g.reqs)} attempts, one user message ({js(M)}).",
                          [*retry_frames, orig_resp])

    def _judge_one_start(self, g: _Group, fx: _Effects, retry_frames: list[Msg]) -> None:
        """IDEM-003: no work started again after a retry."""
        starts, orig_end = fx.starts, fx.orig_end
        again = [x for x in starts[1:] if x.order > fx.first_retry.order]
        if again:
            s = again[0]
            self.failed("IDEM-003", f"{g.label()}: the work of the submission started at t={starts[0].t:.2f}"
                        + (f" and ended at t={orig_end.t:.2f}" if orig_end is not None else "")
                        + f"; after a retry under the same key it started again at t={s.t:.2f}, with no other "
                        "prompt of the session in flight.", fr([s, *retry_frames, starts[0], orig_end]))
        elif starts:
            self.pass_few("IDEM-003", f"{g.label()}: {len(g.reqs)} attempts, the work started once "
                          f"(t={starts[0].t:.2f}).", [starts[0], *retry_frames])

    def _judge_after_restart(self, log: ConnLog, skey: tuple[str, int], g: _Group, M: Any, orig_resp: Msg,
                             retries: list[tuple[Msg, Msg]], prompts: list[Msg]) -> None:
        """IDEM-005: a retry in a new agent process is answered with the original messageId or refused; it never
        becomes a new submission (a new messageId, or a new user message for the session after it)."""
        members = {id(r) for r in g.reqs}
        seen = set(self.seen_users.get(skey, set())) | {M}
        for r, a in retries:
            label = (f"the retry session/prompt id={js(r.id)} ({g.label()}), sent in a new agent process after the "
                     f"submission was accepted as {js(M)}")
            cut = min((p.order for p in prompts if id(p) not in members and p.order > r.order), default=None)
            new_user = None
            for m in log.msgs:
                su = session_update(m)
                if su is None or su[0] != g.sid or su[1].get("sessionUpdate") not in USER_KINDS:
                    continue
                mid = su[1].get("messageId")
                if m.order < r.order:
                    if hashable(mid):
                        seen.add(mid)  # the replay of the resume, history
                elif (cut is None or m.order < cut) and hashable(mid) and mid not in seen:
                    new_user = (mid, m)
                    break
            got = a.result.get("messageId") if a.ok and isinstance(a.result, dict) else None
            if a.ok and got != M:
                self.warned("IDEM-005", f"{label}, was accepted as a new submission with messageId {js(got)}: the "
                            "user message is inserted twice under one key.", fr([a, r, orig_resp]))
            elif new_user is not None:
                self.warned("IDEM-005", f"{label}, was followed by a new user message {js(new_user[0])} for the "
                            f"session at t={new_user[1].t:.2f}: inserted a second time under one key.",
                            fr([new_user[1], r, a, orig_resp]))
            elif a.ok:
                self.pass_few("IDEM-005", f"{label}, was answered with the original messageId and inserted "
                              "nothing.", [a, r, orig_resp])
            elif a.error_code != CANCELLED:
                self.noted("IDEM-005", f"{label}, was refused with error {js(a.error_code)}: the agent did not "
                           "keep the key and said so (the draft's operation_outcome_unknown), inserting nothing "
                           "twice.", fr([a, r, orig_resp]))
