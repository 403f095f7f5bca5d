"""The monitor mechanism: rules judged over the transcript, as a stream, always on.

A monitor is told of every frame as it is recorded (``on_frame``) and once more when the test is
over (``finish``). It reports findings through the shared ``MonitorContext``. Monitors know
nothing of pytest or of scenarios: a scripted run and a fuzz run feed them the same way.

``Rpc`` is the JSON-RPC reading of one frame, computed once by the context and shared by all
monitors: its kind, method, id, and, for a response, the request frame it answers.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..wire.transcript import EVENT, RECEIVED, SENT, Frame
from .catalog import load_catalog
from .findings import FAIL, INFO, NOT_TESTED, PASS, WARN, Finding

REQUEST = "request"
NOTIFICATION = "notification"
RESPONSE = "response"
BATCH = "batch"
INVALID = "invalid"  # parsed JSON that is not a JSON-RPC 2.0 message
UNPARSED = "unparsed"  # not JSON at all


def _key(value: Any) -> tuple[str, Any]:
    # JSON-RPC ids match by type and value: 1 and "1" are different ids, and True is not 1.
    # Illegal ids (arrays, objects) are keyed by their JSON text so that they never crash a monitor.
    if isinstance(value, (list, dict)):
        import json
        return (type(value).__name__, json.dumps(value, sort_keys=True))
    return (type(value).__name__, value)


def classify(msg: Any) -> str:
    if isinstance(msg, list):
        return BATCH
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        return INVALID
    if "method" in msg:
        if not isinstance(msg["method"], str):
            return INVALID
        return REQUEST if "id" in msg else NOTIFICATION
    if "id" in msg and (("result" in msg) != ("error" in msg)):
        return RESPONSE
    return INVALID


@dataclass(slots=True)
class Rpc:
    frame: Frame
    kind: str
    method: str | None = None
    id: Any = None
    params: Any = None
    result: Any = None
    error: Any = None
    request: Frame | None = None  # for a response: the request it answers (None: unknown id)
    request_rpc: "Rpc | None" = None

    @property
    def ok(self) -> bool:
        return self.kind == RESPONSE and self.error is None

    @property
    def session_id(self) -> Any:
        if isinstance(self.params, dict):
            return self.params.get("sessionId")
        return None

    @property
    def update(self) -> dict[str, Any] | None:
        """For a session/update notification: the update object."""
        if self.method == "session/update" and isinstance(self.params, dict):
            u = self.params.get("update")
            return u if isinstance(u, dict) else None
        return None

    @property
    def update_kind(self) -> str | None:
        u = self.update
        return u.get("sessionUpdate") if u else None

    @property
    def error_code(self) -> Any:
        return self.error.get("code") if isinstance(self.error, dict) else None


@dataclass
class MonitorContext:
    """Shared state of one test run: the JSON-RPC reading of frames, and the findings."""

    target_side: str = "agent"  # which side the target plays: "agent" (suite is client) or "client"
    options: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)
    # pending requests by (connection, direction of the request, id key)
    _pending: dict[tuple[int, str, tuple[str, Any]], Rpc] = field(default_factory=dict)
    _rpc: dict[int, Rpc] = field(default_factory=dict)
    monitors: list["Monitor"] = field(default_factory=list)

    # -- the stream ---------------------------------------------------------------------------
    def add_monitors(self, classes: Iterable[type["Monitor"]]) -> None:
        for cls in classes:
            self.monitors.append(cls(self))

    def feed(self, frame: Frame) -> None:
        self.frames.append(frame)
        rpc = self._read(frame) if frame.direction != EVENT else None
        for m in self.monitors:
            m.on_frame(frame, rpc)

    def finish(self) -> None:
        # monitors marked finish_last (the generic schema check) judge after the specific ones,
        # so that they can defer to a specific rule that already failed the same frame
        for m in sorted(self.monitors, key=lambda m: getattr(m, "finish_last", False)):
            m.finish()

    def rpc(self, frame: Frame) -> Rpc | None:
        return self._rpc.get(frame.seq)

    def pending(self, direction: str, conn: int | None = None) -> list[Rpc]:
        """Requests sent in ``direction`` that have no response yet."""
        return [r for (c, d, _), r in self._pending.items() if d == direction and (conn is None or c == conn)]

    def _read(self, frame: Frame) -> Rpc:
        msg = frame.msg
        if frame.problem is not None:
            rpc = Rpc(frame, UNPARSED)
        else:
            kind = classify(msg)
            rpc = Rpc(frame, kind)
            if kind in (REQUEST, NOTIFICATION):
                rpc.method = msg["method"]
                rpc.params = msg.get("params")
                rpc.id = msg.get("id")
            elif kind == RESPONSE:
                rpc.id = msg["id"]
                rpc.result = msg.get("result")
                rpc.error = msg.get("error")
        self._rpc[frame.seq] = rpc
        other = RECEIVED if frame.direction == SENT else SENT
        if rpc.kind == REQUEST and rpc.id is not None:
            self._pending.setdefault((frame.conn, frame.direction, _key(rpc.id)), rpc)
        elif rpc.kind == RESPONSE:
            req = self._pending.pop((frame.conn, other, _key(rpc.id)), None)
            if req is not None:
                rpc.request = req.frame
                rpc.request_rpc = req
                rpc.method = req.method
        return rpc

    # -- findings -----------------------------------------------------------------------------
    def report(self, rule: str, status: str, message: str, expected: str = "",
               frames: Iterable[Frame | int] = ()) -> Finding:
        seqs = [f.seq if isinstance(f, Frame) else int(f) for f in frames]
        finding = Finding(rule, status, message, expected, seqs)
        self.findings.append(finding)
        return finding


class CatalogSentences(Mapping[str, str]):
    """Rule -> what it requires: the catalog's summary. A rule's sentence lives in the catalog only, so a
    finding quotes the same expectation as ``acp-conformance rules`` and the reports."""

    def __getitem__(self, rule: str) -> str:
        return load_catalog()[rule].summary

    def __iter__(self) -> Iterator[str]:
        return iter(load_catalog())

    def __len__(self) -> int:
        return len(load_catalog())


class Monitor:
    """Base class. Subclasses list the rule IDs they judge in ``rules`` and override the hooks."""

    rules: tuple[str, ...] = ()
    # Rule -> one sentence of what it requires (from the catalog); quoted in every finding.
    expected: Mapping[str, str] = CatalogSentences()

    def __init__(self, ctx: MonitorContext):
        self.ctx = ctx

    def on_frame(self, frame: Frame, rpc: Rpc | None) -> None:  # pragma: no cover - default
        pass

    def finish(self) -> None:
        pass

    # shorthands that quote the expectation of the rule
    def passed(self, rule: str, message: str, frames: Iterable[Frame | int] = ()) -> Finding:
        return self.ctx.report(rule, PASS, message, self.expected.get(rule, ""), frames)

    def failed(self, rule: str, message: str, frames: Iterable[Frame | int] = ()) -> Finding:
        return self.ctx.report(rule, FAIL, message, self.expected.get(rule, ""), frames)

    def warned(self, rule: str, message: str, frames: Iterable[Frame | int] = ()) -> Finding:
        return self.ctx.report(rule, WARN, message, self.expected.get(rule, ""), frames)

    def noted(self, rule: str, message: str, frames: Iterable[Frame | int] = ()) -> Finding:
        return self.ctx.report(rule, INFO, message, self.expected.get(rule, ""), frames)

    def untested(self, rule: str, message: str, frames: Iterable[Frame | int] = ()) -> Finding:
        return self.ctx.report(rule, NOT_TESTED, message, self.expected.get(rule, ""), frames)
