"""What a fuzz run or a replay found, as a person reads it (the console script and the pytest item).

Only text: the results come from ``run.fuzz`` / ``run.replay`` (or the client-side equivalents,
which return the same types); nothing here runs anything.
"""

from __future__ import annotations

import shlex

from .run import FuzzResult, ReplayResult, time_split

_SPLIT_NAMES = {"generation": "generation", "validation_and_monitors": "validation and monitors",
                "target": "target", "process_start_stop": "process start/stop"}


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def replay_command(scenario: object, side: str, argv: list[str]) -> str:
    """The command line that reruns a counterexample against the same target."""
    return f"acp-conformance replay {shlex.quote(str(scenario))} --{side}-cmd {shlex.quote(shlex.join(argv))}"


def fuzz_summary(result: FuzzResult, side: str, argv: list[str]) -> list[str]:
    """A few lines: what ran, how fast, where the time went, and the finding (if any) with how to rerun it."""
    lines = [f"acp-conformance fuzz: {side} {shlex.join(argv)}",
             f"  seed {result.seed}: {result.examples} examples, {result.steps} steps in {result.seconds:.1f} s "
             f"({result.steps_per_second:.0f} steps/s){'; the budget ended the run' if result.budget_spent else ''}"]
    split = time_split(result)
    if split:
        lines.append("  time: " + ", ".join(f"{_SPLIT_NAMES[k]} {v:.0%}" for k, v in split.items()))
    if result.failure is None:
        lines.append("no finding: no blocking rule failed, and the target kept answering"
                     if result.steps else "no finding, but no step ran (the budget was spent before the first example)")
    elif result.first_contact is not None:  # no ACP v2 agent: the one sentence, as the suite says it
        lines.append(f"NOT JUDGED: {result.first_contact.sentence}")
        if result.transcript_path is not None:
            lines.append(f"  transcript: {result.transcript_path}")
    else:
        lines.append(f"FINDING: {result.failure}")
        if result.rules:
            lines.append(f"  rules: {', '.join(result.rules)}")
        if result.stderr:
            tail = result.stderr.strip().splitlines()[-8:]
            lines.append("  target stderr (tail):")
            lines.extend(f"    | {ln}" for ln in tail)
        if result.scenario_path is not None:
            s = result.stats
            found = (f"found after {s.found_after:.1f} s in an example of {_n(s.found_steps, 'step')}, "
                     if s is not None and s.found_after is not None else "")
            runs = f" ({_n(s.reductions, 'rerun')})" if s is not None and s.reductions else ""
            lines.append(f"  {found}shrunk to {_n(len(result.step_log), 'step')}{runs}: {result.scenario_path}")
            lines.append(f"  rerun it: {replay_command(result.scenario_path, side, argv)}")
        if result.transcript_path is not None:
            lines.append(f"  transcript: {result.transcript_path}")
    if result.report_path is not None:
        lines.append(f"  report: {result.report_path}")
    return lines


def replay_summary(path: object, result: ReplayResult, side: str, argv: list[str]) -> list[str]:
    lines = [f"acp-conformance replay: {path} against {side} {shlex.join(argv)}"]
    for name, status, detail in getattr(result, "scenarios", None) or []:  # each scenario of the file
        what = {"failed": f": {detail}", "skipped": f": {detail}"}.get(status, "")
        lines.append(f"  {status.upper():8} {name}{what}")
    contact = getattr(result, "first_contact", None)
    if contact is not None:
        lines.append(f"NOT JUDGED: {contact.sentence}")
        return lines
    if getattr(result, "report_path", None):
        lines.append(f"  report: {result.report_path}  (also report.html, badge.json)")
    if not result.failed:
        outcomes = getattr(result, "scenarios", None) or []
        skipped = sum(1 for _n, status, _d in outcomes if status == "skipped")
        if outcomes and skipped == len(outcomes):
            lines.append("SKIPPED: no scenario of the file could run against this target (see the reasons above)")
        elif skipped:
            lines.append(f"PASSED: the scenarios that ran did so to their end and no blocking rule failed "
                         f"({skipped} skipped, {result.frames} frames)")
        else:
            lines.append(f"PASSED: the scenario ran to its end and no blocking rule failed ({result.frames} frames)")
        return lines
    if not result.failures and result.error:  # nothing was reproduced: the run itself broke off
        lines.append(f"FAILED: the scenario could not be completed, and no rule failed: {result.error}")
        return lines
    lines.append("REPRODUCED: the scenario fails" + (f" ({result.frames} frames)" if result.frames else ""))
    lines.extend(f"  {f}" for f in result.failures[:10])
    if len(result.failures) > 10:
        lines.append(f"  ... and {len(result.failures) - 10} more")
    if result.error:
        lines.append(f"  the scenario could not be completed: {result.error}")
    return lines
