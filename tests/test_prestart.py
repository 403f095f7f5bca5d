"""The next test's agent starts while the current test runs (scenarios/prestart.py): a test takes the spare
started for it (its own fresh directory, the same target), the spare is registered like every target (a signal's
sweep kills it), the last one is discarded with its directory, and a spare that died waiting (a target that cannot
run twice at once) turns prestarting off for the rest of the run."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from acp_conformance.scenarios.model import Scenario, Step
from acp_conformance.scenarios.prestart import TestLoop
from acp_conformance.scenarios.runner import Runner, RunSettings, TargetSpec
from acp_conformance.wire.transport import _LIVE

import pytest

TARGET = Path(__file__).resolve().parent / "turn_targets" / "agent.py"
ARGV = [sys.executable, str(TARGET), "plain"]

pytestmark = pytest.mark.skipif(sys.version_info < (3, 11), reason="spares need asyncio.Runner (Python 3.11+)")


def scenario_test(loop: TestLoop, argv=ARGV):
    """What the plugin does for one agent test."""
    spare = loop.take(argv, {})
    steps = [Step("initialize", {}, 0), Step("new_session", {"save": "s"}, 1),
             Step("prompt", {"session": "$s", "text": "hi"}, 2)]
    s = RunSettings(timeout=30.0, startup_timeout=30.0, test_timeout=60.0, shutdown_grace=1.0)
    workdir = spare.workdir if spare else Path("/tmp")
    runner = Runner(Scenario("t", TARGET, [], steps), TargetSpec(argv), s, workdir,
                    started=spare.transport if spare else None)
    return spare, loop.run(runner.run)


def test_the_second_test_takes_the_spare_started_during_the_first():
    loop = TestLoop(enabled=True)
    try:
        first, r1 = scenario_test(loop)
        assert first is None and r1.error is None
        spare = loop.spare
        assert spare is not None and spare.workdir.is_dir() and spare.transport.tag in _LIVE
        second, r2 = scenario_test(loop)
        assert second is spare and r2.error is None, r2.error
        start = r2.transcript.frames[0]
        assert start.event == "start" and start.detail.get("prestarted") is True
        assert start.detail["cwd"] == str(spare.workdir)  # its own fresh directory
        assert loop.spare is not None and loop.spare.workdir != spare.workdir
    finally:
        left = loop.spare
        loop.close()
    assert left is not None and not left.workdir.exists() and left.transport.tag not in _LIVE
    assert left.transport.process.returncode is not None


def _exited_unseen(pid: int) -> None:
    """Wait (bounded) until the process is gone (reaped by asyncio's child watcher thread) without running the
    loop; a watcher that reaps only when the loop runs leaves a zombie, which the check must see through too."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        if Path(f"/proc/{pid}/stat").is_file() and ") Z" in Path(f"/proc/{pid}/stat").read_text():
            return
        time.sleep(0.02)


def test_a_spare_that_died_waiting_is_not_used_and_prestarting_stops():
    dead = [sys.executable, "-c", "pass"]  # exits at once, as a second instance refused by a lock would
    loop = TestLoop(enabled=True)
    try:
        loop.take(dead, {})
        spare = loop.spare
        _exited_unseen(spare.transport.process.pid)  # while no test runs: the loop has not read its exit
        assert loop.take(dead, {}) is None
        assert loop.died == 1 and not loop.enabled and loop.spare is None
        assert not spare.workdir.exists()
    finally:
        loop.close()


def test_a_scenario_that_wants_no_spare_starts_its_own_and_the_spare_waits():
    loop = TestLoop(enabled=True)
    try:
        loop.take(ARGV, {})
        spare = loop.spare
        assert loop.take(ARGV, {}, wanted=False) is None
        assert loop.spare is spare
        assert loop.take(ARGV + ["x"], {}) is None  # another target: the spare is discarded
        assert not spare.workdir.exists() and spare.transport.tag not in _LIVE
    finally:
        loop.close()


def test_off_no_spare_is_ever_started():
    loop = TestLoop(enabled=False)
    _, r = scenario_test(loop)
    assert r.error is None and loop.spare is None and loop.started == 0
    loop.close()
