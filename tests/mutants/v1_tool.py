"""Mutants of the v1 reference agent (acp_conformance/reference/agent_v1.py) breaking V1-TOOL rules."""

from acp_conformance.reference.agent_v1 import V1ReferenceAgent


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


MUTANTS = {
    "v1-tool-update-unannounced": (("V1-TOOL-001",), V1ToolUpdateUnannounced),
    "v1-bad-tool-status": (("V1-TOOL-002",), V1BadToolStatus),
}
