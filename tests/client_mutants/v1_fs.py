"""Mutants of the reference client's version-1 mode for the V1-FS rules."""

from __future__ import annotations

from acp_conformance.reference.client_v1 import V1ReferenceClient


class V1WriteCreatesNothing(V1ReferenceClient):
    async def on_request(self, msg):
        if msg.get("method") == "fs/write_text_file":  # says it wrote, writes nothing
            await self.respond(msg["id"], None)
            return
        await super().on_request(msg)


MUTANTS = {
    "v1-fs-write-creates-nothing": (["V1-FS-003"], V1WriteCreatesNothing),
}
