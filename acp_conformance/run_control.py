"""Run control: scaled timeouts, a suite-level time budget, and reruns of failed tests (flaky).

A pytest plugin of its own (loaded by ``plugin/`` through ``pytest_plugins``), so that how long a
run may take and how often a test is tried stays apart from what a test judges.

* ``--acp-timeout-multiplier F`` scales every harness timeout (response, startup, whole test) for
  slow agents (applied once, where the run's configuration is built: ``plugin/options.py``).
* ``--acp-budget S`` is a wall-clock budget for the whole run. A test that would start after it is
  spent is skipped with that reason; a running test finishes normally (cutting it short would
  blame the target for the missing answers), so the overshoot is at most one test's timeout. The
  run then ends cleanly with the verdict of what it has (the rules of the skipped tests are
  not-tested, so a cut-short run is never conformant).
* ``--acp-rerun-failures`` runs a failed test once more, alone. A test that passes on the rerun is
  reported as flaky: its rules that failed the first time get a ``flaky`` finding, which counts
  against conformance like a failure but says what happened.
"""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
from _pytest.runner import runtestprotocol

from .rules.findings import FAIL, FLAKY, Finding

BUDGET_KEY = "acp_budget_skipped"
FLAKY_KEY = "acp_flaky"


def pytest_addoption(parser: pytest.Parser) -> None:
    # parsed and applied with every other option (plugin/options.py: RunConfig), so that a non-number is our
    # usage error (exit 2) and the timeouts are scaled once
    group = parser.getgroup("acp-conformance", "ACP conformance suite")
    group.addoption("--acp-timeout-multiplier", dest="acp_timeout_multiplier", default=1.0,
                    metavar="F", help="scale every timeout (response, startup, test) by F for slow agents")
    group.addoption("--acp-budget", dest="acp_budget", default=None, metavar="S",
                    help="wall-clock budget of the whole run in seconds: tests that would start later are "
                         "skipped and the run ends with what it has (never conformant)")
    group.addoption("--acp-rerun-failures", dest="acp_rerun_failures", action="store_true", default=False,
                    help="rerun a failed test once, alone; one that then passes is reported flaky")


def _state(config: pytest.Config | None):
    from .plugin.state import suite_state
    return suite_state(config)


class _Recorder:
    """On the controller: the tests the budget skipped and those that were flaky, for the summary."""

    def __init__(self, state):
        self.state = state

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        state = self.state
        for key, value in report.user_properties:
            if key == BUDGET_KEY and report.nodeid not in state.budget_skipped:
                state.budget_skipped.append(report.nodeid)
            elif key == FLAKY_KEY and report.nodeid not in [n for n, _ in state.flaky]:
                state.flaky.append((report.nodeid, value))


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    state = _state(config)
    if state is None:
        return
    # workers of pytest-xdist start later than the controller; the controller's start time travels
    # to them in workerinput, so that the budget is one budget for the whole run
    winput = getattr(config, "workerinput", None)
    start = winput.get("acp_run_started") if winput else None
    state.run_started = float(start) if start is not None else time.time()
    if winput is None:
        config.pluginmanager.register(_Recorder(state), "acp-run-control-recorder")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:  # xdist controller: hand the run's start time to each worker
    state = _state(node.config)
    if state is not None:
        node.workerinput["acp_run_started"] = state.run_started


def _remaining(state) -> float | None:
    if state.run.budget is None:
        return None
    return state.run.budget - (time.time() - state.run_started)


def pytest_runtest_setup(item: pytest.Item) -> None:
    state = _state(item.config)
    if state is None:
        return
    left = _remaining(state)
    if left is None:
        return
    if left <= 0:
        reason = f"the run's budget of {state.run.budget:g} s (--acp-budget) was spent before this test started"
        item.user_properties.append((BUDGET_KEY, reason))
        pytest.skip(reason)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem) -> bool | None:
    state = _state(item.config)
    if state is None or not item.config.getoption("acp_rerun_failures"):
        return None
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    props_before = list(item.user_properties)
    first = runtestprotocol(item, nextitem=nextitem, log=False)
    if not any(r.failed for r in first):
        reports = first
    else:
        failed_findings = _failed_findings(first)
        item.user_properties[:] = props_before  # the rerun records its own findings
        if hasattr(item, "acp_outcome"):
            item.acp_outcome = None
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        if not any(r.failed for r in reports):
            _mark_flaky(reports, first, failed_findings)
    for r in reports:
        ihook.pytest_runtest_logreport(report=r)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def _failed_findings(reports) -> list[Finding]:
    from .plugin.outcome import reported
    out = []
    for r in reports:
        outcome = reported(r) if r.when == "call" else None
        if outcome is not None:
            out.extend(f for f in outcome.findings if f.status == FAIL)
    return out


def _mark_flaky(reports, first, failed_findings: list[Finding]) -> None:
    """The rerun passed: keep its findings, and add a flaky finding for every rule that failed first."""
    from .plugin.outcome import reported
    first_call = next((r for r in first if r.failed), first[-1])
    why = first_call.longreprtext.strip().splitlines()
    summary = why[0] if why else "failed"
    flaky = [replace(f, status=FLAKY, message=f"failed on the first run, passed when rerun alone: {f.message}")
             for f in failed_findings]
    for r in reports:
        if r.when != "call":
            continue
        outcome = reported(r)
        if outcome is not None:
            r.acp_outcome = outcome.with_flaky(flaky)
        r.user_properties.append((FLAKY_KEY, summary[:500]))


def pytest_report_teststatus(report, config):
    if report.when == "call" and report.passed and any(k == FLAKY_KEY for k, _ in report.user_properties):
        return "flaky", "R", ("FLAKY", {"yellow": True})
    if report.when == "setup" and report.skipped and any(k == BUDGET_KEY for k, _ in report.user_properties):
        return "skipped", "b", ("BUDGET", {"yellow": True})
    return None


def pytest_report_header(config: pytest.Config):
    state = _state(config)
    if state is None:
        return None
    r = state.run
    m = r.timeout_multiplier
    line = (f"acp-conformance: timeouts response {r.timeout:g} s, startup {r.startup_timeout:g} s, "
            f"test {r.test_timeout:g} s" + (f" (x{m:g})" if m != 1.0 else ""))
    if r.budget is not None:
        line += f"; run budget {r.budget:g} s"
    return [line]


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    state = _state(config)
    if state is None:
        return
    tr = terminalreporter
    if state.budget_skipped:
        tr.line(f"acp-conformance: the budget of {state.run.budget:g} s was spent: {len(state.budget_skipped)} "
                "test(s) were not run; their rules are not-tested", yellow=True, bold=True)
    for nodeid, why in state.flaky:
        tr.line(f"acp-conformance: FLAKY {nodeid}: failed, then passed on a rerun alone ({why[:200]})", yellow=True)
