"""The client side, installed, run from outside the repo: the suite plays the agent.

The reference client must be judged conformant with no failure and no warning; each client mutant
breaks one rule (or a tightly bound group) and must be flagged for exactly those rules; hostile
clients fail clearly within the timeouts and leave no process behind; -n 2 gives the same verdict.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from suite_run import ROOT, SuiteRun, run_and_read

sys.path.insert(0, str(Path(__file__).resolve().parent / "client_mutants"))
from client_mutants import MUTANTS  # noqa: E402

REFERENCE_CLIENT = [sys.executable, "-m", "acp_conformance.reference.client", "--", "{agent}"]
REFERENCE_AGENT = [sys.executable, "-m", "acp_conformance.reference.agent"]
MUTANT_SCRIPT = ROOT / "tests" / "client_mutants" / "client_mutants.py"
HOSTILE_SCRIPT = ROOT / "tests" / "hostile_clients" / "hostile_client.py"


def run_client_suite(client_argv: list[str] | None, workdir: Path, *extra: str, timeout: float = 240,
                     env: dict[str, str] | None = None) -> SuiteRun:
    """``acp-conformance client [OPTS] -- CLIENT`` (no CLIENT: the embedded reference client)."""
    workdir.mkdir(parents=True, exist_ok=True)
    report_dir = workdir / "reports"
    junit = workdir / "junit.xml"
    xdist = [] if "-n" in extra else ["-p", "no:xdist"]  # a serial run need not load xdist
    cmd = [sys.executable, "-m", "acp_conformance", "client", f"--acp-report-dir={report_dir}",
           f"--junitxml={junit}", "-q", *xdist, *extra]
    if client_argv is not None:
        cmd += ["--", *client_argv]
    return run_and_read(cmd, workdir, report_dir, junit, timeout=timeout, env=env)


def mutant_cmd(name: str) -> list[str]:
    return [sys.executable, str(MUTANT_SCRIPT), name, "--", "{agent}"]


def client_rules(run: SuiteRun) -> dict[str, str]:
    return {r["id"]: r["status"] for r in run.report["rules"]}


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    return run_client_suite(None, tmp_path_factory.mktemp("client-reference"))


def test_reference_client_is_conformant_with_no_warnings(reference_run):
    r = reference_run
    r.assert_conformant()
    assert r.report["target"]["side"] == "client"
    assert r.report["target"]["info"]["name"] == "acp-conformance-reference-client"
    assert not r.with_status("fail"), r.with_status("fail")
    assert not r.with_status("warn"), [r.rule(x) for x in r.with_status("warn")]
    from acp_conformance.rules.catalog import load_catalog
    from acp_conformance.rules.monitors import checked_on
    catalog = load_catalog()
    checked = checked_on("client")
    # the MUST rules: mandatory (blocking) and advisory (only the upstream docs state them)
    musts = [x for x in catalog.values() if x.side in ("client", "both") and x.tier in ("mandatory", "advisory")
             and x.id in checked and not x.id.startswith("V1-")]  # the V1 rules: test_v1_reference_client_...
    assert len(musts) >= 40
    for rule in musts:  # every MUST client-side rule the suite checks was exercised and passed
        assert r.status(rule.id) == "pass", (rule.id, r.rule(rule.id))
    # only client and both rules are judged on the client side
    assert {x["side"] for x in r.report["rules"]} <= {"client", "both"}
    assert "ACP verdict: CONFORMANT" in r.output


def test_mutant_suite_covers_every_blocking_client_rule():
    from acp_conformance.rules.catalog import load_catalog
    from acp_conformance.rules.monitors import checked_on
    catalog = load_catalog()
    broken = {rule for rules, _ in MUTANTS.values() for rule in rules}
    blocking = {r for r in checked_on("client") if catalog[r].side in ("client", "both") and catalog[r].blocking}
    assert blocking <= broken, sorted(blocking - broken)


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_client_mutant_is_flagged_for_its_rules(name, tmp_path):
    rules, _cls = MUTANTS[name]
    from acp_conformance.rules.catalog import load_catalog
    only_should = all(load_catalog()[x].warns for x in rules)  # SHOULD or advisory
    strict = ["--acp-strict"] if only_should else []
    # a v1 mutant is judged as version 1 (forced: one breaks the very version it asks for)
    strict += ["--acp-protocol=1"] if all(x.startswith("V1-") for x in rules) else []
    r = run_client_suite(mutant_cmd(name), tmp_path, *strict, f"--acp-rules={','.join(rules)}",
                         "--acp-timeout=3")
    assert r.report is not None, r.output[-3000:]
    assert r.returncode == 1, r.output[-3000:]
    assert r.report["verdict"]["conformant"] is False
    for rule in rules:
        expect = "warn" if r.rule(rule)["tier"] in ("should", "advisory") else "fail"
        assert r.status(rule) == expect, (rule, r.rule(rule))
    others = (r.with_status("fail") | r.with_status("warn")) - set(rules)
    assert not others, {o: r.rule(o)["evidence"][:1] for o in others}


def test_v1_reference_client_is_conformant_to_acp_v1(tmp_path):
    """The reference client's version-1 mode, recognised by its initialize (no --acp-protocol): played by the v1
    scripted agent, judged by the V1 rules only, every V1 client rule the suite checks exercised and passed."""
    r = run_client_suite([sys.executable, "-m", "acp_conformance.reference.client", "--protocol", "1", "--",
                          "{agent}"], tmp_path)
    r.assert_conformant()
    assert r.output.rstrip().splitlines()[-1].startswith("ACP verdict: CONFORMANT to ACP v1: "), r.output[-2000:]
    v = r.report["verdict"]
    assert v["protocol"] == 1 and v["revision"] == "v1"
    assert all(x["id"].startswith("V1-") for x in r.report["rules"])
    assert not r.with_status("fail") and not r.with_status("warn")
    from acp_conformance.rules.catalog import load_catalog
    from acp_conformance.rules.monitors import checked_on
    catalog = load_catalog()
    v1_client = {x for x in checked_on("client") if x.startswith("V1-") and catalog[x].side in ("client", "both")}
    assert len(v1_client) >= 10
    assert v1_client <= r.with_status("pass"), {x: r.status(x) for x in v1_client - r.with_status("pass")}


def test_a_v1_client_forced_to_version_2_and_a_v2_client_forced_to_1_are_one_sentence(tmp_path):
    v1 = [sys.executable, "-m", "acp_conformance.reference.client", "--protocol", "1", "--", "{agent}"]
    r = run_client_suite(v1, tmp_path / "a", "--acp-protocol=2")
    assert r.returncode == 6, r.output[-2000:]
    assert "the client speaks ACP protocol version 1; this run judges version 2 (--acp-protocol 1 judges " \
           "version 1)" in r.output
    r = run_client_suite(None, tmp_path / "b", "--acp-protocol=1")
    assert r.returncode == 6, r.output[-2000:]
    assert "the client does not speak ACP protocol version 1, which --acp-protocol 1 asks for: its initialize " \
           "asked for protocolVersion 2" in r.output
    assert r.report["verdict"]["reason_kind"] == "not-v2"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ", 1)[-1].startswith("Z"))


@pytest.mark.parametrize("kind, words", [
    ("never-connects", "did not start its agent"),
    ("exits-at-once", "exited with status 3 without starting its agent"),
    ("hangs", "sent nothing to its agent within"),
])
def test_hostile_clients_fail_clearly_and_leave_nothing_running(kind, words, tmp_path):
    pids = tmp_path / "pids.txt"
    t0 = time.monotonic()
    r = run_client_suite([sys.executable, str(HOSTILE_SCRIPT), kind, "--", "{agent}"], tmp_path,
                         "--acp-rules=CLIENT-001", "--acp-timeout=1", "--acp-startup-timeout=2",
                         "--acp-test-timeout=20", env={"ACP_HOSTILE_PIDS": str(pids)})
    took = time.monotonic() - t0
    assert r.returncode == 1, r.output[-3000:]
    assert words in r.output, r.output[-3000:]
    assert r.report["verdict"]["conformant"] is False
    assert took < 30
    started = [int(x) for x in pids.read_text().split()] if pids.exists() else []
    assert started, "the hostile client did not record its pid"
    left = [p for p in started if _alive(p)]
    assert not left, f"processes left running: {left}"
    if kind == "hangs":
        # the client and the relay it launched, twice (the version probe before collection, then the test): all gone
        assert len(started) == 4


def test_parallel_client_run_gives_the_same_verdicts_as_a_serial_one(reference_run, tmp_path):
    par = run_client_suite(None, tmp_path, "-n", "2")
    assert par.returncode == reference_run.returncode, par.output[-3000:]
    assert client_rules(par) == client_rules(reference_run)
    assert par.report["verdict"]["conformant"] == reference_run.report["verdict"]["conformant"]


def test_bad_client_options_are_usage_errors(tmp_path):
    r = run_client_suite(["definitely-not-a-command-xyz", "{agent}"], tmp_path)
    assert r.returncode == 2 and "--client-cmd" in r.output and "not a command" in r.output
    both = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--agent-cmd=true",
                           "--client-cmd=true"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert both.returncode in (2, 4) and "not both" in both.stdout + both.stderr
    r = run_client_suite(None, tmp_path, "--acp-client-env=NOEQUALS")
    assert r.returncode == 2 and "KEY=VAL" in r.output


def test_reference_client_round_trip_with_the_reference_agent(tmp_path):
    """The reference client against the reference agent, directly: a prompt that asks permission, a cancel."""
    base = [sys.executable, "-m", "acp_conformance.reference.client"]
    for extra in ([], ["--prompt", "Delete the build dir; ask permission first"],
                  ["--prompt", "Count slowly, one number per line", "--cancel-after", "0.2"]):
        p = subprocess.run(base + extra + ["--", shlex.join(REFERENCE_AGENT)], cwd=tmp_path, capture_output=True,
                           text=True, timeout=60, env={**os.environ, "ACP_REFERENCE_STATE_DIR": str(tmp_path)})
        assert p.returncode == 0, (extra, p.stderr[-2000:])


def test_a_client_without_agent_placeholder_is_spoken_to_on_its_stdio(tmp_path):
    stdio_client = ROOT / "tests" / "hostile_clients" / "stdio_client.py"
    r = run_client_suite([sys.executable, str(stdio_client)], tmp_path, "--acp-rules=CLIENT-007,CLIENT-013")
    assert r.report is not None, r.output[-3000:]
    for rule in ("CLIENT-001", "CLIENT-007", "CLIENT-013", "TRANSPORT-002"):
        assert r.status(rule) == "pass", (rule, r.rule(rule))
    assert not r.with_status("fail") and not r.with_status("warn")
    transcript = (r.report_dir / "transcripts").glob("*.jsonl")
    assert not any("relay" in p.read_text() for p in transcript)  # no relay: its own stdin and stdout
