"""ACP revisions (protocol/revisions.py, revisions.json): each rule belongs to revisions as data, the run's
--acp-revision selects the verdict that sets the exit status, every report carries both verdicts and the
Preview readiness, and the schema follows the revision."""

from __future__ import annotations

import json
import re

import pytest

from acp_conformance.protocol import revisions
from acp_conformance.protocol.schema import cached_schema
from acp_conformance.protocol.validate import Validator
from acp_conformance.rules.catalog import load_catalog, load_retired
from acp_conformance.rules.findings import FAIL, PASS, Finding
from acp_conformance.rules.verdicts import BlockingPolicy, compute_by_revision
from suite_run import REFERENCE_AGENT, mutant_cmd, run_suite

CAT = load_catalog()
PREVIEW_ONLY = {"IDEM-001", "IDEM-002", "IDEM-003", "RESUME-002", "RESUME-003"}


# -- the data --------------------------------------------------------------------------------------

def test_every_rule_named_by_a_revision_exists_and_says_why_with_a_public_source():
    data = revisions.load_revisions()
    v2 = {name for name, r in data["revisions"].items() if r.get("protocol", 2) == 2}
    assert data["default"] in data["revisions"] and set(data["order"]) == v2  # v1 is chosen by the protocol
    for rid, entry in data["rules"].items():
        assert rid in CAT, rid
        assert re.search(r"https://|#\d+", entry["change"]), (rid, "cite a public source")


def test_a_rule_of_some_revisions_only_says_why_and_only_such_a_rule():
    """The row's revisions decide; revisions.json says why, for exactly the rules of some revisions only."""
    some = {r.id for r in CAT.values()  # (a V1 rule belongs to v1, the one revision of protocol 1)
            if revisions.rule_protocol(r.id) == 2 and set(r.revisions) != set(revisions.names())}
    assert some == set(revisions.load_revisions()["rules"])


def test_the_retired_batch_rules_are_the_base_reading_and_transport_012_the_preview_one():
    assert CAT["TRANSPORT-012"].revisions == ("preview",)
    for rid in ("TRANSPORT-005", "TRANSPORT-007", "TRANSPORT-008"):
        assert CAT[rid].revisions == ("base",) and rid in load_retired()
    assert CAT["PROMPT-001"].revisions == ("base", "preview")  # a rule of every revision


def test_an_unknown_revision_is_a_sentence():
    with pytest.raises(ValueError, match="--acp-revision takes one of base, preview"):
        revisions.check_name("v3")


# -- the schema follows the revision ----------------------------------------------------------------

def test_base_schema_is_ours_without_the_preview_fields():
    ours, base = cached_schema(None), cached_schema(revisions.schema_ref("base"))
    assert "idempotencyKey" in ours.defs["PromptRequest"]["properties"]
    assert "idempotencyKey" not in base.defs["PromptRequest"]["properties"]
    assert "ReplayComplete" in ours.defs and "ReplayComplete" not in base.defs
    assert revisions.schema_ref("preview") is None  # the Preview is our schema as it is
    assert "(base)" in base.revision and base.methods == ours.methods


def test_base_reads_replay_complete_as_a_later_variant_and_still_fails_an_invented_one():
    v = Validator(cached_schema(revisions.schema_ref("base")))
    note = {"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s", "update": {"sessionUpdate": "replay_complete"}}}
    assert v.check_message(note) is None  # a program implementing the Preview is not failed under base
    note["params"]["update"]["sessionUpdate"] = "made_up"
    assert v.check_message(note) is not None


# -- verdicts ---------------------------------------------------------------------------------------

def _verdicts(findings, revision):
    checked = {f.rule for f in findings}
    return compute_by_revision(CAT, findings, checked, {}, {}, side="agent", revision=revision)


def test_a_preview_rule_failing_blocks_preview_only_and_is_the_readiness():
    fs = [Finding("IDEM-001", FAIL, "fresh messageId"), Finding("PROMPT-001", PASS, "ok")]
    base = _verdicts(fs, "base")
    assert base.conformant and base.revision == "base"
    assert "IDEM-001" not in {v.rule.id for v in base.rules}  # out of the base verdict, as another side's rule
    assert not base.by_revision["preview"].conformant
    assert [v.rule.id for v in base.readiness] == ["IDEM-001"]
    line = base.summary_line()
    assert line.startswith("ACP verdict: CONFORMANT") and "Preview readiness: 1" in line and "IDEM-001 (fail)" in line
    preview = _verdicts(fs, None)  # the default
    assert preview.revision == "preview" and not preview.conformant
    assert [v.rule.id for v in preview.blocking_failures] == ["IDEM-001"]


def test_a_failure_of_every_revision_is_no_readiness():
    fs = [Finding("PROMPT-001", FAIL, "no messageId")]
    v = _verdicts(fs, "base")
    assert not v.conformant and v.readiness == []
    assert "every ACP v2 Preview rule judged here is met" in v.summary_line()


def test_a_finding_of_another_revision_never_fails_a_test():
    f = Finding("TRANSPORT-012", FAIL, "answered member by member")
    assert BlockingPolicy(revision="base").blocking_findings(CAT, [f]) == []
    assert BlockingPolicy(revision="preview").blocking_findings(CAT, [f]) == [f]
    assert BlockingPolicy().blocking_findings(CAT, [f]) == [f]  # no revision: every rule


# -- end to end: the base-only agent (an SDK without the Preview's additions) -------------------------

@pytest.fixture(scope="module")
def base_only_runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("base-only")
    return {r: run_suite(mutant_cmd("base-only"), d / r, f"--acp-revision={r}") for r in ("base", "preview")}


def test_base_only_agent_is_conformant_under_base_with_the_preview_readiness(base_only_runs):
    r = base_only_runs["base"]
    assert r.returncode == 0, r.output[-3000:]
    v = r.report["verdict"]
    assert v["conformant"] and v["revision"] == "base" and v["revisions"]["base"]["conformant"]
    assert not v["revisions"]["preview"]["conformant"]
    ready = {x["id"] for x in v["preview_readiness"]}
    assert ready == PREVIEW_ONLY, ready
    assert all(x["source"] for x in v["preview_readiness"])
    assert "Preview readiness: 5 ACP v2 Preview rule(s) not met yet" in r.output
    html = (r.report_dir / "report.html").read_text()
    assert 'id="readiness"' in html and "IDEM-001" in html
    badge = json.loads((r.report_dir / "badge.json").read_text())
    assert badge["label"] == "ACP v2 as released" and "Preview: 5 rules to go" in badge["message"]
    junit = r.junit.read_text()
    assert 'name="acp_revision" value="base"' in junit and 'name="preview_readiness"' in junit


def test_base_only_agent_fails_the_preview_for_exactly_the_preview_rules(base_only_runs):
    r = base_only_runs["preview"]
    assert r.returncode == 1
    v = r.report["verdict"]
    assert not v["conformant"] and v["revision"] == "preview" and v["revisions"]["base"]["conformant"]
    assert set(v["blocking"]) == PREVIEW_ONLY
    assert r.with_status("fail") == PREVIEW_ONLY - {"RESUME-003"}  # RESUME-003 is not-tested: no marker to order
    assert {x["id"] for x in v["preview_readiness"]} == PREVIEW_ONLY


def test_reference_agent_is_conformant_under_base(tmp_path):
    r = run_suite(REFERENCE_AGENT, tmp_path, "--acp-revision=base")
    assert r.returncode == 0, r.output[-3000:]
    v = r.report["verdict"]
    assert v["conformant"] and v["revisions"]["preview"]["conformant"] and v["preview_readiness"] == []
    assert r.report["schema"]["revision"].endswith("(base)")


def test_a_bad_revision_is_a_usage_error(tmp_path):
    r = run_suite(REFERENCE_AGENT, tmp_path, "--acp-revision=v3")
    assert r.returncode == 2 and "--acp-revision takes one of base, preview" in r.output
    assert "Traceback" not in r.output


def test_rules_explain_shows_the_revisions():
    from acp_conformance.rules.explain import explain
    line = next(x for x in explain("IDEM-001") if x.startswith("revisions:"))
    assert "preview (ACP v2 Preview); only these:" in line and "idempotency-keys" in line
    line = next(x for x in explain("PROMPT-001") if x.startswith("revisions:"))
    assert line.endswith("(every revision)")


def test_a_batch_never_fails_a_base_target(tmp_path):
    """An agent that drops batch arrays breaks the Preview's TRANSPORT-012 only: CONFORMANT under base (whose
    JSON-RPC 2.0 batch rules are not judged), with TRANSPORT-012 as its Preview readiness."""
    r = run_suite(mutant_cmd("wire-transport-012"), tmp_path, "--acp-revision=base")
    assert r.returncode == 0, r.output[-3000:]
    v = r.report["verdict"]
    assert v["conformant"] and [x["id"] for x in v["preview_readiness"]] == ["TRANSPORT-012"]
    assert "TRANSPORT-012" not in {x["id"] for x in r.report["rules"]}


def _fuzz(tmp_path, *extra):
    import subprocess
    import sys
    cmd = [sys.executable, "-m", "acp_conformance", "fuzz", "--agent-cmd", " ".join(mutant_cmd("base-only")),
           "--seed", "3", "--max-examples", "12", "--budget", "30", "--report-dir", str(tmp_path), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_the_fuzzer_judges_a_base_target_by_base(tmp_path):
    """Under base the fuzzer sends no idempotencyKey (the base schema has none) and no Preview rule fails an
    example; under preview the same agent's ignored keys are found."""
    base = _fuzz(tmp_path / "base", "--acp-revision=base")
    assert base.returncode == 0, base.stdout[-2000:] + base.stderr[-2000:]
    assert "no finding" in base.stdout
    preview = _fuzz(tmp_path / "preview")
    assert preview.returncode == 1, preview.stdout[-2000:]
    assert re.search(r"rules: IDEM-00\d", preview.stdout), preview.stdout[-2000:]


def test_the_fuzzer_draws_no_idempotency_key_from_the_base_schema():
    base = cached_schema(revisions.schema_ref("base"))
    assert "idempotencyKey" not in base.defs["PromptRequest"]["properties"]
    import random
    from acp_conformance.fuzz.fast_generator import fast_generator_for
    rng = random.Random(7)
    ours, gen = fast_generator_for(None), fast_generator_for(revisions.schema_ref("base"))
    assert any("idempotencyKey" in (ours.params("session/prompt", rng) or {}) for _ in range(200))
    assert not any("idempotencyKey" in (gen.params("session/prompt", rng) or {}) for _ in range(200))


def test_check_judges_a_recorded_session_under_either_revision(base_only_runs, tmp_path):
    """Observed traffic (check; tap shares its judging): the base-only agent's retry transcript is CONFORMANT under
    base with IDEM-001..003 as its readiness, and NOT CONFORMANT under preview."""
    import subprocess
    import sys
    transcript = next((base_only_runs["base"].report_dir / "transcripts").glob("idem.yaml_prompt-retry-after-turn*.jsonl"))
    out = {}
    for rev in ("base", "preview"):
        out[rev] = subprocess.run([sys.executable, "-m", "acp_conformance", "check", f"--acp-revision={rev}",
                                   "--report-dir", str(tmp_path / rev), str(transcript)],
                                  capture_output=True, text=True, timeout=120)
        report = json.loads((tmp_path / rev / "report.json").read_text())
        assert {x["id"] for x in report["verdict"]["preview_readiness"]} == {"IDEM-001", "IDEM-002", "IDEM-003"}
    assert out["base"].returncode == 0, out["base"].stdout[-2000:]
    assert out["preview"].returncode == 1 and "blocking: IDEM-001, IDEM-002, IDEM-003" in out["preview"].stdout


def test_reference_client_is_conformant_under_base(tmp_path):
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "acp_conformance", "client", "--acp-revision=base",
                        f"--acp-report-dir={tmp_path}", "-p", "no:cacheprovider", "-q"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:]
    v = json.loads((tmp_path / "report.json").read_text())["verdict"]
    assert v["revision"] == "base" and v["conformant"] and v["revisions"]["preview"]["conformant"]


def test_the_matrix_shows_both_verdicts_and_the_readiness(base_only_runs, tmp_path):
    from acp_conformance.report.compare import write_matrix
    out = write_matrix([str(base_only_runs[r].report_dir / "report.json") for r in ("base", "preview")],
                       tmp_path / "matrix.html")
    page = out.read_text()
    assert "base: ok* · preview: not" in page and "base: ok · preview: not*" in page
    assert "Preview: 5 to go" in page
