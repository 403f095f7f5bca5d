"""What the terminal shows at the end of a run: the rules that did not pass, and the verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..rules.findings import FAIL, WARN
from .contact import stop_reason
from .results import auth_reason, signal_name, stopped_by
from .state import SuiteState


def write_summary(terminalreporter, config: pytest.Config, state: SuiteState) -> None:
    """The verdict per rule that did not pass, the rules never exercised, and where the report is."""
    v = state.verdict
    tr = terminalreporter
    tr.section("ACP conformance")
    for rv in v.rules if state.first_contact is None else ():  # not judged: the sentence below says why
        if rv.checked and rv.status in (FAIL, WARN, "not-tested"):
            why = rv.reason or next((f.message for f in rv.findings if f.status in (FAIL, WARN)), "")
            tr.line(f"  {rv.status.upper():10} {rv.rule.id:14} {rv.rule.level:8} {why[:160]}")
        elif rv.status == "xfail" or rv.stale_waiver:
            why = ("STALE WAIVER: this rule passes now; remove it from the expected-failures file"
                   if rv.stale_waiver else rv.reason)
            tr.line(f"  {'STALE' if rv.stale_waiver else 'XFAIL':10} {rv.rule.id:14} {rv.rule.level:8} {why[:160]}",
                    red=rv.stale_waiver)
    if state.first_contact is None:
        _not_exercised_lines(tr, v)
    _driven_again_lines(tr, state)
    rd = state.run.report_dir
    tr.line(f"report: {rd / 'report.json'}  (also report.html, badge.json)")
    xml = getattr(config.option, "xmlpath", None)  # pytest's --junitxml has written its file by now
    if xml and Path(xml).is_file() and not hasattr(config, "workerinput"):
        from ..report.junit import annotate_junit
        try:
            annotate_junit(Path(xml), v)
        except (OSError, ValueError) as e:
            tr.line(f"acp-conformance: could not annotate {xml}: {e}", red=True)
    if state.first_contact is not None:
        tr.line(f"acp-conformance: {state.first_contact['sentence']}", bold=True, red=True)
    elif stop_reason(state) is not None:
        tr.line(f"acp-conformance: {stop_reason(state)['sentence']}", bold=True, red=True)
    elif state.auth_blocked:
        tr.line(f"acp-conformance: {auth_reason(state)}", bold=True, red=True)
    # the verdict's line itself is the run's very last line (pytest_unconfigure), after pytest's counts
    if state.first_contact is None:
        from ..protocol.revisions import readiness_lines
        for line in readiness_lines(v):  # the Preview rules not met yet, each with its source
            tr.line(f"  Preview readiness: {line}")
    stopped = stopped_by(state)
    if stopped is not None:
        tr.line(f"the run was stopped by {signal_name(stopped - 128)}: the tests not run are not-tested; "
                f"exit status {stopped}", bold=True, red=True)
    elif not v.conformant and not tr.stats.get("failed") and not tr.stats.get("error"):
        # pytest's closing line would read "N passed": make it carry the verdict, so nobody reads a pass
        tr.stats.setdefault("blocking rules (not conformant)", []).extend(v.blocking_failures)
        cause = ("never reached (inconclusive)" if v.inconclusive and len(v.inconclusive) == len(v.blocking_failures)
                 else "blocking")
        tr.line(f"every test passed, yet the run is NOT CONFORMANT: {len(v.blocking_failures)} rule(s) {cause}: "
                f"{', '.join(r.rule.id for r in v.blocking_failures[:12])}; exit status 1", bold=True, red=True)


def _driven_again_lines(tr, state: SuiteState) -> None:
    """The tests whose drive beside others was replaced by one alone (running ahead): their verdict is the one
    alone, which a run without running ahead would give; the first drive's trouble is said, not judged."""
    if not state.record.driven_again:
        return
    tr.line(f"  driven again alone ({len(state.record.driven_again)}; each verdict is the one of its drive alone, the "
            f"first drive ran beside other tests: --acp-run-ahead 0 runs one at a time):")
    for test, why in state.record.driven_again.items():
        tr.line(f"    {test}: {why[:200]}")


def _not_exercised_lines(tr, v) -> None:
    """The rules the target never gave a chance, grouped by what would reach them (one line per group)."""
    groups: dict[str, list[str]] = {}
    chose: dict[str, list[str]] = {}  # situations the suite creates, kept from judgement by a legal choice
    for rv in v.rules:
        if rv.checked and rv.status == "not-exercised":
            if rv.rule.reach and rv.creator != "suite":
                groups.setdefault(rv.rule.reach, []).append(rv.rule.id)
            else:
                chose.setdefault(rv.reason.removeprefix("not exercised: ")[:160], []).append(rv.rule.id)
    if not groups and not chose:
        return
    coverage = ", but --acp-require-coverage is on" if v.require_coverage else ""
    tr.line(f"  not exercised (the target never created the situation, or made a legal choice that kept the "
            f"rule from being judged; they do not block{coverage}):")
    for reach, ids in groups.items():
        tr.line(f"    {', '.join(ids)}: reached by {reach}")
    for why, ids in chose.items():
        tr.line(f"    {', '.join(ids)}: {why}")
