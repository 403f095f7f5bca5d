"""initialize: protocol version negotiation (highest supported <= requested, else -32022).

The suite is a v2 client: it assumes 2 is the highest version a v2 agent supports. Errors are
judged only for a well-formed first initialize of a connection (integer protocolVersion in
0..65535, an ``info`` object); a repeated initialize after a successful one, or one with broken
params, may legitimately get other errors.
"""

from __future__ import annotations

from typing import Any

from ...wire.transcript import RECEIVED, SENT
from ..monitor import REQUEST, RESPONSE
from ._common import ConnLog, ConnMonitor, Msg, fr, js

V2 = 2
UNSUPPORTED = -32022


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class InitializeMonitor(ConnMonitor):
    rules = ("INIT-001", "INIT-002", "INIT-003")
    expected = {
        "INIT-001": "Asked for protocol version 2 or later, a v2 agent answers initialize with protocolVersion 2 "
                    "(its highest supported version at or below the request), not an error.",
        "INIT-002": "The agent never answers initialize with a protocolVersion greater than the requested one.",
        "INIT-003": "When no supported version is at or below the requested one, initialize fails with -32022 and "
                    "error.data {requested, supported} (supported: non-empty array of versions above the request).",
    }

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
        if not _is_int(P):
            return
        well_formed = 0 <= P <= 65535 and isinstance(p.get("info"), dict) and first
        frames = fr([m, rq])
        label = f"initialize id={js(rq.id)} with protocolVersion {P}"
        if m.ok:
            res = m.result if isinstance(m.result, dict) else {}
            V = res.get("protocolVersion")
            if not _is_int(V):
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
            return
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
        if data.get("requested") != P or not _is_int(data.get("requested")):
            return f"-32022 but data.requested is {js(data.get('requested'))}, not {P}"
        sup = data.get("supported")
        if not isinstance(sup, list) or not sup:
            return f"-32022 but data.supported is {js(sup)}, not a non-empty array"
        if not all(_is_int(v) and v > P for v in sup):
            return f"-32022 but data.supported {js(sup)} holds values that are not integers above {P}"
        return None
