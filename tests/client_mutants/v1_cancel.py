"""Mutants of the reference client's version-1 mode for the V1-CANCEL rules."""

from __future__ import annotations

from acp_conformance.reference.client_v1 import V1ReferenceClient


class V1AllowsAfterCancel(V1ReferenceClient):
    async def cancel(self, session_id):
        await self.notify("session/cancel", {"sessionId": session_id})
        for req in list(self.incoming.values()):  # the pending permission requests: allowed, not cancelled
            p = req.get("params") if isinstance(req.get("params"), dict) else {}
            if req.get("method") == "session/request_permission" and p.get("sessionId") == session_id:
                option = next((o for o in p.get("options") or [] if isinstance(o, dict)), {})
                await self.respond(req["id"], {"outcome": {"outcome": "selected", "optionId": option.get("optionId")}})


MUTANTS = {
    "v1-cancel-permission-allowed": (["V1-CANCEL-005"], V1AllowsAfterCancel),
}
