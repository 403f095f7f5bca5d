"""Under ``-n``, with running ahead on: every test is dealt to the workers at the start, round-robin in the run's order.

xdist's load scheduling sends each worker a few tests at a time, more as it reports results. A worker that runs
ahead (run_ahead.py) reports in pytest's order, so while it waits on a long turn it reports nothing, gets nothing
more, and can run ahead only what it holds; the other worker meanwhile takes the rest, the tests that run alone
included. Dealt at once, each worker holds its share and runs ahead all of it. The rest is xdist's own
(``LoadScheduling``): a worker that crashes is replaced and its tests dealt again.

Which worker gets what is chosen on the workers (the controller knows the tests only by name), by the order they all
give the tests (``order_for_deal``, when the controller says it deals: ``deals``): the tests that run alone go to half
of the workers and the long turns to the other half, so that the long turns start at once instead of after the tests
that run alone (a worker running one of those runs nothing beside it); the rest fill up each worker to its share.
Measured on the reference agent with -n 2: the tests took 7.5 s instead of 9.9 s.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..scenarios.run_ahead import ALONE, LONG  # the ranks of running ahead's order (any other rank, or None: the rest)


def order_for_deal(items: Sequence[Any], rank: Callable[[Any], int | None], workers: int) -> list:
    """``items`` (already in running ahead's order) reordered so that dealing them round-robin to ``workers`` gives
    the tests that run alone to the first half of the workers, the long turns to the second half (both to the one
    worker when there is one), each worker keeping the order its tests had, and every worker its share in number."""
    n = len(items)
    if workers < 2 or n < 2:
        return list(items)
    share = [len(range(k, n, workers)) for k in range(workers)]  # what round-robin dealing gives worker k
    lists: list[list] = [[] for _ in range(workers)]
    half = (workers + 1) // 2
    groups = {ALONE: range(half), LONG: range(half, workers)}
    turn = {ALONE: 0, LONG: 0}

    def room(k: int) -> int:
        return share[k] - len(lists[k])

    rest = []
    for item in items:
        r = rank(item)
        if r not in groups:
            rest.append(item)
            continue
        group = [k for k in groups[r] if room(k) > 0] or [k for k in range(workers) if room(k) > 0]
        k = group[turn[r] % len(group)]
        turn[r] += 1
        lists[k].append(item)
    for item in rest:  # each to the worker with the most room left, then the fewest tests (round-robin when alike)
        k = max(range(workers), key=lambda k: (room(k), -len(lists[k])))
        lists[k].append(item)
    return [lists[p % workers][p // workers] for p in range(n)]


def deals(config: Any) -> bool:
    """Whether ``make_scheduler`` deals the tests: under ``--dist load`` (what ``-n`` means by default), with an
    xdist that has the scheduler it builds on."""
    if config.getvalue("dist") != "load":
        return False
    try:
        import xdist.scheduler as scheduler
    except ImportError:  # another xdist
        return False
    return hasattr(scheduler, "LoadScheduling")


def make_scheduler(config: Any, log: Any) -> Any:
    """A ``DealtScheduling`` where ``deals``, else None (xdist chooses)."""
    if not deals(config):
        return None
    from xdist.scheduler import LoadScheduling

    class DealtScheduling(LoadScheduling):
        def schedule(self) -> None:
            if self.collection is not None or not self.collection_is_completed:
                return super().schedule()  # a node added later (a crashed worker's replacement): xdist's way
            if not self._check_nodes_have_same_collection():
                self.log("**Different tests collected, aborting run**")
                return
            self.collection = next(iter(self.node2collection.values()))
            nodes = self.nodes
            for k, node in enumerate(nodes):
                dealt = list(range(k, len(self.collection), len(nodes)))
                if dealt:
                    self.node2pending[node].extend(dealt)
                    node.send_runtest_some(dealt)
            self.pending[:] = []
            for node in nodes:
                node.shutdown()  # when it has run what it holds

    return DealtScheduling(config, log)
