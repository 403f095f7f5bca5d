"""The fault steps (docs/faults.md) against the reference agent: each makes its situation happen and marks it in
the transcript, and leaves no process behind (the kill and its restart: both pids gone); the fault scenarios run
only with --acp-faults, are skipped as not exercised without it, and are not exercised on an agent that keeps
sessions only in memory; fuzz --faults; work the suite itself cut owes nothing."""

from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import pytest

from acp_conformance.plugin.options import DEFAULT_PROMPTS
from acp_conformance.scenarios.model import ScenarioFileError, load_file
from acp_conformance.scenarios.runner import Runner, RunSettings, TargetSpec
from acp_conformance.wire.transcript import EV_EXIT, EV_NOTE, EV_START, EV_STDIN_CLOSED
from suite_run import REFERENCE_AGENT, ROOT, mutant_cmd, run_suite

FAULTS = ROOT / "scenarios" / "agent" / "faults.yaml"


def drive(tmp_path: Path, yaml_steps: str, env: dict[str, str] | None = None):
    """One scenario of ``yaml_steps`` against the reference agent; the run's result."""
    f = tmp_path / "s.yaml"
    f.write_text("name: t\nrules: []\nsteps:\n" + yaml_steps)
    scenario = load_file(f)[0]
    settings = RunSettings(timeout=20.0, startup_timeout=30.0, test_timeout=120.0, shutdown_grace=2.0,
                           prompts=dict(DEFAULT_PROMPTS))
    with tempfile.TemporaryDirectory() as d:
        runner = Runner(scenario, TargetSpec(list(REFERENCE_AGENT), dict(env or {})), settings, Path(d))
        return anyio.run(runner.run)


def faults(result, name: str):
    return [f for f in result.transcript.frames if f.event == EV_NOTE and (f.detail or {}).get("fault") == name]


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return True


LONG_TURN = """\
  - initialize: {}
  - new_session: {save: s}
  - prompt: {session: $s, text: "${opt.long}", wait: response, save: p}
  - await: {update: {session: $s, kind: state_update, state: running}}
"""


def test_kill_crashes_the_agent_mid_turn_and_restart_resumes_it_leaving_no_process(tmp_path):
    result = drive(tmp_path, LONG_TURN + """\
  - kill
  - restart
  - initialize: {}
  - resume: {session: $s, replay: true, expect: ok}
""")
    assert result.error is None and result.skipped is None, (result.error, result.skipped)
    frames = result.transcript.frames
    assert faults(result, "kill")
    killed = [f for f in frames if f.event == EV_EXIT and f.conn == 0]
    assert killed and killed[0].detail["returncode"] == -9  # SIGKILL, not the shutdown ladder
    pids = [f.detail["pid"] for f in frames if f.event == EV_START]
    assert len(pids) == 2 and all(gone(pid) for pid in pids)


def test_drop_response_forgets_the_answer_so_later_steps_cannot_use_it(tmp_path):
    result = drive(tmp_path, """\
  - initialize: {}
  - new_session: {save: s}
  - prompt: {session: $s, text: "ping", key: k, save: p}
  - drop_response: $p
  - note: {text: "uses ${p}", if_saved: p}
""")
    assert result.error is None, result.error
    assert faults(result, "drop-response")
    notes = [f.detail.get("text") for f in result.transcript.frames if f.event == EV_NOTE]
    assert any("left out: $p was not saved" in (t or "") for t in notes), notes


def test_duplicate_writes_the_same_line_again_and_waits_for_its_answer(tmp_path):
    result = drive(tmp_path, """\
  - initialize: {}
  - new_session: {save: s}
  - prompt: {session: $s, text: "ping", key: k, save: p}
  - duplicate: $p
""")
    assert result.error is None, result.error
    prompts = [f for f in result.transcript.frames if f.direction == "sent" and f.msg
               and f.msg.get("method") == "session/prompt"]
    assert len(prompts) == 2 and prompts[0].raw == prompts[1].raw
    answers = [f for f in result.transcript.frames if f.direction == "received" and isinstance(f.msg, dict)
               and "method" not in f.msg and f.msg.get("id") == prompts[0].msg["id"]]
    assert len(answers) == 2 and answers[1].seq > prompts[1].seq


def test_delay_holds_the_cancel_until_after_the_idle(tmp_path):
    result = drive(tmp_path, """\
  - initialize: {}
  - new_session: {save: s}
  - prompt: {session: $s, text: "ping", wait: response}
  - delay: {until: {idle: $s}, then: {cancel: $s}}
""")
    assert result.error is None, result.error
    frames = result.transcript.frames
    idle = next(f for f in frames if f.direction == "received" and "idle" in f.raw.decode())
    cancel = next(f for f in frames if f.direction == "sent" and f.msg and f.msg.get("method") == "session/cancel")
    assert cancel.seq > idle.seq and len(faults(result, "delay")) == 2


def test_half_close_closes_stdin_mid_turn_and_waits_for_the_exit(tmp_path):
    result = drive(tmp_path, LONG_TURN + "  - half_close\n")
    frames = result.transcript.frames
    closed = next(f for f in frames if f.event == EV_STDIN_CLOSED)
    exited = next(f for f in frames if f.event == EV_EXIT)
    assert exited.seq > closed.seq and exited.t - closed.t < 5
    assert "the agent exited" in faults(result, "half-close")[-1].detail["text"]


def test_pause_reading_reads_nothing_for_its_seconds_then_everything_in_order(tmp_path):
    result = drive(tmp_path, LONG_TURN + """\
  - pause_reading: 1.5
  - await: {idle: $s, after: $p}
""")
    assert result.error is None, result.error
    start, end = faults(result, "pause-reading")
    frames = result.transcript.frames
    assert end.t - start.t >= 1.5
    assert not [f for f in frames[start.seq:end.seq] if f.direction == "received"]  # nothing read while paused
    assert [f for f in frames[end.seq:] if f.direction == "received"]


def test_pause_reading_is_bounded(tmp_path):
    result = drive(tmp_path, "  - initialize: {}\n  - pause_reading: 60\n")
    assert result.harness_error and "seconds <= 10" in result.harness_error


@pytest.mark.parametrize("step, says", [
    ("delay: {until: {update: x}, then: {cancel: $s}}", "delay needs until"),
    ("delay: {until: {idle: $s}}", "delay needs then"),
    ("delay: {until: {idle: $s}, then: kill}", "a step that sends a message"),
    ("kill: {signal: 9}", "kill does not take signal"),
])
def test_bad_fault_steps_are_file_errors(tmp_path, step, says):
    f = tmp_path / "s.yaml"
    f.write_text(f"name: t\nrules: []\nsteps:\n  - {step}\n")
    with pytest.raises(ScenarioFileError, match=says):
        load_file(f)


def test_a_scenario_with_a_fault_step_is_a_fault_scenario():
    scenarios = load_file(FAULTS)
    assert len(scenarios) >= 6 and all(s.faulty for s in scenarios)
    assert not any(s.faulty for s in load_file(ROOT / "scenarios" / "agent" / "resume.yaml"))


# -- the plugin: --acp-faults ------------------------------------------------------------------------------------

def _tests(run):
    names = {s.name for s in load_file(FAULTS)}
    return {t["id"].split("::")[-1]: t for t in run.report["tests"] if t["id"].split("::")[-1] in names}


def test_without_acp_faults_the_fault_scenarios_are_skipped_as_not_exercised(tmp_path):
    run = run_suite(REFERENCE_AGENT, tmp_path, "--acp-rules=IDEM-005,RESUME-014")
    tests = _tests(run)
    assert tests and all((t.get("skipped") or "").startswith("not exercised: a fault scenario") for t in tests.values())
    assert run.status("IDEM-005") == "not-exercised"


def test_with_acp_faults_the_persisting_reference_agent_passes_them(tmp_path):
    run = run_suite(REFERENCE_AGENT, tmp_path, "--acp-faults", "--acp-no-bundled", f"--acp-scenarios={FAULTS}")
    tests = _tests(run)
    assert len(tests) >= 6 and not any(t.get("skipped") for t in tests.values()), tests
    assert not run.with_status("fail") and not run.with_status("warn")
    for rule in ("IDEM-005", "RESUME-014", "TRANSPORT-011", "RESUME-002", "ERR-004", "CANCEL-008"):
        assert run.status(rule) == "pass", (rule, run.rule(rule))


def test_on_an_agent_keeping_sessions_in_memory_the_restart_scenarios_are_not_exercised(tmp_path):
    run = run_suite(REFERENCE_AGENT, tmp_path, "--acp-faults", "--acp-no-bundled", f"--acp-scenarios={FAULTS}",
                    "--acp-agent-env=ACP_REFERENCE_MEMORY_ONLY=1")
    tests = _tests(run)
    skipped = {n for n, t in tests.items() if t.get("skipped")}
    assert skipped == {"fault-prompt-response-lost-retry", "fault-crash-mid-turn-resume", "fault-crash-mid-turn-retry"}
    assert all("answered -32002" in tests[n]["skipped"] for n in skipped)
    assert run.status("IDEM-005") == "not-exercised" and not run.with_status("fail")



# -- the fuzzer: fuzz --faults -------------------------------------------------------------------------------------

def test_fuzz_faults_finds_the_forgotten_key_and_shrinks_to_a_scenario_with_its_kill(tmp_path):
    """(--strict: IDEM-005 is a SHOULD NOT, a warning.) The fault rules interleave a crash, a resume and a retry under the key; the counterexample keeps the fault
    step, and replay reproduces it (the fault steps are ordinary scenario steps)."""
    target = shlex.join(mutant_cmd("fault-forgets-keys-across-restart"))
    proc = subprocess.run([sys.executable, "-m", "acp_conformance", "fuzz", "--faults", "--strict", "--seed", "0",
                           "--max-examples", "30", "--steps", "40", "--budget", "90", "--report-dir", str(tmp_path),
                           "--agent-cmd", target], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 1 and "FINDING: IDEM-005 failed" in proc.stdout, proc.stdout[-2000:]
    example = (tmp_path / "fuzz-counterexample.yaml").read_text()
    assert "- kill" in example and "idempotencyKey" in example
    again = subprocess.run([sys.executable, "-m", "acp_conformance", "replay", str(tmp_path / "fuzz-counterexample.yaml"),
                            "--strict", "--agent-cmd", target, "--report-dir", str(tmp_path / "replay")],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert again.returncode == 1 and "IDEM-005" in again.stdout, again.stdout[-2000:]


# -- monitors: work the suite itself cut is owed nothing ------------------------------------------------------------

def test_a_turn_cut_by_the_suites_kill_owes_no_idle_there():
    """The connection ended by a kill the suite injected: the turn in flight is not failed for its missing idle
    (PROMPT-012); without the fault note the same frames fail it."""
    from acp_conformance.rules.findings import FAIL
    from monitor_transcripts import A, C, Player, upd

    def frames(cut: bool):
        p = Player()
        p.play("\n".join([
            C({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2, "capabilities": {}}}),
            A({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2, "capabilities": {"session": {}}}}),
            C({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}),
            A({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}}),
            C({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
               "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "x"}]}}),
            A(upd("s1", {"sessionUpdate": "user_message", "messageId": "m1", "content": [{"type": "text", "text": "x"}]})),
            A({"jsonrpc": "2.0", "id": 2, "result": {"messageId": "m1"}}),
            A(upd("s1", {"sessionUpdate": "state_update", "state": "requires_action"})),
            "@+2",
        ]))
        if cut:
            p.event("note", text="fault kill: SIGKILL to the agent's process group", fault="kill")
        p.event("exit", returncode=-9, signal=9)
        return [f for f in p.finish() if f.rule == "PROMPT-012"]

    assert any(f.status == FAIL for f in frames(False))
    assert frames(True) and not any(f.status == FAIL for f in frames(True))


# -- a case in the draft's field names ------------------------------------------------------------------------------

CASE = """\
caseId: mutation.response_lost.retry
profile: acp.remote.v2
requiresCapabilities: [capabilities.session]
actors: [client-a, agent]
invariants: [IDEM-005, RESUME-014]
allowedOutcomes: [the original messageId, an error]
steps:
  - initialize: {}
  - new_session: {save: s}
  - prompt: {session: $s, text: "ping", key: "case-key", save: p}
  - drop_response: $p
  - restart
  - initialize: {}
  - resume: {session: $s, replay: true, expect: ok}
  - prompt: {session: $s, text: "ping", key: "case-key", wait: response}
"""


def test_a_case_in_the_drafts_field_names_is_read_as_a_scenario(tmp_path):
    f = tmp_path / "case.yaml"
    f.write_text(CASE)
    s, = load_file(f, known_rules={"IDEM-005", "RESUME-014"})
    assert (s.name, s.rules, s.requires) == ("mutation.response_lost.retry", ["IDEM-005", "RESUME-014"], ["session"])
    assert "Allowed outcomes: the original messageId; an error." in s.description and s.faulty


@pytest.mark.parametrize("edit, says", [
    (("requiresCapabilities: [capabilities.session]", "requiresCapabilities: [session]"), "starting with capabilities."),
    (("actors: [client-a, agent]", "actors: [client-a, client-b, agent]"), "one client and one agent"),
    (("invariants: [IDEM-005, RESUME-014]", "invariants: [NOPE-1]"), "unknown rule IDs NOPE-1"),
    (("allowedOutcomes: [the original messageId, an error]", "allowedOutcomes: 3"), "allowedOutcomes is a list"),
    (("profile: acp.remote.v2", "profile: acp.remote.v2\nfrobs: 1"), "unknown keys frobs"),
])
def test_a_bad_case_is_a_file_error(tmp_path, edit, says):
    f = tmp_path / "case.yaml"
    f.write_text(CASE.replace(*edit))
    with pytest.raises(ScenarioFileError, match=says):
        load_file(f, known_rules={"IDEM-005", "RESUME-014"})


def test_replay_runs_a_case_against_the_reference_agent(tmp_path):
    f = tmp_path / "case.yaml"
    f.write_text(CASE)
    proc = subprocess.run([sys.executable, "-m", "acp_conformance", "replay", str(f), "--agent-cmd",
                           shlex.join(REFERENCE_AGENT), "--report-dir", str(tmp_path / "r")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0 and "PASSED" in proc.stdout, proc.stdout[-2000:]


def test_a_cancel_cut_by_the_suites_kill_owes_no_cancelled_idle_there():
    """CANCEL-001 likewise: a cancel sent just before the suite killed the agent is not failed for the idle that
    the dead process could not send; without the fault note the same frames fail it."""
    from acp_conformance.rules.findings import FAIL
    from monitor_transcripts import A, C, Player, upd

    def prompt(i, mid):
        return [C({"jsonrpc": "2.0", "id": i, "method": "session/prompt",
                   "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "x"}]}}),
                A(upd("s1", {"sessionUpdate": "user_message", "messageId": mid,
                             "content": [{"type": "text", "text": "x"}]})),
                A({"jsonrpc": "2.0", "id": i, "result": {"messageId": mid}}),
                A(upd("s1", {"sessionUpdate": "state_update", "state": "running"}))]

    def frames(cut: bool):
        p = Player()
        p.play("\n".join([
            C({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2, "capabilities": {}}}),
            A({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2, "capabilities": {"session": {}}}}),
            C({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}),
            A({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}}),
            *prompt(2, "m1"), A(upd("s1", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})),
            *prompt(3, "m2"), C({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}}), "@+2",
        ]))
        if cut:
            p.event("note", text="fault kill: SIGKILL to the agent's process group", fault="kill")
        p.event("exit", returncode=-9, signal=9)
        return [f for f in p.finish() if f.rule == "CANCEL-001"]

    assert any(f.status == FAIL for f in frames(False))
    assert frames(True) and not any(f.status == FAIL for f in frames(True))
