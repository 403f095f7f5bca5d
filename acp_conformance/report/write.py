"""Every report of a run, written at the end of the session: report.json, report.html, badge.json and,
on GitHub Actions, the step summary. The plugin calls write_reports; each writer reads the report data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .badge import write_badge
from .html import write_html_report
from .json_report import write_json_report
from .summary import append_step_summary


def write_reports(report_dir: Path, verdict, state, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    # facts the plugin adds to the verdict (a v1 agent): in the data before it is written, which is written once
    data = write_json_report(report_dir / "report.json", verdict, state, extra)
    write_html_report(report_dir / "report.html", data)
    write_badge(report_dir / "badge.json", data)
    append_step_summary(data)
    return data
