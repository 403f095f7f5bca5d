"""The suite against an ACP v2 agent written apart from it (tests/independent/agent.py, from the spec text, with
choices of its own): every correct program earns CONFORMANT with no option beyond its command (issue 25).

Three modes: sessions kept in memory (a new process knows none: resumes there are answered -32002), kept in a
directory shared by every process of the run (more sessions than one page of session/list), and minimal (only
the required capabilities). Each run is bounded by the time of its exchanges, not of the agent's turns: a slow
prompt streams for 30 s until cancelled, and no test waits it out.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from suite_run import run_suite

AGENT = Path(__file__).resolve().parent / "independent" / "agent.py"
# the whole suite on this agent takes ~6 s serially on an idle machine. What is asserted is load-independent:
# no test's transcript lasts as long as one slow turn of the agent (30 s), i.e. no test waited one out
LONGEST_TEST = 15.0


def _longest_transcript(run) -> tuple[float, str]:
    """(the longest time from the first to the last frame of one test, that test)."""
    spans = []
    for t in run.report["tests"]:
        lines = Path(t["transcript"]).read_text().splitlines() if t.get("transcript") else []
        if lines:
            spans.append((json.loads(lines[-1])["t"] - json.loads(lines[0])["t"], t["id"]))
    return max(spans)


def _mode_args(mode: str, tmp_path: Path) -> list[str]:
    return {"memory": [], "persist": ["--persist", str(tmp_path / "store")], "minimal": ["--minimal"]}[mode]


@pytest.mark.parametrize("mode", ["memory", "persist", "minimal"])
def test_an_independent_agent_is_conformant_with_no_option(mode, tmp_path):
    run = run_suite([sys.executable, str(AGENT), *_mode_args(mode, tmp_path)], tmp_path / "run")
    assert run.report is not None, run.output[-4000:]
    failing = {r["id"]: r["reason"][:300] for r in run.report["rules"]
               if r["checked"] and r["status"] in ("fail", "flaky", "not-tested") and r["blocking"]}
    assert run.returncode == 0 and run.report["verdict"]["conformant"] is True, (failing, run.output[-3000:])
    # pytest's outcome and the verdict agree: no test failed
    assert not re.search(r"\b[1-9]\d* failed\b", run.output), run.output[-3000:]
    assert not run.with_status("fail"), run.with_status("fail")
    # the legal choices are reasons, not failures: each rule they kept from being judged says so
    statuses = {r["id"]: r for r in run.report["rules"]}
    # batch members answered one by one (the older reading) are not exercised, never failed; the empty batch [],
    # which both readings answer with one -32600, passes the rule
    assert statuses["TRANSPORT-012"]["status"] == "pass"
    assert statuses["RESUME-007"]["status"] == "pass"  # the cursor probes reach a session the agent knows
    for r in run.report["rules"]:  # a status and its reason never disagree
        assert not (r["status"] == "not-tested" and r["reason"].startswith("not exercised")), r
    span, test = _longest_transcript(run)
    assert span < LONGEST_TEST, f"{mode}: {test} lasted {span:.1f} s"


def test_a_test_waiting_for_a_long_turn_is_bounded_by_its_exchanges(tmp_path):
    """The scenarios that once waited for the 30 s turn to end by itself (prompt-answered-before-work-ends,
    prompt-retry-concurrent) cancel it once answered: they pass, and the cancelled idle is the one judged."""
    run = run_suite([sys.executable, str(AGENT)], tmp_path / "run", "-k",
                    "prompt-answered-before-work-ends or prompt-retry-concurrent")
    assert "2 passed" in run.output, run.output[-3000:]
    span, test = _longest_transcript(run)
    assert span < LONGEST_TEST, f"{test} lasted {span:.1f} s"
    for rule in ("PROMPT-005", "PROMPT-011", "PROMPT-012", "PROMPT-013", "IDEM-001"):
        assert run.status(rule) == "pass", run.rule(rule)


def test_an_incomplete_test_is_not_a_failure_and_says_what_to_change(tmp_path):
    """A scenario waiting for an idle that a long turn (a tool prompt that also counts slowly) does not give
    within --acp-timeout cannot be completed; nothing it saw blocks, so pytest does not fail it (the verdict
    says 0 failed too): it is skipped as incomplete, saying what to change, and its unreached rules are
    not-tested (inconclusive) with the same hint."""
    run = run_suite([sys.executable, str(AGENT)], tmp_path / "run", "--acp-timeout=2", "-rs", "-k",
                    "tool-call-reported", "--acp-tool-prompt=Use a tool, then count slowly")
    assert run.returncode == 1 and not re.search(r"\b[1-9]\d* failed\b", run.output), run.output[-3000:]
    assert "1 skipped" in run.output and "incomplete: the scenario could not be completed" in run.output
    assert "--acp-timeout, now 2 s" in run.output and "--acp-tool-prompt" in run.output
    assert "NOT CONFORMANT to ACP v2 (preview) (inconclusive)" in run.output
    rule = run.rule("TOOL-007")
    assert rule["status"] == "not-tested" and "tool-call-reported could not be completed" in rule["reason"]
    assert "--acp-timeout" in rule["reason"]


def test_an_agent_holding_prompts_behind_a_long_turn_is_judged_without_waiting_it_out(tmp_path):
    """--hold: a prompt sent while the 30 s turn runs is held until the work ends. The scenarios about held
    prompts wait one --acp-timeout for it at most, then cancel: the held prompt is refused with -32800 (not
    inserted), exactly one answer, and no test lasts as long as the turn."""
    run = run_suite([sys.executable, str(AGENT), "--hold"], tmp_path / "run", "--acp-timeout=3", "-k",
                    "held or cancel or close or retry")
    assert not re.search(r"\b[1-9]\d* failed\b", run.output), run.output[-3000:]
    for rule in ("PROMPT-017", "CANCEL-009", "CLOSE-004", "IDEM-001", "IDEM-002"):
        assert run.status(rule) == "pass", run.rule(rule)
    span, test = _longest_transcript(run)
    assert span < LONGEST_TEST, f"{test} lasted {span:.1f} s"


AGENT_V1 = Path(__file__).resolve().parent / "independent" / "agent_v1.py"


@pytest.mark.parametrize("mode", ["memory", "persist"])
def test_an_independent_v1_agent_gets_a_v1_verdict_with_its_rules_exercised(mode, tmp_path):
    """An ACP v1 agent written apart from the suite (tests/independent/agent_v1.py, from the v1 pages, its own
    choices: no modes or config options, sessions in memory unless --persist): CONFORMANT to ACP v1 with no option
    beyond its command, the V1 rules of every situation it creates exercised, its legal choices not exercised
    (issue 28)."""
    args = ["--persist", str(tmp_path / "store")] if mode == "persist" else []
    run = run_suite([sys.executable, str(AGENT_V1), *args], tmp_path / "run")
    assert run.report is not None, run.output[-4000:]
    assert run.returncode == 0 and run.report["verdict"]["conformant"] is True, run.output[-3000:]
    assert run.report["verdict"]["protocol"] == 1 and "CONFORMANT to ACP v1: " in run.output
    statuses = {r["id"]: r["status"] for r in run.report["rules"]}
    assert all(rid.startswith("V1-") for rid in statuses)
    for rid in ("V1-INIT-001", "V1-INIT-002", "V1-SESSION-001", "V1-PROMPT-001", "V1-PROMPT-002", "V1-CANCEL-001",
                "V1-CANCEL-002", "V1-CANCEL-003", "V1-UPDATE-001", "V1-UPDATE-002", "V1-TOOL-001", "V1-PERM-001",
                "V1-PERM-002", "V1-FS-001", "V1-TERM-001", "V1-TERM-002", "V1-ERR-001", "V1-ERR-002"):
        assert statuses[rid] == "pass", (rid, statuses[rid])
    # sessions kept in memory: a load in a new process is refused, its right; kept on disk: replayed
    loaded = "pass" if mode == "persist" else "not-exercised"
    assert statuses["V1-SESSION-002"] == statuses["V1-SESSION-003"] == loaded
    assert statuses["V1-MODE-001"] == "not-exercised"  # it offers no modes
    span, test = _longest_transcript(run)
    assert span < LONGEST_TEST, f"{mode}: {test} lasted {span:.1f} s"  # its 30 s turns are cancelled, not waited out
