"""Mutants of the v1 reference agent (acp_conformance/reference/agent_v1.py) breaking V1-LIST rules."""

from acp_conformance.reference.agent_v1 import V1ReferenceAgent


class V1ListWithoutArray(V1ReferenceAgent):
    def on_session_list(self, params, rid):
        return {"sessions": None}


MUTANTS = {
    "v1-list-without-array": (("V1-LIST-001",), V1ListWithoutArray),
}
