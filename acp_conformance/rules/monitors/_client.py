"""Shared helpers of the client-side monitors (private to ``rules/monitors``).

When the target is a client, ``received`` frames are what the client wrote to its agent and
``sent`` frames are what the suite (the scripted agent) wrote to the client.
"""

from __future__ import annotations

from typing import Any

from ...wire.transcript import EV_EXIT, EV_STDIN_CLOSED, RECEIVED, SENT
from ..monitor import NOTIFICATION, REQUEST, RESPONSE
from ._common import ConnLog, Msg

UPDATE_KINDS = {"user_message_chunk", "user_message", "agent_message_chunk", "agent_message", "agent_thought_chunk",
                "agent_thought", "state_update", "tool_call_content_chunk", "tool_call_update", "terminal_update",
                "terminal_output_chunk", "plan_update", "plan_removed", "available_commands_update",
                "config_option_update", "session_info_update", "usage_update", "notice", "compaction_update",
                "compaction_summary_chunk", "subagent_update", "session_message", "session_message_chunk",
                "replay_complete"}
STATES = {"running", "idle", "requires_action", "unknown"}
TOOL_STATUSES = {"pending", "in_progress", "paused", "completed", "failed", "cancelled"}
TOOL_KINDS = {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"}
CONTENT_TYPES = {"text", "image", "audio", "resource_link", "resource"}
# agent -> client methods of ACP v2 that a client implements (requests)
CLIENT_REQUESTS = ("session/request_permission", "elicitation/create")
DEFINED_CODES = (-32700, -32600, -32601, -32602, -32603, -32800, -32000, -32002, -32022)


def client_msgs(log: ConnLog, kind: str | None = None, method: str | None = None) -> list[Msg]:
    return [m for m in log.msgs if m.direction == RECEIVED and (kind is None or m.kind == kind)
            and (method is None or m.method == method)]


def agent_msgs(log: ConnLog, kind: str | None = None, method: str | None = None) -> list[Msg]:
    return [m for m in log.msgs if m.direction == SENT and (kind is None or m.kind == kind)
            and (method is None or m.method == method)]


def init_result(log: ConnLog) -> tuple[Msg | None, dict[str, Any] | None]:
    """The suite's first successful initialize answer and its result."""
    for m in log.msgs:
        if m.direction == SENT and m.kind == RESPONSE and m.method == "initialize" and m.ok \
                and isinstance(m.result, dict):
            return m, m.result
    return None, None


def client_init(log: ConnLog) -> dict[str, Any]:
    for m in client_msgs(log, REQUEST, "initialize"):
        if isinstance(m.params, dict):
            return m.params
    return {}


def cap(node: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(node, dict):
            return None
        node = node.get(p)
    return node


def exit_status(log: ConnLog) -> int | None:
    ex = next((e for e in log.events if e.event == EV_EXIT), None)
    return (ex.detail or {}).get("returncode") if ex is not None else None


def crashed(log: ConnLog) -> bool:
    """The client exited with a failure status (or a signal) without the suite having ended it."""
    rc = exit_status(log)
    ended_by_suite = any(e.event == EV_STDIN_CLOSED for e in log.events)
    return isinstance(rc, int) and rc != 0 and not ended_by_suite


def hung_up_at(log: ConnLog) -> float | None:
    """When the suite (the scripted agent) ended the connection itself (``exit`` or the end of the test)."""
    e = next((e for e in log.events if e.event == EV_STDIN_CLOSED), None)
    return e.t if e is not None else None


def updates(log: ConnLog) -> list[tuple[Msg, Any, dict[str, Any]]]:
    """(msg, sessionId, update) of every session/update the suite sent."""
    out = []
    for m in agent_msgs(log, NOTIFICATION, "session/update"):
        p = m.params if isinstance(m.params, dict) else {}
        u = p.get("update")
        if isinstance(u, dict):
            out.append((m, p.get("sessionId"), u))
    return out
