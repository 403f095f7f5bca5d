"""Mutants of the reference client's version-1 mode for the V1-CLIENT rules."""

from __future__ import annotations

from acp_conformance.reference.client import RpcError
from acp_conformance.reference.client_v1 import V1ReferenceClient


class V1PromptsUnknownSession(V1ReferenceClient):
    async def new_session(self):
        sid = await super().new_session()
        try:  # a prompt before any session is set up for it
            await self.request("session/prompt", {"sessionId": "sess_never_created",
                                                  "prompt": [{"type": "text", "text": "hi"}]})
        except RpcError:
            pass
        return sid


class V1SendsUnadvertisedImage(V1ReferenceClient):
    def prompt_blocks(self, n):
        return super().prompt_blocks(n) + [{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}]


class V1NoiseOnStdin(V1ReferenceClient):
    async def new_session(self):
        async with self.write_lock:
            self.proc.stdin.write(b"client ready\n")
            await self.proc.stdin.drain()
        return await super().new_session()


class V1ListsUnadvertised(V1ReferenceClient):
    def advertised(self, name):
        return name == "list" or super().advertised(name)

    async def converse(self):
        self.opts.list = True
        await super().converse()


MUTANTS = {
    "v1-client-prompt-unknown-session": (["V1-CLIENT-001"], V1PromptsUnknownSession),
    "v1-client-unadvertised-image": (["V1-CLIENT-002"], V1SendsUnadvertisedImage),
    "v1-client-noise-on-stdin": (["V1-CLIENT-003"], V1NoiseOnStdin),
    "v1-client-list-unadvertised": (["V1-CLIENT-004"], V1ListsUnadvertised),
}
