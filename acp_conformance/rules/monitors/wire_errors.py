"""JSON-RPC error handling on the wire: malformed input, invalid requests, ids, unknown methods,
notifications, the shape of responses, requests before initialize, inactive sessions.

Malformed input gets answers that cannot be matched to a request (``id: null``, or the readable id
of an invalid request). ``attribute`` pairs them with what the suite sent. Every line the suite wrote
that is owed such an answer (a line that is not JSON, an invalid request, a request with id null, an
empty batch, a batch without any matchable request) is *open* from the moment it is written until it
gets its answer or an answer to a request the suite wrote after it arrives (the scenarios write a
liveness request after each malformed line, so each line's answer window is delimited). An answer
is paired with a line:

1. by id: the answer carries the readable id of an owed line (an invalid request, or a truncated line
   that visibly carries it);
2. by content: ``error.data`` is exactly the JSON value of one owed line (some implementations echo
   the invalid message there);
3. by order, for id-null answers only, and only when exactly one line is open.

With several lines open an id-null answer could be any of theirs: it is recorded on each of them as
a possible answer (``Sent.maybe``) and paired with none, and a line whose window was closed without
an answer is likewise only "maybe" answered by an id-null answer arriving later. The judges report
those lines informational, never pass or fail on a guess. An id-null answer that no line can own
and that follows a notification of the suite is charged to that notification.
"""

from __future__ import annotations

import bisect

import json
from dataclasses import dataclass, field
from typing import Any

from ...wire.transcript import EVENT, RECEIVED, SENT, Frame, parse_line
from ..monitor import NOTIFICATION, REQUEST, RESPONSE, Rpc, classify
from ._common import ConnLog, ConnMonitor, Msg, fr, id_key, js, offers_config_options, raw_carries_id

# client -> agent requests of ACP v2 (the rest is "not implemented" for an agent)
AGENT_METHODS = ("initialize", "auth/login", "auth/logout", "session/new", "session/list", "session/delete",
                 "session/resume", "session/close", "session/prompt", "session/set_config_option",
                 "tool_call/cancel", "terminal/cancel")
DEFINED_CODES = (-32700, -32600, -32601, -32602, -32603, -32800, -32000, -32002, -32022)
PARSE, INVALID_REQ, NOT_FOUND_M, INVALID_PARAMS, SESSION_NOT_FOUND = -32700, -32600, -32601, -32602, -32002


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def valid_id(v: Any) -> bool:
    return isinstance(v, str) or _is_int(v)


# -- what the suite sent, and which answers belong to it ---------------------------------------
@dataclass(eq=False)
class Sent:
    frame: Frame
    kind: str  # parse | invalid | nullid | empty | batch | silent | maybe | request | other
    value: Any = None
    answers: list[Frame] = field(default_factory=list)  # received frames charged to this line
    how: str | None = None  # how the first answer was paired: id | data | order | batch | last
    maybe: list[Frame] = field(default_factory=list)  # answers that may be this line's, paired with none
    closed_by: Frame | None = None  # the answer to a later request that closed this line's window unanswered

    @property
    def batch_like(self) -> bool:
        return self.frame.raw.lstrip().startswith(b"[")

    @property
    def ambiguous(self) -> bool:
        """Is it undecidable which answer (if any) is this line's? Then no verdict may rest on it."""
        return bool(self.maybe) and (not self.answers or self.how == "order")

    def charge(self, f: Frame, how: str) -> None:
        self.answers.append(f)
        if self.how is None:
            self.how = how


def _sent_kind(frame: Frame) -> tuple[str, Any]:
    raw = frame.raw
    if not raw.strip():
        return "other", None
    value, problem = parse_line(raw)  # strict JSON: a NaN line is owed -32700, not -32600
    if problem is not None:
        return "parse", None
    if isinstance(value, list):
        if not value:
            return "empty", value
        return "batch", value
    kind = classify(value)
    if kind == REQUEST:
        return ("request" if valid_id(value.get("id")) else "nullid"), value
    if kind == NOTIFICATION:
        return "silent", value
    if kind == RESPONSE:
        return "other", value
    if isinstance(value, dict) and "method" in value and "id" not in value:
        return "maybe", value  # a malformed notification: JSON-RPC implementations differ
    return "invalid", value


def _batch_owed(value: list) -> tuple[int, int, int]:
    """(requests with a usable id, members owed a null-id error, notifications) of a batch."""
    reqs = invalid = notes = 0
    for x in value:
        k = classify(x)
        if k == REQUEST and valid_id(x.get("id")):
            reqs += 1
        elif k == NOTIFICATION:
            notes += 1
        elif k == RESPONSE:
            pass
        elif isinstance(x, dict) and "method" in x and "id" not in x:
            pass
        else:
            invalid += 1
    return reqs, invalid, notes


def _leniently_readable(raw: bytes) -> bool:
    """Is the line JSON once a leading byte order mark is dropped and bytes that are not UTF-8 are
    replaced? (Not JSON as written, but a reader may read it so.)"""
    text = raw.decode("utf-8", "replace").removeprefix("\ufeff")
    if text == raw.decode("utf-8", "replace"):
        try:
            raw.decode("utf-8")
            return False  # valid UTF-8 without a byte order mark: its problem is the JSON itself
        except UnicodeDecodeError:
            pass
    value, problem = parse_line(text.encode("utf-8"))
    return problem is None


def _owed(s: Sent) -> bool:
    """Is the line owed an answer that no request id can match?"""
    if s.kind in ("parse", "invalid", "nullid", "empty"):
        return True
    if s.kind == "batch":
        reqs, invalid, _ = _batch_owed(s.value)
        return bool(invalid and not reqs)
    return False


def _same_json(a: Any, b: Any) -> bool:
    try:
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    except (TypeError, ValueError):
        return False


def _echoed(ms: list[Msg], owed: list[Sent]) -> tuple[Sent | None, str]:
    """The owed line an answer names: by its readable id, or by error.data holding exactly its JSON value."""
    if len(ms) != 1 or not isinstance(ms[0].msg, dict):
        return None, ""
    msg = ms[0].msg
    rid = msg.get("id")
    if valid_id(rid):
        hit = [s for s in owed if not s.answers and (
            (s.kind == "invalid" and isinstance(s.value, dict) and valid_id(s.value.get("id"))
             and id_key(s.value["id"]) == id_key(rid))
            or (s.kind == "parse" and raw_carries_id(s.frame.raw, rid)))]
        return (hit[-1], "id") if hit else (None, "")
    err = msg.get("error")
    if rid is None and isinstance(err, dict) and "data" in err:
        hit = [s for s in owed if not s.answers and s.kind != "parse" and _same_json(s.value, err["data"])]
        if len(hit) == 1:
            return hit[0], "data"
    return None, ""


def attribute(frames: list[Frame], msgs: list[Msg]) -> tuple[list[Sent], list[tuple[Frame, Sent | None]]]:
    """Pair un-matchable answers with the suite's lines (see the module docstring). Returns (the suite's
    lines, stray answers as (frame, the notification it is charged to, or None))."""
    by_frame: dict[int, list[Msg]] = {}
    for m in msgs:
        by_frame.setdefault(m.frame.seq, []).append(m)
    sent_items: list[Sent] = []
    by_seq: dict[int, Sent] = {}
    owed: list[Sent] = []  # every line owed an un-matchable answer, in order
    open_: list[Sent] = []  # those whose answer window is still open
    stray: list[tuple[Frame, Sent | None]] = []
    last: Sent | None = None  # the latest line of the suite
    for f in frames:
        if f.direction == SENT:
            kind, value = _sent_kind(f)
            s = Sent(f, kind, value)
            sent_items.append(s)
            by_seq[f.seq] = s
            if _owed(s):
                owed.append(s)
                open_.append(s)
            last = s
            continue
        if f.direction != RECEIVED or f.problem is not None:
            continue
        ms = by_frame.get(f.seq, [])
        matched = [m for m in ms if m.kind == RESPONSE and m.request is not None]
        if matched:
            owner = by_seq.get(matched[0].request.frame.seq)
            if owner is not None and owner.kind == "batch":
                owner.charge(f, "batch")
            # the target answered a request written after these lines: their windows are over
            first = min(m.request.frame.seq for m in matched)
            for s in [s for s in open_ if s.frame.seq < first]:
                open_.remove(s)
                s.closed_by = f
            continue
        is_answer = (isinstance(f.msg, list) and all(m.kind == RESPONSE for m in ms)) or \
            (len(ms) == 1 and ms[0].kind == RESPONSE)
        if not is_answer:
            continue
        s, how = _echoed(ms, owed)
        if s is not None:
            s.charge(f, how)
            if s in open_:
                open_.remove(s)
            continue
        if not all(isinstance(m.msg, dict) and m.msg.get("id") is None for m in ms):
            continue  # an answer with an id that answers nothing: ERR-004 / ERR-008 judge it
        if len(open_) == 1:
            open_.pop().charge(f, "order")
            continue
        if open_:
            for s in open_:  # any of them: paired with none
                s.maybe.append(f)
            continue
        late = [s for s in owed if not s.answers and s.closed_by is not None]
        quiet = last is not None and (last.kind == "silent" or (
            last.kind == "batch" and _batch_owed(last.value)[:2] == (0, 0)))
        if late:
            # perhaps the late answer of a line whose window was closed unanswered: nothing is charged on a guess
            for s in late + ([last] if last is not None and (quiet or last.kind in ("maybe", "batch")) else []):
                s.maybe.append(f)
            stray.append((f, None))
        elif last is not None and last.kind in ("maybe", "batch") and (
                last.kind == "maybe" or _batch_owed(last.value)[:2] != (0, 0)):
            last.charge(f, "last")  # e.g. a batch refused as a whole with one -32600
        else:
            # an id-null answer to nothing: blamed on the suite's latest line when it was a notification
            stray.append((f, last if quiet else None))
    return sent_items, stray


def _undecided(s: Sent) -> str:
    """Why the answer of an ambiguous line is not judged (see ``attribute``)."""
    a = s.maybe[0]
    return (f"the id-null answer at t={a.t:.2f} ({js(a.msg, 120)}) may be its answer, but it could not be paired "
            "with this line (another line was also awaiting an answer, or the answer came after a later request "
            "had been answered); not judged.")


def null_error(value: Any, code: int, echo: Any = None) -> str | None:
    """Why ``value`` is not one error response with ``code`` and id null (or the readable ``echo``)."""
    if isinstance(value, list):
        return f"an array of {len(value)} member(s) instead of a single response object"
    if not isinstance(value, dict):
        return f"{js(value)} instead of a response object"
    err = value.get("error")
    if not isinstance(err, dict):
        return f"a response without an error object: {js(value, 160)}"
    if err.get("code") != code:
        return f"error code {js(err.get('code'))} instead of {code}"
    rid = value.get("id", "<missing>")
    if rid is not None and not (echo is not None and id_key(rid) == id_key(echo)):
        return f"id {js(rid)} instead of null"
    return None


class FrameLogMixin:
    """Keeps every frame of each connection (ConnLog keeps messages only; an empty batch has none)."""

    def _frames_of(self, conn: int) -> list[Frame]:
        d = self.__dict__.setdefault("_frames", {})
        return d.setdefault(conn, [])

    def on_frame(self, frame: Frame, rpc: Rpc | None) -> None:
        if frame.direction != EVENT:
            log = self.conns.get(frame.conn)
            if log is None or not log.closed:
                self._frames_of(frame.conn).append(frame)
        super().on_frame(frame, rpc)


def initialized_at(log: ConnLog) -> float | None:
    """Time of the first successful initialize response of the connection (the agent's, whichever side the
    target plays: a response answers a request of the other direction)."""
    for m in log.msgs:
        if m.kind == RESPONSE and m.ok and m.request is not None \
                and m.request.method == "initialize" and not m.duplicate:
            return m.t
    return None


def _init_result(log: ConnLog) -> dict[str, Any] | None:
    for m in log.msgs:
        if m.direction == RECEIVED and m.kind == RESPONSE and m.ok and m.request is not None \
                and m.request.method == "initialize" and isinstance(m.result, dict):
            return m.result
    return None


class WireErrorMonitor(FrameLogMixin, ConnMonitor):
    side = "both"  # judges the target's frames in either role (ctx.target_side)
    rules = ("ERR-005", "ERR-006", "ERR-007", "ERR-008", "ERR-009", "ERR-010", "ERR-011", "ERR-012",
             "ERR-013", "ERR-014", "ERR-015")
    expected = {
        "ERR-005": "A request for a method the agent does not implement (or a capability-gated method it did not "
                   "advertise) gets error -32601 Method not found.",
        "ERR-006": "A line that is not valid JSON gets one Parse error (-32700) with id null, and the connection "
                   "keeps working.",
        "ERR-007": "A JSON value that is not a valid Request object gets Invalid Request (-32600), with id null "
                   "(or the readable id).",
        "ERR-008": "Request ids (integers or strings) are echoed exactly: same JSON type and value.",
        "ERR-009": "Request ids are never null: the agent never sends a request with id null (and a request with "
                   "id null is refused with -32600).",
        "ERR-010": "The agent never reuses a request id while an earlier request with that id awaits its "
                   "response.",
        "ERR-011": "Notifications never get a response, neither success nor error, even when unknown or "
                   "malformed.",
        "ERR-012": "Responses are well-formed JSON-RPC 2.0: jsonrpc \"2.0\", the request id, exactly one of "
                   "result/error; an error has an integer code and a non-empty string message.",
        "ERR-013": "Malformed parameters get -32602 Invalid params (a success is a failure).",
        "ERR-014": "A request other than initialize before initialization has completed is rejected with -32600.",
        "ERR-015": "Error codes inside the reserved ranges (-32768..-32000, -32899..-32800) are only the ones "
                   "ACP/JSON-RPC define.",
    }

    def on_msg(self, log: ConnLog, m: Msg) -> None:
        if m.direction == RECEIVED and m.is_dict and "method" not in m.msg and (
                "result" in m.msg or "error" in m.msg or m.kind == RESPONSE):
            self._judge_shape(m)
        if m.direction == RECEIVED and m.kind == RESPONSE and isinstance(m.error, dict):
            code = m.error.get("code")
            if _is_int(code):
                if (-32768 <= code <= -32000 or -32899 <= code <= -32800) and code not in DEFINED_CODES:
                    self.warned("ERR-015", f"the {self.ctx.target_side} answered {m.method or 'a request'} (id {js(m.id)}) with "
                                f"error code {code}, inside a reserved range but not defined by ACP/JSON-RPC.",
                                fr([m, m.request]))
                else:
                    self.pass_few("ERR-015", f"error code {code} (for {m.method or 'a request'}) is allowed.",
                                  [m])

    # -- ERR-012 ------------------------------------------------------------------------------
    def _judge_shape(self, m: Msg) -> None:
        d = m.msg
        label = f"the response at t={m.t:.2f} (id {js(d.get('id', '<missing>'))})"
        problems = []
        if d.get("jsonrpc") != "2.0":
            problems.append(f"jsonrpc is {js(d.get('jsonrpc', '<missing>'))}, not \"2.0\"")
        if "id" not in d:
            problems.append("it has no id")
        if ("result" in d) == ("error" in d):
            problems.append("it has both result and error" if "result" in d else "it has neither result nor error")
        err = d.get("error")
        if "error" in d:
            if not isinstance(err, dict):
                problems.append(f"error is {js(err)}, not an object")
            else:
                if not _is_int(err.get("code")):
                    problems.append(f"error.code is {js(err.get('code', '<missing>'))}, not an integer")
                msg = err.get("message")
                if not isinstance(msg, str) or not msg.strip():
                    problems.append(f"error.message is {js(msg if 'message' in err else '<missing>')}, not a "
                                    "non-empty string")
                elif "\n" in msg.strip():
                    self.warned("ERR-012", f"{label}: error.message spans several lines (it should be a concise "
                                "sentence): {js(msg, 120)}.", fr([m]))
        if problems:
            self.failed("ERR-012", f"{label} is not a well-formed JSON-RPC 2.0 response: {'; '.join(problems)}.",
                        fr([m, m.request]))
        else:
            self.pass_few("ERR-012", f"{label} is a well-formed JSON-RPC 2.0 response.", [m])

    # -- per connection -----------------------------------------------------------------------
    def analyze(self, log: ConnLog) -> None:
        frames = self._frames_of(log.conn)
        sent, stray = attribute(frames, log.msgs)
        init_t = initialized_at(log)
        self._malformed(log, sent)
        self._notifications(log, sent, stray)
        self._before_init(log, init_t)
        self._methods(log, init_t)
        self._ids(log)
        self._agent_requests(log)
        self._params(log, init_t)

    def _later_health(self, log: ConnLog, after: Frame) -> tuple[bool | None, Msg | None]:
        """Did a later request of the suite on this connection get its response? (None: no later request)"""
        seqs, reqs, answered = self._requests_of(log)
        i = bisect.bisect_right(seqs, after.seq)
        if i == len(reqs):
            return None, None
        if answered[i] is not None:
            return True, answered[i]
        return False, reqs[i]

    def _requests_of(self, log: ConnLog) -> tuple[list[int], list[Msg], list[Msg | None]]:
        """The suite's requests of the connection in order, and from each on the first one answered: computed
        once per connection (a session with many notifications asks for every one of them)."""
        cache = getattr(self, "_requests_cache", None)
        if cache is None or cache[0] is not log or cache[1] != len(log.msgs):
            reqs = sorted((m for m in log.msgs if m.direction == SENT and m.kind == REQUEST and valid_id(m.id)),
                          key=lambda m: m.frame.seq)
            answered: list[Msg | None] = [None] * len(reqs)
            nxt = None
            for k in range(len(reqs) - 1, -1, -1):
                if reqs[k].responses:
                    nxt = reqs[k]
                answered[k] = nxt
            cache = self._requests_cache = (log, len(log.msgs), ([m.frame.seq for m in reqs], reqs, answered))
        return cache[2]

    def _malformed(self, log: ConnLog, sent: list[Sent]) -> None:
        for s in sent:
            if s.kind == "parse" and not s.batch_like:  # TRANSPORT-009 judges a broken batch
                rule, code = "ERR-006", PARSE
            elif s.kind == "invalid":
                rule, code = "ERR-007", INVALID_REQ
            elif s.kind == "nullid":
                self._judge_nullid(log, s)
                continue
            else:
                continue
            quoted = js(s.frame.raw.decode("utf-8", "replace"), 90)
            echo = s.value.get("id") if isinstance(s.value, dict) and valid_id(s.value.get("id")) else None
            if rule == "ERR-006" and _leniently_readable(s.frame.raw) and (
                    not s.answers or null_error(s.answers[0].msg, code, echo) is not None):
                self.noted(rule, f"the suite wrote {quoted}: JSON once a byte order mark is dropped or bytes that "
                           "are not UTF-8 are replaced, which a reader may do (RFC 8259 lets parsers ignore a byte "
                           "order mark; the spec does not say a receiver must refuse bad UTF-8); the agent did not "
                           "answer it -32700.", fr(s.answers[:1] + [s.frame]))
                continue
            if s.ambiguous:
                self.noted(rule, f"the suite wrote {quoted}; {_undecided(s)}", fr([s.maybe[0], s.frame]))
                continue
            if not s.answers:
                if s.closed_by is not None:
                    why = (f"a request written after it was answered at t={s.closed_by.t:.2f}, and no answer that "
                           f"could be this line's arrived before {log.end_desc or 'the end of the test'}")
                else:
                    why = log.end_desc if log.end else "nothing answered it"
                self.failed(rule, f"the suite wrote {quoted} and got no {code} answer ({why}).",
                            fr([s.frame] + ([s.closed_by] if s.closed_by is not None else [])))
                continue
            a = s.answers[0]
            why = null_error(a.msg, code, echo)
            if why is not None:
                self.failed(rule, f"the suite wrote {quoted} and the agent answered with {why}.", fr([a, s.frame]))
                continue
            if rule == "ERR-006":
                ok, nxt = self._later_health(log, s.frame)
                if ok is False:
                    self.failed(rule, f"after the parse error for {quoted} the agent answered no further request "
                                f"({nxt.method} id={js(nxt.id)} got no response; {log.end_desc}).",
                                fr([nxt, a, s.frame]))
                    continue
                tail = " and answered the next request" if ok else ""
                self.pass_few(rule, f"the suite wrote {quoted}; the agent answered -32700 with id null{tail}.",
                              [a, s.frame])
            else:
                self.pass_few(rule, f"the suite wrote {quoted}; the agent answered -32600 (id "
                              f"{js(a.msg.get('id'))}).", [a, s.frame], key=quoted, limit=1)

    def _judge_nullid(self, log: ConnLog, s: Sent) -> None:
        method = s.value.get("method")
        if s.ambiguous:
            self.noted("ERR-009", f"the suite sent {method} with id null; {_undecided(s)}", fr([s.maybe[0], s.frame]))
            return
        if not s.answers:
            self.noted("ERR-009", f"the suite sent {method} with id null and got no answer; what a receiver does "
                       "with a null id is not specified.", fr([s.frame]))
            return
        a = s.answers[0]
        why = null_error(a.msg, INVALID_REQ)
        if why is None:
            self.pass_few("ERR-009", f"the suite sent {method} with id null; the agent refused it with -32600.",
                          [a, s.frame])
        else:
            self.noted("ERR-009", f"the suite sent {method} with id null and got {why}; -32600 is expected, but "
                       "receiver behaviour is not specified.", fr([a, s.frame]))

    def _notifications(self, log: ConnLog, sent: list[Sent], stray: list[tuple[Frame, Sent | None]]) -> None:
        blamed: set[int] = set()
        for f, note in stray:
            if note is None or note.kind != "silent":
                continue  # ERR-004 judges responses to nothing; a notification batch is TRANSPORT-007's
            blamed.add(note.frame.seq)
            self.failed("ERR-011", f"the suite sent the notification {note.value.get('method')!r} and the {self.ctx.target_side} "
                        f"answered it (t={f.t:.2f}): {js(f.msg, 160)}.", fr([f, note.frame]))
        for s in sent:
            if s.kind != "silent" or s.frame.seq in blamed:
                continue
            method = s.value.get("method")
            if method == "session/update":
                continue
            if s.maybe:
                self.noted("ERR-011", f"after the notification {method!r} an id-null answer arrived "
                           f"(t={s.maybe[0].t:.2f}) that may answer it or may be the late answer to an earlier line "
                           "that was still unanswered; not judged.", fr([s.maybe[0], s.frame]))
                continue
            ok, _ = self._later_health(log, s.frame)
            if ok:
                self.pass_few("ERR-011", f"the notification {method!r} got no response and the next request was "
                              "answered.", [s.frame], key=method, limit=1)

    def _before_init(self, log: ConnLog, init_t: float | None) -> None:
        for m in log.msgs:
            if m.direction != SENT or m.kind != REQUEST or not valid_id(m.id) or m.method == "initialize":
                continue
            if init_t is not None and m.t >= init_t:
                continue
            if not m.responses:
                continue
            r = m.responses[0]
            if init_t is not None and r.t > init_t:
                continue  # overlapped with the initialize exchange: not judged
            label = f"{m.method} id={js(m.id)} sent before initialize had succeeded on this connection"
            if r.ok:
                self.failed("ERR-014", f"{label} succeeded ({js(r.result, 120)}); it must be rejected with -32600.",
                            fr([r, m]))
            elif r.error_code == INVALID_REQ:
                self.pass_few("ERR-014", f"{label} was rejected with -32600.", [r, m])
            else:
                self.noted("ERR-014", f"{label} was rejected with {js(r.error_code)}; -32600 is expected (only the "
                           "site's error page names the code; the seeds do not).", fr([r, m]))

    def _methods(self, log: ConnLog, init_t: float | None) -> None:
        if init_t is None:
            return
        res = _init_result(log) or {}
        caps = res.get("capabilities") if isinstance(res.get("capabilities"), dict) else {}
        sess = caps.get("session") if isinstance(caps.get("session"), dict) else {}
        gated = {}
        if not isinstance(sess.get("delete"), dict):
            gated["session/delete"] = "capabilities.session.delete is not advertised"
        if not res.get("authMethods"):
            gated["auth/login"] = gated["auth/logout"] = "no authMethods are advertised"
        for m in log.msgs:
            if m.direction != SENT or m.kind != REQUEST or not valid_id(m.id) or m.t < init_t or not m.responses:
                continue
            why = None
            if m.method not in AGENT_METHODS:
                why = "not an ACP v2 agent method"
            elif m.method in gated:
                why = gated[m.method]
            if why is None:
                continue
            r = m.responses[0]
            label = f"{m.method} id={js(m.id)} ({why})"
            if r.error_code == NOT_FOUND_M:
                self.pass_few("ERR-005", f"{label} got -32601.", [r, m], key=m.method, limit=1)
            elif r.ok:
                self.failed("ERR-005", f"{label} succeeded with {js(r.result, 120)}; -32601 was expected.",
                            fr([r, m]))
            else:
                self.failed("ERR-005", f"{label} got error {js(r.error_code)} instead of -32601.", fr([r, m]))

    def _ids(self, log: ConnLog) -> None:
        reqs = [m for m in log.msgs if m.direction == SENT and m.kind == REQUEST and valid_id(m.id)]
        strays = [m for m in log.msgs if m.direction == RECEIVED and m.kind == RESPONSE and m.request is None
                  and m.id is not None]
        for s in strays:
            twin = next((r for r in reqs if not r.responses and id_key(r.id) != id_key(s.id)
                         and str(r.id) == str(s.id) and r.order < s.order), None)
            if twin is not None:
                self.failed("ERR-008", f"{twin.method} was sent with id {js(twin.id)} ({type(twin.id).__name__}) "
                            f"and answered with id {js(s.id)} ({type(s.id).__name__}).", fr([s, twin]))
        seen: set[str] = set()
        for r in reqs:
            if not r.responses or r.responses[0].duplicate:
                continue
            kind = type(r.id).__name__
            key = kind + (":neg" if _is_int(r.id) and r.id < 0 else "") + (":big" if _is_int(r.id) and r.id > 2**31
                                                                           else "")
            if key in seen:
                continue
            seen.add(key)
            self.pass_few("ERR-008", f"{r.method} with id {js(r.id)} ({kind}) was answered with the identical id.",
                          [r.responses[0], r], key=key, limit=1)

    def _agent_requests(self, log: ConnLog) -> None:
        reqs = [m for m in log.msgs if m.direction == RECEIVED and m.kind == REQUEST]
        if not reqs:
            return
        bad009 = bad010 = False
        pending: dict[tuple[str, Any], Msg] = {}
        events = sorted([(m.order, "req", m) for m in reqs] +
                        [(m.order, "resp", m) for m in log.msgs if m.direction == SENT and m.kind == RESPONSE],
                        key=lambda x: x[0])
        for _, what, m in events:
            if what == "resp":
                pending.pop(id_key(m.id), None)
                continue
            if not valid_id(m.id):
                bad009 = True
                self.failed("ERR-009", f"the {self.ctx.target_side} sent the request {m.method!r} with id {js(m.id)}; request ids "
                            "are integers or strings, never null.", fr([m]))
                continue
            k = id_key(m.id)
            if k in pending:
                bad010 = True
                self.failed("ERR-010", f"the {self.ctx.target_side} sent {m.method!r} with id {js(m.id)} while its earlier request "
                            f"{pending[k].method!r} with that id was still awaiting a response.", fr([m, pending[k]]))
            pending[k] = m
        if not bad009:
            self.pass_few("ERR-009", f"all {len(reqs)} request(s) the {self.ctx.target_side} sent carried an integer or string id.",
                          [reqs[0]])
        if not bad010:
            self.pass_few("ERR-010", f"the {self.ctx.target_side}'s {len(reqs)} request(s) never reused an id that was still "
                          "pending.", [reqs[0]])

    def _params(self, log: ConnLog, init_t: float | None) -> None:
        if init_t is None:
            return
        config_offered = offers_config_options(log.msgs)
        for m in log.msgs:
            if m.direction != SENT or m.kind != REQUEST or not valid_id(m.id) or m.t < init_t or not m.responses:
                continue
            why = _malformed_params(m.method, m.params)
            if why is None:
                continue
            r = m.responses[0]
            label = f"{m.method} id={js(m.id)} with malformed params ({why})"
            if r.error_code == INVALID_PARAMS:
                self.pass_few("ERR-013", f"{label} got -32602.", [r, m], key=m.method, limit=1)
            elif r.ok:
                self.warned("ERR-013", f"{label} succeeded ({js(r.result, 100)}); -32602 was expected.", fr([r, m]))
            elif r.error_code == SESSION_NOT_FOUND:
                self.noted("ERR-013", f"{label} got -32002: its session is unknown too.", fr([r, m]))
            elif r.error_code == -32601 and m.method == "session/set_config_option" and not config_offered:
                self.noted("ERR-013", f"{label} got -32601: the agent advertised no config options, so it need "
                           "not support the method.", fr([r, m]))
            else:
                self.warned("ERR-013", f"{label} got error {js(r.error_code)}; -32602 was expected.", fr([r, m]))


def _malformed_params(method: str | None, p: Any) -> str | None:
    if not isinstance(p, dict):
        return None
    if method == "session/new":
        if "cwd" not in p:
            return "no cwd"
        if not isinstance(p.get("cwd"), str):
            return f"cwd is {js(p.get('cwd'))}"
    elif method == "session/prompt":
        if "prompt" in p and not isinstance(p.get("prompt"), list):
            return f"prompt is {js(p.get('prompt'), 40)}, not an array"
    elif method == "session/set_config_option":
        if isinstance(p.get("sessionId"), str) and "configId" not in p:
            return "no configId"
    elif method == "session/list":
        if p.get("cursor") is not None and not isinstance(p.get("cursor"), str):
            return f"cursor is {js(p.get('cursor'))}"
    return None


ACTIVE_SCOPED = ("session/prompt", "session/set_config_option")


class InactiveSessionMonitor(ConnMonitor):
    """ERR-003: a session the test knows, used on a connection where it is not active."""

    rules = ("ERR-003",)
    expected = {
        "ERR-003": "A session is active on a connection only once it was created or resumed there, until it is "
                   "closed; a session/prompt or session/set_config_option for it otherwise gets -32002.",
    }

    def __init__(self, ctx):
        super().__init__(ctx)
        self.known: set[str] = set()  # created (or resumed) anywhere in this test
        self.deleted: set[str] = set()

    def analyze(self, log: ConnLog) -> None:
        from .errors import _well_formed  # the same notion of "otherwise valid params" as ERR-001
        active: set[str] = set()
        init = False
        for m in log.msgs:
            if m.direction == RECEIVED and m.kind == RESPONSE and m.request is not None and not m.duplicate:
                rq, sid = m.request, m.request.session_id
                if rq.method == "initialize" and m.ok:
                    init = True
                elif rq.method == "session/new" and m.ok and isinstance(m.result, dict) \
                        and isinstance(m.result.get("sessionId"), str):
                    active.add(m.result["sessionId"])
                    self.known.add(m.result["sessionId"])
                elif rq.method == "session/resume" and m.ok and isinstance(sid, str):
                    active.add(sid)
                    self.known.add(sid)
                elif rq.method in ("session/close", "session/delete") and isinstance(sid, str):
                    if m.ok or m.error_code == SESSION_NOT_FOUND:
                        active.discard(sid)
                    if rq.method == "session/delete" and m.ok:
                        self.deleted.add(sid)
                continue
            if m.direction != SENT or m.kind != REQUEST or m.method not in ACTIVE_SCOPED or not init:
                continue
            sid = m.session_id
            if not isinstance(sid, str) or sid not in self.known or sid in active or sid in self.deleted:
                continue  # unknown sessions are ERR-001's
            if any(p.direction == SENT and p.kind == REQUEST and p.method in ("session/close", "session/delete",
                                                                               "session/resume")
                   and p.session_id == sid and not p.responses for p in log.msgs if p.order < m.order):
                continue  # a close or resume of it was still in flight
            if not m.responses:
                continue
            r = m.responses[0]
            label = f"{m.method} id={js(m.id)} for session {sid!r}, which is not active on this connection"
            if r.error_code == SESSION_NOT_FOUND:
                self.pass_few("ERR-003", f"{label}, got -32002.", [r, m])
            elif r.ok:
                self.failed("ERR-003", f"{label} (closed here, or created on another connection and not resumed), "
                            f"succeeded: {js(r.result, 120)}.", fr([r, m]))
            elif _well_formed(m.method, m.params if isinstance(m.params, dict) else {}):
                self.failed("ERR-003", f"{label}, got error {js(r.error_code)} instead of -32002.", fr([r, m]))
            else:
                self.noted("ERR-003", f"{label}, got error {js(r.error_code)}; its other params are invalid too.",
                           fr([r, m]))
