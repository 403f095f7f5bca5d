"""Mutants of the reference client for the ERR rules: each a small subclass of the reference
client that breaks one rule (or a tightly bound group).

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
client_mutants.py, which runs one: ``python tests/client_mutants/client_mutants.py NAME -- AGENT...``.
"""

from __future__ import annotations

from acp_conformance.reference.client import ReferenceClient


class ErrorWithoutMessage(ReferenceClient):
    async def on_request(self, msg):
        if msg["method"] not in ("session/request_permission", "elicitation/create"):
            await self.respond(msg["id"], error={"code": -32601})
            return
        await super().on_request(msg)


MUTANTS = {
    "error-without-message": (["ERR-012"], ErrorWithoutMessage),
}
