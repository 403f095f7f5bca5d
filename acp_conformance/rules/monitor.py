"""The monitor mechanism: rules judged over the transcript, as a stream, always on.

A monitor is told of every frame as it is recorded (``on_frame``) and once more when the test is
over (``finish``). It reports findings through the shared ``MonitorContext``. Monitors know
nothing of pytest or of scenarios: a scripted run and a fuzz run feed them the same way.

The context owns the single reading of the stream (``reading.py``): ``Rpc`` is the reading of one
frame, computed once and shared by all monitors (its kind, its method, its messages). Over it, the
per-connection session model (``sessions.py``, ``ctx.sessions.conn(n)``): the sessions a connection
knows, how and when, their ends, resumes, states and turns, computed on first use.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..protocol.schema import Schema, cached_schema
from ..wire.transcript import Frame
from .catalog import load_catalog
from .findings import FAIL, INFO, NOT_EXERCISED, NOT_TESTED, PASS, WARN, Finding
# the reading's vocabulary, re-exported: monitors import it from here
from .reading import BATCH, INVALID, NOTIFICATION, REQUEST, RESPONSE, UNPARSED, Reading, Rpc, classify  # noqa: F401
from .sessions import SessionModel

# The project's own tests set this so that a monitor's crash fails them with its traceback, rather than
# becoming a not-tested finding that a test could overlook.
RAISE_ENV = "ACP_CONFORMANCE_MONITOR_ERRORS"


@dataclass
class MonitorContext:
    """Shared state of one test run: the reading of the stream, and the findings."""

    target_side: str = "agent"  # which side the target plays: "agent" (suite is client) or "client"
    # the protocol version judged: 2 or 1 (the run's, fixed), or None: each connection by the version its
    # initialize negotiated (tap, check). A monitor judges the connections of its own ``protocol`` only.
    protocol: int | None = 2
    options: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)
    reading: Reading = field(default_factory=Reading)  # the one reading of the stream, for every monitor
    monitors: list["Monitor"] = field(default_factory=list)
    # monitors that raised, and where: they are fed no more, and their rules end not-tested (a bug in the
    # suite must not cost the target every other finding of the test)
    crashed: dict[int, str] = field(default_factory=dict)
    _sessions: SessionModel | None = field(default=None, repr=False)
    _conn_protocol: dict[int, int] = field(default_factory=dict, repr=False)
    _held: dict[int, list] = field(default_factory=dict, repr=False)  # a connection's frames until its version is known

    @property
    def sessions(self) -> SessionModel:
        """The session model of every connection, over the reading (each computed when first asked)."""
        if self._sessions is None:
            self._sessions = SessionModel(self.reading, self.target_side)
        return self._sessions

    @property
    def schema(self) -> Schema:
        """The schema of the run (``--acp-schema``): the one the validator was built from."""
        validator = self.options.get("validator")
        return validator.schema if validator is not None else cached_schema(None)

    # -- the stream ---------------------------------------------------------------------------
    def add_monitors(self, classes: Iterable[type["Monitor"]]) -> None:
        for cls in classes:
            if self.protocol is None or getattr(cls, "protocol", 2) == self.protocol:
                self.monitors.append(cls(self))

    def feed(self, frame: Frame) -> None:
        self.frames.append(frame)
        rpc = self.reading.read(frame)
        proto = self._protocol_of(frame, rpc)
        if proto is None:  # the initialize exchange of a connection whose version is not known yet
            self._held.setdefault(frame.conn, []).append((frame, rpc))
            return
        for f, r in self._held.pop(frame.conn, []) + [(frame, rpc)]:
            self._deliver(f, r, proto)

    def _deliver(self, frame: Frame, rpc: Rpc | None, proto: int) -> None:
        for m in self.monitors:
            if getattr(m, "protocol", 2) != proto:
                continue
            try:
                m.on_frame(frame, rpc)
            except Exception as e:  # noqa: BLE001 - one monitor's bug must not end the reading for all
                self._crash(m, e, f"frame #{frame.seq}", [frame])

    def _protocol_of(self, frame: Frame, rpc: Rpc | None) -> int | None:
        """The version connection ``frame.conn`` negotiated (protocol/versions.py), None while its initialize
        is unanswered; a connection that opens with anything else is version 2's."""
        if self.protocol is not None:
            return self.protocol
        known = self._conn_protocol.get(frame.conn)
        if known is not None:
            return known
        if rpc is None or (rpc.kind == REQUEST and rpc.method == "initialize"):
            return None
        if rpc.kind == RESPONSE and rpc.method == "initialize":
            from ..protocol.versions import negotiated
            v = negotiated(rpc.msgs[0].msg if rpc.msgs else None)
            if v is None:
                return None  # an error answer: the next initialize decides
            self._conn_protocol[frame.conn] = v
            return v
        self._conn_protocol[frame.conn] = 2
        return 2

    def connection_protocol(self, conn: int) -> int:
        """The version a connection is judged by (2 until its initialize negotiated another)."""
        return self.protocol if self.protocol is not None else self._conn_protocol.get(conn, 2)

    def finish(self) -> None:
        for conn in list(self._held):  # initialize never answered: judged as version 2 (the default)
            for f, r in self._held.pop(conn):
                self._deliver(f, r, self._conn_protocol.get(conn, 2))
        # monitors marked finish_last (the generic schema check) judge after the specific ones,
        # so that they can defer to a specific rule that already failed the same frame
        for m in sorted(self.monitors, key=lambda m: getattr(m, "finish_last", False)):
            try:
                m.finish()
            except Exception as e:  # noqa: BLE001
                self._crash(m, e, "the end of the test")

    def _crash(self, monitor: "Monitor", error: Exception, where: str, frames: list[Frame] = ()) -> None:
        if os.environ.get(RAISE_ENV) == "raise":
            raise error
        # a new list: feed() is iterating the old one
        self.monitors = [m for m in self.monitors if m is not monitor]
        self.crashed[id(monitor)] = where
        what = f"{type(error).__name__}: {error}"[:300]
        for rule in monitor.rules:
            monitor.untested(rule, f"not judged: acp-conformance's {type(monitor).__name__} failed on {where} "
                                   f"({what}). This is a bug in the suite, not a finding about the target; "
                                   "please report it with this test's transcript.", frames)

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

    def not_exercised(self, rule: str, message: str, frames: Iterable[Frame | int] = ()) -> Finding:
        """The situation arose but a legal choice of this target kept the rule from being judged (the older
        batch reading, a session it does not keep for this form of resume): not-exercised, never blocking."""
        return self.ctx.report(rule, NOT_EXERCISED, message, self.expected.get(rule, ""), frames)
