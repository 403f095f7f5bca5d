"""Mutants of the CLOSE rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

from acp_conformance.reference.agent import INTERNAL_ERROR, ReferenceAgent


class Close005(ReferenceAgent):
    """Closing an unknown session fails with -32603."""

    def close_unknown_session(self, ctx, session_id):
        self.respond_error(ctx, INTERNAL_ERROR, "No such session")


class Close001(ReferenceAgent):
    """Closing an idle (known) session is answered with an internal error."""

    def handle_session_close(self, ctx, params):
        session = self.sessions.get(params.get("sessionId"))
        if session is not None and session.turn is None and not session.held:
            self.sessions.pop(session.id, None)
            session.closed = True
            self.respond_error(ctx, INTERNAL_ERROR, "Internal error")
            return
        super().handle_session_close(ctx, params)


class Close002(ReferenceAgent):
    """Answers session/close at once; the cancelled idle of the running work follows the response."""

    def deactivate(self, ctx, session, then):
        if session.turn is None or ctx.method != "session/close":
            return super().deactivate(ctx, session, then)
        self.cancel_held_prompts(session)
        then()
        self.cancel_turn(session.turn)


class Close003(ReferenceAgent):
    """After answering session/close it still sends an idle snapshot for the closed session."""

    def handle_session_close(self, ctx, params):
        sid = params.get("sessionId")
        known = isinstance(sid, str) and sid in self.sessions
        super().handle_session_close(ctx, params)
        if known and ctx.answered:
            self.notify("session/update", {"sessionId": sid, "update": {"sessionUpdate": "state_update",
                                                                           "state": "idle"}})


class Close004(ReferenceAgent):
    """Held prompts of a closed session are answered with -32603 instead of -32800."""

    def handle_session_close(self, ctx, params):
        session = self.sessions.get(params.get("sessionId"))
        if session is not None:
            while session.held:
                held_ctx, _prompt = session.held.popleft()
                self.inbound.pop((type(held_ctx.id).__name__, held_ctx.id), None)
                self.respond_error(held_ctx, INTERNAL_ERROR, "Internal error")
        super().handle_session_close(ctx, params)


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "close-005": (("CLOSE-005", "ERR-001"), Close005),
    "close-001": (("CLOSE-001",), Close001),
    "close-002": (("CLOSE-002",), Close002),
    "close-003": (("CLOSE-003",), Close003),
    "close-004": (("CLOSE-004",), Close004),
}
