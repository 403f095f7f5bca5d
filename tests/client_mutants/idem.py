"""Mutants of the reference client for the IDEM rules: each a small subclass of the reference
client that breaks one rule (or a tightly bound group).

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
client_mutants.py, which runs one: ``python tests/client_mutants/client_mutants.py NAME -- AGENT...``.
"""

from __future__ import annotations

from acp_conformance.reference.client import ReferenceClient


class ReusedIdempotencyKey(ReferenceClient):
    def prompt_params(self, session_id, n):
        return {**super().prompt_params(session_id, n), "idempotencyKey": "the-same-key-every-time"}


MUTANTS = {
    "reused-idempotency-key": (["IDEM-004"], ReusedIdempotencyKey),
}
