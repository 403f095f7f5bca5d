"""Mutants of the reference client's version-1 mode for the V1-INIT rules (run under --acp-protocol 1: a client
that does not ask for the integer 1 is not recognised as a v1 client by itself)."""

from __future__ import annotations

from acp_conformance.reference.client_v1 import V1ReferenceClient


class V1VersionAsString(V1ReferenceClient):
    def initialize_params(self):
        return {**super().initialize_params(), "protocolVersion": "1"}


MUTANTS = {
    "v1-init-version-string": (["V1-INIT-005"], V1VersionAsString),
}
