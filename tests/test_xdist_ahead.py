"""Running ahead under -n: what an xdist worker has been given to run (plugin/xdist_queue.py), read from xdist's own
queue class, so that a worker runs ahead past its next test (a change of xdist's internals shows here; then only
the next test is known, which is slower, never wrong); and every test dealt at the start, round-robin in the run's
order (plugin/xdist_deal.py)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from suite_run import REFERENCE_AGENT, run_suite

from acp_conformance.plugin.xdist_deal import order_for_deal
from acp_conformance.plugin.xdist_queue import queued_items

xdist_remote = pytest.importorskip("xdist.remote")
execnet = pytest.importorskip("execnet")


class WorkerInteractor:  # the name xdist's worker plugin has; the queue is xdist's own class
    def __init__(self, indexes):
        self.torun = xdist_remote.TestQueue(execnet.gateway_base.get_execmodel("thread"))
        for i in indexes:
            self.torun.put(i)


def _config(*plugins):
    return SimpleNamespace(pluginmanager=SimpleNamespace(get_plugins=lambda: list(plugins)))


def test_the_worker_queue_in_order_up_to_the_end_marker():
    session = SimpleNamespace(items=["t0", "t1", "t2", "t3"])
    worker = WorkerInteractor([2, 3, xdist_remote.Marker.SHUTDOWN])
    assert queued_items(_config(object(), worker), session) == ["t2", "t3"]
    assert worker.torun.get() == 2  # only read: the worker still runs them


def test_nothing_known_without_a_worker_or_with_another_queue():
    session = SimpleNamespace(items=["t0"])
    assert queued_items(_config(object()), session) == []
    odd = WorkerInteractor([])
    odd.torun = object()  # another xdist's internals
    assert queued_items(_config(odd), session) == []
    assert queued_items(_config(WorkerInteractor([0, 7])), session) == ["t0"]  # an index it does not have: stop


def _workers(output: str) -> dict[str, list[str]]:
    """worker -> the scenarios it ran, in order (pytest -v under xdist: "[gw0] [ 25%] PASSED file::name")."""
    out: dict[str, list[str]] = {}
    for worker, name in re.findall(r"\[(gw\d+)\].*?(?:PASSED|FAILED|SKIPPED) \S+::(\S+)", output):
        out.setdefault(worker, []).append(name)
    return out


def test_with_running_ahead_each_worker_is_dealt_its_share_at_once_in_the_runs_order(tmp_path):
    (tmp_path / "s").mkdir()
    plain = "    rules: [PROMPT-001]\n    steps:\n      - initialize: {}\n      - new_session: {save: s}\n" \
            "      - prompt: {session: $s}\n"
    (tmp_path / "s" / "six.yaml").write_text("scenarios:\n" + "".join(f"  - name: t{i}\n{plain}" for i in range(6)))
    r = run_suite(REFERENCE_AGENT, tmp_path / "run", f"--acp-scenarios={tmp_path / 's'}", "--acp-no-bundled",
                  "-n", "2", "-vv")  # (run_suite passes -q)
    assert "6 passed" in r.output, r.output[-3000:]
    workers = _workers(r.output)
    assert sorted(workers.values()) == [["t0", "t2", "t4"], ["t1", "t3", "t5"]], workers


def _dealt(order: list, workers: int) -> list[list]:
    return [order[k::workers] for k in range(workers)]  # what round-robin dealing gives each worker


def test_the_deal_gives_the_tests_that_run_alone_and_the_long_turns_to_different_workers():
    items = ["a0", "a1", "a2", "l0", "l1", "r0", "r1", "r2", "r3", "r4", "r5"]  # running ahead's order
    rank = lambda name: {"a": 0, "l": 1}.get(name[0], 2)  # noqa: E731
    assert _dealt(order_for_deal(items, rank, 2), 2) == [["a0", "a1", "a2", "r1", "r3", "r5"],
                                                         ["l0", "l1", "r0", "r2", "r4"]]
    three = _dealt(order_for_deal(items, rank, 3), 3)  # alone: the first two workers; long turns: the third
    assert three == [["a0", "a2", "r1", "r4"], ["a1", "r0", "r2", "r5"], ["l0", "l1", "r3"]]
    assert order_for_deal(items, rank, 1) == items
    for n in range(12):  # nothing to place: round-robin in the run's order
        assert all(order_for_deal(items[:n], lambda name: 2, w) == items[:n] for w in range(1, 5))


def test_the_deal_spills_what_one_half_cannot_hold_and_keeps_every_test():
    items = [f"a{i}" for i in range(5)] + ["l0", "r0"]
    rank = lambda name: {"a": 0, "l": 1}.get(name[0], 2)  # noqa: E731
    dealt = _dealt(order_for_deal(items, rank, 2), 2)
    assert dealt == [["a0", "a1", "a2", "a3"], ["a4", "l0", "r0"]]
    assert sorted(order_for_deal(items, rank, 2)) == sorted(items)


def test_under_xdist_the_tests_that_run_alone_go_to_one_worker_and_the_long_turns_to_the_other(tmp_path):
    (tmp_path / "s").mkdir()
    steps = "    steps:\n      - initialize: {}\n      - new_session: {save: s}\n      - prompt: {session: $s, text: %s}\n"
    alone = "    rules: [PROMPT-001]\n    options: {run_ahead: false}\n" + steps % "hello"
    long = "    rules: [PROMPT-001]\n" + steps % "'${opt.long}'"
    plain = "    rules: [PROMPT-001]\n" + steps % "hello"
    # x0, which runs alone, is deselected (-k): dealt before the deselection, a1 would have gone to the other worker
    (tmp_path / "s" / "mixed.yaml").write_text(
        "scenarios:\n" + "".join(f"  - name: p{i}\n{plain}" for i in range(3))
        + "".join(f"  - name: l{i}\n{long}" for i in range(2)) + "".join(f"  - name: {n}\n{alone}" for n in ("a0", "x0", "a1")))
    r = run_suite(REFERENCE_AGENT, tmp_path / "run", f"--acp-scenarios={tmp_path / 's'}", "--acp-no-bundled",
                  "--acp-long-prompt=Say hello", "-n", "2", "-vv", "-k", "not x0")
    assert "7 passed" in r.output, r.output[-3000:]
    assert sorted(_workers(r.output).values()) == [["a0", "a1", "p0", "p2"], ["l0", "l1", "p1"]], r.output[-3000:]
