"""Base classes shared by mutants of several areas and by other test agents (tests/careless): not mutants
themselves, so they break no rule.
"""

from __future__ import annotations

from acp_conformance.reference.agent import INVALID_PARAMS, ReferenceAgent


class _WithAuth(ReferenceAgent):
    """Lists an `agent` auth method and implements auth/login and auth/logout."""

    REQUESTS = {**ReferenceAgent.REQUESTS, "auth/login": "handle_auth_login", "auth/logout": "handle_auth_logout"}
    AUTH_METHODS = [{"type": "agent", "methodId": "conformance-login", "name": "Conformance login"}]

    def initialize_result(self, version):
        return dict(super().initialize_result(version), authMethods=[dict(a) for a in self.AUTH_METHODS])

    def handle_auth_login(self, ctx, params):
        if params.get("methodId") not in [a["methodId"] for a in self.AUTH_METHODS]:
            self.respond_error(ctx, INVALID_PARAMS, "unknown methodId")
            return
        self.log_in(ctx)

    def log_in(self, ctx):
        """A login with an advertised method: it succeeds (tests/careless/auth_agent.py: it cannot)."""
        self.respond(ctx, {})

    def handle_auth_logout(self, ctx, params):
        self.respond(ctx, {})
