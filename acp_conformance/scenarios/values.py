"""Small value helpers of the step handlers: rendering, shortening, reading versions and select options."""

from __future__ import annotations

import json
from typing import Any


def _select_values(opt: dict[str, Any]) -> list[dict[str, Any]]:
    """The values of a select option, flattened over groups."""
    out = []
    for o in opt.get("options") or []:
        if isinstance(o, dict) and isinstance(o.get("options"), list):
            out.extend(x for x in o["options"] if isinstance(x, dict))
        elif isinstance(o, dict):
            out.append(o)
    return out


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _short(value: Any, limit: int = 300) -> str:
    s = json.dumps(value, ensure_ascii=False)
    return s if len(s) <= limit else s[:limit] + "..."


def _version(v: Any) -> int | None:
    """A protocol version: an integer (a bool is not one)."""
    return v if isinstance(v, int) and not isinstance(v, bool) else None
