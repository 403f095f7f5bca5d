"""The controller's side of the run: each test's outcome collected, then the verdict and the reports."""

from __future__ import annotations

from typing import Any

from ..run_record import SUITE, RunRecord, TestRecord, judge
from .contact import stop_reason
from .judging import LONGER_WAIT
from .options import RunConfig
from .outcome import TestOutcome
from .state import SuiteState


def new_record(run: RunConfig) -> RunRecord:
    """The run's record, empty: each test's outcome is added on the controller (``record``)."""
    return RunRecord(SUITE, run.side, list(run.argv), run.schema, run.thresholds, redact=not run.no_redact,
                     waivers=run.waivers, waivers_file=run.waivers_file,
                     incomplete_hint=f"{LONGER_WAIT}, --acp-timeout")


def record(state: SuiteState, test: str, outcome: TestOutcome) -> None:
    """One test's outcome into the run's record (on the controller, also under xdist)."""
    # a skip is "does not apply to this target"; a test stopped at authentication, or not run because the
    # run stopped, applies, and its rules stay not-tested (never conformant on what the suite could not reach)
    applies = not outcome.auth_blocked and not outcome.stopped
    state.record.add(TestRecord(test, list(outcome.rules), list(outcome.findings), outcome.transcript,
                                skipped=outcome.skipped if applies else None,
                                error=outcome.harness_error or outcome.error or None,
                                driven_again=outcome.driven_again or None, summary=list(outcome.summary or [])))
    if outcome.agent_init and state.record.agent_init is None:
        state.record.agent_init = outcome.agent_init
    if outcome.negotiated_version is not None:
        state.negotiated_version = outcome.negotiated_version
    if outcome.first_contact and state.first_contact is None:
        state.first_contact = outcome.first_contact
    if outcome.auth_blocked:
        state.auth_blocked.append(outcome.auth_blocked)


def judge_suite(state: SuiteState):
    """The run's verdict over every recorded test (run_record.judge: the same policy as each test's)."""
    return judge(state.record)


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
