"""ACP v1 end to end (issue 28): the suite judges the version the agent negotiates. The v1 reference agent is
CONFORMANT to ACP v1 with every V1 rule the suite can reach exercised; --acp-protocol forces a version, and a
target that refuses it is the one case left for exit 6. (Each v1 mutant is flagged for its rule by
tests/test_suite_end_to_end.py; the v1 monitors' frame tests are tests/test_monitors_v1.py.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

from acp_conformance.rules.catalog import load_catalog
from acp_conformance.rules.monitors import checked_on
from suite_run import REFERENCE_AGENT, run_suite

V1_REFERENCE = [*REFERENCE_AGENT, "--protocol", "1"]
# target rules the reference never reaches: it asks no authentication
UNREACHED = {"V1-AUTH-001"}


@pytest.fixture(scope="module")
def v1_run(tmp_path_factory):
    return run_suite(V1_REFERENCE, tmp_path_factory.mktemp("v1"))


def test_the_v1_reference_agent_is_conformant_to_acp_v1(v1_run):
    r = v1_run
    r.assert_conformant()
    assert r.returncode == 0
    assert "ACP verdict: CONFORMANT to ACP v1: " in r.output, r.output[-2000:]
    v = r.report["verdict"]
    assert v["protocol"] == 1 and v["revision"] == "v1" and set(v["revisions"]) == {"v1"}
    ids = {x["id"] for x in r.report["rules"]}
    assert ids and all(i.startswith("V1-") for i in ids), sorted(i for i in ids if not i.startswith("V1-"))
    assert not r.with_status("fail") and not r.with_status("warn")


def test_every_v1_agent_rule_is_exercised_on_the_reference(v1_run):
    catalog = load_catalog()
    v1_agent = {rid for rid in checked_on("agent") if rid.startswith("V1-") and catalog[rid].side in ("agent", "both")}
    assert v1_agent
    passed = v1_run.with_status("pass")
    assert v1_agent - passed == UNREACHED, {rid: v1_run.status(rid) for rid in v1_agent - passed}


def test_the_agent_speaks_version_1_and_the_run_is_forced_to_2(tmp_path):
    r = run_suite(V1_REFERENCE, tmp_path, "--acp-protocol=2")
    assert r.returncode == 6, r.output[-2000:]
    assert "the agent speaks ACP protocol version 1; this run judges version 2 (--acp-protocol 1 judges " \
           "version 1)" in r.output


def test_a_v2_agent_forced_to_version_1_is_one_sentence(tmp_path):
    r = run_suite(REFERENCE_AGENT, tmp_path, "--acp-protocol=1")
    assert r.returncode == 6, r.output[-2000:]
    assert "the agent does not speak ACP protocol version 1, which --acp-protocol 1 asks for" in r.output
    assert r.report["verdict"]["reason_kind"] == "not-v2"


def test_a_v2_agent_is_still_judged_as_version_2(tmp_path):
    """The probe that picks the version costs one initialize: a v2 agent keeps its v2 run and verdict."""
    r = run_suite(REFERENCE_AGENT, tmp_path, "--acp-rules=PROMPT-001")  # a subset: inconclusive, never failed
    assert r.report["verdict"]["protocol"] == 2 and "CONFORMANT to ACP v2 (preview)" in r.output, r.output[-2000:]
    assert r.status("PROMPT-001") == "pass" and not r.with_status("fail")


def test_a_bad_protocol_option_is_a_usage_error(tmp_path):
    r = run_suite(V1_REFERENCE, tmp_path, "--acp-protocol=3")
    assert r.returncode == 2 and "--acp-protocol takes 1 or 2 (got '3')" in r.output


def test_version_1_for_a_client_is_judged_not_refused(tmp_path):
    """--acp-protocol 1 with --client-cmd judges the v1 client side (a client that sends nothing: one sentence)."""
    p = subprocess.run([sys.executable, "-m", "acp_conformance", "client", f"--acp-report-dir={tmp_path}",
                        "--acp-protocol=1", "--acp-startup-timeout=3", "--", sys.executable, "-c", "pass"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    out = p.stdout + p.stderr
    assert p.returncode == 1 and "not judged yet" not in out, out[-2000:]
    assert "ACP verdict: NOT CONFORMANT: not an ACP client" in out, out[-2000:]
