"""The property names a spec-defined type allows at its root, read from the schema: every name is reserved for
the protocol (extension data goes in ``_meta``), so a name the type does not define is a custom field."""

from __future__ import annotations

from typing import Any

from .schema import Schema

_COMBINATORS = ("allOf", "anyOf", "oneOf")


def root_names(schema: Schema, node: Any, depth: int = 0) -> set[str] | None:
    """The names ``node`` (a definition's name or a schema node) defines at its root, through $ref and the
    combinators (a union: any branch's names); None where the schema leaves the object open (additional
    properties allowed, or no properties at all), so that nothing is judged there."""
    if depth > 12:
        return None
    if isinstance(node, str):
        node = schema.defs.get(node)
    if not isinstance(node, dict):
        return None
    if isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/$defs/"):
        return root_names(schema, node["$ref"][len("#/$defs/"):], depth + 1)
    if node.get("additionalProperties") not in (None, False):
        return None
    names: set[str] = set(node.get("properties") or {})
    found = bool(names) or "properties" in node
    for key in _COMBINATORS:
        for sub in node.get(key) or ():
            more = root_names(schema, sub, depth + 1)
            if more is None and key != "allOf":
                return None  # an open branch of a union: any name may belong to it
            if more is not None:
                names |= more
                found = True
    return names | {"_meta"} if found else None


def update_names(schema: Schema, kind: Any) -> set[str] | None:
    """The names of the SessionUpdate variant ``kind`` (its discriminator value); None for a kind the schema does
    not define (a custom `_` kind, or a newer one)."""
    union = schema.defs.get("SessionUpdate") or {}
    for branch in union.get("anyOf") or union.get("oneOf") or ():
        props = branch.get("properties") if isinstance(branch, dict) else None
        if isinstance(props, dict) and (props.get("sessionUpdate") or {}).get("const") == kind:
            return root_names(schema, branch)
    return None
