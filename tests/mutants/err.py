"""Mutants of the ERR rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class); ``UNFLAGGED`` holds mutants
the suite only warns or notes about, run by hand. Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

import json

from acp_conformance.reference.agent import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RESOURCE_NOT_FOUND,
    Ctx,
    LiveSession,
    ReferenceAgent,
)


class Err001(ReferenceAgent):
    """An unknown session is answered with -32602 instead of -32002."""

    def error_unknown_session(self, ctx, session_id):
        self.respond_error(ctx, INVALID_PARAMS, "Unknown session", {"sessionId": session_id})


class Err002(ReferenceAgent):
    """-32002 without error.data."""

    def error_unknown_session(self, ctx, session_id):
        self.respond_error(ctx, RESOURCE_NOT_FOUND, "Session not found")


class Err004(ReferenceAgent):
    """session/list is answered twice."""

    def respond(self, ctx, result):
        super().respond(ctx, result)
        if ctx.method == "session/list":
            self.write_line({"jsonrpc": "2.0", "id": ctx.id, "result": result})


class Err003(ReferenceAgent):
    """A persisted session is usable on a fresh connection without session/resume."""

    closed_here: set = set()

    def handle_session_close(self, ctx, params):
        self.closed_here = self.closed_here | {params.get("sessionId")}
        super().handle_session_close(ctx, params)

    def live_session(self, session_id):
        if session_id not in self.sessions and session_id not in self.closed_here:
            record = self.store.load(session_id)
            if record is not None:
                self.sessions[session_id] = LiveSession(record)
        return super().live_session(session_id)


class Err005(ReferenceAgent):
    """Unknown methods get -32603 Internal error instead of -32601."""

    def dispatch_request(self, ctx, method, params):
        if self.initialized and method not in self.REQUESTS:
            self.respond_error(ctx, INTERNAL_ERROR, "Internal error")
            return
        super().dispatch_request(ctx, method, params)


class Err006(ReferenceAgent):
    """A line that is not JSON gets -32600 instead of -32700."""

    def on_line(self, raw):
        if raw.strip():
            try:
                json.loads(raw)
            except ValueError:
                self.write_line({"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST,
                                                                         "message": "Invalid Request"}})
                return
        super().on_line(raw)


class Err008(ReferenceAgent):
    """String ids that look like numbers are echoed as integers."""

    def _send_response(self, ctx, response):
        rid = response.get("id")
        if isinstance(rid, str) and rid.isdigit():
            response = {**response, "id": int(rid)}
        super()._send_response(ctx, response)


class Err011(ReferenceAgent):
    """Unknown notifications are answered with -32601 (id null)."""

    def dispatch_notification(self, method, params):
        if self.initialized and method not in self.NOTIFICATIONS:
            self.respond_error(Ctx(None, None, None), METHOD_NOT_FOUND, "Method not found")
            return
        super().dispatch_notification(method, params)


class Err012(ReferenceAgent):
    """Error responses carry an empty message."""

    def respond_error(self, ctx, code, message, data=None):
        super().respond_error(ctx, code, "", data)


class Err014(ReferenceAgent):
    """Serves requests before initialize as if initialized."""

    def dispatch_request(self, ctx, method, params):
        if not self.initialized and method != "initialize":
            self.initialized = True
        super().dispatch_request(ctx, method, params)


class Err007(ReferenceAgent):
    """A JSON value that is not an object (42, "str") gets -32700 Parse error instead of -32600."""

    def handle_message(self, msg, batch):
        if batch is None and not isinstance(msg, dict):
            self.write_line({"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": "Parse error"}})
            return
        super().handle_message(msg, batch)


class Err009(ReferenceAgent):
    """The agent's own requests (session/request_permission) go out with ``id: null``. Nobody can answer
    such a request, so the agent gives up after 0.5 s (as after an error answer: the tool call fails,
    end_turn).

    PERM-001 checks the id of every permission request too (non-null, not pending), and the scenario bound
    to ERR-009 only makes the agent send permission requests, so both fail on the same frame."""

    def send_request(self, method, params):
        request_id = self.next_out_id
        self.next_out_id += 1
        future = self.loop.create_future()
        self.pending_out[request_id] = future
        self.write_line({"jsonrpc": "2.0", "id": None, "method": method, "params": params})

        def give_up():
            if self.pending_out.pop(request_id, None) is future and not future.done():
                future.set_result(("error", {"code": INTERNAL_ERROR, "message": "no answer"}))

        self.loop.call_later(0.5, give_up)
        return request_id, future


class Err009ServesNullId(ReferenceAgent):
    """A request with ``id: null`` is served like any request (answered with id null) instead of -32600.
    NOT FLAGGED (see UNFLAGGED): the receiver side of ERR-009 is only noted (info), although the catalog's
    check asks for a warning."""

    def handle_message(self, msg, batch):
        if (isinstance(msg, dict) and msg.get("jsonrpc") == "2.0" and isinstance(msg.get("method"), str)
                and "id" in msg and msg["id"] is None and self.initialized):
            self.dispatch_request(Ctx(None, msg["method"], batch), msg["method"], msg.get("params"))
            return
        super().handle_message(msg, batch)


class Err010(ReferenceAgent):
    """Every request of the agent is written twice with the same id (an eager retry) while the first is
    still pending; the second answer is ignored.

    PERM-001 checks that a permission request's id is not pending already, so it fails on the same frame
    (the scenario bound to ERR-010 only makes the agent send permission requests)."""

    def send_request(self, method, params):
        request_id, future = super().send_request(method, params)
        self.write_line({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id, future


class Err013(ReferenceAgent):
    """session/new without a string cwd is answered with -32603 (an internal error) instead of -32602."""

    def handle_session_new(self, ctx, params):
        if not isinstance(params.get("cwd"), str):
            self.respond_error(ctx, INTERNAL_ERROR, "Internal error: no cwd")
            return
        super().handle_session_new(ctx, params)


# a defect in every exchange, after acp-tck's v2 fixture wrong_id_echo: the suite names it in one sentence and the
# whole run still ends in seconds (bench/bench_systemic.py times it)
def _mangled(request_id):
    """An id the client never sent: one more for a number, a suffix for a string."""
    if isinstance(request_id, int) and not isinstance(request_id, bool):
        return request_id + 1
    if isinstance(request_id, str):
        return request_id + "-wrong"
    return request_id  # null (an unreadable id) stays null


class WrongIdEcho(ReferenceAgent):
    """Answers every request with an id the client never sent (integers plus one, strings with a suffix).
    Its initialize answer to id 0 carries id 1: the suite never sees an answer to anything it asked."""

    def _send_response(self, ctx, response):
        super()._send_response(ctx, dict(response, id=_mangled(response.get("id"))))


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "err-013": (("ERR-013",), Err013),
    "err-001": (("ERR-001",), Err001),
    "err-002": (("ERR-002",), Err002),
    "err-004": (("ERR-004",), Err004),
    "wire-err-003": (("ERR-003", "SESSION-010", "LIST-006"), Err003),  # the other two judge the same updates
    "wire-err-005": (("ERR-005",), Err005),
    "wire-err-006": (("ERR-006", "TRANSPORT-009"), Err006),
    "wire-err-008": (("ERR-004", "ERR-008"), Err008),
    "wire-err-011": (("ERR-011", "EXT-001"), Err011),
    "wire-err-012": (("ERR-012",), Err012),
    "wire-err-014": (("ERR-014",), Err014),
    "wire2-err-007": (("ERR-007",), Err007),
    "wire2-err-009": (("ERR-009", "PERM-001"), Err009),  # PERM-001 checks permission request ids too
    "wire2-err-010": (("ERR-010", "PERM-001"), Err010),  # likewise
    "wrong-id-echo": (("ERR-004",), WrongIdEcho),  # the run stops at once with the one sentence
}

# flagged only as a warning or a note although the rule asks for more: not run end to end
UNFLAGGED: dict[str, tuple[tuple[str, ...], type]] = {
    "wire2-err-009-serves-null-id": (("ERR-009",), Err009ServesNullId),  # noted only
}
