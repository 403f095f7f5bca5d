"""The reference agent's memory-only mode (ACP_REFERENCE_MEMORY_ONLY=1): sessions live as long as the
process, so a resume from a new process is answered -32002 while the default mode resumes it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": 2, "capabilities": {}, "info": {"name": "test", "version": "1"}}}


def _talk(cwd, env: dict[str, str], *requests: dict) -> dict:
    """One agent process: initialize, the requests, EOF; the answers by id."""
    lines = "".join(json.dumps(m) + "\n" for m in (INIT, *requests))
    proc = subprocess.run([sys.executable, "-m", "acp_conformance.reference.agent"], input=lines, text=True,
                          capture_output=True, timeout=60, cwd=cwd, env={**os.environ, **env})
    msgs = [json.loads(line) for line in proc.stdout.splitlines()]
    return {m["id"]: m for m in msgs if "id" in m and "method" not in m}


def _resume_from_a_new_process(tmp_path, env: dict[str, str]) -> dict:
    new = _talk(tmp_path, env, {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(tmp_path)}})
    sid = new[1]["result"]["sessionId"]
    resume = {"jsonrpc": "2.0", "id": 1, "method": "session/resume", "params": {"sessionId": sid, "cwd": str(tmp_path)}}
    return _talk(tmp_path, env, resume)[1]


def test_memory_only_refuses_a_resume_from_a_new_process(tmp_path, monkeypatch):
    monkeypatch.delenv("ACP_REFERENCE_STATE_DIR", raising=False)
    answer = _resume_from_a_new_process(tmp_path, {"ACP_REFERENCE_MEMORY_ONLY": "1"})
    assert answer.get("error", {}).get("code") == -32002, answer
    assert not (tmp_path / ".acp-reference-agent").exists()  # nothing written where the default mode keeps state


def test_default_mode_resumes_from_a_new_process(tmp_path, monkeypatch):
    monkeypatch.delenv("ACP_REFERENCE_STATE_DIR", raising=False)
    monkeypatch.delenv("ACP_REFERENCE_MEMORY_ONLY", raising=False)
    answer = _resume_from_a_new_process(tmp_path, {})
    assert "result" in answer, answer
