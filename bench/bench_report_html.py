"""How report.html copes with a large run: 300 tests, 50,000 frames, many failing rules.

    python bench/bench_report_html.py [--tests 300] [--frames 50000] [--failing 80] [--out DIR]

Builds a synthetic run in DIR (report.json plus one transcript file per test, shaped like the suite's:
session/update chunks, requests, responses, events), writes report.html from it with the real writer,
and prints the time to write it and its size; with selenium and Debian's chromium/chromedriver
installed it also opens the page headless and prints the time until the page is ready and the time to
open the failing rule with the largest evidence. tests/test_report_browser.py runs the same measure.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _frame(seq: int, t: float, rng: random.Random, session: str) -> dict[str, Any]:
    kind = rng.random()
    if kind < 0.03:
        return {"seq": seq, "conn": 0, "dir": "event", "t": t, "event": "note", "detail": {"text": f"step {seq}"}}
    if kind < 0.10:
        msg = {"jsonrpc": "2.0", "id": seq, "method": "session/prompt",
               "params": {"sessionId": session, "prompt": [{"type": "text", "text": "Count slowly to 500."}]}}
        return {"seq": seq, "conn": 0, "dir": "sent", "t": t, "raw": json.dumps(msg, separators=(",", ":"))}
    if kind < 0.15:
        msg = {"jsonrpc": "2.0", "id": seq - 1, "result": {"messageId": f"msg_{rng.getrandbits(64):016x}"}}
        return {"seq": seq, "conn": 0, "dir": "received", "t": t, "raw": json.dumps(msg, separators=(",", ":"))}
    text = " ".join(str(rng.randint(1, 500)) for _ in range(rng.randint(5, 40)))
    msg = {"jsonrpc": "2.0", "method": "session/update",
           "params": {"sessionId": session, "update": {"sessionUpdate": "agent_message_chunk", "messageId": "msg_1",
                                                       "content": {"type": "text", "text": text}}}}
    return {"seq": seq, "conn": 0, "dir": "received", "t": t, "raw": json.dumps(msg, separators=(",", ":"))}


def build_large_report(out: Path, tests: int = 300, frames: int = 50_000, failing: int = 80,
                       seed: int = 7) -> dict[str, Any]:
    """Write report.json and the transcripts of a synthetic run into ``out``; return the report."""
    from acp_conformance import __version__
    from acp_conformance.protocol.schema import cached_schema
    from acp_conformance.rules.catalog import load_catalog

    rng = random.Random(seed)
    tx_dir = out / "transcripts"
    tx_dir.mkdir(parents=True, exist_ok=True)
    test_ids, lengths = [], []
    per_test = frames // tests
    for i in range(tests):
        tid = f"synthetic.yaml::scenario-{i:03d}"
        n = per_test + (1 if i < frames - per_test * tests else 0)
        session = f"sess_{i:032x}"
        path = tx_dir / f"scenario-{i:03d}.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            for seq in range(n):
                fh.write(json.dumps(_frame(seq, round(seq * 0.01, 6), rng, session)) + "\n")
        (tx_dir / f"scenario-{i:03d}.stderr.txt").write_text("agent: working\n" * 20)
        test_ids.append(tid)
        lengths.append(n)
    catalog = [r for r in load_catalog().values() if r.side in ("agent", "both")]
    fail_ids = {r.id for r in rng.sample(catalog, min(failing, len(catalog)))}
    rules, counts = [], {}
    for k, r in enumerate(catalog):
        bound = [test_ids[(k * 7 + j) % tests] for j in range(6)]
        status = "fail" if r.id in fail_ids else "pass"
        if status == "fail":
            bound = [test_ids[(k * 13 + j * 17) % tests] for j in range(20)]
        evidence = []
        for tid in bound:
            n = lengths[test_ids.index(tid)]
            frames_at = sorted(rng.sample(range(n), 2))
            evidence.append({"rule": r.id, "status": status, "expected": r.summary[:200], "test": tid,
                             "frames": frames_at[::-1] if status == "fail" else frames_at,
                             "message": f"synthetic {status} of {r.id} at frame #{frames_at[-1]}"})
        counts[status] = counts.get(status, 0) + 1
        rules.append({"id": r.id, "area": r.area, "level": r.level, "tier": r.tier, "side": r.side, "status": status,
                      "blocking": r.blocking, "checked": True, "summary": r.summary, "source": r.source,
                      "reason": evidence[0]["message"], "expected": r.summary[:200], "tests": bound,
                      "evidence": evidence if status == "fail" else evidence[:3], "waiver": None,
                      "stale_waiver": False,
                      "transcripts": sorted({str(tx_dir / (t.split('::')[1] + '.jsonl')) for t in bound})})
    schema = cached_schema(None)
    report = {
        "suite": {"name": "acp-conformance", "version": __version__},
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "schema": {"path": str(schema.path), "revision": schema.revision, "sha256": schema.sha256},
        "target": {"side": "agent", "command": "synthetic-agent --stdio", "info": {"name": "synthetic", "version": "1"},
                   "protocolVersion": 2, "capabilities": {"session": {}}},
        "verdict": {"conformant": False, "strict": False, "counts": counts,
                    "blocking": sorted(i for i in fail_ids), "stale_waivers": [],
                    "summary": f"ACP verdict: NOT CONFORMANT ({len(rules)} rules checked: {counts.get('pass', 0)} pass, "
                               f"{counts.get('fail', 0)} fail)"},
        "redacted": True, "waivers_file": None,
        "tests": [{"id": tid, "transcript": str(tx_dir / (tid.split("::")[1] + ".jsonl")),
                   "stderr": str(tx_dir / (tid.split("::")[1] + ".stderr.txt")), "skipped": None, "error": None}
                  for tid in test_ids],
        "rules": rules,
    }
    (out / "report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return report


def write_page(out: Path, report: dict[str, Any]) -> tuple[Path, float]:
    from acp_conformance.report.html import write_html_report
    t0 = time.perf_counter()
    page = write_html_report(out / "report.html", report)
    return page, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", type=int, default=300)
    ap.add_argument("--frames", type=int, default=50_000)
    ap.add_argument("--failing", type=int, default=80)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    out = Path(a.out or tempfile.mkdtemp(prefix="acp-bench-html-"))
    report = build_large_report(out, a.tests, a.frames, a.failing)
    page, took = write_page(out, report)
    print(f"{a.tests} tests, {a.frames} frames, {a.failing} failing rules: report.html {page.stat().st_size / 1e6:.1f} MB, "
          f"written in {took:.2f} s ({page})")
    try:
        sys.path.insert(0, str(ROOT / "tests"))
        from report_browser import Browser, BrowserMissing
        try:
            with Browser() as b:
                ready = b.load(page)
                opened = b.open_biggest_evidence(report)
                print(f"chromium: page ready in {ready:.2f} s, the largest evidence opened in {opened:.2f} s")
        except BrowserMissing as e:
            print(f"no browser measure: {e}")
    except ImportError as e:
        print(f"no browser measure: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
