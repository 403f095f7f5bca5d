"""Run control: scaled timeouts, the run's budget, reruns that expose flaky tests."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from suite_run import REFERENCE_AGENT, run_suite

HERE = Path(__file__).resolve().parent
FLAKY_AGENT = [sys.executable, str(HERE / "run_control" / "flaky_agent.py")]
SILENT = [sys.executable, str(HERE / "hostile" / "target.py"), "never-answer"]


def test_bad_multiplier_and_budget_are_usage_errors(tmp_path):
    for opt in ("--acp-timeout-multiplier=0", "--acp-timeout-multiplier=-2", "--acp-budget=0"):
        r = run_suite(REFERENCE_AGENT, tmp_path / opt.strip("-").replace("=", "_"), opt)
        assert r.returncode == 2, r.output[-2000:]
        assert "must be a positive number" in r.output
        assert "Traceback" not in r.output


def test_the_multiplier_scales_every_timeout(tmp_path):
    # a silent agent: the startup wait is 0.5 s x 3 = 1.5 s, and the message says so
    r = run_suite(SILENT, tmp_path, "--acp-startup-timeout=0.5", "--acp-timeout=0.5", "--acp-timeout-multiplier=3",
                  "--acp-rules=INIT-001", "-x", "-v")
    assert r.returncode == 1, r.output[-3000:]
    assert "response 1.5 s, startup 1.5 s" in r.output and "(x3)" in r.output
    assert "within 1.5 s" in r.output, r.output[-3000:]


def test_a_spent_budget_ends_the_run_with_what_it_has(tmp_path):
    t0 = time.monotonic()
    # under xdist: the controller's start time travels to the workers, so it is one budget
    r = run_suite(REFERENCE_AGENT, tmp_path, "--acp-budget=4", "-n", "2")
    elapsed = time.monotonic() - t0
    assert r.returncode == 1, r.output[-3000:]
    assert r.report is not None and r.report["verdict"]["conformant"] is False
    assert "the budget of 4 s was spent" in r.output
    assert "BUDGET" in r.output or "budget" in r.output
    # the tests that ran were judged: some rules passed, the rest are not-tested, none failed
    assert r.with_status("pass") and r.with_status("not-tested") and not r.with_status("fail")
    assert elapsed < 60, elapsed  # the whole suite takes minutes serially; the budget cut it short


def test_a_test_that_passes_on_rerun_is_flaky_not_a_pass(tmp_path):
    mark = tmp_path / "launched-once"
    # one test at a time: the agent fails its first launch only, which must be the first test's
    # (--acp-protocol: no probe of the version, which would be that first launch)
    args = (f"--acp-agent-env=ACP_FLAKY_MARK={mark}", "--acp-rules=PROMPT-001", "--acp-run-ahead=0", "--acp-protocol=2")
    r = run_suite(FLAKY_AGENT, tmp_path / "rerun", *args, "--acp-rerun-failures", "-p", "no:randomly")
    assert r.returncode == 1, r.output[-3000:]
    assert r.status("PROMPT-001") == "flaky", r.rule("PROMPT-001")
    assert "FLAKY" in r.output and "passed on a rerun" in r.output
    assert r.report["verdict"]["conformant"] is False
    # without reruns the same target simply fails
    mark.unlink()
    r = run_suite(FLAKY_AGENT, tmp_path / "plain", *args)
    assert r.returncode == 1 and r.status("PROMPT-001") == "fail", r.output[-3000:]
