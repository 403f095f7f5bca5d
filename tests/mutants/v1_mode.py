"""Mutants of the v1 reference agent (acp_conformance/reference/agent_v1.py) breaking V1-MODE rules."""

from acp_conformance.reference.agent_v1 import V1ReferenceAgent


class V1BadCurrentMode(V1ReferenceAgent):
    def modes(self, sid):
        return {**super().modes(sid), "currentModeId": "nonexistent"}


MUTANTS = {
    "v1-bad-current-mode": (("V1-MODE-001",), V1BadCurrentMode),
}
