"""Redaction of secrets in what the reports write (transcript files, the HTML), never in what monitors see.

What is redacted (the string values only; objects and lists are walked, not wiped):
* ``params.mcpServers[*].env`` and ``.headers`` of any request (session/new, session/resume, session/load),
  in both shapes: a list of ``{"name", "value"}`` (the value) and an object (every value);
* any field whose name has one of the words token, key, secret, password, passwd, or credential(s).
  A name is split into words at camelCase humps, ``_``, ``-`` and ``.``: ``apiKey``, ``api_key``,
  ``privateKey``, ``authToken``, ``client-secret`` are redacted; ``sessionId``, ``messageId``,
  ``keyboard``, ``monkey``, ``inputTokens`` (a count: the word is "tokens"), ``idempotencyKey`` are not. A few
  all-lowercase compounds (``apikey``, ``accesstoken``, ...) are matched whole.

The sentences of a test (the findings' ``message`` and ``expected``, the error and skip reasons, the
target's stderr, and so the failure text pytest writes to JUnit and the terminal) are redacted too:
``redact_outcome`` takes the secret values that the redaction above removes from the test's frames
(``secret_values``) and replaces every occurrence of them in that text with the same ``[REDACTED]``.
It runs where the test ends, in the process that holds the frames (an xdist worker under ``-n``), before
the findings travel to the report writers, so report.json, the HTML, the step summary, the badge, the
comparison matrix and JUnit all receive masked text and no secret value leaves that process.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Iterable

MASK = "[REDACTED]"
SECRET_WORDS = {"token", "key", "secret", "password", "passwd", "credential", "credentials"}
COMPOUNDS = {"apikey", "accesstoken", "authtoken", "refreshtoken", "privatekey", "secretkey", "accesskey",
             "clientsecret", "bearertoken", "idtoken"}
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


# names with a secret word that hold no secret: session/prompt's idempotencyKey names one submission (the
# reports must show it, or a reader cannot tell which attempts were retries of which)
NOT_SECRET = {"idempotencykey"}


def is_secret_name(name: str) -> bool:
    if name.lower() in NOT_SECRET:
        return False
    if name.lower() in COMPOUNDS:
        return True
    return any(w.lower() in SECRET_WORDS for w in _WORDS.findall(name))


def _seen(value: Any, seen: set[str] | None) -> None:
    """Record a string value that a mask replaces (``seen``: the secret values of a test, or None)."""
    if seen is not None and isinstance(value, str):
        seen.add(value)


def _mask_fields(v: Any, seen: set[str] | None = None) -> Any:
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if isinstance(x, str) and is_secret_name(k):
                _seen(x, seen)
                out[k] = MASK
            else:
                out[k] = _mask_fields(x, seen)
        return out
    if isinstance(v, list):
        return [_mask_fields(x, seen) for x in v]
    return v


def _mask_pairs(v: Any, seen: set[str] | None = None) -> Any:
    """env / headers: a list of {name, value} or an object name -> value."""
    if isinstance(v, list):
        out = []
        for x in v:
            if isinstance(x, dict) and "value" in x:
                _seen(x["value"], seen)
                x = {**x, "value": MASK}
            out.append(x)
        return out
    if isinstance(v, dict):
        for x in v.values():
            _seen(x, seen)
        return {k: MASK for k in v}
    return v


def redact_message(msg: Any, seen: set[str] | None = None) -> Any:
    """A copy of a JSON-RPC message with its secrets masked (the same object when there is nothing to mask);
    the string values masked are added to ``seen`` when it is given."""
    if not isinstance(msg, (dict, list)):
        return msg
    out = _mask_fields(msg, seen)
    params = out.get("params") if isinstance(out, dict) else None
    if isinstance(params, dict) and isinstance(params.get("mcpServers"), list):
        servers = []
        for s in params["mcpServers"]:
            if isinstance(s, dict):
                s = {**s, **{k: _mask_pairs(s[k], seen) for k in ("env", "headers") if k in s}}
            servers.append(s)
        out["params"] = {**params, "mcpServers": servers}
    return out


# for a line that is not valid JSON (or was cut short): mask "secret-name": "value" pairs textually
_TEXT_PAIR = re.compile(r'"([A-Za-z0-9_.\-]+)"\s*:\s*"((?:[^"\\]|\\.)*)"')


def redact_text(raw: str, seen: set[str] | None = None) -> str:
    def sub(m: re.Match) -> str:
        if not is_secret_name(m.group(1)):
            return m.group(0)
        _seen(m.group(2), seen)  # as written in the line, and as a sentence would quote it (unescaped)
        try:
            _seen(json.loads(f'"{m.group(2)}"'), seen)
        except ValueError:
            pass
        return f'"{m.group(1)}": "{MASK}"'
    return _TEXT_PAIR.sub(sub, raw)


def redact_frame_json(d: dict[str, Any], msg: Any = None, limit: int = 4000) -> dict[str, Any]:
    """One transcript line (Frame.to_json) with its raw text and event detail redacted."""
    d = dict(d)
    if "raw" in d:
        red = redact_message(msg) if msg is not None else None
        if red is not None and red != msg:
            text = json.dumps(red, ensure_ascii=False, separators=(",", ":"))
            d["raw"] = text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"
        elif msg is None:
            d["raw"] = redact_text(d["raw"])
    if d.get("detail"):
        d["detail"] = _mask_fields(d["detail"])
    return d


def frame_text(frame, limit: int = 400, redact: bool = True) -> str:
    """A frame as a failure message quotes it (Frame.text), with its secrets masked unless ``redact`` is off."""
    if not redact:
        return frame.text(limit)
    if frame.direction == "event":
        detail = _mask_fields(frame.detail) if frame.detail else None
        return f"[{frame.event}] " + (json.dumps(detail, sort_keys=True) if detail else "")
    d = redact_frame_json({"raw": frame.text(limit)}, frame.msg if frame.problem is None else None, limit)
    return d["raw"]


def transcript_jsonl(frames, redact: bool = True, limit: int = 4000) -> str:
    """The transcript file: one JSON line per frame (the format of Transcript.to_jsonl), redacted."""
    out = []
    for f in frames:
        d = f.to_json(limit)
        if redact:
            d = redact_frame_json(d, f.msg if f.problem is None else None, limit)
        out.append(json.dumps(d, ensure_ascii=False) + "\n")
    return "".join(out)


# -- the sentences of a test ------------------------------------------------------------------------------
# A value shorter than this stays in the sentences (the frames mask it all the same): a secret of 1 to 3
# characters ("1", "on", "abc") would be replaced inside ordinary words and numbers all over the prose
# ("frame #1", "session", "abcd..."), making the evidence unreadable, and gives little away on its own.
MIN_SECRET = 4
_CUT = "..."  # how a sentence that quotes a frame marks where it cut it (js(), the schema messages)
_SCAN = 1 << 20  # of a line that is not JSON, the part searched for "name": "value" pairs


def secret_values(frames: Iterable) -> set[str]:
    """The string values that the transcript redaction (``transcript_jsonl``) masks in these frames."""
    seen: set[str] = set()
    for f in frames:
        if f.direction == "event":
            if f.detail:
                _mask_fields(f.detail, seen)
        elif f.problem is None and f.msg is not None:
            redact_message(f.msg, seen)
        else:
            redact_text(f.raw[:_SCAN].decode("utf-8", errors="replace"), seen)
    return seen


@lru_cache(maxsize=32)
def _needles(secrets: frozenset[str]) -> tuple[tuple[str, ...], re.Pattern | None]:
    """What to look for, longest first: each value as it was and as a sentence quotes it, in JSON
    (``js()``, ``json.dumps``, either ASCII mode) or as a Python repr (jsonschema's messages)."""
    out: set[str] = set()
    for s in secrets:
        if isinstance(s, str) and len(s) >= MIN_SECRET and s != MASK:
            out.update((s, json.dumps(s)[1:-1], json.dumps(s, ensure_ascii=False)[1:-1], repr(s)[1:-1]))
    needles = tuple(sorted(out, key=lambda n: (-len(n), n)))
    return needles, (re.compile("|".join(map(re.escape, needles))) if needles else None)


def _cut_start(text: str, end: int, needle: str) -> int:
    """How many characters before ``end`` are the start of ``needle`` (MIN_SECRET or more), else 0."""
    head = needle[:MIN_SECRET]
    j = text.find(head, max(0, end - len(needle) + 1), end)
    while j != -1:  # the first candidate is the longest start
        if needle.startswith(text[j:end]):
            return end - j
        j = text.find(head, j + 1, end)
    return 0


def redact_sentence(text: Any, secrets: Iterable[str]) -> Any:
    """``text`` with every occurrence of the secret values replaced by MASK; not a string: as it was.

    A sentence that quotes a frame may cut it in the middle of a secret ("...": what ``js()`` and the schema
    messages append): the start of a secret just before such a cut is masked as well."""
    if not isinstance(text, str) or not text or not secrets:
        return text
    needles, pattern = _needles(secrets if isinstance(secrets, frozenset) else frozenset(secrets))
    if pattern is None:
        return text
    text = pattern.sub(MASK, text)
    cuts = [m.start() for m in re.finditer(re.escape(_CUT), text)]
    for i in reversed(cuts):  # from the end, so the earlier positions stay valid
        k = max((_cut_start(text, i, n) for n in needles), default=0)
        if k:
            text = text[:i - k] + MASK + text[i:]
    return text


def redact_data(value: Any, secrets: Iterable[str]) -> Any:
    """A copy of a JSON value with ``redact_sentence`` applied to every string in it (not to the keys)."""
    if isinstance(value, str):
        return redact_sentence(value, secrets)
    if isinstance(value, dict):
        return {k: redact_data(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_data(v, secrets) for v in value]
    return value


def redact_outcome(findings: list, result: Any, frames: Iterable) -> frozenset[str]:
    """Mask the secrets of a test in everything it hands over to the reports, once its monitors are done.

    ``frames``: the test's transcript; ``findings``: its Finding objects (``message`` and ``expected`` are
    rewritten in place); ``result``: its run result, whose ``error``, ``skipped``, ``harness_error``,
    ``stderr`` and ``endings`` are rewritten, and whose ``agent_init`` (the target's identity in
    report.json) is masked like a frame. Returns the secret values found (for the text built afterwards:
    the failure message)."""
    secrets = frozenset(secret_values(frames))
    for f in findings:
        f.message = redact_sentence(f.message, secrets)
        f.expected = redact_sentence(f.expected, secrets)
    for name in ("error", "skipped", "harness_error"):
        if isinstance(getattr(result, name, None), str):
            setattr(result, name, redact_sentence(getattr(result, name), secrets))
    for name in ("stderr", "endings"):
        if isinstance(getattr(result, name, None), list):
            setattr(result, name, [redact_sentence(x, secrets) for x in getattr(result, name)])
    if getattr(result, "agent_init", None) is not None:
        result.agent_init = redact_data(_mask_fields(result.agent_init), secrets)
    return secrets
