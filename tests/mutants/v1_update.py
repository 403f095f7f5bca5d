"""Mutants of the v1 reference agent breaking V1-UPDATE, V1-TOOL and V1-PERM-001."""

from acp_conformance.reference.agent_v1 import V1ReferenceAgent


class V1ChunkWithoutContent(V1ReferenceAgent):
    def update(self, sid, update):
        if update.get("sessionUpdate") == "agent_message_chunk":
            update = {"sessionUpdate": "agent_message_chunk", "text": "Hello"}
        super().update(sid, update)


class V1UpdateOfUnknownSession(V1ReferenceAgent):
    def update(self, sid, update):
        super().update("sess_unknown_" + sid, update)


class V1ToolUpdateUnannounced(V1ReferenceAgent):
    def update(self, sid, update):
        if update.get("sessionUpdate") == "tool_call":
            return
        super().update(sid, update)


class V1BadToolStatus(V1ReferenceAgent):
    def update(self, sid, update):
        if update.get("status") == "in_progress":
            update = {**update, "status": "running"}
        super().update(sid, update)


class V1PermissionWithoutOptions(V1ReferenceAgent):
    def permission_params(self, sid, tid):
        return {**super().permission_params(sid, tid), "options": []}


MUTANTS = {
    "v1-chunk-without-content": (("V1-UPDATE-001",), V1ChunkWithoutContent),
    "v1-update-of-unknown-session": (("V1-UPDATE-002", "V1-SESSION-002"), V1UpdateOfUnknownSession),
    "v1-tool-update-unannounced": (("V1-TOOL-001",), V1ToolUpdateUnannounced),
    "v1-bad-tool-status": (("V1-TOOL-002",), V1BadToolStatus),
    "v1-permission-without-options": (("V1-PERM-001",), V1PermissionWithoutOptions),
}
