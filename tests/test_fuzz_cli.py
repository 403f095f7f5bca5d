"""``acp-conformance fuzz`` / ``replay`` and ``pytest --acp-fuzz``: what a user runs and reads.

Exit status 0: no finding / the replay passed; 1: a finding / the replay failed; 2: a usage error,
told in one sentence without a traceback. The fuzz runs here use the planted agent whose bug the
fuzzer finds in its first examples (a request id above 2^31 answered truncated), so they are short.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import acp_conformance.fuzz as fuzz_package
from acp_conformance.cli import main
from suite_run import run_suite

PLANTED = Path(__file__).resolve().parent / "planted" / "planted_agents.py"
BIG_ID = [sys.executable, str(PLANTED), "big-id"]
REFERENCE = [sys.executable, "-m", "acp_conformance.reference.agent"]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acp_conformance", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=180)


@pytest.mark.parametrize("args, says", [
    ([], "give the agent after -- (acp-conformance fuzz -- my-agent --stdio), or --agent-cmd CMD"),
    (["--agent-cmd", sys.executable, "--", sys.executable], "give the target once: after -- or with --agent-cmd"),
    (["--agent-cmd", "no-such-command-acp-test"], "is not a command on PATH nor a file"),
    (["--agent-cmd", sys.executable, "--budget", "0"], "--budget must be a positive number"),
    (["--agent-cmd", sys.executable, "--max-examples", "-1"], "--max-examples must be a positive number"),
    (["--agent-cmd", sys.executable, "--timeout", "0"], "--timeout must be a positive number"),
    (["--agent-cmd", sys.executable, "--bogus"], "unrecognized arguments: --bogus"),
    (["--agent-cmd", "'unclosed"], "cannot be parsed as a command line"),
    (["--agent-cmd", sys.executable, "--client-cmd", sys.executable], "not allowed with argument"),
])
def test_fuzz_usage_errors(args, says, capsys):
    assert main(["fuzz", *args]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_replay_usage_errors(tmp_path, capsys):
    assert main(["replay", str(tmp_path / "missing.yaml"), "--agent-cmd", sys.executable]) == 2
    err = capsys.readouterr().err
    assert "cannot read the scenario file" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    bad = tmp_path / "bad.yaml"
    bad.write_text("scenarios:\n  - name: x\n    steps: [{teleport: {}}]\n", encoding="utf-8")
    assert main(["replay", str(bad), "--agent-cmd", sys.executable]) == 2
    err = capsys.readouterr().err
    assert "unknown step 'teleport'" in err and "Traceback" not in err
    assert main(["replay", "--agent-cmd", sys.executable]) == 2  # no FILE


def test_client_cmd_without_client_fuzzing_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.delattr(fuzz_package, "client_fuzz", raising=False)
    monkeypatch.setitem(sys.modules, "acp_conformance.fuzz.client_fuzz", None)  # as if it were not installed
    for args in (["fuzz", "--client-cmd", sys.executable], ["replay", "x.yaml", "--client-cmd", sys.executable]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert "client-side fuzzing is not available in this installation" in err and "Traceback" not in err


def test_fuzz_finds_writes_and_replay_reproduces(tmp_path):
    out_dir = tmp_path / "out"
    run = cli("fuzz", "--agent-cmd", shlex.join(BIG_ID), "--budget", "20", "--timeout", "2", "--report-dir",
              str(out_dir), cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    text = run.stdout
    assert "FINDING: the target answered what it was never asked" in text and "rules: ERR-004" in text
    assert "steps/s" in text and "time: generation" in text
    scenario = out_dir / "fuzz-counterexample.yaml"
    assert scenario.is_file() and "shrunk to" in text and str(scenario) in text
    report = json.loads((out_dir / "fuzz-report.json").read_text(encoding="utf-8"))
    assert report["rules"] == ["ERR-004"] and report["scenario"] == str(scenario)
    # the printed command reruns it, and shows the same failure
    rerun = next(line.split("rerun it: ", 1)[1] for line in text.splitlines() if "rerun it: " in line)
    argv = shlex.split(rerun)
    assert argv[:2] == ["acp-conformance", "replay"]
    replayed = cli(*argv[1:], "--timeout", "2", cwd=tmp_path)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "REPRODUCED" in replayed.stdout and "ERR-004 failed" in replayed.stdout
    correct = cli("replay", str(scenario), "--agent-cmd", shlex.join(REFERENCE), cwd=tmp_path)
    assert correct.returncode == 0 and "PASSED" in correct.stdout, correct.stdout + correct.stderr


def test_fuzz_with_no_finding_exits_0(tmp_path):
    run = cli("fuzz", "--agent-cmd", shlex.join(REFERENCE), "--budget", "5", "--report-dir", str(tmp_path), cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "no finding" in run.stdout and "FINDING" not in run.stdout
    assert not (tmp_path / "fuzz-counterexample.yaml").exists()
    assert json.loads((tmp_path / "fuzz-report.json").read_text(encoding="utf-8"))["failure"] is None


def test_pytest_acp_fuzz_fails_the_item_and_feeds_the_verdict(tmp_path):
    run = run_suite(BIG_ID, tmp_path, "--acp-fuzz", "--acp-fuzz-budget=20", "--acp-timeout=2", "-k", "acp-fuzz")
    assert run.returncode == 1, run.output[-3000:]
    assert "FINDING: the target answered what it was never asked" in run.output
    scenario = run.report_dir / "fuzz-counterexample.yaml"
    assert scenario.is_file() and str(scenario) in run.output and "acp-conformance replay" in run.output
    err004 = run.rule("ERR-004")
    assert err004["status"] == "fail" and "acp-fuzz" in err004["tests"]
    assert any(t.endswith("acp-fuzz.jsonl") for t in err004.get("transcripts", []))


def test_pytest_acp_fuzz_options_are_checked(tmp_path):
    run = run_suite(REFERENCE, tmp_path, "--acp-fuzz", "--acp-fuzz-budget=-3")
    assert run.returncode == 2
    assert "--acp-fuzz-budget must be a positive number" in run.output and "Traceback" not in run.output


def test_fuzz_gives_the_client_its_acp_client_args(tmp_path, capsys):
    """--acp-client-arg reaches the client's command line where {args} stands (as in scenario runs); the
    client here records its argv and exits, which the fuzzer reports as a client it could not fuzz."""
    seen = tmp_path / "argv.json"
    client = shlex.join([sys.executable, "-c", f"import json, sys; json.dump(sys.argv[1:], open({str(seen)!r}, 'w'))",
                         "{args}", "--", "tail"])
    code = main(["fuzz", "--client-cmd", client, "--acp-client-arg=--cancel-after", "--acp-client-arg", "0.3",
                 "--max-examples", "1", "--budget", "20", "--report-dir", str(tmp_path / "out")])
    assert code in (0, 1), capsys.readouterr().err
    assert json.loads(seen.read_text()) == ["--cancel-after", "0.3", "--", "tail"]


def test_acp_client_arg_is_for_clients_only(capsys):
    assert main(["fuzz", "--agent-cmd", sys.executable, "--acp-client-arg=--x"]) == 2
    err = capsys.readouterr().err
    assert "--acp-client-arg gives arguments to a client" in err and "Traceback" not in err
    assert "--acp-client-arg" in subprocess.run([sys.executable, "-m", "acp_conformance", "fuzz", "--help"],
                                                capture_output=True, text=True, timeout=60).stdout


def test_replay_on_a_target_that_cannot_start_says_nothing_was_reproduced(tmp_path):
    """A target that cannot start breaks the run off: a failure, but no counterexample was reproduced, and the
    summary must not say it was."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text("scenarios:\n- name: one-request\n  rules: [INIT-001]\n  steps:\n  - request:\n"
                        "      method: initialize\n      params: {protocolVersion: 2}\n      wait: true\n",
                        encoding="utf-8")
    (tmp_path / "agent.sh").write_text("#!/bin/sh\n", encoding="utf-8")  # not executable: it cannot start
    run = cli("replay", str(scenario), "--agent-cmd", "./agent.sh", "--timeout", "2", cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "REPRODUCED" not in run.stdout, run.stdout
    assert "FAILED: the scenario could not be completed, and no rule failed" in run.stdout, run.stdout


def test_fuzz_and_replay_take_the_agent_after_a_double_dash_like_the_suite(tmp_path):
    run = cli("fuzz", "--budget", "3", "--report-dir", str(tmp_path), "--", *REFERENCE, cwd=tmp_path)
    assert run.returncode == 0 and "no finding" in run.stdout, run.stdout + run.stderr
    assert f"agent {shlex.join(REFERENCE)}" in run.stdout
    scenario = tmp_path / "one.yaml"
    scenario.write_text("scenarios:\n  - name: one-prompt\n    rules: [PROMPT-001]\n    steps:\n"
                        "      - initialize: {}\n      - new_session: {save: s}\n      - prompt: {session: $s, text: hello}\n",
                        encoding="utf-8")
    replayed = cli("replay", str(scenario), "--report-dir", str(tmp_path / "r"), "--", *REFERENCE, cwd=tmp_path)
    assert replayed.returncode == 0 and "PASSED" in replayed.stdout, replayed.stdout + replayed.stderr


def test_fuzz_and_replay_say_that_cat_echoes_as_the_suite_does(tmp_path):
    # the suite's one sentence for a program that is no ACP agent, not "initialize failed" or INIT-001
    sentence = "not an ACP agent: it echoed the suite's request back on stdout"
    run = cli("fuzz", "--budget", "5", "--report-dir", str(tmp_path), "--", "cat", cwd=tmp_path)
    assert run.returncode == 1 and f"NOT JUDGED: {sentence}" in run.stdout, run.stdout + run.stderr
    assert "FINDING" not in run.stdout and "INIT-001" not in run.stdout
    replayed = cli("replay", str(tmp_path / "fuzz-counterexample.yaml"), "--", "cat", cwd=tmp_path)
    assert replayed.returncode == 1 and f"NOT JUDGED: {sentence}" in replayed.stdout, replayed.stdout
    assert "INIT-001" not in replayed.stdout
