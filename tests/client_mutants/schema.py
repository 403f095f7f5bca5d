"""Mutants of the reference client for the SCHEMA rules: each a small subclass of the reference
client that breaks one rule (or a tightly bound group).

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
client_mutants.py, which runs one: ``python tests/client_mutants/client_mutants.py NAME -- AGENT...``.
"""

from __future__ import annotations

from acp_conformance.reference.client import ReferenceClient


class TextBlockWithoutText(ReferenceClient):
    def prompt_blocks(self, n):
        return [{"type": "text", "text": "Say hello"}, {"type": "text"}]


MUTANTS = {
    "text-block-without-text": (["SCHEMA-001"], TextBlockWithoutText),
}
