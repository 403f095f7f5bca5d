"""Drift between our ACP v2 schema and the published npm schema (schema.unstable.json).

Compared: the method sets (the reference's methods come from its ``x-method`` annotations) and
each method's receiving side; per definition present in both, the top-level ``required`` list
and the discriminator/enum values; definitions present only in ours, and reference definitions
that are reachable from the methods both schemas share but missing from ours. Every difference
must be fixed or listed in ``schema/drift-allowlist.yaml``; stale allowlist entries fail too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
OURS = REPO / "schema" / "acp-v2.schema.json"
ALLOWLIST = REPO / "schema" / "drift-allowlist.yaml"
REFERENCE = Path(__file__).resolve().parents[2] / "shared/reference/acp-schema/v2/schema.unstable.json"

KINDS = {"method", "required", "discriminator", "definition"}


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _defs(schema: dict) -> dict:
    return schema.get("$defs") or schema.get("definitions") or {}


def _methods(schema: dict) -> dict[str, set[str]]:
    """method name -> set of x-side values, from the x-method annotations."""
    out: dict[str, set[str]] = {}
    for d in _defs(schema).values():
        if isinstance(d, dict) and "x-method" in d:
            out.setdefault(d["x-method"], set()).add(d.get("x-side"))
    return out


def _branch_value(branch: dict):
    """(discriminator, value) of one union branch, or None for catch-all/untagged branches."""
    if "const" in branch:
        return ("", [branch["const"]])
    if "enum" in branch:
        return ("", list(branch["enum"]))
    props = branch.get("properties") or {}
    for name in branch.get("required") or []:
        p = props.get(name)
        if isinstance(p, dict) and "const" in p:
            return (name, [p["const"]])
    return None


def _variants(defn: dict) -> dict[str, set]:
    """discriminator ('' for a plain enum) -> set of known values."""
    out: dict[str, set] = {}
    if "enum" in defn:
        out.setdefault("", set()).update(json.dumps(v) for v in defn["enum"])
    for key in ("anyOf", "oneOf"):
        for b in defn.get(key) or []:
            if not isinstance(b, dict):
                continue
            bv = _branch_value(b)
            if bv:
                out.setdefault(bv[0], set()).update(json.dumps(v) for v in bv[1])
    return out


def _reachable(defs: dict, roots: list[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        n = todo.pop()
        if n in seen or n not in defs:
            continue
        seen.add(n)
        todo.extend(re.findall(r'"#/\$defs/([^"]+)"', json.dumps(defs[n])))
    return seen


def compute_differences(ours: dict, ref: dict) -> dict[tuple[str, str, str], str]:
    """(kind, name, detail) -> human-readable description."""
    diffs: dict[tuple[str, str, str], str] = {}
    od, rd = _defs(ours), _defs(ref)
    om, rm = _methods(ours), _methods(ref)

    for name in sorted(set(om) | set(rm)):
        if name not in rm:
            diffs[("method", name, "only in ours")] = f"method {name} is only in our schema"
        elif name not in om:
            diffs[("method", name, "only in reference")] = f"method {name} is only in the reference"
        elif om[name] != rm[name]:
            diffs[("method", name, "x-side")] = f"method {name}: x-side ours {sorted(om[name])} vs reference {sorted(rm[name])}"

    for name in sorted(set(od) & set(rd)):
        o, r = od[name], rd[name]
        oreq, rreq = set(o.get("required") or []), set(r.get("required") or [])
        for p in sorted(oreq - rreq):
            diffs[("required", name, f"+{p}")] = f"{name}: {p} is required only in ours"
        for p in sorted(rreq - oreq):
            diffs[("required", name, f"-{p}")] = f"{name}: {p} is required only in the reference"
        ov, rv = _variants(o), _variants(r)
        for disc in sorted(set(ov) | set(rv)):
            label = disc or "enum"
            for v in sorted(ov.get(disc, set()) - rv.get(disc, set())):
                diffs[("discriminator", name, f"{label}=+{json.loads(v)}")] = f"{name}: {label} value {v} only in ours"
            for v in sorted(rv.get(disc, set()) - ov.get(disc, set())):
                diffs[("discriminator", name, f"{label}=-{json.loads(v)}")] = f"{name}: {label} value {v} only in the reference"

    for name in sorted(set(od) - set(rd)):
        diffs[("definition", name, "only in ours")] = f"definition {name} is only in our schema"
    shared_roots = [
        n for n, d in rd.items()
        if isinstance(d, dict) and d.get("x-method") in om and d.get("x-method") in rm
    ]
    for name in sorted(_reachable(rd, shared_roots) - set(od)):
        diffs[("definition", name, "only in reference")] = (
            f"definition {name} is reachable from shared methods in the reference but missing in ours"
        )
    return diffs


def load_allowlist() -> dict[tuple[str, str, str], dict]:
    entries = yaml.safe_load(ALLOWLIST.read_text(encoding="utf-8")) or []
    out: dict[tuple[str, str, str], dict] = {}
    for e in entries:
        assert set(e) >= {"kind", "name", "detail", "reason"}, f"allowlist entry lacks fields: {e}"
        assert e["kind"] in KINDS, f"allowlist entry has unknown kind: {e}"
        assert str(e["reason"]).strip(), f"allowlist entry has an empty reason: {e}"
        key = (e["kind"], str(e["name"]), str(e["detail"]))
        assert key not in out, f"duplicate allowlist entry: {key}"
        out[key] = e
    return out


def test_allowlist_is_well_formed():
    load_allowlist()


def test_no_unlisted_drift_and_no_stale_entries():
    if not REFERENCE.is_file():
        pytest.skip(f"reference schema not found at {REFERENCE}; drift check needs the shared npm schema")
    diffs = compute_differences(_load(OURS), _load(REFERENCE))
    allow = load_allowlist()
    unlisted = sorted(set(diffs) - set(allow))
    stale = sorted(set(allow) - set(diffs))
    lines = []
    for k in unlisted:
        lines.append(f"UNLISTED {k[0]} {k[1]} [{k[2]}]: {diffs[k]}")
    for k in stale:
        lines.append(f"STALE allowlist entry {k[0]} {k[1]} [{k[2]}]: no longer differs")
    assert not lines, "schema drift vs reference:\n" + "\n".join(lines)
