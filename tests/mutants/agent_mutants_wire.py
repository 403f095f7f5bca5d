"""Broken variants for the wire family (ERR, INIT, TRANSPORT, EXT rules checked by the wire_* monitors)."""

from __future__ import annotations

import json
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from acp_conformance.reference.agent import (  # noqa: E402
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Ctx,
    LiveSession,
    ReferenceAgent,
)


class V1Agent(ReferenceAgent):
    """Negotiates protocol version 1 (a v1 agent): asked for 2, it answers 1."""

    def negotiate_version(self, requested):
        return 1 if requested >= 1 else None


class InitEcho(ReferenceAgent):
    """Answers initialize with whatever version >= 2 it is asked for (3 -> 3, 65535 -> 65535)."""

    def negotiate_version(self, requested):
        return requested if requested >= 2 else super().negotiate_version(requested)


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


class Init005(ReferenceAgent):
    """The initialize result's info has no version."""

    def initialize_result(self, version):
        res = super().initialize_result(version)
        res["info"] = {"name": res["info"]["name"]}
        return res


class Init006(ReferenceAgent):
    """A repeated initialize is refused with -32600."""

    def handle_initialize(self, ctx, params):
        if self.initialized:
            self.respond_error(ctx, INVALID_REQUEST, "Already initialized")
            return
        super().handle_initialize(ctx, params)


class Init010(ReferenceAgent):
    """A v1-style boolean support marker in the capabilities."""

    def capabilities(self):
        caps = super().capabilities()
        caps["session"]["additionalDirectories"] = False
        return caps


class Transport006(ReferenceAgent):
    """The empty batch [] is answered with an array."""

    def handle_batch(self, items):
        if not items:
            self.write_line([{"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST,
                                                                       "message": "Invalid Request"}}])
            return
        super().handle_batch(items)


class Transport012(ReferenceAgent):
    """Batch arrays are dropped without an answer (neither the v2 refusal nor the older member answers)."""

    def handle_batch(self, items):
        if not items:
            super().handle_batch(items)  # [] still gets its -32600: TRANSPORT-006 is not this mutant's


class Transport012Both(ReferenceAgent):
    """A batch is refused whole with -32600 and its members are served all the same."""

    def handle_batch(self, items):
        super().handle_batch(items)
        if items:
            self.handle_batch_per_member(items)


class Ext004(ReferenceAgent):
    """A custom root field in the prompt result."""

    def prompt_result(self, message_id):
        return {**super().prompt_result(message_id), "_vendorStats": {"tokens": 1}}


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "v1-agent": (("INIT-001",), V1Agent),
    "init-echo-version": (("INIT-001",), InitEcho),
    "wire-err-003": (("ERR-003", "SESSION-010", "LIST-006"), Err003),  # the other two judge the same updates
    "wire-err-005": (("ERR-005",), Err005),
    "wire-err-006": (("ERR-006", "TRANSPORT-009"), Err006),
    "wire-err-008": (("ERR-004", "ERR-008"), Err008),
    "wire-err-011": (("ERR-011", "EXT-001"), Err011),
    "wire-err-012": (("ERR-012",), Err012),
    "wire-err-014": (("ERR-014",), Err014),
    "wire-init-005": (("INIT-005",), Init005),
    "wire-init-006": (("INIT-006", "INIT-008", "INIT-009"), Init006),
    "wire-init-010": (("INIT-010",), Init010),
    "wire-transport-006": (("TRANSPORT-006",), Transport006),
    "wire-transport-012": (("TRANSPORT-012",), Transport012),
    "wire-transport-012-both": (("TRANSPORT-012",), Transport012Both),
    "wire-ext-004": (("EXT-004",), Ext004),
}
