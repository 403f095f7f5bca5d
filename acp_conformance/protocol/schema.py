"""The ACP v2 model: our schema, loaded once, and the method table derived from it.

The method table comes from the schema itself (``x-acp-methods`` when present, else the
``x-method``/``x-side`` annotations on definitions), so ``--acp-schema PATH`` can point at another
revision, such as an officially published file, and the validators follow it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..resources import schema_dir

DEFAULT_SCHEMA = "acp-v2.schema.json"

CLIENT_TO_AGENT = "client->agent"
AGENT_TO_CLIENT = "agent->client"
BOTH = "both"

_SIDE_TO_DIRECTION = {"agent": CLIENT_TO_AGENT, "client": AGENT_TO_CLIENT, "protocol": BOTH}


class SchemaError(Exception):
    """The schema file cannot be read or is not an ACP schema; the message is for a person."""


@dataclass(frozen=True)
class Method:
    name: str
    direction: str  # who sends it: client->agent, agent->client or both
    kind: str  # request or notification
    params: str | None  # definition name
    result: str | None  # definition name (requests only)

    def sent_by(self, side: str) -> bool:
        """``side`` is "client" or "agent"."""
        if self.direction == BOTH:
            return True
        return self.direction == (CLIENT_TO_AGENT if side == "client" else AGENT_TO_CLIENT)


@dataclass
class Schema:
    path: Path
    document: dict[str, Any]
    methods: dict[str, Method]
    sha256: str

    def requests_to(self, side: str) -> frozenset[str]:
        """The request methods that ``side`` ("agent" or "client") handles: the other side sends them."""
        sender = "client" if side == "agent" else "agent"
        return frozenset(n for n, m in self.methods.items() if m.kind == "request" and m.sent_by(sender))

    @property
    def defs(self) -> dict[str, Any]:
        return self.document.get("$defs", {})

    @property
    def revision(self) -> str:
        return str(self.document.get("x-acp-revision") or self.document.get("title") or self.path.name)

    def definition_schema(self, name: str) -> dict[str, Any]:
        """A standalone schema for one definition (refs resolve inside the same document)."""
        if name not in self.defs:
            raise KeyError(name)
        return {"$schema": self.document.get("$schema", "https://json-schema.org/draft/2020-12/schema"),
                "$defs": self.defs, "$ref": f"#/$defs/{name}"}


def _methods_from_table(table: dict[str, Any]) -> dict[str, Method]:
    out = {}
    for name, m in table.items():
        out[name] = Method(name, m["direction"], m["kind"], m.get("params"), m.get("result"))
    return out


def _methods_from_annotations(defs: dict[str, Any]) -> dict[str, Method]:
    found: dict[str, dict[str, Any]] = {}
    for def_name, d in defs.items():
        if not isinstance(d, dict) or "x-method" not in d:
            continue
        entry = found.setdefault(d["x-method"], {"side": d.get("x-side")})
        if def_name.endswith("Response"):
            entry["result"] = def_name
        elif def_name.endswith("Notification"):
            entry["params"] = def_name
            entry["kind"] = "notification"
        else:
            entry["params"] = def_name
            entry.setdefault("kind", "request")
    out = {}
    for name, e in found.items():
        kind = e.get("kind") or ("request" if "result" in e else "notification")
        out[name] = Method(name, _SIDE_TO_DIRECTION.get(e.get("side"), BOTH), kind,
                           e.get("params"), e.get("result") if kind == "request" else None)
    return out


def load_schema(path: str | Path | None = None) -> Schema:
    from . import revisions
    if revisions.is_schema_ref(path):  # ours as an ACP revision reads it (revisions.json), edited at load time
        name = str(path)[len(revisions.SCHEMA_REF_PREFIX):]
        ours = load_schema(None)
        doc = revisions.derive_schema(ours.document, revisions.check_name(name))
        return Schema(ours.path, doc, ours.methods, ours.sha256)
    p = Path(path) if path else schema_dir() / DEFAULT_SCHEMA
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise SchemaError(f"cannot read the ACP schema {str(p)!r}: {e.strerror or e}") from None
    try:
        doc = json.loads(raw)
    except ValueError as e:
        raise SchemaError(f"the ACP schema {str(p)!r} is not valid JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("$defs"), dict):
        raise SchemaError(f"the ACP schema {str(p)!r} has no $defs: it is not an ACP JSON Schema")
    table = doc.get("x-acp-methods")
    methods = _methods_from_table(table) if isinstance(table, dict) else _methods_from_annotations(doc["$defs"])
    if not methods:
        raise SchemaError(f"the ACP schema {str(p)!r} defines no methods (no x-acp-methods table "
                          "and no x-method annotations)")
    missing = sorted({d for m in methods.values() for d in (m.params, m.result) if d and d not in doc["$defs"]})
    if missing:
        raise SchemaError(f"the ACP schema {str(p)!r} names definitions it does not define: {', '.join(missing)}")
    return Schema(p, doc, methods, hashlib.sha256(raw).hexdigest())


@lru_cache(maxsize=8)
def cached_schema(path: str | None = None) -> Schema:
    return load_schema(path)
