"""The installed command, run the way a user would, against targets and with mistakes people make:
each case asserts the exit status, the one sentence, the time bound and that no process is left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
HOSTILE = ROOT / "hostile" / "target.py"
CLI = [sys.executable, "-m", "acp_conformance.cli"]


def _session_seconds(out: str) -> float:
    """pytest's own duration of the run ("... in 1.39s"): the time bound of a case, without the interpreter's
    start, which a loaded machine stretches (the wall clock is bounded too, more loosely, against a hang)."""
    import re
    found = re.findall(r" in (\d+(?:\.\d+)?)s", out)
    assert found, out[-1000:]
    return float(found[-1])


def _processes_with(marker: str) -> list[int]:
    """Pids of live (non-zombie) target processes (started by the suite: tagged in their environment)
    whose command line holds ``marker``."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().split(") ")[-1][:1]
            with open(f"/proc/{pid}/environ", "rb") as f:
                tagged = b"ACP_CONFORMANCE_TARGET=" in f.read()
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z" and tagged:
            out.append(int(pid))
    return out


def _none_left(marker: str, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within  # killed processes are reaped by init shortly after
    while time.monotonic() < deadline:
        if not _processes_with(marker):
            return True
        time.sleep(0.05)
    return False


def _wait_for(pred, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the target's processes in /proc")
@pytest.mark.parametrize("how", ["pytest", "acp-conformance"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_stops_every_target_and_writes_the_partial_report(tmp_path, how, sig):
    """A target that ignores stdin EOF and SIGTERM, left hanging mid-test: the signal to the suite kills it
    (and its descendants), the partial report is written, and the exit status is 128 + the signal."""
    marker = f"careless-{uuid.uuid4().hex}"
    # the marker rides in the target's argv (an ignored extra argument of python) so /proc finds it
    target = [sys.executable, "-X", f"pycache_prefix=/tmp/{marker}", str(HOSTILE), "ignore-term"]
    report_dir = tmp_path / "reports"
    cmd_line = " ".join(target)
    if how == "pytest":
        cmd = [sys.executable, "-m", "pytest", f"--agent-cmd={cmd_line}", f"--acp-report-dir={report_dir}",
               "-p", "no:cacheprovider", "-q", "--acp-timeout=30", "--acp-test-timeout=120"]
    else:
        cmd = [*CLI, "agent", f"--acp-report-dir={report_dir}", "-q", "--acp-timeout=30",
               "--acp-test-timeout=120", "--", *target]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # a target process is up (the first test has started it): now the CI timeout strikes
        assert _wait_for(lambda: _processes_with(marker), 60), "the target never started"
        t0 = time.monotonic()
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=30)
        elapsed = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + sig, (proc.returncode, out[-3000:])
    assert elapsed < 30, elapsed  # seconds on an idle machine; generous for a loaded one (no hang)
    assert _none_left(marker), _processes_with(marker)
    report = json.loads((report_dir / "report.json").read_text())
    assert report["verdict"]["conformant"] is False
    assert signal.Signals(sig).name in report["verdict"]["interrupted"]
    assert (report_dir / "report.html").is_file()


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the target's processes in /proc")
def test_a_signal_while_the_version_probe_runs_stops_the_run_like_any_other(tmp_path):
    """The version probe starts the target before any test (plugin/probe.py): a SIGTERM then (the target takes 5 s
    to answer) kills it and stops the run with 128 + 15 and the partial report, not a traceback."""
    marker = f"careless-{uuid.uuid4().hex}"
    target = [sys.executable, "-X", f"pycache_prefix=/tmp/{marker}", str(HOSTILE), "slow-start"]
    report_dir = tmp_path / "reports"
    proc = subprocess.Popen([sys.executable, "-m", "pytest", f"--agent-cmd={' '.join(target)}",
                             f"--acp-report-dir={report_dir}", "-p", "no:cacheprovider", "-q"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert _wait_for(lambda: _processes_with(marker), 60), "the probe never started the target"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, out[-3000:])
    assert "Traceback" not in out, out[-3000:]
    assert _none_left(marker), _processes_with(marker)
    report = json.loads((report_dir / "report.json").read_text())
    assert report["verdict"]["conformant"] is False and "SIGTERM" in report["verdict"]["interrupted"]


def _run_cli(tmp_path: Path, *args: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    p = subprocess.run([*CLI, *args], cwd=tmp_path, capture_output=True, text=True, timeout=timeout)
    return p, time.monotonic() - t0


V1_AGENT = ROOT / "careless" / "v1_agent.py"


@pytest.mark.parametrize("target, sentence, status, bound", [
    (["cat"], "not an ACP agent: it echoed the suite's request back on stdout", 1, 15),
    ([sys.executable, "-c", "print('Welcome to my tool!'); import time; time.sleep(100)"],
     "not an ACP agent: it printed non-JSON on stdout before any response: 'Welcome to my tool!'", 1, 30),
    (["sleep", "100"], "not an ACP agent: it never answered initialize within 15 s", 1, 30),
    (["true"], "not an ACP agent: it ended (exited with status 0) before answering initialize", 1, 15),
    # v1 behind a bare v2 answer (the Python SDK's echo agent): the first answer says 2, so the run judges version 2
    # and stops with one sentence naming --acp-protocol 1 (a v1 agent that answers 1, or "2" in v1's words, gets a
    # v1 verdict: test_a_v1_agent_gets_a_v1_verdict)
    ([sys.executable, str(V1_AGENT), "--echo-version", "--bare", "--mcp-required"], "the agent answered "
     "protocolVersion 2 but speaks ACP version 1: its initialize result has no info or capabilities, and it refused "
     "a session/new without mcpServers", 6, 10),
])
def test_a_target_the_suite_cannot_judge_gets_one_sentence_and_the_run_stops(tmp_path, target, sentence, status,
                                                                             bound):
    """Default options, the installed command: the verdict is one sentence, no rule passes on the target's
    account (a v1 agent: only INIT-002, the negotiation rule that applies to it), the rest is skipped."""
    marker = uuid.uuid4().hex
    p, elapsed = _run_cli(tmp_path, "agent", f"--acp-report-dir={tmp_path / 'r'}", "-q",
                          f"--acp-agent-env=CARELESS_MARK={marker}", "--", *target)
    out = p.stdout + p.stderr
    assert p.returncode == status, out[-3000:]
    assert _session_seconds(out) < bound and elapsed < bound + 20, (_session_seconds(out), elapsed)
    assert out.rstrip().splitlines()[-1].startswith(f"ACP verdict: NOT CONFORMANT: {sentence}"), out[-2000:]
    assert "HARNESS ERROR" not in out and "Traceback" not in out
    assert "1 failed" in out and "skipped" in out and "passed" not in out
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["verdict"]["reason"].startswith(sentence)
    passed = {r["id"] for r in report["rules"] if r["status"] == "pass"}
    assert passed <= ({"INIT-002"} if status == 6 else set()), passed
    assert not [r["id"] for r in report["rules"] if r["status"] in ("fail", "warn")]
    assert _no_process_with_env(f"CARELESS_MARK={marker}")
    # the same sentence atop report.html, in the badge and in the matrix
    import html
    page = (tmp_path / "r" / "report.html").read_text()
    assert f'<p class="banner" id="reason">{html.escape(report["verdict"]["reason"])}</p>' in page
    badge = json.loads((tmp_path / "r" / "badge.json").read_text())["message"]
    assert badge == ("not spoken (v1)" if status == 6 else "not an ACP program")
    m, _ = _run_cli(tmp_path, "compare", str(tmp_path / "r" / "report.json"), "-o", str(tmp_path / "m.html"))
    matrix = (tmp_path / "m.html").read_text()
    assert m.returncode == 0 and f"ACP v2: {badge}" in matrix
    assert ">reports</a>" not in matrix  # the column is named by the target's command, not the folder


def _no_process_with_env(entry: str, within: float = 5.0) -> bool:
    def alive():
        out = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if entry.encode() in f.read().split(b"\0"):
                        with open(f"/proc/{pid}/stat") as s:
                            if s.read().split(") ")[-1][:1] != "Z":
                                out.append(pid)
            except OSError:
                pass
        return out
    return _wait_for(lambda: not alive(), within)


@pytest.mark.parametrize("args, words", [
    (["agent", "--", ""], "acp-conformance agent: the command after -- is empty"),
    (["agent", "--", "   "], "acp-conformance agent: the command after -- is empty"),
    (["client", "--", ""], "acp-conformance client: the command after -- is empty"),
    (["agent", "--"], "acp-conformance agent: the command after -- is empty"),  # `agent -- $UNSET`
    (["client", "-q", "--"], "acp-conformance client: the command after -- is empty"),
    (["fuzz", "--"], "acp-conformance fuzz: the command after -- is empty"),
    (["replay", "x.yaml", "--", ""], "acp-conformance replay: the command after -- is empty"),
    (["fuzz", "--agent-cmd", ""], "acp-conformance fuzz: --agent-cmd is empty"),
    (["fuzz", "--client-cmd", " "], "acp-conformance fuzz: --client-cmd is empty"),
    (["replay", "x.yaml", "--agent-cmd", ""], "acp-conformance replay: --agent-cmd is empty"),
])
def test_an_empty_command_is_a_one_line_usage_error(tmp_path, args, words):
    p, elapsed = _run_cli(tmp_path, *args, timeout=60)
    assert p.returncode == 2, p.stdout + p.stderr
    lines = (p.stdout + p.stderr).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(words), lines
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize("option", ["--agent-cmd=", "--agent-cmd=  ", "--client-cmd="])
def test_an_empty_command_to_pytest_is_a_usage_error(tmp_path, option):
    p = subprocess.run([sys.executable, "-m", "pytest", option, "-p", "no:cacheprovider", "-q"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    out = (p.stdout + p.stderr).strip().splitlines()
    assert p.returncode == 2, out
    side = "client" if "client" in option else "agent"
    assert len(out) == 1 and f"--{side}-cmd is empty: give the command that starts your {side}" in out[0], out


def test_suite_help_shows_the_acp_options_on_one_screen(tmp_path):
    for side in ("agent", "client"):
        p, _ = _run_cli(tmp_path, side, "--help", timeout=60)
        lines = p.stdout.splitlines()
        assert p.returncode == 0 and len(lines) <= 50, len(lines)
        assert lines[0].startswith(f"usage: acp-conformance {side}")
        assert any(ln.strip().startswith("--acp-timeout S") for ln in lines[:12])
        assert "pytest --help" in lines[-1]
        assert all(len(ln) <= 110 for ln in lines)
        assert ("--acp-agent-env" in p.stdout) == (side == "agent")


def test_no_warning_on_a_run_from_the_checkout_without_pytest_timeout(tmp_path):
    """Run from the project's folder (its pyproject.toml holds the pytest configuration) with pytest-timeout
    absent, as on a plain install: no "Unknown config option", no warning at all."""
    repo = ROOT.parent
    p = subprocess.run([*CLI, "agent", "-q", "-p", "no:timeout", f"--acp-report-dir={tmp_path / 'r'}", "--", "cat"],
                       cwd=repo, capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    assert p.returncode == 1, out[-2000:]
    assert "warnings summary" not in out and "Warning:" not in out and "Unknown config option" not in out, out[-3000:]


THREE = ROOT / "careless" / "three.yaml"
REFERENCE = [sys.executable, "-m", "acp_conformance.reference.agent"]


@pytest.mark.parametrize("how", ["positional", "option"])
def test_your_scenario_file_runs_with_the_same_monitors_and_reports(tmp_path, how):
    given = [str(THREE)] if how == "positional" else [f"--acp-scenarios={THREE.parent}"]
    p, _ = _run_cli(tmp_path, "agent", *given, "--acp-no-bundled", "-rA", f"--acp-report-dir={tmp_path / 'r'}",
                    "--", *REFERENCE)
    out = p.stdout + p.stderr
    assert p.returncode == 1, out[-3000:]  # the run covers three scenarios: most rules are not-tested
    assert "2 passed, 1 skipped" in out, out[-2000:]
    assert "the agent does not advertise capabilities.nonexistent.capability" in out
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert sorted(t["id"].split("::")[-1] for t in report["tests"]) == [
        "mine-hello", "mine-needs-a-capability", "mine-negotiation"]
    assert {r["id"]: r["status"] for r in report["rules"]}["PROMPT-001"] == "pass"


def test_your_scenario_file_beside_the_bundled_suite_and_its_mutant(tmp_path):
    """The user's file runs beside the bundled scenarios and fails on a broken agent, naming the rule."""
    mutant = [sys.executable, str(ROOT / "mutants" / "agent_mutants.py"), "prompt-001"]
    p, _ = _run_cli(tmp_path, "agent", f"--acp-scenarios={THREE}", "-k", "mine- or initialize-v2",
                    f"--acp-report-dir={tmp_path / 'r'}", "--", *mutant)
    out = p.stdout + p.stderr
    assert p.returncode == 1 and "FAILED" in out and "three.yaml::mine-hello" in out, out[-3000:]
    assert "PROMPT-001 (MUST) failed" in out


@pytest.mark.parametrize("args, words", [
    (["notes.txt"], "'notes.txt' is not a scenario file"),
    (["--acp-scenarios=missing.yaml"], "--acp-scenarios: 'missing.yaml' does not exist"),
    (["--acp-no-bundled"], "--acp-no-bundled leaves nothing to run"),
])
def test_a_scenario_path_that_cannot_run_is_a_usage_error(tmp_path, args, words):
    (tmp_path / "notes.txt").write_text("not a scenario\n")
    p, _ = _run_cli(tmp_path, "agent", *args, "--", *REFERENCE, timeout=60)
    out = (p.stdout + p.stderr).strip().splitlines()
    assert p.returncode == 2 and len(out) == 1 and words in out[0], out


def test_replay_reports_each_scenario_and_writes_the_reports(tmp_path):
    p, _ = _run_cli(tmp_path, "replay", str(THREE), "--agent-cmd", " ".join(REFERENCE), "--report-dir",
                    str(tmp_path / "r"))
    out = p.stdout
    assert p.returncode == 0, out + p.stderr
    assert "  PASSED   mine-hello" in out and "  PASSED   mine-negotiation" in out
    assert "  SKIPPED  mine-needs-a-capability: the agent does not advertise capabilities.nonexistent.capability" in out
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert len(report["tests"]) == 3 and (tmp_path / "r" / "report.html").is_file()
    mutant = f"{sys.executable} {ROOT / 'mutants' / 'agent_mutants.py'} prompt-001"
    p, _ = _run_cli(tmp_path, "replay", str(THREE), "--agent-cmd", mutant, "--report-dir", str(tmp_path / "m"))
    assert p.returncode == 1 and "  FAILED   mine-hello: PROMPT-001" in p.stdout, p.stdout
    report = json.loads((tmp_path / "m" / "report.json").read_text())
    assert {r["id"]: r["status"] for r in report["rules"]}["PROMPT-001"] == "fail"


AUTH_AGENT = ROOT / "careless" / "auth_agent.py"


@pytest.mark.parametrize("login, sentence", [
    ([], "blocked by authentication: session/new was answered auth_required (-32000); the agent offers "
         "vendor-login (agent): give one with --acp-auth-method ID"),
    (["--acp-auth-method=vendor-login"], "blocked by authentication: auth/login with methodId 'vendor-login' failed"),
])
def test_an_agent_behind_authentication_is_blocked_not_failed(tmp_path, login, sentence):
    """What the suite reached before authentication is judged (initialize, the wire rules: all pass on this
    agent); the tests stopped there are skipped, their rules not-tested, never failed, never conformant."""
    marker = uuid.uuid4().hex
    p, elapsed = _run_cli(tmp_path, "agent", f"--acp-report-dir={tmp_path / 'r'}", "-q", *login,
                          f"--acp-agent-env=CARELESS_MARK={marker}", "--", sys.executable, str(AUTH_AGENT), timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode == 1, out[-3000:]
    assert f"acp-conformance: {sentence}" in out, out[-2000:]
    assert "failed" not in out.splitlines()[-2], out.splitlines()[-2]  # pytest's counts: no test failed
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    v = report["verdict"]
    assert v["conformant"] is False and v["reason_kind"] == "auth-blocked" and v["reason"].startswith(sentence)
    statuses = {r["id"]: r["status"] for r in report["rules"]}
    assert not [r for r, s in statuses.items() if s in ("fail", "warn")]
    assert statuses["INIT-001"] == "pass" and statuses["PROMPT-001"] == "not-tested"
    assert json.loads((tmp_path / "r" / "badge.json").read_text())["message"] == "blocked by authentication"
    assert _no_process_with_env(f"CARELESS_MARK={marker}")
    assert elapsed < 120, elapsed


@pytest.mark.parametrize("extra", [[], ["--echo-version"]])
def test_a_v1_agent_gets_a_v1_verdict(tmp_path, extra):
    """A v1 agent written outside the project (tests/careless/v1_agent.py, from the v1 pages), answering 1 or
    echoing "2" in version 1's words: the run judges it by the V1 rules and says so (issue 28)."""
    p, elapsed = _run_cli(tmp_path, "agent", f"--acp-report-dir={tmp_path / 'r'}", "-q", "--",
                          sys.executable, str(V1_AGENT), *extra)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    assert out.rstrip().splitlines()[-1].startswith("ACP verdict: CONFORMANT to ACP v1: "), out[-2000:]
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["verdict"]["protocol"] == 1 and report["verdict"]["revision"] == "v1"
    statuses = {r["id"]: r["status"] for r in report["rules"]}
    assert all(rid.startswith("V1-") for rid in statuses), sorted(r for r in statuses if not r.startswith("V1-"))
    for rid in ("V1-INIT-001", "V1-INIT-002", "V1-SESSION-001", "V1-PROMPT-001", "V1-PROMPT-002", "V1-UPDATE-001",
                "V1-ERR-002"):
        assert statuses[rid] == "pass", (rid, statuses[rid])


def test_a_v1_client_gets_a_v1_verdict(tmp_path):
    """A v1 client written outside the project (tests/careless/v1_client.py: it asks for protocol version 1, its
    latest, opens one session and never prompts) is recognised by its initialize and judged by the V1 rules: what
    it never does (prompt, load, cancel, write files, run terminals) is not exercised, not failed."""
    marker = uuid.uuid4().hex
    p, elapsed = _run_cli(tmp_path, "client", f"--acp-report-dir={tmp_path / 'r'}", "-q",
                          f"--acp-client-env=CARELESS_MARK={marker}", "--", sys.executable,
                          str(ROOT / "careless" / "v1_client.py"), "--", "{agent}")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    assert out.rstrip().splitlines()[-1].startswith("ACP verdict: CONFORMANT to ACP v1: "), out[-2000:]
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["verdict"]["protocol"] == 1 and report["verdict"]["revision"] == "v1"
    statuses = {r["id"]: r["status"] for r in report["rules"]}
    assert all(rid.startswith("V1-") for rid in statuses), sorted(r for r in statuses if not r.startswith("V1-"))
    for rid in ("V1-INIT-005", "V1-CLIENT-001", "V1-CLIENT-003", "V1-SESSION-005"):
        assert statuses[rid] == "pass", (rid, statuses[rid])
    for rid in ("V1-SESSION-004", "V1-CANCEL-005", "V1-FS-003", "V1-TERM-003", "V1-CLIENT-002", "V1-CLIENT-004"):
        assert statuses[rid] == "not-exercised", (rid, statuses[rid])
    assert _no_process_with_env(f"CARELESS_MARK={marker}")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the target's processes in /proc")
def test_sigterm_to_the_fuzzer_leaves_no_target(tmp_path):
    marker = f"careless-{uuid.uuid4().hex}"
    target = f"{sys.executable} -X pycache_prefix=/tmp/{marker} {HOSTILE} ignore-term"
    proc = subprocess.Popen([*CLI, "fuzz", "--agent-cmd", target, "--budget", "120", "--report-dir",
                             str(tmp_path / "f")], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        assert _wait_for(lambda: _processes_with(marker), 60), "the target never started"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, out[-2000:])
    assert "stopped by SIGTERM" in out
    assert _none_left(marker), _processes_with(marker)


@pytest.mark.parametrize("how", ["agent", "fuzz"])
def test_a_relative_path_in_the_command_names_a_file_where_the_user_ran(tmp_path, how):
    """``--agent-cmd="python agents/mine.py"`` typed in a project folder: each test runs the target in a fresh
    folder of its own, yet the script is found (it used to end "not an ACP agent: it ended (exited with status 2)
    before answering initialize", python not finding agents/mine.py)."""
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "mine.py").write_text("from acp_conformance.reference.agent import main\nmain()\n")
    if how == "agent":
        p, _ = _run_cli(tmp_path, "agent", str(THREE), "--acp-no-bundled", f"--acp-report-dir={tmp_path / 'r'}",
                        "--", sys.executable, "agents/mine.py")
        assert "2 passed, 1 skipped" in p.stdout + p.stderr, (p.stdout + p.stderr)[-3000:]
    else:
        p, _ = _run_cli(tmp_path, "fuzz", "--agent-cmd", f"{sys.executable} agents/mine.py", "--budget", "3",
                        f"--report-dir={tmp_path / 'r'}")
        assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]


def test_only_words_that_look_like_existing_paths_are_anchored(tmp_path):
    from acp_conformance.target_command import anchored
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "agent.js").write_text("")
    (tmp_path / "serve").write_text("")  # a bare word keeps its meaning even where such a file exists
    (tmp_path / "agent.py").write_text("")
    argv = ["node", "dist/agent.js", "serve", "agent.py", "--config=dist/agent.js", "-v", ".", "missing/x.js",
            "/abs/y.js"]
    (tmp_path / "venv-python").symlink_to(sys.executable)  # a venv's python: made absolute, not resolved
    assert anchored(["./venv-python"], tmp_path) == [str(tmp_path / "venv-python")]
    assert anchored(argv, tmp_path) == ["node", str(tmp_path / "dist" / "agent.js"), "serve",
                                        str(tmp_path / "agent.py"), "--config=dist/agent.js", "-v",
                                        str(tmp_path), "missing/x.js", "/abs/y.js"]


def test_cat_as_a_client_gets_one_sentence_and_the_run_stops(tmp_path):
    """`cat` as a client only repeats what it is sent, and an agent sends nothing first: one sentence after
    the startup timeout, the rest skipped, not a minute and a half of failures and an inconclusive verdict."""
    p, elapsed = _run_cli(tmp_path, "client", f"--acp-report-dir={tmp_path / 'r'}", "-q",
                          "--acp-startup-timeout=3", "--", "cat")
    out = p.stdout + p.stderr
    assert p.returncode == 1, out[-3000:]
    assert out.rstrip().splitlines()[-1].startswith("ACP verdict: NOT CONFORMANT: not an ACP client: "), out[-2000:]
    assert "1 failed" in out and "skipped" in out and "inconclusive" not in out and elapsed < 40
