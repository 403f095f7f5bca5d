"""Mutants of the v1 reference agent (acp_conformance/reference/agent_v1.py) breaking V1-CANCEL rules."""


from acp_conformance.reference.agent_v1 import V1ReferenceAgent


class V1CancelEndsTurnNormally(V1ReferenceAgent):
    def stop_reason(self, turn):
        return "end_turn"


class V1UpdateAfterCancelledResponse(V1ReferenceAgent):
    def end_turn(self, turn):
        super().end_turn(turn)
        if turn.cancelled.is_set():
            self.update(turn.session_id, {"sessionUpdate": "agent_message_chunk",
                                          "content": {"type": "text", "text": "late"}})


class V1StaleCancel(V1ReferenceAgent):
    """Keeps a cancel that found no turn and applies it to the next one."""

    def on_session_cancel(self, params):
        sid = params.get("sessionId")
        if sid not in self.turns:
            self.stale = getattr(self, "stale", set()) | {sid}
        super().on_session_cancel(params)

    def on_session_prompt(self, params, rid):
        super().on_session_prompt(params, rid)
        sid = params.get("sessionId")
        if sid in getattr(self, "stale", set()):
            self.stale.discard(sid)
            self.turns[sid].cancelled.set()


MUTANTS = {
    "v1-cancel-ends-turn-normally": (("V1-CANCEL-001", "V1-PERM-002"), V1CancelEndsTurnNormally),
    "v1-update-after-cancelled-response": (("V1-CANCEL-002",), V1UpdateAfterCancelledResponse),
    "v1-stale-cancel": (("V1-CANCEL-003",), V1StaleCancel),
}


class V1DropsCancelledRequest(V1ReferenceAgent):
    """Stops a turn named by $/cancel_request and never answers its session/prompt."""

    def on_dollar_cancel_request(self, params):
        super().on_dollar_cancel_request(params)
        self.dropped = getattr(self, "dropped", set()) | {params.get("requestId")}

    def end_turn(self, turn):
        if turn.id in getattr(self, "dropped", set()):
            self.turns.pop(turn.session_id, None)
            return
        super().end_turn(turn)


# the dropped prompt is never answered, not even after the session/cancel that follows
MUTANTS["v1-drops-cancelled-request"] = (("V1-CANCEL-004", "V1-CANCEL-001"), V1DropsCancelledRequest)
