"""initialize beyond version negotiation: the result's shape, capability markers, repeated and failed
initialize, client capabilities the agent must respect, malformed initialize params.

An initialize is *well-formed* when protocolVersion is an integer in 0..65535 and ``info`` is an
object with string name and version; its capabilities are *usual* when absent or ``{}``.
"""

from __future__ import annotations

from typing import Any

from ...wire.transcript import RECEIVED, SENT
from ..monitor import REQUEST, RESPONSE
from ._common import ConnLog, ConnMonitor, Msg, fr, js

INVALID_PARAMS = -32602
# capability support markers of AgentCapabilities (objects; absent or null = unsupported)
MARKERS = (("session",), ("session", "prompt"), ("session", "prompt", "image"), ("session", "prompt", "audio"),
           ("session", "prompt", "embeddedContext"), ("session", "mcp"), ("session", "mcp", "stdio"),
           ("session", "mcp", "http"), ("session", "delete"), ("session", "additionalDirectories"),
           ("session", "systemPrompt"))


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _params(m: Msg) -> dict[str, Any]:
    return m.params if isinstance(m.params, dict) else {}


def malformed_init(p: dict[str, Any]) -> str | None:
    if "protocolVersion" not in p:
        return "no protocolVersion"
    v = p["protocolVersion"]
    if not _is_int(v):
        return f"protocolVersion {js(v)} is not an integer"
    if not 0 <= v <= 65535:
        return f"protocolVersion {v} is outside 0..65535"
    info = p.get("info")
    if not isinstance(info, dict):
        return "no info object" if "info" not in p else f"info is {js(info)}"
    if not isinstance(info.get("name"), str) or not isinstance(info.get("version"), str):
        return "info lacks a string name or version"
    return None


def bad_capabilities(caps: Any) -> str | None:
    """A malformed optional capability value (INIT-009), or None."""
    if caps is None or not isinstance(caps, dict):
        return None if caps is None else f"capabilities is {js(caps)}"
    for key in ("elicitation", "auth"):
        if key in caps and caps[key] is not None and not isinstance(caps[key], dict):
            return f"capabilities.{key} is {js(caps[key])}"
    return None


class InitShapeMonitor(ConnMonitor):
    rules = ("INIT-004", "INIT-005", "INIT-006", "INIT-007", "INIT-008", "INIT-009", "INIT-010", "INIT-011")
    expected = {
        "INIT-004": "A failed initialize leaves the connection uninitialized, so a corrected initialize still "
                    "succeeds.",
        "INIT-005": "The initialize result has an integer protocolVersion, info {name, version} (strings), "
                    "optional capabilities (an object) and optional authMethods (an array).",
        "INIT-006": "A repeated initialize before any other request is answered too, with the same "
                    "protocolVersion; the latest successful one is authoritative.",
        "INIT-007": "Client capabilities omitted from initialize are unsupported: no elicitation/create without "
                    "capabilities.elicitation, no terminal auth method without capabilities.auth.terminal.",
        "INIT-008": "The agent copes with any combination of client capabilities (unknown keys, _meta, empty or "
                    "all-null sub-objects): initialize succeeds.",
        "INIT-009": "Malformed optional capability values fall back to unsupported: initialize succeeds (-32602 "
                    "is tolerated with a warning).",
        "INIT-010": "Capability support markers in the initialize result are objects (or absent/null), never "
                    "booleans.",
        "INIT-011": "A malformed initialize (no protocolVersion or info, protocolVersion not an unsigned 16-bit "
                    "integer) is rejected with -32602.",
    }

    def analyze(self, log: ConnLog) -> None:
        client_caps: dict[str, Any] | None = None
        other_request = False
        last_ok: Msg | None = None  # the latest successful well-formed initialize response
        accepted: Msg | None = None  # the first successful initialize response, well-formed or not
        failed_init: Msg | None = None  # the first initialize that really failed before any success
        judged_004 = False
        pending: list[Msg] = []  # initialize requests not answered yet
        overlapped: dict[int, list[Msg]] = {}  # id(request) -> the initialize requests in flight when it was sent
        for m in log.msgs:
            if m.direction == SENT and m.kind == REQUEST:
                if m.method != "initialize":
                    other_request = True
                else:
                    pending = [x for x in pending if not any(r.order < m.order for r in x.responses)]
                    overlapped[id(m)] = list(pending)
                    pending.append(m)
                continue
            if m.direction == RECEIVED and m.kind == REQUEST:
                self._agent_request(m, client_caps)
                continue
            if m.direction != RECEIVED or m.kind != RESPONSE or m.duplicate or m.request is None \
                    or m.request.method != "initialize":
                continue
            rq = m.request
            p = _params(rq)
            bad = malformed_init(p)
            frames = fr([m, rq])
            label = f"initialize id={js(rq.id)}"
            busy = overlapped.get(id(rq), [])  # it was sent while an earlier initialize was still unanswered
            during = f"sent while initialize {', '.join('id=' + js(x.id) for x in busy)} was still unanswered"
            if bad is not None:
                self._judge_011(m, rq, bad)
                if m.ok:
                    accepted = accepted or m  # taken for an initialize (INIT-011 judges that): initialized
                elif accepted is None and not busy:
                    failed_init = failed_init or m
                continue
            # INIT-004: a corrected initialize written after an earlier one really failed (an error response),
            # on a connection that no initialize had initialized yet
            after_failure = (failed_init is not None and accepted is None
                             and failed_init.order < rq.order and not busy)
            if m.ok:
                self._judge_result(m)
                if after_failure:
                    judged_004 = True
                    self.pass_few("INIT-004", f"{label} succeeded after an earlier initialize on this connection "
                                  f"failed with {js(failed_init.error_code)}.", [m, failed_init])
                prev = last_ok or accepted
                if prev is not None:
                    self._judge_repeat(m, prev, other_request)
                last_ok = m
                accepted = accepted or m
                caps = p.get("capabilities")
                client_caps = caps if isinstance(caps, dict) else {}
                self._judge_caps_in(m, p, ok=True)
                continue
            if after_failure and p.get("protocolVersion", 0) >= 2:
                judged_004 = True
                self.warned("INIT-004", f"{label} (well-formed, version {p.get('protocolVersion')}) failed with "
                            f"{js(m.error_code)} after an earlier failed initialize; a corrected initialize "
                            "should succeed.", fr([m, failed_init]))
            if busy:
                # the spec lets the client repeat initialize; it does not say that a repeat may overlap one
                # still in progress
                self.noted("INIT-006", f"{label}, {during}, got error {js(m.error_code)}; whether a repeat may "
                           "overlap the previous initialize is not specified.", fr([m, rq] + busy[:1]))
            elif last_ok is not None and not other_request:
                self.failed("INIT-006", f"{label}, a repeated initialize before any other request, got error "
                            f"{js(m.error_code)}; it must be answered like the first.", fr([m, last_ok]))
            elif last_ok is not None:
                self.noted("INIT-006", f"{label}, repeated after other requests, got error {js(m.error_code)} "
                           "(the spec does not say what happens then).", frames)
            elif accepted is not None:
                self.noted("INIT-006", f"{label} got error {js(m.error_code)} after the malformed initialize "
                           f"id={js(accepted.request.id)} had been accepted (INIT-011 judges the acceptance); the "
                           "refused repeat is not judged.", fr([m, accepted]))
            if p.get("protocolVersion", 0) >= 2:
                if busy:
                    self._note_caps_in(m, p, during)
                else:
                    self._judge_caps_in(m, p, ok=False)
            if accepted is None and not busy:
                failed_init = failed_init or m
        if failed_init is not None and not judged_004 and accepted is not None \
                and malformed_init(_params(accepted.request)) is not None:
            self.noted("INIT-004", f"initialize id={js(failed_init.request.id)} failed with "
                       f"{js(failed_init.error_code)}, then the malformed initialize id={js(accepted.request.id)} was "
                       "accepted (INIT-011 judges that) and initialized the connection, so no corrected initialize "
                       "followed a failed one on an uninitialized connection.", fr([accepted, failed_init]))
        if last_ok is not None and client_caps is not None:
            res = last_ok.result if isinstance(last_ok.result, dict) else {}
            self._judge_auth_methods(last_ok, res, client_caps)

    # -- INIT-005 / INIT-010 -----------------------------------------------------------------
    def _judge_result(self, m: Msg) -> None:
        res = m.result
        label = f"the initialize result (id {js(m.id)})"
        problems = []
        if not isinstance(res, dict):
            problems.append(f"it is {js(res)}, not an object")
            res = {}
        v = res.get("protocolVersion")
        if not _is_int(v) or not 0 <= v <= 65535:
            problems.append(f"protocolVersion is {js(v if 'protocolVersion' in res else '<missing>')}")
        elif v < 2:
            # an agent that also speaks v1, asked for 1, answers in v1's shape (agentInfo, agentCapabilities):
            # the v2 result shape does not bind that answer (INIT-001/002 judge the version itself)
            self.noted("INIT-005", f"{label} negotiated protocol version {v}; its shape is that version's, "
                                   "not judged against v2's.", fr([m]))
            return
        info = res.get("info")
        if not isinstance(info, dict):
            problems.append(f"info is {js(info if 'info' in res else '<missing>')}, not an object")
        else:
            for k in ("name", "version"):
                if not isinstance(info.get(k), str):
                    problems.append(f"info.{k} is {js(info.get(k, '<missing>'))}, not a string")
            if info.get("title") is not None and not isinstance(info.get("title"), str):
                problems.append(f"info.title is {js(info.get('title'))}")
        caps = res.get("capabilities")
        if caps is not None and not isinstance(caps, dict):
            problems.append(f"capabilities is {js(caps)}, not an object")
        am = res.get("authMethods")
        if am is not None and not isinstance(am, list):
            problems.append(f"authMethods is {js(am)}, not an array")
        if problems:
            self.failed("INIT-005", f"{label} is malformed: {'; '.join(problems)}.", fr([m, m.request]))
        else:
            self.pass_few("INIT-005", f"{label} has protocolVersion {v} and info {js(info, 100)}.", [m])
        if not isinstance(caps, dict):
            return
        bad = []
        seen = 0
        for path in MARKERS:
            node: Any = caps
            for k in path:
                node = node.get(k) if isinstance(node, dict) else None
            if node is None:
                continue
            seen += 1
            if not isinstance(node, dict):
                bad.append(f"capabilities.{'.'.join(path)} is {js(node)}")
        if bad:
            self.failed("INIT-010", f"{label}: {'; '.join(bad)}; support markers are objects ({{}}), never "
                        "booleans or other values.", fr([m, m.request]))
        elif seen:
            self.pass_few("INIT-010", f"{label}: all {seen} capability marker(s) present are objects.", [m])

    # -- INIT-006 ------------------------------------------------------------------------------
    def _judge_repeat(self, m: Msg, first: Msg, other_request: bool) -> None:
        v1 = (first.result or {}).get("protocolVersion") if isinstance(first.result, dict) else None
        v2 = (m.result or {}).get("protocolVersion") if isinstance(m.result, dict) else None
        p1, p2 = _params(first.request).get("protocolVersion"), _params(m.request).get("protocolVersion")
        label = f"initialize id={js(m.request.id)} repeated"
        if other_request:
            self.noted("INIT-006", f"{label} after other requests succeeded (protocolVersion {js(v2)}); the spec "
                       "does not say what a later initialize does.", fr([m, first]))
        elif p1 == p2 and v1 != v2:
            self.failed("INIT-006", f"{label} before any other request got protocolVersion {js(v2)}, the first got "
                        f"{js(v1)} for the same request.", fr([m, first]))
        else:
            self.pass_few("INIT-006", f"{label} before any other request was answered (protocolVersion {js(v2)}, "
                          f"first {js(v1)}).", [m, first])

    # -- INIT-008 / INIT-009 -------------------------------------------------------------------
    def _judge_caps_in(self, m: Msg, p: dict[str, Any], ok: bool) -> None:
        caps = p.get("capabilities")
        label = f"initialize id={js(m.request.id)} with capabilities {js(caps, 120)}"
        bad = bad_capabilities(caps)
        if bad is not None:
            if ok:
                self.pass_few("INIT-009", f"{label} ({bad}) succeeded.", [m, m.request])
            elif m.error_code == INVALID_PARAMS:
                self.warned("INIT-009", f"{label} ({bad}) was rejected with -32602; falling back to 'unsupported' is "
                            "preferred.", fr([m, m.request]))
            else:
                self.warned("INIT-009", f"{label} ({bad}) failed with {js(m.error_code)}.", fr([m, m.request]))
            return
        if not isinstance(caps, dict) or not caps:
            return
        if ok:
            self.pass_few("INIT-008", f"{label} succeeded.", [m, m.request], key=js(caps), limit=1)
        else:
            self.warned("INIT-008", f"{label} failed with {js(m.error_code)}.", fr([m, m.request]))

    def _note_caps_in(self, m: Msg, p: dict[str, Any], during: str) -> None:
        """A failed initialize that overlapped another: the error may be about the overlap, not the capabilities."""
        caps = p.get("capabilities")
        bad = bad_capabilities(caps)
        rule = "INIT-009" if bad is not None else "INIT-008" if isinstance(caps, dict) and caps else None
        if rule is not None:
            self.noted(rule, f"initialize id={js(m.request.id)} with capabilities {js(caps, 120)}, {during}, failed "
                       f"with {js(m.error_code)}; the error may be about the overlap, so the capabilities are not "
                       "judged.", fr([m, m.request]))

    # -- INIT-011 ------------------------------------------------------------------------------
    def _judge_011(self, m: Msg, rq: Msg, bad: str) -> None:
        label = f"initialize id={js(rq.id)} with {bad}"
        if m.error_code == INVALID_PARAMS:
            self.pass_few("INIT-011", f"{label} was rejected with -32602.", [m, rq], key=bad, limit=1)
        elif m.ok:
            self.warned("INIT-011", f"{label} succeeded ({js(m.result, 100)}); -32602 was expected.", fr([m, rq]))
        else:
            self.warned("INIT-011", f"{label} got error {js(m.error_code)}; -32602 was expected.", fr([m, rq]))

    # -- INIT-007 ------------------------------------------------------------------------------
    def _agent_request(self, m: Msg, client_caps: dict[str, Any] | None) -> None:
        if m.method != "elicitation/create" or client_caps is None:
            return
        el = client_caps.get("elicitation")
        if not isinstance(el, dict):
            self.failed("INIT-007", f"the agent sent elicitation/create (id {js(m.id)}) although the client's "
                        "initialize did not advertise capabilities.elicitation.", fr([m]))

    def _judge_auth_methods(self, m: Msg, res: dict[str, Any], caps: dict[str, Any]) -> None:
        am = res.get("authMethods")
        auth = caps.get("auth") if isinstance(caps.get("auth"), dict) else {}
        terminal_ok = isinstance(auth.get("terminal"), dict)
        if isinstance(am, list) and not terminal_ok:
            term = [x for x in am if isinstance(x, dict) and x.get("type") == "terminal"]
            if term:
                self.failed("INIT-007", f"the initialize result offers a terminal auth method {js(term[0], 120)} "
                            "although the client did not advertise capabilities.auth.terminal.", fr([m]))
                return
        if not isinstance(caps.get("elicitation"), dict) and not terminal_ok:
            self.pass_few("INIT-007", f"the client advertised capabilities {js(caps, 100)}; the agent offered no "
                          "terminal auth method and sent no elicitation/create on this connection.", [m], limit=1)
