"""Mutants of the v1 reference agent (acp_conformance/reference/agent_v1.py) breaking V1-CONTENT rules."""

from acp_conformance.reference.agent_v1 import V1ReferenceAgent


class V1RefusesResourceLink(V1ReferenceAgent):
    def on_session_prompt(self, params, rid):
        if any(isinstance(b, dict) and b.get("type") == "resource_link" for b in params.get("prompt") or []):
            raise ValueError("resource_link is not supported")
        return super().on_session_prompt(params, rid)


MUTANTS = {
    "v1-refuses-resource-link": (("V1-CONTENT-001",), V1RefusesResourceLink),
}
