"""Ending a run whose target cannot be judged: the first test shows it is not an ACP program, speaks
another protocol version, or answers with ids the suite never sent (rules/first_contact.py says which), so
every later test is skipped with that sentence instead of waiting out its own timeouts (a silent target, or
one whose answers match nothing: one startup timeout, not fifty).

Only before the target has ever answered initialize as a v2 peer: after that, a test whose target does
not answer is a failure of that test (a hang, a crash), judged by the rules. One exception after that: a
target whose turns never end by themselves (rules/turn_ends.py), shown by UNENDED_LIMIT tests whose turn was
still running when the suite gave up waiting for it, with no turn of the run that ended by itself; the
findings so far are kept and the rest is skipped with that sentence (TURNS_NEVER_END). The facts live as small
files in the report directory, so that pytest-xdist workers share them.
"""

from __future__ import annotations

import json
from pathlib import Path

STOP_FILE = ".acp-stop.json"  # {"kind", "sentence"}: the run's verdict before any judgement
SPOKE_FILE = ".acp-spoke-v2"  # some test got a v2 answer to initialize
UNENDED_FILE = ".acp-turns-unended"  # one line per test whose turn was still running at the suite's timeout
ENDED_FILE = ".acp-turn-ended"  # some test saw a turn end by itself
TURNS_NEVER_END = "turns-never-end"
UNENDED_LIMIT = 2  # tests of unended turns (each driven alone: run_ahead.py drives a late one again) before the stop


def reset(report_dir: Path) -> None:
    """At the start of a run (the controller): facts of an earlier run in the same directory are gone."""
    for name in (STOP_FILE, SPOKE_FILE, UNENDED_FILE, ENDED_FILE):
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


def turn_ended(report_dir: Path) -> None:
    try:
        (report_dir / ENDED_FILE).touch()
    except OSError:  # pragma: no cover
        pass


def turn_unended(report_dir: Path, test: str) -> int:
    """Counts ``test`` among those whose turn was still running at the suite's timeout; returns how many there are
    (0 once any turn of the run ended by itself: the target does end its turns, it was slow)."""
    if (report_dir / ENDED_FILE).exists():
        return 0
    path = report_dir / UNENDED_FILE
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(test.replace("\n", " ") + "\n")
        return len(set(path.read_text(encoding="utf-8").splitlines()))
    except OSError:  # pragma: no cover
        return 0
