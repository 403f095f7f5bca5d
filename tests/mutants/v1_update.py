"""Mutants of the v1 reference agent (acp_conformance/reference/agent_v1.py) breaking V1-UPDATE rules."""

from acp_conformance.reference.agent_v1 import V1ReferenceAgent


class V1ChunkWithoutContent(V1ReferenceAgent):
    def update(self, sid, update):
        if update.get("sessionUpdate") == "agent_message_chunk":
            update = {"sessionUpdate": "agent_message_chunk", "text": "Hello"}
        super().update(sid, update)


class V1UpdateOfUnknownSession(V1ReferenceAgent):
    def update(self, sid, update):
        super().update("sess_unknown_" + sid, update)


MUTANTS = {
    "v1-chunk-without-content": (("V1-UPDATE-001",), V1ChunkWithoutContent),
    "v1-update-of-unknown-session": (("V1-UPDATE-002", "V1-SESSION-002"), V1UpdateOfUnknownSession),
}
