"""Mutants of the v1 reference agent (acp_conformance/reference/agent_v1.py) breaking V1-PROMPT rules."""


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


MUTANTS = {
    "v1-bad-stop-reason": (("V1-PROMPT-001",), V1BadStopReason),
    "v1-late-update": (("V1-PROMPT-002",), V1LateUpdate),
}
