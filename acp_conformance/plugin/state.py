"""What one run of the suite holds: its configuration and what the controller collects from every test.

Every attribute is declared here, also those that the run's other plugins (run control, the fuzzer) fill
in, so that nobody adds state to it on the side or reads it back with ``getattr``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ..rules.catalog import Rule, load_catalog
from ..run_record import RunRecord
from .options import RunConfig


@dataclass
class SuiteState:
    run: RunConfig
    suite_dir: Path  # the bundled scenarios of the target's side
    scenario_roots: list[Path]  # what the run collects (scenario_paths.py)
    # collected on the controller (also under xdist): one test record per test (run_record.py), which the
    # verdict and the reports read (results.new_record)
    record: RunRecord
    catalog: dict[str, Rule] = field(default_factory=load_catalog)
    negotiated_version: int | None = None  # 1 when the agent answered a v2 initialize with 1
    first_contact: dict[str, Any] | None = None  # {"kind", "sentence"}: why the target was not judged
    auth_blocked: list[str] = field(default_factory=list)  # the tests stopped at authentication, in the runner's words
    budget_skipped: list[str] = field(default_factory=list)  # tests not run: --acp-budget was spent (run_control)
    flaky: list[tuple[str, str]] = field(default_factory=list)  # (test, why it failed first) (run_control)
    # per process
    run_started: float = 0.0  # wall clock at the controller's start (the budget is one for all xdist workers)
    validator: Any = None  # compiled once per process, reused by every test
    guard: Any = None  # the SignalGuard of the run (interruption.py)
    test_loop: Any = None  # runs the agent tests, with the next test's process started ahead (prestart.py)
    run_ahead: Any = None  # the next tests' drives beside the current one (run_ahead.py)
    verdict: Any = None  # the run's Verdict, once judged (controller)

    @property
    def side(self) -> str:
        return self.run.side


STATE = pytest.StashKey[SuiteState]()


def suite_state(config: pytest.Config | None) -> SuiteState | None:
    """The run's state, or None when the suite is not running (no --agent-cmd / --client-cmd)."""
    return config.stash.get(STATE, None) if config is not None else None
