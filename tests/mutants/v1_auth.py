"""Mutants of the v1 reference agent (acp_conformance/reference/agent_v1.py) breaking V1-AUTH rules."""

from acp_conformance.reference.agent_v1 import V1ReferenceAgent


class V1AcceptsUnknownAuth(V1ReferenceAgent):
    def on_authenticate(self, params, rid):
        return {}


MUTANTS = {
    "v1-accepts-unknown-auth": (("V1-AUTH-002",), V1AcceptsUnknownAuth),
}


class V1AuthInternalError(V1ReferenceAgent):
    """Lists a login method and refuses session/new before it with -32603, not auth_required (-32000)."""

    def on_initialize(self, params, rid):
        return {**super().on_initialize(params, rid), "authMethods": [{"id": "login", "name": "Log in"}]}

    def on_session_new(self, params, rid):
        self.respond(rid, error={"code": -32603, "message": "Internal error: not authenticated"})


MUTANTS["v1-auth-internal-error"] = (("V1-AUTH-001",), V1AuthInternalError)
