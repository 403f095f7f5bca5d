"""Mutants of the CANCEL rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

import asyncio

from acp_conformance.reference.agent import (
    FINAL_TOOL_STATUSES,
    INTERNAL_ERROR,
    REQUEST_CANCELLED,
    ReferenceAgent,
    request_key,
)


class Cancel001(ReferenceAgent):
    """After session/cancel the idle update says end_turn."""

    def cancelled_stop_reason(self):
        return "end_turn"


class Cancel002(ReferenceAgent):
    """Cancellation surfaces as a failure: an idle with stopReason error, then the cancelled idle."""

    def finish_work(self, session, turn, stop_reason, error):
        if stop_reason == "cancelled":
            self.send_update(session, self.idle_update("error", {"code": INTERNAL_ERROR, "message": "Aborted"}))
        super().finish_work(session, turn, stop_reason, error)


class Cancel003(ReferenceAgent):
    """A chunk of the cancelled work arrives after the cancelled idle."""

    def finish_work(self, session, turn, stop_reason, error):
        super().finish_work(session, turn, stop_reason, error)
        if stop_reason == "cancelled":
            if turn.agent_message_id is None:
                turn.agent_message_id = self.new_agent_message_id(session)
            self.send_update(
                session,
                {
                    "sessionUpdate": "agent_message_chunk",
                    "messageId": turn.agent_message_id,
                    "content": {"type": "text", "text": " (late)"},
                },
            )


class Cancel010(ReferenceAgent):
    """session/cancel also kills the listed background terminals."""

    def handle_session_cancel(self, params):
        session = self.sessions.get(params.get("sessionId")) if isinstance(params.get("sessionId"), str) else None
        if session is not None:
            for terminal_id in list(session.bg_terminals):
                self.end_background_terminal(session, terminal_id, {"exitCode": None, "signal": "SIGTERM"})
        super().handle_session_cancel(params)


class Cancel005(ReferenceAgent):
    """Abandons pending permission requests on cancel without telling the client ($/cancel_request)."""

    def send_request(self, method, params):
        request_id, future = super().send_request(method, params)
        if method == "session/request_permission":
            self.__dict__.setdefault("_permission_ids", set()).add(request_id)
        return request_id, future

    def abandon_request(self, request_id):
        if request_id not in self.__dict__.get("_permission_ids", ()):
            return super().abandon_request(request_id)
        future = self.pending_out.pop(request_id, None)
        if future is not None and not future.done():
            future.cancel()


class Cancel004(ReferenceAgent):
    """Cancelled while waiting for a permission answer, it withdraws the request ($/cancel_request)
    but treats the permission as granted: the tool call reports ``completed`` before the cancelled idle."""

    def on_work_cancelled(self, session, turn):
        if not turn.pending_requests:
            return super().on_work_cancelled(session, turn)
        for request_id in list(turn.pending_requests):
            self.abandon_request(request_id)
        turn.pending_requests.clear()
        if turn.tool is not None and turn.tool.get("status") not in FINAL_TOOL_STATUSES:
            self.tool_update(session, turn, status="completed")


class Cancel009(ReferenceAgent):
    """A prompt held when its session is cancelled is answered -32800 twice. Exactly one response is
    also ERR-004's rule, so the same frame fails it too (any count but one breaks both)."""

    def cancel_held_prompts(self, session):
        while session.held:
            ctx, _prompt = session.held.popleft()
            self.inbound.pop(request_key(ctx.id), None)
            self.respond_error(ctx, REQUEST_CANCELLED, "Request cancelled")
            self.write_line({"jsonrpc": "2.0", "id": ctx.id,
                             "error": {"code": REQUEST_CANCELLED, "message": "Request cancelled"}})


class Cancel011(ReferenceAgent):
    """A session whose last turn ended with idle "cancelled" refuses every later prompt with -32603."""

    def finish_work(self, session, turn, stop_reason, error):
        if stop_reason == "cancelled":
            self.__dict__.setdefault("_poisoned", set()).add(session.id)
        super().finish_work(session, turn, stop_reason, error)

    def insert_prompt(self, ctx, session, prompt):
        if session.id in self.__dict__.get("_poisoned", ()):
            self.respond_error(ctx, INTERNAL_ERROR, "Internal error: the session was cancelled")
            return
        super().insert_prompt(ctx, session, prompt)


class Cancel012(ReferenceAgent):
    """A held prompt named by $/cancel_request is answered -32800 twice. Exactly one response is also
    ERR-004's rule, so the same frame fails it too (any count but one breaks both)."""

    def hold_prompt(self, ctx, session, prompt):
        super().hold_prompt(ctx, session, prompt)
        cancel = self.inbound.get(request_key(ctx.id))

        def cancel_twice():
            cancel()
            self.write_line({"jsonrpc": "2.0", "id": ctx.id,
                             "error": {"code": REQUEST_CANCELLED, "message": "Request cancelled"}})

        self.inbound[request_key(ctx.id)] = cancel_twice


class Cancel013(ReferenceAgent):
    """Answers a $/cancel_request for an id it has nothing pending for (already answered, or never
    used) with -32800 under that id. The answer is a second response to an answered request, or a
    response to no request: ERR-004 judges the same frame."""

    def handle_cancel_request(self, params):
        request_id = params.get("requestId")
        if self._valid_id(request_id) and request_key(request_id) not in self.inbound:
            self.write_line({"jsonrpc": "2.0", "id": request_id,
                             "error": {"code": REQUEST_CANCELLED, "message": "Request cancelled"}})
            return
        super().handle_cancel_request(params)


class Cancel014(ReferenceAgent):
    """Before answering the held prompts of a cancelled (or closed) session with -32800, it sends
    $/cancel_request naming their ids: requests of the client, not of the agent (mixed id spaces).
    No scenario is bound to CANCEL-014 yet: the whole suite runs, and cancel-with-held-prompt,
    cancel-request-for-pending-prompts and close-running-session flag it."""

    def cancel_held_prompts(self, session):
        for ctx, _prompt in list(session.held):
            self.notify("$/cancel_request", {"requestId": ctx.id})
        super().cancel_held_prompts(session)


class Cancel006(ReferenceAgent):
    """Reads session/cancel only after the step it is in: the work goes on for 2.5 s before it stops with
    the cancelled idle. Judged with ``SUITE_OPTIONS`` (a 1 s threshold instead of the default 10 s), so the
    mutant is slow by a lower bound that load cannot shrink, yet the test is not held for 10 s per cancel."""

    LAG = 2.5
    SUITE_OPTIONS = ("--acp-cancel-warn-after=1",)

    def handle_session_cancel(self, params):
        self.loop.call_later(self.LAG, super().handle_session_cancel, params)


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


# a defect in every exchange, after acp-tck's v2 fixture cancel_wrong_stop_reason: the suite names it in one sentence and the
# whole run still ends in seconds (bench/bench_systemic.py times it)
class CancelHangEndTurn(ReferenceAgent):
    """Every prompt runs until session/cancel (a long turn, legal), and a cancelled turn ends 1.2 s later with
    stopReason "end_turn" instead of "cancelled". A session/close or delete still ends the turn "cancelled"."""

    def handle_session_cancel(self, params):
        session = self.sessions.get(params.get("sessionId")) if isinstance(params.get("sessionId"), str) else None
        if session is not None and session.turn is not None:
            session.turn.by_session_cancel = True
        super().handle_session_cancel(params)

    async def do_work(self, session, turn):
        try:
            await asyncio.get_running_loop().create_future()  # until cancelled
        except asyncio.CancelledError:
            if not getattr(turn, "by_session_cancel", False):
                raise
            await asyncio.sleep(1.2)
            return "end_turn", None
        return "end_turn", None  # pragma: no cover - the future above never completes


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "cancel-001": (("CANCEL-001",), Cancel001),
    "cancel-002": (("CANCEL-002",), Cancel002),
    "cancel-003": (("CANCEL-003",), Cancel003),
    "cancel-010": (("CANCEL-010",), Cancel010),
    "cancel-005": (("CANCEL-005",), Cancel005),
    "cancel-004": (("CANCEL-004",), Cancel004),
    "cancel-009": (("CANCEL-009", "ERR-004"), Cancel009),
    "cancel-011": (("CANCEL-011",), Cancel011),
    "cancel-012": (("CANCEL-012", "ERR-004"), Cancel012),
    "cancel-013": (("CANCEL-013", "ERR-004"), Cancel013),
    "cancel-014": (("CANCEL-014",), Cancel014),
    "cancel-006": (("CANCEL-006",), Cancel006),
    "cancel-007": (("CANCEL-007",), Cancel007),
    # PROMPT-012 too: the turn of a prompt held behind a cancelled one never ends either
    "cancel-wrong-stop-reason": (("CANCEL-001", "PROMPT-012"), CancelHangEndTurn),
}
