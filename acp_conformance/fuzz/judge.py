"""Judging one fuzz example: every agent monitor over its frames, the blocking failures it found, and
the responses that answer nothing the suite sent (the awaited answer will not come).

``Judge(validator, options, stats, thresholds)`` is fed every frame (``feed``), asked for the blocking
failures found since it was last asked (``new_failures``), and told when the example ends (``finish``).
``judge_example`` does all three for the frames of a whole example.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any, Iterable

from ..protocol.validate import Validator
from ..rules.catalog import load_catalog
from ..rules.findings import Finding
from ..rules.monitor import MonitorContext
from ..rules.monitors import AGENT_MONITORS
from ..rules.monitors._common import raw_carries_id
from ..rules.reading import id_key
from ..thresholds import FUZZ, Thresholds
from .config import StepStats
from .envelope import INFORMATIONAL_NOTE, line_digest, note_digests


class Judge:
    """All agent monitors over one example's frames; blocking failures are the fuzzer's findings."""

    def __init__(self, validator: Validator, options: dict[str, Any], stats: StepStats,
                 thresholds: Thresholds = FUZZ):
        self.catalog = load_catalog()
        # the run's policy (--acp-strict, --acp-revision: a rule of another revision never fails an example)
        self.policy = thresholds.policy
        self.ctx = MonitorContext(target_side="agent", options={"validator": validator,
                                                                **thresholds.monitor_options(), **options})
        self.ctx.add_monitors(AGENT_MONITORS)
        self.stats = stats
        self.seen = 0
        self.informational: list[Finding] = []  # provoked by spec-silent envelope cases (recorded only)
        self.informational_seqs: set[int] = set()
        self.informational_ids: set[Any] = set()
        self.informational_doubles: set[float] = set()  # the numeric ids of those lines, as doubles
        self._mark_next = False
        self._informational: set[str] = set()  # digests of the lines an informational note announced
        # ids the suite wrote, per connection (parsed lines), and the lines it wrote that did not parse:
        # a response carrying an id that is in neither answers nothing the suite sent
        self._written: dict[int, set[tuple[str, str]]] = {}
        self._unparsed: dict[int, list[bytes]] = {}
        self.stray: str | None = None  # such a response arrived (the awaited answer will not come)
        self.finished = False
        self.on_stray = None  # called (in the event loop) when it does: the live target stops waiting

    def _provoked_by_informational(self, f: Finding) -> bool:
        frames = self.ctx.frames
        for seq in f.frames:
            if seq in self.informational_seqs:
                return True
            fr = frames[seq] if seq < len(frames) else None
            if fr is not None and fr.direction == "received" and isinstance(fr.msg, dict) and "id" in fr.msg \
                    and "method" not in fr.msg and self._answers_informational(fr.msg["id"]):
                return True
        return False

    def _answers_informational(self, rid: Any) -> bool:
        """An id of an informational line, or the same number as a reader that holds numbers as
        doubles writes it back (any JavaScript peer: 2**53 + 1 comes back as 2**53, -0.0 as 0)."""
        if id_key(rid) in self.informational_ids:
            return True
        if not isinstance(rid, (int, float)) or isinstance(rid, bool):
            return False
        try:
            return float(rid) in self.informational_doubles
        except OverflowError:
            return False

    def feed(self, frame) -> None:
        t = time.perf_counter()
        if frame.event == "note" and str((frame.detail or {}).get("text", "")).startswith(INFORMATIONAL_NOTE):
            digests = note_digests(frame.detail["text"])
            if digests is None:
                self._mark_next = True  # a note of an older scenario file: the next line written
            else:
                self._informational.update(digests)
        elif frame.direction == "sent" and (self._mark_next or (self._informational and
                                                                line_digest(frame.raw) in self._informational)):
            if self._mark_next:
                self._mark_next = False
            else:
                self._informational.discard(line_digest(frame.raw))
            self.informational_seqs.add(frame.seq)
            for item in frame.msg if isinstance(frame.msg, list) else [frame.msg]:
                if isinstance(item, dict) and "id" in item:
                    self.informational_ids.add(id_key(item["id"]))
                    if isinstance(item["id"], (int, float)) and not isinstance(item["id"], bool):
                        with contextlib.suppress(OverflowError):
                            self.informational_doubles.add(float(item["id"]))
        self.ctx.feed(frame)
        if frame.direction == "sent":
            self._note_written(frame)
        elif frame.direction == "received" and self.stray is None:
            self._check_stray(frame)
        self.stats.t_monitors += time.perf_counter() - t

    def _note_written(self, frame) -> None:
        msg = frame.msg
        if frame.problem is not None or not isinstance(msg, (dict, list)):
            self._unparsed.setdefault(frame.conn, []).append(frame.raw)
            return
        ids = self._written.setdefault(frame.conn, set())
        for item in msg if isinstance(msg, list) else [msg]:
            if isinstance(item, dict) and "id" in item:
                ids.add(id_key(item["id"]))

    def _check_stray(self, frame) -> None:
        """A response whose id the suite never wrote on this connection (not even inside a line that
        did not parse) cannot answer anything: ERR-004 fails when the connection is judged, and
        whatever the suite awaits now will not come. Stop waiting (instead of timing out) so that a
        target that mangles ids costs the fuzzer no timeout per example."""
        msg = frame.msg
        if not isinstance(msg, dict) or "method" in msg or msg.get("id") is None \
                or ("result" in msg) == ("error" in msg):
            return
        rid = msg["id"]
        if id_key(rid) in self._written.get(frame.conn, ()) or self._answers_informational(rid):
            return
        if any(raw_carries_id(raw, rid) for raw in self._unparsed.get(frame.conn, ())):
            return
        self.stray = (f"a response with id {json.dumps(rid)[:80]} arrived (frame #{frame.seq}), an id the suite "
                      "never sent on this connection")
        if self.on_stray is not None:
            self.on_stray()

    def finish(self) -> None:
        """The end of the example: the monitors that judge whole connections judge now (once)."""
        if self.finished:
            return
        self.finished = True
        t = time.perf_counter()
        self.ctx.finish()
        dt = time.perf_counter() - t
        self.stats.t_monitors += dt
        self.stats.t_finish += dt

    def blocking(self, findings: list[Finding]) -> list[Finding]:
        """The findings that fail the example: what the run's policy blocks (as for a scenario), except those
        provoked by an envelope case the spec leaves open (recorded as informational)."""
        out = []
        for f in self.policy.blocking_findings(self.catalog, findings):
            if self._provoked_by_informational(f):
                self.informational.append(f)
                continue
            out.append(f)
        return out

    def new_failures(self) -> list[Finding]:
        new = self.ctx.findings[self.seen:]
        self.seen = len(self.ctx.findings)
        return self.blocking(new)



def failure_message(problem: str | None, stray: bool, bad: list[Finding]) -> str:
    """One account of a failed example: the step that broke (if the target died, stopped answering or
    answered what it was not asked) and the blocking rules that failed."""
    if problem is None:
        return f"{bad[0].rule} failed: {bad[0].message}" if bad else "the example failed"
    named = "; ".join(f"{f.rule} failed: {f.message}" for f in bad[:3])
    what = "the target answered what it was never asked" if stray else "the target stopped answering or died"
    return f"{what}: {problem}" + (f" ({named})" if named else "")



def judge_example(frames: Iterable[Any], validator: Validator, options: dict[str, Any] | None = None,
                  thresholds: Thresholds = FUZZ) -> tuple[list[Finding], list[Finding]]:
    """The frames of one whole example (wire.transcript.Frame, in order) judged by every agent monitor:
    (the blocking failures, the failures provoked by spec-silent envelope cases, recorded only)."""
    judge = Judge(validator, dict(options or {}), StepStats(), thresholds)
    for frame in frames:
        judge.feed(frame)
    judge.finish()
    return judge.new_failures(), list(judge.informational)
