"""ACP v1 session updates, tool calls and permission requests (https://agentclientprotocol.com/protocol/v1/
prompt-turn, tool-calls, agent-plan, slash-commands, session-modes): the shape of each update kind, the session it
names, and the tool calls it refers to."""

from __future__ import annotations

from typing import Any

from ...wire.transcript import RECEIVED, SENT
from ._common import js
from ._v1 import V1Monitor, params, result_of, update_of

KINDS = ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan",
         "available_commands_update", "current_mode_update", "config_option_update", "session_info_update",
         "usage_update")
TOOL_STATUSES = ("pending", "in_progress", "completed", "failed")
TOOL_KINDS = ("read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other")
PLAN_PRIORITIES = ("high", "medium", "low")
PLAN_STATUSES = ("pending", "in_progress", "completed")
PERMISSION_KINDS = ("allow_once", "allow_always", "reject_once", "reject_always")


def shape_problem(kind: Any, upd: dict[str, Any]) -> str:
    """What a v1 update of ``kind`` lacks ('' when its shape is right)."""
    if kind in ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk"):
        c = upd.get("content")
        return "" if isinstance(c, dict) and isinstance(c.get("type"), str) else f"content is {js(c, 60)}"
    if kind == "tool_call":
        if not isinstance(upd.get("toolCallId"), str) or not isinstance(upd.get("title"), str):
            return "a tool_call needs a string toolCallId and title"
    if kind == "tool_call_update" and not isinstance(upd.get("toolCallId"), str):
        return "a tool_call_update needs a string toolCallId"
    if kind == "plan":
        entries = upd.get("entries")
        if not isinstance(entries, list):
            return "a plan needs an entries array"
        for e in entries:
            if not (isinstance(e, dict) and isinstance(e.get("content"), str) and e.get("priority") in PLAN_PRIORITIES
                    and e.get("status") in PLAN_STATUSES):
                return f"plan entry {js(e, 80)} needs content, a priority and a status of v1's values"
    if kind == "available_commands_update" and not isinstance(upd.get("availableCommands"), list):
        return "an available_commands_update needs an availableCommands array"
    if kind == "current_mode_update" and not isinstance(upd.get("currentModeId"), str):
        return "a current_mode_update needs a string currentModeId"
    return ""


class V1UpdateMonitor(V1Monitor):
    rules = ("V1-UPDATE-001", "V1-UPDATE-002", "V1-TOOL-001", "V1-TOOL-002", "V1-PERM-001")

    def judge(self, conn, msgs) -> None:
        known: set = set()
        tools: dict = {}
        for m in msgs:
            if m.direction == SENT and m.kind == "request" and m.method in ("session/load", "session/resume"):
                known.add(params(m).get("sessionId"))
            elif m.direction == RECEIVED and m.kind == "response" and m.method == "session/new":
                res = result_of(m)
                if isinstance(res, dict):
                    known.add(res.get("sessionId"))
            elif m.direction == RECEIVED and m.kind == "request" and m.method == "session/request_permission":
                self._permission(m, known)
                self._announced_by_permission(m, tools)
            elif m.direction == RECEIVED and m.method == "session/update":
                self._update(m, known, tools)

    def _update(self, m, known, tools) -> None:
        u = update_of(m)
        p = params(m)
        if u is None or not isinstance(p.get("sessionId"), str):
            self.failed("V1-UPDATE-001", f"session/update params {js(p, 160)}: a string sessionId and an update object "
                                         "are required", [m.frame])
            return
        sid, upd, kind = u
        if kind not in KINDS:
            if isinstance(kind, str):
                self.noted("V1-UPDATE-001", f"sessionUpdate {kind!r} is no kind of v1's pages", [m.frame])
            else:
                self.failed("V1-UPDATE-001", f"update {js(upd, 120)} has no sessionUpdate kind", [m.frame])
        else:
            problem = shape_problem(kind, upd)
            if problem:
                self.failed("V1-UPDATE-001", f"{kind}: {problem}", [m.frame])
            else:
                self.passed("V1-UPDATE-001", f"a well-formed {kind} update", [m.frame])
        if sid in known:
            self.passed("V1-UPDATE-002", f"session/update of the known session {sid!r}", [m.frame])
        else:
            self.failed("V1-UPDATE-002", f"session/update of {sid!r}, a session no session/new, session/load or "
                                         "session/resume of this connection made known", [m.frame])
        if kind in ("tool_call", "tool_call_update"):
            self._tool(m, sid, upd, kind, tools)

    def _tool(self, m, sid, upd, kind, tools) -> None:
        tid = upd.get("toolCallId")
        if kind == "tool_call":
            tools.setdefault(sid, set()).add(tid)
        elif tid in tools.get(sid, set()):
            self.passed("V1-TOOL-001", f"tool_call_update of the announced tool call {tid!r}", [m.frame])
        else:
            self.failed("V1-TOOL-001", f"tool_call_update of {tid!r}, which no tool_call of the session announced",
                        [m.frame])
        bad = [f"{k} {js(upd[k], 40)}" for k, allowed in (("status", TOOL_STATUSES), ("kind", TOOL_KINDS))
               if upd.get(k) is not None and upd[k] not in allowed]
        if bad:
            self.failed("V1-TOOL-002", f"{kind} with {', '.join(bad)}, outside v1's values", [m.frame])
        elif "status" in upd or "kind" in upd:
            self.passed("V1-TOOL-002", f"{kind} status/kind among v1's values", [m.frame])

    def _announced_by_permission(self, m, tools) -> None:
        """A permission request's toolCall (a ToolCallUpdate with the call's details) makes the tool call known to
        the client: the v1 pages show a tool_call first, but do not say a permission request may not introduce one."""
        p = params(m)
        tool = p.get("toolCall")
        tid = tool.get("toolCallId") if isinstance(tool, dict) else None
        if not isinstance(tid, str) or tid in tools.get(p.get("sessionId"), set()):
            return
        tools.setdefault(p.get("sessionId"), set()).add(tid)
        self.noted("V1-TOOL-001", f"tool call {tid!r} first appears in a session/request_permission, not in a "
                                  "tool_call update: later updates of it are taken as of a known tool call", [m.frame])

    def _permission(self, m, known) -> None:
        p = params(m)
        opts = p.get("options")
        tool = p.get("toolCall")
        problems = []
        if p.get("sessionId") not in known:
            problems.append(f"sessionId {js(p.get('sessionId'), 40)} is no session of this connection")
        if not (isinstance(tool, dict) and isinstance(tool.get("toolCallId"), str)):
            problems.append("toolCall needs a string toolCallId")
        if not isinstance(opts, list) or not opts or not all(
                isinstance(o, dict) and isinstance(o.get("optionId"), str) and isinstance(o.get("name"), str)
                and o.get("kind") in PERMISSION_KINDS for o in opts):
            problems.append(f"options {js(opts, 100)} must be a non-empty array of {{optionId, name, kind}}")
        if problems:
            self.failed("V1-PERM-001", "session/request_permission: " + "; ".join(problems), [m.frame])
        else:
            self.passed("V1-PERM-001", f"a well-formed permission request with {len(opts)} option(s)", [m.frame])

