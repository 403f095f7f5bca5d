"""Verdicts: worst over findings, levels, untested blocking rules count, unchecked rules do not."""

from acp_conformance.rules.catalog import load_catalog
from acp_conformance.rules.findings import FAIL, NOT_TESTED, PASS, SKIP, WARN, Finding
from acp_conformance.rules.verdicts import compute

CAT = load_catalog()


def status(v, rid):
    return next(r for r in v.rules if r.rule.id == rid).status


def test_worst_over_findings_and_pass_beats_inconclusive():
    fs = [Finding("PROMPT-001", PASS, "ok", test="t1"), Finding("PROMPT-001", FAIL, "bad", test="t2"),
          Finding("CANCEL-001", NOT_TESTED, "race", test="t3"), Finding("CANCEL-001", PASS, "ok", test="t4")]
    v = compute(CAT, fs, {"PROMPT-001", "CANCEL-001"}, {}, {})
    assert status(v, "PROMPT-001") == FAIL
    assert status(v, "CANCEL-001") == PASS
    assert not v.conformant
    assert [r.rule.id for r in v.blocking_failures] == ["PROMPT-001"]


def test_should_failure_is_a_warning_and_strict_makes_it_block():
    fs = [Finding("CLOSE-005", FAIL, "other error")]
    v = compute(CAT, fs, {"CLOSE-005"}, {}, {})
    assert status(v, "CLOSE-005") == WARN
    assert v.conformant
    assert not compute(CAT, fs, {"CLOSE-005"}, {}, {}, strict=True).conformant


def test_untested_blocking_rule_counts_against_conformance():
    v = compute(CAT, [], {"PROMPT-001"}, {"PROMPT-001": ["t1"]}, {})
    assert status(v, "PROMPT-001") == NOT_TESTED
    assert not v.conformant


def test_rules_without_a_check_are_left_out_of_the_verdict():
    v = compute(CAT, [Finding("PROMPT-001", PASS, "ok")], {"PROMPT-001"}, {}, {})
    assert v.conformant
    unchecked = [r for r in v.rules if not r.checked]
    assert unchecked and all(r.status == NOT_TESTED for r in unchecked)


def test_all_bound_tests_skipped_is_skip():
    v = compute(CAT, [], {"DELETE-001"}, {"DELETE-001": ["t1"]}, {"t1": "no session.delete"})
    assert status(v, "DELETE-001") == SKIP
    assert v.conformant


def test_a_must_only_the_upstream_docs_state_is_advisory_and_warns():
    """Batches (TRANSPORT-007) are only in the older transport page: a failure warns; strict blocks it.
    The stdio framing (TRANSPORT-003) is the exception and stays mandatory."""
    assert CAT["TRANSPORT-007"].tier == "advisory" and not CAT["TRANSPORT-007"].blocking
    assert CAT["TRANSPORT-003"].tier == "mandatory" and CAT["TRANSPORT-003"].blocking
    assert CAT["PROMPT-001"].tier == "mandatory"  # the seeds state it
    assert CAT["ERR-011"].tier == "mandatory"  # JSON-RPC 2.0, which ACP adopts
    fs = [Finding("TRANSPORT-007", FAIL, "an all-notification batch was answered")]
    v = compute(CAT, fs, {"TRANSPORT-007"}, {}, {})
    assert status(v, "TRANSPORT-007") == WARN and v.conformant
    assert next(r for r in v.rules if r.rule.id == "TRANSPORT-007").to_json()["tier"] == "advisory"
    assert not compute(CAT, fs, {"TRANSPORT-007"}, {}, {}, strict=True).conformant
    v = compute(CAT, [Finding("TRANSPORT-003", FAIL, "a banner")], {"TRANSPORT-003"}, {}, {})
    assert status(v, "TRANSPORT-003") == FAIL and not v.conformant


# --- who creates the situation: not-exercised (target) vs not-tested (suite), coverage, certification ---

import json  # noqa: E402
from pathlib import Path  # noqa: E402

from acp_conformance.rules.findings import NOT_EXERCISED  # noqa: E402
from acp_conformance.rules.monitors import checked_on  # noqa: E402
from acp_conformance.rules.verdicts import XFAIL  # noqa: E402
from acp_conformance.report.waivers import Waiver  # noqa: E402


def test_every_checked_rule_has_exactly_one_creator_and_the_data_names_only_catalog_rules():
    data = json.loads((Path(__file__).parents[1] / "acp_conformance/rules/situations.json").read_text())
    assert set(data) <= set(CAT), set(data) - set(CAT)
    for rid in checked_on(None):
        assert CAT[rid].creator in ("suite", "target"), rid
        assert data[rid]["creator"] == CAT[rid].creator
        assert bool(CAT[rid].reach) == (CAT[rid].creator == "target"), rid  # a target rule says what reaches it
    assert CAT["TOOL-001"].creator == "target" and CAT["PERM-001"].creator == "target"
    assert CAT["PROMPT-001"].creator == "suite" and CAT["INIT-001"].creator == "suite"


def test_a_target_rule_never_reached_is_not_exercised_and_does_not_block():
    v = compute(CAT, [Finding("PROMPT-001", PASS, "ok")], {"PROMPT-001", "TOOL-001", "PERM-001"},
                {"TOOL-001": ["t1"]}, {})
    assert status(v, "TOOL-001") == NOT_EXERCISED and status(v, "PERM-001") == NOT_EXERCISED
    assert "--acp-tool-prompt" in next(r for r in v.rules if r.rule.id == "TOOL-001").reason
    assert v.conformant
    assert v.coverage() == {"exercised": 1, "checked": 3}
    assert v.counts()[NOT_EXERCISED] == 2
    assert v.summary_line().startswith("ACP verdict: CONFORMANT: 1 of 3 rules exercised, 0 failed")


def test_a_suite_rule_never_reached_stays_not_tested_and_blocks():
    v = compute(CAT, [Finding("TOOL-001", PASS, "ok")], {"PROMPT-001", "TOOL-001"}, {}, {})
    assert status(v, "PROMPT-001") == NOT_TESTED
    assert [r.rule.id for r in v.blocking_failures] == ["PROMPT-001"]
    assert v.summary_line().startswith("ACP verdict: NOT CONFORMANT: 1 of 2 rules exercised, 0 failed")


def test_require_coverage_makes_not_exercised_block_unless_waived():
    checked = {"PROMPT-001", "TERM-001"}
    fs = [Finding("PROMPT-001", PASS, "ok")]
    v = compute(CAT, fs, checked, {}, {}, require_coverage=True)
    assert status(v, "TERM-001") == NOT_EXERCISED and not v.conformant
    assert [r.rule.id for r in v.blocking_failures] == ["TERM-001"]
    w = {"TERM-001": Waiver("TERM-001", "we never create terminals")}
    v = compute(CAT, fs, checked, {}, {}, require_coverage=True, waivers=w)
    assert status(v, "TERM-001") == XFAIL and v.conformant
    assert "we never create terminals" in next(r for r in v.rules if r.rule.id == "TERM-001").reason
    assert v.coverage() == {"exercised": 1, "checked": 2}  # waived, still not exercised


def test_a_target_rule_that_was_reached_and_failed_blocks():
    v = compute(CAT, [Finding("TOOL-001", FAIL, "no toolCallId")], {"TOOL-001"}, {}, {})
    assert status(v, "TOOL-001") == FAIL and not v.conformant
    assert v.coverage() == {"exercised": 1, "checked": 1}
