"""The pytest plugin: options, collection of the bundled scenarios, running them, the verdict.

Loaded through the ``pytest11`` entry point wherever the package is installed. It does nothing
unless ``--agent-cmd`` (or ``--client-cmd``) is given; then it builds the run's configuration once
(``options.py``), registers the run (``session.ConformanceRun``) and runs the bundled conformance
suite, and only it.

| module | responsibility |
|---|---|
| ``options.py`` | the command-line options; ``RunConfig``, frozen, every option checked and applied once |
| ``state.py`` | ``SuiteState``: the configuration and what the run collects, every attribute declared |
| ``items.py`` | scenario files and tests: the run of one scenario against the target (agent or client) |
| ``contact.py`` | first contact: a target the suite cannot judge at all, and the run's early stop |
| ``judging.py`` | ``judge_run``: one run's outcome and pass/fail/skip/xfail, for every driver |
| ``outcome.py`` | ``TestOutcome``, from the test to the controller (JSON only across xdist) |
| ``results.py`` | the controller: outcomes collected, the verdict |
| ``session.py`` | ``ConformanceRun``: the plugin object (collection, reports, verdict, exit status) |
| ``terminal.py`` | the terminal summary |
"""

from __future__ import annotations

import pytest

from .contact import negotiated_v1 as _negotiated_v1  # noqa: F401  (read by the wire monitors' tests)
from .options import UsageError, add_options, build_run_config
from .state import STATE, SuiteState

# timeouts, the run's budget and reruns live in a plugin of their own, and so does --acp-fuzz
pytest_plugins = ["acp_conformance.run_control", "acp_conformance.fuzz.pytest_fuzz"]

RUN_PLUGIN = "acp-conformance-run"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    from ..interruption import SignalGuard  # SIGTERM/SIGHUP: kill the targets, then unwind with the partial report
    if all(config.getoption(o, default=None) is None for o in ("acp_agent_cmd", "acp_client_cmd")):
        return  # no target: the plugin does nothing
    guard = SignalGuard(owner=not hasattr(config, "workerinput"))
    guard.defer = True  # installed before the version probe starts the target
    guard.install()
    try:
        run = build_run_config(config)
    except UsageError as e:
        guard.uninstall()
        pytest.exit(f"acp-conformance: {e}", returncode=2)
    if run is None:
        guard.uninstall()
        return
    from ..resources import suite_folder
    from ..rules.catalog import load_catalog
    from ..scenario_paths import ScenarioPathError, scenario_roots, user_paths
    suite_dir = suite_folder(run.side, run.protocol).resolve()
    try:
        from _pytest.config import Config  # an xdist worker parses the same command line: the same roots
        positional = list(config.args) if config.args_source == Config.ArgsSource.ARGS else []
        config.option.acp_scenarios = user_paths(config.getoption("acp_scenarios"), positional)
        roots = scenario_roots(config.getoption("acp_scenarios"),
                               None if config.getoption("acp_no_bundled") else suite_dir, run.side, set(load_catalog()))
    except ScenarioPathError as e:
        pytest.exit(f"acp-conformance: {e}", returncode=2)
    config.args[:] = [str(r) for r in roots]  # the bundled suite and the user's scenario files, and only them
    from .results import new_record
    config.stash[STATE] = state = SuiteState(run, suite_dir, roots, new_record(run))
    if not hasattr(config, "workerinput"):
        from ..early_stop import reset
        reset(run.report_dir)
    state.guard = guard
    from ..scenarios.prestart import for_run
    state.test_loop = for_run(config, run)
    from ..scenarios.run_ahead import RunAhead, depth_for_run
    state.run_ahead = RunAhead(state.test_loop, depth_for_run(config, run))
    if state.run_ahead.on:  # each drive starts its own process, beside the others: no spares
        state.test_loop.enabled = False
    config.addinivalue_line("markers", "acp_rules(ids): rule IDs a scenario exists to exercise")
    from .session import ConformanceRun
    config.pluginmanager.register(ConformanceRun(config, state), RUN_PLUGIN)
    _without_hypothesis_summary(config)
    guard.defer = False  # from here a signal raises (the first test's setup raises one that came before)


def _without_hypothesis_summary(config: pytest.Config) -> None:
    """Hypothesis' pytest plugin imports hypothesis at the end of every run, to print what its @given tests wrote: a
    conformance run collects its scenario files only (no @given test), and that import was 0.4 s of each run. Kept
    when one of its options is given (``--hypothesis-show-statistics``...)."""
    plugin = config.pluginmanager.get_plugin("hypothesispytest")
    wanted = getattr(plugin, "_any_hypothesis_option", None)
    if plugin is not None and callable(wanted) and not wanted(config):
        config.pluginmanager.unregister(plugin)


__all__ = ["STATE", "SuiteState", "UsageError", "build_run_config"]
