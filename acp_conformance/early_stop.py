"""Ending a run whose target cannot be judged: the first test shows it is not an ACP program, speaks
another protocol version, or answers with ids the suite never sent (rules/first_contact.py says which), so
every later test is skipped with that sentence instead of waiting out its own timeouts (a silent target, or
one whose answers match nothing: one startup timeout, not fifty).

Only before the target has ever answered initialize as a v2 peer: after that, a test whose target does
not answer is a failure of that test (a hang, a crash), judged by the rules. The two facts live as small
files in the report directory, so that pytest-xdist workers share them.
"""

from __future__ import annotations

import json
from pathlib import Path

STOP_FILE = ".acp-stop.json"  # {"kind", "sentence"}: the run's verdict before any judgement
SPOKE_FILE = ".acp-spoke-v2"  # some test got a v2 answer to initialize


def reset(report_dir: Path) -> None:
    """At the start of a run (the controller): facts of an earlier run in the same directory are gone."""
    for name in (STOP_FILE, SPOKE_FILE):
        try:
            (report_dir / name).unlink()
        except OSError:
            pass


def spoke_v2(report_dir: Path) -> None:
    try:
        (report_dir / SPOKE_FILE).touch()
    except OSError:  # pragma: no cover - the report directory was checked writable at configure
        pass


def has_spoken_v2(report_dir: Path) -> bool:
    return (report_dir / SPOKE_FILE).exists()


def stop(report_dir: Path, kind: str, sentence: str) -> None:
    path = report_dir / STOP_FILE
    if not path.exists():  # the first reason stays
        try:
            path.write_text(json.dumps({"kind": kind, "sentence": sentence}), encoding="utf-8")
        except OSError:  # pragma: no cover
            pass


def stopped(report_dir: Path) -> dict | None:
    """The reason the run stopped ({"kind", "sentence"}), or None."""
    try:
        data = json.loads((report_dir / STOP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("sentence") else None
