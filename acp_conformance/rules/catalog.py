"""The rule catalog, as data: one row per rule (IDs, levels, tiers, revisions, sides, checks and sources),
the IDs unchanged from the shared catalog.

Tiers are the rows' own ``tier`` field, never read from the source text: ``mandatory`` (a MUST / MUST NOT
stated by the v2 seeds, the schema or JSON-RPC 2.0, which ACP adopts; it decides conformance), ``advisory``
(a MUST whose only source is the older upstream docs or a stored copy of the web site: its failure warns,
like a SHOULD, since the seeds win every disagreement and may have dropped it), ``should`` and ``may``.
``--acp-strict`` makes every warning block. ``revisions``: the ACP revisions the rule belongs to
(``protocol/revisions.json`` names them and says why a rule belongs to some only).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

CATALOG_PATH = Path(__file__).with_name("catalog.json")  # the shared catalog, IDs unchanged
EXTRA_PATH = Path(__file__).with_name("catalog_extra.json")  # rules this project adds, new IDs
V1_PATH = Path(__file__).with_name("catalog_v1.json")  # the rules of ACP v1 (V1-* IDs; docs/v1.md)
# who creates each rule's situation (suite / target) and what would reach a target rule
SITUATIONS_PATH = Path(__file__).with_name("situations.json")
SUITE, TARGET = "suite", "target"

BLOCKING_LEVELS = {"MUST", "MUST NOT"}
SHOULD_LEVELS = {"SHOULD", "SHOULD NOT"}
# each level's tiers (a row's tier must be one of its level's)
TIERS = {"MUST": ("mandatory", "advisory"), "MUST NOT": ("mandatory", "advisory"), "SHOULD": ("should",),
         "SHOULD NOT": ("should",), "MAY": ("may",)}


class CatalogError(ValueError):
    """A catalog row without a valid tier or revisions: the sentence names the rule and the field."""


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
    tier: str  # mandatory, advisory, should or may: the row's own field (TIERS)
    revisions: tuple[str, ...]  # the ACP revisions the rule belongs to (protocol/revisions.json names them)
    # who creates the situation: "suite" or "target", or ((side, creator), ...) where the sides differ (situations.json)
    creator: Any = SUITE
    reach: str = ""  # for a target rule: what would exercise it (a steering option, a behaviour)

    def creator_on(self, side: str | None) -> str:
        """Who creates this rule's situation in a run against a target of ``side`` (agent / client)."""
        if isinstance(self.creator, tuple):  # ((side, creator), ...): hashable, as a frozen dataclass needs
            by_side = dict(self.creator)
            return by_side.get(side or "agent", by_side.get("agent", SUITE))
        return self.creator

    @property
    def advisory(self) -> bool:
        """A MUST whose only sources are the upstream docs or the web site: it warns, not blocks."""
        return self.tier == "advisory"

    @property
    def blocking(self) -> bool:
        return self.tier == "mandatory"

    @property
    def warns(self) -> bool:
        """A failure of this rule is a warning (SHOULD, or an advisory MUST)."""
        return self.tier in ("should", "advisory")

    def in_revision(self, revision: str | None) -> bool:
        """Does the rule belong to ``revision`` (None: every rule of protocol version 2, which a run judges when no
        revision is named, e.g. the fuzzer's)?"""
        if revision is None:
            from ..protocol.revisions import rule_protocol
            return rule_protocol(self.id) == 2
        return revision in self.revisions

    @property
    def spec_refs(self) -> list[str]:
        return [s.strip() for s in self.source.split(";") if s.strip()]

    @property
    def public_source(self) -> str:
        """The source as a reader outside this project can open it: ACP pages, schema types, RFDs, JSON-RPC."""
        return public_source(self.source)

    @property
    def note(self) -> str:
        """Where this rule's reading differs from another published kit or an older text (kit_notes.json)."""
        return load_kit_notes().get(self.id, "")


@lru_cache(maxsize=1)
def load_catalog() -> dict[str, Rule]:
    data = json.loads(CATALOG_PATH.read_text(encoding="utf-8"))
    data += json.loads(EXTRA_PATH.read_text(encoding="utf-8"))
    data += json.loads(V1_PATH.read_text(encoding="utf-8"))
    situations = load_situations()
    text_fields = [k for k in Rule.__dataclass_fields__ if k not in ("creator", "reach", "tier", "revisions")]
    def creator(rid: str) -> Any:
        c = situations.get(rid, {}).get("creator", SUITE)
        return tuple(sorted(c.items())) if isinstance(c, dict) else c

    return {r["id"]: Rule(**{k: r.get(k, "") for k in text_fields}, tier=_tier(r), revisions=_revisions(r),
                          creator=creator(r["id"]), reach=situations.get(r["id"], {}).get("reach", ""))
            for r in data}


def _tier(row: dict[str, Any]) -> str:
    tier = row.get("tier")
    if tier not in TIERS.get(row.get("level"), ()):
        raise CatalogError(f"catalog rule {row.get('id')}: 'tier' must be one of "
                           f"{', '.join(TIERS.get(row.get('level'), ()))} for level {row.get('level')} (got {tier!r})")
    return tier


def _revisions(row: dict[str, Any]) -> tuple[str, ...]:
    from ..protocol.revisions import every_name
    revs = row.get("revisions")
    if not isinstance(revs, list) or not revs or not set(revs) <= set(every_name()):
        raise CatalogError(f"catalog rule {row.get('id')}: 'revisions' must list some of {', '.join(every_name())} "
                           f"(got {revs!r})")
    return tuple(revs)


def applies(rule_id: str, revision: str | None) -> bool:
    """Does catalog rule ``rule_id`` belong to ``revision`` (None: every rule of version 2)?"""
    rule = load_catalog().get(rule_id)
    return rule is None or rule.in_revision(revision)


@lru_cache(maxsize=1)
def load_situations() -> dict[str, dict[str, Any]]:
    """situations.json: rule id -> {creator, reach}."""
    return json.loads(SITUATIONS_PATH.read_text(encoding="utf-8"))["rules"]


@lru_cache(maxsize=1)
def _public_table() -> dict[str, Any]:
    return json.loads(SITUATIONS_PATH.with_name("public_sources.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=512)
def public_source(source: str) -> str:
    """``source`` with every internal reference replaced by the public document it came from."""
    table = _public_table()
    out = source
    for old, new in table["replace"]:
        out = out.replace(old, new)
    for pattern, repl in table["patterns"]:
        out = re.sub(pattern, repl, out)
    return re.sub(r"\s+([;,)])", r"\1", re.sub(r"\s{2,}", " ", out)).strip()


@lru_cache(maxsize=1)
def load_kit_notes() -> dict[str, str]:
    """kit_notes.json: rule id -> how its reading differs from another published kit (acp-tck) or text."""
    return json.loads(SITUATIONS_PATH.with_name("kit_notes.json").read_text(encoding="utf-8"))["notes"]


@lru_cache(maxsize=1)
def load_retired() -> dict[str, str]:
    """retired.json: catalog rules the suite no longer judges (rule id -> why), e.g. the JSON-RPC batch rules
    that ACP v2 dropped. They keep their IDs and are listed, unchecked, with the reason."""
    return json.loads(SITUATIONS_PATH.with_name("retired.json").read_text(encoding="utf-8"))["retired"]


@lru_cache(maxsize=1)
def load_unchecked() -> dict[str, str]:
    """unchecked.json: catalog rules that could be seen on the wire but that no monitor judges yet (rule id ->
    why). Every catalog rule is checked, not observable, retired or listed there."""
    return json.loads(SITUATIONS_PATH.with_name("unchecked.json").read_text(encoding="utf-8"))["unchecked"]


@lru_cache(maxsize=1)
def load_not_observable() -> dict[str, str]:
    """Rules that cannot be seen on the wire, with the reason: ``not_observable*.json`` files beside
    this module, one per rule family ({rule id: reason}). They are left out of the verdict."""
    out: dict[str, str] = {}
    for path in sorted(CATALOG_PATH.parent.glob("not_observable*.json")):
        out.update(json.loads(path.read_text(encoding="utf-8")))
    return out
