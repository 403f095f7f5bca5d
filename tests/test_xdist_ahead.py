"""Running ahead under -n: what an xdist worker has been given to run (plugin/xdist_queue.py), read from xdist's own
queue class, so that a worker runs ahead past its next test (a change of xdist's internals shows here; then only
the next test is known, which is slower, never wrong); and every test dealt at the start, round-robin in the run's
order (plugin/xdist_deal.py)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from suite_run import REFERENCE_AGENT, run_suite

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
