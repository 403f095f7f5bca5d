"""How the agent fuzzer runs its target processes: the spare process started ahead of each example,
its fallback when the spare could not live beside the running one, no process left behind, and a
wall-clock budget that holds even when one example alone would take far longer."""

from __future__ import annotations

import os
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from acp_conformance.fuzz.run import fuzz
from acp_conformance.fuzz.config import FuzzConfig
from acp_conformance.protocol.schema import SchemaError
from acp_conformance.wire.transcript import EV_START

ROOT = Path(__file__).resolve().parents[1]


def _wrapper(tmp_path: Path, body: str) -> list[str]:
    """A target: ``body`` runs first, then the reference agent in the same process."""
    script = tmp_path / "target.py"
    script.write_text(textwrap.dedent(body) + textwrap.dedent(f"""
        import runpy, sys
        sys.path.insert(0, {str(ROOT)!r})
        runpy.run_module("acp_conformance.reference.agent", run_name="__main__")
        """), encoding="utf-8")
    return [sys.executable, str(script)]


def _alive_with(marker: str) -> list[int]:
    """Processes whose environment holds ``marker`` (the targets of one test)."""
    needle = f"ACP_TEST_MARK={marker}".encode()
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    pids.append(int(pid))
        except OSError:
            continue
    return pids


def test_each_example_takes_a_process_started_ahead_and_none_is_left_behind():
    mark = uuid.uuid4().hex
    config = FuzzConfig([sys.executable, "-m", "acp_conformance.reference.agent"], env={"ACP_TEST_MARK": mark})
    result = fuzz(config, seed=3, max_examples=4, step_count=15)
    assert result.failure is None, result.failure
    assert result.examples >= 4
    assert _alive_with(mark) == []  # the spare started for a fifth example was killed too


def test_a_spare_that_cannot_live_beside_the_running_process_is_replaced(tmp_path):
    """A target that refuses to start while another of its processes runs (a lock it holds): every
    spare dies at once; each example then starts its own process, and nothing is reported."""
    argv = _wrapper(tmp_path, f"""
        import fcntl, sys
        lock = open({str(tmp_path / "lock")!r}, "w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            sys.exit("another process of this agent runs")
        """)
    mark = uuid.uuid4().hex
    result = fuzz(FuzzConfig(argv, env={"ACP_TEST_MARK": mark}), seed=5, max_examples=3, step_count=10)
    assert result.failure is None, result.failure
    assert result.examples >= 3
    assert _alive_with(mark) == []


def test_prestart_off_starts_each_process_with_its_example(tmp_path):
    from acp_conformance.fuzz import judge
    started: list[bool] = []
    feed = judge.Judge.feed

    def spy(self, frame):
        if frame.event == EV_START:
            started.append(bool((frame.detail or {}).get("prestarted")))
        return feed(self, frame)

    judge.Judge.feed = spy
    try:
        argv = [sys.executable, "-m", "acp_conformance.reference.agent"]
        fuzz(FuzzConfig(argv, prestart=False), seed=1, max_examples=2, step_count=5)
        off = list(started)
        started.clear()
        fuzz(FuzzConfig(argv), seed=1, max_examples=2, step_count=5)
        on = list(started)
    finally:
        judge.Judge.feed = feed
    assert off and True not in off
    # the first example takes a process started with the run (while the strategies were made), and so do the others
    assert on[0] is True and on.count(True) >= 2


def test_the_budget_ends_the_run_inside_a_long_example(tmp_path):
    """Every turn of this agent takes seconds (its simulated work is 200 times slower), so one example
    of 200 rules alone would take minutes: the run still ends at its budget, with no finding."""
    argv = _wrapper(tmp_path, """
        import asyncio
        _sleep = asyncio.sleep
        async def slow(delay, *a, **k):
            return await _sleep(delay * 200, *a, **k)
        asyncio.sleep = slow
        """)
    mark = uuid.uuid4().hex
    budget = 4.0
    result = fuzz(FuzzConfig(argv, env={"ACP_TEST_MARK": mark}, timeout=30.0), seed=2, max_examples=5,
                  budget=budget, step_count=200)
    assert result.failure is None, result.failure
    assert result.budget_spent
    # the cut-off is at the budget; what follows is stopping the process (the ladder's first rung)
    assert result.seconds < budget + 10, result.seconds
    assert _alive_with(mark) == []


def test_a_restart_takes_the_process_started_ahead_in_its_directory(tmp_path):
    """With --prestart-restarts, a resume in a new process takes a process started ahead (after the example's first resume) in the
    example's own directory: the restarted process finds what the one before stored there."""
    log = tmp_path / "cwds"
    argv = _wrapper(tmp_path, f"""
        import os
        with open({str(log)!r}, "a") as f:
            f.write(os.getcwd() + "\\n")
        """)
    mark = uuid.uuid4().hex
    config = FuzzConfig(argv, env={"ACP_TEST_MARK": mark}, prestart_restarts=True)
    result = fuzz(config, seed=1, max_examples=4, step_count=40)
    assert result.failure is None, result.failure
    assert result.stats.restart_spares >= 1, result.stats
    assert result.stats.spares_died == 0
    # every restart's process (and every unused one) ran in a directory an example's process ran in first
    cwds = log.read_text(encoding="utf-8").split()
    assert len(cwds) > len(set(cwds)), cwds
    assert _alive_with(mark) == []


def test_a_restart_process_that_cannot_live_beside_the_running_one_is_replaced(tmp_path):
    """A target that refuses to start while another of its processes runs in the same directory (with
    --prestart-restarts): the
    process started ahead for a restart dies; the restart starts its own, restarts are no longer
    prestarted, and nothing is reported."""
    argv = _wrapper(tmp_path, """
        import fcntl, sys
        lock = open("agent.lock", "w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            sys.exit("another process of this agent runs in this directory")
        """)
    mark = uuid.uuid4().hex
    config = FuzzConfig(argv, env={"ACP_TEST_MARK": mark}, prestart_restarts=True)
    result = fuzz(config, seed=1, max_examples=4, step_count=40)
    assert result.failure is None, result.failure
    assert result.stats.spares_died == 1 and result.stats.restart_spares == 0, result.stats
    assert _alive_with(mark) == []


def test_one_example_judged_again_from_its_frames_gives_the_same_blocking_rules(tmp_path):
    """judge_example (the fuzz judge as one function): the transcript of a counterexample, judged again,
    fails the rule the run failed it for; the same judge passes the frames of a correct agent's run."""
    from acp_conformance.fuzz.judge import judge_example
    from acp_conformance.protocol.schema import cached_schema
    from acp_conformance.protocol.validate import Validator

    planted = ROOT / "tests" / "planted" / "planted_agents.py"
    result = fuzz(FuzzConfig([sys.executable, str(planted), "big-id"], timeout=3.0), seed=0, max_examples=100_000,
                  budget=30.0, step_count=50, report_dir=tmp_path)
    assert result.failure and "ERR-004" in result.rules, result.failure
    blocking, _ = judge_example(result.transcript, Validator(cached_schema(None)))
    assert "ERR-004" in {f.rule for f in blocking}, [f.rule for f in blocking]
    # an empty example breaks nothing
    assert judge_example([], Validator(cached_schema(None))) == ([], [])


def _state(pid: int) -> str:
    """The process' state letter (/proc/PID/stat): T when it is stopped."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def test_a_restart_keeps_the_next_examples_spare_stopped_until_it_has_answered(tmp_path, monkeypatch):
    """The next example's spare is kept through a restart (not started again after it), stopped while the
    restarted process starts: a target whose processes wait for a lock one of them holds gets it in the
    restarted process, not in the spare (running, the spare took the lock the old process freed, and the
    restarted process never answered its initialize: a failure that was the fuzzer's)."""
    from acp_conformance.fuzz import example_steps

    seen: list[tuple[str, str]] = []  # the spare's state during each restart step, and after the restart
    do, restart = example_steps.ExampleSteps.do, example_steps.ExampleSteps.restart

    def spy_do(self, raw, **kw):
        if "restart" in raw and self.fs.spare is not None:
            self._spare_pid = self.fs.spare.transport.process.pid
            seen.append(("during", _state(self._spare_pid)))
        return do(self, raw, **kw)

    def spy_restart(self):
        self._spare_pid = None
        restart(self)
        if self._spare_pid is not None:
            seen.append(("after", _state(self._spare_pid)))

    monkeypatch.setattr(example_steps.ExampleSteps, "do", spy_do)
    monkeypatch.setattr(example_steps.ExampleSteps, "restart", spy_restart)
    argv = _wrapper(tmp_path, f"""
        import fcntl
        lock = open({str(tmp_path / "lock")!r}, "w")
        fcntl.flock(lock, fcntl.LOCK_EX)  # waits while another process of this agent runs
        """)
    mark = uuid.uuid4().hex
    result = fuzz(FuzzConfig(argv, env={"ACP_TEST_MARK": mark}), seed=1, max_examples=4, step_count=60)
    assert result.failure is None, result.failure
    assert result.stats.spares_paused >= 1, result.stats  # restarts came while a spare waited
    assert result.stats.processes > result.stats.examples and result.stats.spares_died == 0, result.stats
    assert ("during", "T") in seen and all(state == "T" for when, state in seen if when == "during"), seen
    assert all(state != "T" for when, state in seen if when == "after"), seen
    assert _alive_with(mark) == []


def test_a_schema_that_cannot_be_read_leaves_no_process_behind(tmp_path):
    """The first example's process starts with the run, before the strategies are made from the schema: when
    the schema cannot be read, that process is not left running."""
    mark = uuid.uuid4().hex
    config = FuzzConfig([sys.executable, "-m", "acp_conformance.reference.agent"], env={"ACP_TEST_MARK": mark},
                        schema_path=str(tmp_path / "missing.json"))
    with pytest.raises(SchemaError, match="cannot read the ACP schema"):
        fuzz(config, seed=1, max_examples=1, step_count=5)
    assert _alive_with(mark) == []
