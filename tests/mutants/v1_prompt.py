"""Mutants of the v1 reference agent breaking V1-PROMPT, V1-CANCEL and V1-PERM rules."""

import threading

from acp_conformance.reference.agent_v1 import V1ReferenceAgent


class V1BadStopReason(V1ReferenceAgent):
    def stop_reason(self, turn):
        return "done"


class V1LateUpdate(V1ReferenceAgent):
    def end_turn(self, turn):
        super().end_turn(turn)
        if not turn.cancelled.is_set():
            self.update(turn.session_id, {"sessionUpdate": "agent_message_chunk",
                                          "content": {"type": "text", "text": "one more thing"}})


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


class V1PermissionCancelledIgnored(V1ReferenceAgent):
    """A turn whose permission was answered cancelled ends end_turn."""

    def permission_tool(self, turn):
        super().permission_tool(turn)
        turn.cancelled = threading.Event()


MUTANTS = {
    "v1-bad-stop-reason": (("V1-PROMPT-001",), V1BadStopReason),
    "v1-late-update": (("V1-PROMPT-002",), V1LateUpdate),
    "v1-cancel-ends-turn-normally": (("V1-CANCEL-001", "V1-PERM-002"), V1CancelEndsTurnNormally),
    "v1-update-after-cancelled-response": (("V1-CANCEL-002",), V1UpdateAfterCancelledResponse),
    "v1-stale-cancel": (("V1-CANCEL-003",), V1StaleCancel),
    "v1-permission-cancelled-ignored": (("V1-PERM-002",), V1PermissionCancelledIgnored),
}
