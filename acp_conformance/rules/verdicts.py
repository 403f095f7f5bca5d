"""Verdicts: from the findings of every test to one status per rule and one conformance answer.

* A rule's status is the worst over its findings (fail > flaky > warn > pass > not-tested > skip).
  A flaky blocking rule (failed, then passed on a rerun) counts against conformance.
* A failed SHOULD rule is a warning, and so is a failed advisory MUST (one only the upstream docs
  state, see ``catalog.py``); a failed MAY rule only a note. ``strict`` makes warnings block.
* Who creates a rule's situation (``situations.json``) decides what an unreached rule means. A blocking
  ``suite`` rule (initialize, a plain prompt, a cancel, malformed input...) that no test reached is
  ``not-tested`` and counts against conformance: the run is inconclusive, and a dead agent must not score
  100%. A ``target`` rule (tool calls, permissions, terminals, background work, a client choosing to
  cancel...) whose situation never arose is ``not-exercised``: the target never did what the rule is
  about, which is its right. It does not block unless ``require_coverage`` (certification), and a waiver
  may name it with a reason ("we never create terminals"). Coverage = checked rules exercised / checked.
  Whether the suite could create a situation is judged per run: a monitor that saw a legal choice of this
  target keep a ``suite`` rule from being judged (the older batch reading) reports it ``not-exercised``,
  with the choice as the reason, and it does not block either.
* Observed traffic (``observed=True``: ``tap`` and ``check``): nobody scripted the session, so a rule is
  pass, fail or warn where its situation arose and ``not-exercised`` everywhere else, never ``not-tested``.
* A rule the suite has no check for yet is listed as such and left out of the verdict.
* A rule whose every bound test was skipped (a capability the target does not advertise) is ``skip``;
  skipped because of a legal choice of this target (``NOT_EXERCISED_SKIP``: it kept no session for a new
  process, never made the tool call a test waits for), ``not-exercised`` with that reason, whoever creates
  the rule's situation elsewhere: whether the suite could create it is judged per run, not per rule.
* ACP revisions (``protocol/revisions.json``): a rule outside the judged revision is left out of its verdict and
  never blocks; ``compute_by_revision`` gives the selected revision's verdict (--acp-revision) with every other
  one and the Preview readiness (the Preview rules blocking there and not under base).
* Waivers (--acp-expected-failures): a waived rule that fails, is flaky or warns is ``xfail`` and does
  not count; a waived rule that passes is a stale waiver, which fails the run (not the conformance).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from ..protocol import revisions
from .catalog import TARGET, Rule, applies, load_retired, load_unchecked
from .findings import FAIL, FLAKY, INFO, NOT_EXERCISED, NOT_TESTED, PASS, SKIP, WARN, Finding, worst

XFAIL = "xfail"  # failed, and listed as an expected failure (a waiver): reported, not counted
WAIVABLE = (FAIL, FLAKY, WARN)  # statuses a waiver turns into xfail
EXERCISED = (PASS, FAIL, FLAKY, WARN, XFAIL)  # the rule's situation arose and was judged
# how a test skipped because the target never created its situation says so (the plugin writes it)
NOT_EXERCISED_SKIP = "not exercised: "


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
    creator: str = "suite"  # who creates the situation in this run (suite / target)

    @property
    def counts(self) -> bool:
        """Does this rule decide conformance?"""
        return self.checked and self.rule.blocking

    def to_json(self) -> dict[str, Any]:
        r = self.rule
        first = next((f for f in self.findings if f.status == self.status), None)
        return {
            "id": r.id, "area": r.area, "level": r.level, "side": r.side, "status": self.status,
            "blocking": r.blocking, "tier": r.tier, "checked": self.checked, "creator": self.creator, "summary": r.summary, "source": r.public_source,
            **({"note": r.note} if r.note else {}),
            "reason": self.reason or (first.message if first else ""),
            "expected": first.expected if first else "",
            "tests": self.tests,
            # what went wrong; else the findings that gave the status first (a pass before the notes)
            "evidence": [f.to_json() for f in self.findings if f.status in (FAIL, FLAKY, WARN)][:20]
                        or [f.to_json() for f in sorted(self.findings, key=lambda f: f.status != self.status)][:3],
            "waiver": self.waiver.to_json() if self.waiver is not None else None,
            "stale_waiver": self.stale_waiver,
        }


@dataclass(frozen=True)
class BlockingPolicy:
    """What blocks conformance: the one answer for every driver (scenarios, client scenarios, the fuzzer)
    and for the verdict. A failed or flaky blocking rule blocks, and so does a blocking rule no test reached
    (not-tested, in the verdict); ``strict`` (--acp-strict) makes warnings block too (a failed SHOULD or
    advisory MUST); a MAY rule never blocks. ``require_coverage`` (certification) makes an unwaived
    not-exercised rule block."""

    strict: bool = False
    require_coverage: bool = False
    revision: str | None = None  # --acp-revision: a rule of another revision never blocks (protocol/revisions.py)

    def blocks(self, rule: Rule, status: str) -> bool:
        """Does a rule with this status (already read at the rule's level) block?"""
        if not applies(rule.id, self.revision):
            return False
        if status in (FAIL, FLAKY, NOT_TESTED):
            return rule.blocking
        return self.strict and status == WARN

    def finding_blocks(self, rule: Rule | None, finding: Finding) -> bool:
        """Does this one finding fail its test? (A not-tested finding only counts in the verdict.)"""
        return (rule is not None and finding.status in (FAIL, FLAKY, WARN)
                and self.blocks(rule, level_status(rule, finding.status)))

    def blocking_findings(self, catalog: dict[str, Rule], findings: Iterable[Finding]) -> list[Finding]:
        return [f for f in findings if self.finding_blocks(catalog.get(f.rule), f)]

    def rule_blocks(self, v: RuleVerdict) -> bool:
        if not v.checked:
            return False
        if v.status == NOT_EXERCISED:
            return self.require_coverage and v.waiver is None and v.rule.level != "MAY"
        return self.blocks(v.rule, v.status)


@dataclass
class Verdict:
    rules: list[RuleVerdict]
    strict: bool = False
    require_coverage: bool = False  # certification: a not-exercised rule blocks too (unless waived)
    observed: bool = False  # judged on observed traffic (tap, check): only what happened counts
    revision: str | None = None  # the ACP revision judged (protocol/revisions.py); None: every rule
    by_revision: dict[str, "Verdict"] = field(default_factory=dict)  # every revision's verdict (compute_by_revision)
    readiness: list[RuleVerdict] = field(default_factory=list)  # Preview rules blocking that base does not

    @property
    def policy(self) -> BlockingPolicy:
        return BlockingPolicy(self.strict, self.require_coverage, self.revision)

    @property
    def blocking_failures(self) -> list[RuleVerdict]:
        policy = self.policy
        return [v for v in self.rules if policy.rule_blocks(v)]

    @property
    def inconclusive(self) -> list[RuleVerdict]:
        """Blocking rules the suite should have reached and did not (not-tested): the run proves nothing of them."""
        return [v for v in self.blocking_failures if v.status == NOT_TESTED]

    def coverage(self) -> dict[str, int]:
        """How much was proven: checked rules whose situation arose (exercised) out of all checked rules."""
        checked = [v for v in self.rules if v.checked]
        return {"checked": len(checked), "exercised": sum(1 for v in checked if v.status in EXERCISED),
                "not_exercised": sum(1 for v in checked if v.status == NOT_EXERCISED),
                "not_tested": sum(1 for v in checked if v.status == NOT_TESTED),
                "skipped": sum(1 for v in checked if v.status == SKIP)}

    @property
    def conformant(self) -> bool:
        return not self.blocking_failures

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in (PASS, FAIL, FLAKY, WARN, XFAIL, SKIP, NOT_TESTED, NOT_EXERCISED)}
        for v in self.rules:
            if v.checked:
                out[v.status] = out.get(v.status, 0) + 1
        return out

    @property
    def stale_waivers(self) -> list[RuleVerdict]:
        return [v for v in self.rules if v.stale_waiver]

    def headline(self) -> str:
        """What was proven, in a few words: ``CONFORMANT: 131 of 168 rules exercised, 0 failed``."""
        c, cov = self.counts(), self.coverage()
        # the version judged: "CONFORMANT to ACP v1", "NOT CONFORMANT to ACP v2 (preview) (inconclusive)"
        version = f" to {revisions.protocol_label(self.revision)}" if self.revision else ""
        if self.conformant:
            head = "CONFORMANT" + version + (" on the observed traffic" if self.observed else "")
        elif self.inconclusive and not any(v.status != NOT_TESTED for v in self.blocking_failures):
            head = f"NOT CONFORMANT{version} (inconclusive)"
        else:
            head = "NOT CONFORMANT" + version
        return f"{head}: {cov['exercised']} of {cov['checked']} rules exercised, {c[FAIL] + c[FLAKY]} failed"

    def summary_line(self) -> str:
        c = self.counts()
        parts = ", ".join(f"{c[s]} {s}" for s in (PASS, FAIL, FLAKY, WARN, XFAIL, NOT_TESTED, NOT_EXERCISED, SKIP)
                          if c[s])
        extra = ""
        if not self.conformant:
            ids = [v.rule.id for v in self.blocking_failures]
            extra = f"; blocking: {', '.join(ids[:8])}{' ...' if len(ids) > 8 else ''}"
        stale = self.stale_waivers
        if stale:
            extra += f"; stale waivers (these rules pass now): {', '.join(v.rule.id for v in stale)}"
        if self.revision:
            extra += f"; judged as {revisions.title(self.revision)}"
        ready = revisions.readiness_line(self)
        return f"ACP verdict: {self.headline()} ({parts}{extra})" + (f". {ready}" if ready else "")


def level_status(rule: Rule, status: str) -> str:
    """A finding's status read at its rule's level: a failed SHOULD (or advisory MUST) warns, a MAY only notes."""
    if status == FAIL and rule.warns:
        return WARN
    if status in (FAIL, FLAKY, WARN) and rule.level == "MAY":
        return INFO
    return status


def compute(catalog: dict[str, Rule], findings: Iterable[Finding], checked: set[str],
            bound_tests: dict[str, list[str]], skipped_tests: dict[str, str],
            strict: bool = False, side: str | None = None,
            not_observable: dict[str, str] | None = None, waivers: dict[str, Any] | None = None,
            require_coverage: bool = False, observed: bool = False, revision: str | None = None) -> Verdict:
    """``bound_tests``: rule -> the test ids that name it; ``skipped_tests``: test id -> reason;
    ``require_coverage``: not-exercised rules block; ``observed``: judge observed traffic (module docstring);
    ``revision``: only the rules of that ACP revision (protocol/revisions.py)."""
    not_observable = not_observable or {}
    retired = load_retired()
    unchecked = load_unchecked()
    by_rule: dict[str, list[Finding]] = {}
    for f in findings:
        by_rule.setdefault(f.rule, []).append(f)
    out = []
    for rule in catalog.values():
        if side and rule.side not in (side, "both"):
            continue
        if not applies(rule.id, revision):
            continue
        fs = by_rule.get(rule.id, [])
        tests = sorted(set(bound_tests.get(rule.id, [])) | {f.test for f in fs if f.test})
        statuses = [level_status(rule, f.status) for f in fs]
        counted = [s for s in statuses if s != INFO]
        is_checked = rule.id in checked
        if counted:
            status, reason = worst(counted), ""
            if status in (NOT_TESTED, NOT_EXERCISED):  # say why: what the monitor saw (a legal choice of the
                # target that kept the rule from being judged), and what would exercise the rule
                reason = next(f.message for f in fs if level_status(rule, f.status) == status)
        elif tests and all(t in skipped_tests for t in bound_tests.get(rule.id, [])) and bound_tests.get(rule.id):
            reasons = sorted({skipped_tests[t] for t in bound_tests[rule.id]})
            # a test skipped because of a legal choice of this target (it kept no session for a new process,
            # made no tool call...) did not make the rule inapplicable: the situation was not exercised
            status = NOT_EXERCISED if all(r.startswith(NOT_EXERCISED_SKIP) for r in reasons) else SKIP
            reason = "; ".join(reasons)
        else:
            status = NOT_TESTED
            if not is_checked and rule.id in retired:
                reason = f"retired: {retired[rule.id]}"
            elif not is_checked and rule.id in not_observable:
                reason = f"not observable on the wire: {not_observable[rule.id]}"
            elif not is_checked:
                reason = "this version of the suite has no check for this rule" + (
                    f": {unchecked[rule.id]}" if rule.id in unchecked else "")
            elif fs:
                reason = fs[0].message
            elif tests:
                reason = "the tests bound to this rule did not reach the situation it is about"
            else:
                reason = "no test exercised this rule"
        creator = rule.creator_on(side)
        if not is_checked and status == NOT_EXERCISED:
            status = NOT_TESTED
        if is_checked and (status == NOT_TESTED and (creator == TARGET or observed) or status == SKIP and observed):
            status = NOT_EXERCISED
            if observed:
                reason = "the observed traffic never reached the situation this rule is about" + (
                    f" ({reason})" if fs and reason else "")
            else:
                reason = f"the target never created the situation this rule is about ({reason})" + (
                    f"; reached by {rule.reach}" if rule.reach else "")
        rv = RuleVerdict(rule, status, is_checked, fs, tests, reason, creator=creator)
        w = (waivers or {}).get(rule.id)
        if w is not None:
            rv.waiver = w
            if status == NOT_EXERCISED:
                rv.reason = f"waived ({w.reason}): {reason}"
            elif status in WAIVABLE:
                rv.status, rv.reason = XFAIL, f"expected failure ({w.reason}): " + (reason or next(
                    (f.message for f in fs if f.status in WAIVABLE), ""))
            elif status == PASS:
                rv.stale_waiver = True
        out.append(rv)
    return Verdict(out, strict, require_coverage, observed, revision=revision)


def compute_by_revision(*args: Any, revision: str | None = None, also: tuple[str, ...] = (), **kwargs: Any) -> Verdict:
    """``compute`` under every ACP revision of the selected one's protocol (and ``also``: v1 beside v2 for observed
    sessions of both versions), from the same findings: the selected revision's verdict (it sets the exit status),
    carrying the others (``by_revision``) and the Preview readiness."""
    selected = revision if revision == revisions.V1 else revisions.check_name(revision)
    every = {r: compute(*args, revision=r, **kwargs) for r in [*revisions.same_protocol(selected), *also]}
    verdict = every[selected]
    verdict.by_revision = every
    if "base" in every and revisions.PREVIEW in every:
        verdict.readiness = revisions.readiness(every["base"], every[revisions.PREVIEW])
    return verdict
