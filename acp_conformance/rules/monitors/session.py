"""Session setup: the baseline methods exist, session/new ids, result arrays, MCP transports the
agent does not support, relative paths, and a client systemPrompt the agent cannot apply."""

from __future__ import annotations

from typing import Any

from ...wire.transcript import SENT
from ..findings import SKIP
from ..monitor import RESPONSE
from ._common import ConnLog, ConnMonitor, Msg, fr, is_abs_path, js

BASELINE = ("session/new", "session/list", "session/resume", "session/close", "session/prompt")
NO_METHOD, INVALID_PARAMS, AUTH_REQUIRED = -32601, -32602, -32000


def _cap(caps: Any, *path: str) -> bool:
    node = caps
    for p in path:
        node = node.get(p) if isinstance(node, dict) else None
    return isinstance(node, dict)


class SessionSetupMonitor(ConnMonitor):
    rules = ("SESSION-001", "SESSION-002", "SESSION-003", "SESSION-005", "SESSION-008", "SESSION-012")

    def __init__(self, ctx):
        super().__init__(ctx)
        self.caps: Any = None
        self.ids: dict[str, Msg] = {}  # sessionId -> the session/new response that returned it

    def analyze(self, log: ConnLog) -> None:
        for m in log.msgs:
            if m.kind != RESPONSE or m.duplicate or m.request is None or m.direction == SENT:
                continue
            if m.method == "initialize" and isinstance(m.result, dict):
                self.caps = m.result.get("capabilities") or {}
                continue
            req = m.request
            p = req.params if isinstance(req.params, dict) else {}
            label = f"{m.method} (t={req.t:.2f})"
            if m.method in BASELINE and _cap(self.caps, "session"):
                if m.error_code == NO_METHOD:
                    self.failed("SESSION-001", f"{label} was answered -32601 although capabilities.session is "
                                "advertised.", fr([m, req]))
                else:
                    self.pass_few("SESSION-001", f"{label} is implemented (answered "
                                  f"{'a result' if m.ok else 'error ' + js(m.error_code)}).", [m, req], key=m.method,
                                  limit=1)
            if m.method not in ("session/new", "session/resume"):
                continue
            if m.method == "session/new":
                self._judge_new_inputs(m, req, p, label)
            if m.ok and isinstance(m.result, dict):
                bad = [k for k in ("configOptions", "availableCommands") if k in m.result and not isinstance(m.result[k], list)]
                if bad:
                    self.failed("SESSION-003", f"{label}: {', '.join(f'{k} = {js(m.result[k], 60)}' for k in bad)}, "
                                "not an array.", fr([m, req]))
                elif any(k in m.result for k in ("configOptions", "availableCommands")):
                    self.pass_few("SESSION-003", f"{label}: "
                                  f"{', '.join(k for k in ('configOptions', 'availableCommands') if k in m.result)} "
                                  "is an array.", [m, req])

    def _judge_new_inputs(self, m: Msg, req: Msg, p: dict, label: str) -> None:
        special = False
        # SESSION-005
        servers = p.get("mcpServers")
        if isinstance(servers, list) and servers:
            unsupported = []
            for s in servers:
                t = s.get("type") if isinstance(s, dict) else None
                if isinstance(t, str) and t.startswith("_"):
                    unsupported.append(t)
                elif t in ("http", "stdio") and not _cap(self.caps, "session", "mcp", t):
                    unsupported.append(f"{t} (session.mcp.{t} not advertised)")
            if unsupported:
                special = True
                what = f"{label} with mcpServers of unsupported transport {', '.join(unsupported)}"
                if m.ok:
                    self.failed("SESSION-005", f"{what} created session {js((m.result or {}).get('sessionId'))}.",
                                fr([m, req]))
                elif m.error_code in (INVALID_PARAMS, AUTH_REQUIRED):
                    self.pass_few("SESSION-005", f"{what}: rejected with {m.error_code}.", [m, req], key=unsupported[0][:5])
                else:
                    self.failed("SESSION-005", f"{what}: error {js(m.error_code)}, not -32602.", fr([m, req]))
        # SESSION-008
        rel = []
        if isinstance(p.get("cwd"), str) and not is_abs_path(p["cwd"]):
            rel.append(f"cwd {p['cwd']!r}")
        for d in p.get("additionalDirectories") or [] if isinstance(p.get("additionalDirectories"), list) else []:
            if isinstance(d, str) and not is_abs_path(d):
                rel.append(f"additionalDirectories entry {d!r}")
        if rel:
            special = True
            what = f"{label} with a relative {', '.join(rel)}"
            if m.ok:
                self.failed("SESSION-008", f"{what} created session {js((m.result or {}).get('sessionId'))}.", fr([m, req]))
            elif m.error_code not in (INVALID_PARAMS, AUTH_REQUIRED):
                self.failed("SESSION-008", f"{what}: error {js(m.error_code)}, not -32602.", fr([m, req]))
            else:
                self.pass_few("SESSION-008", f"{what}: rejected with {m.error_code}.", [m, req])
        # SESSION-012
        sp = p.get("systemPrompt")
        if isinstance(sp, dict) and _cap(self.caps, "session", "systemPrompt"):
            special = True
            mode, content = sp.get("mode"), sp.get("content")
            bad = None
            if mode not in ("append", "override"):
                bad = f"unknown mode {js(mode)}"
            elif mode == "override" and not _cap(self.caps, "session", "systemPrompt", "mode", "override"):
                bad = "mode override, which session.systemPrompt.mode.override does not advertise"
            elif isinstance(content, list) and any(isinstance(b, dict) and str(b.get("type", "")).startswith("_")
                                                   for b in content):
                bad = "a content block of an unknown `_` type"
            text_only = isinstance(content, list) and content and all(
                isinstance(b, dict) and b.get("type") == "text" for b in content)
            if bad and m.ok:
                self.failed("SESSION-012", f"{label} with a systemPrompt of {bad} created a session.", fr([m, req]))
            elif bad:
                self.pass_few("SESSION-012", f"{label} with a systemPrompt of {bad}: error {js(m.error_code)}.", [m, req],
                              key=bad[:10])
            elif mode == "append" and text_only and not m.ok and m.error_code != AUTH_REQUIRED:
                self.failed("SESSION-012", f"{label} with a text append systemPrompt failed: {js(m.error, 120)}.",
                            fr([m, req]))
            elif mode == "append" and text_only and m.ok:
                self.pass_few("SESSION-012", f"{label}: a text append systemPrompt was accepted.", [m, req], key="ok")
        # SESSION-002
        if special or not m.ok:
            return
        sid = (m.result or {}).get("sessionId") if isinstance(m.result, dict) else None
        if not isinstance(sid, str) or not sid:
            self.failed("SESSION-002", f"{label} succeeded with sessionId {js(sid)}, not a non-empty string.", fr([m, req]))
        elif sid in self.ids:
            o = self.ids[sid]
            self.failed("SESSION-002", f"{label} returned sessionId {sid!r}, already returned at t={o.t:.2f}.",
                        fr([m, o]))
        else:
            if self.ids:
                self.pass_few("SESSION-002", f"{label} returned {sid!r}, different from the {len(self.ids)} earlier "
                              "session(s) of this test.", [m, req])
            self.ids[sid] = m

    def finish_test(self) -> None:
        if self.caps is not None and not _cap(self.caps, "session", "systemPrompt"):
            self.ctx.report("SESSION-012", SKIP, "the agent does not advertise session.systemPrompt",
                            self.expected["SESSION-012"])
