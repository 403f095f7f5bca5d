"""Run ahead (scenarios/run_ahead.py): the next tests' drives run beside the current one and each is judged when
pytest reaches it. The drives really run at once (shown by drives that can only end together, never by timing), a
drive whose target died is driven again in place and turns running ahead off, close() cancels what no test took,
and a suite subset gives the same rule verdicts with and without running ahead (reference agent, mutants)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from acp_conformance.scenarios.prestart import TestLoop
from acp_conformance.scenarios import run_ahead
from acp_conformance.scenarios.run_ahead import LATE_LIMIT, Drive, RunAhead

from suite_run import REFERENCE_AGENT, mutant_cmd, run_suite

pytestmark = pytest.mark.skipif(sys.version_info < (3, 11), reason="run-ahead needs asyncio.Runner (Python 3.11+)")


@contextlib.contextmanager
def _run_ahead(depth: int):
    """A RunAhead of ``depth`` on a TestLoop of its own, with a Log of what its drives do; closed after."""
    loop, log = TestLoop(enabled=True), Log()
    ahead = RunAhead(loop, depth)
    try:
        yield ahead, log
    finally:
        ahead.close()
        loop.close()


class Result:
    def __init__(self, gone: bool = False, timed_out: bool = False):
        self.target_gone = gone
        self.error_kind = "timeout" if timed_out else None
        self.error = None


class Log:
    def __init__(self):
        self.events: list[str] = []
        self.gates: dict[str, asyncio.Event] = {}

    def gate(self, name: str) -> asyncio.Event:
        return self.gates.setdefault(name, asyncio.Event())

    def drive(self, name: str, waits_for: str | None = None, gone: bool = False, late: bool = False,
              silent: bool = False) -> Drive:
        """A drive that opens its own gate when it starts, then waits for ``waits_for``'s gate: it can end only if
        that drive runs beside it."""
        async def body():
            self.events.append(f"start {name}")
            self.gate(name).set()
            if not silent:
                drive.answered.set()  # its target answered a request (the transcript's listener, in a real drive)
            if waits_for is not None:
                await self.gate(waits_for).wait()
            self.events.append(f"end {name}")
            return Result(gone, late)
        drive = Drive(body, lambda: self.events.append(f"cleanup {name}"))
        return drive


def test_the_next_drives_run_beside_the_current_one_and_are_taken_by_their_tests():
    with _run_ahead(2) as (ahead, log):
        # a waits for c's start: it ends only because c, two tests ahead, runs beside it; b and c hold their
        # places until "go", so d, a third, does not start: 2 at once
        a = ahead.drive("a", lambda: log.drive("a", waits_for="c"),
                        [("b", lambda: log.drive("b", waits_for="go")), ("c", lambda: log.drive("c", waits_for="go")),
                         ("d", lambda: log.drive("d"))])
        assert a.result is not None and not a.ahead
        assert "start d" not in log.events  # 2 at once
        log.gate("go").set()  # (b and c can end now; a gate, not a clock)
        b = ahead.drive("b", lambda: pytest.fail("b was driven again"), [("c", None), ("d", lambda: log.drive("d"))])
        assert b.ahead and b.result is not None and ahead.ahead == 1
        c = ahead.drive("c", lambda: pytest.fail("c was driven again"), [])
        d = ahead.drive("d", lambda: pytest.fail("d was driven again"), [])
        assert c.ahead and d.ahead and ahead.ahead == 3


def test_a_drive_ahead_that_ends_makes_room_for_the_next_while_the_current_test_runs():
    with _run_ahead(1) as (ahead, log):
        # one at a time beside a, which ends only once c, the second test ahead, has started: b made room
        ahead.drive("a", lambda: log.drive("a", waits_for="c"), [("b", lambda: log.drive("b")),
                                                                  ("c", lambda: log.drive("c"))])
        assert log.events.index("end b") < log.events.index("start c") < log.events.index("end a")
        assert ahead.drive("b", lambda: pytest.fail("b was driven again"), []).ahead
        assert ahead.drive("c", lambda: pytest.fail("c was driven again"), []).ahead


def test_the_drives_ahead_stop_at_the_limit_of_tests_ahead(monkeypatch):
    monkeypatch.setattr(run_ahead, "AHEAD_LIMIT", 2)
    with _run_ahead(1) as (ahead, log):
        ahead.drive("a", lambda: log.drive("a", waits_for="c"),
                    [(n, lambda n=n: log.drive(n)) for n in ("b", "c", "d")])
        assert "end c" in log.events and "start d" not in log.events  # b and c wait for their tests: 2 ahead
        ahead.drive("b", lambda: pytest.fail("b was driven again"), [("c", None), ("d", lambda: log.drive("d"))])
        assert "start d" in log.events  # b was taken: room for d


def test_a_drive_ahead_whose_target_died_is_driven_again_in_place_and_running_ahead_stops():
    made = []

    def fresh(name):
        made.append(name)
        return log.drive(name)
    with _run_ahead(2) as (ahead, log):
        ahead.drive("a", lambda: fresh("a"), [("b", lambda: log.drive("b", gone=True)),
                                               ("c", lambda: log.drive("c", waits_for="never"))])
        b = ahead.drive("b", lambda: fresh("b"), [])
        assert not b.ahead and b.again and made == ["a", "b"] and not b.result.target_gone  # driven again, alone
        assert not ahead.on and ahead.off_reason
        assert "cleanup b" in log.events and "cleanup c" in log.events  # c, in flight, was cancelled
        assert "end c" not in log.events
        c = ahead.drive("c", lambda: fresh("c"), [("d", lambda: pytest.fail("started while off"))])
        assert not c.ahead and made == ["a", "b", "c"]


def test_a_drive_beside_others_that_timed_out_is_driven_again_alone_and_running_ahead_goes_on():
    with _run_ahead(1) as (ahead, log):
        ahead.drive("a", lambda: log.drive("a"), [("b", lambda: log.drive("b", late=True))])
        log.events.clear()
        b = ahead.drive("b", lambda: log.drive("b2"), [("c", lambda: log.drive("c"))])
        assert b.again and "timed out" in b.why and b.result.error_kind is None and ahead.on
        assert log.events.index("end c") < log.events.index("start b2")  # alone: c, ahead, ended first
        c = ahead.drive("c", lambda: pytest.fail("c was driven again"), [])
        assert c.ahead and ahead.again == 1


def test_a_target_that_keeps_timing_out_alone_turns_running_ahead_off():
    names = [f"t{i}" for i in range(5)]
    with _run_ahead(1) as (ahead, log):
        for i, name in enumerate(names):
            nxt = names[i + 1:i + 2]
            ahead.drive(name, lambda: log.drive("again", late=True),
                        [(n, lambda n=n: log.drive(n, late=True)) for n in nxt])
            if i < LATE_LIMIT - 1:
                assert ahead.on
        assert not ahead.on and ahead.late == LATE_LIMIT and "timed out also alone" in ahead.off_reason


def test_nothing_runs_ahead_until_a_target_has_answered():
    with _run_ahead(2) as (ahead, log):
        # a target that never answers (not an ACP program, a hang): nothing beside it, so no test driven again
        a = ahead.drive("a", lambda: log.drive("a", silent=True, late=True), [("b", lambda: log.drive("b"))])
        assert "start b" not in log.events and not a.again and not ahead.opened
        # one that answers opens the window, for good
        ahead.drive("b", lambda: log.drive("b", waits_for="c"), [("c", lambda: log.drive("c", silent=True))])
        assert ahead.opened and "end b" in log.events
        assert ahead.drive("c", lambda: pytest.fail("c was driven again"), []).ahead


def test_a_drive_whose_test_no_longer_comes_here_is_cancelled():
    """``--dist worksteal`` takes queued tests back from a busy worker: their drives ahead are no test's here."""
    with _run_ahead(2) as (ahead, log):
        ahead.drive("a", lambda: log.drive("a", waits_for="c"), [("b", lambda: log.drive("b")),
                                                                  ("c", lambda: log.drive("c", waits_for="never"))])
        ahead.drive("b", lambda: pytest.fail("b was driven again"), [("d", lambda: log.drive("d"))])  # c went away
        assert "cleanup c" in log.events and "end c" not in log.events
        assert ahead.drive("d", lambda: pytest.fail("d was driven again"), []).ahead


def test_close_cancels_the_drives_no_test_took():
    with _run_ahead(1) as (ahead, log):
        ahead.drive("a", lambda: log.drive("a", waits_for="b"), [("b", lambda: log.drive("b", waits_for="never"))])
    assert "start b" in log.events and "end b" not in log.events and "cleanup b" in log.events


def test_a_rerun_runs_alone_once_the_drives_ahead_have_ended():
    with _run_ahead(1) as (ahead, log):
        ahead.drive("a", lambda: log.drive("a"), [("b", lambda: log.drive("b", waits_for="a2"))])
        log.gate("a2").set()  # (b can end now; a gate, not a clock)
        log.events.clear()
        again = ahead.drive("a", lambda: log.drive("a2"), [("c", lambda: pytest.fail("started beside a rerun"))])
        assert not again.ahead and log.events.index("end b") < log.events.index("start a2")
        b = ahead.drive("b", lambda: pytest.fail("b was driven again"), [])
        assert b.ahead


def test_off_without_one_loop():
    assert not RunAhead(TestLoop(enabled=False), 2).on


# -- the same verdicts, with and without running ahead, on a suite subset -----------------------------------------

SUBSET = "--acp-rules=SESSION-001,SESSION-010,PROMPT-001,INIT-001"


def _statuses(r) -> dict[str, str]:
    assert r.report is not None, r.output[-3000:]
    return {x["id"]: x["status"] for x in r.report["rules"]}


def _properties(junit: Path) -> list[dict[str, str]]:
    """Each scenario test's properties, in the order of the JUnit file."""
    cases = ({p.get("name"): p.get("value") for p in case.iter("property")}
             for case in ET.parse(junit).getroot().iter("testcase"))
    return [props for props in cases if "scenario" in props]


def _drives(junit: Path) -> dict[str, str]:
    """scenario -> its "drive" property (where "ahead" says it ran before its test began)."""
    return {props["scenario"]: props["drive"] for props in _properties(junit) if "drive" in props}


@pytest.mark.parametrize("agent", [REFERENCE_AGENT, mutant_cmd("session-010")], ids=["reference", "session-010"])
def test_a_suite_subset_gives_the_same_verdicts_with_and_without_running_ahead(agent, tmp_path):
    one = run_suite(agent, tmp_path / "one", SUBSET, "--acp-run-ahead=0")
    three = run_suite(agent, tmp_path / "three", SUBSET, "--acp-run-ahead=3")
    assert three.returncode == one.returncode, three.output[-3000:]
    assert _statuses(three) == _statuses(one)
    if agent != REFERENCE_AGENT:  # the mutant is caught either way
        assert _statuses(one)["SESSION-010"] in ("fail", "warn"), one.output[-3000:]
    drives = _drives(three.junit)
    assert any("ahead" in v for v in drives.values()), drives  # it did run ahead
    assert not any("ahead" in v for v in _drives(one.junit).values())


def test_a_target_that_dies_is_driven_again_in_place_with_the_same_verdicts(tmp_path):
    rules = "--acp-rules=PROMPT-001,RESUME-002,ERR-001"
    fast = ("--acp-timeout=2", "--acp-startup-timeout=5", "--acp-test-timeout=20")
    one = run_suite(mutant_cmd("exit-mid-turn"), tmp_path / "one", rules, *fast, "--acp-run-ahead=0", timeout=240)
    three = run_suite(mutant_cmd("exit-mid-turn"), tmp_path / "three", rules, *fast, "--acp-run-ahead=3",
                      timeout=240)
    assert three.returncode == one.returncode == 1, three.output[-3000:]
    assert _statuses(three) == _statuses(one)
    assert any("driven again alone" in v for v in _drives(three.junit).values()), _drives(three.junit)
    # the run says so: the summary, and report.json's tests[].driven_again (with what the first drive met)
    again = {t["id"]: t["driven_again"] for t in three.report["tests"] if t.get("driven_again")}
    assert again and all("died or would not start" in why for why in again.values()), three.report["tests"]
    assert "driven again alone (" in three.output and next(iter(again)) in three.output, three.output[-3000:]
    assert not any(t.get("driven_again") for t in one.report["tests"])


def test_a_scenario_that_runs_alone_has_nothing_beside_it_and_the_order_puts_alone_then_long_first(tmp_path):
    (tmp_path / "s").mkdir()
    plain = "    rules: [PROMPT-001]\n    steps:\n      - initialize: {}\n      - new_session: {save: s}\n" \
            "      - prompt: {session: $s}\n"
    long = plain.replace("prompt: {session: $s}", "prompt: {session: $s, text: \"${opt.long}\"}")
    (tmp_path / "s" / "alone.yaml").write_text(
        "scenarios:\n"
        + "".join(f"  - name: before-{i}\n{plain}" for i in range(2))
        + "".join(f"  - name: alone-{i}\n    options: {{run_ahead: false}}\n{plain}" for i in range(2))
        + "".join(f"  - name: after-{i}\n{plain}" for i in range(2))
        + f"  - name: long\n{long}")
    args = (f"--acp-scenarios={tmp_path / 's'}", "--acp-no-bundled", "--acp-long-prompt=Say hello")
    r = run_suite(REFERENCE_AGENT, tmp_path / "run", *args, "--acp-run-ahead=3")
    assert "7 passed" in r.output, r.output[-3000:]
    drives = _drives(r.junit)
    order = [props["scenario"] for props in _properties(r.junit)]
    assert order == ["alone-0", "alone-1", "long", "before-0", "before-1", "after-0", "after-1"], order
    assert "ahead" in drives["before-0"] and "ahead" in drives["after-1"], drives  # driven beside long
    # not started beside another, and nothing was started beside them
    assert "ahead" not in drives["alone-0"] and "ahead" not in drives["alone-1"], drives
    one = run_suite(REFERENCE_AGENT, tmp_path / "one", *args, "--acp-run-ahead=0")
    order = [props["scenario"] for props in _properties(one.junit)]
    assert order == ["before-0", "before-1", "alone-0", "alone-1", "after-0", "after-1", "long"]  # the file's order


def test_the_order_for_running_ahead_moves_only_ranked_tests_each_rank_in_its_order():
    from acp_conformance.scenarios.run_ahead import order_for_running_ahead
    items = ["o1", "x", "l1", "a1", "y", "l2", "o2", "a2"]  # a: alone (0), l: long (1), o: other (2), x/y: unranked
    rank = {"a": 0, "l": 1, "o": 2}
    assert order_for_running_ahead(items, lambda i: rank.get(i[0])) == ["a1", "x", "a2", "l1", "y", "l2", "o1", "o2"]


def test_a_whole_test_timeout_counts_as_a_timeout_of_the_load():
    """--acp-test-timeout marks the result (error_kind "test-timeout"), which running ahead reads, not the sentence."""
    from types import SimpleNamespace
    from acp_conformance.scenarios.run_ahead import _timed_out
    assert _timed_out(SimpleNamespace(error_kind="test-timeout", error="anything"))
    assert _timed_out(SimpleNamespace(error_kind="timeout", error=None))
    assert not _timed_out(SimpleNamespace(error_kind="target-never", error="did not finish within the test timeout"))
    assert not _timed_out(None)
