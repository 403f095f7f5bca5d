"""Every report of a run, written at the end of the session: report.json, report.html, badge.json and,
on GitHub Actions, the step summary. The plugin calls write_reports; each writer reads the report data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .badge import write_badge
from .html import write_html_report
from .json_report import write_json_report
from .summary import append_step_summary


def write_reports(report_dir: Path, verdict, state, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    path = write_json_report(report_dir / "report.json", verdict, state)
    data = json.loads(path.read_text(encoding="utf-8"))
    if extra:  # facts the plugin adds to the verdict (a v1 agent)
        data["verdict"].update(extra)
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    write_html_report(report_dir / "report.html", data)
    write_badge(report_dir / "badge.json", data)
    append_step_summary(data)
    return data
