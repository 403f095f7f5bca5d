"""Cancellation: session/cancel, $/cancel_request, tool_call/cancel and terminal/cancel."""

from __future__ import annotations

from .state import LiveSession, Turn
from .wire import FINAL_TOOL_STATUSES, REQUEST_CANCELLED, Ctx, InvalidParams, request_key


class CancellationMixin:
    # -- tool_call/cancel, terminal/cancel ---------------------------------------------------------

    def handle_tool_call_cancel(self, ctx: Ctx, params: dict) -> None:
        session_id = self.require_str(params, "sessionId")
        tool_call_id = self.require_str(params, "toolCallId")
        session = self.live_session(session_id)
        turn = session.turn
        tool = turn.tool if turn is not None else None
        if (tool is None or tool.get("toolCallId") != tool_call_id or tool.get("status") in FINAL_TOOL_STATUSES
                or (tool.get("capabilities") or {}).get("cancel") is None or turn.stop_tool is None):
            raise InvalidParams("unknown, final or non-cancellable tool call")
        self.accept_tool_cancel(ctx, turn)

    def accept_tool_cancel(self, ctx: Ctx, turn: Turn) -> None:
        """Acknowledge first; the work then reports the final status (work_cancellable)."""
        self.respond(ctx, {})
        if not turn.stop_tool.done():
            turn.stop_tool.set_result(True)

    def handle_terminal_cancel(self, ctx: Ctx, params: dict) -> None:
        session_id = self.require_str(params, "sessionId")
        terminal_id = self.require_str(params, "terminalId")
        session = self.live_session(session_id)
        bg = session.bg_terminals.get(terminal_id)
        if bg is not None:
            self.respond(ctx, {})
            if not bg["stop"].done():
                bg["stop"].set_result(True)
            return
        turn = session.turn
        term = turn.terminal if turn is not None else None
        if (term is None or term.get("terminalId") != terminal_id or term.get("exitStatus") is not None
                or (term.get("capabilities") or {}).get("cancel") is None or turn.stop_terminal is None):
            raise InvalidParams("unknown, exited or non-cancellable terminal")
        self.accept_terminal_cancel(ctx, turn)

    def accept_terminal_cancel(self, ctx: Ctx, turn: Turn) -> None:
        self.respond(ctx, {})
        if not turn.stop_terminal.done():
            turn.stop_terminal.set_result(True)

    # -- cancellation --------------------------------------------------------------------------

    def handle_session_cancel(self, params: dict) -> None:
        session_id = params.get("sessionId")
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            return  # unknown or inactive session: a notification is never answered
        self.cancel_held_prompts(session)
        if session.turn is not None:
            self.cancel_turn(session.turn)

    def handle_cancel_request(self, params: dict) -> None:
        request_id = params.get("requestId")
        if not self._valid_id(request_id):
            return
        callback = self.inbound.pop(request_key(request_id), None)
        if callback is not None:
            callback()  # otherwise: unknown or already answered, ignored

    def cancel_held_prompts(self, session: LiveSession) -> None:
        while session.held:
            ctx, _prompt = session.held.popleft()
            self.inbound.pop(request_key(ctx.id), None)
            self.respond_error(ctx, REQUEST_CANCELLED, "Request cancelled")
            self.settle_retries(session, ctx, None)

    def cancel_turn(self, turn: Turn) -> None:
        if turn.cancel_requested:
            return
        turn.cancel_requested = True
        if turn.started and turn.task is not None and not turn.task.done():
            turn.task.cancel()

    def cancelled_stop_reason(self) -> str:
        return "cancelled"

    def on_work_cancelled(self, session: LiveSession, turn: Turn) -> None:
        """Abandon pending permission requests and cancel an unfinished tool call."""
        for request_id in list(turn.pending_requests):
            self.abandon_request(request_id)
        turn.pending_requests.clear()
        if turn.tool is not None and turn.tool.get("status") not in FINAL_TOOL_STATUSES:
            if (turn.tool.get("capabilities") or {}).get("cancel") is not None:  # withdraw it (TOOL-009)
                self.tool_update(session, turn, status="cancelled", capabilities={"cancel": None})
            else:
                self.tool_update(session, turn, status="cancelled")
