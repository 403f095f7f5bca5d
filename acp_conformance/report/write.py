"""Every report of a run, rendered once from its record and verdict, in memory: report.json, report.html,
badge.json, the per-rule JUnit of a run no pytest stands behind (``junitxml``: tap, check) and, on GitHub
Actions, the step summary. Every driver calls ``write_reports``; each writer reads the one report data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..run_record import RunRecord
from .badge import write_badge
from .html import write_html_report
from .json_report import build_json_report, write_json_report
from .summary import append_step_summary


def write_reports(report_dir: Path, verdict, record: RunRecord, extra: dict[str, Any] | None = None,
                  top: dict[str, Any] | None = None, junitxml: Path | None = None) -> dict[str, Any]:
    """``extra``: facts the driver adds to the verdict (why the target was not judged, an interruption);
    ``top``: facts it adds to the report beside the verdict (tap's)."""
    data = build_json_report(verdict, record)
    data["verdict"].update(extra or {})
    data.update(top or {})
    write_json_report(report_dir / "report.json", data)
    write_html_report(report_dir / "report.html", data)
    write_badge(report_dir / "badge.json", data)
    if junitxml is not None:
        from .junit import write_rule_junit
        write_rule_junit(junitxml, data)
    if not record.observed:  # (the observed reports never had one: an editor's session is no CI job)
        append_step_summary(data)
    return data
