"""Suite runs made once per test session, also under pytest-xdist.

A module fixture runs once per xdist worker that gets a test of the module: with ``-n 2`` the suite runs of
tests/test_reports.py would be made twice. ``once_per_session`` makes them once: the first worker makes
them in a directory all workers of the session share (the parent of their temporary directories), the
others wait on a lock and read the same runs back. Without xdist it simply makes them.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any, Callable

from suite_run import SuiteRun


def _dump(value: Any) -> Any:
    if isinstance(value, SuiteRun):
        return {"__run__": {"returncode": value.returncode, "output": value.output,
                            "report_dir": str(value.report_dir), "junit": str(value.junit)}}
    if isinstance(value, Path):
        return {"__path__": str(value)}
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value


def _load(value: Any) -> Any:
    if isinstance(value, dict) and "__run__" in value:
        d = value["__run__"]
        report_dir = Path(d["report_dir"])
        report_file = report_dir / "report.json"
        report = json.loads(report_file.read_text()) if report_file.exists() else None
        return SuiteRun(d["returncode"], d["output"], report, report_dir, Path(d["junit"]))
    if isinstance(value, dict) and "__path__" in value:
        return Path(value["__path__"])
    if isinstance(value, dict):
        return {k: _load(v) for k, v in value.items()}
    return value


def once_per_session(tmp_path_factory, key: str, produce: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """``produce(directory)`` -> runs (SuiteRun, Path or plain values by name), made once per session."""
    uid = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not uid:
        return produce(tmp_path_factory.mktemp(key))
    shared = tmp_path_factory.getbasetemp().parent / f"{key}-{uid}"
    shared.mkdir(exist_ok=True)
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other workers wait here until the runs are made
        done = shared / "runs.json"
        if done.exists():
            return _load(json.loads(done.read_text()))
        runs = produce(shared / "work")
        done.write_text(json.dumps(_dump(runs)))
        return runs
