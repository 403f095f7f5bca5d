"""Remake the README's screenshots of the reports (docs/img/*.png) from real runs of the suite.

    python docs/make_screenshots.py [--out docs/img]

Runs the whole suite against the reference agent, a broken agent (the mutant that gives identical
prompts the same messageId: PROMPT-006) and, for the matrix, the SDK-built interop agents of
tests/interop/ when they are installed (``bash tests/interop/install.sh``; else two mutants stand in),
then opens the pages in headless Chromium (tests/report_browser.py) and saves:

* report-reference.png: the reference agent's report.html, top of the page;
* report-broken.png: the broken agent's report.html with the failing rule opened at its evidence;
* matrix.png: ``acp-conformance compare`` of three targets, only the rules whose results differ;
* report-tap.png: ``acp-conformance tap`` between a broken client (it answers a notification) and a broken
  agent (PROMPT-002), the agent's failing rule opened: both programs named, each rule's culprit shown.

``--only tap`` remakes report-tap.png alone (seconds, not the minutes of the suite runs).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from report_browser import Browser  # noqa: E402
from suite_run import REFERENCE_AGENT, mutant_cmd, run_suite  # noqa: E402

BROKEN = ("prompt-006", "PROMPT-006")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "docs" / "img"))
    ap.add_argument("--only", choices=["tap"], default=None)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="acp-screens-"))
    tap_screenshot(out, work)
    if a.only == "tap":
        return 0
    from report_targets import interop_agents
    third = {f"{n} SDK agent": argv for n, argv in interop_agents().items()}
    if len(third) < 2:
        third = {"mutant err-002": mutant_cmd("err-002"), "mutant init-002": mutant_cmd("init-002")}
    targets = {"reference": REFERENCE_AGENT, "broken": mutant_cmd(BROKEN[0]), **third}
    with ThreadPoolExecutor(len(targets)) as pool:
        futures = {name: pool.submit(run_suite, argv, work / name.replace(" ", "-"), "-n", "2",
                                     "--acp-startup-timeout=60", timeout=1800)
                   for name, argv in targets.items()}
        runs = {name: f.result() for name, f in futures.items()}
    for name, r in runs.items():
        print(f"{name}: exit {r.returncode}, {r.report['verdict']['summary'] if r.report else r.output[-500:]}")
    matrix = work / "matrix.html"
    columns = ["reference", *third]
    subprocess.run([sys.executable, "-m", "acp_conformance", "compare",
                    *(str(runs[n].report_dir / "report.json") for n in columns), "-o", str(matrix)], check=True)
    with Browser(width=1280, height=860) as b:
        b.load(runs["reference"].report_dir / "report.html")
        b.screenshot(out / "report-reference.png", full_page=False)
        b.driver.set_window_size(1280, 1560)  # tall enough for the evidence down to the offending frame
        b.load(runs["broken"].report_dir / "report.html")
        row = b.open_rule(BROKEN[1])
        # the rule's row at the top, under the sticky filter bar, its evidence below
        b.js("const tr = document.getElementById(arguments[0]); tr.scrollIntoView();"
             "window.scrollBy(0, -document.getElementById('filters').offsetHeight - 8);", f"rule-{BROKEN[1]}")
        assert row.is_displayed()
        b.screenshot(out / "report-broken.png", full_page=False)
        b.driver.set_window_size(1280, 860)
        b.load(matrix)
        b.js("document.getElementById('differ').click()")
        b.screenshot(out / "matrix.png", full_page=False)
    for p in sorted(out.glob("*.png")):
        print(p, p.stat().st_size // 1024, "KiB")
    return 0


TAP_BROKEN = ("reply-to-notification", "prompt-002", "PROMPT-002")


def tap_screenshot(out: Path, work: Path) -> None:
    client = [sys.executable, str(ROOT / "tests" / "client_mutants" / "client_mutants.py"), TAP_BROKEN[0]]
    agent = [sys.executable, str(ROOT / "tests" / "mutants" / "agent_mutants.py"), TAP_BROKEN[1]]
    report_dir = work / "tap"
    subprocess.run([*client, "--", sys.executable, "-m", "acp_conformance", "tap", "--quiet", "--report-dir",
                    str(report_dir), "--", *agent], cwd=work, capture_output=True, timeout=120)
    with Browser(width=1280, height=1100) as b:
        b.load(report_dir / "report.html")
        b.js("document.querySelector('#statusf button[data-status=\"fail\"]').click()")  # only what broke
        row = b.open_rule(TAP_BROKEN[2])
        assert row.is_displayed()
        b.screenshot(out / "report-tap.png", full_page=False)


if __name__ == "__main__":
    sys.exit(main())
