"""The reports of observed sessions (``tap``, ``check``): the usual report.json, report.html, badge.json and
transcripts, judged with observed statuses, naming both programs and which side broke each rule; JUnit on
request (one testcase per rule, since no pytest run stands behind these reports). Each side of each session is
one test of the run's record (run_record.py), rendered like any run's (report/write.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ..report.json_report import not_judged_reason
from ..rules.findings import Finding
from ..rules.verdicts import Verdict
from ..run_record import TAP, RunRecord, SessionRecord, TestRecord, judge
from ..thresholds import Thresholds

__all__ = ["SessionRecord", "compute_observed", "not_judged_reason", "observed_revision", "verdict_line",
           "write_observed_reports"]


def observed_revision(sessions: list[SessionRecord], revision: str | None) -> str | None:
    """The revision whose verdict an observed run reports: v1 when every judged session negotiated version 1,
    else the v2 revision asked for (--acp-revision)."""
    from ..protocol.revisions import V1
    judged = [s for s in sessions if not s.not_judged]
    return V1 if judged and all(s.protocol == 1 for s in judged) else revision


def compute_observed(findings: list[Finding], strict: bool = False, revision: str | None = None,
                     also: tuple[str, ...] = ()) -> Verdict:
    """The verdict of observed findings (one test holding them all); ``also``: other revisions computed beside."""
    record = RunRecord(TAP, "tap", [], None, Thresholds(strict=strict, revision=revision), also=also)
    record.add(TestRecord("observed", findings=list(findings)))
    return judge(record)


def write_observed_reports(report_dir: Path, sessions: list[SessionRecord], schema,
                           thresholds: Thresholds = Thresholds(), redact: bool = True, junitxml: Path | None = None,
                           extra: dict[str, Any] | None = None, driver: str = TAP) -> tuple[Verdict, dict[str, Any]]:
    """``thresholds``: the run's, as its sessions were judged with; ``extra``: facts beside the verdict in
    report.json (tap's own)."""
    from ..report.redact import _mask_fields, redact_data, redact_outcome, redact_sentence
    from ..report.transcripts import write_transcript
    from ..report.write import write_reports
    selected = observed_revision(sessions, thresholds.revision)
    # sessions of both versions: the v2 verdict sets the exit status, the v1 verdict is reported beside it
    also = ("v1",) if selected != "v1" and any(s.protocol == 1 and not s.not_judged for s in sessions) else ()
    record = RunRecord(driver, "tap", sessions[0].command if sessions else [], schema,
                       replace(thresholds, revision=selected), redact=redact, sessions=sessions, also=also)
    for s in sessions:
        if redact:  # the findings' sentences and the two programs' initialize facts, masked like the frames
            secrets = redact_outcome(s.findings, None, s.frames)
            s.client, s.agent = (redact_data(_mask_fields(x), secrets) if x is not None else None
                                 for x in (s.client, s.agent))
        stderr = (redact_sentence(s.stderr, secrets) if redact else s.stderr) if s.stderr else None
        path = str(write_transcript(report_dir / "transcripts", s.name, s.frames, redact=redact, stderr=stderr))
        for side in ("agent", "client"):  # each side is a test of its own, both in the session's transcript
            test = f"{s.name} {side}"
            record.add(TestRecord(test, findings=[f for f in s.findings if f.test == test], transcript=path))
    record.agent_init = sessions[0].agent if sessions else None  # (as redacted)
    verdict = judge(record)
    data = write_reports(report_dir, verdict, record, top=extra, junitxml=junitxml)
    return verdict, data


def verdict_line(verdict: Verdict, sessions: list[SessionRecord]) -> str:
    """The verdict's line for observed sessions: NOT JUDGED when none spoke version 2."""
    reason = not_judged_reason(sessions)
    return f"ACP verdict: NOT JUDGED: {reason}" if reason else verdict.summary_line()
