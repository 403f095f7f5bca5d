"""Mutants of the reference client for the EXT rules: each a small subclass of the reference
client that breaks one rule (or a tightly bound group).

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
client_mutants.py, which runs one: ``python tests/client_mutants/client_mutants.py NAME -- AGENT...``.
"""

from __future__ import annotations

from acp_conformance.reference.client import ReferenceClient


class CustomRootField(ReferenceClient):
    def new_session_params(self):
        return {**super().new_session_params(), "_conformanceCustom": True}


class MetaChangesOutcome(ReferenceClient):
    def permission_outcome(self, params):
        if params.get("_meta"):
            return {"outcome": "cancelled"}
        return super().permission_outcome(params)


class BadTraceparent(ReferenceClient):
    def initialize_params(self):
        return {**super().initialize_params(), "_meta": {"traceparent": "not-a-trace"}}


MUTANTS = {
    "custom-root-field": (["EXT-004"], CustomRootField),
    "meta-changes-outcome": (["EXT-003"], MetaChangesOutcome),
    # SHOULD rules: a warning, which blocks under --acp-strict
    "bad-traceparent": (["EXT-006"], BadTraceparent),
}
