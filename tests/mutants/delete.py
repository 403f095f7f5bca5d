"""Mutants of the DELETE rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

from acp_conformance.reference.agent import ReferenceAgent


class Delete001(ReferenceAgent):
    """session/delete answers {} but keeps the session on disk (listed and resumable)."""

    def handle_session_delete(self, ctx, params):
        session_id = self.require_str(params, "sessionId")
        self.sessions.pop(session_id, None)
        self.respond(ctx, {})


class Delete002(ReferenceAgent):
    """Deleting a session that does not exist is an error."""

    def handle_session_delete(self, ctx, params):
        sid = params.get("sessionId")
        if sid not in self.sessions and self.store.load(sid) is None:
            self.respond_error(ctx, -32002, "Session not found", {"sessionId": sid})
            return
        super().handle_session_delete(ctx, params)


class Delete003(ReferenceAgent):
    """Does not advertise session.delete but serves session/delete anyway (success).

    ERR-005 judges every unadvertised capability-gated method and fails it too (the same frame).
    (The DELETE-003 check once only warned, following the catalog's check text.)"""

    def capabilities(self):
        caps = super().capabilities()
        caps["session"].pop("delete", None)
        return caps


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "delete-001": (("DELETE-001", "DELETE-004"), Delete001),
    "delete-002": (("DELETE-002",), Delete002),
    "wire2-delete-003": (("DELETE-003", "ERR-005"), Delete003),  # ERR-005 judges every unadvertised gated method
}
