"""The rule catalog, as data: IDs, levels, sides, checks and sources, unchanged from the shared
catalog.

Tiers: a MUST / MUST NOT stated by the v2 seeds, the schema or JSON-RPC 2.0 (which ACP adopts) is
``mandatory`` and decides conformance (``blocking``). One whose only source is the older upstream
docs or a stored copy of the web site is ``advisory``: its failure warns, like a SHOULD, since the
seeds win every disagreement and may have dropped it (batches are the known case). The stdio
framing rules are the exception: ACP is JSON-RPC over stdio by definition, and the transport page is
the only text that spells the framing out. ``--acp-strict`` makes every warning block.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

CATALOG_PATH = Path(__file__).with_name("catalog.json")  # the shared catalog, IDs unchanged
EXTRA_PATH = Path(__file__).with_name("catalog_extra.json")  # rules this project adds, new IDs

BLOCKING_LEVELS = {"MUST", "MUST NOT"}
SHOULD_LEVELS = {"SHOULD", "SHOULD NOT"}
# sources of lower authority than the seeds (RULES.md, "Sources and authority" 3 and 4)
# (an SDK's release notes rank with the docs: they say what v2 changed before the spec text does)
DOC_ONLY_SOURCES = ("upstream-doc:", "site-doc:", "site-rfd:", "release:")
# the stdio framing itself: mandatory although only the transport page states it
FRAMING_RULES = {"TRANSPORT-001", "TRANSPORT-002", "TRANSPORT-003", "CLIENT-025"}


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
    def advisory(self) -> bool:
        """A MUST whose only sources are the upstream docs or the web site: it warns, not blocks."""
        refs = [r.strip() for r in re.sub(r"\([^()]*\)", "", self.source).split(";") if r.strip()]
        return (self.level in BLOCKING_LEVELS and self.id not in FRAMING_RULES and bool(refs)
                and all(r.startswith(DOC_ONLY_SOURCES) for r in refs))

    @property
    def blocking(self) -> bool:
        return self.level in BLOCKING_LEVELS and not self.advisory

    @property
    def warns(self) -> bool:
        """A failure of this rule is a warning (SHOULD, or an advisory MUST)."""
        return self.level in SHOULD_LEVELS or self.advisory

    @property
    def tier(self) -> str:
        if self.level in BLOCKING_LEVELS:
            return "advisory" if self.advisory else "mandatory"
        return "should" if self.level in SHOULD_LEVELS else "may"

    @property
    def public_source(self) -> str:
        """The source as public documents (page and section, schema type, RFD, JSON-RPC 2.0) with their
        URLs: what reports show (the catalog's own tokens name internal copies)."""
        from .sources import public_source
        return public_source(self.source)

    @property
    def spec_refs(self) -> list[str]:
        return [s.strip() for s in self.source.split(";") if s.strip()]


@lru_cache(maxsize=1)
def load_catalog() -> dict[str, Rule]:
    data = json.loads(CATALOG_PATH.read_text(encoding="utf-8"))
    data += json.loads(EXTRA_PATH.read_text(encoding="utf-8"))
    return {r["id"]: Rule(**{k: r.get(k, "") for k in Rule.__dataclass_fields__}) for r in data}


@lru_cache(maxsize=1)
def load_rule_notes() -> dict[str, str]:
    """Why a rule reads as it does where upstream moved, or another published kit checks otherwise
    (``rule_notes.json``, {rule id: note}): shown beside the rule in the reports."""
    data = json.loads(CATALOG_PATH.with_name("rule_notes.json").read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if not k.startswith("_")}


@lru_cache(maxsize=1)
def load_not_observable() -> dict[str, str]:
    """Rules that cannot be seen on the wire, with the reason: ``not_observable*.json`` files beside
    this module, one per rule family ({rule id: reason}). They are left out of the verdict."""
    out: dict[str, str] = {}
    for path in sorted(CATALOG_PATH.parent.glob("not_observable*.json")):
        out.update(json.loads(path.read_text(encoding="utf-8")))
    return out
