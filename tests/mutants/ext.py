"""Mutants of the EXT rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

from acp_conformance.reference.agent import INVALID_PARAMS, ReferenceAgent


class Ext004(ReferenceAgent):
    """A custom root field in the prompt result."""

    def prompt_result(self, message_id):
        return {**super().prompt_result(message_id), "_vendorStats": {"tokens": 1}}


class Ext003(ReferenceAgent):
    """``_meta: null`` at the params root is refused with -32602 (omitted and null are not equivalent)."""

    def dispatch_request(self, ctx, method, params):
        if self.initialized and isinstance(params, dict) and "_meta" in params and params["_meta"] is None:
            self.respond_error(ctx, INVALID_PARAMS, "Invalid params: _meta must be an object")
            return
        super().dispatch_request(ctx, method, params)


class Ext005(ReferenceAgent):
    """The read tool call uses a custom tool kind ``read_file`` without the ``_`` prefix.

    TOOL-003 judges tool kinds on the same frame and fails too (the schema monitor then leaves the frame
    to them). EXT-005 cannot be broken alone: every open enum its monitor reads from an agent (state,
    stopReason, tool status and kind, permission option kind, content type) is also judged by a specific
    rule (STATE/PROMPT-014, TOOL-003, PERM-001, CONTENT-001)."""

    def tool_update(self, session, turn, **fields):
        if fields.get("kind") == "read":
            fields["kind"] = "read_file"
        super().tool_update(session, turn, **fields)


class Ext007(ReferenceAgent):
    """A resource_link without its required name is taken as if named "" (demoted to a lenient reading)
    instead of being rejected with -32602; what it echoes back is then well-formed."""

    def validate_block(self, block):
        if isinstance(block, dict) and block.get("type") == "resource_link" and "name" not in block:
            block["name"] = ""
        super().validate_block(block)


class Ext004Undefined(ReferenceAgent):
    """A field the type does not define, without the `_` prefix, at the root of the session/new result (it escaped
    every rule, issue 25: every name at a spec type's root is reserved for the protocol)."""

    def respond(self, ctx, result):
        if ctx.method == "session/new" and isinstance(result, dict):
            result = dict(result, workspaceId="ws-1")
        super().respond(ctx, result)


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "wire-ext-004": (("EXT-004",), Ext004),
    "ext-004-undefined-name": (("EXT-004",), Ext004Undefined),
    "wire2-ext-003": (("EXT-003",), Ext003),
    "wire2-ext-005": (("EXT-005", "TOOL-003"), Ext005),  # TOOL-003 judges the tool kind too
    "ext-007": (("EXT-007",), Ext007),
}
