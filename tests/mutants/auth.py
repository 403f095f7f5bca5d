"""Mutants of the AUTH rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

from acp_conformance.reference.agent import ReferenceAgent
from mutant_bases import _WithAuth  # beside this file (agent_mutants.py puts the folder on sys.path)


AUTH_REQUIRED = -32000


class Auth005(_WithAuth):
    """Lists an `agent` auth method; auth/login answers {} but leaves the agent logged out: from
    then on session/new answers -32000 (auth required). Without a login session/new works, so only
    the auth scenario sees the defect."""

    def handle_auth_login(self, ctx, params):
        if params.get("methodId") in [a["methodId"] for a in self.AUTH_METHODS]:
            self.__dict__["_logged_out"] = True  # the login flow wipes the credential it should have stored
        super().handle_auth_login(ctx, params)

    def handle_session_new(self, ctx, params):
        if self.__dict__.get("_logged_out"):
            self.respond_error(ctx, AUTH_REQUIRED, "Authentication required")
            return
        super().handle_session_new(ctx, params)


class Auth001(_WithAuth):
    """Lists an auth method but has no auth/login (nor auth/logout)."""

    REQUESTS = ReferenceAgent.REQUESTS


class Auth002(_WithAuth):
    """Lists a terminal auth method although the client did not offer auth.terminal."""

    AUTH_METHODS = _WithAuth.AUTH_METHODS + [{"type": "terminal", "methodId": "tui-login", "name": "Terminal login"}]


class Auth003(_WithAuth):
    """An auth method without a name."""

    AUTH_METHODS = [{"type": "agent", "methodId": "conformance-login"}]


class Auth004(_WithAuth):
    """auth/login succeeds whatever methodId it is given, also one that was never advertised."""

    def handle_auth_login(self, ctx, params):
        self.log_in(ctx)


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "auth-005": (("AUTH-005",), Auth005),
    "auth-001": (("AUTH-001",), Auth001),
    "auth-002": (("AUTH-002", "INIT-007"), Auth002),  # INIT-007 judges the same initialize result
    "auth-003": (("AUTH-003",), Auth003),
    "auth-004": (("AUTH-004",), Auth004),
}
