"""Mutants of the LIST rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class); ``UNFLAGGED`` holds mutants
the suite only warns or notes about, run by hand. Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

from acp_conformance.reference.agent import INVALID_PARAMS, LiveSession, ReferenceAgent


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
        for record in self.store.all():
            if record["sessionId"] not in self.sessions:
                self.sessions[record["sessionId"]] = LiveSession(record)
        super().handle_session_list(ctx, params)


class List004(ReferenceAgent):
    """nextCursor is the integer offset of the next page, 0 on the last page (not a string or null)."""

    def respond(self, ctx, result):
        if ctx.method == "session/list" and isinstance(result, dict) and "sessions" in result:
            nxt = result.get("nextCursor")
            result = dict(result, nextCursor=int(nxt.split("-")[1]) if isinstance(nxt, str) else 0)
        super().respond(ctx, result)


class List004Loop(ReferenceAgent):
    """The last page's nextCursor leads back to the first page: following the cursors never ends (it escaped
    every rule, issue 25)."""

    LOOP = "loop-to-first"

    def respond(self, ctx, result):
        if ctx.method == "session/list" and isinstance(result, dict) and "sessions" in result \
                and result.get("nextCursor") is None:
            result = dict(result, nextCursor=self.LOOP)
        super().respond(ctx, result)

    @staticmethod
    def decode_cursor(cursor):
        return 0 if cursor == List004Loop.LOOP else ReferenceAgent.decode_cursor(cursor)


class List004NullCursor(ReferenceAgent):
    """An explicit ``cursor: null`` is rejected with -32602 instead of giving the first page.
    (The LIST-004 check once ignored failed session/list answers, and judged this agent conformant.)"""

    def handle_session_list(self, ctx, params):
        if "cursor" in params and params["cursor"] is None:
            self.respond_error(ctx, INVALID_PARAMS, "Invalid params: cursor must be a string")
            return
        super().handle_session_list(ctx, params)


class List004NullCursorEmpty(ReferenceAgent):
    """An explicit ``cursor: null`` gives an empty page (as if it named a page past the end).
    NOT FLAGGED as required (see UNFLAGGED): a first page that differs between {} and {cursor: null}
    only warns, so the MUST rule ends ``warn``."""

    def handle_session_list(self, ctx, params):
        if "cursor" in params and params["cursor"] is None:
            self.respond(ctx, {"sessions": []})
            return
        super().handle_session_list(ctx, params)


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "list-cwd-filter": (("LIST-001", "LIST-003"), ListCwdFilter),
    "list-002": (("LIST-002",), List002),
    "list-005": (("LIST-005",), List005),
    "list-006": (("LIST-006", "SESSION-010", "ERR-003"), List006),  # ERR-003: the prompt on a session not resumed
    "wire2-list-004": (("LIST-004",), List004),
    "wire2-list-004-null-cursor": (("LIST-004",), List004NullCursor),
    "list-004-loop": (("LIST-004",), List004Loop),
}

# flagged only as a warning or a note although the rule asks for more: not run end to end
UNFLAGGED: dict[str, tuple[tuple[str, ...], type]] = {
    "wire2-list-004-null-cursor-empty": (("LIST-004",), List004NullCursorEmpty),  # ends warn, not fail
}
