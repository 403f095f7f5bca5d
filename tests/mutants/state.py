"""Mutants of the STATE rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

from acp_conformance.reference.agent import ReferenceAgent


class State005(ReferenceAgent):
    """Running snapshots leave out the background list the agent reported before."""

    def send_update(self, session, update):
        if update.get("sessionUpdate") == "state_update" and update.get("state") == "running":
            if not session.closed:
                self.notify("session/update", {"sessionId": session.id, "update": update})
            return
        super().send_update(session, update)


class State006(ReferenceAgent):
    """A finished background terminal is dropped from the snapshot before its exitStatus is reported."""

    def end_background_terminal(self, session, terminal_id, exit_status):
        if session.bg_terminals.pop(terminal_id, None) is None:
            return
        session.background = [i for i in session.background or [] if i.get("terminalId") != terminal_id]
        self.send_update(session, {"sessionUpdate": "state_update", "state": self.current_state(session)})
        self.send_update(session, {"sessionUpdate": "terminal_update", "terminalId": terminal_id,
                                   "exitStatus": exit_status, "capabilities": {"cancel": None}})


class State007(ReferenceAgent):
    """Work that fails for its own reasons is reported as stopReason "cancelled"."""

    async def work_fail(self, session, turn):
        return "cancelled", None


class State003(ReferenceAgent):
    """Never reports requires_action while waiting for a permission answer."""

    def report_requires_action(self, session):
        if session.turn is not None:
            session.turn.waiting_for_user = True

    def elicit_waiting(self, session):  # elicitations still report it (ELICIT-006 is not this mutant's rule)
        super().report_requires_action(session)


class State001(ReferenceAgent):
    """Reports a non-standard state "working" right after every running. A `_`-prefixed custom state
    is only noted, so the value STATE-001 fails is an unknown non-`_` one, which EXT-005 forbids too."""

    def report_running(self, session):
        super().report_running(session)
        self.send_update(session, {"sessionUpdate": "state_update", "state": "working"})


class State002(ReferenceAgent):
    """Reads the answer to its permission request but the work never learns of it: after
    requires_action nothing follows, neither running nor idle. The monitor fails STATE-002 only when
    no running/idle follows at all, so the turn never ends and PROMPT-012 (no idle) fails too."""

    def send_request(self, method, params):
        request_id, future = super().send_request(method, params)
        if method == "session/request_permission":
            return request_id, self.loop.create_future()  # never resolved; the real one is in pending_out
        return request_id, future


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "state-005": (("STATE-005",), State005),
    "state-006": (("STATE-006",), State006),
    "state-007": (("STATE-007",), State007),
    "state-003": (("STATE-003",), State003),
    "state-001": (("STATE-001", "EXT-005"), State001),
    "state-002": (("STATE-002", "PROMPT-012"), State002),
}
