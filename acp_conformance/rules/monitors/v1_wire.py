"""ACP v1 over JSON-RPC 2.0 (https://agentclientprotocol.com/protocol/v1/transports, extensibility; JSON-RPC 2.0):
one response per request, -32601 for a method the agent does not know, nothing but messages on stdout."""

from __future__ import annotations

from ...wire.transcript import RECEIVED, SENT
from ..monitor import INVALID, UNPARSED, Rpc
from ._common import js
from ._v1 import V1Monitor, error_of

# the methods the suite sends that no agent knows (the v1 scenarios' unknown methods)
UNKNOWN_PREFIXES = ("_conformance/", "conformance/")


class V1WireMonitor(V1Monitor):
    rules = ("V1-ERR-001", "V1-ERR-002", "V1-TRANSPORT-001")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.bad_lines: dict = {}
        self.lines: dict = {}

    def on_frame(self, frame, rpc: Rpc | None) -> None:
        super().on_frame(frame, rpc)
        if rpc is not None and frame.direction == RECEIVED:
            self.lines[frame.conn] = self.lines.get(frame.conn, 0) + 1
            if rpc.kind in (UNPARSED, INVALID) and frame.conn not in self.bad_lines:
                self.bad_lines[frame.conn] = frame

    def judge(self, conn, msgs) -> None:
        bad = self.bad_lines.get(conn)
        if bad is not None:
            self.failed("V1-TRANSPORT-001", f"the agent wrote a line that is not a JSON-RPC message: "
                                            f"{bad.raw[:120]!r}", [bad])
        elif self.lines.get(conn):
            self.passed("V1-TRANSPORT-001", f"each of the agent's {self.lines[conn]} line(s) was a JSON-RPC message")
        for m in msgs:
            if m.direction != SENT or m.kind != "request":
                continue
            if len(m.responses) > 1:
                self.failed("V1-ERR-001", f"{m.method} (id {js(m.id, 40)}) was answered {len(m.responses)} times",
                            [m.responses[1].frame, m.frame])
            elif m.responses:
                self.passed("V1-ERR-001", f"{m.method} answered once with its id", [m.responses[0].frame])
            if isinstance(m.method, str) and m.method.startswith(UNKNOWN_PREFIXES) and m.responses:
                self._unknown(m, m.responses[0])

    def _unknown(self, req, ans) -> None:
        err = error_of(ans)
        if err is None:
            self.failed("V1-ERR-002", f"the unknown method {req.method} was answered with a result: "
                                      f"{js(ans.msg.get('result'), 120)}", [ans.frame, req.frame])
        elif isinstance(err, dict) and err.get("code") == -32601:
            self.passed("V1-ERR-002", f"the unknown method {req.method} was answered -32601", [ans.frame])
        else:
            self.noted("V1-ERR-002", f"the unknown method {req.method} was answered {js(err, 120)}, not -32601",
                       [ans.frame])
