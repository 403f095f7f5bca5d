"""session/prompt: validation, held prompts, idempotency keys, and the turn that runs the work."""

from __future__ import annotations

import asyncio
import traceback
from typing import Any

from .state import LiveSession, Turn
from .wire import INTERNAL_ERROR, INVALID_PARAMS, REQUEST_CANCELLED, Ctx, InvalidParams, new_id, request_key


class PromptsMixin:
    # -- session/prompt ----------------------------------------------------------------------------

    def validate_block(self, block: Any) -> None:
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise InvalidParams("content blocks must be objects with a string type")
        kind = block["type"]
        if kind == "text":
            if not isinstance(block.get("text"), str):
                raise InvalidParams("text block without text")
        elif kind == "resource_link":
            if not isinstance(block.get("uri"), str) or not isinstance(block.get("name"), str):
                raise InvalidParams("resource_link needs uri and name")
            size = block.get("size")
            if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
                raise InvalidParams("resource_link size must be a non-negative integer")
        elif kind == "resource" and self.SUPPORTS_EMBEDDED_CONTEXT:
            resource = block.get("resource")
            if not isinstance(resource, dict) or not isinstance(resource.get("uri"), str):
                raise InvalidParams("resource block needs resource.uri")
            if not isinstance(resource.get("text"), str) and not isinstance(resource.get("blob"), str):
                raise InvalidParams("resource block needs resource.text or resource.blob")
        else:
            raise InvalidParams("unsupported content block type %r" % kind)

    def validate_prompt(self, prompt: list) -> None:
        if not prompt:
            raise InvalidParams("prompt must contain at least one content block")
        for block in prompt:
            self.validate_block(block)

    @staticmethod
    def prompt_text(prompt: list) -> str:
        return "\n".join(b["text"] for b in prompt if isinstance(b, dict) and b.get("type") == "text")

    def handle_session_prompt(self, ctx: Ctx, params: dict) -> None:
        session_id = self.require_str(params, "sessionId")
        prompt = params.get("prompt")
        if not isinstance(prompt, list):
            raise InvalidParams("prompt must be an array of content blocks")
        session = self.live_session(session_id)
        try:
            self.validate_prompt(prompt)
        except InvalidParams as e:
            self.reject_prompt(ctx, session, prompt, str(e))
            return
        key = params.get("idempotencyKey")
        if isinstance(key, str):
            ctx.idempotency_key = key
            if self.answer_retry(ctx, session, key):
                return
        if session.turn is not None or session.held:
            self.hold_prompt(ctx, session, prompt)
        else:
            self.insert_prompt(ctx, session, prompt)

    def reject_prompt(self, ctx: Ctx, session: LiveSession, prompt: list, reason: str) -> None:
        self.respond_error(ctx, INVALID_PARAMS, "Invalid params: %s" % reason)

    def hold_prompt(self, ctx: Ctx, session: LiveSession, prompt: list) -> None:
        session.held.append((ctx, prompt))
        if ctx.idempotency_key is not None:
            session.retries[ctx.idempotency_key] = []

        def cancel() -> None:  # $/cancel_request for a held prompt
            for item in list(session.held):
                if item[0] is ctx:
                    session.held.remove(item)
                    self.respond_error(ctx, REQUEST_CANCELLED, "Request cancelled")
                    self.settle_retries(session, ctx, None)

        self.inbound[request_key(ctx.id)] = cancel

    # -- idempotency keys --------------------------------------------------------------------------

    def keyed_message_ids(self, session: LiveSession) -> dict:
        """Idempotency key -> messageId of the submission it inserted (kept with the session)."""
        return session.record.setdefault("idempotencyKeys", {})

    def answer_retry(self, ctx: Ctx, session: LiveSession, key: str) -> bool:
        """A retry of a known submission: answer it with the original messageId (at once, or once the
        held original is inserted). False for a key not seen in this session."""
        message_id = self.keyed_message_ids(session).get(key)
        if isinstance(message_id, str):
            self.respond_prompt(ctx, session, message_id)
            return True
        waiting = session.retries.get(key)
        if waiting is None:
            return False
        waiting.append(ctx)

        def cancel() -> None:  # $/cancel_request for a waiting retry
            if ctx in waiting:
                waiting.remove(ctx)
                self.respond_error(ctx, REQUEST_CANCELLED, "Request cancelled")

        self.inbound[request_key(ctx.id)] = cancel
        return True

    def remember_key(self, ctx: Ctx, session: LiveSession, message_id: str) -> None:
        if ctx.idempotency_key is not None:
            self.keyed_message_ids(session)[ctx.idempotency_key] = message_id

    def settle_retries(self, session: LiveSession, ctx: Ctx, message_id: str | None) -> None:
        """Answer the retries that waited for the held submission ``ctx``: its messageId, or -32800 when
        it was cancelled before insertion."""
        if ctx.idempotency_key is None:
            return
        for retry in session.retries.pop(ctx.idempotency_key, []):
            self.inbound.pop(request_key(retry.id), None)
            if message_id is None:
                self.respond_error(retry, REQUEST_CANCELLED, "Request cancelled")
            else:
                self.respond_prompt(retry, session, message_id)

    def start_next_held(self, session: LiveSession) -> None:
        if session.held and not session.closed and self.sessions.get(session.id) is session:
            ctx, prompt = session.held.popleft()
            self.inbound.pop(request_key(ctx.id), None)
            self.guarded(ctx, self.insert_prompt, ctx, session, prompt)

    def new_user_message_id(self, session: LiveSession, prompt: list) -> str:
        return new_id("msg_")

    def new_agent_message_id(self, session: LiveSession) -> str:
        return new_id("msg_")

    def prompt_result(self, message_id: str) -> dict:
        return {"messageId": message_id}

    def record_user_message(self, session: LiveSession, message_id: str, prompt: list) -> None:
        session.record.setdefault("history", []).append(
            {"kind": "user_message", "messageId": message_id, "content": prompt}
        )
        if not session.record.get("title"):
            title = " ".join(self.prompt_text(prompt).split())[:60]
            session.record["title"] = title or None
        self.save(session)

    def emit_user_message(self, session: LiveSession, message_id: str, prompt: list) -> None:
        self.send_update(session, {"sessionUpdate": "user_message", "messageId": message_id, "content": prompt})

    def respond_prompt(self, ctx: Ctx, session: LiveSession, message_id: str) -> None:
        self.respond(ctx, self.prompt_result(message_id))

    def insert_prompt(self, ctx: Ctx, session: LiveSession, prompt: list) -> None:
        message_id = self.new_user_message_id(session, prompt)
        self.remember_key(ctx, session, message_id)  # saved with the user message
        self.record_user_message(session, message_id, prompt)
        self.emit_user_message(session, message_id, prompt)
        self.respond_prompt(ctx, session, message_id)
        self.settle_retries(session, ctx, message_id)
        self.start_work(ctx, session, message_id, prompt)

    def start_work(self, ctx: Ctx, session: LiveSession, message_id: str, prompt: list) -> None:
        turn = Turn(ctx, message_id, prompt, self.prompt_text(prompt))
        turn.done = self.loop.create_future()
        session.turn = turn
        self.report_running(session)
        turn.task = self.loop.create_task(self.run_turn(session, turn))

    def report_running(self, session: LiveSession) -> None:
        if session.turn is not None:
            session.turn.waiting_for_user = False
        self.send_update(session, {"sessionUpdate": "state_update", "state": "running"})

    def report_requires_action(self, session: LiveSession) -> None:
        if session.turn is not None:
            session.turn.waiting_for_user = True
        self.send_update(session, {"sessionUpdate": "state_update", "state": "requires_action"})

    def idle_update(self, stop_reason: str | None, error: dict | None = None) -> dict:
        update: dict = {"sessionUpdate": "state_update", "state": "idle", "stopReason": stop_reason}
        if error is not None:
            update["error"] = error
        return update

    def finish_work(self, session: LiveSession, turn: Turn, stop_reason: str, error: dict | None) -> None:
        self.send_update(session, self.idle_update(stop_reason, error))

    async def run_turn(self, session: LiveSession, turn: Turn) -> None:
        turn.started = True
        stop_reason, error = "end_turn", None
        try:
            if turn.cancel_requested:  # cancelled before the task got to run
                raise asyncio.CancelledError()
            stop_reason, error = await self.do_work(session, turn)
        except asyncio.CancelledError:
            stop_reason, error = self.cancelled_stop_reason(), None
            self.on_work_cancelled(session, turn)
        except Exception:
            self.log("work failed:\n%s" % traceback.format_exc())
            stop_reason, error = "error", {"code": INTERNAL_ERROR, "message": "Internal error while working"}
        self.record_agent_message(session, turn)
        session.turn = None
        self.finish_work(session, turn, stop_reason, error)
        if turn.done is not None and not turn.done.done():
            turn.done.set_result(stop_reason)
        self.start_next_held(session)
