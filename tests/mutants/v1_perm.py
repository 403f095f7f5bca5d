"""Mutants of the v1 reference agent (acp_conformance/reference/agent_v1.py) breaking V1-PERM rules."""

import threading

from acp_conformance.reference.agent_v1 import V1ReferenceAgent


class V1PermissionCancelledIgnored(V1ReferenceAgent):
    """A turn whose permission was answered cancelled ends end_turn."""

    def permission_tool(self, turn):
        super().permission_tool(turn)
        turn.cancelled = threading.Event()


class V1PermissionWithoutOptions(V1ReferenceAgent):
    def permission_params(self, sid, tid):
        return {**super().permission_params(sid, tid), "options": []}


MUTANTS = {
    "v1-permission-cancelled-ignored": (("V1-PERM-002",), V1PermissionCancelledIgnored),
    "v1-permission-without-options": (("V1-PERM-001",), V1PermissionWithoutOptions),
}
