"""Mutants of the TOOL rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

from acp_conformance.reference.agent import (
    FINAL_TOOL_STATUSES,
    INVALID_PARAMS,
    InvalidParams,
    ReferenceAgent,
)


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


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "tool-v1-variant": (("TOOL-001",), ToolV1Variant),
    "tool-cancel-refused": (("TOOL-006",), ToolCancelRefused),
    "tool-no-title": (("TOOL-002",), ToolNoTitle),
    "tool-bad-kind": (("TOOL-003",), ToolBadKind),
    "tool-chunk-array": (("TOOL-004",), ToolChunkArray),
    "tool-diff-prefixed": (("TOOL-005",), ToolDiffPrefixed),
    "tool-cancel-any-accepted": (("TOOL-007",), ToolCancelAnyAccepted),
    "tool-cancel-ends-turn": (("TOOL-008", "STATE-007"), ToolCancelEndsTurn),
    "tool-keeps-cancel": (("TOOL-009",), ToolKeepsCancel),
    "tool-unknown-session-ref": (("TOOL-010",), ToolUnknownSessionRef),
}
