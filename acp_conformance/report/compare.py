"""The comparison matrix (``acp-conformance compare REPORT.json... -o matrix.html``): implementations as
columns, rules as rows; every cell links to the rule's anchor in that report's report.html."""

from __future__ import annotations

import html
import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

from .badge import reason_label
from .statuses import ORDER, colour, label


class CompareError(Exception):
    pass


def load_reports(paths: list[str]) -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for p in paths:
        try:
            text = Path(p).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise CompareError(f"cannot read the report {p!r} ({getattr(e, 'strerror', None) or e})") from None
        try:
            data = json.loads(text)
        except ValueError as e:
            raise CompareError(f"{p!r} is not an acp-conformance report.json: it is not JSON "
                               f"({getattr(e, 'msg', e)} at line {getattr(e, 'lineno', '?')})") from None
        if not _looks_like_report(data):
            raise CompareError(f"{p!r} is not an acp-conformance report.json (no verdict and rules with id, "
                               f"level and status)")
        out.append((Path(p).resolve(), data))
    return out


def _looks_like_report(data: Any) -> bool:
    return (isinstance(data, dict) and isinstance(data.get("verdict"), dict) and isinstance(data.get("rules"), list)
            and all(isinstance(r, dict) and all(isinstance(r.get(k), str) for k in ("id", "level", "status"))
                    for r in data["rules"]))


def _name(data: dict[str, Any], path: Path) -> str:
    target = data.get("target") or {}
    info = target.get("info") or {}
    # a target that never answered initialize with its info (a v1 agent, not ACP): its command, not "reports"
    n = info.get("name") or (_short_command(target["command"]) if target.get("command") else path.parent.name)
    return f"{n} {info.get('version', '')}".strip()


def _short_command(command: str) -> str:
    """The target's command as a column heading: paths cut to their last part, a script's interpreter dropped."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    words = [os.path.basename(w) if "/" in w else w for w in words]
    if len(words) > 1 and re.fullmatch(r"python[\d.]*|node|bun|deno", words[0]):
        words = words[2:] if words[1] == "-m" and len(words) > 2 else words[1:]
    return " ".join(words)


def column_names(reports: list[tuple[Path, dict[str, Any]]]) -> list[str]:
    """One distinct heading per report: the target's name and version, then (when two share them, as a
    build and its variant do) the command, then the report's folder."""
    names = [_name(d, p) for p, d in reports]
    if len(set(names)) < len(names):
        names = [f"{n} ({_short_command((d.get('target') or {}).get('command') or '')})" if names.count(n) > 1 else n
                 for n, (_p, d) in zip(names, reports)]
    for depth in range(1, 8):
        if len(set(names)) == len(names):
            break
        tagged = [f"{n} [{'/'.join(p.parent.parts[-depth:])}]" if names.count(n) > 1 else n
                  for n, (p, _d) in zip(names, reports)]
        if len(set(tagged)) == len(tagged) or depth == 7:
            names = tagged
    return names


def _summary(text: str, n: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: text.rfind(" ", 0, n)] + " …"


def _revisions_cell(verdict: dict[str, Any]) -> str:
    """Under the selected verdict: the verdict of every revision and the Preview rules not met yet."""
    revs = verdict.get("revisions") or {}
    if not revs:
        return ""
    ready = [r["id"] for r in verdict.get("preview_readiness") or []]
    line = " · ".join(f"{html.escape(name)}: {'ok' if r.get('conformant') else 'not'}"
                      + ("*" if name == verdict.get("revision") else "") for name, r in revs.items())
    return (f"<br><small title='the verdict under every ACP revision (* selected)'>{line}</small>"
            + (f"<br><small class='v bad' title='Preview readiness: {html.escape(', '.join(ready))}'>Preview: "
               f"{len(ready)} to go</small>" if ready else ""))


def render_matrix(reports: list[tuple[Path, dict[str, Any]]], out: Path) -> str:
    names = column_names(reports)
    rows: dict[str, dict[str, Any]] = {}
    for _p, d in reports:
        for r in d["rules"]:
            rows.setdefault(r["id"], r)
    idx = [{r["id"]: r for r in d["rules"]} for _p, d in reports]
    checked = [rid for rid in rows if any((ix.get(rid) or {}).get("checked") for ix in idx)]

    def link(p: Path, anchor: str = "") -> str:
        return html.escape(os.path.relpath(p.parent / "report.html", out.parent).replace(os.sep, "/") + anchor)

    head = "".join(f"<th class=impl data-col='{i}'><a href='{link(p)}' title='{html.escape((d.get('target') or {}).get('command') or '')}'>"
                   f"{html.escape(n)}</a><br><small class='v {'ok' if d['verdict'].get('conformant') else 'bad'}'>"
                   f"{'CONFORMANT' if d['verdict'].get('conformant') else 'NOT CONFORMANT'}</small>"
                   + (f"<br><small class='v bad' title='{html.escape(d['verdict'].get('reason') or '')}'>"
                      f"ACP v2: {html.escape(reason_label(d['verdict']))}</small>" if reason_label(d['verdict']) else "")
                   + _revisions_cell(d["verdict"])
                   + "</th>"
                   for i, (n, (p, d)) in enumerate(zip(names, reports)))
    counts_rows = []  # the rules each report checks, per status (report.json's verdict.counts)
    for s in ORDER:
        cells = [sum(1 for r in d["rules"] if r.get("checked") and r["status"] == s) for _p, d in reports]
        if any(cells):
            counts_rows.append(f"<tr class=count data-status='{s}'><th><span class=st style='background:{colour(s)}'>"
                               f"{label(s)}</span></th>" +
                               "".join(f"<td data-col='{i}'>{c}</td>" for i, c in enumerate(cells)) + "</tr>")
    body, area = [], None
    for rid in checked:
        r0 = rows[rid]
        if r0.get("area") != area:
            area = r0.get("area")
            body.append(f"<tr class=area><th colspan='{len(reports) + 3}'>{html.escape(str(area or ''))}</th></tr>")
        cells, statuses = [], set()
        for i, ((p, _d), ix) in enumerate(zip(reports, idx)):
            r = ix.get(rid)
            if r is None:
                cells.append(f"<td data-col='{i}' class=none>-</td>")
                statuses.add(None)
                continue
            statuses.add(r["status"])
            cells.append(f"<td data-col='{i}' data-status='{html.escape(r['status'])}' style='background:{colour(r['status'])}'>"
                         f"<a href='{link(p, '#rule-' + rid)}' title='{html.escape(r.get('reason') or '')}'>"
                         f"{html.escape(label(r['status']))}</a></td>")
        body.append(f"<tr class=rule id='rule-{html.escape(rid)}' data-same='{str(len(statuses) == 1).lower()}'>"
                    f"<th class=id>{html.escape(rid)}</th><td>{html.escape(r0['level'])}</td>" + "".join(cells) +
                    f"<td class=sum title='{html.escape(r0.get('summary') or '')}'>{html.escape(_summary(r0.get('summary') or ''))}</td></tr>")
    differ = sum(1 for b in body if "data-same='false'" in b)
    return f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>ACP conformance matrix</title>
<style>body{{font:13px system-ui,sans-serif;margin:1em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}}th.impl{{max-width:16em;font-weight:600;overflow-wrap:anywhere}}#shown{{color:#555;margin-left:1em}}
td[data-status] a{{color:#fff;text-decoration:none;display:block}}th.id{{font-family:monospace;white-space:nowrap}}
.sum{{color:#555;font-size:12px}}#counts td{{text-align:right}}tr.area th{{background:#eee;font-size:14px}}
.st{{color:#fff;border-radius:3px;padding:0 4px;font-size:12px;white-space:nowrap}}
small.v.ok{{color:#2e7d32}}small.v.bad{{color:#c62828}}.hidden{{display:none}}</style></head><body>
<h1>ACP conformance matrix</h1><p>{len(reports)} implementations, {len(checked)} rules checked by the suite,
{differ} of them with different results. Each cell links to the rule's evidence in that implementation's report.</p>
<table id=counts><tr><th>status</th>{head}</tr>{''.join(counts_rows)}</table>
<p><label><input type=checkbox id=differ> only the rules whose results differ</label> <span id=shown></span></p>
<table id=matrix><tr><th>rule</th><th>level</th>{head}<th>summary</th></tr>{''.join(body)}</table>
<script>
const box = document.getElementById('differ');
function apply() {{
  let n = 0;
  for (const tr of document.querySelectorAll('#matrix tr.rule')) {{
    const show = !box.checked || tr.dataset.same === 'false';
    tr.classList.toggle('hidden', !show); if (show) n++;
  }}
  for (const tr of document.querySelectorAll('#matrix tr.area')) {{  // an area heading with no rule shown goes too
    let x = tr.nextElementSibling, any = false;
    while (x && !x.classList.contains('area')) {{ if (!x.classList.contains('hidden')) any = true; x = x.nextElementSibling; }}
    tr.classList.toggle('hidden', !any);
  }}
  document.getElementById('shown').textContent = n + ' rules shown';
}}
box.onchange = apply; apply();
</script>
</body></html>"""


def write_matrix(paths: list[str], out: Path) -> Path:
    reports = load_reports(paths)
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_matrix(reports, out), encoding="utf-8")
    return out
