"""initialize: protocol version negotiation (highest supported <= requested, else -32022).

The suite is a v2 client: it assumes 2 is the highest version a v2 agent supports. Errors are
judged only for a well-formed first initialize of a connection (integer protocolVersion in
0..65535, an ``info`` object); a repeated initialize after a successful one, or one with broken
params, may legitimately get other errors.

initialize beyond version negotiation: the result's shape, capability markers, repeated and failed
initialize, client capabilities the agent must respect, malformed initialize params.

An initialize is *well-formed* when protocolVersion is an integer in 0..65535 and ``info`` is an
object with string name and version; its capabilities are *usual* when absent or ``{}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...wire.transcript import RECEIVED, SENT
from ..monitor import REQUEST, RESPONSE
from ._attribution import is_int
from ._common import ConnLog, ConnMonitor, Msg, fr, js


V2 = 2
UNSUPPORTED = -32022


class InitializeMonitor(ConnMonitor):
    rules = ("INIT-001", "INIT-002", "INIT-003")

    def __init__(self, ctx):
        super().__init__(ctx)
        self._first: dict[int, bool] = {}  # id(request) -> no successful initialize before it on the connection
        self._initialized: set[int] = set()
        self._sent: dict[int, list[Msg]] = {}  # connection -> its initialize requests, in order
        self._echoes: list[tuple[int, Msg, Msg]] = []  # (version > 2 asked for and answered in kind, answer, request)

    def finish_test(self) -> None:
        # one newer version answered in kind may be real support; every newer version answered in kind (3 -> 3,
        # 65535 -> 65535) is an echo, not a negotiation: no agent speaks every version it is asked for
        versions = sorted({p for p, _, _ in self._echoes})
        if len(versions) >= 2:
            _, m, rq = next(e for e in self._echoes if e[0] == versions[-1])
            first = next(e for e in self._echoes if e[0] == versions[0])
            self.failed("INIT-001", f"initialize was answered with exactly the version asked for, for every version "
                        f"above 2 the suite tried ({', '.join(map(str, versions))}): the agent echoes the requested "
                        "version instead of negotiating the highest one it supports.",
                        fr([m, rq, first[1], first[2]]))
        self._echoes = []
        super().finish_test()

    def on_msg(self, log: ConnLog, m: Msg) -> None:
        if m.direction == SENT and m.kind == REQUEST and m.method == "initialize":
            self._first[id(m)] = log.conn not in self._initialized
            self._sent.setdefault(log.conn, []).append(m)
            return
        if m.direction != RECEIVED or m.kind != RESPONSE or m.duplicate or m.request is None:
            return
        rq = m.request
        if rq.method != "initialize":
            return
        # initializes written before this one: one that succeeded (even if answered after this one was written)
        # made this a repeat; one not yet answered when this one was written overlaps it (an error may then be
        # about the overlap: some agents refuse an initialize while another is in progress)
        earlier = [x for x in self._sent.get(log.conn, []) if x.order < rq.order]
        first = self._first.get(id(rq), True) and not any(r.ok for x in earlier for r in x.responses)
        overlapped = [x for x in earlier if not any(r.order < rq.order for r in x.responses)]
        if m.ok:
            self._initialized.add(log.conn)
        p = rq.params if isinstance(rq.params, dict) else {}
        P = p.get("protocolVersion")
        if not is_int(P):
            return
        well_formed = 0 <= P <= 65535 and isinstance(p.get("info"), dict) and first
        if m.ok:
            self._judge_accepted(m, rq, P, well_formed)
        else:
            self._judge_refused(m, rq, P, well_formed, overlapped)

    def _judge_accepted(self, m: Msg, rq: Msg, P: int, well_formed: bool) -> None:
        """INIT-001/002 for a successful initialize; INIT-003 for one that should have been an error."""
        frames = fr([m, rq])
        label = f"initialize id={js(rq.id)} with protocolVersion {P}"
        res = m.result if isinstance(m.result, dict) else {}
        V = res.get("protocolVersion")
        if not is_int(V):
            if P >= V2 and well_formed:
                self.failed("INIT-001", f"{label} succeeded with protocolVersion {js(V)}, not an integer.", frames)
            return
        # INIT-002
        if V > P:
            self.failed("INIT-002", f"{label} was answered with protocolVersion {V}, greater than requested.",
                        frames)
        else:
            self.pass_few("INIT-002", f"{label} was answered with protocolVersion {V} (<= {P}).", frames)
        # INIT-001
        if V2 <= P <= 65535:
            if V == V2:
                self.pass_few("INIT-001", f"{label} was answered with protocolVersion 2.", frames)
            elif V2 < V <= P:
                if V == P:
                    self._echoes.append((P, m, rq))
                self.noted("INIT-001", f"{label} was answered with protocolVersion {V}: the agent supports a "
                           "version newer than 2, which this v2 suite does not know.", frames)
            else:
                self.failed("INIT-001", f"{label} was answered with protocolVersion {V}; a v2 agent answers 2.",
                            frames)
        # INIT-003 (successes that should have been errors)
        elif P == 0:
            self.failed("INIT-003", f"{label} succeeded (protocolVersion {V}); no protocol version 0 exists, "
                        "so -32022 was expected.", frames)
        elif P == 1 and V == 1:
            self.noted("INIT-003", f"{label} was answered with protocolVersion 1: the agent also supports v1.",
                       frames)

    def _judge_refused(self, m: Msg, rq: Msg, P: int, well_formed: bool, overlapped: list[Msg]) -> None:
        """INIT-001 for a refused version 2 or later; INIT-003 for a refused version below 2."""
        frames = fr([m, rq])
        label = f"initialize id={js(rq.id)} with protocolVersion {P}"
        code = m.error_code
        if V2 <= P and well_formed and overlapped:
            self.noted("INIT-001", f"{label} was answered with error {js(code)}, but it was written while initialize "
                       f"id={js(overlapped[0].id)} was still unanswered: the error may be about that overlap.",
                       fr([m, rq, overlapped[0]]))
        elif V2 <= P and well_formed:
            self.failed("INIT-001", f"{label} was answered with error {js(code)}; a v2 agent answers with "
                        "protocolVersion 2.", frames)
        if P < V2:  # for P >= 2 an error is INIT-001's failure alone
            problem = self._bad_unsupported(m, P)
            if problem is None:
                self.pass_few("INIT-003", f"{label} was refused with -32022 and data {js(m.error.get('data'))}.",
                              frames)
            elif well_formed or code == UNSUPPORTED:
                self.failed("INIT-003", f"{label} was refused with {problem}.", frames)
            else:
                self.noted("INIT-003", f"{label} (params otherwise invalid or a repeated initialize) was refused "
                           f"with {problem}.", frames)

    @staticmethod
    def _bad_unsupported(m: Msg, P: int) -> str | None:
        err = m.error if isinstance(m.error, dict) else {}
        code = err.get("code")
        if code != UNSUPPORTED:
            return f"error {js(code)} instead of -32022"
        data = err.get("data")
        if not isinstance(data, dict):
            return f"-32022 but error.data {js(data)} is not an object {{requested, supported}}"
        if data.get("requested") != P or not is_int(data.get("requested")):
            return f"-32022 but data.requested is {js(data.get('requested'))}, not {P}"
        sup = data.get("supported")
        if not isinstance(sup, list) or not sup:
            return f"-32022 but data.supported is {js(sup)}, not a non-empty array"
        if not all(is_int(v) and v > P for v in sup):
            return f"-32022 but data.supported {js(sup)} holds values that are not integers above {P}"
        return None


INVALID_PARAMS = -32602
# capability support markers of AgentCapabilities (objects; absent or null = unsupported)
MARKERS = (("session",), ("session", "prompt"), ("session", "prompt", "image"), ("session", "prompt", "audio"),
           ("session", "prompt", "embeddedContext"), ("session", "mcp"), ("session", "mcp", "stdio"),
           ("session", "mcp", "http"), ("session", "delete"), ("session", "additionalDirectories"),
           ("session", "systemPrompt"))


def _params(m: Msg) -> dict[str, Any]:
    return m.params if isinstance(m.params, dict) else {}


def malformed_init(p: dict[str, Any]) -> str | None:
    if "protocolVersion" not in p:
        return "no protocolVersion"
    v = p["protocolVersion"]
    if not is_int(v):
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



@dataclass(eq=False)
class _Inits:
    """The initializes of one connection as ``InitShapeMonitor.analyze`` walks its frames."""
    client_caps: dict[str, Any] | None = None  # the capabilities of the latest successful well-formed initialize
    other_request: bool = False  # the suite sent a request other than initialize
    last_ok: Msg | None = None  # the latest successful well-formed initialize response
    accepted: Msg | None = None  # the first successful initialize response, well-formed or not
    failed_init: Msg | None = None  # the first initialize that really failed before any success
    judged_004: bool = False
    pending: list[Msg] = field(default_factory=list)  # initialize requests not answered yet
    overlapped: dict[int, list[Msg]] = field(default_factory=dict)  # id(request) -> initializes in flight when sent

    def follow_request(self, m: Msg) -> None:
        """A request the suite sent."""
        if m.method != "initialize":
            self.other_request = True
        else:
            self.pending = [x for x in self.pending if not any(r.order < m.order for r in x.responses)]
            self.overlapped[id(m)] = list(self.pending)
            self.pending.append(m)

    def refused(self, m: Msg, busy: list[Msg]) -> None:
        """An initialize that failed: the first failure before any success, unless it overlapped another."""
        if self.accepted is None and not busy:
            self.failed_init = self.failed_init or m


class InitShapeMonitor(ConnMonitor):
    rules = ("INIT-004", "INIT-005", "INIT-006", "INIT-007", "INIT-008", "INIT-009", "INIT-010", "INIT-011")

    def analyze(self, log: ConnLog) -> None:
        inits = _Inits()
        for m in log.msgs:
            if m.direction == SENT and m.kind == REQUEST:
                inits.follow_request(m)
            elif m.direction == RECEIVED and m.kind == REQUEST:
                self._agent_request(m, inits.client_caps)
            elif m.direction == RECEIVED and m.kind == RESPONSE and not m.duplicate and m.request is not None \
                    and m.request.method == "initialize":
                self._judge_answer(m, inits)
        self._judge_end(inits)

    def _judge_answer(self, m: Msg, inits: _Inits) -> None:
        """The target's answer to an initialize: INIT-011 for a malformed one, else the rules of a success or
        a failure."""
        rq = m.request
        p = _params(rq)
        bad = malformed_init(p)
        busy = inits.overlapped.get(id(rq), [])  # it was sent while an earlier initialize was still unanswered
        if bad is not None:
            self._judge_011(m, rq, bad)
            if m.ok:
                inits.accepted = inits.accepted or m  # taken for an initialize (INIT-011 judges that): initialized
            else:
                inits.refused(m, busy)
            return
        # INIT-004: a corrected initialize written after an earlier one really failed (an error response),
        # on a connection that no initialize had initialized yet
        after_failure = (inits.failed_init is not None and inits.accepted is None
                         and inits.failed_init.order < rq.order and not busy)
        if m.ok:
            self._judge_success(m, p, after_failure, inits)
        else:
            self._judge_failure(m, p, after_failure, busy, inits)
            inits.refused(m, busy)

    def _judge_success(self, m: Msg, p: dict[str, Any], after_failure: bool, inits: _Inits) -> None:
        """A well-formed initialize that succeeded: INIT-005/010 on the result, INIT-004 after a failure,
        INIT-006 for a repeat, INIT-008/009 on the capabilities it sent."""
        self._judge_result(m)
        if after_failure:
            inits.judged_004 = True
            self.pass_few("INIT-004", f"initialize id={js(m.request.id)} succeeded after an earlier initialize on this "
                          f"connection failed with {js(inits.failed_init.error_code)}.", [m, inits.failed_init])
        prev = inits.last_ok or inits.accepted
        if prev is not None:
            self._judge_repeat(m, prev, inits.other_request)
        inits.last_ok = m
        inits.accepted = inits.accepted or m
        caps = p.get("capabilities")
        inits.client_caps = caps if isinstance(caps, dict) else {}
        self._judge_caps_in(m, p, ok=True)

    def _judge_failure(self, m: Msg, p: dict[str, Any], after_failure: bool, busy: list[Msg], inits: _Inits) -> None:
        """A well-formed initialize that failed: INIT-004 after a failure, INIT-006 for a repeat, INIT-008/009."""
        label = f"initialize id={js(m.request.id)}"
        during = f"sent while initialize {', '.join('id=' + js(x.id) for x in busy)} was still unanswered"
        if after_failure and p.get("protocolVersion", 0) >= 2:
            inits.judged_004 = True
            self.warned("INIT-004", f"{label} (well-formed, version {p.get('protocolVersion')}) failed with "
                        f"{js(m.error_code)} after an earlier failed initialize; a corrected initialize "
                        "should succeed.", fr([m, inits.failed_init]))
        self._judge_refused_repeat(m, label, busy, during, inits)
        if p.get("protocolVersion", 0) >= 2:
            if busy:
                self._note_caps_in(m, p, during)
            else:
                self._judge_caps_in(m, p, ok=False)

    def _judge_refused_repeat(self, m: Msg, label: str, busy: list[Msg], during: str, inits: _Inits) -> None:
        """INIT-006 for a well-formed initialize refused after another."""
        if busy:
            # the spec lets the client repeat initialize; it does not say that a repeat may overlap one
            # still in progress
            self.noted("INIT-006", f"{label}, {during}, got error {js(m.error_code)}; whether a repeat may "
                       "overlap the previous initialize is not specified.", fr([m, m.request] + busy[:1]))
        elif inits.last_ok is not None and not inits.other_request:
            self.failed("INIT-006", f"{label}, a repeated initialize before any other request, got error "
                        f"{js(m.error_code)}; it must be answered like the first.", fr([m, inits.last_ok]))
        elif inits.last_ok is not None:
            self.noted("INIT-006", f"{label}, repeated after other requests, got error {js(m.error_code)} "
                       "(the spec does not say what happens then).", fr([m, m.request]))
        elif inits.accepted is not None:
            self.noted("INIT-006", f"{label} got error {js(m.error_code)} after the malformed initialize "
                       f"id={js(inits.accepted.request.id)} had been accepted (INIT-011 judges the acceptance); the "
                       "refused repeat is not judged.", fr([m, inits.accepted]))

    def _judge_end(self, inits: _Inits) -> None:
        """At the connection's end: INIT-004 when a malformed initialize initialized it after a failure;
        INIT-007 on the auth methods the agent offered."""
        failed_init, accepted, last_ok = inits.failed_init, inits.accepted, inits.last_ok
        if failed_init is not None and not inits.judged_004 and accepted is not None \
                and malformed_init(_params(accepted.request)) is not None:
            self.noted("INIT-004", f"initialize id={js(failed_init.request.id)} failed with "
                       f"{js(failed_init.error_code)}, then the malformed initialize id={js(accepted.request.id)} was "
                       "accepted (INIT-011 judges that) and initialized the connection, so no corrected initialize "
                       "followed a failed one on an uninitialized connection.", fr([accepted, failed_init]))
        if last_ok is not None and inits.client_caps is not None:
            res = last_ok.result if isinstance(last_ok.result, dict) else {}
            self._judge_auth_methods(last_ok, res, inits.client_caps)

    # -- INIT-005 / INIT-010 -----------------------------------------------------------------
    def _judge_result(self, m: Msg) -> None:
        res = m.result
        label = f"the initialize result (id {js(m.id)})"
        problems = []
        if not isinstance(res, dict):
            problems.append(f"it is {js(res)}, not an object")
            res = {}
        v = res.get("protocolVersion")
        if not is_int(v) or not 0 <= v <= 65535:
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
