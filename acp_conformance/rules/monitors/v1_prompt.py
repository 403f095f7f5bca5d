"""ACP v1 prompt turn and its cancellation (https://agentclientprotocol.com/protocol/v1/prompt-turn,
cancellation): the stopReason that ends a turn, no update of a turn after its response, a cancel answered with
``cancelled``, a late cancel that must not end the next turn, and $/cancel_request answered."""

from __future__ import annotations

from ...wire.transcript import RECEIVED, SENT
from ._common import js
from ._v1 import (CONTENT_KINDS, RACE, STOP_REASONS, TURN_OPENERS, V1Monitor, error_of, first_answer, params, result_of,
                  update_of)



class V1PromptMonitor(V1Monitor):
    rules = ("V1-PROMPT-001", "V1-PROMPT-002", "V1-CANCEL-001", "V1-CANCEL-002", "V1-CANCEL-003", "V1-CANCEL-004",
             "V1-PERM-002")

    def finish(self) -> None:
        self.missed: list = []  # (request, response, cancel): cancelled turns that did not end cancelled
        super().finish()
        # one answer that crossed the cancel may be a race; two cannot both be (the scenario cancels two turns)
        for req, ans, cancel in self.missed:
            if len(self.missed) == 1 and ans.t - cancel.t <= RACE:
                self.noted("V1-CANCEL-001", f"the turn ended {js(result_of(ans), 80)} {ans.t - cancel.t:.3f} s after "
                                            "the cancel: its answer may have been on its way", [ans.frame, cancel.frame])
            else:
                self.failed("V1-CANCEL-001", f"the cancelled turn ended with {js(result_of(ans), 120)}, not stopReason "
                                             f"'cancelled' ({ans.t - cancel.t:.3f} s after the cancel)",
                            [ans.frame, cancel.frame])

    def judge(self, conn, msgs) -> None:
        pending: dict = {}  # sessionId -> the prompt request waiting for its answer
        cancels: dict = {}  # id(prompt) -> the first session/cancel sent while it was pending
        stale: dict = {}  # sessionId -> a cancel sent while no prompt of the session was pending
        for m in msgs:
            sid = params(m).get("sessionId")
            if m.direction == SENT and m.kind == "request" and m.method == "session/prompt":
                self._late_cancel(m, stale.pop(sid, None), msgs)
                pending[sid] = m
            elif m.direction == SENT and m.kind == "notification" and m.method == "session/cancel":
                if sid in pending:
                    cancels.setdefault(id(pending[sid]), m)
                else:
                    stale[sid] = m
            elif m.direction == RECEIVED and m.kind == "response" and not m.duplicate and m.method == "session/prompt":
                req = m.request
                psid = params(req).get("sessionId")
                if pending.get(psid) is req:
                    del pending[psid]
                self._answer(req, m, cancels.get(id(req)), msgs)
        for req in pending.values():
            cancel = cancels.get(id(req))
            if cancel is not None:
                self.failed("V1-CANCEL-001", "the cancelled session/prompt was never answered", [cancel.frame, req.frame])
        self._permissions(msgs)
        self._cancel_requests(msgs)

    def _answer(self, req, ans, cancel, msgs) -> None:
        res = result_of(ans)
        if isinstance(res, dict):
            reason = res.get("stopReason")
            if reason in STOP_REASONS:
                self.passed("V1-PROMPT-001", f"session/prompt answered stopReason {reason!r}", [ans.frame])
            else:
                self.failed("V1-PROMPT-001", f"session/prompt answered {js(res, 160)}: stopReason is not one of "
                                             f"{', '.join(STOP_REASONS)}", [ans.frame, req.frame])
        if cancel is not None:
            self._cancelled(req, ans, cancel)
        rule = "V1-PROMPT-002" if cancel is None else "V1-CANCEL-002"
        late = self._late_updates(msgs, ans, params(req).get("sessionId"))
        if late:
            self.failed(rule, f"{len(late)} {late[0][1]} update(s) of the session after the session/prompt response "
                              f"(frame #{ans.frame.seq}){' to the cancelled turn' if cancel else ''}",
                        [late[0][0].frame, ans.frame])
        else:
            self.passed(rule, "no update of the turn followed its session/prompt response", [ans.frame])

    def _cancelled(self, req, ans, cancel) -> None:
        res, err = result_of(ans), error_of(ans)
        if isinstance(res, dict) and res.get("stopReason") == "cancelled":
            self.passed("V1-CANCEL-001", "the cancelled turn ended with stopReason 'cancelled'", [ans.frame, cancel.frame])
        elif err is not None:
            self.failed("V1-CANCEL-001", f"the cancelled session/prompt was answered with an error: {js(err, 160)}",
                        [ans.frame, cancel.frame])
        elif isinstance(res, dict) and res.get("stopReason") in STOP_REASONS:  # another value is V1-PROMPT-001's
            self.missed.append((req, ans, cancel))

    @staticmethod
    def _late_updates(msgs, ans, sid) -> list:
        out = []
        for m in msgs:
            if m.order <= ans.order:
                continue
            if m.direction == SENT and m.method in TURN_OPENERS and params(m).get("sessionId") == sid:
                break
            u = update_of(m)
            if u is not None and u[0] == sid and u[2] in CONTENT_KINDS:
                out.append((m, u[2]))
        return out

    def _late_cancel(self, prompt, cancel, msgs) -> None:
        if cancel is None:
            return
        sid = params(prompt).get("sessionId")
        own = any(m.direction == SENT and m.method == "session/cancel" and params(m).get("sessionId") == sid
                  and m.order > prompt.order and (not prompt.responses or m.order < prompt.responses[0].order)
                  for m in msgs)
        ans = first_answer(prompt)
        if own or ans is None or not isinstance(result_of(ans), dict):
            return
        if result_of(ans).get("stopReason") == "cancelled":
            self.failed("V1-CANCEL-003", "a session/cancel sent after the previous turn ended cancelled the next "
                                         "prompt, which had no cancel of its own", [ans.frame, cancel.frame])
        else:
            self.passed("V1-CANCEL-003", f"the late session/cancel left the next turn alone (stopReason "
                                         f"{result_of(ans).get('stopReason')!r})", [ans.frame, cancel.frame])

    def _cancel_requests(self, msgs) -> None:
        """Each request of the suite named by a $/cancel_request while pending: answered (a result or an error)."""
        sent = {repr(m.id): m for m in msgs if m.direction == SENT and m.kind == "request"}
        for m in msgs:
            if m.direction != SENT or m.method != "$/cancel_request":
                continue
            req = sent.get(repr(params(m).get("requestId")))
            if req is None:
                continue  # no request of ours
            if req.responses and req.responses[0].order < m.order:  # its turn ended first: nothing to cancel
                self.not_exercised("V1-CANCEL-004", f"{req.method} was answered before $/cancel_request named it "
                                                    "(a turn that ended first)", [m.frame, req.responses[0].frame])
                continue
            if req.responses:
                self.passed("V1-CANCEL-004", f"{req.method}, cancelled with $/cancel_request, was answered "
                                             f"{js(req.responses[0].msg.get('result', req.responses[0].msg.get('error')), 80)}",
                            [req.responses[0].frame, m.frame])
            else:
                self.failed("V1-CANCEL-004", f"{req.method}, cancelled with $/cancel_request, was never answered",
                            [m.frame, req.frame])

    def _permissions(self, msgs) -> None:
        for m in msgs:
            if m.direction != RECEIVED or m.kind != "request" or m.method != "session/request_permission":
                continue
            answer = next((r for r in m.responses), None)
            outcome = (result_of(answer) or {}).get("outcome") if isinstance(result_of(answer), dict) else None
            if not (isinstance(outcome, dict) and outcome.get("outcome") == "cancelled"):
                continue
            sid = params(m).get("sessionId")
            prompt = next((p for p in reversed(msgs) if p.direction == SENT and p.method == "session/prompt"
                           and p.kind == "request" and params(p).get("sessionId") == sid and p.order < m.order), None)
            ans = first_answer(prompt) if prompt is not None else None
            if ans is None or ans.order < answer.order or not any(
                    c.direction == SENT and c.method == "session/cancel" and params(c).get("sessionId") == sid
                    and prompt.order < c.order < answer.order for c in msgs):
                continue  # a cancelled outcome the client chose without cancelling the turn: the agent's call
            reason = (result_of(ans) or {}).get("stopReason") if isinstance(result_of(ans), dict) else None
            if reason not in STOP_REASONS and error_of(ans) is None:
                continue  # V1-PROMPT-001's
            if reason == "cancelled":
                self.passed("V1-PERM-002", "the turn whose permission request was answered cancelled ended cancelled",
                            [ans.frame])
            else:
                self.failed("V1-PERM-002", f"the permission request was answered cancelled, yet the turn ended "
                                           f"{js(ans.msg.get('result', ans.msg.get('error')), 120)}", [ans.frame, m.frame])
