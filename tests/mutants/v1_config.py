"""Mutants of the v1 reference agent (acp_conformance/reference/agent_v1.py) breaking V1-CONFIG rules."""

from acp_conformance.reference.agent_v1 import V1ReferenceAgent


class V1ConfigWithoutCurrentValue(V1ReferenceAgent):
    def config_options(self, sid):
        return [{k: v for k, v in o.items() if k != "currentValue"} for o in super().config_options(sid)]


class V1SetConfigWithoutList(V1ReferenceAgent):
    def on_session_set_config_option(self, params, rid):
        super().on_session_set_config_option(params, rid)
        return {}


MUTANTS = {
    "v1-config-without-current-value": (("V1-CONFIG-001",), V1ConfigWithoutCurrentValue),
    "v1-set-config-without-list": (("V1-CONFIG-002",), V1SetConfigWithoutList),
}
