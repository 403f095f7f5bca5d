"""The comparison matrix (``acp-conformance compare REPORT.json... -o matrix.html``): implementations as
columns, rules as rows; every cell links to the rule's anchor in that report's report.html."""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any

from .statuses import ORDER, colour, label


class CompareError(Exception):
    pass


def load_reports(paths: list[str]) -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for p in paths:
        try:
            data = json.loads(Path(p).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise CompareError(f"cannot read the report {p!r}: {getattr(e, 'strerror', None) or e}") from None
        if not isinstance(data, dict) or not isinstance(data.get("rules"), list) or "verdict" not in data:
            raise CompareError(f"{p!r} is not an acp-conformance report.json")
        out.append((Path(p).resolve(), data))
    return out


def _name(data: dict[str, Any], path: Path) -> str:
    info = (data.get("target") or {}).get("info") or {}
    n = info.get("name") or path.parent.name
    return f"{n} {info.get('version', '')}".strip()


def render_matrix(reports: list[tuple[Path, dict[str, Any]]], out: Path) -> str:
    names = [_name(d, p) for p, d in reports]
    dup = {n for n in names if names.count(n) > 1}  # same agent twice: tell the columns apart by folder
    names = [f"{n} ({p.parent.name})" if n in dup else n for n, (p, _d) in zip(names, reports)]
    rows: dict[str, dict[str, Any]] = {}
    for _p, d in reports:
        for r in d["rules"]:
            rows.setdefault(r["id"], r)
    checked = [rid for rid in rows if any(next((r for r in d["rules"] if r["id"] == rid), {}).get("checked")
                                          for _p, d in reports)]
    idx = [{r["id"]: r for r in d["rules"]} for _p, d in reports]
    head = "".join(f"<th>{html.escape(n)}<br><small class=v>{'CONFORMANT' if d['verdict'].get('conformant') else 'NOT CONFORMANT'}"
                   f"</small></th>" for n, (_p, d) in zip(names, reports))
    counts_rows = []
    for s in ORDER:
        cells = [sum(1 for r in d["rules"] if r.get("checked") and r["status"] == s) for _p, d in reports]
        if any(cells):
            counts_rows.append(f"<tr class=count data-status='{s}'><th>{label(s)}</th>" +
                               "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    body = []
    for rid in checked:
        cells = []
        for (p, _d), ix in zip(reports, idx):
            r = ix.get(rid)
            if r is None:
                cells.append("<td>-</td>")
                continue
            href = os.path.relpath(p.parent / "report.html", out.parent).replace(os.sep, "/") + f"#rule-{rid}"
            cells.append(f"<td data-status='{r['status']}' style='background:{colour(r['status'])}'>"
                         f"<a href='{html.escape(href)}' title='{html.escape(r.get('reason') or '')}'>"
                         f"{label(r['status'])}</a></td>")
        r0 = rows[rid]
        body.append(f"<tr class=rule id='rule-{rid}'><th class=id>{rid}</th><td>{html.escape(r0['level'])}</td>" +
                    "".join(cells) + f"<td class=sum>{html.escape(r0['summary'][:140])}</td></tr>")
    return f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>ACP conformance matrix</title>
<style>body{{font:13px system-ui,sans-serif;margin:1em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:left}}td[data-status] a{{color:#fff;text-decoration:none}}
th.id{{font-family:monospace}}.sum{{color:#555;font-size:12px}}tr.count td{{text-align:right}}</style></head><body>
<h1>ACP conformance matrix</h1><p>{len(reports)} implementations, {len(checked)} rules checked by the suite.
Each cell links to the rule's evidence in that implementation's report.</p>
<table id=counts><tr><th>status</th>{head}</tr>{''.join(counts_rows)}</table><br>
<table id=matrix><tr><th>rule</th><th>level</th>{head}<th>summary</th></tr>{''.join(body)}</table>
</body></html>"""


def write_matrix(paths: list[str], out: Path) -> Path:
    reports = load_reports(paths)
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_matrix(reports, out), encoding="utf-8")
    return out
