"""Broken variants of the reference agent for the rules issue 17 made reachable (CANCEL-007, RESUME-013)."""

from __future__ import annotations

import asyncio
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


class Resume013(ReferenceAgent):
    """A replay that pauses after its first history update and serves other requests meanwhile, without
    holding their updates: a prompt written after session/resume reports running before replay_complete."""

    def handle_session_resume(self, ctx, params):
        session = self.sessions.get(params.get("sessionId")) if isinstance(params.get("sessionId"), str) else None
        if session is None or not session.record.get("history") or params.get("replayFrom") is None:
            return super().handle_session_resume(ctx, params)
        self.require_abs_path(params, "cwd")
        self.check_session_setup(params)
        self.parse_replay_from(params)
        history = [u for u in map(self.history_update, session.record.get("history", [])) if u is not None]
        if not history:
            return super().handle_session_resume(ctx, params)
        self.send_update(session, history[0])  # the replay has begun before the next line is read

        async def replay():
            await asyncio.sleep(0.5)  # the mutant's own pacing: the prompt is served meanwhile
            for update in history[1:]:
                self.send_update(session, update)
            self.replay_marker(session)
            self.resume_state_snapshot(session, True)
            self.respond(ctx, self.resume_result(session))

        self.spawn(replay(), ctx)


MUTANTS = {
    "cancel-007": (("CANCEL-007",), Cancel007),
    "resume-013": (("RESUME-013",), Resume013),
}
