"""Broken variants of the reference agent, each violating one rule, and the script that runs one.

Every mutant is a small subclass of ``ReferenceAgent`` overriding one method, in the module of the
catalog area of the rule it breaks: ``prompt.py`` holds the PROMPT mutants, ``cancel.py`` the CANCEL
ones, and so on (``hostile.py``: agents that break no rule of their own but must not hang the suite;
``mutant_bases.py``: shared base classes). ``MUTANTS`` maps a mutant name to (the rule IDs the suite
must flag it for, the class), over every area module; ``UNFLAGGED`` holds the few the suite only warns
or notes about. Run one with::

    python tests/mutants/agent_mutants.py NAME

The prompt-steering words of the reference agent apply (see acp_conformance/reference/agent/__init__.py):
"slowly" = about 6 s of work, "permission" = a permission request, "tool" = a tool call, "fail" =
the work fails after insertion.
"""

from __future__ import annotations

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(HERE))
for _path in (_ROOT, HERE):  # the package, and mutant_bases.py for the area modules
    if _path not in sys.path:
        sys.path.insert(0, _path)

from acp_conformance.reference.agent import main  # noqa: E402

# modules here that hold no mutants of an area
NOT_AREAS = {"agent_mutants.py", "agent_never_resumes.py", "mutant_bases.py"}

Table = dict[str, tuple[tuple[str, ...], type]]


def _load_areas() -> tuple[Table, Table]:
    """MUTANTS and UNFLAGGED of every area module. Each module is loaded by its path as ``mutants_<area>``, with the package and mutant_bases.py already on sys.path (set above)
    (never by its bare name, which a package elsewhere could share, e.g. ``schema``)."""
    mutants: Table = {}
    unflagged: Table = {}
    for name in sorted(os.listdir(HERE)):
        if not name.endswith(".py") or name in NOT_AREAS:
            continue
        module_name = f"mutants_{name[:-3]}"
        spec = importlib.util.spec_from_file_location(module_name, os.path.join(HERE, name))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = mod  # so that inspect and tracebacks find the classes
        spec.loader.exec_module(mod)
        for table, into in ((mod.MUTANTS, mutants), (getattr(mod, "UNFLAGGED", {}), unflagged)):
            for key, value in table.items():
                if key in mutants or key in unflagged:
                    raise RuntimeError(f"mutant {key!r} is defined twice ({name})")
                into[key] = value
    return mutants, unflagged


MUTANTS, UNFLAGGED = _load_areas()


def run(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    known = {**MUTANTS, **UNFLAGGED}
    if len(argv) != 1 or argv[0] not in known:
        sys.stderr.write("usage: agent_mutants.py NAME\nnames: %s\n" % ", ".join(sorted(known)))
        return 2
    return main(known[argv[0]][1])


if __name__ == "__main__":
    sys.exit(run())
