"""Keeping hypothesis' draws independent of what else is loaded (see ``without_local_constants``)."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def without_local_constants():
    """Hypothesis also draws literals found in the source of the loaded local modules (this project
    and its tests among them): the scripts would then depend on what else is imported (the same
    seed, another run under pytest than in the console script), and the tests' own literals would
    steer the fuzzer toward the planted bugs. A fuzz run draws from hypothesis' global pool only."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover
        yield
        return
    get = getattr(providers, "_get_local_constants", None)
    constants = getattr(providers, "Constants", None)
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if get is None or constants is None or cache is None:  # a hypothesis without the feature
        yield
        return
    empty = constants()
    providers._get_local_constants = lambda: empty
    cache.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = get
        cache.cache.clear()
