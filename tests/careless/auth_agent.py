"""The reference agent behind authentication, as a released agent run without credentials is: it lists an
`agent` auth method, and session/new answers auth_required (-32000) until auth/login succeeds, which it
never does here (no credentials). Everything before a session (initialize, the wire rules) is correct.

    python tests/careless/auth_agent.py
"""

from __future__ import annotations

import sys

from acp_conformance.reference.agent import INVALID_PARAMS, ReferenceAgent, main

AUTH_REQUIRED = -32000  # ACP's auth_required


class AuthAgent(ReferenceAgent):
    REQUESTS = {**ReferenceAgent.REQUESTS, "auth/login": "handle_auth_login", "auth/logout": "handle_auth_logout"}
    AUTH_METHODS = [{"type": "agent", "methodId": "vendor-login", "name": "Vendor login"}]

    def initialize_result(self, version):
        return dict(super().initialize_result(version), authMethods=[dict(a) for a in self.AUTH_METHODS])

    def handle_auth_login(self, ctx, params):
        if params.get("methodId") not in [a["methodId"] for a in self.AUTH_METHODS]:
            self.respond_error(ctx, INVALID_PARAMS, "unknown methodId")
            return
        self.respond_error(ctx, AUTH_REQUIRED, "Authentication required: no credentials on this machine")

    def handle_auth_logout(self, ctx, params):
        self.respond(ctx, {})

    def handle_session_new(self, ctx, params):
        self.respond_error(ctx, AUTH_REQUIRED, "Authentication required")


if __name__ == "__main__":
    sys.exit(main(AuthAgent))
