"""Under ``-n``, with running ahead on: every test is dealt to the workers at the start, round-robin in the run's order.

xdist's load scheduling sends each worker a few tests at a time, more as it reports results. A worker that runs
ahead (run_ahead.py) reports in pytest's order, so while it waits on a long turn it reports nothing, gets nothing
more, and can run ahead only what it holds; the other worker meanwhile takes the rest, the tests that run alone
included. Dealt round-robin in the order running ahead gives the tests (those that run alone, then the long turns,
then the rest), each worker gets its share of each kind at once and runs ahead all of it. The rest is xdist's own
(``LoadScheduling``): a worker that crashes is replaced and its tests dealt again.
"""

from __future__ import annotations

from typing import Any


def make_scheduler(config: Any, log: Any) -> Any:
    """A ``DealtScheduling`` for ``--dist load`` (what ``-n`` means by default), else None (xdist chooses)."""
    if config.getvalue("dist") != "load":
        return None
    try:
        from xdist.scheduler import LoadScheduling
    except ImportError:  # another xdist
        return None

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
