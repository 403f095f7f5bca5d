"""Elicitation from the agent (ELICIT-*): elicitation/create, its answers, elicitation/complete.

Per connection, the modes the client advertised are read from the suite's initialize request
(``capabilities.elicitation.form`` / ``.url``: a non-null object each). Every elicitation/create
the agent sends is checked against them and for its shape and scope (the sessions active and
the suite's requests still unanswered when it was sent); URL-mode ids are tracked while
outstanding (until a non-accept answer, an error answer, ``$/cancel_request`` from the agent or
``elicitation/complete``). How the agent goes on after a non-accept answer, whether it reports
``requires_action`` while waiting and whether it withdraws a pending elicitation after
session/cancel are judged with the whole connection known.

Scenarios that send the elicitation prompts set the option ``elicit_probe: true``: there, a turn
that ends without an elicitation while no mode was advertised is a pass of ELICIT-001, and an
agent that never elicits although a mode was advertised gets SKIP findings for the rules that
only apply when it does.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ...wire.transcript import EV_EXIT, RECEIVED, SENT
from ..findings import SKIP
from ..monitor import NOTIFICATION, REQUEST, RESPONSE
from ._common import ConnLog, ConnMonitor, Msg, fr, id_key, js, secs, session_update
from .tool import active_sessions

SECRET = re.compile(r"pass(word|wd|phrase)|api.?key|token|secret|credential|private.?key|\bpin\b|cvv|card.?number",
                    re.I)
SECRET_PARAMS = re.compile(r"^(token|access_token|password|passwd|key|api_?key|secret)$", re.I)
# names that can only mean a secret: asking for them in a form fails; other matches of SECRET only warn
SECRET_NAMES = {"password", "passwd", "passphrase", "apikey", "apitoken", "accesstoken", "authtoken", "token",
                "secret", "clientsecret", "privatekey", "credentials", "credential"}
LOOPBACK = ("localhost", "127.0.0.1", "::1")


def _norm(name: str) -> str:
    return re.sub(r"[^a-z]", "", name.lower())


def advertised_modes(log: ConnLog) -> set[str] | None:
    """Modes in the suite's first initialize request on the connection (None: no initialize)."""
    for m in log.msgs:
        if m.direction == SENT and m.kind == REQUEST and m.method == "initialize":
            p = m.params if isinstance(m.params, dict) else {}
            caps = p.get("capabilities") if isinstance(p.get("capabilities"), dict) else {}
            el = caps.get("elicitation")
            if not isinstance(el, dict):
                return set()
            return {k for k in ("form", "url") if isinstance(el.get(k), dict)}
    return None


def answer_of(m: Msg) -> Msg | None:
    answers = [r for r in m.responses if r.direction == SENT]
    return answers[0] if answers else None


def action_of(resp: Msg) -> str:
    """accept, or how it was not accepted (decline, cancel, an unknown action, error)."""
    if not resp.ok:
        return "error"
    a = resp.result.get("action") if isinstance(resp.result, dict) else None
    return a if isinstance(a, str) else "unknown"


class ElicitMonitor(ConnMonitor):
    rules = ("ELICIT-001", "ELICIT-002", "ELICIT-003", "ELICIT-004", "ELICIT-005", "ELICIT-006", "ELICIT-007")

    def skip(self, rule: str, message: str, frames: list = ()) -> None:
        self.ctx.report(rule, SKIP, message, self.expected.get(rule, ""), fr(frames))

    def analyze(self, log: ConnLog) -> None:
        modes = advertised_modes(log)
        if modes is None:
            return
        probe = bool(self.opt("elicit_probe", False))
        window = float(self.opt("elicit_window", 30.0))
        creates = [m for m in log.msgs if m.direction == RECEIVED and m.kind == REQUEST
                   and m.method == "elicitation/create"]
        url_ids: dict[str, Msg] = {}  # every URL elicitation id sent so far
        outstanding: dict[str, Msg] = {}
        for m in log.msgs:
            if m.direction == RECEIVED and m.method == "elicitation/complete" and m.kind in (REQUEST, NOTIFICATION):
                self._complete(m, url_ids, outstanding)
                continue
            if m.direction == RECEIVED and m.kind == NOTIFICATION and m.method == "$/cancel_request":
                rid = m.params.get("requestId") if isinstance(m.params, dict) else None
                for eid, c in list(outstanding.items()):
                    if id_key(c.id) == id_key(rid):
                        del outstanding[eid]
                continue
            if m.direction == SENT and m.kind == RESPONSE and m.request is not None \
                    and m.request.method == "elicitation/create" and action_of(m) != "accept":
                for eid, c in list(outstanding.items()):
                    if c is m.request:
                        del outstanding[eid]
                continue
            if m not in creates:
                continue
            p = m.params if isinstance(m.params, dict) else {}
            mode = p.get("mode")
            self._modes(m, mode, modes)
            self._shape(log, m, p, mode)
            self._secrets(m, p, mode)
            if mode == "url" and isinstance(p.get("elicitationId"), str):
                eid = p["elicitationId"]
                if eid in outstanding:
                    self.failed("ELICIT-003", f"URL elicitation id={js(m.id)} (t={m.t:.2f}) reuses elicitationId "
                                f"{eid!r} of the still outstanding elicitation id={js(outstanding[eid].id)}.",
                                fr([m, outstanding[eid]]))
                else:
                    self.pass_few("ELICIT-003", f"URL elicitation id={js(m.id)} has elicitationId {eid!r}, unique "
                                  f"among the {len(outstanding)} other outstanding one(s).", [m])
                outstanding[eid] = m
                url_ids[eid] = m
        for m in creates:
            self._after_answer(log, m, window)
            self._requires_action(log, m)
        if probe:
            self._probe(log, modes, creates)

    # -- per request ------------------------------------------------------------------------------
    def _modes(self, m: Msg, mode: Any, modes: set[str]) -> None:
        adv = ", ".join(sorted(modes)) or "no mode"
        if isinstance(mode, str) and mode in modes:
            self.pass_few("ELICIT-001", f"elicitation/create id={js(m.id)} uses mode {mode!r}, which the client "
                          "advertised.", [m], key=mode)
        elif not modes or mode in ("form", "url"):
            self.failed("ELICIT-001", f"elicitation/create id={js(m.id)} (t={m.t:.2f}) uses mode {js(mode)} but the "
                        f"client advertised {adv} in initialize.", fr([m]))

    def _shape(self, log: ConnLog, m: Msg, p: dict, mode: Any) -> None:
        problems = []
        if not (mode in ("form", "url") or (isinstance(mode, str) and mode.startswith("_"))):
            problems.append(f"mode {js(mode)}")
        if not isinstance(p.get("message"), str):
            problems.append("no string message")
        has_sid, has_rid = "sessionId" in p, "requestId" in p
        if has_sid == has_rid:
            problems.append("both sessionId and requestId" if has_sid else "neither sessionId nor requestId")
        elif has_sid and p["sessionId"] not in active_sessions(log, m):
            problems.append(f"sessionId {js(p['sessionId'])} is not an active session of this connection")
        elif has_rid and not self._pending_request(log, m, p["requestId"]):
            problems.append(f"requestId {js(p['requestId'])} is not a request of the client still pending")
        if mode == "form":
            rs = p.get("requestedSchema")
            if not (isinstance(rs, dict) and rs.get("type") == "object" and isinstance(rs.get("properties"), dict)):
                problems.append(f"requestedSchema {js(rs, 80)} is not {{type: object, properties: {{...}}}}")
        elif mode == "url":
            if not isinstance(p.get("elicitationId"), str) or not p.get("elicitationId"):
                problems.append(f"elicitationId {js(p.get('elicitationId'))}")
            u = p.get("url")
            if not isinstance(u, str) or not urlsplit(u).scheme:
                problems.append(f"url {js(u, 80)} is not a URI")
        if problems:
            self.failed("ELICIT-002", f"elicitation/create id={js(m.id)} (t={m.t:.2f}): {'; '.join(problems)}.",
                        fr([m]))
        else:
            scope = f"session {p['sessionId']!r}" if has_sid else f"pending request {js(p['requestId'])}"
            self.pass_few("ELICIT-002", f"elicitation/create id={js(m.id)} ({mode}) is well-formed, scoped to "
                          f"{scope}.", [m], key=mode)

    @staticmethod
    def _pending_request(log: ConnLog, m: Msg, rid: Any) -> bool:
        for x in log.msgs:
            if x.order >= m.order:
                break
            if x.direction == SENT and x.kind == REQUEST and id_key(x.id) == id_key(rid):
                if not any(r.order < m.order for r in x.responses):
                    return True
        return False

    def _secrets(self, m: Msg, p: dict, mode: Any) -> None:
        if mode == "form":
            rs = p.get("requestedSchema")
            props = rs.get("properties") if isinstance(rs, dict) else None
            if not isinstance(props, dict):
                return
            bad = [name for name, v in props.items()
                   if SECRET.search(name) or (isinstance(v, dict) and SECRET.search(str(v.get("title") or "")))]
            sure = [name for name, v in props.items() if _norm(name) in SECRET_NAMES
                    or (isinstance(v, dict) and v.get("format") == "password")]
            if sure:
                self.failed("ELICIT-007", f"form elicitation id={js(m.id)} (t={m.t:.2f}) asks for "
                            f"{', '.join(map(repr, sure))}: a secret or credential.", fr([m]))
            elif bad:
                self.warned("ELICIT-007", f"form elicitation id={js(m.id)} (t={m.t:.2f}) asks for "
                            f"{', '.join(map(repr, bad))}, which looks like a secret or credential.", fr([m]))
            else:
                self.pass_few("ELICIT-007", f"form elicitation id={js(m.id)} asks for {', '.join(map(repr, props))}: "
                              "nothing secret-like.", [m], key="form")
        elif mode == "url" and isinstance(p.get("url"), str):
            u = urlsplit(p["url"])
            issues = []
            if u.scheme != "https" and (u.hostname or "") not in LOOPBACK:
                issues.append(f"scheme {u.scheme!r} (not https)")
            if u.username or u.password:
                self.failed("ELICIT-007", f"URL elicitation id={js(m.id)} (t={m.t:.2f}) has credentials in its url "
                            f"{js(p['url'], 120)}.", fr([m]))
                return
            names = [k for k, _ in parse_qsl(u.query) if SECRET_PARAMS.match(k)]
            if names:
                issues.append(f"query parameter(s) {', '.join(names)}")
            if issues:
                self.warned("ELICIT-007", f"URL elicitation id={js(m.id)} (t={m.t:.2f}) has url {js(p['url'], 120)}: "
                            f"{'; '.join(issues)}.", fr([m]))
            else:
                self.pass_few("ELICIT-007", f"URL elicitation id={js(m.id)} uses {js(p['url'], 120)}: https, no "
                              "credentials.", [m], key="url")

    def _complete(self, m: Msg, url_ids: dict[str, Msg], outstanding: dict[str, Msg]) -> None:
        p = m.params if isinstance(m.params, dict) else {}
        eid = p.get("elicitationId")
        if m.kind == REQUEST:
            self.failed("ELICIT-005", f"elicitation/complete at t={m.t:.2f} was sent as a request (id={js(m.id)}), "
                        "not a notification.", fr([m]))
        elif not isinstance(eid, str) or eid not in url_ids:
            self.failed("ELICIT-005", f"elicitation/complete at t={m.t:.2f} names elicitationId {js(eid)}, which no "
                        f"URL elicitation on this connection used (sent: {js(sorted(url_ids), 120)}).", fr([m]))
        else:
            self.pass_few("ELICIT-005", f"elicitation/complete (a notification) names {eid!r}, the id of URL "
                          f"elicitation id={js(url_ids[eid].id)}.", [m, url_ids[eid]])
        if isinstance(eid, str):
            outstanding.pop(eid, None)

    def _after_answer(self, log: ConnLog, m: Msg, window: float) -> None:
        resp = answer_of(m)
        if resp is None:
            return
        how = action_of(resp)
        if how == "accept":
            return
        p = m.params if isinstance(m.params, dict) else {}
        label = f"elicitation/create id={js(m.id)} answered {js(resp.msg.get('result', resp.msg.get('error')), 100)}"
        sid, rid = p.get("sessionId"), p.get("requestId")
        eid = p.get("elicitationId") if p.get("mode") == "url" else None
        done = next((x for x in log.msgs if eid is not None and x.order > resp.order and x.direction == RECEIVED
                     and x.method == "elicitation/complete" and isinstance(x.params, dict)
                     and x.params.get("elicitationId") == eid), None)
        if done is not None:
            self.failed("ELICIT-004", f"{label} (t={resp.t:.2f}), yet the agent sent elicitation/complete for "
                        f"{eid!r} at t={done.t:.2f}, as if the user had gone through the URL.", fr([done, resp, m]))
            return
        end = None
        for x in log.msgs:
            if x.order <= resp.order:
                continue
            su = session_update(x)
            if isinstance(sid, str) and su is not None and su[0] == sid and su[1].get("sessionUpdate") == "state_update" \
                    and su[1].get("state") == "idle":
                end = x
                break
            if rid is not None and x.direction == RECEIVED and x.kind == RESPONSE and x.request is not None \
                    and id_key(x.request.id) == id_key(rid):
                end = x
                break
        if end is not None:
            what = (f"the turn ended ({js(end.msg['params']['update'].get('stopReason'))})" if sid is not None
                    else "the scoped request was answered")
            self.pass_few("ELICIT-004", f"{label} (t={resp.t:.2f}); {what} at t={end.t:.2f}.", [resp, m, end], key=how)
        elif log.end is not None and log.end.event == EV_EXIT and not log.suite_closed:
            self.failed("ELICIT-004", f"{label} (t={resp.t:.2f}); then {log.end_desc} before the turn ended.",
                        fr([log.end, resp, m]))
        elif log.waited(resp.t) >= window:
            self.failed("ELICIT-004", f"{label} (t={resp.t:.2f}); the turn had not ended {secs(log.waited(resp.t))} "
                        "later.", fr([resp, m]))
        else:
            self.untested("ELICIT-004", f"{label}; {log.end_desc} before the turn ended, so the fallback was not "
                          "seen.", fr([resp, m]))

    def _requires_action(self, log: ConnLog, m: Msg) -> None:
        p = m.params if isinstance(m.params, dict) else {}
        sid = p.get("sessionId")
        if not isinstance(sid, str) or sid not in active_sessions(log, m):
            return
        states = [(x, su[1].get("state")) for x in log.msgs if (su := session_update(x)) and su[0] == sid
                  and su[1].get("sessionUpdate") == "state_update"]
        before = [s for x, s in states if x.order < m.order]
        after = [(x, s) for x, s in states if x.order > m.order]
        label = f"session-scoped elicitation/create id={js(m.id)} (t={m.t:.2f})"
        if (before and before[-1] == "requires_action") or (after and after[0][1] == "requires_action"):
            self.pass_few("ELICIT-006", f"{label}: session {sid!r} reported requires_action while it was pending.",
                          [m] + [x for x, _ in after[:1]], key="state")
        elif after or answer_of(m) is not None:
            self.warned("ELICIT-006", f"{label}: session {sid!r} did not report requires_action while it waited "
                        f"(next state: {js(after[0][1]) if after else 'none'}).", fr([m] + [x for x, _ in after[:1]]))
        resp = answer_of(m)
        cancels = [x for x in log.msgs if x.order > m.order and x.direction == SENT and x.method == "session/cancel"
                   and x.session_id == sid and (resp is None or x.order < resp.order)]
        if not cancels:
            return
        c = cancels[0]
        withdrawn = [x for x in log.msgs if x.order > c.order and x.direction == RECEIVED and x.kind == NOTIFICATION
                     and x.method == "$/cancel_request" and isinstance(x.params, dict)
                     and id_key(x.params.get("requestId")) == id_key(m.id)]
        idle = next((x for x, s in after if x.order > c.order and s == "idle"), None)
        if withdrawn:
            self.pass_few("ELICIT-006", f"after session/cancel (t={c.t:.2f}) the agent withdrew {label} with "
                          f"$/cancel_request at t={withdrawn[0].t:.2f}.", [withdrawn[0], c, m], key="cancel")
        elif idle is not None or resp is not None:
            self.warned("ELICIT-006", f"after session/cancel (t={c.t:.2f}) {label} was not withdrawn with "
                        "$/cancel_request" + (f" before the session went idle (t={idle.t:.2f})." if idle else "."),
                        fr([m, c, idle]))

    # -- the probe scenarios ------------------------------------------------------------------
    def _probe(self, log: ConnLog, modes: set[str], creates: list[Msg]) -> None:
        if not modes:
            if creates:
                return  # judged above
            idles = [x for x in log.msgs if (su := session_update(x)) and su[1].get("sessionUpdate") == "state_update"
                     and su[1].get("state") == "idle"]
            prompts = [x for x in log.msgs if x.direction == SENT and x.method == "session/prompt"]
            if idles and prompts:
                self.pass_few("ELICIT-001", f"with no elicitation mode advertised, {len(prompts)} elicitation "
                              f"prompt(s) ran to idle (t={idles[-1].t:.2f}) without elicitation/create.",
                              [idles[-1], prompts[0]], key="none")
            return
        used = {(c.params or {}).get("mode") for c in creates if isinstance(c.params, dict)}
        adv = " and ".join(sorted(modes))
        if not creates:
            for r in ("ELICIT-002", "ELICIT-004", "ELICIT-006", "ELICIT-007"):
                self.skip(r, f"the client advertised elicitation {adv} but the agent did not elicit "
                          "(--acp-elicit-prompt exercises it).")
        if "url" in modes and "url" not in used:
            for r in ("ELICIT-003", "ELICIT-005"):
                self.skip(r, "the client advertised URL-mode elicitation but the agent sent none "
                          "(--acp-elicit-url-prompt exercises it).")
