"""Broken variants of the reference agent for the TOOL / TERM / PERM rules (merged into
agent_mutants.MUTANTS). Steering words: "tool", "cancellable", "terminal", "permission"."""

from __future__ import annotations

import base64
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from acp_conformance.reference.agent import INVALID_PARAMS, ReferenceAgent  # noqa: E402


class ToolV1Variant(ReferenceAgent):
    """The first report of a tool call uses the v1 `tool_call` update."""

    def send_update(self, session, update):
        if update.get("sessionUpdate") == "tool_call_update" and "title" in update:
            update = dict(update, sessionUpdate="tool_call")
        super().send_update(session, update)


class ToolCancelRefused(ReferenceAgent):
    """tool_call/cancel on a tool call that advertises capabilities.cancel is answered -32602."""

    def accept_tool_cancel(self, ctx, turn):
        self.respond_error(ctx, INVALID_PARAMS, "Invalid params: not cancellable")


class PermUnknownApproves(ReferenceAgent):
    """An outcome the agent does not understand is taken as approval."""

    @staticmethod
    def permission_approved(answer):
        kind, value = answer
        outcome = value.get("outcome") if kind == "result" and isinstance(value, dict) else None
        o = outcome.get("outcome") if isinstance(outcome, dict) else None
        if o not in ("selected", "cancelled") and kind == "result":
            return True
        return ReferenceAgent.permission_approved(answer)


class PermErrorApproves(ReferenceAgent):
    """A JSON-RPC error answer to the permission request is taken as approval."""

    @staticmethod
    def permission_approved(answer):
        return answer[0] == "error" or ReferenceAgent.permission_approved(answer)


class TerminalCancelRefused(ReferenceAgent):
    """terminal/cancel on a cancellable terminal is answered -32602."""

    def accept_terminal_cancel(self, ctx, turn):
        self.respond_error(ctx, INVALID_PARAMS, "Invalid params: not cancellable")


class TerminalUnpadded(ReferenceAgent):
    """terminal_output_chunk data is base64 without its padding."""

    def terminal_chunk(self, session, turn, data):
        self.send_update(session, {"sessionUpdate": "terminal_output_chunk", "terminalId": turn.terminal["terminalId"],
                                   "data": base64.b64encode(data).decode("ascii").rstrip("=")})


MUTANTS = {
    "tool-v1-variant": (("TOOL-001",), ToolV1Variant),
    "tool-cancel-refused": (("TOOL-006",), ToolCancelRefused),
    "perm-unknown-approves": (("PERM-004",), PermUnknownApproves),
    "perm-error-approves": (("PERM-005",), PermErrorApproves),
    "terminal-cancel-refused": (("TERM-005",), TerminalCancelRefused),
    "terminal-unpadded": (("TERM-003",), TerminalUnpadded),
}
