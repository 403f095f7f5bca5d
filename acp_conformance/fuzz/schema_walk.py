"""The schema walk shared by both generators (``strategies.py``, ``fast_generator.py``): every node
brought to a disjunctive normal form (``anyOf``/``oneOf`` are alternatives, ``allOf`` and sibling
keywords are conjunctions, ``$ref`` is resolved), each alternative merged into one plain node; and the
``SPEC_REFINEMENTS`` applied to the definitions first."""

from __future__ import annotations

from typing import Any

_NO_CONST = object()


def _discriminated(definition: dict[str, Any]) -> list[tuple[Any, dict[str, Any]]]:
    """(discriminator value, branch) of a discriminated union (``x-discriminator``); branches without
    a const for the discriminator are left out."""
    key = definition.get("x-discriminator")
    out = []
    for branch in definition.get("anyOf", []) + definition.get("oneOf", []):
        value = ((branch.get("properties") or {}).get(key) or {}).get("const", _NO_CONST)
        if key and value is not _NO_CONST:
            out.append((value, branch))
    return out

# What the spec requires of values beyond what our schema states (the catalog's CONTENT-001..003 check
# them): valid traffic honours it, or a correct agent that echoes the client's content would be
# blamed for it. Each entry narrows one property of one definition; the schema stays the judge of
# validity (a refined value is still a schema-valid value).
SPEC_REFINEMENTS: dict[tuple[str, str], dict[str, Any]] = {
    ("ImageContent", "data"): {"type": "string", "x-fuzz": "base64"},
    ("AudioContent", "data"): {"type": "string", "x-fuzz": "base64"},
    ("BlobResourceContents", "blob"): {"type": "string", "x-fuzz": "base64"},
    ("ResourceLink", "size"): {"type": ["integer", "null"], "minimum": 0},
    ("Icon", "src"): {"type": "string", "x-fuzz": "https-or-data-uri"},
    ("Annotations", "priority"): {"type": ["number", "null"], "minimum": 0, "maximum": 1},
    ("Annotations", "lastModified"): {"type": ["string", "null"], "x-fuzz": "iso8601"},
}


def refined_defs(defs: dict[str, Any]) -> dict[str, Any]:
    """The schema's definitions with ``SPEC_REFINEMENTS`` applied (a copy; the schema is untouched)."""
    out = dict(defs)
    for (name, prop), node in SPEC_REFINEMENTS.items():
        if name in out and prop in (out[name].get("properties") or {}):
            out[name] = {**out[name], "properties": {**out[name]["properties"], prop: node}}
    return out


class _Unsupported(Exception):
    """The walker cannot generate this node; the definition falls back to hypothesis-jsonschema."""


def _dnf(schema: Any, defs: dict[str, Any], depth: int = 0) -> list[list[dict[str, Any]]]:
    """The node as alternatives, each a list of plain nodes (no $ref/allOf/anyOf/oneOf) to be merged."""
    if schema is True or schema == {}:
        return [[{}]]
    if schema is False:
        return []
    if depth > 12:
        raise _Unsupported("combinators nested too deep")
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise _Unsupported(f"external $ref {ref}")
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        alts = _dnf(defs[ref[len("#/$defs/"):]], defs, depth + 1)
        return _and(alts, _dnf(rest, defs, depth + 1)) if rest else alts
    # if/then (only Error's -32022 data shape here) is left to the validator that checks every
    # definition strategy: the rare value that breaks it is filtered out, not generated right
    base = {k: v for k, v in schema.items() if k not in ("allOf", "anyOf", "oneOf", "if", "then", "else")}
    alts = [[base]]
    for part in schema.get("allOf", []):
        alts = _and(alts, _dnf(part, defs, depth + 1))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            union = [a for branch in schema[key] for a in _dnf(branch, defs, depth + 1)]
            alts = _and(alts, union)
    return alts


def _and(a: list[list[dict]], b: list[list[dict]]) -> list[list[dict]]:
    return [x + y for x in a for y in b]


_ANNOTATIONS = {"description", "title", "default", "examples", "x-method", "x-side", "x-discriminator", "$schema",
                "$comment", "deprecated"}


def _merge(nodes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One plain node satisfying all ``nodes`` (None when they contradict each other)."""
    out: dict[str, Any] = {}
    props: dict[str, list[Any]] = {}
    for n in nodes:
        for k, v in n.items():
            if k in _ANNOTATIONS:
                continue
            if k == "properties":
                for name, sub in v.items():
                    props.setdefault(name, []).append(sub)
            elif k == "required":
                out["required"] = sorted(set(out.get("required", [])) | set(v))
            elif k == "type":
                types = set(v if isinstance(v, list) else [v])
                if "integer" in types:
                    types.add("integer")
                if "type" in out:
                    have = set(out["type"])
                    if "number" in have and "integer" in types:
                        have.add("integer")
                    if "number" in types and "integer" in have:
                        types.add("integer")
                    types &= have
                    if not types:
                        return None
                out["type"] = sorted(types)
            elif k == "const":
                if "const" in out and out["const"] != v:
                    return None
                out["const"] = v
            elif k == "enum":
                out["enum"] = [e for e in v if e in out["enum"]] if "enum" in out else list(v)
                if not out["enum"]:
                    return None
            elif k == "not":
                if set(v) - {"required"}:
                    raise _Unsupported("not with more than required")
                out.setdefault("forbidden", set()).update(v.get("required", []))
            elif k in ("minimum", "minItems", "minLength"):
                out[k] = max(out.get(k, v), v)
            elif k in ("maximum", "maxItems", "maxLength"):
                out[k] = min(out.get(k, v), v)
            elif k in ("items", "additionalProperties", "pattern", "format", "x-absolute-path", "x-fuzz"):
                if k in out and out[k] != v:
                    if k == "items":
                        out[k] = {"allOf": [out[k], v]}
                        continue
                    raise _Unsupported(f"two different {k}")
                out[k] = v
            else:
                raise _Unsupported(f"keyword {k}")
    if props:
        out["properties"] = {name: subs[0] if len(subs) == 1 else {"allOf": subs} for name, subs in props.items()}
    if "const" in out and "enum" in out and out["const"] not in out["enum"]:
        return None
    for name in out.get("forbidden", ()):
        if name in out.get("required", ()):
            return None
    return out
