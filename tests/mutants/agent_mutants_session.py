"""Mutants of the session family (setup, updates, content, config, list, delete, auth).

Each subclasses ``ReferenceAgent`` and overrides one small method; ``MUTANTS`` maps a name to
(the rules the suite must flag, the class). Merged into agent_mutants.MUTANTS automatically.
"""

from __future__ import annotations

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from acp_conformance.reference.agent import INVALID_PARAMS, ReferenceAgent  # noqa: E402


# -- session setup -------------------------------------------------------------------------------

class Session005(ReferenceAgent):
    """Accepts MCP server entries of any transport (none is advertised)."""

    def check_session_setup(self, params):
        params = dict(params)
        params.pop("mcpServers", None)
        super().check_session_setup(params)


class Session008(ReferenceAgent):
    """Accepts a relative cwd in session/new."""

    def handle_session_new(self, ctx, params):
        cwd = params.get("cwd")
        if isinstance(cwd, str) and not os.path.isabs(cwd):
            params = dict(params, cwd=os.path.abspath(cwd))
        super().handle_session_new(ctx, params)


# -- updates and content -------------------------------------------------------------------------

class Update004(ReferenceAgent):
    """Agent message chunks carry no messageId."""

    def send_update(self, session, update):
        if update.get("sessionUpdate") == "agent_message_chunk":
            update = {k: v for k, v in update.items() if k != "messageId"}
        super().send_update(session, update)


class Session010(ReferenceAgent):
    """After every turn, an update for a session the client never heard of."""

    def finish_work(self, session, turn, stop_reason, error):
        super().finish_work(session, turn, stop_reason, error)
        self.notify("session/update", {"sessionId": "sess_phantom_0001",
                                       "update": {"sessionUpdate": "state_update", "state": "idle"}})


class Content001(ReferenceAgent):
    """The reply's first chunk is an image whose data is not base64."""

    def send_update(self, session, update):
        if update.get("sessionUpdate") == "agent_message_chunk" and update.get("content", {}).get("text") == "You said: ":
            update = dict(update, content={"type": "image", "data": "!!not base64!!", "mimeType": "image/png"})
        super().send_update(session, update)


class Content004(ReferenceAgent):
    """Tool call locations are relative paths."""

    def tool_update(self, session, turn, **fields):
        if "locations" in fields:
            fields["locations"] = [{"path": "README.md", "line": 0}]
        super().tool_update(session, turn, **fields)


class Session011(ReferenceAgent):
    """Tools work in the process's directory, not in the session's cwd."""

    def tool_update(self, session, turn, **fields):
        if "locations" in fields:
            fields["locations"] = [{"path": os.path.join(os.getcwd(), "README.md")}]
        super().tool_update(session, turn, **fields)


# -- config options ------------------------------------------------------------------------------

class Config001(ReferenceAgent):
    """set_config_option answers with a list that lacks the option just set."""

    def handle_set_config_option(self, ctx, params):
        real = self.respond

        def respond(c, result):
            opts = [o for o in result.get("configOptions", []) if o.get("configId") != params.get("configId")]
            real(c, {"configOptions": opts})
        self.respond = respond
        try:
            super().handle_set_config_option(ctx, params)
        finally:
            del self.respond


class Config002(ReferenceAgent):
    """An unknown configId is accepted (the list is answered unchanged)."""

    def handle_set_config_option(self, ctx, params):
        if isinstance(params.get("configId"), str) and params["configId"] not in ("mode", "verbose"):
            session = self.live_session(self.require_str(params, "sessionId"))
            self.respond(ctx, {"configOptions": self.config_options(session.record)})
            return
        super().handle_set_config_option(ctx, params)


class Config003(ReferenceAgent):
    """A `_` custom value type is accepted (the list is answered unchanged)."""

    def handle_set_config_option(self, ctx, params):
        if str(params.get("type", "")).startswith("_"):
            session = self.live_session(self.require_str(params, "sessionId"))
            self.respond(ctx, {"configOptions": self.config_options(session.record)})
            return
        super().handle_set_config_option(ctx, params)


class Config004(ReferenceAgent):
    """The select option offers the value "ask" twice (values must be unique)."""

    def config_options(self, session_record):
        opts = super().config_options(session_record)
        opts[0]["options"] = opts[0]["options"] + [{"value": "ask", "name": "Ask again"}]
        return opts


class Config005(ReferenceAgent):
    """The option list holds the boolean option twice."""

    def config_options(self, session_record):
        opts = super().config_options(session_record)
        return opts + [dict(opts[1])]


# -- list and delete -----------------------------------------------------------------------------

class ListCwdFilter(ReferenceAgent):
    """session/list ignores the cwd filter."""

    def handle_session_list(self, ctx, params):
        super().handle_session_list(ctx, {k: v for k, v in params.items() if k != "cwd"})


class List002(ReferenceAgent):
    """SessionInfo.updatedAt is not an RFC 3339 date-time."""

    def session_info(self, record):
        return dict(super().session_info(record), updatedAt="yesterday")


class List005(ReferenceAgent):
    """An invalid cursor gives the first page."""

    @staticmethod
    def decode_cursor(cursor):
        try:
            return ReferenceAgent.decode_cursor(cursor)
        except Exception:
            if isinstance(cursor, str):  # a cursor of the wrong type is still refused (ERR-013)
                return 0
            raise


class List006(ReferenceAgent):
    """session/list loads every listed session (a prompt on it is then accepted)."""

    def handle_session_list(self, ctx, params):
        from acp_conformance.reference.agent import LiveSession
        for record in self.store.all():
            if record["sessionId"] not in self.sessions:
                self.sessions[record["sessionId"]] = LiveSession(record)
        super().handle_session_list(ctx, params)


class Delete001(ReferenceAgent):
    """session/delete answers {} but keeps the session on disk (listed and resumable)."""

    def handle_session_delete(self, ctx, params):
        session_id = self.require_str(params, "sessionId")
        self.sessions.pop(session_id, None)
        self.respond(ctx, {})


class Delete002(ReferenceAgent):
    """Deleting a session that does not exist is an error."""

    def handle_session_delete(self, ctx, params):
        sid = params.get("sessionId")
        if sid not in self.sessions and self.store.load(sid) is None:
            self.respond_error(ctx, -32002, "Session not found", {"sessionId": sid})
            return
        super().handle_session_delete(ctx, params)


# -- auth ----------------------------------------------------------------------------------------

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


class Auth001(_WithAuth):
    """Lists an auth method but has no auth/login (nor auth/logout)."""

    REQUESTS = ReferenceAgent.REQUESTS


class Auth002(_WithAuth):
    """Lists a terminal auth method although the client did not offer auth.terminal."""

    AUTH_METHODS = _WithAuth.AUTH_METHODS + [{"type": "terminal", "methodId": "tui-login", "name": "Terminal login"}]


class Auth003(_WithAuth):
    """An auth method without a name."""

    AUTH_METHODS = [{"type": "agent", "methodId": "conformance-login"}]


MUTANTS = {
    "session-005": (("SESSION-005",), Session005),
    "session-008": (("SESSION-008",), Session008),
    "session-010": (("SESSION-010",), Session010),
    "session-011": (("SESSION-011",), Session011),
    "update-004": (("UPDATE-004",), Update004),
    "content-001": (("CONTENT-001",), Content001),
    "content-004": (("CONTENT-004",), Content004),
    "config-001": (("CONFIG-001",), Config001),
    "config-002": (("CONFIG-002",), Config002),
    "config-003": (("CONFIG-003",), Config003),
    "config-004": (("CONFIG-004",), Config004),
    "config-005": (("CONFIG-005",), Config005),
    "list-cwd-filter": (("LIST-001", "LIST-003"), ListCwdFilter),
    "list-002": (("LIST-002",), List002),
    "list-005": (("LIST-005",), List005),
    "list-006": (("LIST-006", "SESSION-010", "ERR-003"), List006),  # ERR-003: the prompt on a session not resumed
    "delete-001": (("DELETE-001", "DELETE-004"), Delete001),
    "delete-002": (("DELETE-002",), Delete002),
    "auth-001": (("AUTH-001",), Auth001),
    "auth-002": (("AUTH-002", "INIT-007"), Auth002),  # INIT-007 judges the same initialize result
    "auth-003": (("AUTH-003",), Auth003),
}
