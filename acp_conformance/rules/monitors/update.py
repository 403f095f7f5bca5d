"""session/update shape rules beyond the schema: the notification envelope, messageIds, the
usage/plan/commands/info variants, the draft notices/compactions/subagents, session attribution,
and the content blocks and paths the agent emits.

Variants the agent never sends leave their rule ``skip`` ("the agent sent no usage_update"): the
rule is about a form the agent did not use, so there is nothing to judge and nothing to demand.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any

from ...wire.transcript import SENT
from ..findings import SKIP
from ..monitor import NOTIFICATION, REQUEST, RESPONSE
from ..sessions import LOAD, NEW, RESUME, ConnSessions
from ._common import ConnLog, ConnMonitor, Msg, fr, is_abs_path, js
from .update_shapes import (annotation_problems, command_problems, content_problems, icon_problems, notice_problems,
                            path_problems, plan_problems, session_info_problems, update_blocks, usage_problems)

MESSAGE_KINDS = ("user_message", "user_message_chunk", "agent_message", "agent_message_chunk",
                 "agent_thought", "agent_thought_chunk")
_TERMINAL = ("completed", "failed", "cancelled")

# the rule -> the variant whose absence makes it skip
_USAGE = {"UPDATE-006": "usage_update", "UPDATE-007": "plan_update", "UPDATE-008": "available_commands_update",
          "UPDATE-009": "session_info_update", "UPDATE-010": "notice", "UPDATE-011": "compaction_update",
          "UPDATE-012": "subagent_update"}


@dataclass(eq=False)
class _Sessions:
    """The sessions of one connection as ``analyze`` walks its frames."""
    model: ConnSessions  # the connection's session model
    children: set[str] = field(default_factory=set)  # announced by a subagent_update of a session of ours
    pending_new: list[Msg] = field(default_factory=list)  # session/new requests not answered yet
    compactions: dict[tuple[str, Any], dict[str, Any]] = field(default_factory=dict)  # (sid, compactionId) -> state
    cwds: dict[str, str] = field(default_factory=dict)  # sessionId -> the cwd the client gave

    def ours(self, sid: Any, at: Msg) -> bool:
        """Created (its session/new answered) or resumed or loaded (requested) on this connection before ``at``,
        or announced as a child."""
        if sid in self.children:
            return True
        s = self.model.session(sid)
        return s is not None and (any(e.order < at.order for e in s.known(NEW))
                                  or any(r.order < at.order and r.method in (RESUME, LOAD) for r in s.named))

    def follow_request(self, m: Msg) -> None:
        """A frame the suite sent: a session/new, session/resume or session/load request."""
        if m.kind == REQUEST and m.method == "session/resume" and isinstance(m.params, dict) \
                and isinstance(m.session_id, str) and isinstance(m.params.get("cwd"), str):
            self.cwds[m.session_id] = m.params["cwd"]
        if m.kind == REQUEST and m.method == "session/new":
            self.pending_new.append(m)

    def follow_new_answer(self, m: Msg) -> None:
        """The agent's result of a session/new."""
        sid = m.result.get("sessionId")
        if isinstance(sid, str):
            rp = m.request.params if m.request is not None and isinstance(m.request.params, dict) else {}
            if isinstance(rp.get("cwd"), str):
                self.cwds[sid] = rp["cwd"]
        if m.request in self.pending_new:
            self.pending_new.remove(m.request)

    def follow_update(self, m: Msg, sid: str, kind: str, upd: dict[str, Any]) -> None:
        """A subagent_update of a session of ours announces a child session."""
        if kind == "subagent_update" and isinstance(upd.get("sessionId"), str) and self.ours(sid, m):
            self.children.add(upd["sessionId"])


class SessionUpdateMonitor(ConnMonitor):
    rules = ("UPDATE-001", "UPDATE-004", "UPDATE-006", "UPDATE-007", "UPDATE-008", "UPDATE-009",
             "UPDATE-010", "UPDATE-011", "UPDATE-012", "SESSION-010", "SESSION-011",
             "CONTENT-001", "CONTENT-002", "CONTENT-003", "CONTENT-004")

    def __init__(self, ctx):
        super().__init__(ctx)
        self.seen: dict[str, int] = {}  # rule -> number of situations judged over the test
        self.proc_cwd: dict[int, Any] = {}
        self.inner_session = False  # an update came for a session whose cwd is inside the process's

    def on_event(self, log: ConnLog, frame) -> None:
        if frame.event == "start" and isinstance(frame.detail, dict):
            self.proc_cwd[log.conn] = frame.detail.get("cwd")

    def _judge_cwd(self, m: Msg, sid: str, upd: dict[str, Any], cwds: dict[str, str], proc: Any) -> None:
        """SESSION-011, for a session whose cwd lies strictly inside the process's directory."""
        b = cwds.get(sid)
        if not isinstance(b, str) or not isinstance(proc, str):
            return
        a, b = posixpath.normpath(str(proc)), posixpath.normpath(b)
        if a == b or not b.startswith(a.rstrip("/") + "/"):
            return
        self.inner_session = True
        locs = upd.get("locations")  # not an array: a schema failure (UPDATE-002), no path to judge here
        paths = [x.get("path") for x in locs if isinstance(x, dict)] if isinstance(locs, (list, dict, str)) else []
        if upd.get("sessionUpdate") == "terminal_update" and upd.get("cwd") is not None:
            paths.append(upd.get("cwd"))
        for path in paths:
            if not isinstance(path, str) or not is_abs_path(path):
                continue
            q = posixpath.normpath(path)
            self.bump("SESSION-011")
            if q == b or q.startswith(b.rstrip("/") + "/"):
                self.pass_few("SESSION-011", f"{upd.get('sessionUpdate')} for {sid!r} at t={m.t:.2f} reports {path!r}, "
                              f"inside the session cwd {b!r}.", [m], limit=1)
            elif q == a or q.startswith(a.rstrip("/") + "/"):
                self.failed("SESSION-011", f"{upd.get('sessionUpdate')} for {sid!r} at t={m.t:.2f} reports {path!r}: in "
                            f"the agent process's directory {a!r}, outside the session cwd {b!r}.", fr([m]))

    def bump(self, rule: str) -> None:
        self.seen[rule] = self.seen.get(rule, 0) + 1

    def analyze(self, log: ConnLog) -> None:
        sessions = _Sessions(log.sessions)
        for m in log.msgs:
            if m.direction == SENT:
                sessions.follow_request(m)
            elif m.kind == RESPONSE and m.method == "session/new" and isinstance(m.result, dict):
                sessions.follow_new_answer(m)
            elif m.method == "session/update" and m.kind in (REQUEST, NOTIFICATION) and m.is_dict:
                self._judge_notification(m, sessions, self.proc_cwd.get(log.conn))
        # UPDATE-011: status change after terminal is judged inline; nothing left at the end

    def _judge_notification(self, m: Msg, sessions: _Sessions, proc_cwd: Any) -> None:
        upd = self._judge_envelope(m)
        if upd is None:
            return
        sid, kind = m.params["sessionId"], upd["sessionUpdate"]
        sessions.follow_update(m, sid, kind, upd)
        self._judge_session_known(m, sid, kind, sessions)
        self._judge_update(m, sid, kind, upd, sessions)
        self._judge_cwd(m, sid, upd, sessions.cwds, proc_cwd)

    def _judge_envelope(self, m: Msg) -> dict[str, Any] | None:
        """UPDATE-001: a notification with a string sessionId and an update with a string sessionUpdate;
        the update when it is one (None: failed, nothing more to judge)."""
        p = m.params
        bad = []
        if m.kind == REQUEST:
            bad.append(f"it carries an id ({js(m.id)}): it is a request, not a notification")
        if not isinstance(p, dict) or not isinstance(p.get("sessionId"), str):
            bad.append("params.sessionId is not a string")
        upd = p.get("update") if isinstance(p, dict) else None
        if not isinstance(upd, dict) or not isinstance(upd.get("sessionUpdate"), str):
            bad.append("params.update is not an object with a string sessionUpdate")
        if bad:
            self.failed("UPDATE-001", f"session/update at t={m.t:.2f}: {'; '.join(bad)}.", fr([m]))
            return None
        self.pass_few("UPDATE-001", f"session/update at t={m.t:.2f} is a notification with sessionId and "
                      f"update.sessionUpdate {js(upd['sessionUpdate'])}.", [m], limit=1)
        return upd

    def _judge_session_known(self, m: Msg, sid: str, kind: str, sessions: _Sessions) -> None:
        """SESSION-010 (an update that arrives while a session/new is unanswered may be for it: SESSION-004)."""
        if sessions.ours(sid, m):
            self.pass_few("SESSION-010", f"session/update {kind} at t={m.t:.2f} names {sid!r}, a session of "
                          "this connection.", [m], limit=1)
        elif not sessions.pending_new:
            self.failed("SESSION-010", f"session/update {kind} at t={m.t:.2f} names {sid!r}, which was neither "
                        "created nor resumed on this connection nor announced by subagent_update.", fr([m]))

    def _judge_update(self, m: Msg, sid: str, kind: str, upd: dict[str, Any], sessions: _Sessions) -> None:
        """The rule of the update's variant (UPDATE-004..012), then CONTENT-001..004 on what it carries."""
        where = f"{kind} for {sid!r} at t={m.t:.2f}"
        if kind in MESSAGE_KINDS:
            self._judge_message_id(m, where, upd)
        elif kind == "usage_update":
            if not self._judge_usage(m, where, upd):
                return  # an overflowing context window is warned of, and ends the update's judging
        elif kind == "plan_update":
            self._judge_shape("UPDATE-007", where, plan_problems(upd), m)
        elif kind == "available_commands_update":
            self._judge_shape("UPDATE-008", where, command_problems(upd), m)
        elif kind == "session_info_update":
            self._judge_session_info(m, where, upd)
        elif kind == "notice":
            self._judge_shape("UPDATE-010", where, notice_problems(upd), m)
        elif kind in ("compaction_update", "compaction_summary_chunk"):
            self.bump("UPDATE-011")
            self._compaction(m, sid, kind, upd, where, sessions.compactions)
        elif kind in ("session_message", "session_message_chunk"):
            self._judge_session_message(m, where, upd, sessions)
        elif kind == "subagent_update":
            self.bump("UPDATE-012")
            self.pass_few("UPDATE-012", f"{where} announces child {js(upd.get('sessionId'))} before its messages.",
                          [m], limit=1)
        self._judge_content(m, where, upd)

    def _judge_shape(self, rule: str, where: str, bad: list[str], m: Msg) -> None:
        self.bump(rule)
        self._verdict(rule, where, bad, m)

    def _judge_message_id(self, m: Msg, where: str, upd: dict[str, Any]) -> None:
        """UPDATE-004: a message chunk carries a non-empty messageId."""
        self.bump("UPDATE-004")
        mid = upd.get("messageId")
        if not isinstance(mid, str) or not mid:
            self.failed("UPDATE-004", f"{where} has messageId {js(mid)}, not a non-empty string.", fr([m]))
        else:
            self.pass_few("UPDATE-004", f"{where} carries messageId {mid!r}.", [m], limit=1)

    def _judge_usage(self, m: Msg, where: str, upd: dict[str, Any]) -> bool:
        """UPDATE-006; False when a well-formed update only warns (used beyond the window size)."""
        self.bump("UPDATE-006")
        bad = usage_problems(upd)
        if not bad and upd["used"] > upd["size"]:  # odd, but the context may overflow: a warning
            self.warned("UPDATE-006", f"{where}: used {upd['used']} is more than the window size {upd['size']}.",
                        fr([m]))
            return False
        self._verdict("UPDATE-006", where, bad, m)
        return True

    def _judge_session_info(self, m: Msg, where: str, upd: dict[str, Any]) -> None:
        """UPDATE-009: a well-formed session_info_update that carries fields it does not patch warns."""
        self.bump("UPDATE-009")
        bad, unpatched = session_info_problems(upd)
        if not bad and unpatched:
            self.warned("UPDATE-009", f"{where} carries {', '.join(unpatched)}, which session_info_update does "
                        "not patch.", fr([m]))
        else:
            self._verdict("UPDATE-009", where, bad, m)

    def _judge_session_message(self, m: Msg, where: str, upd: dict[str, Any], sessions: _Sessions) -> None:
        """UPDATE-012: a session message names sessions announced to the client."""
        self.bump("UPDATE-012")
        bad = []
        mid = upd.get("messageId")
        if not isinstance(mid, str) or not mid:
            bad.append(f"messageId {js(mid)} is not a non-empty string")
        for k in ("senderSessionId", "recipientSessionId"):
            v = upd.get(k)
            if isinstance(v, str) and not sessions.ours(v, m):
                bad.append(f"{k} {v!r} names a session that no subagent_update announced")
        self._verdict("UPDATE-012", where, bad, m)

    def _judge_content(self, m: Msg, where: str, upd: dict[str, Any]) -> None:
        """CONTENT-001..003 on each content block of the update, whatever the variant; CONTENT-004 on its paths."""
        for b in update_blocks(upd):
            self.bump("CONTENT-001")
            self._verdict("CONTENT-001", where, content_problems(b), m, key="c1")
            ip = icon_problems(b)
            if ip is not None:
                self.bump("CONTENT-002")
                self._verdict("CONTENT-002", where, ip, m)
            ap = annotation_problems(b)
            if ap is not None:
                self.bump("CONTENT-003")
                self._verdict("CONTENT-003", where, ap, m)
        probs, n = path_problems(upd)
        if n or probs:
            self.bump("CONTENT-004")
            self._verdict("CONTENT-004", where, probs, m)

    def _compaction(self, m: Msg, sid: str, kind: str, upd: dict, where: str, comps: dict) -> None:
        cid = upd.get("compactionId")
        if not isinstance(cid, str) or not cid:
            self.failed("UPDATE-011", f"{where} has compactionId {js(cid)}, not a non-empty string.", fr([m]))
            return
        st = comps.setdefault((sid, cid), {"status": None, "terminal": None, "first": m})
        if kind == "compaction_summary_chunk":
            if st["status"] is None:
                self.failed("UPDATE-011", f"{where}: a summary chunk for compaction {cid!r} before any "
                            "compaction_update for it.", fr([m]))
            elif st["terminal"] is not None:
                self.failed("UPDATE-011", f"{where}: a summary chunk for compaction {cid!r} after its terminal "
                            f"status {st['status']!r}.", fr([m, st["terminal"]]))
            else:
                self.pass_few("UPDATE-011", f"{where}: summary chunk while compaction {cid!r} is in progress.", [m])
            return
        status = upd.get("status")
        bad = []
        if not isinstance(status, str):
            bad.append(f"status {js(status)} is not a string")
        if st["terminal"] is not None:
            bad.append(f"compaction {cid!r} already ended with {st['status']!r} (t={st['terminal'].t:.2f}) and "
                       f"now reports {js(status)}")
        summ = upd.get("summary")
        if isinstance(summ, list) and summ and status != "completed":
            bad.append(f"a non-empty summary with status {js(status)}")
        if upd.get("error") is not None and status != "failed":
            bad.append(f"an error with status {js(status)}")
        if bad:
            self.failed("UPDATE-011", f"{where}: {'; '.join(bad)}.", fr([m] + ([st["terminal"]] if st["terminal"] else [])))
        else:
            self.pass_few("UPDATE-011", f"{where}: compaction {cid!r} status {status!r}.", [m])
        if isinstance(status, str):
            st["status"] = status
            if status in _TERMINAL and st["terminal"] is None:
                st["terminal"] = m

    def _verdict(self, rule: str, where: str, bad: list[str], m: Msg, key: Any = None) -> None:
        if bad:
            self.failed(rule, f"{where}: {'; '.join(bad)}.", fr([m]))
        else:
            self.pass_few(rule, f"{where} is well-formed for {rule}.", [m], key=key, limit=1)

    def finish_test(self) -> None:
        if self.inner_session and not self.seen.get("SESSION-011"):
            self.untested("SESSION-011", "the session whose cwd is a subdirectory of the agent's directory got no "
                          "update with a tool location or terminal cwd; --acp-tool-prompt should make the agent "
                          "call a tool")
        for rule, variant in _USAGE.items():
            if not self.seen.get(rule):
                self.ctx.report(rule, SKIP, f"the agent sent no {variant} updates in this test", self.expected[rule])
        for rule, what in (("CONTENT-002", "icons"), ("CONTENT-003", "annotations"),
                           ("CONTENT-004", "paths (tool locations, diffs, cwd) in its updates")):
            if not self.seen.get(rule):
                self.ctx.report(rule, SKIP, f"the agent sent no content with {what} in this test", self.expected[rule])
