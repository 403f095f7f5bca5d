"""Broken variants of the reference client, one broken rule (or a tightly bound group) each.

Every mutant is a small subclass of ``ReferenceClient`` in the module of the catalog area of the
rule it breaks: ``client.py`` holds the CLIENT mutants, ``cancel.py`` the CANCEL ones, and so on
(``client_mutant_bases.py``: what several share). ``MUTANTS`` maps each name to the rule IDs it must
be flagged for, and the class, over every area module.

``python client_mutants.py NAME -- AGENT...`` runs the mutant NAME against an agent (under the
suite: ``--client-cmd="python client_mutants.py NAME -- {agent}"``).
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_TESTS = os.path.dirname(HERE)
_ROOT = os.path.dirname(_TESTS)
for _path in (_ROOT, _TESTS, HERE):  # the package, mutant_areas.py, and client_mutant_bases.py for the areas
    if _path not in sys.path:
        sys.path.insert(0, _path)

from acp_conformance.reference.client import main  # noqa: E402
from mutant_areas import load_areas  # noqa: E402

# modules here that hold no mutants of an area
NOT_AREAS = {"client_mutants.py", "client_mutant_bases.py"}

MUTANTS, UNFLAGGED = load_areas(HERE, "client_mutants_", NOT_AREAS)


if __name__ == "__main__":
    name, rest = sys.argv[1], sys.argv[2:]
    if name not in MUTANTS:
        print(f"unknown mutant {name!r}; known: {', '.join(sorted(MUTANTS))}", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(rest, MUTANTS[name][1]))
