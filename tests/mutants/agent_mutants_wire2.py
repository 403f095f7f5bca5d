"""Broken variants for checked MUST rules that had no mutant yet: session setup (SESSION-001/002/003/012),
session/list and delete (LIST-004, DELETE-003), JSON-RPC errors and ids (ERR-007/009/010), extensibility
(EXT-003/005), stdio framing (TRANSPORT-001/002) and the schema catch-all (SCHEMA-001).

Each subclasses ``ReferenceAgent`` and overrides one small method; ``MUTANTS`` maps a name to (the rules
the suite must flag, the class). Merged into agent_mutants.MUTANTS automatically.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from acp_conformance.reference.agent import (  # noqa: E402
    INTERNAL_ERROR,
    INVALID_PARAMS,
    PARSE_ERROR,
    Ctx,
    ReferenceAgent,
)


def _write_bytes(agent: ReferenceAgent, data: bytes) -> None:
    """Write ``data`` plus \\n to stdout as is (what write_line does after serialising)."""
    if agent.quiet:
        return
    try:
        out = sys.stdout.buffer
        out.write(data + b"\n")
        out.flush()
    except (OSError, ValueError):
        agent.quiet = True
        agent.stop(0)


# -- session setup -------------------------------------------------------------------------------

class Session001(ReferenceAgent):
    """Advertises capabilities.session but does not implement session/list (-32601)."""

    REQUESTS = {k: v for k, v in ReferenceAgent.REQUESTS.items() if k != "session/list"}


class Session002(ReferenceAgent):
    """The sessionId is derived from the cwd: two session/new in one directory get the same id."""

    def new_session_record(self, cwd):
        record = super().new_session_record(cwd)
        record["sessionId"] = "sess_" + hashlib.sha256(cwd.encode("utf-8")).hexdigest()[:32]
        return record


class Session003(ReferenceAgent):
    """session/new results carry ``availableCommands: null`` (an empty optional serialised as null)."""

    def respond(self, ctx, result):
        if ctx.method == "session/new" and isinstance(result, dict) and "sessionId" in result:
            result = dict(result, availableCommands=None)
        super().respond(ctx, result)


class Session012(ReferenceAgent):
    """Advertises session.systemPrompt (append only) and accepts any systemPrompt unchecked: an unknown
    mode, an unadvertised override and an unknown content type all create a session."""

    def capabilities(self):
        caps = super().capabilities()
        caps["session"]["systemPrompt"] = {}
        return caps

    def check_session_setup(self, params):
        params = dict(params)
        params.pop("systemPrompt", None)
        super().check_session_setup(params)


# -- session/list, session/delete ------------------------------------------------------------------

class List004(ReferenceAgent):
    """nextCursor is the integer offset of the next page, 0 on the last page (not a string or null)."""

    def respond(self, ctx, result):
        if ctx.method == "session/list" and isinstance(result, dict) and "sessions" in result:
            nxt = result.get("nextCursor")
            result = dict(result, nextCursor=int(nxt.split("-")[1]) if isinstance(nxt, str) else 0)
        super().respond(ctx, result)


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


class Delete003(ReferenceAgent):
    """Does not advertise session.delete but serves session/delete anyway (success).

    ERR-005 judges every unadvertised capability-gated method and fails it too (the same frame).
    (The DELETE-003 check once only warned, following the catalog's check text.)"""

    def capabilities(self):
        caps = super().capabilities()
        caps["session"].pop("delete", None)
        return caps


# -- JSON-RPC errors and ids ----------------------------------------------------------------------

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


# -- extensibility -------------------------------------------------------------------------------

class Ext003(ReferenceAgent):
    """``_meta: null`` at the params root is refused with -32602 (omitted and null are not equivalent)."""

    def dispatch_request(self, ctx, method, params):
        if self.initialized and isinstance(params, dict) and "_meta" in params and params["_meta"] is None:
            self.respond_error(ctx, INVALID_PARAMS, "Invalid params: _meta must be an object")
            return
        super().dispatch_request(ctx, method, params)


class Ext005(ReferenceAgent):
    """The read tool call uses a custom tool kind ``read_file`` without the ``_`` prefix.

    TOOL-003 judges tool kinds on the same frame and fails too (the schema monitor then leaves the frame
    to them). EXT-005 cannot be broken alone: every open enum its monitor reads from an agent (state,
    stopReason, tool status and kind, permission option kind, content type) is also judged by a specific
    rule (STATE/PROMPT-014, TOOL-003, PERM-001, CONTENT-001)."""

    def tool_update(self, session, turn, **fields):
        if fields.get("kind") == "read":
            fields["kind"] = "read_file"
        super().tool_update(session, turn, **fields)


# -- stdio framing -------------------------------------------------------------------------------

def _chunk_update(obj) -> bool:
    update = (obj.get("params") or {}).get("update") if isinstance(obj, dict) else None
    return isinstance(update, dict) and update.get("sessionUpdate") == "agent_message_chunk"


class Transport001(ReferenceAgent):
    """Its own text (agent_message_chunk notifications) is written in Latin-1, not UTF-8: "You said: héllo"
    carries the byte 0xE9, an invalid UTF-8 sequence.

    A line that does not decode is also stray non-JSON-RPC output on stdout, which TRANSPORT-003 judges
    on the same frame. The other way to break TRANSPORT-001 (valid UTF-8, but the prompt's code points
    not preserved, e.g. double encoding) is caught on the user_message echo, where PROMPT-002 warns
    about the changed text as well; so TRANSPORT-001 cannot be broken alone."""

    def write_line(self, obj):
        if _chunk_update(obj):
            text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
            _write_bytes(self, text.encode("latin-1", "replace"))
            return
        super().write_line(obj)


class Transport002(ReferenceAgent):
    """agent_message_chunk notifications are pretty-printed over several lines.

    The fragment lines are also non-JSON-RPC output on stdout, which TRANSPORT-003 judges on the same
    frames: a message spread over several lines cannot break TRANSPORT-002 alone."""

    def write_line(self, obj):
        if _chunk_update(obj):
            _write_bytes(self, json.dumps(obj, ensure_ascii=False, indent=2).encode("utf-8"))
            return
        super().write_line(obj)


# -- schema --------------------------------------------------------------------------------------

class Schema001(ReferenceAgent):
    """The session/prompt result carries ``_meta`` as a string (the schema allows an object or null);
    no specific rule judges the type of ``_meta``."""

    def prompt_result(self, message_id):
        return {**super().prompt_result(message_id), "_meta": "acp-reference"}


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "wire2-session-001": (("SESSION-001",), Session001),
    "wire2-session-002": (("SESSION-002",), Session002),
    "wire2-session-003": (("SESSION-003",), Session003),
    "wire2-session-012": (("SESSION-012",), Session012),
    "wire2-list-004": (("LIST-004",), List004),
    "wire2-err-007": (("ERR-007",), Err007),
    "wire2-err-009": (("ERR-009", "PERM-001"), Err009),  # PERM-001 checks permission request ids too
    "wire2-err-010": (("ERR-010", "PERM-001"), Err010),  # likewise
    "wire2-ext-003": (("EXT-003",), Ext003),
    "wire2-ext-005": (("EXT-005", "TOOL-003"), Ext005),  # TOOL-003 judges the tool kind too
    "wire2-transport-001": (("TRANSPORT-001", "TRANSPORT-003"), Transport001),  # an undecodable line is stray output
    "wire2-transport-002": (("TRANSPORT-002", "TRANSPORT-003"), Transport002),  # fragments are stray output too
    "wire2-schema-001": (("SCHEMA-001",), Schema001),
    "wire2-delete-003": (("DELETE-003", "ERR-005"), Delete003),  # ERR-005 judges every unadvertised gated method
    "wire2-list-004-null-cursor": (("LIST-004",), List004NullCursor),
}

# Mutants the suite does not flag as required (the check is too weak); kept out of MUTANTS so that the
# end-to-end test stays meaningful, ready to move there once the check is fixed. Run one by hand with
# ``python -c "import sys; sys.path.insert(0, 'tests/mutants'); import agent_mutants_wire2 as m; from
# acp_conformance.reference.agent import main; main(m.UNFLAGGED['NAME'][1])"``.
UNFLAGGED: dict[str, tuple[tuple[str, ...], type]] = {
    "wire2-err-009-serves-null-id": (("ERR-009",), Err009ServesNullId),  # noted only
    "wire2-list-004-null-cursor-empty": (("LIST-004",), List004NullCursorEmpty),  # ends warn, not fail
}
