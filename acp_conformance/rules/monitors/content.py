"""Content (CONTENT area), client side: every path the client writes is absolute (CONTENT-004).

On the agent side ``SessionUpdateMonitor`` (update.py) judges the family, over the agent's direction.
"""

from __future__ import annotations

from typing import Any

from ..monitor import REQUEST
from ._common import ConnLog, ConnMonitor, Msg, fr, is_abs_path, js


def _paths(method: str | None, p: Any) -> list[tuple[str, Any]]:
    """(field, value) of the path-typed fields in what a client sends."""
    if not isinstance(p, dict):
        return []
    out: list[tuple[str, Any]] = []
    if method in ("session/new", "session/resume", "session/list"):
        if "cwd" in p and (p["cwd"] is not None or method != "session/list"):
            out.append(("cwd", p.get("cwd")))
        for d in p.get("additionalDirectories") or []:
            out.append(("additionalDirectories[]", d))
        for s in p.get("mcpServers") or []:
            if isinstance(s, dict) and s.get("type") == "stdio":
                out.append(("mcpServers[].command", s.get("command")))
    return out


class ClientPathMonitor(ConnMonitor):
    side = "client"
    rules = ("CONTENT-004",)

    def on_msg(self, log: ConnLog, m: Msg) -> None:
        if m.direction != "received" or m.kind != REQUEST:
            return
        for field, v in _paths(m.method, m.params):
            if is_abs_path(v):
                self.pass_few("CONTENT-004", f"{m.method} {field} {js(v)} is absolute.", [m])
            else:
                self.failed("CONTENT-004", f"{m.method} sends {field} {js(v)}, not an absolute path.", fr([m]))
