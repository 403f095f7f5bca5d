"""The reference agent behind authentication, as a released agent run without credentials is: it lists an
`agent` auth method, and session/new answers auth_required (-32000) until auth/login succeeds, which it
never does here (no credentials). Everything before a session (initialize, the wire rules) is correct.

    python tests/careless/auth_agent.py
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "mutants"))

from mutant_bases import _WithAuth  # noqa: E402  (lists an auth method, serves auth/login and logout)

from acp_conformance.reference.agent import main  # noqa: E402

AUTH_REQUIRED = -32000  # ACP's auth_required


class AuthAgent(_WithAuth):
    AUTH_METHODS = [{"type": "agent", "methodId": "vendor-login", "name": "Vendor login"}]

    def log_in(self, ctx):
        self.respond_error(ctx, AUTH_REQUIRED, "Authentication required: no credentials on this machine")

    def handle_session_new(self, ctx, params):
        self.respond_error(ctx, AUTH_REQUIRED, "Authentication required")


if __name__ == "__main__":
    sys.exit(main(AuthAgent))
