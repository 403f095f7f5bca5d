"""report.json: the verdict, one entry per catalog rule with its evidence, and the target's identity, built
from the run's record (run_record.py) and its verdict; observed sessions (tap, check) add what they are."""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import Any

from .. import SPEC_REVISION, __version__
from ..protocol import revisions
from ..rules.findings import FAIL, FLAKY, WARN
from ..run_record import RunRecord, SessionRecord

SIDE_NAMES = {"agent": "the agent", "client": "the client (editor)"}


def _stderr_path(transcript: str | None) -> str | None:
    """The target's stderr of a test sits beside its transcript (only when it wrote any)."""
    if not transcript or not transcript.endswith(".jsonl"):
        return None
    p = Path(transcript[: -len(".jsonl")] + ".stderr.txt")
    return str(p) if p.is_file() else None


def build_json_report(verdict, record: RunRecord) -> dict[str, Any]:
    init = record.agent_init or {}
    transcripts, skipped, errors, driven_again = record.transcripts, record.skipped, record.errors, record.driven_again
    rules = []
    for rv in verdict.rules:
        entry = rv.to_json()
        entry["revisions"] = list(rv.rule.revisions)
        entry["transcripts"] = sorted({transcripts[t] for t in rv.tests if transcripts.get(t)})
        rules.append(entry)
    data = {
        "suite": {"name": "acp-conformance", "version": __version__},
        "spec": {"revision": revisions.label(verdict.revision) if getattr(verdict, "revision", None) else SPEC_REVISION},
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "schema": {"path": str(record.schema.path), "revision": record.schema.revision,
                   "sha256": record.schema.sha256},
        "target": {"side": record.side,
                   "command": shlex.join(record.argv), "info": init.get("info", init.get("agentInfo")),
                   "protocolVersion": init.get("protocolVersion"),
                   "capabilities": init.get("capabilities", init.get("agentCapabilities"))},  # v2's names, else v1's
        "verdict": {"conformant": verdict.conformant, "strict": verdict.strict, "counts": verdict.counts(),
                    "blocking": [v.rule.id for v in verdict.blocking_failures],
                    "stale_waivers": [v.rule.id for v in getattr(verdict, "stale_waivers", [])],
                    "summary": verdict.summary_line(), "headline": verdict.headline(),
                    "coverage": verdict.coverage(), "require_coverage": verdict.require_coverage,
                    "inconclusive": [v.rule.id for v in verdict.inconclusive],
                    **revision_fields(verdict)},
        "redacted": record.redact,
        "waivers_file": record.waivers_file,
        "tests": [{"id": t, "transcript": p, "stderr": _stderr_path(p), "skipped": skipped.get(t),
                   "error": errors.get(t), "driven_again": driven_again.get(t)}
                  for t, p in sorted(transcripts.items())],
        "rules": rules,
    }
    if record.observed:
        _observed(data, verdict, record.sessions)
    return data


def _observed(data: dict[str, Any], verdict, sessions: list[SessionRecord]) -> None:
    """Observed sessions: both programs named, the sessions, which side broke each rule, and no pass for a
    run where no session spoke version 2."""
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


def not_judged_reason(sessions: list[SessionRecord]) -> str:
    """The one sentence when no session was judged because each speaks another protocol version, else ""."""
    if sessions and all(s.not_judged for s in sessions):
        return sessions[0].not_judged
    return ""


def _name(part: dict[str, Any] | None) -> str:
    info = (part or {}).get("info")
    if isinstance(info, dict) and info.get("name"):
        return f"{info.get('title') or info['name']} {info.get('version') or ''}".strip()
    return "unnamed"


def revision_fields(verdict) -> dict[str, Any]:
    """The revision judged, every revision's verdict and the Preview readiness (protocol/revisions.py); none for
    a verdict computed without revisions."""
    if not getattr(verdict, "revision", None):
        return {}
    return {"protocol": revisions.protocol_of(verdict.revision), "revision": verdict.revision, "revision_title": revisions.title(verdict.revision),
            "revisions": {name: {"title": revisions.title(name), "conformant": v.conformant,
                                 "headline": v.headline(), "blocking": [r.rule.id for r in v.blocking_failures]}
                          for name, v in verdict.by_revision.items()},
            "preview_readiness": revisions.readiness_json(verdict)}


def write_json_report(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """report.json, the data built once in memory (``build_json_report``), written once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)
    return data
