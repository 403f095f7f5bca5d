"""What a fuzz run is given and what it counts: its configuration, its step statistics, and the two
ways an example ends early (a failure, or the budget)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from typing import Any

from ..thresholds import FUZZ, Thresholds

DEFAULT_PROMPTS = {"simple": "Say hello", "tool": "Use a tool to read the file notes.txt",
                   "permission": "Delete the build directory; ask my permission first.",
                   "long": "Count slowly to 500, one number per line.",
                   "cancellable": "Run the test suite as a cancellable tool call.",
                   "terminal": "Run make test in a terminal.",
                   "plan": "Make a plan for tidying notes.txt, then follow it."}
PERMISSION_ANSWERS = ("allow", "reject", "cancelled", "not_offered", "unknown", "approved", "error")

_VAR = re.compile(r"\$\{|^\$[A-Za-z_]")


class FuzzFailure(AssertionError):
    """The target broke a blocking rule, stopped answering, or died; the message says which."""


class BudgetSpent(BaseException):
    """The wall-clock budget is over: no new example starts. A BaseException, so that hypothesis does
    not take it for a failure of the example (and shrink it): it ends the whole run at once."""


@dataclass
class FuzzConfig:
    """``thresholds``: the run's (``pytest --acp-fuzz`` gives the suite's); without it, the fuzzer's defaults
    with ``timeout``, ``startup_timeout``, ``strict`` and ``revision`` in place. Either way those four are then
    the thresholds' own, and every part of the fuzzer reads ``thresholds``."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    timeout: float = FUZZ.timeout  # per awaited response or update
    startup_timeout: float = FUZZ.startup_timeout
    prompts: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_PROMPTS))
    schema_path: str | None = None
    strict: bool = False
    revision: str | None = None  # --acp-revision: whose rules fail an example (None: every rule)
    # start each example's process while the example before it runs (off: one process at a time)
    prestart: bool = True
    # a restart's process too, in the example's directory, after the example's first resume (off by default:
    # a target that reads what it stored only at start-up would see the state of that moment, not of the
    # restart, and could be failed for it, DELETE-001 and DELETE-004 among the rules)
    prestart_restarts: bool = False
    # fuzz --faults / --acp-fuzz --acp-faults: the examples interleave faults (docs/faults.md): a crash and restart
    # with a resume and a retry of the last keyed prompt, a duplicated prompt, a cancel held past the idle, a pause
    faults: bool = False
    thresholds: Thresholds | None = None

    def __post_init__(self) -> None:
        if self.thresholds is None:
            self.thresholds = replace(FUZZ, timeout=self.timeout, startup_timeout=self.startup_timeout,
                                      strict=self.strict, revision=self.revision)
        t = self.thresholds
        self.timeout, self.startup_timeout, self.strict, self.revision = (t.timeout, t.startup_timeout, t.strict,
                                                                          t.revision)


@dataclass
class StepStats:
    steps: int = 0  # protocol steps: messages the fuzzer wrote
    examples: int = 0
    t_target: float = 0.0  # waiting on the target, inside the runner (includes monitor time, subtracted below)
    t_monitors: float = 0.0  # validation + all monitors, per frame
    t_total: float = 0.0
    t_start: float = 0.0  # process starts and shutdowns
    t_first: float = 0.0  # waiting for the first answer of each new process (its start-up; in t_target too)
    t_finish: float = 0.0  # monitors judging at the end of an example (in t_monitors, not in t_target)
    reductions: int = 0  # runs of candidate scenarios while shrinking a counterexample
    processes: int = 0  # target processes started
    spares_died: int = 0  # spare processes that died before their example could use them
    restart_spares: int = 0  # restarts that took a process started ahead in their directory
    spares_paused: int = 0  # restarts during which the next example's spare was kept, stopped
    found_after: float | None = None  # seconds into the run when the first failing example ended
    found_steps: int = 0  # the length of that example (before shrinking), in scenario steps
    by_kind: dict[str, list[float]] = field(default_factory=dict)  # step kind -> [count, seconds]
    trace: Any = field(default_factory=hashlib.sha256)  # every step of every example, in order

    @property
    def digest(self) -> str:
        """Identifies the run: the same seed against the same deterministic target gives the same."""
        return self.trace.hexdigest()[:16]


def has_var(value: Any) -> bool:
    """Generated text that the scenario runner would read as a variable ($x, ${x})."""
    if isinstance(value, str):
        return bool(_VAR.search(value))
    if isinstance(value, list):
        return any(has_var(v) for v in value)
    if isinstance(value, dict):
        return any(has_var(k) or has_var(v) for k, v in value.items())
    return False


