"""Mutants of the v1 reference agent (acp_conformance/reference/agent_v1.py) breaking V1-INIT rules."""

from acp_conformance.reference.agent_v1 import V1ReferenceAgent


class V1AnswersAboveAsked(V1ReferenceAgent):
    def version(self, asked):
        return 3  # above the 1 asked


class V1NoAgentInfo(V1ReferenceAgent):
    def on_initialize(self, params, rid):
        result = super().on_initialize(params, rid)
        del result["agentInfo"]
        return result


class V1StringVersion(V1ReferenceAgent):
    def on_initialize(self, params, rid):
        return {**super().on_initialize(params, rid), "protocolVersion": "1"}


MUTANTS = {
    "v1-answers-above-asked": (("V1-INIT-002",), V1AnswersAboveAsked),
    "v1-no-agent-info": (("V1-INIT-003",), V1NoAgentInfo),
    "v1-string-version": (("V1-INIT-001",), V1StringVersion),
}


class V1NoSessionNew(V1ReferenceAgent):
    on_session_new = None  # session/new is answered -32601 (method not found)


MUTANTS["v1-no-session-new"] = (("V1-INIT-004",), V1NoSessionNew)
