"""The revisions of ACP v2 a program may implement, as data (``revisions.json``).

``base`` is v2 as released (the schema of the TypeScript SDK 2.4.0 and the Python SDK 1.0.0rc3, JSON-RPC 2.0
batches); ``preview`` is base plus the v2 Preview of 2026-11-20 (no batches, idempotency keys, replay_complete,
a repeated initialize). Which revisions a rule belongs to is its catalog row's ``revisions`` (``revisions.json``
says why for a rule of some revisions only: ``change``); a rule outside a revision is left out of that revision's verdict (as a rule of the other side is), and its
findings never block a run judged under it. The run's selected revision (``--acp-revision``) sets the exit
status; the other verdict is computed from the same findings, and the Preview readiness is what the Preview
asks beyond base that the program does not meet yet.

A revision's schema is ours with the revision's ``schema`` edits applied at load time (``schema_ref``: the
string ``revision:NAME`` that ``protocol/schema.py`` loads), so the validators and the fuzzer's values follow
the revision; ``--acp-schema PATH`` still overrides it.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

REVISIONS_PATH = Path(__file__).with_name("revisions.json")
SCHEMA_REF_PREFIX = "revision:"  # a schema "path" naming our schema as read under a revision
PREVIEW = "preview"
V1 = "v1"  # ACP protocol version 1: one more revision, of protocol 1 (docs/v1.md)
V1_PREFIX = "V1-"  # the IDs of the v1 rules (rules/catalog_v1.json)
JUDGED_PROTOCOLS = (1, 2)  # the protocol versions the suite judges


@lru_cache(maxsize=1)
def load_revisions() -> dict[str, Any]:
    return json.loads(REVISIONS_PATH.read_text(encoding="utf-8"))


def names() -> list[str]:
    """The revisions of ACP v2 (--acp-revision takes one); v1 is selected by the protocol, not by name."""
    return list(load_revisions()["order"])


def every_name() -> list[str]:
    """Every revision a catalog row may name: the v2 ones and v1."""
    return list(load_revisions()["revisions"])


def protocol_of(revision: str | None) -> int:
    """The protocol version a revision belongs to (v1: 1; base, preview and None: 2)."""
    if revision is None:
        return 2
    return int(load_revisions()["revisions"][revision].get("protocol", 2))


def rule_protocol(rule_id: str) -> int:
    """The protocol version whose rules hold ``rule_id``: the V1-* rules are version 1's, every other version 2's."""
    return 1 if rule_id.startswith(V1_PREFIX) else 2


def for_protocol(protocol: int, revision: str | None = None) -> str:
    """The revision a run judges: v1 for a version-1 target, else the v2 revision asked for (--acp-revision)."""
    return V1 if protocol == 1 else check_name(revision)


def protocol_label(revision: str | None) -> str:
    """How a verdict names the version it judged: "ACP v1", "ACP v2 (preview)"."""
    r = revision or default()
    return "ACP v1" if protocol_of(r) == 1 else f"ACP v2 ({r})"


def default() -> str:
    return str(load_revisions()["default"])


def title(revision: str) -> str:
    return str(load_revisions()["revisions"][revision]["title"])


def label(revision: str) -> str:
    """The revision as a report names what it judged: "ACP v2 Preview (2026-11-20)"."""
    r = load_revisions()["revisions"][revision]
    return str(r.get("label") or r["title"])


def text(revision: str) -> str:
    return str(load_revisions()["revisions"][revision]["text"])


def check_name(revision: str | None) -> str:
    """The revision's name, or ValueError with the sentence a bad option exits with."""
    r = revision or default()
    if r not in load_revisions()["revisions"]:
        raise ValueError(f"--acp-revision takes one of {', '.join(names())} (got {revision!r})")
    return r


def same_protocol(revision: str) -> list[str]:
    """The revisions judged from the same findings as ``revision``: those of its protocol."""
    return [V1] if protocol_of(revision) == 1 else names()


def change(rule_id: str) -> str:
    """Why a rule belongs to some revisions only, with its public source ('' for a rule of every revision)."""
    entry = load_revisions()["rules"].get(rule_id)
    return str(entry.get("change", "")) if entry else ""


def schema_ref(revision: str | None) -> str | None:
    """The schema a run under ``revision`` validates with: None (ours as it is) for a revision without schema
    edits, else ``revision:NAME``."""
    r = revision or default()
    return f"{SCHEMA_REF_PREFIX}{r}" if load_revisions()["revisions"][r].get("schema") else None  # v1: ours


def is_schema_ref(path: Any) -> bool:
    return isinstance(path, str) and path.startswith(SCHEMA_REF_PREFIX)


def derive_schema(document: dict[str, Any], revision: str) -> dict[str, Any]:
    """Our schema as ``revision`` reads it: its properties, union variants and definitions dropped. A variant
    of a later revision stays acceptable as what the released schema calls a "future ACP variant" (its shape
    is not judged), so a program implementing more than the revision is not failed for it."""
    edits = load_revisions()["revisions"][revision].get("schema") or {}
    doc = copy.deepcopy(document)
    defs = doc["$defs"]
    for name, props in edits.get("drop_properties", {}).items():
        d = defs.get(name, {})
        for p in props:
            d.get("properties", {}).pop(p, None)
            if p in d.get("required", []):
                d["required"].remove(p)
    for name, variants in edits.get("drop_variants", {}).items():
        d = defs.get(name, {})
        key = "oneOf" if "oneOf" in d else "anyOf"
        d[key] = [b for b in d.get(key, []) if _tag(b) not in variants]
        later = edits.get("later_variants", {}).get(name, [])
        if later:
            d[key].append({"title": "later revision",
                           "description": f"A variant of a later ACP revision ({', '.join(later)}): reserved for "
                                          "future ACP variants under this revision, its shape not judged.",
                           "type": "object", "properties": {_tag_field(d): {"enum": list(later)}},
                           "required": [_tag_field(d)]})
    for name in edits.get("drop_definitions", []):
        defs.pop(name, None)
    doc["x-acp-revision"] = f"{doc.get('x-acp-revision') or doc.get('title') or 'ACP v2'} ({revision})"
    return doc


def _tag_field(union: dict[str, Any]) -> str:
    for b in union.get("oneOf", union.get("anyOf", [])):
        for k, v in b.get("properties", {}).items():
            if isinstance(v, dict) and "const" in v:
                return k
    return "type"


def _tag(branch: dict[str, Any]) -> Any:
    for v in branch.get("properties", {}).values():
        if isinstance(v, dict) and "const" in v:
            return v["const"]
    return None


def readiness(base_verdict: Any, preview_verdict: Any) -> list[Any]:
    """The Preview rules a program meeting base does not meet yet: the rule verdicts that block the Preview
    verdict and not the base one."""
    blocking_base = {v.rule.id for v in base_verdict.blocking_failures}
    return [v for v in preview_verdict.blocking_failures if v.rule.id not in blocking_base]


def readiness_json(verdict: Any) -> list[dict[str, Any]]:
    return [{"id": v.rule.id, "status": v.status, "summary": v.rule.summary, "source": v.rule.public_source,
             "change": change(v.rule.id)} for v in getattr(verdict, "readiness", [])]


def readiness_line(verdict: Any) -> str:
    """One line beside the verdict: what the Preview asks that this program does not meet yet."""
    if not getattr(verdict, "by_revision", None) or PREVIEW not in verdict.by_revision:
        return ""
    ready = verdict.readiness
    if not ready:
        return f"Preview readiness: every {title(PREVIEW)} rule judged here is met."
    return f"Preview readiness: {len(ready)} {title(PREVIEW)} rule(s) not met yet: " + ", ".join(
        f"{v.rule.id} ({v.status})" for v in ready)


def readiness_lines(verdict: Any) -> list[str]:
    """One line per Preview rule not met yet, with its source (the terminal and the Markdown summary)."""
    return [f"{v.rule.id} ({v.status}): {v.rule.summary} Source: {v.rule.public_source}"
            for v in getattr(verdict, "readiness", [])]
