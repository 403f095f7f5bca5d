"""Broken variants of the reference agent for background work (STATE-005, STATE-006, CANCEL-010)."""

from __future__ import annotations

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from acp_conformance.reference.agent import ReferenceAgent  # noqa: E402


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


class Cancel010(ReferenceAgent):
    """session/cancel also kills the listed background terminals."""

    def handle_session_cancel(self, params):
        session = self.sessions.get(params.get("sessionId")) if isinstance(params.get("sessionId"), str) else None
        if session is not None:
            for terminal_id in list(session.bg_terminals):
                self.end_background_terminal(session, terminal_id, {"exitCode": None, "signal": "SIGTERM"})
        super().handle_session_cancel(params)


MUTANTS = {
    "state-005": (("STATE-005",), State005),
    "state-006": (("STATE-006",), State006),
    "cancel-010": (("CANCEL-010",), Cancel010),
}
