"""What an xdist worker has been given to run after its next test: the tests that may run ahead there (run_ahead.py).

pytest tells a test only which test comes next (``nextitem``); an xdist worker holds more in its queue (the
controller sends tests in chunks). That queue is xdist's own (``WorkerInteractor.torun``, pytest-xdist 3.x): it is
read under its lock and only read; anything unexpected (another xdist, no worker) gives nothing, and running ahead
then looks only at the next test. A test read here may still go elsewhere (``--dist worksteal`` takes tests back
from a busy worker): its drive ahead is cancelled once the worker's queue no longer holds it, never judged here.
"""

from __future__ import annotations

from typing import Any

import pytest


def queued_items(config: pytest.Config, session: pytest.Session) -> list[Any]:
    """The tests queued on this worker after its next one, in the order it will run them ([] if unknown)."""
    for plugin in config.pluginmanager.get_plugins():
        if type(plugin).__name__ != "WorkerInteractor":
            continue
        torun = getattr(plugin, "torun", None)
        try:
            with torun.lock() as queue:
                indexes = list(queue)
        except Exception:  # another xdist's internals: only the next test is known
            return []
        items = session.items
        out = []
        for i in indexes:
            if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(items):
                break  # the end-of-work marker, or something unknown: what follows is not known
            out.append(items[i])
        return out
    return []
