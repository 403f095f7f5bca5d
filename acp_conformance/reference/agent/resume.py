"""session/resume: activating a stored session on this connection and replaying its history."""

from __future__ import annotations

from .state import LiveSession
from .wire import Ctx, InvalidParams, SessionNotFound


class ResumeMixin:
    # -- session/resume --------------------------------------------------------------------------

    @staticmethod
    def parse_replay_from(params: dict) -> bool:
        """True: replay from the start; False: no replay. Anything else is -32602."""
        cursor = params.get("replayFrom")
        if cursor is None:
            return False
        if isinstance(cursor, dict) and cursor.get("type") == "start":
            return True
        raise InvalidParams("unsupported replayFrom cursor")

    def handle_session_resume(self, ctx: Ctx, params: dict) -> None:
        session_id = self.require_str(params, "sessionId")
        self.require_abs_path(params, "cwd")
        self.check_session_setup(params)
        replay = self.parse_replay_from(params)
        session = self.sessions.get(session_id)
        if session is None:
            record = self.store.load(session_id)
            if record is None:
                raise SessionNotFound(session_id)
            session = LiveSession(record)
            self.sessions[session_id] = session
        self.resume_sequence(session, replay)
        self.respond(ctx, self.resume_result(session))

    def resume_sequence(self, session: LiveSession, replay: bool) -> None:
        if replay:
            self.replay_history(session)
            self.replay_marker(session)
        self.resume_state_snapshot(session, replay)

    def replay_history(self, session: LiveSession) -> None:
        for entry in session.record.get("history", []):
            update = self.history_update(entry)
            if update is not None:
                self.send_update(session, update)

    @staticmethod
    def history_update(entry: dict) -> dict | None:
        kind = entry.get("kind")
        if kind in ("user_message", "agent_message"):
            return {"sessionUpdate": kind, "messageId": entry["messageId"], "content": entry.get("content") or []}
        if kind == "tool_call":
            update = {"sessionUpdate": "tool_call_update"}
            update.update({k: v for k, v in entry.items() if k != "kind"})
            return update
        return None

    def replay_marker(self, session: LiveSession) -> None:
        self.send_update(session, {"sessionUpdate": "replay_complete"})

    def current_state(self, session: LiveSession) -> str:
        if session.turn is None:
            return "idle"
        return "requires_action" if session.turn.waiting_for_user else "running"

    def resume_state_snapshot(self, session: LiveSession, replay: bool) -> None:
        self.send_update(session, {"sessionUpdate": "state_update", "state": self.current_state(session)})

    def resume_result(self, session: LiveSession) -> dict:
        return {"configOptions": self.config_options(session.record)}
