"""One observed session between a client (an editor) and an agent, judged from both sides at once.

The bytes of each direction come in as they were forwarded (chunks that cut lines anywhere); they are
framed into lines exactly as the suite's transport frames its target's output (newline framing, no
line limit, a trailing CR tolerated) and each line becomes one frame of a single transcript, seen from
the client: ``sent`` = client -> agent, ``received`` = agent -> client. The agent-side monitors read
it as it is; the client-side monitors read the same frames with the directions swapped (in a client
run the suite plays the agent), so both programs are judged on the same session and every finding
points into the same transcript. Which side a finding speaks of is which monitors made it.
"""

from __future__ import annotations

import resource
from typing import Any, Callable

from ..rules.findings import FAIL, FLAKY, WARN, Finding
from ..rules.first_contact import V1_KEEP
from ..rules.monitor import MonitorContext
from ..thresholds import Thresholds
from ..wire.framing import LineSplitter
from ..wire.transcript import (EV_EOF, EV_NOTE, EV_START, EV_STDIN_CLOSED, EVENT, RECEIVED, SENT, Frame,
                               parse_line)

TO_AGENT = "client->agent"
TO_CLIENT = "agent->client"
SIDES = ("agent", "client")

# an event of the session as each side's monitors must read it: what the client did to the agent's stdin is,
# for the client-side monitors (whose "suite" is the agent), the client closing its own output, and so on
_CLIENT_VIEW_EVENT = {EV_STDIN_CLOSED: EV_EOF, EV_EOF: EV_STDIN_CLOSED, EV_START: EV_START, EV_NOTE: EV_NOTE}


def _swapped(frame: Frame) -> Frame:
    d = RECEIVED if frame.direction == SENT else SENT
    return Frame(frame.seq, frame.conn, d, frame.t, frame.raw, frame.msg, frame.problem, None, frame.detail)


class ObservedSession:
    """Feed it the bytes and events of one session (``data``, ``event``); ``finish`` ends the judging.

    ``name`` prefixes the findings' test ids (``NAME agent``, ``NAME client``); ``live`` is called with each
    failure or warning as it is found (side, finding). Times are seconds from the session's start; a frame's
    connection (``conn``) numbers the agent processes of a recorded scripted run (0 for tap). ``thresholds``:
    the monitors' (a scripted run's defaults unless given), read as for observed traffic."""

    def __init__(self, validator: Any, name: str = "tap", live: Callable[[str, Finding], None] | None = None,
                 thresholds: Thresholds = Thresholds()):
        from ..rules.monitors import AGENT_MONITORS, CLIENT_MONITORS
        self.name, self.live = name, live
        options = {**thresholds.monitor_options(observed=True), "validator": validator}
        # protocol None: each connection judged by the monitors of the version its initialize negotiated
        self.ctx = {"agent": MonitorContext(target_side="agent", protocol=None, options=dict(options)),
                    "client": MonitorContext(target_side="client", protocol=None, options=dict(options))}
        self.ctx["agent"].add_monitors(AGENT_MONITORS)
        self.ctx["client"].add_monitors(CLIENT_MONITORS)
        self._seen = {s: 0 for s in SIDES}
        self.frames: list[Frame] = []  # the client's view (the transcript file)
        # each direction's framing (no cut: the proxy forwards a line of any size, so the judge reads it whole)
        self._lines = {d: LineSplitter(self._line_of(d)) for d in (TO_AGENT, TO_CLIENT)}
        self._t: float | None = None  # the time of the chunk being framed
        self.client_info: dict[str, Any] | None = None  # initialize params, without clientCapabilities' bulk
        self.agent_init: dict[str, Any] | None = None
        self._init_id: Any = None
        self.finished = False
        # why the session was not judged: it negotiated a version the suite does not judge ("" when it did not)
        self.not_judged = ""
        self.protocol = 2  # the version the session (its first connection) negotiated: whose rules judge it

    # -- input ---------------------------------------------------------------------------------
    def data(self, direction: str, chunk: bytes, t: float | None = None) -> None:
        """Bytes forwarded in ``direction`` (``TO_AGENT`` or ``TO_CLIENT``), cut anywhere."""
        self._t = t
        self._lines[direction].feed(chunk)

    def _line_of(self, direction: str):
        return lambda raw, _oversize: self.line(direction, raw, self._t)

    def line(self, direction: str, raw: bytes, t: float | None = None, unterminated: bool = False,
             conn: int | None = None) -> Frame:
        """One framed line (without its newline); ``conn``: the connection (a recorded session's restarts)."""
        if raw.endswith(b"\r"):
            raw = raw[:-1]  # CRLF framing is tolerated on read, as the suite's transport does
        msg, problem = parse_line(raw)
        frame = Frame(len(self.frames), conn or 0,
                      SENT if direction == TO_AGENT else RECEIVED, t or 0.0,
                      raw, msg, problem, None, {"unterminated": True} if unterminated and problem is None else None)
        self._identify(frame)
        self._feed(frame, _swapped(frame))
        return frame

    def event(self, name: str, t: float | None = None, conn: int | None = None,
              detail: dict[str, Any] | None = None) -> None:
        """``start`` (argv, pid), ``stdin-closed`` (the client closed the agent's stdin), ``eof`` (the agent
        closed its stdout), ``exit`` (the agent's returncode and signal), ``note`` (text)."""
        if name in (EV_STDIN_CLOSED, EV_EOF):  # what is left of a line without its newline is a frame too
            d = TO_AGENT if name == EV_STDIN_CLOSED else TO_CLIENT
            rest = self._lines[d].end()
            if rest is not None:
                self.line(d, rest, t, unterminated=True, conn=conn)
        c = conn or 0
        frame = Frame(len(self.frames), c, EVENT, t or 0.0, event=name, detail=detail or None)
        mirrored = _CLIENT_VIEW_EVENT.get(name)  # the agent's exit is not the client's: its monitors skip it
        other = None if mirrored is None else Frame(frame.seq, c, EVENT, frame.t, event=mirrored, detail=frame.detail)
        self._feed(frame, other)

    def _feed(self, frame: Frame, client_view: Frame | None) -> None:
        self.frames.append(frame)
        self.ctx["agent"].feed(frame)
        if client_view is not None:
            self.ctx["client"].feed(client_view)
        if self.live is not None:
            self._tell_live()

    def _tell_live(self) -> None:
        for side in SIDES:
            fs = self.ctx[side].findings
            for f in fs[self._seen[side]:]:
                if f.status in (FAIL, WARN, FLAKY) and self._judges(side, f.rule):
                    self.live(side, f)
            self._seen[side] = len(fs)

    def _identify(self, frame: Frame) -> None:
        """The two programs' names: the client's initialize ``info`` and the agent's answer."""
        m = frame.msg
        if not isinstance(m, dict):
            return
        if frame.direction == SENT and m.get("method") == "initialize" and self.client_info is None:
            p = m.get("params") if isinstance(m.get("params"), dict) else {}
            self.client_info = {"info": p.get("info", p.get("clientInfo")), "protocolVersion": p.get("protocolVersion")}
            self._init_id = m.get("id")
        elif (frame.direction == RECEIVED and self.agent_init is None and self._init_id is not None
              and "method" not in m and m.get("id") == self._init_id and isinstance(m.get("result"), dict)):
            r = m["result"]
            self.agent_init = {"info": r.get("info", r.get("agentInfo")), "protocolVersion": r.get("protocolVersion"),
                               "capabilities": r.get("capabilities", r.get("agentCapabilities"))}

    # -- the end -------------------------------------------------------------------------------
    def _judges(self, side: str, rule: str) -> bool:
        from ..rules.catalog import load_catalog
        r = load_catalog().get(rule)
        return r is not None and r.side in (side, "both")

    def _version_not_judged(self) -> str:
        """Why no rules apply to this session: the agent answered a version the suite does not judge, or it
        answered a bare 2 and spoke version 1 later (rules/first_contact.py); "" when the rules of the version it
        negotiated (1 or 2) apply."""
        from ..rules.first_contact import v1_behind_v2
        v = (self.agent_init or {}).get("protocolVersion")  # what was negotiated (a v1 request answered 2 is v2)
        if isinstance(v, int) and not isinstance(v, bool) and v not in (1, 2):
            return (f"the agent answered ACP protocol version {v}: the session speaks version {v}, and this suite "
                    "judges versions 1 and 2, so no rules were applied")
        if self.protocol == 1:
            return ""
        behind = v1_behind_v2(self.frames)
        return (f"{behind.sentence.split(';')[0]}; its first answer said 2, so it was judged by no rules"
                if behind is not None else "")

    def finish(self) -> list[Finding]:
        """Every finding of the session, each with the side it speaks of as its test id (``NAME agent``...);
        none for a session of another protocol version (``not_judged`` says why)."""
        if not self.finished:
            self.finished = True
            for side in SIDES:
                self.ctx[side].finish()
            if self.live is not None:
                self._tell_live()
            self.protocol = self.ctx["agent"].connection_protocol(0)
            self.not_judged = self._version_not_judged()
        out = []
        for side in SIDES:
            for f in self.ctx[side].findings:
                if self.not_judged and f.rule not in V1_KEEP:
                    continue  # another version's session: only the negotiation rule every version shares
                if self._judges(side, f.rule):  # a both-side monitor also speaks of the other side's rules
                    f.test = self.test_id(side)
                    out.append(f)
        return out

    def test_id(self, side: str) -> str:
        return f"{self.name} {side}"


def peak_rss_kb() -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
