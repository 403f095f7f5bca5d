"""session/request_permission: the request's shape, and what the agent does after a non-approval.

How the suite answered is read from its own response frame: ``cancelled`` (PERM-002), a
``selected`` optionId that was not offered (PERM-003), an outcome the spec does not define
(PERM-004) or a JSON-RPC error (PERM-005). After such an answer the subject tool call must not
reach in_progress or completed (failed/cancelled are fine); a command subject must not show up
as a terminal running that command. The judgement needs the turn to end (an idle update for the
session) so that "never proceeded" was observed.
"""

from __future__ import annotations

from typing import Any

from ...wire.transcript import EV_EXIT, RECEIVED, SENT
from ..monitor import REQUEST, RESPONSE
from ._common import ConnLog, ConnMonitor, Msg, fr, is_abs_path, js, session_updates_after
from .tool import TOOL_KINDS, TOOL_STATUSES, active_sessions, known_value

OPTION_KINDS = ("allow_once", "allow_always", "reject_once", "reject_always")
PROCEEDED = ("in_progress", "completed")
_BY_ANSWER = {"cancelled": "PERM-002", "not_offered": "PERM-003", "unknown": "PERM-004", "error": "PERM-005"}


class PermissionMonitor(ConnMonitor):
    rules = ("PERM-001", "PERM-002", "PERM-003", "PERM-004", "PERM-005", "PERM-006")

    def analyze(self, log: ConnLog) -> None:
        pending_ids: dict[Any, Msg] = {}
        for m in log.msgs:
            if m.direction == SENT and m.kind == RESPONSE and m.request is not None \
                    and m.request.method == "session/request_permission":
                pending_ids.pop(repr(m.id), None)
            if m.direction != RECEIVED or m.kind != REQUEST or m.method != "session/request_permission":
                continue
            problems = self._shape(log, m)
            if m.id is None:
                problems.insert(0, "its id is null")
            elif repr(m.id) in pending_ids:
                problems.insert(0, f"its id {js(m.id)} is still pending for an earlier permission request")
            else:
                pending_ids[repr(m.id)] = m
            if problems:
                self.failed("PERM-001", f"session/request_permission id={js(m.id)} at t={m.t:.2f}: "
                            + "; ".join(problems) + ".", fr([m]))
            else:
                self.pass_few("PERM-001", f"session/request_permission id={js(m.id)} is well formed "
                              f"({len(m.params['options'])} options).", [m])
            self._subject(m)
            self._after_answer(log, m)

    def _shape(self, log: ConnLog, m: Msg) -> list[str]:
        p = m.params
        if not isinstance(p, dict):
            return ["params is not an object"]
        out = []
        sid = p.get("sessionId")
        if not isinstance(sid, str) or sid not in active_sessions(log, m):
            out.append(f"sessionId {js(sid)} is not a session active on this connection")
        if not isinstance(p.get("title"), str):
            out.append(f"title {js(p.get('title'))} is not a string")
        if p.get("description") is not None and not isinstance(p.get("description"), str):
            out.append("description is neither a string nor null")
        opts = p.get("options")
        if not isinstance(opts, list) or not opts:
            out.append(f"options {js(opts, 80)} is not a non-empty array")
        else:
            ids = []
            for o in opts:
                if not isinstance(o, dict) or not isinstance(o.get("optionId"), str):
                    out.append(f"option {js(o, 80)} has no string optionId")
                    continue
                ids.append(o["optionId"])
                if not isinstance(o.get("name"), str):
                    out.append(f"option {o['optionId']!r} has no string name")
                if not known_value(o.get("kind"), OPTION_KINDS):
                    out.append(f"option {o['optionId']!r} has kind {js(o.get('kind'))}")
            dup = sorted({i for i in ids if ids.count(i) > 1})
            if dup:
                out.append(f"optionIds repeat: {', '.join(dup)}")
        subj = p.get("subject")
        if subj is not None:
            t = subj.get("type") if isinstance(subj, dict) else None
            if t == "command":
                if not isinstance(subj.get("command"), str) or not is_abs_path(subj.get("cwd")):
                    out.append("the command subject needs a string command and an absolute cwd")
            elif t != "tool_call" and not (isinstance(t, str) and t.startswith("_")):
                out.append(f"subject type {js(t)} is not tool_call, command or `_`-prefixed")
        return out

    def _subject(self, m: Msg) -> None:
        p = m.params if isinstance(m.params, dict) else {}
        subj = p.get("subject")
        if not isinstance(subj, dict) or subj.get("type") != "tool_call":
            return
        tc = subj.get("toolCall")
        bad = []
        if not isinstance(tc, dict):
            bad.append(f"toolCall {js(tc, 80)} is not an object")
        else:
            if not isinstance(tc.get("toolCallId"), str) or not tc.get("toolCallId"):
                bad.append(f"toolCallId {js(tc.get('toolCallId'))} is not a non-empty string")
            for fld, allowed in (("status", TOOL_STATUSES), ("kind", TOOL_KINDS)):
                if tc.get(fld) is not None and not known_value(tc.get(fld), allowed):
                    bad.append(f"{fld} {js(tc.get(fld))} is not a known value")
        if bad:
            self.failed("PERM-006", f"the tool_call subject of session/request_permission id={js(m.id)}: "
                        + "; ".join(bad) + ".", fr([m]))
        else:
            self.pass_few("PERM-006", f"the tool_call subject of session/request_permission id={js(m.id)} is a "
                          f"valid tool call update for {tc['toolCallId']!r}.", [m])

    @staticmethod
    def classify(m: Msg, resp: Msg) -> str | None:
        if resp.kind == RESPONSE and "error" in resp.msg:
            return "error"
        res = resp.result
        outcome = res.get("outcome") if isinstance(res, dict) else None
        o = outcome.get("outcome") if isinstance(outcome, dict) else None
        if o == "cancelled":
            return "cancelled"
        if o == "selected":
            offered = [x.get("optionId") for x in (m.params.get("options") or []) if isinstance(x, dict)]
            return None if outcome.get("optionId") in offered else "not_offered"
        return "unknown"

    def _after_answer(self, log: ConnLog, m: Msg) -> None:
        answers = [r for r in m.responses if r.direction == SENT]
        if not answers or not isinstance(m.params, dict):
            return
        resp = answers[0]
        how = self.classify(m, resp)
        rule = _BY_ANSWER.get(how or "")
        if rule is None:
            return
        sid = m.params.get("sessionId")
        subj = m.params.get("subject") if isinstance(m.params.get("subject"), dict) else {}
        tc = subj.get("toolCall") if subj.get("type") == "tool_call" else None
        tid = tc.get("toolCallId") if isinstance(tc, dict) else None
        command = subj.get("command") if subj.get("type") == "command" else None
        label = f"session/request_permission id={js(m.id)} answered {js(resp.msg.get('result', resp.msg.get('error')), 100)}"
        if tid is None and command is None:
            self.untested(rule, f"{label}: it names no tool call or command, so whether the agent proceeded "
                          "cannot be seen.", fr([resp, m]))
            return
        idle = None
        for x, upd, k in session_updates_after(log.msgs, resp, sid):
            if tid is not None and k == "tool_call_update" and upd.get("toolCallId") == tid \
                    and upd.get("status") in PROCEEDED:
                judge = self.warned if rule == "PERM-005" else self.failed
                judge(rule, f"{label} (t={resp.t:.2f}), yet tool call {tid!r} went {upd['status']!r} at "
                      f"t={x.t:.2f}: the operation proceeded.", fr([x, resp, m]))
                return
            if command is not None and k == "terminal_update" and upd.get("command") == command:
                judge = self.warned if rule == "PERM-005" else self.failed
                judge(rule, f"{label}, yet a terminal ran {command!r} at t={x.t:.2f}.", fr([x, resp, m]))
                return
            if k == "state_update" and upd.get("state") == "idle":
                idle = x
                break
        if idle is not None:
            subject = f"tool call {tid!r}" if tid is not None else f"command {command!r}"
            self.pass_few(rule, f"{label}: {subject} did not proceed, and the turn ended "
                          f"({js(idle.msg['params']['update'].get('stopReason'))}, t={idle.t:.2f}).", [resp, m, idle])
        elif log.end is not None and log.end.event == EV_EXIT and not log.suite_closed:
            self.failed(rule, f"{label}: the agent {log.end_desc} before the turn ended.", fr([log.end, resp, m]))
        else:
            self.untested(rule, f"{label}: the turn had not ended when {log.end_desc}, so not proceeding was "
                          "not observed to the end.", fr([resp, m]))
