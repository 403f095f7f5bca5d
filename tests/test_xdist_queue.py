"""What an xdist worker has been given to run (plugin/xdist_queue.py), read from xdist's own queue class: running
ahead under -n sees past the next test. A change of xdist's internals shows here (and then only the next test is
known, which is slower, never wrong)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

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
