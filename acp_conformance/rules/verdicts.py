"""Verdicts: from the findings of every test to one status per rule and one conformance answer.

* A rule's status is the worst over its findings (fail > flaky > warn > pass > not-tested > skip).
  A flaky blocking rule (failed, then passed on a rerun) counts against conformance.
* A failed SHOULD rule is a warning, and so is a failed advisory MUST (one only the upstream docs
  state, see ``catalog.py``); a failed MAY rule only a note. ``strict`` makes warnings block.
* A blocking rule this suite checks that no test exercised is ``not-tested`` and counts against
  conformance: a dead agent must not score 100%.
* A checked rule whose situation only the target can create (``Rule.creator == "target"``: tool calls,
  permission requests, terminals...) that never arose is ``not-exercised``: listed with what would
  reach it, not blocking, and left out of the coverage figure's numerator. ``require_coverage``
  (certification) makes it block; a waiver naming it (``we never create terminals``) waives it.
* A rule the suite has no check for yet is listed as such and left out of the verdict.
* A rule whose every bound test was skipped (a capability the target does not advertise) is ``skip``.
* Waivers (--acp-expected-failures): a waived rule that fails, is flaky or warns is ``xfail`` and does
  not count; a waived rule that passes is a stale waiver, which fails the run (not the conformance).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from .catalog import Rule
from .findings import FAIL, FLAKY, INFO, NOT_EXERCISED, NOT_TESTED, PASS, SKIP, WARN, Finding, worst

XFAIL = "xfail"  # failed, and listed as an expected failure (a waiver): reported, not counted
WAIVABLE = (FAIL, FLAKY, WARN)  # statuses a waiver turns into xfail


@dataclass
class RuleVerdict:
    rule: Rule
    status: str
    checked: bool
    findings: list[Finding] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    reason: str = ""
    waiver: Any = None  # the Waiver (rule, reason, link) naming this rule, if any
    stale_waiver: bool = False  # waived, yet it passed
    exercised: bool = False  # its situation arose: some finding judged it (pass, fail, warn...)

    @property
    def counts(self) -> bool:
        """Does this rule decide conformance?"""
        return self.checked and self.rule.blocking

    def to_json(self) -> dict[str, Any]:
        r = self.rule
        first = next((f for f in self.findings if f.status == self.status), None)
        return {
            "id": r.id, "area": r.area, "level": r.level, "side": r.side, "status": self.status,
            "blocking": r.blocking, "tier": r.tier, "checked": self.checked, "summary": r.summary, "source": r.source,
            "reason": self.reason or (first.message if first else ""),
            "expected": first.expected if first else "",
            "tests": self.tests,
            # what went wrong; else the findings that gave the status first (a pass before the notes)
            "evidence": [f.to_json() for f in self.findings if f.status in (FAIL, FLAKY, WARN)][:20]
                        or [f.to_json() for f in sorted(self.findings, key=lambda f: f.status != self.status)][:3],
            "waiver": self.waiver.to_json() if self.waiver is not None else None,
            "stale_waiver": self.stale_waiver,
            "creator": r.creator or None,
            "reach": r.reach or None,
        }


@dataclass
class Verdict:
    rules: list[RuleVerdict]
    strict: bool = False
    require_coverage: bool = False  # certification: a not-exercised rule blocks too

    @property
    def blocking_failures(self) -> list[RuleVerdict]:
        bad = ({FAIL, FLAKY, NOT_TESTED} | ({WARN} if self.strict else set())
               | ({NOT_EXERCISED} if self.require_coverage else set()))
        return [v for v in self.rules if v.checked and (v.rule.blocking or (self.strict and v.status == WARN))
                and v.status in bad]

    @property
    def conformant(self) -> bool:
        return not self.blocking_failures

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in (PASS, FAIL, FLAKY, WARN, XFAIL, SKIP, NOT_TESTED, NOT_EXERCISED)}
        for v in self.rules:
            if v.checked:
                out[v.status] = out.get(v.status, 0) + 1
        return out

    def coverage(self) -> dict[str, int]:
        """How many checked rules' situations arose (``exercised``) out of the checked rules (``checked``)."""
        checked = [v for v in self.rules if v.checked]
        return {"exercised": sum(1 for v in checked if v.exercised), "checked": len(checked)}

    @property
    def not_exercised(self) -> list[RuleVerdict]:
        return [v for v in self.rules if v.checked and v.status == NOT_EXERCISED]

    @property
    def stale_waivers(self) -> list[RuleVerdict]:
        return [v for v in self.rules if v.stale_waiver]

    def summary_line(self) -> str:
        c = self.counts()
        checked = sum(1 for v in self.rules if v.checked)
        head = "CONFORMANT" if self.conformant else "NOT CONFORMANT"
        parts = ", ".join(f"{c[s]} {s}" for s in (PASS, FAIL, FLAKY, WARN, XFAIL, NOT_TESTED, NOT_EXERCISED, SKIP)
                          if c[s])
        cov = self.coverage()
        failed = c[FAIL] + c[FLAKY]
        extra = ""
        if not self.conformant:
            ids = [v.rule.id for v in self.blocking_failures]
            extra = f"; blocking: {', '.join(ids[:8])}{' ...' if len(ids) > 8 else ''}"
        stale = self.stale_waivers
        if stale:
            extra += f"; stale waivers (these rules pass now): {', '.join(v.rule.id for v in stale)}"
        return (f"ACP verdict: {head}: {cov['exercised']} of {cov['checked']} rules exercised, {failed} failed"
                f" ({checked} rules checked: {parts}{extra})")


def _level_status(rule: Rule, status: str) -> str:
    if status == FAIL and rule.warns:
        return WARN
    if status in (FAIL, FLAKY, WARN) and rule.level == "MAY":
        return INFO
    return status


def compute(catalog: dict[str, Rule], findings: Iterable[Finding], checked: set[str],
            bound_tests: dict[str, list[str]], skipped_tests: dict[str, str],
            strict: bool = False, side: str | None = None,
            not_observable: dict[str, str] | None = None, waivers: dict[str, Any] | None = None,
            require_coverage: bool = False) -> Verdict:
    """``bound_tests``: rule -> the test ids that name it; ``skipped_tests``: test id -> reason."""
    not_observable = not_observable or {}
    by_rule: dict[str, list[Finding]] = {}
    for f in findings:
        by_rule.setdefault(f.rule, []).append(f)
    out = []
    for rule in catalog.values():
        if side and rule.side not in (side, "both"):
            continue
        fs = by_rule.get(rule.id, [])
        tests = sorted(set(bound_tests.get(rule.id, [])) | {f.test for f in fs if f.test})
        statuses = [_level_status(rule, f.status) for f in fs]
        counted = [s for s in statuses if s != INFO]
        is_checked = rule.id in checked
        if counted:
            status, reason = worst(counted), ""
            if status == NOT_TESTED:  # say why: what the monitor saw, and what would exercise the rule
                reason = next(f.message for f in fs if _level_status(rule, f.status) == NOT_TESTED)
        elif tests and all(t in skipped_tests for t in bound_tests.get(rule.id, [])) and bound_tests.get(rule.id):
            status = SKIP
            reason = "; ".join(sorted({skipped_tests[t] for t in bound_tests[rule.id]}))
        else:
            status = NOT_TESTED
            if not is_checked and rule.id in not_observable:
                reason = f"not observable on the wire: {not_observable[rule.id]}"
            elif not is_checked:
                reason = "this version of the suite has no check for this rule"
            elif fs:
                reason = fs[0].message
            elif tests:
                reason = "the tests bound to this rule did not reach the situation it is about"
            else:
                reason = "no test exercised this rule"
        if status == NOT_TESTED and is_checked and rule.creator == "target":
            status = NOT_EXERCISED  # only the target could have created the situation, and it never did
            reason = f"{reason}; would be reached by {rule.reach}" if rule.reach else reason
        rv = RuleVerdict(rule, status, is_checked, fs, tests, reason)
        rv.exercised = is_checked and (status in (PASS, FAIL, FLAKY, WARN) or INFO in statuses)
        w = (waivers or {}).get(rule.id)
        if w is not None:
            rv.waiver = w
            if status == NOT_EXERCISED:
                rv.status, rv.reason = XFAIL, f"waived ({w.reason}): {reason}"
            elif status in WAIVABLE:
                rv.status, rv.reason = XFAIL, f"expected failure ({w.reason}): " + (reason or next(
                    (f.message for f in fs if f.status in WAIVABLE), ""))
            elif status == PASS:
                rv.stale_waiver = True
        out.append(rv)
    return Verdict(out, strict, require_coverage)
