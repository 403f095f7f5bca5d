"""Authentication: advertised methods, auth/login and auth/logout, and session/new's -32000.

Most AUTH rules only apply to an agent whose initialize result lists authMethods; without any
they are ``skip`` ("the agent advertises no authMethods"). AUTH-002 (no terminal method unless the
client offered auth.terminal) is judged on every initialize.
"""

from __future__ import annotations

from typing import Any

from ...wire.transcript import SENT
from ..findings import SKIP
from ..monitor import RESPONSE
from ._common import ConnLog, ConnMonitor, Msg, fr, js

NO_METHOD, INVALID_PARAMS, AUTH_REQUIRED = -32601, -32602, -32000
UNKNOWN_METHOD_ID = "__conformance_unknown__"


def method_problems(a: Any) -> list[str]:
    if not isinstance(a, dict):
        return [f"auth method {js(a, 80)} is not an object"]
    out = []
    t = a.get("type")
    if not isinstance(t, str) or not (t in ("agent", "terminal") or t.startswith("_")):
        out.append(f"type {js(t)} is neither agent, terminal nor `_`-prefixed")
    for k in ("methodId", "name"):
        if not isinstance(a.get(k), str):
            out.append(f"{k} {js(a.get(k))} is not a string")
    if t == "terminal":
        args = a.get("args")
        if args is not None and (not isinstance(args, list) or not all(isinstance(x, str) for x in args)):
            out.append(f"args {js(args, 80)} is not a list of strings")
        env = a.get("env")
        names = [e.get("name") for e in env if isinstance(e, dict)] if isinstance(env, list) else []
        dup = sorted({str(n) for n in names if names.count(n) > 1})
        if dup:
            out.append(f"env names {', '.join(dup)} appear more than once")
    return [f"auth method {js(a.get('methodId') if isinstance(a, dict) else None)}: {x}" for x in out]


class SessionAuthMonitor(ConnMonitor):
    rules = ("AUTH-001", "AUTH-002", "AUTH-003", "AUTH-004", "AUTH-005", "SESSION-009")

    def __init__(self, ctx):
        super().__init__(ctx)
        self.inits = 0
        self.any_methods = False

    def analyze(self, log: ConnLog) -> None:
        methods: list[Any] = []
        logged_in: Msg | None = None
        for m in log.msgs:
            if m.kind != RESPONSE or m.duplicate or m.request is None or m.direction == SENT:
                continue
            req = m.request
            p = req.params if isinstance(req.params, dict) else {}
            label = f"{m.method} (t={req.t:.2f})"
            if m.method == "initialize" and isinstance(m.result, dict):
                v = m.result.get("protocolVersion")
                if isinstance(v, int) and not isinstance(v, bool) and v < 2:
                    continue  # a v1 answer (an agent of both versions asked for 1): v1's auth shapes, not judged
                self.inits += 1
                am = m.result.get("authMethods")
                methods = am if isinstance(am, list) else []
                self.any_methods = self.any_methods or bool(methods)
                offered = isinstance(((p.get("capabilities") or {}).get("auth") or {}).get("terminal"), dict) \
                    if isinstance(p.get("capabilities"), dict) and isinstance(p["capabilities"].get("auth"), dict) else False
                terms = [a.get("methodId") for a in methods if isinstance(a, dict) and a.get("type") == "terminal"]
                if terms and not offered:
                    self.failed("AUTH-002", f"{label} lists terminal auth method(s) {js(terms)} although the client "
                                "did not send capabilities.auth.terminal.", fr([m, req]))
                elif not offered:
                    self.pass_few("AUTH-002", f"{label} without auth.terminal: no terminal auth method listed.",
                                  [m, req], limit=1)
                if methods:
                    probs = [x for a in methods for x in method_problems(a)]
                    if probs:
                        self.failed("AUTH-003", f"{label}: {'; '.join(probs[:4])}.", fr([m, req]))
                    else:
                        self.pass_few("AUTH-003", f"{label}: {len(methods)} well-formed auth method(s).", [m, req])
                continue
            if m.method in ("auth/login", "auth/logout") and methods:
                if m.error_code == NO_METHOD:
                    self.failed("AUTH-001", f"{label} was answered -32601 although authMethods "
                                f"{js([a.get('methodId') for a in methods if isinstance(a, dict)])} are advertised.",
                                fr([m, req]))
                else:
                    self.pass_few("AUTH-001", f"{label} is implemented.", [m, req], key=m.method)
            if m.method == "auth/login" and methods:
                ids = [a.get("methodId") for a in methods if isinstance(a, dict)]
                if p.get("methodId") not in ids and m.error_code != NO_METHOD:  # -32601 is AUTH-001's
                    if m.ok:
                        self.failed("AUTH-004", f"{label} with the unadvertised methodId {js(p.get('methodId'))} "
                                    "succeeded.", fr([m, req]))
                    elif m.error_code != INVALID_PARAMS:
                        self.warned("AUTH-004", f"{label} with the unadvertised methodId {js(p.get('methodId'))} got "
                                    f"error {js(m.error_code)}, not -32602.", fr([m, req]))
                    else:
                        self.pass_few("AUTH-004", f"{label}: the unadvertised methodId was rejected with -32602.",
                                      [m, req])
                elif m.ok:
                    logged_in = m
            if m.method == "auth/logout" and m.ok:
                logged_in = None
            if m.method == "session/new":
                if m.error_code == AUTH_REQUIRED:
                    if not methods:
                        self.warned("SESSION-009", f"{label} answered -32000 (auth required) but the agent lists no "
                                    "authMethods: the client has no advertised way to authenticate.", fr([m, req]))
                    else:
                        self.pass_few("SESSION-009", f"{label} answered -32000 with authMethods advertised.", [m, req])
                    if logged_in is not None:
                        self.failed("AUTH-005", f"{label} answered -32000 (auth required) after the successful "
                                    f"auth/login at t={logged_in.t:.2f}.", fr([m, logged_in]))
                elif m.ok and logged_in is not None:
                    self.pass_few("AUTH-005", f"{label} succeeded after the auth/login at t={logged_in.t:.2f}.",
                                  [m, logged_in])

    def finish_test(self) -> None:
        if self.inits and not self.any_methods:
            for rule in ("AUTH-001", "AUTH-003", "AUTH-004", "AUTH-005"):
                self.ctx.report(rule, SKIP, "the agent advertises no authMethods", self.expected[rule])
        if self.inits and not any(f.rule == "SESSION-009" for f in self.ctx.findings):
            self.ctx.report("SESSION-009", SKIP, "session/new never answered -32000 (auth required) in this test",
                            self.expected["SESSION-009"])
