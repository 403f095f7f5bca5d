"""report.html: one self-contained page (inline CSS and JS, no network) a person reads.

Built from the report.json data and the transcript files. Only the tests with failing or warning
evidence have their transcripts embedded, each cut to MAX_FRAMES frames (plus the frames a finding
points at), and the page renders a transcript only when its rule is opened, so a 300-test,
50,000-frame run stays a small, fast page.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from .statuses import BAD, ORDER, STATUSES

MAX_FRAMES = 300
STDERR_TAIL = 3000


def _load_transcript(path: str, marked: set[int]) -> dict[str, Any]:
    frames, total = [], 0
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                total += 1
                if total <= MAX_FRAMES:
                    frames.append(line)
                elif marked and '"seq": ' in line:
                    seq = line.split('"seq": ', 1)[1].split(",", 1)[0]
                    if seq.isdigit() and int(seq) in marked:
                        frames.append(line)
    except OSError as e:
        return {"file": path, "frames": [], "total": 0, "error": str(e)}
    parsed = []
    for ln in frames:
        try:
            parsed.append(json.loads(ln))
        except ValueError:
            continue
    stderr = ""
    sp = Path(path[: -len(".jsonl")] + ".stderr.txt") if path.endswith(".jsonl") else None
    if sp is not None and sp.is_file():
        stderr = sp.read_text(encoding="utf-8", errors="replace")[-STDERR_TAIL:]
    return {"file": path, "frames": parsed, "total": total, "stderr": stderr}


def page_data(report: dict[str, Any]) -> dict[str, Any]:
    """What the page's script needs: the rules, and the transcripts of the tests with bad evidence."""
    tests = {t["id"]: t for t in report.get("tests", [])}
    wanted: dict[str, set[int]] = {}
    for r in report["rules"]:
        if r["status"] in BAD or (r["status"] == "xfail"):
            for ev in r.get("evidence", []):
                if ev.get("test") and ev.get("status") in BAD + ("xfail",):
                    wanted.setdefault(ev["test"], set()).update(ev.get("frames", []))
    transcripts = {}
    for tid, marked in wanted.items():
        path = (tests.get(tid) or {}).get("transcript")
        if path:
            transcripts[tid] = _load_transcript(path, marked)
    return {"verdict": report.get("verdict", {}), "target": report.get("target", {}),
            "suite": report.get("suite", {}), "generated": report.get("generated", ""),
            "spec": report.get("spec", {}), "schema": report.get("schema", {}),
            "redacted": report.get("redacted", True), "waivers_file": report.get("waivers_file"),
            "rules": [{k: r.get(k) for k in ("id", "area", "level", "tier", "status", "checked", "blocking", "summary",
                                               "source", "reason", "expected", "evidence", "tests", "waiver",
                                               "stale_waiver", "note", "broken_by")} for r in report["rules"]],
            "transcripts": transcripts,
            "statuses": {s: {"label": STATUSES[s][0], "colour": STATUSES[s][1]} for s in ORDER}}


def _script_json(obj: Any) -> str:
    # inside <script>: no "</" may close the element early
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/").replace("<!--", "<\\!--")


def render(report: dict[str, Any], title: str = "ACP conformance report") -> str:
    data = page_data(report)
    v = data["verdict"]
    head = "CONFORMANT" if v.get("conformant") else "NOT CONFORMANT"
    cov = v.get("coverage")
    proven = (f"{cov['exercised']} of {cov['checked']} rules exercised, "
              f"{v.get('counts', {}).get('fail', 0) + v.get('counts', {}).get('flaky', 0)} failed" if cov else "")
    return (PAGE.replace("@@TITLE@@", html.escape(title))
            .replace("@@VERDICT@@", head)
            .replace("@@PROVEN@@", html.escape(proven))
            .replace("@@VCLASS@@", "ok" if v.get("conformant") else "bad")
            .replace("@@SUMMARY@@", html.escape(v.get("summary", "")))
            .replace("@@BANNER@@", _banner(v))
            .replace("@@READINESS@@", _readiness(v))
            .replace("@@DATA@@", _script_json(data)))


def _readiness(verdict: dict[str, Any]) -> str:
    """Every revision's verdict, and the Preview rules not met yet with their sources, beside the verdict."""
    revs = verdict.get("revisions")
    if not revs:
        return ""
    out = ['<p id="revisions">' + "; ".join(
        f"{html.escape(r.get('title', name))}{' (selected)' if name == verdict.get('revision') else ''}: "
        f"{'CONFORMANT' if r.get('conformant') else 'NOT CONFORMANT'}" for name, r in revs.items()) + "</p>"]
    ready = verdict.get("preview_readiness") or []
    if ready:
        out.append(f'<div id="readiness"><b>Preview readiness</b>: {len(ready)} rule(s) of the ACP v2 Preview not '
                   "met yet<ul>" + "".join(
                       f"<li><b>{html.escape(r['id'])}</b> ({html.escape(r['status'])}): "
                       f"{html.escape(r.get('summary', ''))} <i>Source: {html.escape(r['source'])}</i></li>"
                       for r in ready) + "</ul></div>")
    elif "preview" in revs:
        out.append('<p id="readiness"><b>Preview readiness</b>: every ACP v2 Preview rule judged here is met.</p>')
    return "".join(out)


def _banner(verdict: dict[str, Any]) -> str:
    """Why the run could not judge its target, or was cut short: the first thing the page says."""
    lines = [verdict[k] for k in ("reason", "interrupted") if isinstance(verdict.get(k), str)]
    return "".join(f'<p class="banner" id="reason">{html.escape(t)}</p>' for t in lines)


def write_html_report(path: Path, report: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".html.tmp")
    tmp.write_text(render(report), encoding="utf-8")
    tmp.replace(path)
    return path


CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 1.5em 3em;color:#222}
h1{margin:.6em 0 .2em} .verdict{font-size:1.6em;font-weight:700;padding:.3em .6em;border-radius:4px;display:inline-block;color:#fff}
.verdict.ok{background:#2e7d32}.verdict.bad{background:#c62828} .proven{font-size:1.3em;font-weight:600;margin-left:.5em}
.banner{font-size:1.2em;font-weight:600;border-left:6px solid #c62828;background:#fdecea;padding:.4em .8em}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
.counts td{text-align:right}.st{color:#fff;border-radius:3px;padding:0 4px;font-size:12px;white-space:nowrap}
tr.rule{scroll-margin-top:6em}  /* a rule jumped to is not hidden under the sticky filters */
#filters{margin:1em 0;position:sticky;top:0;background:#fff;padding:.4em 0;border-bottom:1px solid #ddd}
#filters button{margin:1px;border:1px solid #999;background:#f4f4f4;border-radius:3px;cursor:pointer}
#filters button.on{background:#333;color:#fff}
h2.area{margin:1em 0 .2em;font-size:1.1em}
tr.rule{cursor:default} tr.rule.has-ev{cursor:pointer} tr.rule.has-ev td:first-child:before{content:"\\25b6  ";font-size:10px}
tr.rule.open td:first-child:before{content:"\\25bc  "}
.ev{background:#fafafa} .ev .exp{margin:.3em 0} .mono{font-family:ui-monospace,monospace;font-size:12px}
.tx{border-collapse:collapse;width:100%;table-layout:fixed}.tx td{border:none;border-bottom:1px solid #eee;padding:1px 4px;
 font-family:ui-monospace,monospace;font-size:12px;word-break:break-all;white-space:pre-wrap}
.tx td.t{color:#777;text-align:right}.tx th.t{width:5em}
.tx tr.sent td.s{background:#e3f2fd}.tx tr.received td.g{background:#f1f8e9}.tx tr.event td{color:#777;font-style:italic}
.tx tr.mark td{outline:2px solid #c62828;background:#ffebee !important}
.more{color:#777;margin:.3em 0} pre.stderr{background:#222;color:#eee;padding:.5em;max-height:20em;overflow:auto}
tr.rule td:first-child{white-space:nowrap} .tx tr.mark.first td{outline-width:3px;background:#ffcdd2 !important}
.tx tr.mark.first td.t:before{content:"offending \\25b6 ";color:#c62828;font-weight:700;font-style:normal}
.evt{margin:.8em 0 .2em;font-weight:600} #shown{color:#555;margin-left:1em}
.hidden{display:none}
"""

JS = r"""
const D = JSON.parse(document.getElementById('data').textContent);
const ST = D.statuses;
const el = (t, a, ...kids) => { const e = document.createElement(t); for (const k in (a||{})) {
  if (k === 'class') e.className = a[k]; else if (k === 'text') e.textContent = a[k]; else e.setAttribute(k, a[k]); }
  for (const c of kids) if (c != null) e.append(c); return e; };
const badge = s => el('span', {class: 'st', style: 'background:' + (ST[s] ? ST[s].colour : '#000'), text: ST[s] ? ST[s].label : s});
const BAD = ['fail', 'flaky', 'warn', 'xfail'];
const checked = D.rules.filter(r => r.checked);
const TAP = D.target.side === 'tap';  // an observed session: the columns are the two programs
// counts per tier (the rule's tier in the verdict: mandatory, should, may, advisory; else its level) and status
const TIERS = ['mandatory', 'capability', 'should', 'may', 'advisory', 'informational'];
const tierOf = r => r.tier || r.level;
(function counts() {
  const rank = x => (TIERS.indexOf(x) + 1) || 99;
  const tiers = [...new Set(checked.map(tierOf))].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  const sts = Object.keys(ST).filter(s => checked.some(r => r.status === s));
  const t = document.getElementById('counts');
  t.append(el('tr', {}, el('th', {text: 'tier'}), ...sts.map(s => el('th', {}, badge(s))), el('th', {text: 'total'})));
  for (const tier of [...tiers, 'all']) {
    const rs = tier === 'all' ? checked : checked.filter(r => tierOf(r) === tier);
    t.append(el('tr', {'data-tier': tier}, el('th', {text: tier}),
      ...sts.map(s => el('td', {'data-status': s, text: String(rs.filter(r => r.status === s).length)})),
      el('td', {text: String(rs.length)})));
  }
})();
// the rules that need a look, as links that open their evidence
(function attention() {
  const p = document.getElementById('attention');
  const need = D.rules.filter(r => r.checked && (['fail', 'flaky', 'warn', 'xfail'].includes(r.status) || r.stale_waiver));
  if (!need.length) return;
  p.append(el('b', {text: 'look at: '}));
  for (const r of need) {
    p.append(el('a', {href: '#rule-' + r.id, class: 'mono', 'data-status': r.status}, r.id), ' ',
             badge(r.status), r.stale_waiver ? ' (stale waiver)' : '', '  ');
  }
})();
// filters
const F = {status: new Set(), area: '', level: '', q: ''};
(function filters() {
  const box = document.getElementById('statusf');
  for (const s of Object.keys(ST)) {
    if (!D.rules.some(r => r.status === s)) continue;
    const b = el('button', {'data-status': s, type: 'button'}, ST[s].label + ' (', el('span', {class: 'n'}), ')');
    b.onclick = () => { F.status.has(s) ? F.status.delete(s) : F.status.add(s); b.classList.toggle('on'); apply(); };
    box.append(b);
  }
  const fill = (id, vals) => { const sel = document.getElementById(id); for (const v of vals) sel.append(el('option', {value: v, text: v})); };
  fill('areaf', [...new Set(D.rules.map(r => r.area))].sort());
  fill('levelf', [...new Set(D.rules.map(r => r.level))].sort());
  document.getElementById('areaf').onchange = e => { F.area = e.target.value; apply(); };
  document.getElementById('levelf').onchange = e => { F.level = e.target.value; apply(); };
  document.getElementById('q').oninput = e => { F.q = e.target.value.trim().toUpperCase(); apply(); };
  document.getElementById('showall').onchange = apply;
})();
// the rules, grouped by area
const rows = [];
(function rules() {
  const root = document.getElementById('rules');
  const areas = [...new Set(D.rules.map(r => r.area))];
  for (const a of areas) {
    const sec = el('section', {'data-area': a, class: 'areasec'}, el('h2', {class: 'area', text: a}));
    const tb = el('table', {class: 'rules'});
    tb.append(el('tr', {}, el('th', {text: 'rule'}), el('th', {text: 'status'}), el('th', {text: 'level'}),
      el('th', {text: 'summary'}), el('th', {text: 'spec'})));
    for (const r of D.rules.filter(x => x.area === a)) {
      const hasEv = BAD.includes(r.status) && (r.evidence || []).length > 0;
      const tr = el('tr', {id: 'rule-' + r.id, class: 'rule' + (hasEv ? ' has-ev' : ''), 'data-status': r.status,
                           'data-level': r.level, 'data-area': r.area, 'data-checked': String(!!r.checked)},
        el('td', {class: 'mono', text: r.id}), el('td', {}, badge(r.status), r.stale_waiver ? ' stale waiver' : null),
        el('td', {text: r.level}), el('td', {text: r.summary + (r.reason && !hasEv ? ' \u2014 ' + r.reason : '')},
          (r.broken_by || []).length ? el('b', {text: ' \u2014 broken by the ' + r.broken_by.join(' and the ')}) : null),
        el('td', {class: 'mono', text: r.source || ''}, r.note ? el('div', {class: 'note', text: 'note: ' + r.note}) : null));
      tb.append(tr); rows.push([tr, r]);
      if (hasEv) {
        const ev = el('tr', {class: 'ev hidden', 'data-for': r.id}, el('td', {colspan: '5'}));
        tb.append(ev);
        tr.onclick = () => toggle(tr, ev, r);
      }
    }
    sec.append(tb); root.append(sec);
  }
})();
function apply() {
  const all = document.getElementById('showall').checked;
  let n = 0;
  for (const b of document.querySelectorAll('#statusf button'))  // counts of the rules in scope
    b.querySelector('.n').textContent = String(D.rules.filter(r => (all || r.checked) && r.status === b.dataset.status).length);
  for (const [tr, r] of rows) {
    const ok = (all || r.checked) && (!F.status.size || F.status.has(r.status)) && (!F.area || r.area === F.area)
      && (!F.level || r.level === F.level) && (!F.q || r.id.includes(F.q));
    tr.classList.toggle('hidden', !ok); if (ok) n++;
    const ev = tr.nextElementSibling;  // an opened rule's evidence comes back with it
    if (ev && ev.classList.contains('ev')) ev.classList.toggle('hidden', !ok || !tr.classList.contains('open'));
  }
  for (const sec of document.querySelectorAll('section.areasec'))
    sec.classList.toggle('hidden', !sec.querySelector('tr.rule:not(.hidden)'));
  document.getElementById('shown').textContent = n + ' rules shown';
}
function toggle(tr, ev, r) {
  const open = ev.classList.toggle('hidden') === false;
  tr.classList.toggle('open', open);
  if (open && !ev.dataset.done) { ev.firstChild.append(evidence(r)); ev.dataset.done = '1'; }
}
const dirCell = f => f.dir === 'event' ? '[' + f.event + '] ' + (f.detail ? JSON.stringify(f.detail) : '') : (f.raw || '');
function evidence(r) {
  const box = el('div', {class: 'evidence'});
  if (r.waiver) box.append(el('div', {class: 'exp', text: 'waived: ' + r.waiver.reason + (r.waiver.link ? ' (' + r.waiver.link + ')' : '')}));
  const byTest = new Map();  // one transcript per test, however many findings point into it
  for (const e of r.evidence) { const k = e.test || ''; if (!byTest.has(k)) byTest.set(k, []); byTest.get(k).push(e); }
  for (const [test, evs] of byTest) {
    box.append(el('div', {class: 'evt mono', text: 'test: ' + test}));
    const marked = new Set(), first = new Set();
    for (const e of evs) {
      box.append(el('div', {class: 'exp'}, el('b', {text: 'expected: '}), e.expected || r.expected || r.summary));
      box.append(el('div', {class: 'exp'}, el('b', {text: 'observed: '}), e.message));
      if (e.frames && e.frames.length) {
        box.append(el('div', {class: 'exp mono', text: 'frames #' + e.frames.join(', #')}));
        e.frames.forEach(x => marked.add(x)); first.add(e.frames[0]);  // the first is the offending one
      }
    }
    const tx = D.transcripts[test];
    if (!tx) continue;
    const t = el('table', {class: 'tx'}, el('tr', {}, el('th', {class: 't', text: 't (s)'}), el('th', {text: TAP ? 'client' : 'suite'}), el('th', {text: TAP ? 'agent' : 'target'})));
    for (const f of tx.frames) {
      const txt = '#' + f.seq + (f.conn ? ' c' + f.conn : '') + '  ' + dirCell(f);
      t.append(el('tr', {class: f.dir + (marked.has(f.seq) ? ' mark' : '') + (first.has(f.seq) ? ' first' : ''), 'data-seq': String(f.seq)},
        el('td', {class: 't', text: (+f.t).toFixed(3)}),
        el('td', {class: 's', text: f.dir === 'received' ? '' : (f.dir === 'sent' ? '\u2192 ' + txt : txt)}),
        el('td', {class: 'g', text: f.dir === 'received' ? '\u2190 ' + txt : ''})));
    }
    box.append(t);
    if (tx.total > tx.frames.length)
      box.append(el('div', {class: 'more', text: (tx.total - tx.frames.length) + ' more frames in ' + tx.file}));
    else box.append(el('div', {class: 'more', text: 'transcript: ' + tx.file}));
    if (tx.stderr) box.append(el('div', {text: 'target stderr (tail):'}), el('pre', {class: 'stderr', text: tx.stderr}));
  }
  return box;
}
apply();
// #rule-ID (the matrix links here): show that rule, its evidence opened
function openHash() {
  if (!location.hash.startsWith('#rule-')) return;
  const tr = document.getElementById(location.hash.slice(1));
  if (!tr) return;
  if (tr.classList.contains('hidden')) {  // a filter hides it: clear the filters
    F.status.clear(); F.area = F.level = F.q = '';
    for (const b of document.querySelectorAll('#statusf button.on')) b.classList.remove('on');
    for (const id of ['areaf', 'levelf', 'q']) document.getElementById(id).value = '';
    document.getElementById('showall').checked = tr.dataset.checked !== 'true';
    apply();
  }
  if (tr.classList.contains('has-ev') && !tr.classList.contains('open')) tr.click();
  tr.scrollIntoView();
}
window.addEventListener('hashchange', openHash);
openHash();
"""

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>@@TITLE@@</title><style>""" + CSS + """</style></head>
<body>
<h1>@@TITLE@@</h1>
<div class="verdict @@VCLASS@@" id="verdict">@@VERDICT@@</div> <span class="proven" id="coverage">@@PROVEN@@</span>
@@BANNER@@
<p id="summary">@@SUMMARY@@</p>
@@READINESS@@
<p class="mono" id="target"></p>
<table class="counts" id="counts"></table>
<p id="attention"></p>
<div id="filters">status: <span id="statusf"></span>
 area: <select id="areaf"><option value="">all</option></select>
 level: <select id="levelf"><option value="">all</option></select>
 rule ID: <input id="q" placeholder="e.g. PROMPT-0" size="12">
 <label><input type="checkbox" id="showall"> rules without a check</label>
 <span id="shown"></span></div>
<div id="rules"></div>
<script type="application/json" id="data">@@DATA@@</script>
<script>""" + JS + """
document.getElementById('target').textContent = (D.target.side || 'agent') + ': ' + (D.target.command || '') +
  (D.target.info ? '  \\u2014 ' + JSON.stringify(D.target.info) : '') + '  \\u2014 suite ' + (D.suite.version || '') + ', ' + D.generated +
  '  \\u2014 judges ' + ((D.spec || {}).revision || 'ACP v2') + ', schema ' + ((D.schema || {}).revision || '') +
  (D.redacted ? '  \\u2014 secrets redacted' : '  \\u2014 NOT redacted (--acp-no-redact)') +
  (D.waivers_file ? '  \\u2014 expected failures: ' + D.waivers_file : '');
</script>
</body></html>
"""
