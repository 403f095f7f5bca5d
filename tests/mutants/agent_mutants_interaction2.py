"""More broken variants of the reference agent for TOOL / TERM / PERM / ELICIT (merged into
agent_mutants.MUTANTS). Each breaks one rule; steering words: "tool", "cancellable",
"terminal", "permission", "elicit" (+ "url")."""

from __future__ import annotations

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from acp_conformance.reference.agent import FINAL_TOOL_STATUSES, InvalidParams, ReferenceAgent  # noqa: E402


# -- TOOL ---------------------------------------------------------------------------------------
class ToolNoTitle(ReferenceAgent):
    """The first report of a tool call has no title (SHOULD)."""

    def tool_update(self, session, turn, **fields):
        if turn.tool is None:
            fields.pop("title", None)
        super().tool_update(session, turn, **fields)


class ToolBadKind(ReferenceAgent):
    """The read tool call has kind 3 (not a ToolKind string). A string outside the enum without `_`
    would also break EXT-005 (unknown non-underscore values are reserved), so a non-string is used."""

    def tool_update(self, session, turn, **fields):
        if fields.get("kind") == "read":
            fields["kind"] = 3
        super().tool_update(session, turn, **fields)


class ToolChunkArray(ReferenceAgent):
    """tool_call_content_chunk carries an array with the item instead of the item."""

    def tool_content_chunk(self, session, turn, content):
        self.send_update(session, {"sessionUpdate": "tool_call_content_chunk", "toolCallId": turn.tool["toolCallId"],
                                   "content": [content]})


class ToolCancelAnyAccepted(ReferenceAgent):
    """tool_call/cancel for an unknown, final or non-cancellable tool call is answered {}."""

    def handle_tool_call_cancel(self, ctx, params):
        try:
            super().handle_tool_call_cancel(ctx, params)
        except InvalidParams:
            if params.get("sessionId") in self.sessions and isinstance(params.get("toolCallId"), str):
                self.respond(ctx, {})
                return
            raise


class ToolCancelEndsTurn(ReferenceAgent):
    """Cancelling the cancellable tool call also cancels the whole turn (idle, stopReason cancelled).
    The only visible way to break TOOL-008 is a turn ended as cancelled without session/cancel, which
    is exactly STATE-007 (cancelled is reserved for stops the user chose): both rules are listed."""

    def accept_tool_cancel(self, ctx, turn):
        self.cancel_turn(turn)
        super().accept_tool_cancel(ctx, turn)


class ToolKeepsCancel(ReferenceAgent):
    """A tool call's final update does not withdraw capabilities.cancel (SHOULD)."""

    def tool_update(self, session, turn, **fields):
        if fields.get("status") in FINAL_TOOL_STATUSES:
            fields.pop("capabilities", None)
        super().tool_update(session, turn, **fields)


class ToolDiffPrefixed(ReferenceAgent):
    """The git_patch of diff content uses Git's a/ b/ prefixes."""

    def tool_diff(self, session, deleting):
        d = super().tool_diff(session, deleting)
        path = d["changes"][0]["path"]
        d["patch"]["text"] = d["patch"]["text"].replace("--- " + path, "--- a" + path).replace("+++ " + path,
                                                                                                  "+++ b" + path)
        return d


class ToolUnknownSessionRef(ReferenceAgent):
    """Tool content references a session the client never heard of."""

    def session_reference(self, session):
        return {"type": "session", "sessionId": "sess_conformance_never_announced"}


# -- TERM ---------------------------------------------------------------------------------------
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


# -- PERM ---------------------------------------------------------------------------------------
class PermNoTitle(ReferenceAgent):
    """session/request_permission has no title."""

    def send_request(self, method, params):
        if method == "session/request_permission":
            params = {k: v for k, v in params.items() if k != "title"}
        return super().send_request(method, params)


class PermCancelledProceeds(ReferenceAgent):
    """A `cancelled` outcome is taken as approval."""

    @staticmethod
    def permission_approved(answer):
        kind, value = answer
        outcome = value.get("outcome") if kind == "result" and isinstance(value, dict) else None
        if isinstance(outcome, dict) and outcome.get("outcome") == "cancelled":
            return True
        return ReferenceAgent.permission_approved(answer)


class PermNotOfferedApproves(ReferenceAgent):
    """A `selected` outcome with an optionId that was not offered is taken as approval."""

    @staticmethod
    def permission_approved(answer):
        kind, value = answer
        outcome = value.get("outcome") if kind == "result" and isinstance(value, dict) else None
        if isinstance(outcome, dict) and outcome.get("outcome") == "selected" \
                and outcome.get("optionId") not in ("allow", "reject"):
            return True
        return ReferenceAgent.permission_approved(answer)


class PermBadSubject(ReferenceAgent):
    """The tool_call subject of the permission request has kind "nope"."""

    def send_request(self, method, params):
        if method == "session/request_permission":
            subj = dict(params["subject"], toolCall=dict(params["subject"]["toolCall"], kind="nope"))
            params = dict(params, subject=subj)
        return super().send_request(method, params)


# -- ELICIT -------------------------------------------------------------------------------------
class ElicitUnadvertised(ReferenceAgent):
    """Elicits (form, and URL when asked) whatever modes the client advertised under elicitation."""

    def elicitation_modes(self):
        # only where capabilities.elicitation is present at all: its absence is INIT-007's business
        return {"form", "url"} if isinstance(self.client_capabilities.get("elicitation"), dict) else set()


class ElicitUnknownSession(ReferenceAgent):
    """elicitation/create is scoped to a session that does not exist."""

    def send_request(self, method, params):
        if method == "elicitation/create":
            params = dict(params, sessionId="sess_conformance_nowhere")
        return super().send_request(method, params)


class ElicitFixedId(ReferenceAgent):
    """Every URL elicitation uses the same elicitationId."""

    def new_elicitation_id(self):
        return "elic_1"


class ElicitDeclineAccepted(ReferenceAgent):
    """Any elicitation result (decline, cancel, unknown action) is taken as accepted: after a declined
    URL elicitation the agent sends elicitation/complete as if the user had gone through it."""

    @staticmethod
    def elicitation_content(answer):
        content = ReferenceAgent.elicitation_content(answer)
        return {} if content is None and answer[0] == "result" else content


class ElicitCompleteWrongId(ReferenceAgent):
    """elicitation/complete names an elicitationId that was never used."""

    def complete_elicitation(self, elicitation_id):
        self.notify("elicitation/complete", {"elicitationId": "elic_conformance_other"})


class ElicitNoRequiresAction(ReferenceAgent):
    """A pending elicitation is not reflected as requires_action (SHOULD)."""

    def elicit_waiting(self, session):
        pass


class ElicitAsksSecret(ReferenceAgent):
    """The form elicitation asks for an API key."""

    def elicitation_schema(self):
        return {"type": "object", "properties": {"apiKey": {"type": "string", "title": "API key"}},
                "required": ["apiKey"]}


MUTANTS = {
    "tool-no-title": (("TOOL-002",), ToolNoTitle),
    "tool-bad-kind": (("TOOL-003",), ToolBadKind),
    "tool-chunk-array": (("TOOL-004",), ToolChunkArray),
    "tool-diff-prefixed": (("TOOL-005",), ToolDiffPrefixed),
    "tool-cancel-any-accepted": (("TOOL-007",), ToolCancelAnyAccepted),
    "tool-cancel-ends-turn": (("TOOL-008", "STATE-007"), ToolCancelEndsTurn),
    "tool-keeps-cancel": (("TOOL-009",), ToolKeepsCancel),
    "tool-unknown-session-ref": (("TOOL-010",), ToolUnknownSessionRef),
    "terminal-id-reused": (("TERM-001",), TerminalIdReused),
    "terminal-relative-cwd": (("TERM-002", "CONTENT-004"), TerminalRelativeCwd),
    "terminal-exit-code-string": (("TERM-004",), TerminalExitCodeString),
    "terminal-cancel-any-accepted": (("TERM-006",), TerminalCancelAnyAccepted),
    "terminal-cancel-cancels-tool": (("TERM-007",), TerminalCancelCancelsTool),
    "terminal-keeps-cancel": (("TERM-008",), TerminalKeepsCancel),
    "perm-no-title": (("PERM-001",), PermNoTitle),
    "perm-cancelled-proceeds": (("PERM-002",), PermCancelledProceeds),
    "perm-not-offered-approves": (("PERM-003",), PermNotOfferedApproves),
    "perm-bad-subject": (("PERM-006",), PermBadSubject),
    "elicit-unadvertised": (("ELICIT-001",), ElicitUnadvertised),
    "elicit-unknown-session": (("ELICIT-002",), ElicitUnknownSession),
    "elicit-fixed-id": (("ELICIT-003",), ElicitFixedId),
    "elicit-decline-accepted": (("ELICIT-004",), ElicitDeclineAccepted),
    "elicit-complete-wrong-id": (("ELICIT-005",), ElicitCompleteWrongId),
    "elicit-no-requires-action": (("ELICIT-006",), ElicitNoRequiresAction),
    "elicit-asks-secret": (("ELICIT-007",), ElicitAsksSecret),
}
