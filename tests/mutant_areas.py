"""The one loader of the mutant registries' area modules (tests/mutants/<area>.py for the agent,
tests/client_mutants/<area>.py for the client): each holds the mutants of one catalog area."""

from __future__ import annotations

import importlib.util
import os
import sys

Table = dict[str, tuple]


def load_areas(folder: str, prefix: str, not_areas: set[str]) -> tuple[Table, Table]:
    """(MUTANTS, UNFLAGGED) over the area modules of ``folder`` (every ``*.py`` but ``not_areas``).

    Each module is loaded by its path as ``<prefix><area>`` (never by its bare name, which a package
    elsewhere could share, e.g. ``schema``); the caller puts the package and ``folder`` on sys.path first,
    for the modules' own imports."""
    mutants: Table = {}
    unflagged: Table = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py") or name in not_areas:
            continue
        module_name = f"{prefix}{name[:-3]}"
        spec = importlib.util.spec_from_file_location(module_name, os.path.join(folder, name))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = mod  # so that inspect and tracebacks find the classes
        spec.loader.exec_module(mod)
        for table, into in ((mod.MUTANTS, mutants), (getattr(mod, "UNFLAGGED", {}), unflagged)):
            for key, value in table.items():
                if key in mutants or key in unflagged:
                    raise RuntimeError(f"mutant {key!r} is defined twice ({name})")
                into[key] = value
    return mutants, unflagged
