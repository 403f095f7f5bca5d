"""Where the bundled data lives: the schema/ and scenarios/ folders.

In a source checkout (and an editable install) they are the top-level folders of the repo; in an
installed wheel they are copied into the package as ``acp_conformance/_bundled/``.
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def _find(name: str) -> Path:
    for candidate in (_PKG / "_bundled" / name, _PKG.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"the bundled folder {name!r} is missing from the installation ({_PKG})")


def schema_dir() -> Path:
    return _find("schema")


def scenarios_dir() -> Path:
    return _find("scenarios")


def suite_folder(side: str, protocol: int = 2) -> Path:
    """The bundled scenarios of a run: scenarios/agent, scenarios/client, or scenarios/<side>_v1 for version 1."""
    return scenarios_dir() / (f"{side}_v1" if protocol == 1 else side)


# (side, protocol) of every bundled scenario folder
SUITE_FOLDERS = (("agent", 2), ("agent", 1), ("client", 2), ("client", 1))
