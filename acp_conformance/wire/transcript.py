"""The transcript: every frame of a test, in both directions, in the order it happened.

It is the single record that monitors judge and reports show. A frame keeps the exact bytes of
its line (without the newline) and, beside them, the parsed JSON, so a report can quote what the
target really wrote and a monitor need not parse twice.

Direction is seen from the suite: ``sent`` is written by the suite to the target, ``received`` is
read from the target's stdout, ``event`` marks what happened to the connection (start, stdin
closed, end of output, exit, timeout). Events carry their facts in ``detail``.
"""

from __future__ import annotations

import json
from sys import intern
import time
from dataclasses import dataclass, field
from typing import Any, Callable

SENT = "sent"
RECEIVED = "received"
EVENT = "event"

# Event names (Frame.event)
EV_START = "start"  # target process started; detail: argv, cwd, pid, wall (epoch s), suite_pid, [prestarted]
EV_STDIN_CLOSED = "stdin-closed"
EV_EOF = "eof"  # target closed its stdout
EV_EXIT = "exit"  # detail: returncode, signal
EV_TIMEOUT = "timeout"  # detail: what was awaited, seconds
EV_NOTE = "note"  # detail: text (scenario step markers and the like)


@dataclass(slots=True)
class Frame:
    seq: int
    conn: int
    direction: str
    t: float
    raw: bytes = b""
    msg: Any = None
    problem: str | None = None  # why the raw line is not a JSON value (None when it parsed)
    event: str | None = None
    detail: dict[str, Any] | None = None

    def __repr__(self) -> str:
        # short on purpose: asyncio and the stdlib repr() results in passing (a task's result, an
        # error message), and the full repr of a 40 MB frame would cost hundreds of MB
        what = self.event if self.direction == EVENT else f"{len(self.raw)} bytes"
        return f"Frame(#{self.seq}, conn {self.conn}, {self.direction}, t={self.t:.3f}, {what})"

    @property
    def is_message(self) -> bool:
        return self.direction != EVENT

    def text(self, limit: int = 2000) -> str:
        """The frame as a person reads it: the raw line, cut to ``limit`` characters."""
        if self.direction == EVENT:
            return f"[{self.event}] " + (json.dumps(self.detail, sort_keys=True) if self.detail else "")
        # decode only what is shown: a 40 MB line must not be copied to quote its start
        s = self.raw[: limit * 4].decode("utf-8", errors="replace")
        return s if len(s) <= limit and len(self.raw) <= limit * 4 else s[:limit] + f"... ({len(self.raw)} bytes)"

    def to_json(self, limit: int = 4000) -> dict[str, Any]:
        d: dict[str, Any] = {"seq": self.seq, "conn": self.conn, "dir": self.direction, "t": round(self.t, 6)}
        if self.direction == EVENT:
            d["event"] = self.event
            if self.detail:
                d["detail"] = self.detail
        else:
            d["raw"] = self.text(limit)
            if self.problem:
                d["problem"] = self.problem
        return d


def members(frame: Frame) -> list[Frame]:
    """The messages a frame carries, each as a frame: a batch array's object members as views of the array's
    frame (same seq, time and bytes, ``msg`` the member), any other frame itself. What waits on a message (a
    response, an update) reads these, so a message that came inside a batch array is still seen."""
    msg = frame.msg
    if not isinstance(msg, list):
        return [frame]
    return [Frame(frame.seq, frame.conn, frame.direction, frame.t, frame.raw, item, frame.problem)
            for item in msg if isinstance(item, dict)]


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def parse_line(raw: bytes) -> tuple[Any, str | None]:
    """Parse one framed line; return (value, problem). ``problem`` is None for valid JSON.

    Strict JSON: Python's json also reads NaN, Infinity and -Infinity, which no JSON peer can write
    or must accept; a line holding them is invalid JSON like any other."""
    if not raw.strip():
        return None, "empty line"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, f"not valid UTF-8 ({e.reason} at byte {e.start})"
    try:
        value = json.loads(text, parse_constant=_not_json)
    except ValueError as e:
        return None, f"not valid JSON ({e})"
    try:
        return _shared(value), None
    except RecursionError:  # absurdly deep nesting: keep it as parsed
        return value, None


_SHORT = 64  # strings up to this length are shared between frames (ids, methods, kinds), longer are text


def _shared(value: Any) -> Any:
    """The parsed value with its keys and short strings interned.

    json.loads makes a new string object for every key of every frame; a long session repeats the
    same keys and values (``jsonrpc``, ``sessionUpdate``, the session id...) tens of thousands of
    times, and kept transcripts are what the memory of a run is made of.
    """
    if isinstance(value, dict):
        return {intern(k): _shared(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shared(v) for v in value]
    if isinstance(value, str) and len(value) <= _SHORT:
        return intern(value)
    return value


@dataclass(repr=False)
class Transcript:
    """Append-only list of frames; listeners (monitors) are told of each frame as it is added."""

    frames: list[Frame] = field(default_factory=list)
    listeners: list[Callable[[Frame], None]] = field(default_factory=list)
    t0: float = field(default_factory=time.monotonic)
    conn: int = 0

    def _add(self, frame: Frame) -> Frame:
        self.frames.append(frame)
        for listener in self.listeners:
            listener(frame)
        return frame

    def __repr__(self) -> str:
        return f"Transcript({len(self.frames)} frames)"

    def now(self) -> float:
        return time.monotonic() - self.t0

    def sent(self, raw: bytes, msg: Any) -> Frame:
        return self._add(Frame(len(self.frames), self.conn, SENT, self.now(), raw, msg))

    def received(self, raw: bytes) -> Frame:
        msg, problem = parse_line(raw)
        return self._add(Frame(len(self.frames), self.conn, RECEIVED, self.now(), raw, msg, problem))

    def event(self, name: str, **detail: Any) -> Frame:
        return self._add(Frame(len(self.frames), self.conn, EVENT, self.now(), event=name, detail=detail or None))

    def messages(self, direction: str | None = None) -> list[Frame]:
        return [f for f in self.frames if f.direction != EVENT and (direction is None or f.direction == direction)]

    def to_jsonl(self, limit: int = 4000) -> str:
        return "".join(json.dumps(f.to_json(limit), ensure_ascii=False) + "\n" for f in self.frames)
