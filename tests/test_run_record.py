"""One run record and one pipeline (run_record.py, issue 26): every driver's tests go into one typed record, one
function computes the verdict, the reports render from it once, one module writes transcripts, and the thresholds
come from one typed config whichever driver runs.

The golden reports (tests/data/report_golden/) were written by the code before the run record: a run's report
must stay what it was (random session ids, times and paths aside). ``ACP_REGEN_GOLDEN=1`` rewrites them (only
for a change of a report that is meant).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from acp_conformance.rules.findings import FAIL, PASS, Finding
from acp_conformance.run_record import CHECK, REPLAY, SUITE, RunRecord, TestRecord, judge
from acp_conformance.thresholds import FUZZ, Thresholds

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "report_golden"
PKG = ROOT / "acp_conformance"


# -- the same reports as before --------------------------------------------------------------------

def _normalized(value, report_dir: Path):
    """A report's text with what differs from run to run replaced: the report folder, the checkout, random ids
    (sessions, messages, tool calls, terminals) and times."""
    text = json.dumps(value, ensure_ascii=False).replace(str(report_dir), "REPORT_DIR").replace(str(ROOT), "ROOT")
    text = text.replace(sys.executable, "PYTHON")
    text = re.sub(r"\b(sess|msg|call|term)_[A-Za-z0-9_]+", r"\1_ID", text)
    text = re.sub(r"\d+\.\d+", "N", text)
    return json.loads(text)


def _view(report: dict, report_dir: Path) -> dict:
    """What the golden holds of a report: its keys in order, the verdict's, the tests, the target and every rule
    the run exercised or skipped, whole."""
    out = {"keys": list(report), "verdict_keys": list(report["verdict"]),
           "verdict": {k: report["verdict"].get(k) for k in ("conformant", "strict", "blocking", "observed",
                                                              "revision", "reason_kind")},
           "tests": report["tests"], "target": report["target"], "redacted": report["redacted"],
           "sessions": report.get("sessions"),
           "rules": [r for r in report["rules"] if r["status"] not in ("not-exercised", "not-tested")]}
    return _normalized(out, report_dir)


def _run(args: list[str], tmp_path: Path) -> tuple[int, dict]:
    report_dir = tmp_path / "r"
    proc = subprocess.run([sys.executable, "-m", "acp_conformance", *[a.replace("REPORT_DIR", str(report_dir))
                                                                      for a in args]],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    report = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    return proc.returncode, _view(report, report_dir)


CASES = {
    # check: a stored session (the close-005 mutant's close-unknown-session), judged from both sides
    "check": ["check", "--report-dir", "REPORT_DIR", str(GOLDEN / "close-005-session.jsonl")],
    # the suite (pytest) against the close-005 mutant, the scenarios of CLOSE-005 only
    "suite": ["agent", "--acp-rules", "CLOSE-005", "--acp-report-dir", "REPORT_DIR", "-q", "-p", "no:randomly",
              "--", sys.executable, "tests/mutants/agent_mutants.py", "close-005"],
    # replay of a scenario file against the mutant
    "replay": ["replay", str(GOLDEN / "close-005-scenarios.yaml"), "--report-dir", "REPORT_DIR", "--",
               sys.executable, "tests/mutants/agent_mutants.py", "close-005"],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_run_reports_what_it_reported_before_the_run_record(case, tmp_path):
    code, view = _run(CASES[case], tmp_path)
    path = GOLDEN / f"close-005-{case}.json"
    if os.environ.get("ACP_REGEN_GOLDEN"):
        path.write_text(json.dumps({"exit": code, **view}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    golden = json.loads(path.read_text(encoding="utf-8"))
    assert code == golden.pop("exit")
    gold_rules = {r["id"]: r for r in golden.pop("rules")}
    rules = {r["id"]: r for r in view.pop("rules")}
    assert view == golden
    for rid, entry in gold_rules.items():  # (a rule added since is no difference)
        assert rules.get(rid) == entry, rid
    assert set(rules) - set(gold_rules) <= {r for r in rules if r not in gold_rules and rules[r]["status"] == "skip"}


# -- the record ------------------------------------------------------------------------------------

def _record(driver: str = SUITE, **kw) -> RunRecord:
    return RunRecord(driver, "agent", ["agent"], None, Thresholds(**kw))


def test_the_record_views_are_the_tests_in_the_order_they_were_recorded():
    rec = _record()
    rec.add(TestRecord("a", ["PROMPT-001"], [Finding("PROMPT-001", PASS, "ok", test="a")], "a.jsonl"))
    rec.add(TestRecord("b", ["PROMPT-001", "CLOSE-005"], [], None, skipped="does not apply"))
    rec.add(TestRecord("a", ["PROMPT-001"], [Finding("PROMPT-001", FAIL, "bad", test="a")], "a2.jsonl",
                       error="timeout"))  # a test recorded twice: findings add up, the last facts stand
    assert [f.message for f in rec.findings] == ["ok", "bad"]
    assert rec.bound == {"PROMPT-001": ["a", "b"], "CLOSE-005": ["b"]}
    assert rec.transcripts == {"a": "a2.jsonl", "b": None}
    assert rec.skipped == {"b": "does not apply"} and rec.errors == {"a": "timeout"}
    verdict = judge(rec)
    assert {v.rule.id: v.status for v in verdict.rules}["PROMPT-001"] == FAIL and not verdict.conformant


def test_the_verdict_follows_the_record_thresholds_and_driver():
    rec = _record(revision="base")
    rec.add(TestRecord("a", ["TRANSPORT-012"], [Finding("TRANSPORT-012", FAIL, "a batch", test="a")]))
    assert judge(rec).revision == "base" and judge(rec).conformant is False  # PROMPT-001..: not-tested
    assert "TRANSPORT-012" not in {v.rule.id for v in judge(rec).rules}  # a Preview rule: outside base
    observed = _record(CHECK)
    observed.add(TestRecord("s agent", findings=[Finding("PROMPT-001", PASS, "ok", test="s agent")]))
    verdict = judge(observed)
    assert verdict.observed and verdict.conformant  # nothing unreached counts on observed traffic


def test_an_incomplete_test_names_itself_in_its_rules_reason_only_with_the_suites_hint():
    for hint in (None, "raise it"):
        rec = _record()
        rec.incomplete_hint = hint
        rec.add(TestRecord("f.yaml::t", ["PROMPT-001"], [], error="no answer"))
        reason = next(v.reason for v in judge(rec).rules if v.rule.id == "PROMPT-001")
        assert ("t could not be completed: no answer (if the agent was still working: raise it)" in reason) == bool(hint)


def _calls(name: str) -> list[str]:
    """The product modules that call ``name(``."""
    return sorted(str(p.relative_to(PKG)) for p in PKG.rglob("*.py")
                  if re.search(rf"(?<![\w.]){name}\(|\.{name}\(", p.read_text(encoding="utf-8"))
                  and not re.search(rf"def {name}\(", p.read_text(encoding="utf-8")))


def test_one_function_computes_every_drivers_verdict_and_one_module_writes_transcripts():
    assert _calls("compute_by_revision") == ["run_record.py"]
    assert _calls("transcript_jsonl") == ["report/transcripts.py"]
    assert _calls("build_json_report") == ["report/write.py"]  # rendered once, by the one writer of the reports


# -- one typed config of thresholds ----------------------------------------------------------------

def test_the_fuzzer_judges_with_the_thresholds_it_is_given_never_its_own():
    from acp_conformance.fuzz.config import FuzzConfig, StepStats
    from acp_conformance.fuzz.judge import Judge
    from acp_conformance.protocol.schema import cached_schema
    from acp_conformance.protocol.validate import Validator
    mine = Thresholds(timeout=7.0, work_threshold=2.5, cancel_warn_after=4.0, stop_reason_required=False,
                      strict=True, revision="base")
    config = FuzzConfig(["agent"], thresholds=mine)
    assert (config.timeout, config.strict, config.revision) == (7.0, True, "base")
    judge = Judge(Validator(cached_schema(None)), {}, StepStats(), config.thresholds)
    assert {k: judge.ctx.options[k] for k in ("insertion_work_threshold", "cancel_warn_after",
                                              "stop_reason_required")} == {
        "insertion_work_threshold": 2.5, "cancel_warn_after": 4.0, "stop_reason_required": False}
    assert judge.policy == mine.policy
    plain = FuzzConfig(["agent"], timeout=3.0)  # the fuzzer's own defaults, the given values in place
    assert plain.thresholds == Thresholds(timeout=3.0, startup_timeout=FUZZ.startup_timeout, revision=None)


def test_pytest_fuzz_gives_the_fuzzer_the_runs_thresholds():
    from types import SimpleNamespace

    from acp_conformance.fuzz.pytest_fuzz import FuzzItem
    mine = Thresholds(timeout=9.0, work_threshold=3.0, stop_reason_required=False, strict=True)
    run = SimpleNamespace(argv=["agent"], env={}, prompts={"simple": "hi"}, schema_path=None, thresholds=mine,
                          faults=False)
    config = FuzzItem._agent_config(None, SimpleNamespace(run=run))
    assert config.thresholds is mine and config.timeout == 9.0


def test_observed_traffic_is_judged_with_the_thresholds_given():
    from acp_conformance.protocol.schema import cached_schema
    from acp_conformance.protocol.validate import Validator
    from acp_conformance.tap.session import ObservedSession
    s = ObservedSession(Validator(cached_schema(None)), thresholds=Thresholds(timeout=4.0, work_threshold=1.5))
    options = s.ctx["agent"].options
    assert options["observed_patience"] == options["held_answer_grace"] == 4.0
    assert options["insertion_work_threshold"] == 1.5
    default = ObservedSession(Validator(cached_schema(None))).ctx["client"].options
    assert default["observed_patience"] == default["held_answer_grace"] == 10.0  # the scripted run's --acp-timeout


def test_the_replay_driver_is_recorded_as_such():
    assert REPLAY == "replay" and not _record(REPLAY).observed


def test_the_one_transcript_writer_keeps_each_drivers_format(tmp_path):
    """Secrets masked for the reports' transcripts; the fuzzer's counterexample kept as the frames were (what it
    wrote before: Frame.to_json per line); the target's stderr beside it."""
    from acp_conformance.report.transcripts import write_transcript
    from acp_conformance.wire.transcript import EVENT, SENT, Frame, parse_line
    raw = b'{"jsonrpc":"2.0","id":1,"method":"authenticate","params":{"methodId":"x","apiKey":"sk-secret-1234"}}'
    frames = [Frame(0, 0, EVENT, 0.0, event="start", detail={"argv": ["agent"]}),
              Frame(1, 0, SENT, 0.5, raw, *parse_line(raw))]
    kept = write_transcript(tmp_path, "fuzz-counterexample", frames, redact=False)
    assert kept.read_text(encoding="utf-8") == "".join(json.dumps(f.to_json(), ensure_ascii=False) + "\n"
                                                       for f in frames)
    masked = write_transcript(tmp_path / "t", "errors.yaml::a b", frames, stderr="boom")
    assert masked.name == "errors.yaml_a_b.jsonl" and "sk-secret-1234" not in masked.read_text(encoding="utf-8")
    assert (tmp_path / "t" / "errors.yaml_a_b.stderr.txt").read_text(encoding="utf-8") == "boom"
