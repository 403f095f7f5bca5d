"""badge.json: the shields.io endpoint format (https://shields.io/badges/endpoint-badge)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def badge(report: dict[str, Any]) -> dict[str, Any]:
    v = report["verdict"]
    c = v.get("counts", {})
    checked = sum(c.values())
    cov = v.get("coverage") or {"exercised": c.get("pass", 0), "checked": checked}
    exercised = f"{cov['exercised']}/{cov['checked']} exercised"
    ok = bool(v.get("conformant"))
    bad = len(v.get("blocking") or [])  # the rules that decide against conformance (fail, flaky, not-tested)
    waived = f" · {c['xfail']} waived" if c.get("xfail") else ""
    msg = (f"conformant · {exercised}{waived}" if ok else f"not conformant · {bad} blocking · {exercised}{waived}")
    if v.get("revision") and v.get("revision") != "preview" and "preview" in (v.get("revisions") or {}):
        ready = len(v.get("preview_readiness") or [])  # beside the verdict: how far from the Preview
        msg += f" · Preview: {ready} rule{'s' if ready != 1 else ''} to go" if ready else " · Preview ready"
    msg = reason_label(v) or msg  # a target the suite could not judge: why, not a count of rules
    return {"schemaVersion": 1, "label": _label(report), "message": msg, "color": "brightgreen" if ok else "red"}


def _label(report: dict[str, Any]) -> str:
    """The revision judged: "ACP v2 Preview" for "ACP v2 Preview (2026-11-20)"."""
    if (report.get("verdict") or {}).get("revision_title"):
        return report["verdict"]["revision_title"]
    return (report.get("spec") or {}).get("revision", "ACP v2").split(" (")[0]


def reason_label(verdict: dict[str, Any]) -> str | None:
    """A few words for a run that could not judge its target (verdict.reason_kind), for the badge and the
    matrix: "not spoken (v1)", "not an ACP program", "answers with ids never sent", "blocked by authentication";
    else None."""
    kind = verdict.get("reason_kind")
    if kind == "not-v2":
        v = verdict.get("negotiated_version")
        return f"not spoken (v{v})" if v is not None else "not spoken"
    if kind == "not-acp":
        return "not an ACP program"
    if kind == "wrong-ids":
        return "answers with ids never sent"
    if kind == "turns-never-end":
        return "turns never end"
    if kind == "auth-blocked":
        return "blocked by authentication"
    return None


def write_badge(path: Path, report: dict[str, Any]) -> Path:
    path.write_text(json.dumps(badge(report)), encoding="utf-8")
    return path
