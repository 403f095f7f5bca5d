"""The value pass's edits (``reduce.py``, 5.): which values of a request's params may become simpler,
the ladder of simpler values for each, applying edits while the params stay as valid as they were."""

from __future__ import annotations

import copy
from typing import Any

from .reduce_steps import _REF

# keys whose values are never simplified nor dropped (besides the schema's discriminators)
_KEEP_KEYS = frozenset({"sessionId", "protocolVersion", "type"})
_DROP = object()  # an edit's value: the key goes


def _params(step: dict[str, Any]) -> Any:
    """The generated params of a request step (None for other steps and for params that are no
    object or array)."""
    args = step.get("request")
    params = args.get("params") if isinstance(args, dict) else None
    return params if isinstance(params, (dict, list)) else None


def _frozen(value: Any, keep_texts: frozenset) -> bool:
    """A value the value pass leaves whole: it holds a ``$variable`` or a configured steering prompt."""
    if isinstance(value, str):
        return bool(_REF.search(value)) or value in keep_texts
    if isinstance(value, list):
        return any(_frozen(v, keep_texts) for v in value)
    if isinstance(value, dict):
        return any(_frozen(v, keep_texts) for v in value.values())
    return False


def _ladder(value: Any) -> list[Any]:
    """The simpler values to try for ``value``, simplest first (empty when there is none)."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, str):  # an absolute path stays one (an agent rejects a relative cwd: a wasted run)
        simplest = ("/",) if value.startswith("/") else ("", value[:1])
        return list(dict.fromkeys(p for p in (*simplest, value[:8]) if len(p) < len(value)))
    if isinstance(value, int):
        return [] if value == 0 else [0] if abs(value) == 1 else [0, 1 if value > 0 else -1]
    if isinstance(value, float):
        return [0.0] if value != 0 else []
    if isinstance(value, list):
        return [value[:1]] if len(value) > 1 else []
    return []


_EDIT_KINDS = ("drop", "str", "num", "list")


def _value_edits(value: Any, path: tuple, keep_texts: frozenset, keep_keys: frozenset) -> list[tuple[tuple, str]]:
    """The edits of ``value`` the value pass tries, parents before their children: (path, "drop") for
    a key of an object, (path, "str" | "num" | "list") for a value made simpler (see ``_ladder``)."""
    if value is None or _frozen(value, keep_texts) and not isinstance(value, (dict, list)):
        return []
    out: list[tuple[tuple, str]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k in keep_keys:
                continue
            if not _frozen(v, keep_texts):
                out.append((path + (k,), "drop"))
            out += _value_edits(v, path + (k,), keep_texts, keep_keys)
        return out
    if isinstance(value, list):
        if len(value) > 1 and not _frozen(value[1:], keep_texts):
            out.append((path, "list"))
        for j, v in enumerate(value):
            out += _value_edits(v, path + (j,), keep_texts, keep_keys)
        return out
    return [(path, "str" if isinstance(value, str) else "num")] if _ladder(value) else []


_MISSING = object()


def _get(root: Any, path: tuple) -> Any:
    for p in path:
        if isinstance(root, dict) and isinstance(p, str) and p in root:
            root = root[p]
        elif isinstance(root, list) and isinstance(p, int) and p < len(root):
            root = root[p]
        else:
            return _MISSING
    return root


def _with(root: Any, path: tuple, value: Any) -> Any:
    """A copy of ``root`` with the value at ``path`` replaced (``_DROP``: its key removed)."""
    if not path:
        return value
    out = copy.copy(root)
    head, rest = path[0], path[1:]
    if not rest and value is _DROP:
        del out[head]
    else:
        out[head] = _with(root[head], rest, value)
    return out


def _apply_edits(params: Any, edits: list[tuple[tuple, str]], ok, rung: int = 0) -> Any:
    """``params`` with the edits applied in order, each at the first value of its ladder from ``rung``
    on for which ``ok`` holds (an edit whose path is gone, by an edit before it, is skipped)."""
    for path, op in edits:
        cur = _get(params, path)
        if cur is _MISSING:
            continue
        for value in ([_DROP] if op == "drop" else _ladder(cur))[rung:]:
            candidate = _with(params, path, value)
            if ok(candidate):
                params = candidate
                break
    return params


def _validity(validator: Any, method: Any, params: Any):
    """A predicate of candidate params: as valid as ``params`` against the method's params definition
    (anything goes when the schema does not know the method or cannot tell)."""
    m = validator.schema.methods.get(method) if validator is not None and isinstance(method, str) else None
    if m is None or not m.params:
        return lambda _: True

    def valid(p: Any) -> bool | None:
        try:
            return bool(validator.is_valid(m.params, p))
        except Exception:  # a value the validator cannot take (an integer beyond 64 bits ...)
            return None

    before = valid(params)
    if before is None:
        return lambda _: True
    return lambda p: valid(p) is before


def _discriminators(validator: Any) -> frozenset:
    """The discriminator keys of the schema's unions (``x-discriminator``)."""
    defs = getattr(getattr(validator, "schema", None), "defs", None) or {}
    return frozenset(d["x-discriminator"] for d in defs.values()
                     if isinstance(d, dict) and isinstance(d.get("x-discriminator"), str))


def _shape(value: Any) -> Any:
    """``value`` with the types of its scalars (so that 0 and 0.0, 1 and True differ)."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return (type(value).__name__, value)
