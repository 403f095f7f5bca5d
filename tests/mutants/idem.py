"""Mutants of the IDEM rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

from acp_conformance.reference.agent import ReferenceAgent, new_id


def _inserted(agent, session, key):
    """The messageId the key inserted in this session, or None."""
    mid = agent.keyed_message_ids(session).get(key)
    return mid if isinstance(mid, str) else None


class Idem001(ReferenceAgent):
    """A retry of an inserted submission is answered with a fresh messageId (nothing inserted, no work)."""

    def answer_retry(self, ctx, session, key):
        if _inserted(self, session, key) is None:
            return super().answer_retry(ctx, session, key)
        self.respond_prompt(ctx, session, new_id("msg_"))
        return True


class Idem002(ReferenceAgent):
    """A retry inserts the user message a second time (a new user_message) though it is answered with the
    original messageId and runs no work."""

    def answer_retry(self, ctx, session, key):
        mid = _inserted(self, session, key)
        if mid is None:
            return super().answer_retry(ctx, session, key)
        content = next((e.get("content") for e in session.record.get("history", [])
                        if e.get("kind") == "user_message" and e.get("messageId") == mid), [])
        again = new_id("msg_")
        self.record_user_message(session, again, content)
        self.emit_user_message(session, again, content)
        self.respond_prompt(ctx, session, mid)
        return True


class Idem003(ReferenceAgent):
    """A retry after the turn ended is answered with the original messageId and inserts nothing, but runs
    the submission's work again."""

    def answer_retry(self, ctx, session, key):
        mid = _inserted(self, session, key)
        if mid is None or session.turn is not None or session.held:
            return super().answer_retry(ctx, session, key)
        content = next((e.get("content") for e in session.record.get("history", [])
                        if e.get("kind") == "user_message" and e.get("messageId") == mid), [])
        self.respond_prompt(ctx, session, mid)
        self.start_work(ctx, session, mid, content)
        return True


class BaseOnly(ReferenceAgent):
    """An agent of ACP v2 as released (an SDK without the Preview's additions, like the TypeScript SDK 2.4.0):
    it ignores session/prompt's idempotencyKey (every attempt is a new submission) and never sends
    replay_complete. Otherwise correct: CONFORMANT under --acp-revision base, and under preview NOT
    CONFORMANT for exactly the Preview rules it misses (tests/test_revisions.py)."""

    def answer_retry(self, ctx, session, key):
        return False

    def replay_marker(self, session):
        pass


class ForgetsKeysAcrossRestart(ReferenceAgent):
    """Keeps idempotency keys in memory only (the session and its history are on disk): a retry after a restart
    is a new submission, inserted a second time under the same key. Reached by the fault scenarios (--acp-faults)."""

    SUITE_OPTIONS = ("--acp-faults",)

    def keyed_message_ids(self, session):
        if not hasattr(self, "_keys_in_memory"):
            self._keys_in_memory = {}
        return self._keys_in_memory.setdefault(session.id, {})


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "base-only": (("IDEM-001", "IDEM-002", "IDEM-003", "RESUME-002"), BaseOnly),
    "idem-001": (("IDEM-001",), Idem001),
    "idem-002": (("IDEM-002",), Idem002),
    "idem-003": (("IDEM-003",), Idem003),
    "fault-forgets-keys-across-restart": (("IDEM-005",), ForgetsKeysAcrossRestart),
}
