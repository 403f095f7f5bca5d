"""The whole agent and client suites against the alternative personalities of the reference agent and
client (acp_conformance/reference/alt_agent.py, alt_client.py), which take the other legal choice
wherever the spec leaves one: no failure, no warning. And ``{agent}`` for both kinds of client: one
that takes the agent as argv after ``--`` and one that splits a command-line string.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from suite_run import run_suite
from test_client_end_to_end import run_client_suite

from acp_conformance.wire.socket_transport import write_launcher

ALT_AGENT = [sys.executable, "-m", "acp_conformance.reference.alt_agent"]
ALT_CLIENT = [sys.executable, "-m", "acp_conformance.reference.alt_client"]
REFERENCE_CLIENT = [sys.executable, "-m", "acp_conformance.reference.client"]

# The scenarios that resume in a new agent process: a correct agent that keeps sessions only in memory
# answers -32002 there ("Agents are not required to persist"): skipped, with the reason (the
# close-then-resume scenarios of resume.yaml reach the same rules).
CROSS_PROCESS_RESUME = {"resume.yaml::resume-with-replay", "resume.yaml::resume-empty-history",
                        "resume.yaml::resume-without-replay", "resume.yaml::resume-cursors-and-replay"}


@pytest.fixture(scope="module")
def alt_agent_run(tmp_path_factory):
    return run_suite(ALT_AGENT, tmp_path_factory.mktemp("alt-agent"))


def test_alternative_agent_has_no_failure_and_no_warning(alt_agent_run):
    r = alt_agent_run
    assert r.report is not None, r.output[-3000:]
    assert not r.with_status("fail"), [r.rule(x) for x in r.with_status("fail")]
    assert not r.with_status("warn"), [r.rule(x) for x in r.with_status("warn")]
    assert r.returncode == 0, r.output[-3000:]
    assert r.report["verdict"]["conformant"] is True
    # SESSION-003 (it sends no configOptions) is not-exercised, not a blocking not-tested
    assert r.status("SESSION-003") == "not-exercised", r.rule("SESSION-003")
    # the false readings it found are gone: a prompt joining running work, no config options, resume in-process
    for rule in ("PROMPT-011", "ERR-001", "ERR-013", "RESUME-001", "RESUME-002", "RESUME-003", "PROMPT-007"):
        assert r.status(rule) == "pass", r.rule(rule)
    assert "FAILED" not in r.output, r.output[-3000:]
    junit = r.junit.read_text(encoding="utf-8")
    # the cross-process resume scenarios are skipped with the reason
    assert junit.count("was answered -32002") >= len(CROSS_PROCESS_RESUME), junit[-3000:]
    for item in CROSS_PROCESS_RESUME:
        assert item.split("::")[1] in junit, item


def test_alternative_agent_takes_the_other_choices(alt_agent_run):
    """The personality really differs from the default one where the spec leaves the choice (else the
    run above proves nothing new)."""
    import json
    transcripts = Path(alt_agent_run.report_dir) / "transcripts"
    raw = "\n".join(p.read_text(encoding="utf-8") for p in transcripts.glob("*.jsonl"))
    frames = [json.loads(line) for line in raw.splitlines() if line.strip()]
    received = []
    for f in frames:
        if f.get("dir") == "received":
            try:
                received.append(json.loads(f["raw"]))
            except (ValueError, KeyError, TypeError):
                pass
    msgs = [m for m in received if isinstance(m, dict)]
    kinds = {m["params"]["update"].get("sessionUpdate") for m in msgs if m.get("method") == "session/update"}
    assert {"user_message_chunk", "agent_message"} <= kinds
    assert "agent_message_chunk" not in kinds  # (a replay of history sends whole user_message updates)
    results = [m["result"] for m in msgs if isinstance(m.get("result"), dict)]
    assert {"session": {}} in [r.get("capabilities") for r in results if "protocolVersion" in r]
    assert any(not r.get("messageId", "x").isascii() for r in results if "messageId" in r)


@pytest.mark.parametrize("shape", ["argv", "string"])
def test_client_suite_with_agent_as_argv_or_as_one_string(shape, tmp_path):
    if shape == "argv":  # my-client -- {agent}: the agent is executed as given, never split
        client = [*ALT_CLIENT, "--", "{agent}"]
    else:  # my-client --agent-line "env X=1 {agent}": the client splits the line like a shell
        client = [*REFERENCE_CLIENT, "--", "env ACP_PERSONALITY_TEST=1 {agent}"]
    r = run_client_suite(client, tmp_path)
    assert r.report is not None, r.output[-3000:]
    assert r.returncode == 0, r.output[-3000:]
    assert r.report["verdict"]["conformant"] is True
    assert not r.with_status("fail"), [r.rule(x) for x in r.with_status("fail")]
    assert not r.with_status("warn"), [r.rule(x) for x in r.with_status("warn")]


def test_alternative_client_passes_argv_verbatim(tmp_path):
    """An agent path with a space is one argv word for the alternative client (the default one would
    split a single word that is not an existing file)."""
    agent = tmp_path / "my agent"
    agent.write_text("#!/bin/sh\nexec " + shlex.join([sys.executable, "-m", "acp_conformance.reference.alt_agent"]) + "\n")
    agent.chmod(0o755)
    proc = subprocess.run([*ALT_CLIENT, "--close", "--", str(agent)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "ACP_REFERENCE_WORK_SCALE": "0"})
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_launcher_is_one_plain_word(tmp_path):
    spaced = tmp_path / "with space"
    spaced.mkdir()
    for folder, owned in ((tmp_path, False), (spaced, True)):
        path, own = write_launcher(folder, str(folder / "agent.sock"))
        assert own is owned
        assert shlex.split(path) == [path] and " " not in path
        assert os.access(path, os.X_OK)
        text = Path(path).read_text()
        assert "acp_conformance.reference.relay" in text and str(folder / "agent.sock") in text
        if own:
            import shutil
            shutil.rmtree(Path(path).parent)
