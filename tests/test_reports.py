"""The reports of a run, read back from what the installed suite wrote (issue 5).

The suite is run as a vendor runs it (tests/suite_run.py) against the reference agent, mutants of it
(tests/mutants/) and targets that hand secrets over the wire (tests/report_targets.py); the runs start
together in one module fixture, since most of their time is spent waiting on the targets, and every
test reads what they wrote: report.json (against schema/report.schema.json), JUnit (against
schema/junit.xsd), badge.json, the step summary, waivers, redaction and the comparison matrix.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from suite_run import REFERENCE_AGENT, ROOT, SuiteRun, mutant_cmd, run_suite

from report_targets import QUOTED, SECRETS, VISIBLE, interop_agents
from shared_runs import once_per_session
from test_client_end_to_end import run_client_suite

TARGETS_SCRIPT = ROOT / "tests" / "report_targets.py"
QUOTED_CLIENT = [sys.executable, str(TARGETS_SCRIPT), "client-quoted", "--", "{agent}"]
WAIVED = ("err-002", "ERR-002")  # a mutant that fails this one rule and nothing else in a full run
BROKEN = ("prompt-006", "PROMPT-006")  # the broken agent of the failure tests (its rule's scenarios only)
STALE = "PROMPT-001"  # a rule the reference agent passes
STEP_SUMMARY_BEFORE = "# an earlier step's summary\n"
WHOLE = ("-n", "2")  # a whole-suite run waits on the agent most of the time: two workers halve that


def _waivers(path: Path, *entries: tuple[str, str, str | None]) -> Path:
    lines = []
    for rule, reason, link in entries:
        lines += [f"- rule: {rule}", f"  reason: {reason}"] + ([f"  link: {link}"] if link else [])
    path.write_text("\n".join(lines) + "\n")
    return path


# waiver files that cannot be used: (content or None for "write nothing", the words of the one-line error)
BAD_WAIVERS = {
    "unknown.yaml": ("- rule: NOPE-999\n  reason: x\n", "names 'NOPE-999', which is not a rule ID of the catalog"),
    "malformed.yaml": ("- rule: [PROMPT-001\n  reason: x\n", "is not valid YAML at line"),
    "mapping.yaml": ("rule: PROMPT-001\nreason: x\n", "must be a YAML list of {rule, reason, link} entries"),
    "no-reason.yaml": ("- rule: PROMPT-001\n", "must have a string 'rule', a non-empty string 'reason'"),
    "extra-key.yaml": ("- {rule: PROMPT-001, reason: x, owner: me}\n", "and nothing else"),
    "twice.yaml": ("- {rule: PROMPT-001, reason: a}\n- {rule: PROMPT-001, reason: b}\n", "lists PROMPT-001 twice"),
    "client-rule.yaml": ("- rule: CLIENT-006\n  reason: x\n",
                         "names CLIENT-006, a client-side rule, but this run tests an agent"),
    "missing.yaml": (None, "cannot read"),
    "a-dir.yaml": (None, "cannot read"),
    "not-utf8.yaml": (None, "cannot read"),
}
BAD_WAIVERS_RUN = ("unknown.yaml", "malformed.yaml", "a-dir.yaml")  # also given to a real run (the rest: in-process)


def _bad_waiver_files(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    for name, (text, _words) in BAD_WAIVERS.items():
        if text is not None:
            (d / name).write_text(text)
    (d / "not-utf8.yaml").write_bytes(b"- rule: \xff\xfe\n")
    (d / "a-dir.yaml").mkdir(exist_ok=True)
    return d


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every suite run of this module, started at once: 2 whole-suite runs (most of their time is spent
    waiting on the agent), the others a few scenarios or none; once per session, also under xdist."""
    return once_per_session(tmp_path_factory, "reports", _make_runs)


def _make_runs(d: Path) -> dict:
    d.mkdir(parents=True, exist_ok=True)
    waived_file = _waivers(d / "waivers.yaml", (WAIVED[1], "error.data is not implemented yet",
                                                "https://example.invalid/issues/12"))
    stale_file = _waivers(d / "stale.yaml", (STALE, "was broken once", None))
    bad = _bad_waiver_files(d / "bad-waivers")
    for name in ("reference", "broken"):
        (d / f"{name}-summary.md").write_text(STEP_SUMMARY_BEFORE)
    jobs = {
        # the reference agent, with a waiver of a rule it passes (a stale waiver)
        "reference": lambda: run_suite(REFERENCE_AGENT, d / "reference", f"--acp-expected-failures={stale_file}",
                                       *WHOLE, env={"GITHUB_STEP_SUMMARY": str(d / "reference-summary.md")}),
        "waived": lambda: run_suite(mutant_cmd(WAIVED[0]), d / "waived", f"--acp-expected-failures={waived_file}",
                                    *WHOLE),
        "broken": lambda: run_suite(mutant_cmd(BROKEN[0]), d / "broken", f"--acp-rules={BROKEN[1]}",
                                    env={"GITHUB_STEP_SUMMARY": str(d / "broken-summary.md")}),
        "secret-agent": lambda: run_suite([sys.executable, str(TARGETS_SCRIPT), "agent"], d / "secret-agent",
                                          "--acp-rules=INIT-001"),
        "secret-client": lambda: run_client_suite([sys.executable, str(TARGETS_SCRIPT), "client", "--", "{agent}"],
                                                  d / "secret-client", "--acp-rules=CLIENT-003"),
        "secret-client-raw": lambda: run_client_suite([sys.executable, str(TARGETS_SCRIPT), "client", "--", "{agent}"],
                                                      d / "secret-client-raw", "--acp-rules=CLIENT-003",
                                                      "--acp-no-redact"),
        # a client whose secrets the evidence sentences quote (one test); redacted under xdist (-n 1): the
        # findings are masked in the worker, which alone holds the frames
        "quoted-client": lambda: run_client_suite(QUOTED_CLIENT, d / "quoted-client", "--acp-rules=CLIENT-001",
                                                  "-n", "1", env={"GITHUB_STEP_SUMMARY": str(d / "quoted-summary.md")}),
        "quoted-client-raw": lambda: run_client_suite(QUOTED_CLIENT, d / "quoted-client-raw", "--acp-rules=CLIENT-001",
                                                      "--acp-no-redact",
                                                      env={"GITHUB_STEP_SUMMARY": str(d / "quoted-raw-summary.md")}),
    }
    for name in BAD_WAIVERS_RUN:
        jobs[f"bad-{name}"] = (lambda name=name: run_suite(REFERENCE_AGENT, d / f"bad-{name}",
                                                           f"--acp-expected-failures={bad / name}"))
    for name, argv in interop_agents().items():  # the SDK agents, when tests/interop/install.sh has run
        jobs[f"interop-{name}"] = (lambda argv=argv, name=name: run_suite(
            argv, d / f"interop-{name}", "--acp-rules=PROMPT-001", "--acp-startup-timeout=60"))
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        out = {name: f.result() for name, f in futures.items()}
    out["dir"] = d
    return out


def _checked(report: dict) -> list[dict]:
    return [r for r in report["rules"] if r["checked"]]


# -- report.json -------------------------------------------------------------------------------------------
def test_report_json_matches_its_schema_and_says_what_was_run(runs):
    from acp_conformance import __version__
    from acp_conformance.report.schema_check import report_errors
    r = runs["reference"]
    rep = r.report
    for name in ("reference", "waived", "broken", "secret-agent", "secret-client", "secret-client-raw"):
        assert runs[name].report is not None, (name, runs[name].output[-2000:])
        assert report_errors(runs[name].report) == [], name
    assert rep["suite"] == {"name": "acp-conformance", "version": __version__}
    schema_file = Path(rep["schema"]["path"])
    assert rep["schema"]["sha256"] == hashlib.sha256(schema_file.read_bytes()).hexdigest()
    doc = json.loads(schema_file.read_text())
    assert rep["schema"]["revision"] == (doc.get("x-acp-revision") or doc.get("title") or schema_file.name)
    target = rep["target"]
    assert target["side"] == "agent" and "acp_conformance.reference.agent" in target["command"]
    assert target["info"]["name"] == "acp-conformance-reference-agent" and target["info"]["version"]
    assert target["protocolVersion"] == 2 and isinstance(target["capabilities"].get("session"), dict)
    # the counts are the checked rules' statuses
    counts = rep["verdict"]["counts"]
    assert sum(counts.values()) == len(_checked(rep))
    for status, n in counts.items():
        assert n == sum(1 for x in _checked(rep) if x["status"] == status), status
    # every test's transcript exists; every rule points at the transcripts of its tests, and passes with evidence
    transcripts = {t["id"]: t["transcript"] for t in rep["tests"]}
    assert len(transcripts) >= 40 and all(Path(p).is_file() for p in transcripts.values())
    for rule in _checked(rep):
        assert set(rule["transcripts"]) <= set(transcripts.values()), rule["id"]
        if rule["status"] == "pass":  # a pass is a finding of a test, whose transcript the rule lists
            assert any(e["status"] == "pass" for e in rule["evidence"]), rule["id"]
            assert {transcripts[e["test"]] for e in rule["evidence"]} <= set(rule["transcripts"]), rule["id"]


def test_a_failing_rule_carries_its_evidence(runs):
    r = runs["broken"]
    assert r.returncode == 1
    rule = r.rule(BROKEN[1])
    assert rule["status"] == "fail" and r.report["verdict"]["conformant"] is False
    assert BROKEN[1] in r.report["verdict"]["blocking"]
    ev = [e for e in rule["evidence"] if e["status"] == "fail"]
    assert ev and rule["expected"] and rule["reason"] == ev[0]["message"]
    transcript = Path(next(t["transcript"] for t in r.report["tests"] if t["id"] == ev[0]["test"]))
    seqs = {json.loads(line)["seq"] for line in transcript.read_text().splitlines()}
    assert ev[0]["frames"] and set(ev[0]["frames"]) <= seqs  # the offending frames are in that transcript
    assert str(transcript) in rule["transcripts"]


# -- JUnit -------------------------------------------------------------------------------------------------
def _junit_schema():
    etree = pytest.importorskip("lxml.etree", reason="lxml (the [test] extra) validates JUnit against schema/junit.xsd")
    return etree, etree.XMLSchema(etree.parse(str(ROOT / "schema" / "junit.xsd")))


@pytest.mark.parametrize("name", ["reference", "broken", "waived"])
def test_junit_validates_against_the_junit_schema(runs, name):
    etree, schema = _junit_schema()
    doc = etree.parse(str(runs[name].junit))
    assert schema.validate(doc), [str(e) for e in schema.error_log][:5]


def test_junit_testcases_carry_scenario_and_rule_ids(runs):
    cases = list(ET.parse(runs["reference"].junit).getroot().iter("testcase"))
    verdict = [c for c in cases if c.get("name") == "ACP verdict"]
    cases = [c for c in cases if c.get("name") != "ACP verdict"]
    assert len(cases) == len(runs["reference"].report["tests"])
    # the run's verdict is a testcase of its own, with the coverage, passed for a conformant run
    assert len(verdict) == 1 and verdict[0].find("failure") is None
    vprops = {p.get("name"): p.get("value") for p in verdict[0].iter("property")}
    cov = runs["reference"].report["verdict"]["coverage"]
    assert vprops["exercised"] == str(cov["exercised"]) and vprops["checked"] == str(cov["checked"])
    assert vprops["verdict"].startswith("CONFORMANT to ACP v2 (preview): ")
    for case in cases:
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert case.get("name") == f"{props['scenario']} [{props['rules']}]"
        assert all(re.fullmatch(r"[A-Z][A-Z0-9-]*-\d{3}", x) for x in props["rules"].split())


def test_junit_failure_message_is_expected_and_observed(runs):
    r = runs["broken"]
    rule = r.rule(BROKEN[1])
    failures = [(c, c.find("failure")) for c in ET.parse(r.junit).getroot().iter("testcase") if c.find("failure") is not None]
    verdict = [f for c, f in failures if c.get("name") == "ACP verdict"]
    assert len(verdict) == 1 and BROKEN[1] in verdict[0].get("message") and "NOT CONFORMANT" in verdict[0].get("message")
    failures = [(c, f) for c, f in failures if c.get("name") != "ACP verdict"]
    assert failures
    messages = {e["message"] for e in rule["evidence"]}
    for case, failure in failures:
        assert BROKEN[1] in case.get("name")
        msg = failure.get("message")
        m = re.match(rf"{BROKEN[1]}: expected: (.+?) observed: (.+?)(?: \| |$)", msg)
        assert m, msg
        assert m.group(1) == rule["expected"]
        assert m.group(2) in messages, (m.group(2), messages)
        assert "frame #" in failure.text and "transcript: " in failure.text  # the full explanation stays the text


# -- badge.json --------------------------------------------------------------------------------------------
def test_badge_is_a_shields_endpoint_with_the_verdict_and_counts(runs):
    for name, ok in (("reference", True), ("broken", False), ("waived", True)):
        rep = runs[name].report
        badge = json.loads((runs[name].report_dir / "badge.json").read_text())
        assert set(badge) == {"schemaVersion", "label", "message", "color"}, badge
        assert badge["schemaVersion"] == 1 and badge["label"]
        checked = len(_checked(rep))
        exercised = sum(1 for r in _checked(rep) if r["status"] in ("pass", "fail", "flaky", "warn", "xfail"))
        assert rep["verdict"]["coverage"]["exercised"] == exercised and rep["verdict"]["coverage"]["checked"] == checked
        if ok:
            assert badge["color"] == "brightgreen"
            assert badge["message"].startswith(f"conformant · {exercised}/{checked} exercised"), badge
        else:
            assert badge["color"] == "red"
            assert badge["message"] == (f"not conformant · {len(rep['verdict']['blocking'])} blocking · "
                                        f"{exercised}/{checked} exercised")
    assert "1 waived" in json.loads((runs["waived"].report_dir / "badge.json").read_text())["message"]


# -- GITHUB_STEP_SUMMARY -----------------------------------------------------------------------------------
def test_step_summary_is_appended_when_github_step_summary_is_set(runs):
    from acp_conformance.report.statuses import label
    d = runs["dir"]
    for name, head in (("reference", "✅ CONFORMANT"), ("broken", "❌ NOT CONFORMANT")):
        text = (d / f"{name}-summary.md").read_text()
        assert text.startswith(STEP_SUMMARY_BEFORE)  # appended, not overwritten
        md = text[len(STEP_SUMMARY_BEFORE):]
        assert md.startswith(f"## ACP conformance: {head}")
        rep = runs[name].report
        assert f"`{rep['target']['command']}`" in md
        lines = md.splitlines()
        i = lines.index("|" + "---|" * sum(1 for n in rep["verdict"]["counts"].values() if n))
        header, values = (re.findall(r"\| ([^|]+?)(?= \|)", lines[j]) for j in (i - 1, i + 1))
        assert dict(zip(header, map(int, values))) == {label(s): n for s, n in rep["verdict"]["counts"].items() if n}
        assert md.rstrip().endswith(rep["verdict"]["summary"])
    broken = (d / "broken-summary.md").read_text()
    assert re.search(rf"^\| {BROKEN[1]} \| MUST \| FAIL \| .+ \|$", broken, re.M)


# -- waivers -----------------------------------------------------------------------------------------------
def test_a_waived_failure_is_xfail_and_not_counted(runs):
    r = runs["waived"]
    assert r.returncode == 0, r.output[-3000:]
    rep = r.report
    rule = r.rule(WAIVED[1])
    assert rule["status"] == "xfail" and rule["waiver"] == {"reason": "error.data is not implemented yet",
                                                           "link": "https://example.invalid/issues/12"}
    assert rule["evidence"] and all(e["status"] == "fail" for e in rule["evidence"])  # what it did, still shown
    assert rep["verdict"]["conformant"] is True and rep["verdict"]["counts"]["fail"] == 0
    assert rep["verdict"]["counts"]["xfail"] == 1 and rep["waivers_file"].endswith("waivers.yaml")
    assert re.search(rf"XFAIL\s+{WAIVED[1]}", r.output) and "xfailed" in r.output
    # in JUnit the tests that failed only that rule are expected failures, not failures
    cases = list(ET.parse(r.junit).getroot().iter("testcase"))
    assert not [c for c in cases if c.find("failure") is not None or c.find("error") is not None]
    xfails = [c.find("skipped") for c in cases
              if c.find("skipped") is not None and c.find("skipped").get("type") == "pytest.xfail"]
    assert xfails and all(f"{WAIVED[1]} waived (error.data is not implemented yet)" in x.get("message")
                          for x in xfails)
    assert len(xfails) == len({e["test"] for e in rule["evidence"]})


def test_a_waiver_of_a_passing_rule_is_stale_and_fails_the_run(runs):
    r = runs["reference"]  # conformant (tests/test_suite_end_to_end.py), but for the stale waiver
    assert r.returncode == 1, r.output[-3000:]
    rep = r.report
    assert rep["verdict"]["conformant"] is True  # the agent is conformant; the waivers file is out of date
    assert rep["verdict"]["stale_waivers"] == [STALE]
    rule = r.rule(STALE)
    assert rule["status"] == "pass" and rule["stale_waiver"] is True
    assert re.search(rf"STALE\s+{STALE}.*remove it", r.output)
    assert f"stale waivers (these rules pass now): {STALE}" in rep["verdict"]["summary"]
    summary = (runs["dir"] / "reference-summary.md").read_text()
    assert re.search(rf"^\| {STALE} \| MUST \| PASS \| stale waiver: .+ \|$", summary, re.M)


def test_bad_waiver_files_are_refused_with_one_sentence(tmp_path):
    from acp_conformance.report.waivers import WaiverError, load_waivers
    from acp_conformance.rules.catalog import load_catalog
    bad, catalog = _bad_waiver_files(tmp_path), load_catalog()
    for name, (_text, words) in BAD_WAIVERS.items():
        with pytest.raises(WaiverError) as e:
            load_waivers(str(bad / name), catalog, "agent")
        msg = str(e.value)
        assert msg.startswith("--acp-expected-failures: ") and words in msg and name in msg, (name, msg)
        assert "\n" not in msg, msg


@pytest.mark.parametrize("name", BAD_WAIVERS_RUN)
def test_bad_waiver_files_are_usage_errors_before_any_test_runs(runs, name):
    r = runs[f"bad-{name}"]
    assert r.returncode == 2, r.output[-2000:]
    lines = [ln for ln in r.output.splitlines() if "--acp-expected-failures" in ln]
    assert len(lines) == 1 and BAD_WAIVERS[name][1] in lines[0] and name in lines[0], r.output[-2000:]
    assert "Traceback" not in r.output and r.report is None  # no test ran, no report was written


# -- redaction ---------------------------------------------------------------------------------------------
def _written(run: SuiteRun) -> str:
    """Everything a run wrote (reports, transcripts, stderr, JUnit) and printed."""
    files = [p for p in run.report_dir.parent.rglob("*") if p.is_file() and not p.name.endswith(".md")]
    return run.output + "".join(p.read_text(errors="replace") for p in files)


def _transcript_messages(run: SuiteRun) -> list[dict]:
    out = []
    for p in (run.report_dir / "transcripts").glob("*.jsonl"):
        for line in p.read_text().splitlines():
            d = json.loads(line)
            if "raw" in d:
                out.append(json.loads(d["raw"]))
    return out


def test_transcripts_redact_mcp_env_headers_and_secret_fields(runs):
    from acp_conformance.report.redact import MASK
    r = runs["secret-client"]
    assert r.report is not None and r.report["redacted"] is True, r.output[-2000:]
    everything = _written(r)
    for what, secret in SECRETS.items():
        if what != "agent_field":
            assert secret not in everything, what
    news = [m for m in _transcript_messages(r) if m.get("method") == "session/new"]
    assert news
    for m in news:
        servers = {s["name"]: s for s in m["params"]["mcpServers"]}
        assert servers["files"]["env"] == [{"name": VISIBLE["env_name"], "value": MASK}]
        assert servers["search"]["headers"] == [{"name": VISIBLE["header_name"], "value": MASK}]
        assert servers["search"]["url"] == "http://127.0.0.1:9/mcp"  # only secrets go
        assert m["params"]["_meta"] == {"apiKey": MASK, "label": VISIBLE["label"]}
        assert m["params"]["cwd"].startswith("/")
    # a failure quotes the frames that broke a rule (JUnit, the terminal): redacted too. The suite's scripted
    # agent advertises no MCP transport, so this client fails CLIENT-006 on its session/new.
    texts = "\n".join(f.text or "" for f in ET.parse(r.junit).getroot().iter("failure"))
    quoted = re.findall(r'^  frame #\d+ \[[^]]*\]: (\{"jsonrpc":"2.0","id":\d+,"method":"session/new".*)$', texts, re.M)
    assert quoted and all(f'"value":"{MASK}"' in q for q in quoted), texts[:3000]
    # the agent side: what the agent sends is redacted too
    a = runs["secret-agent"]
    assert SECRETS["agent_field"] not in _written(a)
    inits = [m for m in _transcript_messages(a) if isinstance(m.get("result"), dict) and "_meta" in m["result"]]
    assert inits and all(m["result"]["_meta"] == {"authToken": MASK, "build": VISIBLE["agent_label"]} for m in inits)


def test_no_redact_keeps_the_transcripts_as_they_were(runs):
    r = runs["secret-client-raw"]
    assert r.report is not None and r.report["redacted"] is False
    news = [m for m in _transcript_messages(r) if m.get("method") == "session/new"]
    assert news
    servers = {s["name"]: s for s in news[0]["params"]["mcpServers"]}
    assert servers["files"]["env"][0]["value"] == SECRETS["env"]
    assert servers["search"]["headers"][0]["value"] == SECRETS["header"]
    assert news[0]["params"]["_meta"]["apiKey"] == SECRETS["field"]
    assert SECRETS["env"] in r.junit.read_text()  # and the failure quotes the frame as it was


def _quoted_outputs(run: SuiteRun, summary: Path) -> dict[str, str]:
    """What a run with findings that quote secrets wrote: each report that carries sentences, as text."""
    return {"report.json": (run.report_dir / "report.json").read_text(),
            "report.html": (run.report_dir / "report.html").read_text(),
            "junit": run.junit.read_text(), "step summary": summary.read_text(), "terminal": run.output}


def test_evidence_sentences_redact_the_secrets_they_quote(runs):
    """A monitor that quotes a frame quotes its secrets: CLIENT-001 quotes the client's info (with an ``apiKey``
    field), SCHEMA-001 the MCP server's env object. Every report gets the sentence with [REDACTED] instead."""
    from acp_conformance.report.redact import MASK
    r = runs["quoted-client"]
    assert r.report is not None and r.report["redacted"] is True, r.output[-2000:]
    outputs = _quoted_outputs(r, runs["dir"] / "quoted-summary.md")
    for name, text in outputs.items():
        for what, secret in QUOTED.items():
            assert secret not in text, (name, what)
    for what, secret in QUOTED.items():
        assert secret not in _written(r), what  # nor in the transcripts, the stderr, the terminal
    field_quote, env_quote = f'"apiKey":"{MASK}"', f"'API_KEY': '{MASK}'"  # as js() and jsonschema quote them
    client001 = r.rule("CLIENT-001")
    assert client001["status"] == "fail" and field_quote in client001["reason"], client001
    assert any(field_quote in e["message"] for e in client001["evidence"]), client001["evidence"]
    schema = r.rule("SCHEMA-001")
    assert any(env_quote in e["message"] for e in schema["evidence"]), schema["evidence"]
    assert r.report["target"]["info"]["version"] == {"apiKey": MASK}  # the client's identity, masked like a frame
    # the HTML embeds the report data as JSON (its quotes escaped)
    assert field_quote.replace('"', '\\"') in outputs["report.html"] and env_quote in outputs["report.html"]
    messages = [f.get("message", "") for f in ET.parse(r.junit).getroot().iter("failure")]
    assert any(field_quote in m for m in messages), messages
    assert field_quote in outputs["step summary"]


def test_no_redact_keeps_the_secrets_the_evidence_quotes(runs):
    r = runs["quoted-client-raw"]
    assert r.report is not None and r.report["redacted"] is False, r.output[-2000:]
    outputs = _quoted_outputs(r, runs["dir"] / "quoted-raw-summary.md")
    for name in ("report.json", "report.html", "junit", "step summary", "terminal"):
        assert QUOTED["field"] in outputs[name], name  # CLIENT-001's sentence
    for name in ("report.json", "report.html"):
        assert QUOTED["env"] in outputs[name], name  # SCHEMA-001's note
    assert r.report["target"]["info"]["version"] == {"apiKey": QUOTED["field"]}


def test_sentence_redaction_masks_the_values_the_frames_held():
    """In-process: which values a test's frames give up, and how a sentence loses them."""
    from types import SimpleNamespace

    from acp_conformance.report.redact import (MASK, MIN_SECRET, redact_outcome, redact_sentence,
                                               secret_values)
    from acp_conformance.rules.findings import Finding
    from acp_conformance.wire.transcript import Frame

    def frame(seq, msg=None, raw=None, problem=None, event=None, detail=None):
        raw = raw if raw is not None else (json.dumps(msg).encode() if msg is not None else b"")
        return Frame(seq, 0, "event" if event else "sent", 0.0, raw, msg, problem, event, detail)

    new = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w", "mcpServers": [
        {"type": "stdio", "name": "a", "command": "/bin/a", "args": [],
         "env": [{"name": "API_KEY", "value": "sk-live-list-0001"}]},
        {"type": "stdio", "name": "b", "command": "/bin/b", "args": [], "env": {"GH": 'sk-"quoted"-0002'}},
        {"type": "http", "name": "c", "url": "http://x",
         "headers": [{"name": "Authorization", "value": "Bearer h-0003"}]},
        {"type": "stdio", "name": "d", "command": "/bin/d", "args": [], "env": [{"name": "SHORT", "value": "abc"}]}],
        "_meta": {"password": "pässwörd-0004", "label": "visible-0005"}}}
    frames = [frame(1, new),
              frame(2, raw=b'{"authToken": "tok-raw-0006", "x": ', problem="not JSON"),
              frame(3, event="note", detail={"clientSecret": "evt-0007"})]
    secrets = secret_values(frames)
    assert {"sk-live-list-0001", 'sk-"quoted"-0002', "Bearer h-0003", "pässwörd-0004", "tok-raw-0006",
            "evt-0007", "abc"} <= secrets and "visible-0005" not in secrets
    # each value as it was, as JSON quotes it (escaped, either ASCII mode) and as a Python repr quotes it
    sentence = ('env {"API_KEY":"sk-live-list-0001"}, {"GH":"sk-\\"quoted\\"-0002"}, '
                "{'GH': 'sk-\"quoted\"-0002'}, header Bearer h-0003, " + json.dumps("pässwörd-0004")
                + ", label visible-0005")
    out = redact_sentence(sentence, secrets)
    for s in secrets - {"abc"}:
        assert s not in out and json.dumps(s)[1:-1] not in out, s
    assert out.count(MASK) == 5 and "visible-0005" in out
    # shorter than MIN_SECRET: left alone, or prose would lose every "abc"
    assert len("abc") < MIN_SECRET and redact_sentence("the abc of it", secrets) == "the abc of it"
    # a quote cut in the middle of a secret ("...") loses the start of it too
    assert redact_sentence('value {"API_KEY":"sk-live-li...', secrets) == f'value {{"API_KEY":"{MASK}...'
    assert redact_sentence("wait...", secrets) == "wait..."
    # what a test hands over: findings, errors, stderr, the target's identity
    f = Finding("SCHEMA-001", "fail", "frame #1 quotes sk-live-list-0001", "no evt-0007 here")
    result = SimpleNamespace(error="gave up on Bearer h-0003", skipped=None, harness_error=None,
                             stderr=["printed tok-raw-0006"], endings=["exit 0"],
                             agent_init={"info": {"name": "x", "version": {"apiKey": "k-0008"}},
                                         "v": "sk-live-list-0001"})
    redact_outcome([f], result, frames)
    assert (f.message, f.expected) == (f"frame #1 quotes {MASK}", f"no {MASK} here")
    assert (result.error, result.stderr, result.endings) == (f"gave up on {MASK}", [f"printed {MASK}"], ["exit 0"])
    assert result.agent_init == {"info": {"name": "x", "version": {"apiKey": MASK}}, "v": MASK}


# -- compare -----------------------------------------------------------------------------------------------
def _compare(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acp_conformance", "compare", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def test_compare_builds_a_matrix_of_the_targets(runs, tmp_path):
    etree = pytest.importorskip("lxml.etree", reason="lxml (the [test] extra) parses the matrix")
    names = ["reference", "broken", "waived"] + sorted(n for n in runs if str(n).startswith("interop-"))
    reports = [runs[n].report_dir / "report.json" for n in names]
    out = tmp_path / "m" / "matrix.html"
    p = _compare(*map(str, reports), "-o", str(out), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    page = etree.HTML(out.read_text())
    heads = page.xpath("//table[@id='matrix']//th[@class='impl']")
    assert len(heads) == len(names) and len({"".join(h.itertext()) for h in heads}) == len(names)
    for i, name in enumerate(names):
        rep = runs[name].report
        verdict = "CONFORMANT" if rep["verdict"]["conformant"] else "NOT CONFORMANT"
        assert heads[i].xpath("string(.//small)") == verdict
        for status, n in rep["verdict"]["counts"].items():
            shown = page.xpath(f"//table[@id='counts']//tr[@data-status='{status}']/td[@data-col='{i}']/text()")
            assert shown == ([str(n)] if any(r.report["verdict"]["counts"].get(status) for r in map(runs.get, names))
                             else []), (name, status)
            cells = page.xpath(f"//table[@id='matrix']//td[@data-col='{i}'][@data-status='{status}']")
            assert len(cells) == n, (name, status)
        # every cell links to that report's report.html, at the rule's anchor
        by_id = {r["id"]: r for r in rep["rules"]}
        for cell in page.xpath(f"//table[@id='matrix']//td[@data-col='{i}'][@data-status]"):
            rule_id = cell.xpath("string(ancestor::tr/@id)")[len("rule-"):]
            href = urlsplit(cell.xpath("string(a/@href)"))
            assert (out.parent / unquote(href.path)).resolve() == runs[name].report_dir / "report.html"
            assert href.fragment == f"rule-{rule_id}" and by_id[rule_id]["status"] == cell.get("data-status")
    rows = page.xpath("//table[@id='matrix']//tr[@class='rule']/@id")
    assert sorted(rows) == sorted(f"rule-{r['id']}" for r in _checked(runs["reference"].report))
    fail_row = page.xpath(f"//tr[@id='rule-{BROKEN[1]}']")[0]
    assert fail_row.get("data-same") == "false"
    assert [td.get("data-status") for td in fail_row.xpath("td[@data-col]")][:3] == ["pass", "fail", "pass"]


def test_compare_rejects_bad_input_with_a_sentence(runs, tmp_path):
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "junit.xml").write_text("<testsuites/>")
    badge = runs["reference"].report_dir / "badge.json"
    good = str(runs["reference"].report_dir / "report.json")
    cases = [
        ([str(tmp_path / "missing.json")], "cannot read the report"),
        ([str(tmp_path / "list.json")], "is not an acp-conformance report.json"),
        ([good, str(badge)], "is not an acp-conformance report.json"),
        ([str(tmp_path / "junit.xml")], "it is not JSON"),
        ([good, "-o", str(tmp_path)], "cannot write"),
        ([], "the following arguments are required: REPORT.json"),
    ]
    for args, words in cases:
        p = _compare(*args, cwd=tmp_path)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert words in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)
    assert not (tmp_path / "matrix.html").exists()


def test_idempotency_keys_are_not_secrets():
    """session/prompt's idempotencyKey names a submission: the reports show it (which attempts were retries)."""
    from acp_conformance.report.redact import is_secret_name, redact_message
    assert not is_secret_name("idempotencyKey")
    assert is_secret_name("apiKey") and is_secret_name("privateKey")
    msg = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
           "params": {"sessionId": "s", "prompt": [], "idempotencyKey": "k-1"}}
    assert redact_message(msg)["params"]["idempotencyKey"] == "k-1"
