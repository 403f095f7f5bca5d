"""Envelope and framing cases: what a client may write on the wire besides well-formed requests.

Each case is one or more raw lines (text, or bytes for invalid UTF-8) written as they are, with the
catalog rules that say how a correct agent answers (ERR-*, TRANSPORT-*). The monitors judge the
answers; where the spec is silent (``rules`` empty) the outcome is only recorded, and the one
blocking requirement is liveness: after every case the fuzzer sends a probe request, which must be
answered. The cases are data, drawn by the state machine like any other step.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass

from hypothesis import strategies as st

from .strategies import JSON_INT_MAX, request_ids


@dataclass(frozen=True)
class EnvelopeCase:
    name: str
    lines: tuple[str | bytes, ...]  # each written as one framed line
    rules: tuple[str, ...]  # what the catalog says about the answer (empty: the spec is silent)

    @property
    def informational(self) -> bool:
        """The spec is silent (or the monitors cannot yet read the case): findings it provokes are
        recorded INFORMATIONAL; only liveness after it blocks."""
        return not self.rules or self.name in INFORMATIONAL_KINDS


# cases whose answers the monitors read as ordinary requests although they are not (illegal ids,
# a batch, a notification with an id): their findings are informational (see fuzz-findings.md)
INFORMATIONAL_KINDS = {"illegal_id", "batch", "notification_batch", "params_scalar"}
INFORMATIONAL_NOTE = "fuzz: informational case (spec silent); only liveness after it blocks"


def _digest(line: str | bytes) -> str:
    return hashlib.sha256(line.encode("utf-8") if isinstance(line, str) else line).hexdigest()[:16]


def informational_note(lines) -> str:
    """The note step's text that marks ``lines`` as informational: it names them by digest, so the
    judge marks those very lines (and not whatever the suite writes next, such as an answer to a
    permission request that came in meanwhile)."""
    return f"{INFORMATIONAL_NOTE} [{' '.join(_digest(line) for line in lines)}]"


def note_digests(text: str) -> set[str] | None:
    """The digests named by an informational note (None: a note without digests, of an older file)."""
    if not text.startswith(INFORMATIONAL_NOTE) or not text.endswith("]") or "[" not in text:
        return None
    return set(text[text.rindex("[") + 1:-1].split())


def line_digest(raw: bytes) -> str:
    return _digest(raw)


def _j(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def step_for(line: str | bytes) -> dict:
    """The scenario step that writes ``line`` (``raw``; bytes that are not UTF-8 go as base64)."""
    if isinstance(line, bytes):
        return {"raw": {"b64": base64.b64encode(line).decode("ascii")}}
    return {"raw": {"line": line}}


LIST = "session/list"


def _request(id_, method=LIST, params=None) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params if params is not None else {}}


@st.composite
def envelope_cases(draw, ids: st.SearchStrategy = request_ids) -> EnvelopeCase:
    """One case; ids come from ``ids`` (by default the whole legal range) and every illegal JSON type."""
    kind = draw(st.sampled_from([
        "legal_id", "illegal_id", "huge_id", "null_id", "duplicate_id", "unknown_response", "notification_with_id",
        "batch", "empty_batch", "notification_batch", "invalid_json", "invalid_utf8", "crlf",
        "long_line", "no_jsonrpc", "wrong_version", "method_not_string", "params_scalar", "unknown_method",
        "unknown_notification", "bom",
    ]))
    rid = draw(ids)
    if kind == "legal_id":
        return EnvelopeCase(kind, (_j(_request(rid)),), ("ERR-004", "ERR-008"))
    if kind == "illegal_id":
        bad = draw(st.sampled_from([1.5, True, False, [1], {"a": 1}, -0.0, 1e300]))
        return EnvelopeCase(kind, (_j(_request(bad)),), ("ERR-007",))
    if kind == "huge_id":  # beyond 2^53 and 2^64: legal JSON, beyond what many parsers keep exactly
        big = draw(st.integers(JSON_INT_MAX + 1, 2 ** 70) | st.integers(-(2 ** 70), -(JSON_INT_MAX + 1)))
        return EnvelopeCase(kind, (_j(_request(big)),), ())
    if kind == "null_id":
        return EnvelopeCase(kind, (_j(_request(None)),), ())  # ERR-009 binds the sender; the answer is silent
    if kind == "duplicate_id":  # two requests with one id in flight: the sender breaks ERR-010
        return EnvelopeCase(kind, (_j(_request(rid)), _j(_request(rid))), ())
    if kind == "unknown_response":
        body = draw(st.sampled_from([{"result": {}}, {"error": {"code": -32603, "message": "x"}}]))
        return EnvelopeCase(kind, (_j({"jsonrpc": "2.0", "id": rid, **body}),), ())
    if kind == "notification_with_id":  # a $/cancel_request carrying an id is a request of an unknown kind
        return EnvelopeCase(kind, (_j({"jsonrpc": "2.0", "id": rid, "method": "$/cancel_request",
                                       "params": {"requestId": rid}}),), ())
    if kind == "batch":
        n = draw(st.integers(1, 4))
        members = draw(st.lists(ids, min_size=n, max_size=n, unique_by=lambda v: (type(v), v)))
        return EnvelopeCase(kind, (_j([_request(i) for i in members]),), ("TRANSPORT-012",))
    if kind == "empty_batch":
        return EnvelopeCase(kind, ("[]",), ("TRANSPORT-006",))
    if kind == "notification_batch":
        return EnvelopeCase(kind, (_j([{"jsonrpc": "2.0", "method": "_fuzz/ping", "params": {}}]),), ("TRANSPORT-012",))
    if kind == "invalid_json":
        # (a drawn id, like every case's: a fixed one could be the id of a request the example made)
        text = draw(st.sampled_from(['{"jsonrpc": "2.0", "id": ' + json.dumps(rid) + ', "method"', "{", "nul", "[1,",
                                     '{"a":1}}', "NaN"]))
        return EnvelopeCase(kind, (text,), ("ERR-006",))
    if kind == "invalid_utf8":
        # TRANSPORT-001 binds what a peer writes; whether a reader refuses bad UTF-8 (-32700) or
        # decodes it leniently the spec does not say
        return EnvelopeCase(kind, (b'{"jsonrpc":"2.0","id":' + json.dumps(rid).encode()
                                   + b',"method":"session/list","params":{"cwd":"\xff\xfe"}}',), ())
    if kind == "crlf":
        return EnvelopeCase(kind, (_j(_request(rid)) + "\r",), ())
    if kind == "long_line":
        size = draw(st.sampled_from([64 * 1024, 1024 * 1024]))
        return EnvelopeCase(kind, (_j(_request(rid, LIST, {"_meta": {"pad": "x" * size}})),), ("ERR-004",))
    if kind == "no_jsonrpc":
        return EnvelopeCase(kind, (_j({"id": rid, "method": LIST, "params": {}}),), ("ERR-007",))
    if kind == "wrong_version":
        return EnvelopeCase(kind, (_j({"jsonrpc": "1.0", "id": rid, "method": LIST, "params": {}}),), ("ERR-007",))
    if kind == "method_not_string":
        return EnvelopeCase(kind, (_j({"jsonrpc": "2.0", "id": rid, "method": 7}),), ("ERR-007",))
    if kind == "params_scalar":
        return EnvelopeCase(kind, (_j({"jsonrpc": "2.0", "id": rid, "method": LIST, "params": 3}),), ())
    if kind == "unknown_method":
        name = draw(st.sampled_from(["fuzz/unknown", "session/unknown", "_fuzz/ext", "$/fuzz"]))
        return EnvelopeCase(kind, (_j(_request(rid, name)),), ("ERR-005",))
    if kind == "unknown_notification":
        return EnvelopeCase(kind, (_j({"jsonrpc": "2.0", "method": "fuzz/notify", "params": {}}),), ("ERR-011",))
    # a UTF-8 byte order mark before the JSON: not JSON text, the spec does not say
    return EnvelopeCase(kind, (b"\xef\xbb\xbf" + _j(_request(rid)).encode(),), ())
