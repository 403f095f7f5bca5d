"""stdout hygiene: every line the target writes is a JSON-RPC 2.0 message (or a batch of them)."""

from __future__ import annotations

from ...wire.transcript import RECEIVED, Frame
from ..monitor import NOTIFICATION, REQUEST, RESPONSE, Monitor, Rpc, classify

_OK = (REQUEST, NOTIFICATION, RESPONSE)


class TransportMonitor(Monitor):
    rules = ("TRANSPORT-003",)
    expected = {
        "TRANSPORT-003": "The agent writes nothing to stdout but JSON-RPC 2.0 messages, one per line: no banners, "
                         "logs or prompts, not even before initialize.",
    }
    max_findings = 5  # per status; the rest is counted in one summary finding

    def __init__(self, ctx):
        super().__init__(ctx)
        self.lines = 0
        self.counts = {"fail": 0, "warn": 0}
        self.extra = {"fail": [], "warn": []}

    def on_frame(self, frame: Frame, rpc: Rpc | None) -> None:
        if frame.direction != RECEIVED:
            return
        self.lines += 1
        if frame.problem is not None:
            if not frame.raw.strip():
                self._report("warn", f"the target wrote an empty line to stdout (t={frame.t:.2f}, "
                             f"{len(frame.raw)} byte(s)).", frame)
            else:
                self._report("fail", f"the target wrote a line that is {frame.problem}: {self._quote(frame)}",
                             frame)
            return
        msg = frame.msg
        if isinstance(msg, list):
            if not msg:
                self._report("warn", f"the target wrote an empty batch [] (t={frame.t:.2f}); JSON-RPC says to "
                             "write nothing instead.", frame)
                return
            bad = [i for i, x in enumerate(msg) if classify(x) not in _OK]
            if bad:
                self._report("fail", f"the target wrote a batch whose member(s) {bad[:5]} are not JSON-RPC 2.0 "
                             f"messages: {self._quote(frame)}", frame)
            return
        kind = classify(msg)
        if kind not in _OK:
            self._report("fail", f"the target wrote JSON that is not a JSON-RPC 2.0 request, notification or "
                         f"response: {self._quote(frame)}", frame)

    @staticmethod
    def _quote(frame: Frame) -> str:
        s = frame.raw.decode("utf-8", errors="replace")
        return repr(s if len(s) <= 200 else s[:200] + "...")

    def _report(self, status: str, message: str, frame: Frame) -> None:
        self.counts[status] += 1
        if self.counts[status] <= self.max_findings:
            (self.failed if status == "fail" else self.warned)("TRANSPORT-003", message, [frame])
        else:
            self.extra[status].append(frame.seq)

    def finish(self) -> None:
        for status, seqs in self.extra.items():
            if seqs:
                what = "non-JSON-RPC" if status == "fail" else "empty"
                (self.failed if status == "fail" else self.warned)(
                    "TRANSPORT-003", f"{len(seqs)} more {what} line(s) on stdout (not listed one by one).", seqs[:20])
        if self.lines and not self.counts["fail"] and not self.counts["warn"]:
            self.passed("TRANSPORT-003", f"all {self.lines} line(s) the target wrote to stdout were JSON-RPC 2.0 "
                        "messages.")
