"""The rule catalog, as data: IDs, levels, sides, checks and sources, unchanged from the shared
catalog. ``blocking`` rules (MUST, MUST NOT) decide conformance; SHOULD rules warn."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

CATALOG_PATH = Path(__file__).with_name("catalog.json")  # the shared catalog, IDs unchanged
EXTRA_PATH = Path(__file__).with_name("catalog_extra.json")  # rules this project adds, new IDs

BLOCKING_LEVELS = {"MUST", "MUST NOT"}
SHOULD_LEVELS = {"SHOULD", "SHOULD NOT"}


@dataclass(frozen=True)
class Rule:
    id: str
    area: str
    level: str
    side: str
    summary: str
    check: str
    precondition: str
    testable: str
    source: str

    @property
    def blocking(self) -> bool:
        return self.level in BLOCKING_LEVELS

    @property
    def spec_refs(self) -> list[str]:
        return [s.strip() for s in self.source.split(";") if s.strip()]


@lru_cache(maxsize=1)
def load_catalog() -> dict[str, Rule]:
    data = json.loads(CATALOG_PATH.read_text(encoding="utf-8"))
    data += json.loads(EXTRA_PATH.read_text(encoding="utf-8"))
    return {r["id"]: Rule(**{k: r.get(k, "") for k in Rule.__dataclass_fields__}) for r in data}


@lru_cache(maxsize=1)
def load_not_observable() -> dict[str, str]:
    """Rules that cannot be seen on the wire, with the reason: ``not_observable*.json`` files beside
    this module, one per rule family ({rule id: reason}). They are left out of the verdict."""
    out: dict[str, str] = {}
    for path in sorted(CATALOG_PATH.parent.glob("not_observable*.json")):
        out.update(json.loads(path.read_text(encoding="utf-8")))
    return out
