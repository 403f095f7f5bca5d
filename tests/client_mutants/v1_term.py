"""Mutants of the reference client's version-1 mode for the V1-TERM rules."""

from __future__ import annotations

from acp_conformance.reference.client_v1 import V1ReferenceClient


class V1CutsOutputInsideACharacter(V1ReferenceClient):
    def keep_output(self, term, chunk):
        out = term["output"] + chunk
        if term["limit"] is not None and len(out) > term["limit"]:  # the last bytes, wherever a character starts
            out, term["truncated"] = out[len(out) - term["limit"]:], True
        term["output"] = out


MUTANTS = {
    "v1-term-output-cut-inside-a-character": (["V1-TERM-003"], V1CutsOutputInsideACharacter),
}
