"""Which answer belongs to which line the suite wrote: the attribution of raw frames, shared by the
wire-level families (ERR, EXT, TRANSPORT, CANCEL).

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

import json
from dataclasses import dataclass, field
from typing import Any

from ...wire.transcript import RECEIVED, SENT, Frame, parse_line
from ..monitor import NOTIFICATION, REQUEST, RESPONSE, classify
from ._common import ConnLog, Msg, id_key, js, raw_carries_id

DEFINED_CODES = (-32700, -32600, -32601, -32602, -32603, -32800, -32000, -32002, -32022)
PARSE, INVALID_REQ, NOT_FOUND_M, INVALID_PARAMS, SESSION_NOT_FOUND = -32700, -32600, -32601, -32602, -32002


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def valid_id(v: Any) -> bool:
    return isinstance(v, str) or is_int(v)


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


def batch_owed(value: list) -> tuple[int, int, int]:
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


def leniently_readable(raw: bytes) -> bool:
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
        reqs, invalid, _ = batch_owed(s.value)
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
            last.kind == "batch" and batch_owed(last.value)[:2] == (0, 0)))
        if late:
            # perhaps the late answer of a line whose window was closed unanswered: nothing is charged on a guess
            for s in late + ([last] if last is not None and (quiet or last.kind in ("maybe", "batch")) else []):
                s.maybe.append(f)
            stray.append((f, None))
        elif last is not None and last.kind in ("maybe", "batch") and (
                last.kind == "maybe" or batch_owed(last.value)[:2] != (0, 0)):
            last.charge(f, "last")  # e.g. a batch refused as a whole with one -32600
        else:
            # an id-null answer to nothing: blamed on the suite's latest line when it was a notification
            stray.append((f, last if quiet else None))
    return sent_items, stray


def undecided(s: Sent) -> str:
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


def initialized_at(log: ConnLog) -> float | None:
    """Time of the first successful initialize response of the connection (the agent's, whichever side the
    target plays: a response answers a request of the other direction)."""
    for m in log.msgs:
        if m.kind == RESPONSE and m.ok and m.request is not None \
                and m.request.method == "initialize" and not m.duplicate:
            return m.t
    return None


def init_result(log: ConnLog) -> dict[str, Any] | None:
    for m in log.msgs:
        if m.direction == RECEIVED and m.kind == RESPONSE and m.ok and m.request is not None \
                and m.request.method == "initialize" and isinstance(m.result, dict):
            return m.result
    return None

