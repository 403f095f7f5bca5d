"""The Markdown summary a GitHub Actions job shows (appended to $GITHUB_STEP_SUMMARY when it is set)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .statuses import BAD, ORDER, label


def markdown(report: dict[str, Any]) -> str:
    v = report["verdict"]
    c = v.get("counts", {})
    lines = [f"## ACP conformance: {'✅ CONFORMANT' if v.get('conformant') else '❌ NOT CONFORMANT'}", "",
             f"`{report.get('target', {}).get('command', '')}`", "",
             *([f"**{v['headline']}**" + (f"; {v['coverage']['not_exercised']} not exercised (the target never "
                                           f"created their situation)" if v.get("coverage", {}).get("not_exercised")
                                           else ""), ""] if v.get("headline") else []),
             "| " + " | ".join(label(s) for s in ORDER if c.get(s)) + " |",
             "|" + "---|" * sum(1 for s in ORDER if c.get(s)),
             "| " + " | ".join(str(c[s]) for s in ORDER if c.get(s)) + " |", ""]
    bad = [r for r in report["rules"] if r.get("checked") and (r["status"] in BAD or r["status"] == "not-tested"
                                                                 or r.get("stale_waiver"))]
    if bad:
        lines += ["| rule | level | status | reason |", "|---|---|---|---|"]
        for r in bad:
            why = ("stale waiver: the rule passes now; remove it from the expected failures"
                   if r.get("stale_waiver") else " ".join((r.get("reason") or "").split())[:200])
            why = why.replace("|", "\\|")
            lines.append(f"| {r['id']} | {r['level']} | {label(r['status'])} | {why} |")
        lines.append("")
    ready = v.get("preview_readiness") or []
    if ready:  # beside the verdict: the Preview rules not met yet, each with its source
        lines += [f"**Preview readiness**: {len(ready)} rule(s) of the ACP v2 Preview not met yet", ""]
        lines += [f"* {r['id']} ({label(r['status'])}): {r['source']}" for r in ready] + [""]
    lines.append(v.get("summary", ""))
    return "\n".join(lines) + "\n"


def append_step_summary(report: dict[str, Any], env=os.environ) -> Path | None:
    target = env.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    with open(target, "a", encoding="utf-8") as fh:
        fh.write(markdown(report))
    return Path(target)
