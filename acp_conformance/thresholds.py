"""Every threshold of a run as one typed value, whichever driver runs it: the suite (pytest, ``agent``,
``client``), the fuzzer (``fuzz``, ``pytest --acp-fuzz``), ``replay``, ``tap`` and ``check``.

The suite builds it from its options (``plugin/options.py``: --acp-timeout, --acp-work-threshold,
--acp-strict, --acp-revision...); the other drivers from theirs, the rest at these defaults, so a threshold
the suite's options change is never fixed in a driver's code. The monitors read theirs through
``monitor_options`` (their ``ctx.options``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .rules.verdicts import BlockingPolicy


@dataclass(frozen=True)
class Thresholds:
    timeout: float = 10.0  # seconds for each awaited answer or update (--acp-timeout)
    startup_timeout: float = 15.0  # seconds for the first answer of a new process (--acp-startup-timeout)
    test_timeout: float = 60.0  # seconds one test (one scenario) may take in all (--acp-test-timeout)
    budget: float | None = None  # seconds for the whole run (--acp-budget), or None
    work_threshold: float = 5.0  # PROMPT-005: work this long answered only after idle fails (--acp-work-threshold)
    cancel_warn_after: float = 10.0  # CANCEL-006: a cancelled idle later than this warns (--acp-cancel-warn-after)
    stop_reason_required: bool = True  # PROMPT-013: a missing stopReason fails (--acp-stop-reason-should: warns)
    strict: bool = False  # warnings block too (--acp-strict)
    require_coverage: bool = False  # a not-exercised rule blocks too (--acp-require-coverage)
    revision: str | None = "preview"  # the ACP revision whose verdict decides (--acp-revision; None: every rule)

    @property
    def policy(self) -> BlockingPolicy:
        """What blocks: the one policy of the verdict, each test and each fuzz example."""
        return BlockingPolicy(self.strict, self.require_coverage, self.revision)

    def monitor_options(self, observed: bool = False) -> dict[str, Any]:
        """The monitors' thresholds (``ctx.options``). ``observed``: traffic nobody scripted (``tap``, ``check``),
        where a request the client stopped waiting for sooner than the suite would (``timeout``) is not judged,
        and CANCEL-009's answer to a cancelled prompt gets the same patience."""
        options: dict[str, Any] = {"insertion_work_threshold": self.work_threshold,
                                   "cancel_warn_after": self.cancel_warn_after,
                                   "stop_reason_required": self.stop_reason_required}
        if observed:
            options.update(observed_patience=self.timeout, held_answer_grace=self.timeout)
        return options


# the fuzzer's and replay's own defaults (acp-conformance fuzz --timeout's): short answers keep examples fast;
# a replayed scenario file may take as long as it needs (no test timeout of its own)
FUZZ = Thresholds(timeout=5.0, startup_timeout=10.0, revision=None)
REPLAY_TEST_TIMEOUT = 600.0
