"""Mutants of the TERM rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

import base64

from acp_conformance.reference.agent import INVALID_PARAMS, InvalidParams, ReferenceAgent


class TerminalCancelRefused(ReferenceAgent):
    """terminal/cancel on a cancellable terminal is answered -32602."""

    def accept_terminal_cancel(self, ctx, turn):
        self.respond_error(ctx, INVALID_PARAMS, "Invalid params: not cancellable")


class TerminalUnpadded(ReferenceAgent):
    """terminal_output_chunk data is base64 without its padding."""

    def terminal_chunk(self, session, turn, data):
        self.send_update(session, {"sessionUpdate": "terminal_output_chunk", "terminalId": turn.terminal["terminalId"],
                                   "data": base64.b64encode(data).decode("ascii").rstrip("=")})


class TerminalIdReused(ReferenceAgent):
    """After a terminal exits, its terminalId is reused for another command."""

    def terminal_update(self, session, turn, **fields):
        super().terminal_update(session, turn, **fields)
        if fields.get("exitStatus") is not None:
            self.send_update(session, {"sessionUpdate": "terminal_update", "terminalId": turn.terminal["terminalId"],
                                       "command": "make clean"})


class TerminalRelativeCwd(ReferenceAgent):
    """terminal_update cwd is a relative path. This necessarily breaks CONTENT-004 too (every file path
    in the protocol is absolute), which a second monitor checks for all paths: both rules are listed."""

    def terminal_update(self, session, turn, **fields):
        if "cwd" in fields:
            fields["cwd"] = "."
        super().terminal_update(session, turn, **fields)


class TerminalExitCodeString(ReferenceAgent):
    """exitStatus has a string exitCode or an integer signal."""

    def terminal_update(self, session, turn, **fields):
        ex = fields.get("exitStatus")
        if isinstance(ex, dict):
            fields["exitStatus"] = dict(ex, exitCode=str(ex["exitCode"])) if ex.get("exitCode") is not None \
                else dict(ex, signal=15)
        super().terminal_update(session, turn, **fields)


class TerminalCancelAnyAccepted(ReferenceAgent):
    """terminal/cancel for an unknown or exited terminal is answered {}."""

    def handle_terminal_cancel(self, ctx, params):
        try:
            super().handle_terminal_cancel(ctx, params)
        except InvalidParams:
            if params.get("sessionId") in self.sessions and isinstance(params.get("terminalId"), str):
                self.respond(ctx, {})
                return
            raise


class TerminalCancelCancelsTool(ReferenceAgent):
    """Cancelling the terminal also cancels the tool call that shows it."""

    def tool_update(self, session, turn, **fields):
        ex = (turn.terminal or {}).get("exitStatus") or {}
        if fields.get("status") == "completed" and ex.get("signal"):
            fields["status"] = "cancelled"
        super().tool_update(session, turn, **fields)


class TerminalKeepsCancel(ReferenceAgent):
    """The exitStatus update does not withdraw the terminal's capabilities.cancel (SHOULD)."""

    def terminal_update(self, session, turn, **fields):
        if fields.get("exitStatus") is not None:
            fields.pop("capabilities", None)
        super().terminal_update(session, turn, **fields)


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "terminal-cancel-refused": (("TERM-005",), TerminalCancelRefused),
    "terminal-unpadded": (("TERM-003",), TerminalUnpadded),
    "terminal-id-reused": (("TERM-001",), TerminalIdReused),
    "terminal-relative-cwd": (("TERM-002", "CONTENT-004"), TerminalRelativeCwd),
    "terminal-exit-code-string": (("TERM-004",), TerminalExitCodeString),
    "terminal-cancel-any-accepted": (("TERM-006",), TerminalCancelAnyAccepted),
    "terminal-cancel-cancels-tool": (("TERM-007",), TerminalCancelCancelsTool),
    "terminal-keeps-cancel": (("TERM-008",), TerminalKeepsCancel),
}
