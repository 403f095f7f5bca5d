"""The one writer of transcript files: every driver (the suite's tests, the fuzzer, replay, tap, check) writes a
test's frames here, one JSON line per frame (``Frame.to_json``), secrets masked unless the run keeps them, and
the target's stderr beside it (``NAME.stderr.txt``, where the reports look for it)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

from .redact import transcript_jsonl


def file_name(test: str) -> str:
    """A test id as a file name (what the file system takes, at most 150 characters)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", test)[:150]


def write_transcript(folder: Path, test: str, frames: Iterable, redact: bool = True,
                     stderr: str | None = None) -> Path:
    """``folder``/NAME.jsonl for the test ``test`` (NAME: ``file_name``), and NAME.stderr.txt when ``stderr``."""
    folder.mkdir(parents=True, exist_ok=True)
    name = file_name(test)
    path = folder / f"{name}.jsonl"
    path.write_text(transcript_jsonl(frames, redact=redact), encoding="utf-8")
    if stderr:
        (folder / f"{name}.stderr.txt").write_text(stderr, encoding="utf-8")
    return path
