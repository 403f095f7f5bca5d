"""Mutants of the SCHEMA rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

from acp_conformance.reference.agent import ReferenceAgent


class Schema001(ReferenceAgent):
    """The session/prompt result carries ``_meta`` as a string (the schema allows an object or null);
    no specific rule judges the type of ``_meta``."""

    def prompt_result(self, message_id):
        return {**super().prompt_result(message_id), "_meta": "acp-reference"}


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "wire2-schema-001": (("SCHEMA-001",), Schema001),
}
