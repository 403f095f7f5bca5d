"""Client side of ``both`` rules whose agent-side monitors read the agent's direction only.

* SCHEMA-001: the same method-aware schema check (``SchemaMonitor``), over the client's frames;
* CANCEL-012/013/014: ``$/cancel_request`` the suite sends to the client, and the ones it sends;
* CONTENT-004: every path the client writes is absolute.

Each runs only when the target is a client; on the agent side the family's own monitor judges.
"""

from __future__ import annotations

from typing import Any

from ..monitor import NOTIFICATION, REQUEST, RESPONSE
from ._client import agent_msgs, cap, client_msgs, crashed
from ._common import ConnLog, ConnMonitor, Msg, fr, id_key, is_abs_path, js
from .schema_validity import SchemaMonitor


class ClientSchemaMonitor(SchemaMonitor):
    """SCHEMA-001 for a client: what it writes matches the schema (UPDATE-002/003 bind agents only)."""

    side = "client"
    rules = ("SCHEMA-001",)


class ClientCancelRequestMonitor(ConnMonitor):
    side = "client"
    rules = ("CANCEL-012", "CANCEL-013", "CANCEL-014")
    expected = {
        "CANCEL-012": "A request named by $/cancel_request still gets exactly one response: its normal result, its "
                      "cancelled result (a cancelled permission outcome) or -32800.",
        "CANCEL-013": "$/cancel_request naming an unknown or already-answered request id is ignored: no response, "
                      "no error.",
        "CANCEL-014": "A $/cancel_request the client sends names one of its own pending requests (each direction "
                      "has its own id space).",
    }

    def analyze(self, log: ConnLog) -> None:
        self._received(log)
        self._sent(log)

    def _received(self, log: ConnLog) -> None:
        ours = agent_msgs(log, REQUEST)
        for c in agent_msgs(log, NOTIFICATION, "$/cancel_request"):
            rid = cap(c.params, "requestId")
            target = next((q for q in ours if q.order < c.order and id_key(q.id) == id_key(rid)), None)
            pending = target is not None and not any(r.order < c.order for r in target.responses)
            if pending:
                n = len(target.responses)
                if n == 1:
                    self.pass_few("CANCEL-012", f"{target.method} (id {js(rid)}), cancelled by $/cancel_request, got "
                                  f"exactly one response: {js(target.responses[0].msg, 120)}.",
                                  [target.responses[0], c, target])
                elif n > 1:
                    self.failed("CANCEL-012", f"{target.method} (id {js(rid)}) got {n} responses after "
                                "$/cancel_request.", fr([target.responses[1], c, target]))
                elif not crashed(log) and (log.end is None or log.end.t > c.t):
                    self.failed("CANCEL-012", f"{target.method} (id {js(rid)}) got no response after "
                                f"$/cancel_request ({log.end_desc or 'the test ended'}).", fr([c, target]))
                continue
            # unknown or already answered: nothing may come back
            back = [m for m in client_msgs(log, RESPONSE) if m.order > c.order
                    and (m.request is None or m.duplicate) and (m.id is None or id_key(m.id) == id_key(rid))]
            what = "an already-answered" if target is not None else "an unknown"
            if back:
                self.failed("CANCEL-013", f"$/cancel_request naming {what} request id {js(rid)} was answered: "
                            f"{js(back[0].msg, 140)}.", fr([back[0], c]))
            elif any(m.order > c.order for m in client_msgs(log)):
                self.pass_few("CANCEL-013", f"$/cancel_request naming {what} request id {js(rid)} was ignored.", [c])

    def _sent(self, log: ConnLog) -> None:
        mine = client_msgs(log, REQUEST)
        for c in client_msgs(log, NOTIFICATION, "$/cancel_request"):
            rid = cap(c.params, "requestId")
            target = next((q for q in mine if q.order < c.order and id_key(q.id) == id_key(rid)), None)
            if target is None:
                theirs = any(id_key(q.id) == id_key(rid) for q in agent_msgs(log, REQUEST) if q.order < c.order)
                self.failed("CANCEL-014", f"the client's $/cancel_request names id {js(rid)}, "
                            f"{'a request of the agent, not its own' if theirs else 'which it never used'}.", fr([c]))
            elif any(r.order < c.order for r in target.responses):
                self.noted("CANCEL-014", f"the client's $/cancel_request names its {target.method} (id {js(rid)}), "
                           "already answered (a race; the agent ignores it).", fr([c, target]))
            else:
                self.pass_few("CANCEL-014", f"the client's $/cancel_request names its own pending {target.method} "
                              f"(id {js(rid)}).", [c, target])


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
    expected = {"CONTENT-004": "Every file path the client sends (cwd, additionalDirectories, stdio MCP server "
                               "commands) is absolute."}

    def on_msg(self, log: ConnLog, m: Msg) -> None:
        if m.direction != "received" or m.kind != REQUEST:
            return
        for field, v in _paths(m.method, m.params):
            if is_abs_path(v):
                self.pass_few("CONTENT-004", f"{m.method} {field} {js(v)} is absolute.", [m])
            else:
                self.failed("CONTENT-004", f"{m.method} sends {field} {js(v)}, not an absolute path.", fr([m]))
