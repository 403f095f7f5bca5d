"""Mutants of the reference client's version-1 mode for the V1-SESSION rules."""

from __future__ import annotations

from acp_conformance.reference.client_v1 import V1ReferenceClient
from acp_conformance.reference.client import RpcError


class V1LoadsUnadvertised(V1ReferenceClient):
    async def close_session(self, session_id):
        try:  # loads its session whatever the agent's loadSession says
            await self.request("session/load", {"sessionId": session_id, **self.new_session_params()})
        except RpcError:
            pass
        await super().close_session(session_id)


class V1RelativeCwd(V1ReferenceClient):
    def new_session_params(self):
        return {**super().new_session_params(), "cwd": "."}


MUTANTS = {
    "v1-session-load-unadvertised": (["V1-SESSION-004"], V1LoadsUnadvertised),
    "v1-session-relative-cwd": (["V1-SESSION-005"], V1RelativeCwd),
}
