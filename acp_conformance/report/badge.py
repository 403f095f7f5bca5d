"""badge.json: the shields.io endpoint format (https://shields.io/badges/endpoint-badge)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def badge(report: dict[str, Any]) -> dict[str, Any]:
    v = report["verdict"]
    c = v.get("counts", {})
    checked = sum(c.values())
    ok = bool(v.get("conformant"))
    bad = len(v.get("blocking") or [])  # the rules that decide against conformance (fail, flaky, not-tested)
    waived = f", {c['xfail']} waived" if c.get("xfail") else ""
    msg = (f"conformant, {c.get('pass', 0)}/{checked} pass{waived}" if ok
           else f"not conformant, {bad} blocking of {checked}{waived}")
    # the label names the spec revision judged (older reports without it: plain "ACP v2")
    suite = report.get("suite") or {}
    label = " | ".join(x for x in (suite.get("spec_revision") or "ACP v2",
                                   suite.get("schema_revision") and f"schema {suite['schema_revision']}") if x)
    return {"schemaVersion": 1, "label": label, "message": msg, "color": "brightgreen" if ok else "red"}


def write_badge(path: Path, report: dict[str, Any]) -> Path:
    path.write_text(json.dumps(badge(report)), encoding="utf-8")
    return path
