"""session/new, session/list, session/close, session/delete and the parameter checks they share."""

from __future__ import annotations

import os
import re
from typing import Any

from .state import LiveSession
from .wire import RESOURCE_NOT_FOUND, Ctx, InvalidParams, SessionNotFound, new_id, now_rfc3339

PAGE_SIZE = 50
_CURSOR = re.compile(r"offset-([1-9][0-9]{0,8})")


class SessionsMixin:
    # -- parameter helpers ---------------------------------------------------------------------

    @staticmethod
    def require_str(params: dict, key: str) -> str:
        value = params.get(key)
        if not isinstance(value, str):
            raise InvalidParams("%s must be a string" % key)
        return value

    @staticmethod
    def require_abs_path(params: dict, key: str) -> str:
        value = params.get(key)
        if not isinstance(value, str) or not os.path.isabs(value):
            raise InvalidParams("%s must be an absolute path" % key)
        return value

    def check_session_setup(self, params: dict) -> None:
        """mcpServers / additionalDirectories / systemPrompt: nothing of it is advertised."""
        servers = params.get("mcpServers")
        if servers is not None:
            if not isinstance(servers, list):
                raise InvalidParams("mcpServers must be an array")
            if servers:
                raise InvalidParams("MCP servers are not supported (no MCP transport advertised)")
        dirs = params.get("additionalDirectories")
        if dirs is not None:
            if not isinstance(dirs, list):
                raise InvalidParams("additionalDirectories must be an array")
            if dirs:
                raise InvalidParams("additionalDirectories is not supported")
        if params.get("systemPrompt") is not None:
            raise InvalidParams("systemPrompt is not supported")

    def live_session(self, session_id: str) -> LiveSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise SessionNotFound(session_id)
        return session

    def error_unknown_session(self, ctx: Ctx, session_id: str) -> None:
        self.respond_error(ctx, RESOURCE_NOT_FOUND, "Session not found", {"sessionId": session_id})

    def save(self, session: LiveSession) -> None:
        session.record["updatedAt"] = now_rfc3339()
        try:
            self.store.save(session.record)
        except OSError as e:
            self.log("cannot persist session %s: %s" % (session.id, e))

    # -- session/new, list, delete ---------------------------------------------------------------

    def new_session_record(self, cwd: str) -> dict:
        return {
            "sessionId": new_id("sess_"),
            "cwd": cwd,
            "title": None,
            "createdAt": now_rfc3339(),
            "updatedAt": now_rfc3339(),
            "config": self.default_config(),
            "history": [],
        }

    def handle_session_new(self, ctx: Ctx, params: dict) -> None:
        cwd = self.require_abs_path(params, "cwd")
        self.check_session_setup(params)
        session = LiveSession(self.new_session_record(cwd))
        self.save(session)
        self.sessions[session.id] = session
        self.respond(ctx, self.new_session_result(session))

    def new_session_result(self, session: LiveSession) -> dict:
        return {"sessionId": session.id, "configOptions": self.config_options(session.record)}

    @staticmethod
    def encode_cursor(offset: int) -> str:
        return "offset-%d" % offset

    @staticmethod
    def decode_cursor(cursor: Any) -> int:
        if cursor is None:
            return 0
        match = _CURSOR.fullmatch(cursor) if isinstance(cursor, str) else None
        if match is None:
            raise InvalidParams("invalid cursor")
        return int(match.group(1))

    def session_info(self, record: dict) -> dict:
        info = {"sessionId": record["sessionId"], "cwd": record["cwd"]}
        if record.get("title"):
            info["title"] = record["title"]
        if record.get("updatedAt"):
            info["updatedAt"] = record["updatedAt"]
        return info

    def handle_session_list(self, ctx: Ctx, params: dict) -> None:
        cwd = params.get("cwd")
        if cwd is not None and (not isinstance(cwd, str) or not os.path.isabs(cwd)):
            raise InvalidParams("cwd must be an absolute path")
        offset = self.decode_cursor(params.get("cursor"))
        records = self.store.all()
        if cwd is not None:
            wanted = os.path.normpath(cwd)
            records = [r for r in records if isinstance(r.get("cwd"), str) and os.path.normpath(r["cwd"]) == wanted]
        records.sort(key=lambda r: (str(r.get("updatedAt") or ""), r["sessionId"]), reverse=True)
        if offset > len(records):
            raise InvalidParams("invalid cursor")
        page = records[offset : offset + PAGE_SIZE]
        result: dict = {"sessions": [self.session_info(r) for r in page]}
        if offset + PAGE_SIZE < len(records):
            result["nextCursor"] = self.encode_cursor(offset + PAGE_SIZE)
        self.respond(ctx, result)

    def handle_session_delete(self, ctx: Ctx, params: dict) -> None:
        session_id = self.require_str(params, "sessionId")
        session = self.sessions.pop(session_id, None)

        def finish() -> None:
            self.store.delete(session_id)
            self.respond(ctx, {})

        if session is None:
            finish()
        else:
            self.deactivate(ctx, session, finish)

    # -- session/close ---------------------------------------------------------------------------

    def close_unknown_session(self, ctx: Ctx, session_id: str) -> None:
        self.respond(ctx, {})

    def handle_session_close(self, ctx: Ctx, params: dict) -> None:
        session_id = self.require_str(params, "sessionId")
        session = self.sessions.pop(session_id, None)  # inactive for every later request
        if session is None:
            self.close_unknown_session(ctx, session_id)
            return
        self.deactivate(ctx, session, lambda: self.respond(ctx, {}))

    def deactivate(self, ctx: Ctx, session: LiveSession, then) -> None:
        """Cancel held prompts and running work (cancelled idle first), then mark closed and call then()."""
        self.cancel_held_prompts(session)
        turn = session.turn

        def finish() -> None:
            session.closed = True
            then()

        if turn is None:
            finish()
            return
        self.cancel_turn(turn)

        async def wait_then_finish():
            await turn.done
            self.guarded(ctx, finish)

        self.spawn(wait_then_finish(), ctx)
