"""The judge of one run, whatever drove it (an agent scenario, a client scenario, the fuzzer).

``judge_run`` takes what a driver observed (the monitors' findings, the runner's result, the frames)
and returns the test's outcome (what the controller collects for the verdict) and its decision (pass,
fail, skip, expected failure). What blocks is the run's ``BlockingPolicy`` (rules/verdicts.py), the
same that decides the verdict, so that a test and the verdict never disagree on what blocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ..rules.findings import Finding
from ..rules.verdicts import NOT_EXERCISED_SKIP
from ..wire.transcript import Frame
from .contact import contact_text
from .outcome import AcpFailure, TestOutcome
from .state import SuiteState


@dataclass
class RunFacts:
    """What a driver hands to the judge about one finished run."""

    test: str  # the pytest node id
    rules: list[str]  # the rules the test exists to exercise
    findings: list[Finding]  # the monitors' findings (only the rules this side judges; secrets masked)
    result: Any = None  # the runner's RunResult (None: the driver ran no scenario runner, the fuzzer)
    frames: list[Frame] = field(default_factory=list)
    transcript: str | None = None
    contact: Any = None  # a FirstContact: the target cannot be judged at all (contact.py)
    failure: str | None = None  # the driver's own account of a failure no finding explains (the fuzzer's)
    summary: list[str] = field(default_factory=list)  # lines for the terminal summary
    target_may_decline: bool = False  # a timeout awaiting what only the target decides is not-exercised
    driven_again: str | None = None  # the verdict is a drive alone's, which replaced one beside others (run_ahead)


@dataclass
class Decision:
    """How the test ends: ``pass``, ``fail``, ``skip`` or ``xfail``, with its message."""

    kind: str
    message: str = ""

    def enact(self) -> None:
        if self.kind == "fail":
            raise AcpFailure(self.message)
        if self.kind == "skip":
            pytest.skip(self.message)
        if self.kind == "xfail":
            pytest.xfail(self.message)


def _fail(message: str) -> Decision:
    return Decision("fail", message)


def judge_run(state: SuiteState, facts: RunFacts) -> tuple[TestOutcome, Decision]:
    """The outcome and the decision of one finished run (see the module docstring)."""
    for f in facts.findings:
        f.test = facts.test
    outcome = _outcome(facts)
    return outcome, _decide(state, facts, outcome)


def _outcome(facts: RunFacts) -> TestOutcome:
    r, contact = facts.result, facts.contact
    return TestOutcome(
        findings=facts.findings, rules=list(facts.rules), transcript=facts.transcript, summary=facts.summary,
        error=getattr(r, "error", None), skipped=getattr(r, "skipped", None),
        harness_error=getattr(r, "harness_error", None), agent_init=getattr(r, "agent_init", None),
        endings=list(getattr(r, "endings", None) or []), auth_blocked=getattr(r, "auth_blocked", None),
        negotiated_version=contact.version if contact is not None else None,
        first_contact={"kind": contact.kind, "sentence": contact.sentence} if contact is not None else None,
        driven_again=facts.driven_again)


def _decide(state: SuiteState, facts: RunFacts, outcome: TestOutcome) -> Decision:
    result = facts.result
    if outcome.harness_error:
        return _fail(f"HARNESS ERROR (a defect of the suite, not of the target): {outcome.harness_error}")
    if facts.contact is not None:
        return _fail(contact_text(facts.contact, result, facts.transcript or ""))
    if facts.failure:
        return _fail(facts.failure)
    blocking, waived = _waive(state, state.run.policy.blocking_findings(state.catalog, facts.findings))
    if outcome.skipped and not blocking:
        return Decision("skip", outcome.skipped)
    if not blocking and facts.target_may_decline and _target_never_did_it(state, facts.rules, result):
        return Decision("skip", f"{NOT_EXERCISED_SKIP}the target never did what this scenario waits for "
                                f"({' '.join(facts.rules)}): {outcome.error}")
    if blocking:
        return _fail(explain(state, blocking, result, facts.frames, facts.transcript or ""))
    if outcome.error and _ran_out_of_time(result):
        # nothing it saw blocks and the target was still there: not a failure (a turn longer than the wait is
        # legal); its rules stay not-tested, and the skip says what to change
        return Decision("skip", incomplete(state, outcome.error, result))
    if outcome.error:  # the target went away, or a step was refused: the test says how
        return _fail(explain(state, blocking, result, facts.frames, facts.transcript or ""))
    if waived:
        return Decision("xfail", _waived_reason(state, waived))
    return Decision("pass")


INCOMPLETE = "incomplete: "  # how a test whose scenario ran out of time, and saw nothing blocking, ends


def _ran_out_of_time(result) -> bool:
    """The scenario stopped at a wait's (or the test's) timeout while the target was still running."""
    return (getattr(result, "error_kind", None) in ("timeout", "test-timeout")
            and not getattr(result, "target_gone", False))


# what the user can change when a scenario ran out of time while the agent was still working
LONGER_WAIT = "a prompt option whose turn ends sooner (--acp-long-prompt, --acp-tool-prompt, ...), or a longer wait"


def incomplete(state: SuiteState, error: str, result) -> str:
    """The skip reason of a run that ran out of time, with what the user can change. A test fails only where a
    finding blocks (pytest's outcome and the verdict agree); its unreached rules stay not-tested."""
    r = state.run
    wait = (f"--acp-test-timeout, now {r.test_timeout:g} s" if result.error_kind == "test-timeout"
            else f"--acp-timeout, now {r.timeout:g} s")
    return (f"{INCOMPLETE}the scenario could not be completed and no finding blocks: {error}; if the agent was "
            f"still working (a turn longer than the wait): {LONGER_WAIT} ({wait})")


def _target_never_did_it(state: SuiteState, rules: list[str], result) -> bool:
    """The scenario waited for something that only the target decides to do (a tool call, a permission
    request, background work...) and it never came: the target's right, not a failure. Either the await
    that ended it was for such an update, or it ended on an await's timeout and every rule the scenario
    exists for is target-created (a dead or garbling target is still a failure)."""
    kind = getattr(result, "error_kind", None)
    if result is None or not result.error or not rules or kind not in ("timeout", "target-never"):
        return False
    if kind == "target-never":  # it waited for a tool call, a terminal, a requires_action...
        return True
    from ..rules.catalog import TARGET
    return all(r in state.catalog and state.catalog[r].creator_on(state.side) == TARGET for r in rules)


def _waive(state: SuiteState, failures: list[Finding]) -> tuple[list[Finding], list[Finding]]:
    """(the failures that count, those of rules listed in --acp-expected-failures)."""
    waivers = state.run.waivers
    return [f for f in failures if f.rule not in waivers], [f for f in failures if f.rule in waivers]


def _waived_reason(state: SuiteState, waived: list[Finding]) -> str:
    """The xfail reason of a test whose only blocking failures are waived (JUnit: a skipped pytest.xfail)."""
    parts = []
    for rule in dict.fromkeys(f.rule for f in waived):
        first = next(f for f in waived if f.rule == rule)
        parts.append(f"{rule} waived ({state.run.waivers[rule].reason}): {first.message}")
    return "expected failure: " + " | ".join(parts)


def explain(state: SuiteState, failures: list[Finding], result, frames: list[Frame], transcript: str) -> str:
    """The failure message: each blocking finding with its expectation, frames and public source."""
    from ..report.redact import frame_text
    redact = not state.run.no_redact
    by_seq = {f.seq: f for f in frames}
    lines = []
    for f in failures:
        rule = state.catalog[f.rule]
        lines.append(f"{f.rule} ({rule.level}) failed")
        if f.expected:
            lines.append(f"  expected: {f.expected}")
        lines.append(f"  observed: {f.message}")
        for seq in f.frames[:6]:
            fr = by_seq.get(seq)
            if fr is not None:
                arrow = {"sent": "suite -> target", "received": "target -> suite"}.get(fr.direction, "event")
                lines.append(f"  frame #{seq} [{fr.t:.3f}s, {arrow}]: {frame_text(fr, 400, redact)}")
        lines.append(f"  spec: {rule.public_source}")
        if rule.note:
            lines.append(f"  note: {rule.note}")
    if result is not None and result.error:
        lines.append(f"the scenario could not be completed: {result.error}")
    if result is not None and result.stderr and any(result.stderr):
        tail = result.stderr[-1][-1500:]
        lines.append("target stderr (tail):\n" + "\n".join("  | " + ln for ln in tail.splitlines()[-15:]))
    lines.append(f"transcript: {transcript}")
    return "\n".join(lines)
