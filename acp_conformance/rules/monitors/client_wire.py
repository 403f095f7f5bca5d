"""Client side: what the client writes to its agent's stdin is only valid ACP messages, one per line."""

from __future__ import annotations

from ...wire.transcript import EVENT, RECEIVED, Frame
from ..monitor import INVALID, Monitor, Rpc, classify

LIFECYCLE = ("initialize", "auth/login", "session/new", "session/resume", "session/prompt")


class ClientWireMonitor(Monitor):
    side = "client"
    rules = ("CLIENT-025", "CLIENT-026")

    def __init__(self, ctx):
        super().__init__(ctx)
        self.lines = 0
        self.bad025 = False
        self.bad026 = False

    def on_frame(self, frame: Frame, rpc: Rpc | None) -> None:
        if frame.direction != RECEIVED:
            return
        self.lines += 1
        if frame.problem is not None:
            self.bad025 = True
            self.failed("CLIENT-025", f"the client wrote a line that is {frame.problem}: {frame.text(160)!r} (a "
                        "message spread over several lines, or output that is not ACP).", [frame])
            return
        items = frame.msg if isinstance(frame.msg, list) else [frame.msg]
        if isinstance(frame.msg, list) and not frame.msg or any(classify(x) == INVALID for x in items):
            self.bad025 = True
            self.failed("CLIENT-025", f"the client wrote a line that is not a JSON-RPC 2.0 message: "
                        f"{frame.text(160)!r}.", [frame])
        elif (frame.detail or {}).get("unterminated"):
            self.bad025 = True
            self.failed("CLIENT-025", f"the client's last line was not terminated by \\n: {frame.text(120)!r}.",
                        [frame])
        if isinstance(frame.msg, list):
            life = [x.get("method") for x in frame.msg if isinstance(x, dict) and x.get("method") in LIFECYCLE]
            if life:
                self.bad026 = True
                self.warned("CLIENT-026", f"the client sent {life[0]!r} inside a batch.", [frame])

    def finish(self) -> None:
        if self.lines and not self.bad025:
            self.passed("CLIENT-025", f"all {self.lines} line(s) the client wrote were single JSON-RPC messages.")
        if self.lines and not self.bad026:
            self.passed("CLIENT-026", "the client sent no lifecycle-sensitive message inside a batch.")


_ = EVENT
