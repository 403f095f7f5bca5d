"""The controller's side of the run: each test's outcome collected, then the verdict and the reports."""

from __future__ import annotations

from typing import Any

from ..rules.catalog import load_not_observable
from .contact import stop_reason
from .judging import LONGER_WAIT
from .outcome import TestOutcome
from .state import SuiteState


def record(state: SuiteState, test: str, outcome: TestOutcome) -> None:
    """One test's outcome into the run's state (on the controller, also under xdist)."""
    state.findings.extend(outcome.findings)
    for r in outcome.rules:
        tests = state.bound.setdefault(r, [])
        if test not in tests:
            tests.append(test)
    if outcome.skipped and not outcome.auth_blocked and not outcome.stopped:
        # a skip is "does not apply to this target"; a test stopped at authentication, or not run because the
        # run stopped, applies, and its rules stay not-tested (never conformant on what the suite could not reach)
        state.skipped[test] = outcome.skipped
    if outcome.error or outcome.harness_error:
        state.errors[test] = outcome.harness_error or outcome.error
    state.transcripts[test] = outcome.transcript
    if outcome.driven_again:
        state.driven_again[test] = outcome.driven_again
    if outcome.agent_init and state.agent_init is None:
        state.agent_init = outcome.agent_init
    if outcome.negotiated_version is not None:
        state.negotiated_version = outcome.negotiated_version
    if outcome.first_contact and state.first_contact is None:
        state.first_contact = outcome.first_contact
    if outcome.auth_blocked:
        state.auth_blocked.append(outcome.auth_blocked)
    if outcome.summary:
        state.summaries[test] = outcome.summary


def judge_suite(state: SuiteState):
    """The run's verdict over every collected outcome (the same policy as each test's)."""
    from ..rules.monitors import checked_on
    from ..rules.verdicts import compute_by_revision
    from ..rules.findings import NOT_TESTED
    r = state.run
    verdict = compute_by_revision(state.catalog, state.findings, set(checked_on(state.side)), state.bound,
                                  state.skipped, strict=r.strict, side=state.side,
                                  not_observable=load_not_observable(), waivers=r.waivers,
                                  require_coverage=r.require_coverage, revision=r.revision)
    for v in verdict.rules:  # an inconclusive rule says which of its tests could not be completed, and why
        if v.checked and v.status == NOT_TESTED:
            stuck = next((t for t in v.tests if t in state.errors), None)
            if stuck is not None:
                v.reason = (f"{v.reason}; {stuck.rsplit('::', 1)[-1]} could not be completed: "
                            f"{state.errors[stuck][:300]} (if the agent was still working: {LONGER_WAIT}, "
                            "--acp-timeout)")
    return verdict


def report_extra(state: SuiteState) -> dict[str, Any]:
    """What report.json says of the run beside the verdict: why the target was not judged, an interruption."""
    extra: dict[str, Any] = {}
    if state.first_contact is not None:  # one sentence instead of a verdict per rule
        extra = {"reason": state.first_contact["sentence"], "reason_kind": state.first_contact["kind"]}
        if state.negotiated_version is not None:
            extra["negotiated_version"] = state.negotiated_version
    elif stop_reason(state) is not None:  # the findings so far stand; the tests left were not run
        extra = {"reason": stop_reason(state)["sentence"], "reason_kind": stop_reason(state)["kind"]}
    elif state.auth_blocked:
        extra = {"reason": auth_reason(state), "reason_kind": "auth-blocked"}
    stopped = stopped_by(state)
    if stopped is not None:
        extra["interrupted"] = (f"the run was stopped by {signal_name(stopped - 128)}: the tests not run "
                                "are not-tested")
    return extra


def stopped_by(state: SuiteState) -> int | None:
    """128 + the signal that stopped the run, or None."""
    return state.guard.exit_status if state.guard is not None else None


def signal_name(signum: int) -> str:
    import signal
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def auth_reason(state: SuiteState) -> str:
    n = len(state.auth_blocked)
    return f"{state.auth_blocked[0]} ({n} test(s) stopped there: the rules they did not reach are not-tested, not failed)"


def verdict_line(state: SuiteState) -> str:
    """The run's last line: the verdict, or the one sentence why the target could not be judged."""
    if state.first_contact is not None:
        return f"ACP verdict: NOT CONFORMANT: {state.first_contact['sentence']}"
    return state.verdict.summary_line()
