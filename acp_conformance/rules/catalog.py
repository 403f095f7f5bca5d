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
# who creates each checked rule's situation: "suite" (always, against a conforming target) or
# "target" (only the target decides: tool calls, permission requests...), with what would reach it
SITUATIONS_PATH = Path(__file__).with_name("situations.json")

BLOCKING_LEVELS = {"MUST", "MUST NOT"}
SHOULD_LEVELS = {"SHOULD", "SHOULD NOT"}
# sources of lower authority than the seeds (RULES.md, "Sources and authority" 3 and 4)
DOC_ONLY_SOURCES = ("upstream-doc:", "site-doc:", "site-rfd:")
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
    creator: str = ""  # "suite" or "target" for a checked rule (situations.json); "" when unchecked
    reach: str = ""  # for a "target" rule: what would make its situation arise (a steering option...)

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
    def spec_refs(self) -> list[str]:
        return [s.strip() for s in self.source.split(";") if s.strip()]


@lru_cache(maxsize=1)
def load_catalog() -> dict[str, Rule]:
    data = json.loads(CATALOG_PATH.read_text(encoding="utf-8"))
    data += json.loads(EXTRA_PATH.read_text(encoding="utf-8"))
    situations = load_situations()
    return {r["id"]: Rule(**{k: r.get(k, "") for k in Rule.__dataclass_fields__ if k not in ("creator", "reach")},
                          **situations.get(r["id"], {})) for r in data}


@lru_cache(maxsize=1)
def load_situations() -> dict[str, dict[str, str]]:
    """{rule id: {"creator": "suite"|"target", "reach": ...}} for every checked rule."""
    return json.loads(SITUATIONS_PATH.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def load_not_observable() -> dict[str, str]:
    """Rules that cannot be seen on the wire, with the reason: ``not_observable*.json`` files beside
    this module, one per rule family ({rule id: reason}). They are left out of the verdict."""
    out: dict[str, str] = {}
    for path in sorted(CATALOG_PATH.parent.glob("not_observable*.json")):
        out.update(json.loads(path.read_text(encoding="utf-8")))
    return out
