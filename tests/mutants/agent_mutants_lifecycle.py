"""Broken variants of the reference agent for the lifecycle family (CLOSE, RESUME, STATE, PROMPT)."""

from __future__ import annotations

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from acp_conformance.reference.agent import INTERNAL_ERROR, InvalidParams, ReferenceAgent  # noqa: E402


class Close001(ReferenceAgent):
    """Closing an idle (known) session is answered with an internal error."""

    def handle_session_close(self, ctx, params):
        session = self.sessions.get(params.get("sessionId"))
        if session is not None and session.turn is None and not session.held:
            self.sessions.pop(session.id, None)
            session.closed = True
            self.respond_error(ctx, INTERNAL_ERROR, "Internal error")
            return
        super().handle_session_close(ctx, params)


class Close002(ReferenceAgent):
    """Answers session/close at once; the cancelled idle of the running work follows the response."""

    def deactivate(self, ctx, session, then):
        if session.turn is None or ctx.method != "session/close":
            return super().deactivate(ctx, session, then)
        self.cancel_held_prompts(session)
        then()
        self.cancel_turn(session.turn)


class Close003(ReferenceAgent):
    """After answering session/close it still sends an idle snapshot for the closed session."""

    def handle_session_close(self, ctx, params):
        sid = params.get("sessionId")
        known = isinstance(sid, str) and sid in self.sessions
        super().handle_session_close(ctx, params)
        if known and ctx.answered:
            self.notify("session/update", {"sessionId": sid, "update": {"sessionUpdate": "state_update",
                                                                           "state": "idle"}})


class Close004(ReferenceAgent):
    """Held prompts of a closed session are answered with -32603 instead of -32800."""

    def handle_session_close(self, ctx, params):
        session = self.sessions.get(params.get("sessionId"))
        if session is not None:
            while session.held:
                held_ctx, _prompt = session.held.popleft()
                self.inbound.pop((type(held_ctx.id).__name__, held_ctx.id), None)
                self.respond_error(held_ctx, INTERNAL_ERROR, "Internal error")
        super().handle_session_close(ctx, params)


class Resume007(ReferenceAgent):
    """An unsupported cursor type is replaced by a replay from the start (malformed ones stay -32602)."""

    @staticmethod
    def parse_replay_from(params):
        cursor = params.get("replayFrom")
        if isinstance(cursor, dict) and isinstance(cursor.get("type"), str):
            return True
        return ReferenceAgent.parse_replay_from(params)


class State007(ReferenceAgent):
    """Work that fails for its own reasons is reported as stopReason "cancelled"."""

    async def work_fail(self, session, turn):
        return "cancelled", None


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


class Prompt008(ReferenceAgent):
    """Rejects resource_link blocks with -32602."""

    def validate_block(self, block):
        if isinstance(block, dict) and block.get("type") == "resource_link":
            raise InvalidParams("resource_link is not supported")
        super().validate_block(block)


class Prompt009(ReferenceAgent):
    """Accepts (and inserts) content blocks of any type."""

    def validate_block(self, block):
        if isinstance(block, dict) and isinstance(block.get("type"), str) and block["type"].startswith("_"):
            return
        super().validate_block(block)


class Prompt015(ReferenceAgent):
    """Failed work ends with stopReason error but no error object."""

    def idle_update(self, stop_reason, error=None):
        return super().idle_update(stop_reason, None)


class State003(ReferenceAgent):
    """Never reports requires_action while waiting for a permission answer."""

    def report_requires_action(self, session):
        if session.turn is not None:
            session.turn.waiting_for_user = True

    def elicit_waiting(self, session):  # elicitations still report it (ELICIT-006 is not this mutant's rule)
        super().report_requires_action(session)


class Resume006(ReferenceAgent):
    """Replays the history on every resume, also without replayFrom (no marker then)."""

    def resume_sequence(self, session, replay):
        if not replay:
            self.replay_history(session)
        super().resume_sequence(session, replay)


class Prompt007(ReferenceAgent):
    """Replays user messages under fresh messageIds."""

    def history_update(self, entry):
        update = super().history_update(entry)
        if update is not None and update.get("sessionUpdate") == "user_message":
            update["messageId"] = update["messageId"] + "_replayed"
        return update


MUTANTS = {
    "close-001": (("CLOSE-001",), Close001),
    "close-002": (("CLOSE-002",), Close002),
    "close-003": (("CLOSE-003",), Close003),
    "close-004": (("CLOSE-004",), Close004),
    "resume-007": (("RESUME-007",), Resume007),
    "state-007": (("STATE-007",), State007),
    "cancel-005": (("CANCEL-005",), Cancel005),
    "prompt-007": (("PROMPT-007",), Prompt007),
    "prompt-008": (("PROMPT-008",), Prompt008),
    "prompt-009": (("PROMPT-009",), Prompt009),
    "prompt-015": (("PROMPT-015",), Prompt015),
    "state-003": (("STATE-003",), State003),
    "resume-006": (("RESUME-006",), Resume006),
}
