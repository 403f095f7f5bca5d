"""Broken variants of the reference agent, each violating one rule, and the script that runs one.

Every mutant is a small subclass of ``ReferenceAgent`` overriding one method, in the module of the
catalog area of the rule it breaks: ``prompt.py`` holds the PROMPT mutants, ``cancel.py`` the CANCEL
ones, and so on (``hostile.py``: agents that break no rule of their own but must not hang the suite;
``mutant_bases.py``: shared base classes). ``MUTANTS`` maps a mutant name to (the rule IDs the suite
must flag it for, the class), over every area module; ``UNFLAGGED`` holds the few the suite only warns
or notes about. A mutant class may carry ``SUITE_OPTIONS``, the suite options its end-to-end test
adds (a threshold its defect is measured against: cancel-006). Run one with::

    python tests/mutants/agent_mutants.py NAME

The prompt-steering words of the reference agent apply (see acp_conformance/reference/agent/__init__.py):
"slowly" = about 6 s of work, "permission" = a permission request, "tool" = a tool call, "fail" =
the work fails after insertion.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_TESTS = os.path.dirname(HERE)
_ROOT = os.path.dirname(_TESTS)
for _path in (_ROOT, _TESTS, HERE):  # the package, mutant_areas.py, and mutant_bases.py for the area modules
    if _path not in sys.path:
        sys.path.insert(0, _path)

from acp_conformance.reference.agent import main  # noqa: E402
from mutant_areas import load_areas  # noqa: E402

# modules here that hold no mutants of an area
NOT_AREAS = {"agent_mutants.py", "agent_never_resumes.py", "mutant_bases.py"}

MUTANTS, UNFLAGGED = load_areas(HERE, "mutants_", NOT_AREAS)


def run(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    known = {**MUTANTS, **UNFLAGGED}
    if len(argv) != 1 or argv[0] not in known:
        sys.stderr.write("usage: agent_mutants.py NAME\nnames: %s\n" % ", ".join(sorted(known)))
        return 2
    return main(known[argv[0]][1])


if __name__ == "__main__":
    sys.exit(run())
