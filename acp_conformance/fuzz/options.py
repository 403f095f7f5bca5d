"""Command-line options of the fuzzer inside pytest (``--acp-fuzz`` and its budget)."""

from __future__ import annotations

DEFAULTS = {"seed": 0, "max_examples": 100, "budget": 60.0, "steps": 100}


def add_options(group) -> None:
    """Register the fuzz options on the plugin's option group."""
    group.addoption("--acp-fuzz", dest="acp_fuzz", action="store_true", default=False,
                    help="also fuzz the target (one more test, acp-fuzz): generated traffic judged by every rule; "
                         "a failure is shrunk and written to the report directory as fuzz-counterexample.yaml")
    group.addoption("--acp-fuzz-seed", dest="acp_fuzz_seed", type=int, default=DEFAULTS["seed"], metavar="N",
                    help="the fuzzer's seed (default 0): the same seed against the same target gives the same run")
    group.addoption("--acp-fuzz-max-examples", dest="acp_fuzz_max_examples", type=int,
                    default=DEFAULTS["max_examples"], metavar="N",
                    help=f"examples the fuzzer runs at most (default {DEFAULTS['max_examples']})")
    group.addoption("--acp-fuzz-budget", dest="acp_fuzz_budget", type=float, default=DEFAULTS["budget"],
                    metavar="S", help=f"wall-clock seconds for fuzzing (default {DEFAULTS['budget']:g}); "
                                      "shrinking a failure gets half as much more")
    group.addoption("--acp-fuzz-steps", dest="acp_fuzz_steps", type=int, default=DEFAULTS["steps"], metavar="N",
                    help=f"rules per fuzz example (default {DEFAULTS['steps']})")


def read_options(config) -> dict | None:
    """The fuzz settings when --acp-fuzz is on (None when it is off); ValueError names a bad value."""
    if not config.getoption("acp_fuzz", default=False):
        return None
    out = {"seed": config.getoption("acp_fuzz_seed"), "max_examples": config.getoption("acp_fuzz_max_examples"),
           "budget": config.getoption("acp_fuzz_budget"), "steps": config.getoption("acp_fuzz_steps")}
    for key, opt in (("max_examples", "--acp-fuzz-max-examples"), ("budget", "--acp-fuzz-budget"),
                     ("steps", "--acp-fuzz-steps")):
        if out[key] is None or not out[key] > 0:
            raise ValueError(f"{opt} must be a positive number (got {out[key]!r})")
    return out
