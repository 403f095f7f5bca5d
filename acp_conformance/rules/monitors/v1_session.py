"""ACP v1 session setup, modes, config options, listing and authentication
(https://agentclientprotocol.com/protocol/v1/session-setup, session-modes, session-config-options, session-list,
authentication): what the agent answers to the requests that make and set up sessions."""

from __future__ import annotations

from ...wire.transcript import SENT
from ._common import js
from ._v1 import (MESSAGE_KINDS, RACE, TURN_OPENERS, V1Monitor, agent_init, error_of, first_answer, params,
                  requests, result_of, update_of)


class V1SessionMonitor(V1Monitor):
    rules = ("V1-SESSION-001", "V1-SESSION-002", "V1-SESSION-003", "V1-SESSION-006", "V1-SESSION-007", "V1-MODE-001",
             "V1-CONFIG-001", "V1-CONFIG-002", "V1-LIST-001", "V1-AUTH-001", "V1-AUTH-002")

    def finish(self) -> None:
        self.ids: set[str] = set()
        # sessions with a turn answered with a result (any connection of the test): their load has history to replay
        self.history = {params(r).get("sessionId") for msgs in self.conns.values()
                        for r in requests(msgs, "session/prompt") if isinstance(result_of(first_answer(r)), dict)}
        super().finish()

    def judge(self, conn, msgs) -> None:
        for req in requests(msgs, "session/new"):
            self._new(req, first_answer(req), msgs)
        for req in requests(msgs, "session/load"):
            self._load(req, first_answer(req), msgs)
        for req in requests(msgs, "session/resume"):
            self._resume(req, first_answer(req), msgs)
        for req in requests(msgs, "session/close"):
            self._close(req, msgs)
        for req in requests(msgs, "session/set_mode"):
            self._set_mode(req, first_answer(req), msgs)
        for req in requests(msgs, "session/set_config_option"):
            res = result_of(first_answer(req))
            if isinstance(res, dict):
                opts = res.get("configOptions")
                if isinstance(opts, list):
                    self.passed("V1-CONFIG-002", f"answered with {len(opts)} config option(s)", [first_answer(req).frame])
                    self._config(opts, first_answer(req))
                else:
                    self.failed("V1-CONFIG-002", f"session/set_config_option answered {js(res, 160)}, without the "
                                                 "configOptions list", [first_answer(req).frame, req.frame])
        for req in requests(msgs, "session/list"):
            res = result_of(first_answer(req))
            if isinstance(res, dict):
                ok = isinstance(res.get("sessions"), list)
                (self.passed if ok else self.failed)("V1-LIST-001", f"session/list answered {js(res, 160)}",
                                                     [first_answer(req).frame])
        self._auth(msgs)

    def _new(self, req, ans, msgs) -> None:
        res = result_of(ans)
        if not isinstance(res, dict):
            return
        sid = res.get("sessionId")
        if not isinstance(sid, str) or sid in self.ids:
            why = "no string sessionId" if not isinstance(sid, str) else f"the sessionId {sid!r} of an earlier session"
            self.failed("V1-SESSION-001", f"session/new answered with {why}: {js(res, 160)}", [ans.frame, req.frame])
        else:
            self.ids.add(sid)
            self.passed("V1-SESSION-001", f"session/new answered sessionId {sid!r}", [ans.frame])
        self._modes(res, ans)
        if isinstance(res.get("configOptions"), list):
            self._config(res["configOptions"], ans)

    def _load(self, req, ans, msgs) -> None:
        sid = params(req).get("sessionId")
        if ans is None or not isinstance(result_of(ans), dict) or sid not in self.history:
            if ans is not None and error_of(ans) is not None and sid in self.history:
                self.not_exercised("V1-SESSION-002", f"session/load of {sid!r} was refused ({js(error_of(ans), 120)}): "
                                                     "the agent did not keep the session for this load", [ans.frame])
            return
        before = [m for m in msgs if req.order < m.order < ans.order and self._message(m, sid)]
        nxt = next((m.order for m in msgs if m.order > ans.order and m.direction == SENT
                    and m.method in TURN_OPENERS and params(m).get("sessionId") == sid), None)
        after = [m for m in msgs if m.order > ans.order and (nxt is None or m.order < nxt) and self._message(m, sid)]
        if before:
            self.passed("V1-SESSION-002", f"session/load of {sid!r} replayed {len(before)} message update(s) "
                                          "before its response", [before[0].frame, ans.frame])
        else:
            self.failed("V1-SESSION-002", f"session/load of {sid!r}, a session with a past turn, was answered with no "
                                          "replayed message before the response", [ans.frame, req.frame])
        if after:
            self.failed("V1-SESSION-003", f"a replayed message of {sid!r} arrived after the session/load response",
                        [after[0].frame, ans.frame])
        else:
            self.passed("V1-SESSION-003", f"no replayed message of {sid!r} followed the session/load response",
                        [ans.frame])
        self._modes(result_of(ans), ans)

    def _resume(self, req, ans, msgs) -> None:
        sid = params(req).get("sessionId")
        if ans is None or not isinstance(result_of(ans), dict) or sid not in self.history:
            return
        replayed = [m for m in msgs if req.order < m.order < ans.order and self._message(m, sid)]
        if replayed:
            self.failed("V1-SESSION-006", f"session/resume of {sid!r} replayed {len(replayed)} message update(s) "
                                          "before its response", [replayed[0].frame, ans.frame])
        else:
            self.passed("V1-SESSION-006", f"session/resume of {sid!r} answered without replaying its history",
                        [ans.frame])

    def _close(self, req, msgs) -> None:
        """A session/close sent while a prompt of the session waited for its answer: that turn ends cancelled."""
        sid = params(req).get("sessionId")
        prompt = next((p for p in reversed(msgs) if p.order < req.order and p.direction == SENT and p.kind == "request"
                       and p.method == "session/prompt" and params(p).get("sessionId") == sid), None)
        if prompt is None or (prompt.responses and prompt.responses[0].order < req.order):
            return  # no turn running when the close was sent
        ans = first_answer(prompt)
        if ans is None:
            self.failed("V1-SESSION-007", "the prompt running when its session was closed was never answered",
                        [req.frame, prompt.frame])
            return
        res = result_of(ans)
        reason = res.get("stopReason") if isinstance(res, dict) else None
        if reason == "cancelled" or error_of(ans) is not None:
            self.passed("V1-SESSION-007", f"the turn running at session/close ended "
                                          f"{js(ans.msg.get('result', ans.msg.get('error')), 80)}", [ans.frame])
        elif ans.t - req.t <= RACE:
            self.noted("V1-SESSION-007", f"the turn ended {js(res, 60)} {ans.t - req.t:.3f} s after the close: its "
                                         "answer may have been on its way", [ans.frame, req.frame])
        else:
            self.failed("V1-SESSION-007", f"the turn running at session/close went on and ended {js(res, 80)}, "
                                          "not cancelled", [ans.frame, req.frame])

    @staticmethod
    def _message(m, sid) -> bool:
        u = update_of(m)
        return u is not None and u[0] == sid and u[2] in MESSAGE_KINDS

    def _modes(self, res, ans) -> None:
        modes = res.get("modes")
        if not isinstance(modes, dict):
            return
        ids = [m.get("id") for m in modes.get("availableModes") or [] if isinstance(m, dict)]
        if modes.get("currentModeId") in ids:
            self.passed("V1-MODE-001", f"currentModeId {modes['currentModeId']!r} is one of {ids}", [ans.frame])
        else:
            self.failed("V1-MODE-001", f"currentModeId {js(modes.get('currentModeId'), 40)} is none of the "
                                       f"availableModes {js(ids, 120)}", [ans.frame])

    def _set_mode(self, req, ans, msgs) -> None:
        sid, mode = params(req).get("sessionId"), params(req).get("modeId")
        offered = set()
        for r in requests(msgs, "session/new"):
            res = result_of(first_answer(r))
            if isinstance(res, dict) and res.get("sessionId") == sid and isinstance(res.get("modes"), dict):
                offered |= {m.get("id") for m in res["modes"].get("availableModes") or [] if isinstance(m, dict)}
        if ans is None or mode not in offered:
            return
        if error_of(ans) is not None:
            self.failed("V1-MODE-001", f"session/set_mode to the available mode {mode!r} was refused: "
                                       f"{js(error_of(ans), 120)}", [ans.frame, req.frame])
        else:
            self.passed("V1-MODE-001", f"session/set_mode to {mode!r} succeeded", [ans.frame])

    def _config(self, opts, ans) -> None:
        bad = [o.get("id") for o in opts if isinstance(o, dict) and "currentValue" not in o]
        if bad:
            self.failed("V1-CONFIG-001", f"config option(s) {js(bad, 120)} without a currentValue", [ans.frame])
        elif opts:
            self.passed("V1-CONFIG-001", f"every one of {len(opts)} config option(s) has a currentValue", [ans.frame])

    def _auth(self, msgs) -> None:
        methods = agent_init(msgs).get("authMethods")
        ids = {m.get("id") for m in methods if isinstance(m, dict)} if isinstance(methods, list) else set()
        authed = False
        for m in msgs:
            if m.direction != SENT or m.kind != "request":
                continue
            ans = first_answer(m)
            if m.method == "authenticate":
                if params(m).get("methodId") not in ids and ans is not None:
                    ok = error_of(ans) is not None
                    (self.passed if ok else self.failed)(
                        "V1-AUTH-002", f"authenticate with the unadvertised methodId {params(m).get('methodId')!r} was "
                                       f"answered {js(ans.msg.get('error', ans.msg.get('result')), 120)}", [ans.frame])
                authed = authed or isinstance(result_of(ans), dict)
            elif m.method == "session/new" and ids and not authed and isinstance(error_of(ans), dict):
                code = error_of(ans).get("code")
                if code == -32000:
                    self.passed("V1-AUTH-001", "session/new before authenticate was refused auth_required (-32000)",
                                [ans.frame])
                elif code == -32603 or "auth" in str(error_of(ans).get("message", "")).lower():
                    self.failed("V1-AUTH-001", f"session/new before authenticate was refused {js(error_of(ans), 160)}, "
                                               "not auth_required (-32000)", [ans.frame, m.frame])
