"""report.json: the verdict, one entry per catalog rule with its evidence, and the target's identity."""

from __future__ import annotations

import json
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import SPEC_REVISION, __version__
from ..protocol import revisions


@dataclass(frozen=True)
class ReportedRun:
    """What the report reads of a run's configuration, for runs outside pytest (a replay, observed traffic);
    the plugin's ``RunConfig`` has the same names."""

    argv: list[str]
    schema: Any
    no_redact: bool = False
    waivers_file: str | None = None


def _stderr_path(transcript: str | None) -> str | None:
    """The target's stderr of a test sits beside its transcript (only when it wrote any)."""
    if not transcript or not transcript.endswith(".jsonl"):
        return None
    p = Path(transcript[: -len(".jsonl")] + ".stderr.txt")
    return str(p) if p.is_file() else None


def build_json_report(verdict, state) -> dict[str, Any]:
    run = state.run  # the run's configuration (plugin/options.py RunConfig, or a replay's)
    init = state.agent_init or {}
    rules = []
    for rv in verdict.rules:
        entry = rv.to_json()
        entry["revisions"] = revisions.rule_revisions(rv.rule.id)
        entry["transcripts"] = sorted({state.transcripts[t] for t in rv.tests if state.transcripts.get(t)})
        rules.append(entry)
    return {
        "suite": {"name": "acp-conformance", "version": __version__},
        "spec": {"revision": revisions.label(verdict.revision) if getattr(verdict, "revision", None) else SPEC_REVISION},
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "schema": {"path": str(run.schema.path), "revision": run.schema.revision, "sha256": run.schema.sha256},
        "target": {"side": state.side,
                   "command": shlex.join(run.argv), "info": init.get("info", init.get("agentInfo")),
                   "protocolVersion": init.get("protocolVersion"),
                   "capabilities": init.get("capabilities", init.get("agentCapabilities"))},  # v2's names, else v1's
        "verdict": {"conformant": verdict.conformant, "strict": verdict.strict, "counts": verdict.counts(),
                    "blocking": [v.rule.id for v in verdict.blocking_failures],
                    "stale_waivers": [v.rule.id for v in getattr(verdict, "stale_waivers", [])],
                    "summary": verdict.summary_line(), "headline": verdict.headline(),
                    "coverage": verdict.coverage(), "require_coverage": verdict.require_coverage,
                    "inconclusive": [v.rule.id for v in verdict.inconclusive],
                    **revision_fields(verdict)},
        "redacted": not run.no_redact,
        "waivers_file": run.waivers_file,
        "tests": [{"id": t, "transcript": p, "stderr": _stderr_path(p), "skipped": state.skipped.get(t),
                   "error": state.errors.get(t), "driven_again": state.driven_again.get(t)}
                  for t, p in sorted(state.transcripts.items())],
        "rules": rules,
    }


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


def write_json_report(path: Path, verdict, state, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """report.json, built once in memory (``extra``: facts the plugin adds to the verdict) and written once;
    the data, which the other reports render."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = build_json_report(verdict, state)
    if extra:
        data["verdict"].update(extra)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)
    return data
