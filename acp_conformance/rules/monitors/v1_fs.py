"""ACP v1 client methods the agent calls (https://agentclientprotocol.com/protocol/v1/file-system, terminals,
overview): only those the client advertised, with absolute paths, and every terminal released."""

from __future__ import annotations

import os

from ...wire.transcript import RECEIVED
from ._common import js
from ._v1 import V1Monitor, client_caps, params, result_of, update_of

FS_CAPS = {"fs/read_text_file": "readTextFile", "fs/write_text_file": "writeTextFile"}


class V1ClientMethodsMonitor(V1Monitor):
    rules = ("V1-FS-001", "V1-FS-002", "V1-TERM-001", "V1-TERM-002")

    def judge(self, conn, msgs) -> None:
        caps = client_caps(msgs)
        created: dict = {}
        released: set = set()
        for m in msgs:
            if m.direction != RECEIVED:
                continue
            u = update_of(m)
            if u is not None and u[2] in ("tool_call", "tool_call_update"):
                for loc in u[1].get("locations") or []:
                    if isinstance(loc, dict) and "path" in loc:
                        self._path(m, loc["path"], "a tool call location")
            if m.kind != "request" or not isinstance(m.method, str):
                continue
            if m.method in FS_CAPS:
                fs = caps.get("fs") if isinstance(caps.get("fs"), dict) else {}
                ok = fs.get(FS_CAPS[m.method]) is True
                (self.passed if ok else self.failed)(
                    "V1-FS-001", f"{m.method} while the client's fs.{FS_CAPS[m.method]} was {js(fs.get(FS_CAPS[m.method]))}",
                    [m.frame])
                self._path(m, params(m).get("path"), f"{m.method} path")
            elif m.method.startswith("terminal/"):
                ok = caps.get("terminal") is True
                (self.passed if ok else self.failed)(
                    "V1-TERM-001", f"{m.method} while the client's terminal capability was {js(caps.get('terminal'))}",
                    [m.frame])
                if m.method == "terminal/create":
                    if "cwd" in params(m) and params(m)["cwd"] is not None:
                        self._path(m, params(m)["cwd"], "terminal/create cwd")
                    res = result_of(m.responses[0]) if m.responses else None
                    if isinstance(res, dict) and isinstance(res.get("terminalId"), str):
                        created[res["terminalId"]] = m
                elif m.method == "terminal/release":
                    released.add(params(m).get("terminalId"))
        for tid, m in created.items():
            if tid in released:
                self.passed("V1-TERM-002", f"terminal {tid!r} was released", [m.frame])
            else:
                self.failed("V1-TERM-002", f"terminal {tid!r} was never released while the connection lived", [m.frame])

    def _path(self, m, path, what) -> None:
        if isinstance(path, str) and os.path.isabs(path):
            self.passed("V1-FS-002", f"{what} {path!r} is absolute", [m.frame])
        else:
            self.failed("V1-FS-002", f"{what} {js(path, 80)} is not an absolute path", [m.frame])
