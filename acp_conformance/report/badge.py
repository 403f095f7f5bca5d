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
    cov = v.get("coverage")
    exercised = f" · {cov['exercised']}/{cov['checked']} exercised" if cov else f", {c.get('pass', 0)}/{checked} pass"
    msg = (f"conformant{exercised}{waived}" if ok
           else f"not conformant, {bad} blocking of {checked}{waived}")
    return {"schemaVersion": 1, "label": "ACP v2", "message": msg, "color": "brightgreen" if ok else "red"}


def write_badge(path: Path, report: dict[str, Any]) -> Path:
    path.write_text(json.dumps(badge(report)), encoding="utf-8")
    return path
