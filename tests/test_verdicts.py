"""Verdicts: worst over findings, levels, untested blocking rules count, unchecked rules do not."""

from acp_conformance.rules.catalog import load_catalog
from acp_conformance.rules.findings import FAIL, NOT_EXERCISED, NOT_TESTED, PASS, SKIP, WARN, Finding
from acp_conformance.report.waivers import Waiver
from acp_conformance.rules.verdicts import compute

CAT = load_catalog()


def _rule(v, rid):
    return next(r for r in v.rules if r.rule.id == rid)


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


# -- who creates the situation: not-tested (inconclusive) vs not-exercised -------------------------------
def test_a_target_rule_never_reached_is_not_exercised_and_does_not_block():
    assert CAT["TOOL-001"].creator_on("agent") == "target" and CAT["PROMPT-001"].creator_on("agent") == "suite"
    fs = [Finding("PROMPT-001", PASS, "ok", test="t1"), Finding("TOOL-001", NOT_TESTED, "no tool call", test="t2")]
    v = compute(CAT, fs, {"PROMPT-001", "TOOL-001", "PERM-001"}, {"PERM-001": ["t3"]}, {}, side="agent")
    assert status(v, "TOOL-001") == NOT_EXERCISED and status(v, "PERM-001") == NOT_EXERCISED
    tool = next(r for r in v.rules if r.rule.id == "TOOL-001")
    assert "no tool call" in tool.reason and "--acp-tool-prompt" in tool.reason  # what was seen, what would reach it
    assert v.conformant and not v.inconclusive
    assert v.coverage() == {"checked": 3, "exercised": 1, "not_exercised": 2, "not_tested": 0, "skipped": 0}
    assert v.headline() == "CONFORMANT: 1 of 3 rules exercised, 0 failed"
    assert v.summary_line().startswith("ACP verdict: CONFORMANT: 1 of 3 rules exercised, 0 failed (1 pass, 2 not-exercised")


def test_a_suite_rule_never_reached_is_not_tested_and_the_run_is_inconclusive():
    v = compute(CAT, [Finding("PROMPT-001", NOT_TESTED, "no answer", test="t1")], {"PROMPT-001", "TOOL-001"}, {}, {},
                side="agent")
    assert status(v, "PROMPT-001") == NOT_TESTED and status(v, "TOOL-001") == NOT_EXERCISED
    assert not v.conformant and [r.rule.id for r in v.inconclusive] == ["PROMPT-001"]
    assert v.headline().startswith("NOT CONFORMANT (inconclusive): 0 of 2 rules exercised")


def test_require_coverage_makes_not_exercised_block_unless_waived():
    fs = [Finding("PROMPT-001", PASS, "ok")]
    checked = {"PROMPT-001", "TERM-001", "TOOL-001"}
    v = compute(CAT, fs, checked, {}, {}, side="agent", require_coverage=True)
    assert not v.conformant and {r.rule.id for r in v.blocking_failures} == {"TERM-001", "TOOL-001"}
    w = Waiver("TERM-001", "we never create terminals")
    v = compute(CAT, fs, checked, {}, {}, side="agent", require_coverage=True, waivers={"TERM-001": w})
    assert [r.rule.id for r in v.blocking_failures] == ["TOOL-001"]
    term = next(r for r in v.rules if r.rule.id == "TERM-001")
    assert term.status == NOT_EXERCISED and term.reason.startswith("waived (we never create terminals)")
    assert not term.stale_waiver


def test_the_creator_can_differ_by_side():
    # ERR-010 (no reused request ids): only an agent that sends requests creates it; every client sends requests
    assert CAT["ERR-010"].creator_on("agent") == "target" and CAT["ERR-010"].creator_on("client") == "suite"
    assert status(compute(CAT, [], {"ERR-010"}, {}, {}, side="agent"), "ERR-010") == NOT_EXERCISED
    assert status(compute(CAT, [], {"ERR-010"}, {}, {}, side="client"), "ERR-010") == NOT_TESTED


def test_every_checked_rule_has_exactly_one_creator_and_the_data_names_only_catalog_rules():
    from acp_conformance.rules.catalog import load_situations
    from acp_conformance.rules.monitors import checked_on
    situations = load_situations()
    assert set(situations) <= set(CAT), set(situations) - set(CAT)
    missing = set(checked_on(None)) - set(situations)
    assert not missing, f"checked rules without a creator in situations.json: {sorted(missing)}"
    for rid, s in situations.items():
        creators = s["creator"].values() if isinstance(s["creator"], dict) else [s["creator"]]
        assert set(creators) <= {"suite", "target"}, (rid, s)
        if "target" in creators:
            assert s.get("reach"), f"{rid}: a target rule says what would reach it"


def test_a_test_skipped_for_a_situation_the_target_never_created_does_not_make_its_rules_skip():
    from acp_conformance.rules.verdicts import NOT_EXERCISED_SKIP
    skipped = {"t1": NOT_EXERCISED_SKIP + "the target never did what this scenario waits for: no tool call"}
    bound = {"TOOL-001": ["t1"], "TOOL-007": ["t1"]}
    v = compute(CAT, [], {"TOOL-001", "TOOL-007"}, bound, skipped, side="agent")
    assert status(v, "TOOL-001") == NOT_EXERCISED  # a target rule: the target's right
    # a suite rule whose only test waited for what this target legally never did: not exercised in this run,
    # with the test's reason (it was not-tested with a reason saying "not exercised", issue 25)
    assert status(v, "TOOL-007") == NOT_EXERCISED
    assert _rule(v, "TOOL-007").reason.startswith(NOT_EXERCISED_SKIP) and _rule(v, "TOOL-007").creator == "suite"
    assert v.conformant
    # one bound test that did not reach it for another reason (no skip): the suite's miss, inconclusive
    v = compute(CAT, [], {"TOOL-007"}, {"TOOL-007": ["t1", "t2"]}, skipped, side="agent")
    assert status(v, "TOOL-007") == NOT_TESTED and not v.conformant
    v = compute(CAT, [], {"TOOL-001"}, bound, {"t1": "session.delete not advertised"}, side="agent")
    assert status(v, "TOOL-001") == SKIP


def test_a_legal_choice_of_the_target_makes_a_suite_rule_not_exercised_with_its_reason():
    """Issue 25: whether the suite could create a rule's situation is judged per run. A monitor that saw the
    target take a legal way round the rule (the older batch reading; -32002 for a session it does not keep in
    a new process) reports not-exercised: the rule says why and does not block, though the suite creates its
    situation. A pass elsewhere wins; a suite miss elsewhere (not-tested) still makes the run inconclusive."""
    older = Finding("TRANSPORT-012", NOT_EXERCISED, "answered member by member: the older reading", test="t1")
    v = compute(CAT, [older], {"TRANSPORT-012"}, {"TRANSPORT-012": ["t1"]}, {}, side="agent")
    r = _rule(v, "TRANSPORT-012")
    assert r.status == NOT_EXERCISED and r.reason == older.message and r.creator == "suite"
    assert v.conformant and not v.blocking_failures
    v = compute(CAT, [older, Finding("TRANSPORT-012", PASS, "refused whole", test="t2")], {"TRANSPORT-012"},
                {}, {}, side="agent")
    assert status(v, "TRANSPORT-012") == PASS
    v = compute(CAT, [older, Finding("TRANSPORT-012", NOT_TESTED, "no answer to read", test="t2")],
                {"TRANSPORT-012"}, {}, {}, side="agent")
    assert status(v, "TRANSPORT-012") == NOT_TESTED and not v.conformant
