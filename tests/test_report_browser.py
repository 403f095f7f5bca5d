"""report.html and matrix.html opened in headless Chromium (issue 5, item 9).

The pages come from real runs of the installed suite (a few scenarios each, so that they stay short):
the reference agent, a broken agent (a mutant failing PROMPT-006) and a mutant whose failure is waived,
and the matrix of the three. The tests click what a person clicks and compare what the page shows
with report.json. The browser is Debian's chromium driven by selenium through Debian's chromedriver
(tests/report_browser.py says why); without them the tests skip, saying what to install.

Screenshots of every page are kept in reports/screenshots/ (ignored by git). The large-report test
builds a synthetic run of 300 tests and 50,000 frames (bench/bench_report_html.py) and times the page.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from report_browser import Browser, BrowserMissing
from shared_runs import once_per_session
from suite_run import REFERENCE_AGENT, ROOT, mutant_cmd, run_suite

SHOTS = ROOT / "reports" / "screenshots"
BROKEN = ("prompt-006", "PROMPT-006")
WAIVED = ("err-002", "ERR-002")


@pytest.fixture(scope="module")
def browser():
    try:
        b = Browser()
    except BrowserMissing as e:
        pytest.skip(f"the report pages are not tested in a browser: {e}")
    yield b
    b.close()


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Three runs (a few scenarios each) and the matrix of the three; once per session, also under xdist."""
    return once_per_session(tmp_path_factory, "pages", _make_pages)


def _make_pages(d: Path) -> dict:
    d.mkdir(parents=True, exist_ok=True)
    waivers = d / "waivers.yaml"
    waivers.write_text(f"- rule: {WAIVED[1]}\n  reason: error.data comes in the next release\n"
                       f"  link: https://example.invalid/issues/7\n")
    jobs = {
        "reference": lambda: run_suite(REFERENCE_AGENT, d / "reference",
                                       "--acp-rules=PROMPT-001,PROMPT-006,INIT-001,SESSION-012"),
        "broken": lambda: run_suite(mutant_cmd(BROKEN[0]), d / "broken", f"--acp-rules={BROKEN[1]}"),
        "waived": lambda: run_suite(mutant_cmd(WAIVED[0]), d / "waived", f"--acp-rules={WAIVED[1]}",
                                    f"--acp-expected-failures={waivers}"),
    }
    with ThreadPoolExecutor(len(jobs)) as pool:
        futures = {k: pool.submit(f) for k, f in jobs.items()}
        runs = {k: f.result() for k, f in futures.items()}
    for k, r in runs.items():
        assert r.report is not None, (k, r.output[-3000:])
    matrix = d / "matrix.html"
    p = subprocess.run([sys.executable, "-m", "acp_conformance", "compare",
                        *(str(runs[k].report_dir / "report.json") for k in ("reference", "broken", "waived")),
                        "-o", str(matrix)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return {**runs, "matrix": matrix}


def _shot(b: Browser, name: str) -> Path:
    return b.screenshot(SHOTS / name, full_page=False)


def _load(b: Browser, page: Path, fragment: str = "") -> None:
    b.console_errors()  # drop what an earlier page logged
    b.load(page, fragment)
    assert b.js("return performance.getEntriesByType('resource').length") == 0  # self-contained: nothing fetched
    assert b.console_errors() == []


def _checked(report: dict) -> list[dict]:
    return [r for r in report["rules"] if r["checked"]]


def _expect_visible(b: Browser, expected: set[str], what: str) -> None:
    try:
        b.wait(lambda d: set(b.visible_rule_ids()) == expected, timeout=5)
    except Exception:
        shown = set(b.visible_rule_ids())
        raise AssertionError(f"{what}: shown but not expected {sorted(shown - expected)[:10]}, "
                             f"expected but not shown {sorted(expected - shown)[:10]}") from None


# -- report.html -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["reference", "broken"])
def test_report_page_renders_the_verdict_and_the_counts_of_report_json(browser, pages, name):
    run = pages[name]
    rep = run.report
    _load(browser, run.report_dir / "report.html")
    verdict = browser.js("return document.getElementById('verdict').textContent")
    assert verdict == ("CONFORMANT" if rep["verdict"]["conformant"] else "NOT CONFORMANT")
    assert browser.js("return document.getElementById('summary').textContent") == rep["verdict"]["summary"]
    cov = rep["verdict"]["coverage"]
    assert browser.js("return document.getElementById('coverage').textContent").startswith(
        f"{cov['exercised']} of {cov['checked']} rules exercised, ")
    shown = browser.js("""const out = {};
      for (const tr of document.querySelectorAll('#counts tr[data-tier]')) {
        out[tr.dataset.tier] = {};
        for (const td of tr.querySelectorAll('td[data-status]')) out[tr.dataset.tier][td.dataset.status] = +td.textContent;
      } return out;""")
    checked = _checked(rep)
    statuses = {r["status"] for r in checked}
    tier = {r["id"]: r.get("tier") or r["level"] for r in checked}  # per tier, or per level for older reports
    expected = {t: {s: sum(1 for r in checked if r["status"] == s and t in (tier[r["id"]], "all")) for s in statuses}
                for t in set(tier.values()) | {"all"}}
    assert shown == expected
    assert shown["all"] == {s: n for s, n in rep["verdict"]["counts"].items() if n}
    assert sorted(browser.visible_rule_ids()) == sorted(r["id"] for r in checked)  # the rules the suite checks
    assert browser.js("return document.getElementById('shown').textContent") == f"{len(checked)} rules shown"
    _shot(browser, f"report-{name}.png")


def test_filters_and_search_work_when_clicked(browser, pages):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    rep = pages["broken"].report
    checked = _checked(rep)
    _load(browser, pages["broken"].report_dir / "report.html")
    find = browser.driver.find_element

    def ids(pred, rules=checked) -> set[str]:
        return {r["id"] for r in rules if pred(r)}

    # status buttons: each adds its status; their counts are those of the rules in scope
    fail, npass = find(By.CSS_SELECTOR, "#statusf button[data-status='fail']"), find(By.CSS_SELECTOR, "#statusf button[data-status='pass']")
    assert fail.text == f"FAIL ({rep['verdict']['counts']['fail']})"
    fail.click()
    _expect_visible(browser, ids(lambda r: r["status"] == "fail"), "status fail")
    assert ids(lambda r: r["status"] == "fail") == {BROKEN[1]}
    npass.click()
    _expect_visible(browser, ids(lambda r: r["status"] in ("fail", "pass")), "status fail + pass")
    fail.click(), npass.click()
    _expect_visible(browser, ids(lambda r: True), "no status filter")
    # area and level
    area, level = Select(find(By.ID, "areaf")), Select(find(By.ID, "levelf"))
    area.select_by_value("PROMPT")
    _expect_visible(browser, ids(lambda r: r["area"] == "PROMPT"), "area PROMPT")
    level.select_by_value("SHOULD")
    _expect_visible(browser, ids(lambda r: r["area"] == "PROMPT" and r["level"] == "SHOULD"), "area PROMPT, level SHOULD")
    area.select_by_value("")
    _expect_visible(browser, ids(lambda r: r["level"] == "SHOULD"), "level SHOULD")
    level.select_by_value("")
    # sections whose rules are all filtered out are hidden too
    area.select_by_value("INIT")
    assert browser.js("return [...document.querySelectorAll('section.areasec')].filter(s => s.offsetParent !== null)"
                      ".map(s => s.dataset.area)") == ["INIT"]
    area.select_by_value("")
    # search by rule ID (case does not matter)
    q = find(By.ID, "q")
    q.send_keys("prompt-00")
    _expect_visible(browser, ids(lambda r: r["id"].startswith("PROMPT-00")), "search prompt-00")
    q.clear()
    q.send_keys("CANCEL-001")
    _expect_visible(browser, {"CANCEL-001"}, "search CANCEL-001")
    browser.js("const q = document.getElementById('q'); q.value = ''; q.dispatchEvent(new Event('input'))")
    _expect_visible(browser, ids(lambda r: True), "search cleared")
    # the rules without a check come in with the checkbox, and the status counts follow
    nt = find(By.CSS_SELECTOR, "#statusf button[data-status='not-tested']")
    assert nt.text == f"NOT TESTED ({sum(1 for r in checked if r['status'] == 'not-tested')})"
    find(By.ID, "showall").click()
    _expect_visible(browser, ids(lambda r: True, rep["rules"]), "all rules")
    assert nt.text == f"NOT TESTED ({sum(1 for r in rep['rules'] if r['status'] == 'not-tested')})"
    find(By.ID, "showall").click()
    _expect_visible(browser, ids(lambda r: True), "checked rules again")
    assert browser.console_errors() == []


def test_a_failing_rule_opens_to_its_evidence_with_the_offending_frame_marked(browser, pages):
    from selenium.webdriver.common.by import By
    run = pages["broken"]
    rule = run.rule(BROKEN[1])
    _load(browser, run.report_dir / "report.html")
    ev_row = browser.open_rule(BROKEN[1])
    text = ev_row.text
    assert f"expected: {rule['expected']}" in text
    for e in rule["evidence"]:
        assert f"observed: {e['message']}" in text
    first = rule["evidence"][0]
    transcript = next(t["transcript"] for t in run.report["tests"] if t["id"] == first["test"])
    frames = [json.loads(line) for line in Path(transcript).read_text().splitlines()]
    tables = ev_row.find_elements(By.CSS_SELECTOR, "table.tx")
    assert len(tables) == len({e["test"] for e in rule["evidence"]})  # one transcript per test
    table = tables[0]  # the transcripts come in the order of the evidence: the first finding's test first
    rows = browser.js("return [...arguments[0].querySelectorAll('tr[data-seq]')].map(tr => "
                      "[+tr.dataset.seq, tr.className, tr.children[0].textContent, tr.children[1].textContent, "
                      "tr.children[2].textContent])", table)
    assert [r[0] for r in rows] == [f["seq"] for f in frames]  # the whole exchange, in order
    by_seq = {r[0]: r for r in rows}
    marked_wanted = {s for e in rule["evidence"] if e["test"] == first["test"] for s in e["frames"]}
    assert {r[0] for r in rows if "mark" in r[1].split()} == marked_wanted
    offending = by_seq[first["frames"][0]]
    assert {"mark", "first"} <= set(offending[1].split())
    f = next(x for x in frames if x["seq"] == first["frames"][0])
    assert offending[2] == f"{f['t']:.3f}"  # timestamps
    side = offending[4] if f["dir"] == "received" else offending[3]  # target's frames on the right
    assert side.startswith(("\u2190 " if f["dir"] == "received" else "\u2192 ") + f"#{f['seq']}") and f["raw"] in side
    # the marked frame is drawn as marked (an outline), not just tagged
    row_el = table.find_element(By.CSS_SELECTOR, f"tr[data-seq='{first['frames'][0]}'] td")
    assert row_el.value_of_css_property("outline-style") == "solid"
    browser.js("arguments[0].scrollIntoView({block: 'center'})", row_el)
    _shot(browser, "report-broken-failure-expanded.png")
    # a second click closes it
    row = browser.driver.find_element(By.ID, f"rule-{BROKEN[1]}")
    browser.js("arguments[0].scrollIntoView({block: 'center'})", row)  # opening scrolled to the marked frame
    row.click()
    browser.wait(lambda d: not ev_row.is_displayed())
    # the "look at" line links to it, and the link opens it again
    link = browser.driver.find_element(By.CSS_SELECTOR, f"#attention a[href='#rule-{BROKEN[1]}']")
    link.click()
    browser.wait(lambda d: ev_row.is_displayed())
    # a link from another page (as the matrix makes) opens it at once
    browser.driver.get("about:blank")
    _load(browser, run.report_dir / "report.html", f"rule-{BROKEN[1]}")
    browser.wait(lambda d: d.find_element(By.CSS_SELECTOR, f"tr.ev[data-for='{BROKEN[1]}']").is_displayed())
    assert browser.console_errors() == []


def test_a_waived_rule_shows_its_waiver_and_evidence(browser, pages):
    run = pages["waived"]
    rule = run.rule(WAIVED[1])
    assert rule["status"] == "xfail"
    _load(browser, run.report_dir / "report.html")
    badge = browser.js(f"return document.querySelector('#rule-{WAIVED[1]} .st').textContent")
    assert badge == "XFAIL (waived)"
    text = browser.open_rule(WAIVED[1]).text
    assert "waived: error.data comes in the next release (https://example.invalid/issues/7)" in text
    assert f"observed: {rule['evidence'][0]['message']}" in text


# -- matrix.html -------------------------------------------------------------------------------------------
def test_matrix_page_shows_the_counts_filters_differences_and_links_to_evidence(browser, pages):
    from selenium.webdriver.common.by import By
    names = ("reference", "broken", "waived")
    reports = [pages[n].report for n in names]
    _load(browser, pages["matrix"])
    cells = browser.js("return [...document.querySelectorAll('#matrix td[data-status]')].map(td => [+td.dataset.col, td.dataset.status])")
    for i, rep in enumerate(reports):
        got = {}
        for col, status in cells:
            if col == i:
                got[status] = got.get(status, 0) + 1
        assert got == {s: n for s, n in rep["verdict"]["counts"].items() if n}, names[i]
    _shot(browser, "matrix.png")
    differ = {rid for rid in {r["id"] for r in _checked(reports[0])}
              if len({next(r["status"] for r in rep["rules"] if r["id"] == rid) for rep in reports}) > 1}
    assert BROKEN[1] in differ and WAIVED[1] in differ
    browser.driver.find_element(By.ID, "differ").click()
    browser.wait(lambda d: set(browser.visible_rule_ids()) == differ, timeout=5)
    browser.driver.find_element(By.ID, "differ").click()
    browser.wait(lambda d: len(browser.visible_rule_ids()) == len(_checked(reports[0])), timeout=5)
    # the broken agent's failing cell leads to its evidence, opened
    link = browser.driver.find_element(By.CSS_SELECTOR, f"#rule-{BROKEN[1]} td[data-col='1'] a")
    assert link.text == "FAIL"
    link.click()
    browser.wait(lambda d: d.current_url.endswith(f"/report.html#rule-{BROKEN[1]}"))
    browser.wait(lambda d: d.find_element(By.CSS_SELECTOR, f"tr.ev[data-for='{BROKEN[1]}']").is_displayed())
    assert Path(browser.driver.current_url.split("#")[0][len("file://"):]) == pages["broken"].report_dir / "report.html"
    assert browser.console_errors() == []


# -- a large report ----------------------------------------------------------------------------------------
def test_a_large_report_stays_fast(browser, tmp_path, record_property):
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_report_html import build_large_report, write_page
    from acp_conformance.report.schema_check import report_errors
    report = build_large_report(tmp_path, tests=300, frames=50_000, failing=80)
    assert report_errors(report) == []
    page, write_s = write_page(tmp_path, report)
    size_mb = page.stat().st_size / 1e6
    browser.console_errors()
    ready = browser.load(page)
    assert browser.console_errors() == []
    assert browser.js("return document.querySelector(\"#counts tr[data-tier='all'] td[data-status='fail']\").textContent") \
        == str(report["verdict"]["counts"]["fail"])
    opened = browser.open_biggest_evidence(report)
    rows = browser.js("return document.querySelectorAll('tr.ev:not(.hidden) table.tx tr[data-seq]').length")
    record_property("report_html_mb", round(size_mb, 1))
    record_property("report_html_ready_s", round(ready, 2))
    record_property("report_html_open_s", round(opened, 2))
    print(f"large report: {size_mb:.1f} MB written in {write_s:.2f} s; ready in {ready:.2f} s; "
          f"the largest evidence ({rows} frames) opened in {opened:.2f} s")
    browser.screenshot(SHOTS / "report-large.png", full_page=False)
    # generous bounds for a shared 2-core machine; typical figures are in the README
    assert write_s < 10 and ready < 10 and opened < 10, (write_s, ready, opened)
    assert size_mb < 40
    assert rows >= 1000
