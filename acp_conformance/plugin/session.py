"""The suite's run as a pytest plugin object: registered at configure when a target is given.

It collects the scenario files (and only them), carries each test's outcome from its report to the
run's state, judges the run at the end and writes the reports, the terminal summary and the exit status.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from ..rules.first_contact import NOT_V2
from . import outcome as outcomes
from .items import ScenarioFile, ScenarioItem
from .results import judge_suite, record, report_extra, stopped_by, verdict_line
from .state import SuiteState
from .terminal import write_summary

DEALT_KEY = "acp_dealt"  # workerinput: the controller deals every test at the start (xdist_deal.py)
NOT_V2_EXIT = 6  # the target speaks another protocol version: not judged (README, "Exit status")


class ConformanceRun:
    def __init__(self, config: pytest.Config, state: SuiteState):
        self.config = config
        self.state = state
        self.worker = hasattr(config, "workerinput")  # an xdist worker: the controller judges

    # -- collection ---------------------------------------------------------------------------------
    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector):
        from ..scenario_paths import collects
        if not collects(file_path, self.state.scenario_roots):
            return None
        if self.state.suite_dir in file_path.resolve().parents:
            return ScenarioFile.from_parent(parent, path=file_path)
        # the user's file: named as the user knows it (its path from the current folder), not by pytest's rootdir
        rel = os.path.relpath(file_path, parent.config.invocation_params.dir)
        return ScenarioFile.from_parent(parent, path=file_path, nodeid=file_path.name if rel.startswith("..") else rel)

    @pytest.hookimpl(trylast=True)  # after -k, -m and other plugins: the order and the deal are of the tests that run
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list) -> None:
        ids = self.state.run.rules  # --acp-rules, known IDs (checked at configure)
        if ids:
            keep = [i for i in items if not isinstance(i, ScenarioItem) or ids & set(i.scenario.rules)]
            dropped = [i for i in items if i not in keep]
            if dropped:
                config.hook.pytest_deselected(items=dropped)
                items[:] = keep
        ahead = self.state.run_ahead
        if ahead is not None and ahead.on:  # alone first, then long turns, then the rest (run_ahead.py)
            from ..scenarios.run_ahead import order_for_running_ahead
            rank = lambda i: i.ahead_rank() if isinstance(i, ScenarioItem) else None  # noqa: E731
            items[:] = order_for_running_ahead(items, rank)
            winput = getattr(config, "workerinput", {})
            if winput.get(DEALT_KEY):  # the order the controller deals round-robin (xdist_deal.py)
                from .xdist_deal import order_for_deal
                items[:] = order_for_deal(items, rank, int(winput.get("workercount", 1)))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log):
        """Under -n with running ahead on, each worker gets its share of the tests at once (xdist_deal.py)."""
        if self.state.run_ahead is None or not self.state.run_ahead.on:
            return None
        from .xdist_deal import make_scheduler
        return make_scheduler(config, log)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        """Tell each worker whether the controller deals the tests (its order decides who gets what)."""
        from .xdist_deal import deals
        node.workerinput[DEALT_KEY] = self.state.run_ahead is not None and self.state.run_ahead.on and deals(self.config)

    # -- running ------------------------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem):
        if self.state.run_ahead is not None:  # what an xdist worker knows of what comes next (run_ahead.py)
            self.state.run_ahead.nextitem = nextitem
        return (yield)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if self.state.guard is not None:
            self.state.guard.raise_if_stopped()  # a signal whose raise was swallowed still stops the run here

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call):
        report = yield
        outcomes.attach(item, report)
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.worker:  # the report leaves for the controller: the outcome goes as JSON, once
            outcomes.to_wire(report)
            return
        outcome = outcomes.take(report)
        if outcome is not None and report.when == "call":
            record(self.state, report.nodeid, outcome)

    # -- the verdict --------------------------------------------------------------------------------
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        state = self.state
        if self.worker or session.config.option.collectonly:
            return  # xdist workers report to the controller, which judges; --collect-only judges nothing
        from ..report.write import write_reports
        if state.guard is not None:
            state.guard.sweep()  # what an interrupted test (Ctrl-C) or a killed xdist worker may have left running
        state.verdict = verdict = judge_suite(state)
        try:
            write_reports(state.run.report_dir, verdict, state.record, report_extra(state))  # json, html, badge, summary
        except OSError as e:
            session.config.get_terminal_writer().line(f"acp-conformance: could not write the report: {e}", red=True)
        stopped = stopped_by(state)
        if stopped is not None:
            session.exitstatus = stopped  # 128 + the signal, as a shell reports a process it killed
        elif state.first_contact is not None and state.first_contact["kind"] == NOT_V2:
            session.exitstatus = NOT_V2_EXIT
        elif exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
            ok = verdict.conformant and not verdict.stale_waivers  # a stale waiver fails the run
            session.exitstatus = pytest.ExitCode.OK if ok else pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl(trylast=True)  # after the run's other plugins (the fuzzer's, the budget's lines)
    def pytest_terminal_summary(self, terminalreporter, exitstatus, config: pytest.Config) -> None:
        if self.state.verdict is not None:
            write_summary(terminalreporter, config, self.state)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        # the very last line of the run is the verdict (pytest's own counts come just before it)
        state = self.state
        if state.run_ahead is not None:
            state.run_ahead.close()  # the drives no test took (an interrupted or stopped run)
        if state.test_loop is not None:
            state.test_loop.close()  # the spare no test took
        if state.guard is not None:
            state.guard.sweep()
            state.guard.uninstall()
        if state.verdict is not None:
            tr = config.pluginmanager.get_plugin("terminalreporter")
            if tr is not None:
                tr.write_line(verdict_line(state), bold=True, green=state.verdict.conformant,
                              red=not state.verdict.conformant)

    @pytest.hookimpl(trylast=True)  # the first lines of the header (pytest shows the hooks' lines reversed)
    def pytest_report_header(self, config: pytest.Config):
        r = self.state.run
        return [f"acp-conformance: {r.side} {shlex.join(r.argv)}",
                f"acp-conformance: schema {r.schema.path} (sha256 {r.schema.sha256[:12]})"]
