"""The plugin's typed run state and its one blocking policy.

* ``BlockingPolicy`` (rules/verdicts.py) is the one answer to "what blocks" for a test (each finding) and
  for the verdict (each rule), with and without --acp-strict; the per-test answer must agree with the
  verdict's, so that a test and the report never disagree.
* ``TestOutcome`` crosses the xdist boundary as JSON and comes back the same.
* ``RunConfig`` is frozen, built once at configure with every option applied (the multiplier too).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import shlex
import subprocess
import sys

import pytest

from suite_run import REFERENCE_AGENT

from acp_conformance.plugin.outcome import TestOutcome
from acp_conformance.rules.catalog import load_catalog
from acp_conformance.rules.findings import FAIL, FLAKY, INFO, NOT_EXERCISED, NOT_TESTED, PASS, SKIP, WARN, Finding
from acp_conformance.rules.verdicts import BlockingPolicy, compute

CAT = load_catalog()
STATUSES = (PASS, FAIL, FLAKY, WARN, INFO, SKIP, NOT_TESTED, NOT_EXERCISED)


def _one_rule_per_kind():
    """A mandatory MUST, an advisory MUST, a SHOULD and a MAY rule of the catalog."""
    kinds = {}
    for r in CAT.values():
        kinds.setdefault((r.level.split()[0], r.tier), r)
    assert {("MUST", "mandatory"), ("MUST", "advisory"), ("SHOULD", "should"), ("MAY", "may")} <= set(kinds)
    return list(kinds.values())


@pytest.mark.parametrize("strict", [False, True])
def test_a_finding_blocks_its_test_exactly_when_it_blocks_the_verdict(strict):
    """The per-finding decision of the policy agrees with the verdict computed from that one finding (an
    informational finding alone leaves its rule not-tested: the verdict's business, not the test's)."""
    policy = BlockingPolicy(strict)
    for rule, status in itertools.product(_one_rule_per_kind(), (PASS, FAIL, WARN)):
        f = Finding(rule.id, status, "observed")
        verdict = compute(CAT, [f], {rule.id}, {rule.id: ["t"]}, {}, strict=strict)
        in_verdict = rule.id in {v.rule.id for v in verdict.blocking_failures}
        assert policy.finding_blocks(rule, f) == in_verdict, (rule.id, rule.tier, status, strict)


def test_what_blocks_a_test():
    must = next(r for r in CAT.values() if r.tier == "mandatory")
    should = next(r for r in CAT.values() if r.tier == "should")
    advisory = next(r for r in CAT.values() if r.tier == "advisory")
    may = next(r for r in CAT.values() if r.tier == "may")
    plain, strict = BlockingPolicy(), BlockingPolicy(strict=True)
    assert plain.finding_blocks(must, Finding(must.id, FAIL, "x"))
    assert not plain.finding_blocks(must, Finding(must.id, WARN, "x"))
    assert strict.finding_blocks(must, Finding(must.id, WARN, "x"))
    for rule in (should, advisory):  # a warning: blocks only under --acp-strict
        assert not plain.finding_blocks(rule, Finding(rule.id, FAIL, "x"))
        assert strict.finding_blocks(rule, Finding(rule.id, FAIL, "x"))
    assert not strict.finding_blocks(may, Finding(may.id, FAIL, "x"))  # a MAY rule only notes
    # a not-tested finding counts in the verdict, never against the test; an unknown rule never blocks
    assert not strict.finding_blocks(must, Finding(must.id, NOT_TESTED, "x"))
    assert not strict.finding_blocks(None, Finding("NOPE-001", FAIL, "x"))
    fs = [Finding(must.id, FAIL, "a"), Finding(should.id, FAIL, "b"), Finding("NOPE-001", FAIL, "c")]
    assert [f.message for f in plain.blocking_findings(CAT, fs)] == ["a"]
    assert [f.message for f in strict.blocking_findings(CAT, fs)] == ["a", "b"]


def test_what_blocks_the_verdict():
    must = next(r for r in CAT.values() if r.tier == "mandatory")
    should = next(r for r in CAT.values() if r.tier == "should")
    for status in STATUSES:
        v = compute(CAT, [], {must.id}, {}, {})
        rv = next(x for x in v.rules if x.rule.id == must.id)
        rv.status = status
        assert BlockingPolicy().rule_blocks(rv) == (status in (FAIL, FLAKY, NOT_TESTED)), status
        assert BlockingPolicy(strict=True).rule_blocks(rv) == (status in (FAIL, FLAKY, NOT_TESTED, WARN)), status
        assert BlockingPolicy(require_coverage=True).rule_blocks(rv) == (
            status in (FAIL, FLAKY, NOT_TESTED, NOT_EXERCISED)), status
    v = compute(CAT, [Finding(should.id, FAIL, "x")], {should.id}, {}, {})
    rv = next(x for x in v.rules if x.rule.id == should.id)
    assert rv.status == WARN and not BlockingPolicy().rule_blocks(rv) and BlockingPolicy(True).rule_blocks(rv)
    rv.checked = False  # a rule the suite has no check for never decides conformance
    assert not BlockingPolicy(True).rule_blocks(rv)


def test_an_outcome_crosses_xdist_as_json_and_comes_back_the_same():
    out = TestOutcome(findings=[Finding("PROMPT-001", FAIL, "bad", "a string", [3, 4], "f.yaml::t")],
                      rules=["PROMPT-001"], error="timeout", transcript="/r/t.jsonl", agent_init={"info": {}},
                      first_contact={"kind": "k", "sentence": "s"}, summary=["line"])
    import json
    back = TestOutcome.from_json(json.loads(json.dumps(out.to_json())), "f.yaml::t")
    assert back == out
    # a finding without its test gets the report's node id
    assert TestOutcome.from_json({"findings": [{"rule": "X", "status": PASS, "message": "m"}]}, "n").findings[0].test == "n"


def test_the_run_configuration_is_frozen_and_applies_the_multiplier_once(tmp_path):
    from acp_conformance.plugin.options import RunConfig
    assert dataclasses.fields(RunConfig) and RunConfig.__dataclass_params__.frozen
    # the header shows the timeouts as the tests use them: scaled once
    r = subprocess.run([sys.executable, "-m", "pytest", "--agent-cmd=true", f"--acp-report-dir={tmp_path / 'r'}",
                        "--acp-timeout=2", "--acp-startup-timeout=3", "--acp-test-timeout=5",
                        "--acp-timeout-multiplier=3", "--collect-only", "-p", "no:cacheprovider"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "timeouts response 6 s, startup 9 s, test 15 s (x3)" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]


def _probe_run(tmp_path, *extra: str) -> dict:
    """A one-scenario run with a probe plugin that records, at the end, whether hypothesis was imported and whether
    its pytest plugin was still registered."""
    (tmp_path / "probe.py").write_text(
        "import json, sys\n"
        "def pytest_unconfigure(config):\n"
        "    open('probe.json', 'w').write(json.dumps({'imported': 'hypothesis' in sys.modules,\n"
        "        'registered': config.pluginmanager.get_plugin('hypothesispytest') is not None}))\n")
    (tmp_path / "s.yaml").write_text("scenarios:\n  - name: one\n    rules: [INIT-001]\n    steps:\n      - initialize: {}\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-m", "pytest", f"--agent-cmd={shlex.join(REFERENCE_AGENT)}", "-p", "probe",
                    "-p", "no:cacheprovider", "--acp-no-bundled", f"--acp-scenarios={tmp_path / 's.yaml'}",
                    f"--acp-report-dir={tmp_path / 'r'}", "-q", *extra],
                   cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    return json.loads((tmp_path / "probe.json").read_text())


def test_a_conformance_run_does_not_import_hypothesis_for_its_pytest_plugins_summary(tmp_path):
    assert _probe_run(tmp_path) == {"imported": False, "registered": False}
    (tmp_path / "probe.json").unlink()
    # asked for by one of its options, hypothesis' plugin stays
    assert _probe_run(tmp_path, "--hypothesis-show-statistics")["registered"] is True
