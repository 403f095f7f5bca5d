"""Run control: scaled timeouts, a suite-level time budget, and reruns of failed tests (flaky).

A pytest plugin of its own (loaded by ``plugin.py`` through ``pytest_plugins``), so that how long a
run may take and how often a test is tried stays apart from what a test judges.

* ``--acp-timeout-multiplier F`` scales every harness timeout (response, startup, whole test) for
  slow agents.
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

import json
import time

import pytest
from _pytest.runner import runtestprotocol

from .rules.findings import FAIL, FLAKY

FINDINGS_KEY = "acp_findings"  # the same key as plugin.py: findings travel in user_properties
BUDGET_KEY = "acp_budget_skipped"
FLAKY_KEY = "acp_flaky"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("acp-conformance", "ACP conformance suite")
    group.addoption("--acp-timeout-multiplier", dest="acp_timeout_multiplier", default=1.0,
                    metavar="F", help="scale every timeout (response, startup, test) by F for slow agents")
    group.addoption("--acp-budget", dest="acp_budget", default=None, metavar="S",
                    help="wall-clock budget of the whole run in seconds: tests that would start later are "
                         "skipped and the run ends with what it has (never conformant)")
    group.addoption("--acp-rerun-failures", dest="acp_rerun_failures", action="store_true", default=False,
                    help="rerun a failed test once, alone; one that then passes is reported flaky")


def _number(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _state(config: pytest.Config):
    from .plugin import STATE
    return config.stash.get(STATE, None)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    state = _state(config)
    if state is None:
        return
    # parsed here, not by argparse, so that a non-number is our usage error (exit 2)
    m_raw, budget_raw = config.getoption("acp_timeout_multiplier"), config.getoption("acp_budget")
    m = _number(m_raw)
    budget = None if budget_raw is None else _number(budget_raw)
    if not m > 0 or m == float("inf"):
        pytest.exit(f"acp-conformance: --acp-timeout-multiplier must be a positive number (got {m_raw!r})", returncode=2)
    if budget is not None and not budget > 0:
        pytest.exit(f"acp-conformance: --acp-budget must be a positive number of seconds (got {budget_raw!r})",
                    returncode=2)
    s = state.settings
    for key in ("timeout", "startup_timeout", "test_timeout"):
        if key in s:
            s[key] = float(s[key]) * m
    s["timeout_multiplier"] = m
    # workers of pytest-xdist start later than the controller; the controller's start time travels
    # to them in workerinput, so that the budget is one budget for the whole run
    winput = getattr(config, "workerinput", None)
    start = winput.get("acp_run_started") if winput else None
    state.run_started = float(start) if start is not None else time.time()
    state.budget = budget
    state.budget_skipped = []
    state.flaky = []


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:  # xdist controller: hand the run's start time to each worker
    state = _state(node.config)
    if state is not None:
        node.workerinput["acp_run_started"] = getattr(state, "run_started", time.time())


def _remaining(state) -> float | None:
    if getattr(state, "budget", None) is None:
        return None
    return state.budget - (time.time() - state.run_started)


def pytest_runtest_setup(item: pytest.Item) -> None:
    state = _state(item.config)
    if state is None:
        return
    left = _remaining(state)
    if left is None:
        return
    if left <= 0:
        reason = f"the run's budget of {state.budget:g} s (--acp-budget) was spent before this test started"
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
        failed_findings = _blocking_findings(first)
        item.user_properties[:] = props_before  # the rerun records its own findings
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        if not any(r.failed for r in reports):
            _mark_flaky(item, reports, first, failed_findings)
    for r in reports:
        ihook.pytest_runtest_logreport(report=r)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def _blocking_findings(reports) -> list[dict]:
    out = []
    for r in reports:
        if r.when != "call":
            continue
        for key, value in r.user_properties:
            if key == FINDINGS_KEY:
                out.extend(d for d in json.loads(value) if d.get("status") == FAIL)
    return out


def _mark_flaky(item: pytest.Item, reports, first, failed_findings: list[dict]) -> None:
    """The rerun passed: keep its findings, and add a flaky finding for every rule that failed first."""
    first_call = next((r for r in first if r.failed), first[-1])
    why = first_call.longreprtext.strip().splitlines()
    summary = why[0] if why else "failed"
    flaky = []
    for d in failed_findings:
        flaky.append({**d, "status": FLAKY,
                      "message": f"failed on the first run, passed when rerun alone: {d.get('message', '')}"})
    for r in reports:
        if r.when != "call":
            continue
        props = []
        for key, value in r.user_properties:
            if key == FINDINGS_KEY:
                value = json.dumps(json.loads(value) + flaky)
            props.append((key, value))
        props.append((FLAKY_KEY, summary[:500]))
        r.user_properties = props


def pytest_report_teststatus(report, config):
    if report.when == "call" and report.passed and any(k == FLAKY_KEY for k, _ in report.user_properties):
        return "flaky", "R", ("FLAKY", {"yellow": True})
    if report.when == "setup" and report.skipped and any(k == BUDGET_KEY for k, _ in report.user_properties):
        return "skipped", "b", ("BUDGET", {"yellow": True})
    return None


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    from .plugin import _CONFIG
    config = _CONFIG.get("config")
    state = _state(config) if config else None
    if state is None or hasattr(config, "workerinput"):
        return
    for key, value in report.user_properties:
        if key == BUDGET_KEY and report.nodeid not in state.budget_skipped:
            state.budget_skipped.append(report.nodeid)
        elif key == FLAKY_KEY and report.nodeid not in [n for n, _ in state.flaky]:
            state.flaky.append((report.nodeid, value))


def pytest_report_header(config: pytest.Config):
    state = _state(config)
    if state is None or getattr(state, "budget", "unset") == "unset":
        return None
    s = state.settings
    m = s.get("timeout_multiplier", 1.0)
    line = (f"acp-conformance: timeouts response {s['timeout']:g} s, startup {s['startup_timeout']:g} s, "
            f"test {s['test_timeout']:g} s" + (f" (x{m:g})" if m != 1.0 else ""))
    if state.budget is not None:
        line += f"; run budget {state.budget:g} s"
    return [line]


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    state = _state(config)
    if state is None:
        return
    tr = terminalreporter
    if getattr(state, "budget_skipped", None):
        tr.line(f"acp-conformance: the budget of {state.budget:g} s was spent: {len(state.budget_skipped)} "
                "test(s) were not run; their rules are not-tested", yellow=True, bold=True)
    for nodeid, why in getattr(state, "flaky", []):
        tr.line(f"acp-conformance: FLAKY {nodeid}: failed, then passed on a rerun alone ({why[:200]})", yellow=True)
