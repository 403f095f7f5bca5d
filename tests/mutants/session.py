"""Mutants of the SESSION rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class); ``UNFLAGGED`` holds the one
the suite only notes (a broken MAY). Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

import hashlib
import os

from acp_conformance.reference.agent import ReferenceAgent


class Session005(ReferenceAgent):
    """Accepts MCP server entries of any transport (none is advertised)."""

    def check_session_setup(self, params):
        params = dict(params)
        params.pop("mcpServers", None)
        super().check_session_setup(params)


class Session008(ReferenceAgent):
    """Accepts a relative cwd in session/new."""

    def handle_session_new(self, ctx, params):
        cwd = params.get("cwd")
        if isinstance(cwd, str) and not os.path.isabs(cwd):
            params = dict(params, cwd=os.path.abspath(cwd))
        super().handle_session_new(ctx, params)


class Session010(ReferenceAgent):
    """After every turn, an update for a session the client never heard of."""

    def finish_work(self, session, turn, stop_reason, error):
        super().finish_work(session, turn, stop_reason, error)
        self.notify("session/update", {"sessionId": "sess_phantom_0001",
                                       "update": {"sessionUpdate": "state_update", "state": "idle"}})


class Session011(ReferenceAgent):
    """Tools work in the process's directory, not in the session's cwd."""

    def tool_update(self, session, turn, **fields):
        if "locations" in fields:
            fields["locations"] = [{"path": os.path.join(os.getcwd(), "README.md")}]
        super().tool_update(session, turn, **fields)


class Session001(ReferenceAgent):
    """Advertises capabilities.session but does not implement session/list (-32601)."""

    REQUESTS = {k: v for k, v in ReferenceAgent.REQUESTS.items() if k != "session/list"}


class Session002(ReferenceAgent):
    """The sessionId is derived from the cwd: two session/new in one directory get the same id."""

    def new_session_record(self, cwd):
        record = super().new_session_record(cwd)
        record["sessionId"] = "sess_" + hashlib.sha256(cwd.encode("utf-8")).hexdigest()[:32]
        return record


class Session003(ReferenceAgent):
    """session/new results carry ``availableCommands: null`` (an empty optional serialised as null)."""

    def respond(self, ctx, result):
        if ctx.method == "session/new" and isinstance(result, dict) and "sessionId" in result:
            result = dict(result, availableCommands=None)
        super().respond(ctx, result)


class Session012(ReferenceAgent):
    """Advertises session.systemPrompt (append only) and accepts any systemPrompt unchecked: an unknown
    mode, an unadvertised override and an unknown content type all create a session."""

    def capabilities(self):
        caps = super().capabilities()
        caps["session"]["systemPrompt"] = {}
        return caps

    def check_session_setup(self, params):
        params = dict(params)
        params.pop("systemPrompt", None)
        super().check_session_setup(params)


class Session009(ReferenceAgent):
    """Needs a login it never advertises: every session/new is answered -32000 (auth required) while the
    initialize result lists no authMethods, so a client has no way to authenticate."""

    def handle_session_new(self, ctx, params):
        self.respond_error(ctx, -32000, "Authentication required")


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "session-005": (("SESSION-005",), Session005),
    "session-008": (("SESSION-008",), Session008),
    "session-010": (("SESSION-010",), Session010),
    "session-011": (("SESSION-011",), Session011),
    "wire2-session-001": (("SESSION-001",), Session001),
    "wire2-session-002": (("SESSION-002",), Session002),
    "wire2-session-003": (("SESSION-003",), Session003),
    "wire2-session-012": (("SESSION-012",), Session012),
}

# flagged only as a warning or a note although the rule asks for more: not run by test_mutant_is_flagged_for_its_rule
UNFLAGGED: dict[str, tuple[tuple[str, ...], type]] = {
    # a MAY: the monitor's warning is read at the rule's level, a note (tests/test_suite_end_to_end.py
    # test_may_mutant_is_noted_not_failed)
    "session-009": (("SESSION-009",), Session009),
}
