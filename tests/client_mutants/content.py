"""Mutants of the reference client for the CONTENT rules: each a small subclass of the reference
client that breaks one rule (or a tightly bound group).

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
client_mutants.py, which runs one: ``python tests/client_mutants/client_mutants.py NAME -- AGENT...``.
"""

from __future__ import annotations

from acp_conformance.reference.client import ReferenceClient


class RelativeListCwd(ReferenceClient):
    async def list_sessions(self):
        await self.request("session/list", {"cwd": "project"})
        return await super().list_sessions()


MUTANTS = {
    "relative-list-cwd": (["CONTENT-004"], RelativeListCwd),
}
