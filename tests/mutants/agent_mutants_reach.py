"""Broken variants of the reference agent for the rules issue 17 made reachable (CANCEL-007, RESUME-013)."""

from __future__ import annotations

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from acp_conformance.reference.agent import ReferenceAgent  # noqa: E402


class Cancel007(ReferenceAgent):
    """Cancelled while waiting for a permission answer it withdraws the request, but a late "allow" still
    runs the tool: running, the tool call in_progress and completed, idle end_turn."""

    def on_work_cancelled(self, session, turn):
        abandoned = self.__dict__.setdefault("_abandoned", {})
        for request_id in turn.pending_requests:
            abandoned[request_id] = (session, turn)
        super().on_work_cancelled(session, turn)

    def handle_response(self, msg):
        late = self.__dict__.get("_abandoned", {}).pop(msg.get("id"), None)
        if late is None or not self.permission_approved(("result", msg.get("result"))):
            return super().handle_response(msg)
        session, turn = late
        self.report_running(session)
        self.tool_update(session, turn, status="in_progress")
        self.tool_update(session, turn, status="completed")
        self.send_update(session, self.idle_update("end_turn"))


MUTANTS = {
    "cancel-007": (("CANCEL-007",), Cancel007),
}
