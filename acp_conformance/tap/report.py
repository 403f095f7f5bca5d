"""The reports of observed sessions (``tap``, ``check``): the usual report.json, report.html, badge.json and
transcripts, judged with observed statuses, naming both programs and which side broke each rule; JUnit on
request (one testcase per rule, since no pytest run stands behind these reports)."""

from __future__ import annotations

import json
import re
import shlex
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..rules.findings import FAIL, FLAKY, WARN, Finding
from ..rules.verdicts import Verdict

SIDE_NAMES = {"agent": "the agent", "client": "the client (editor)"}


@dataclass
class SessionRecord:
    """What the reports need of one judged session."""

    name: str
    frames: list
    findings: list[Finding]
    client: dict[str, Any] | None
    agent: dict[str, Any] | None
    command: list[str] = field(default_factory=list)  # the agent's command line (tap), or []
    source: str = ""  # the file it was read from (check)
    end: str = ""  # how it ended
    stderr: str = ""  # the agent's stderr (tap), kept beside the transcript
    not_judged: str = ""  # the session negotiated a version the suite does not judge: why no rules were applied
    protocol: int = 2  # the version the session negotiated: whose rules judged it


class _State:
    """The few facts ``build_json_report`` reads of a pytest run, for observed sessions."""

    def __init__(self, schema, sessions: list[SessionRecord], transcripts: dict[str, str], redact: bool):
        self.side = "tap"
        from ..report.json_report import ReportedRun
        self.run = ReportedRun(sessions[0].command if sessions else [], schema, no_redact=not redact)
        self.agent_init = sessions[0].agent if sessions else None
        self.transcripts = transcripts
        self.skipped: dict[str, str] = {}
        self.errors: dict[str, str] = {}
        self.driven_again: dict[str, str] = {}  # (running ahead is the pytest suite's)


def observed_revision(sessions: list[SessionRecord], revision: str | None) -> str | None:
    """The revision whose verdict an observed run reports: v1 when every judged session negotiated version 1,
    else the v2 revision asked for (--acp-revision)."""
    from ..protocol.revisions import V1
    judged = [s for s in sessions if not s.not_judged]
    return V1 if judged and all(s.protocol == 1 for s in judged) else revision


def compute_observed(findings: list[Finding], strict: bool = False, revision: str | None = None,
                     also: tuple[str, ...] = ()) -> Verdict:
    from ..rules.catalog import load_catalog, load_not_observable
    from ..rules.monitors import checked_on
    from ..rules.verdicts import compute_by_revision
    checked = set(checked_on("agent")) | set(checked_on("client"))
    return compute_by_revision(load_catalog(), findings, checked, {}, {}, strict=strict,
                               not_observable=load_not_observable(), observed=True, revision=revision, also=also)


def _name(part: dict[str, Any] | None) -> str:
    info = (part or {}).get("info")
    if isinstance(info, dict) and info.get("name"):
        return f"{info.get('title') or info['name']} {info.get('version') or ''}".strip()
    return "unnamed"


def _file_name(test: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", test)[:150]


def write_observed_reports(report_dir: Path, sessions: list[SessionRecord], schema, strict: bool = False,
                           redact: bool = True, junitxml: Path | None = None,
                           extra: dict[str, Any] | None = None,
                           revision: str | None = None) -> tuple[Verdict, dict[str, Any]]:
    from ..report.badge import write_badge
    from ..report.html import write_html_report
    from ..report.json_report import build_json_report
    from ..report.redact import _mask_fields, redact_data, redact_outcome, redact_sentence, transcript_jsonl
    report_dir.mkdir(parents=True, exist_ok=True)
    tdir = report_dir / "transcripts"
    tdir.mkdir(exist_ok=True)
    transcripts: dict[str, str] = {}
    findings: list[Finding] = []
    for s in sessions:
        if redact:  # the findings' sentences and the two programs' initialize facts, masked like the frames
            secrets = redact_outcome(s.findings, None, s.frames)
            s.client, s.agent = (redact_data(_mask_fields(x), secrets) if x is not None else None
                                 for x in (s.client, s.agent))
        path = tdir / f"{_file_name(s.name)}.jsonl"
        path.write_text(transcript_jsonl(s.frames, redact=redact), encoding="utf-8")
        if s.stderr:  # where the reports look for a test's stderr: beside its transcript
            text = redact_sentence(s.stderr, secrets) if redact else s.stderr
            path.with_suffix(".stderr.txt").write_text(text, encoding="utf-8")
        for side in ("agent", "client"):
            transcripts[f"{s.name} {side}"] = str(path)
        findings += s.findings
    selected = observed_revision(sessions, revision)
    # sessions of both versions: the v2 verdict sets the exit status, the v1 verdict is reported beside it
    also = ("v1",) if selected != "v1" and any(s.protocol == 1 and not s.not_judged for s in sessions) else ()
    verdict = compute_observed(findings, strict, selected, also)
    data = build_json_report(verdict, _State(schema, sessions, transcripts, redact))
    first = sessions[0] if sessions else SessionRecord("", [], [], None, None)
    data["target"] = {"side": "tap", "command": f"{_name(first.client)} \u21c4 {_name(first.agent)}"
                      + (f"  ({shlex.join(first.command)})" if first.command else ""),
                      "info": {"client": (first.client or {}).get("info"), "agent": (first.agent or {}).get("info")},
                      "protocolVersion": (first.agent or {}).get("protocolVersion"),
                      "capabilities": (first.agent or {}).get("capabilities")}
    data["sessions"] = [{"name": s.name, "source": s.source or None, "command": shlex.join(s.command) or None,
                         "client": s.client, "agent": s.agent, "frames": sum(1 for f in s.frames if f.is_message),
                         "end": s.end or None} for s in sessions]
    by_rule = {rv.rule.id: rv for rv in verdict.rules}
    for entry in data["rules"]:
        bad = sorted({f.test.rsplit(" ", 1)[-1] for f in by_rule[entry["id"]].findings
                      if f.status in (FAIL, FLAKY, WARN) and f.test})
        entry["broken_by"] = bad
        if bad and entry.get("reason"):
            entry["reason"] = f"broken by {' and '.join(SIDE_NAMES.get(b, b) for b in bad)}: {entry['reason']}"
    data["verdict"]["observed"] = True
    reason = not_judged_reason(sessions)
    if reason:  # no session spoke v2: nothing was judged, which is no pass
        data["verdict"].update(conformant=False, reason=reason, reason_kind="not-v2")
    for entry, s in zip(data["sessions"], sessions):
        if s.not_judged:
            entry["not_judged"] = s.not_judged
    if extra:
        data.update(extra)
    path = report_dir / "report.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)
    write_html_report(report_dir / "report.html", data)
    write_badge(report_dir / "badge.json", data)
    if junitxml is not None:
        write_junit(junitxml, data)
    return verdict, data


def not_judged_reason(sessions: list[SessionRecord]) -> str:
    """The one sentence when no session was judged because each speaks another protocol version, else ""."""
    if sessions and all(s.not_judged for s in sessions):
        return sessions[0].not_judged
    return ""


def verdict_line(verdict: Verdict, sessions: list[SessionRecord]) -> str:
    """The verdict's line for observed sessions: NOT JUDGED when none spoke version 2."""
    reason = not_judged_reason(sessions)
    return f"ACP verdict: NOT JUDGED: {reason}" if reason else verdict.summary_line()


def write_junit(path: Path, data: dict[str, Any]) -> Path:
    """One testcase per checked rule: failed (blocking fail/flaky, or any of them with --strict), skipped
    (not exercised), else passed; a warning stays a pass with its text in system-out."""
    blocking = set(data["verdict"].get("blocking") or [])
    suite = ET.Element("testsuite", name="acp-conformance observed session")
    n = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for r in data["rules"]:
        if not r.get("checked"):
            continue
        n["tests"] += 1
        case = ET.SubElement(suite, "testcase", classname=f"acp.{r['area']}", name=f"{r['id']} ({r['level']})")
        ev = next((e for e in r.get("evidence", []) if e.get("status") == r["status"]), {})
        text = f"expected: {ev.get('expected') or r.get('expected') or r['summary']} observed: {r.get('reason', '')}"
        if r["id"] in blocking:
            n["failures"] += 1
            ET.SubElement(case, "failure", message=text[:1000]).text = json.dumps(ev, ensure_ascii=False)
        elif r["status"] == "not-exercised":
            n["skipped"] += 1
            ET.SubElement(case, "skipped", message=r.get("reason", ""))
        elif r["status"] in ("warn", "fail", "flaky"):
            ET.SubElement(case, "system-out").text = text
    for k, v in n.items():
        suite.set(k, str(v))
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
    return path
