"""Mutants of the reference client for the CANCEL rules: each a small subclass of the reference
client that breaks one rule (or a tightly bound group).

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
client_mutants.py, which runs one: ``python tests/client_mutants/client_mutants.py NAME -- AGENT...``.
"""

from __future__ import annotations

import asyncio
import json

from acp_conformance.reference.client import ReferenceClient


class CancelForeignId(ReferenceClient):
    async def new_session(self):
        await self.notify("$/cancel_request", {"requestId": 4242})
        return await super().new_session()


class DoubleAnswerAfterCancelRequest(ReferenceClient):
    def on_notification(self, method, params):
        if method == "$/cancel_request":
            rid = params.get("requestId")
            if json.dumps(rid) in self.incoming:
                msg = {"jsonrpc": "2.0", "id": rid, "result": {"outcome": {"outcome": "cancelled"}}}
                asyncio.ensure_future(self.send(msg))
        super().on_notification(method, params)


class AnswerUnknownCancel(ReferenceClient):
    def __init__(self, opts):
        super().__init__(opts)
        self.seen_ids = set()

    def dispatch(self, msg):
        if isinstance(msg.get("method"), str) and msg.get("id") is not None:
            self.seen_ids.add(json.dumps(msg["id"]))
        super().dispatch(msg)

    def on_notification(self, method, params):
        if method == "$/cancel_request" and json.dumps(params.get("requestId")) not in self.seen_ids:
            asyncio.ensure_future(self.send({"jsonrpc": "2.0", "id": params.get("requestId"),
                                             "error": {"code": -32602, "message": "Unknown request"}}))
        super().on_notification(method, params)


class CancelsOwnRequest(ReferenceClient):
    """One table for both directions: the agent's $/cancel_request naming an id of the client's own pending
    request fails that request as cancelled (the session/new the suite delays: the client gives up)."""

    def on_notification(self, method, params):
        if method == "$/cancel_request":
            fut = self.pending.get(params.get("requestId"))
            if fut is not None and not fut.done():
                fut.set_result({"error": {"code": -32800, "message": "Request cancelled"}})
        super().on_notification(method, params)


MUTANTS = {
    "cancels-own-request": (["CANCEL-014"], CancelsOwnRequest),
    "cancel-foreign-id": (["CANCEL-014"], CancelForeignId),
    "double-answer-after-cancel-request": (["CANCEL-012", "CLIENT-017"], DoubleAnswerAfterCancelRequest),
    "answer-unknown-cancel": (["CANCEL-013", "CLIENT-016"], AnswerUnknownCancel),
}
