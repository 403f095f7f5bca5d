"""Redaction of secrets in what the reports write (transcript files, the HTML), never in what monitors see.

What is redacted (the string values only; objects and lists are walked, not wiped):
* ``params.mcpServers[*].env`` and ``.headers`` of any request (session/new, session/resume, session/load),
  in both shapes: a list of ``{"name", "value"}`` (the value) and an object (every value);
* any field whose name has one of the words token, key, secret, password, passwd, or credential(s).
  A name is split into words at camelCase humps, ``_``, ``-`` and ``.``: ``apiKey``, ``api_key``,
  ``privateKey``, ``authToken``, ``client-secret`` are redacted; ``sessionId``, ``messageId``,
  ``keyboard``, ``monkey``, ``inputTokens`` (a count: the word is "tokens") are not. A few
  all-lowercase compounds (``apikey``, ``accesstoken``, ...) are matched whole.
"""

from __future__ import annotations

import json
import re
from typing import Any

MASK = "[REDACTED]"
SECRET_WORDS = {"token", "key", "secret", "password", "passwd", "credential", "credentials"}
COMPOUNDS = {"apikey", "accesstoken", "authtoken", "refreshtoken", "privatekey", "secretkey", "accesskey",
             "clientsecret", "bearertoken", "idtoken"}
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def is_secret_name(name: str) -> bool:
    if name.lower() in COMPOUNDS:
        return True
    return any(w.lower() in SECRET_WORDS for w in _WORDS.findall(name))


def _mask_fields(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: (MASK if isinstance(x, str) and is_secret_name(k) else _mask_fields(x)) for k, x in v.items()}
    if isinstance(v, list):
        return [_mask_fields(x) for x in v]
    return v


def _mask_pairs(v: Any) -> Any:
    """env / headers: a list of {name, value} or an object name -> value."""
    if isinstance(v, list):
        return [{**x, "value": MASK} if isinstance(x, dict) and "value" in x else x for x in v]
    if isinstance(v, dict):
        return {k: MASK for k in v}
    return v


def redact_message(msg: Any) -> Any:
    """A copy of a JSON-RPC message with its secrets masked (the same object when there is nothing to mask)."""
    if not isinstance(msg, (dict, list)):
        return msg
    out = _mask_fields(msg)
    params = out.get("params") if isinstance(out, dict) else None
    if isinstance(params, dict) and isinstance(params.get("mcpServers"), list):
        servers = []
        for s in params["mcpServers"]:
            if isinstance(s, dict):
                s = {**s, **{k: _mask_pairs(s[k]) for k in ("env", "headers") if k in s}}
            servers.append(s)
        out["params"] = {**params, "mcpServers": servers}
    return out


# for a line that is not valid JSON (or was cut short): mask "secret-name": "value" pairs textually
_TEXT_PAIR = re.compile(r'"([A-Za-z0-9_.\-]+)"\s*:\s*"((?:[^"\\]|\\.)*)"')


def redact_text(raw: str) -> str:
    return _TEXT_PAIR.sub(lambda m: f'"{m.group(1)}": "{MASK}"' if is_secret_name(m.group(1)) else m.group(0), raw)


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
