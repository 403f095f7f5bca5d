"""The fast generator: valid values from the same normalised schema as ``strategies.py``, compiled to
plain functions of a ``random.Random``."""

from __future__ import annotations

import base64
import random
from functools import lru_cache
from typing import Any

from hypothesis import strategies as st

from ..protocol.schema import Schema, cached_schema
from ..protocol.validate import Validator
from .base_strategies import JSON_INT_MAX, JSON_INT_MIN, MAX_ITEMS, MAX_TEXT
from .schema_walk import _ANNOTATIONS, _discriminated, _dnf, _merge, _Unsupported, refined_defs


class FastGenerator:
    """Valid values from the same normalised schema, drawn with ``random.Random`` instead of
    hypothesis' engine: ten times the throughput under hypothesis (``strategy``: hypothesis draws
    only the seed) and a hundred times alone (bench/bench_fuzz.py). The state machine draws its
    payloads here. Reproducible from the seed; what it gives up is structural shrinking (hypothesis
    can only shrink the seed), which the fuzzer does not need: it shrinks counterexamples as scenarios
    (``reduce.py``). Every value it returns passed the fast validator."""

    def __init__(self, schema: Schema | None = None):
        self.schema = schema or cached_schema()
        self.defs = refined_defs(self.schema.defs)
        self.validator = Validator(self.schema)
        self._fns: dict[str, Any] = {}
        self._strategies: dict[str, st.SearchStrategy] = {}

    def definition(self, name: str, rng, tries: int = 20) -> Any:
        return _first_valid(self._ref(name), self.validator._fast_for(name).is_valid, rng, name, tries)

    def params(self, method: str, rng) -> Any:
        m = self.schema.methods[method]
        return self.definition(m.params, rng) if m.params else {}

    def strategy(self, name: str) -> st.SearchStrategy:
        """A hypothesis strategy over the fast generator (hypothesis draws the seed)."""
        s = self._strategies.get(name)
        if s is None:
            s = self._strategies[name] = st.integers(0, 2 ** 32 - 1).map(
                lambda seed: self.definition(name, random.Random(seed)))
        return s

    def branches(self, name: str) -> dict[Any, st.SearchStrategy]:
        """The branches of a discriminated union by discriminator value (as ``SchemaStrategies.branches``),
        each a strategy over the fast generator, its values checked against ``name``."""
        ok = self.validator._fast_for(name).is_valid
        out: dict[Any, st.SearchStrategy] = {}
        for value, branch in _discriminated(self.defs[name]):
            fn = self._node(branch)
            out[value] = st.integers(0, 2 ** 32 - 1).map(
                lambda seed, fn=fn, ok=ok: _first_valid(fn, ok, random.Random(seed), name))
        return out

    def _ref(self, name: str):
        fn = self._fns.get(name)
        if fn is None:
            box: list = []
            self._fns[name] = lambda rng: box[0](rng)  # recursion: the slot is filled below
            box.append(self._node(self.defs[name]))
            fn = self._fns[name] = box[0]
        return fn

    def _node(self, schema: Any):
        if isinstance(schema, dict) and set(schema) - _ANNOTATIONS == {"$ref"}:
            name = schema["$ref"][len("#/$defs/"):]
            return lambda rng: self._ref(name)(rng)
        alts = [self._plain(m) for m in (_merge(a) for a in _dnf(schema, self.defs)) if m is not None]
        if len(alts) == 1:
            return alts[0]
        return lambda rng: rng.choice(alts)(rng)

    def _plain(self, node: dict[str, Any]):
        if "const" in node:
            c = node["const"]
            return lambda rng: c
        if "enum" in node:
            e = list(node["enum"])
            return lambda rng: rng.choice(e)
        types = node.get("type") or (["object"] if "properties" in node or "required" in node else None)
        if types is None:
            return _fast_json
        fns = [self._typed(t, node) for t in types]
        return fns[0] if len(fns) == 1 else (lambda rng: rng.choice(fns)(rng))

    def _typed(self, t: str, node: dict[str, Any]):
        if t == "null":
            return lambda rng: None
        if t == "boolean":
            return lambda rng: rng.random() < 0.5
        if t == "integer":
            lo, hi = node.get("minimum", JSON_INT_MIN), node.get("maximum", JSON_INT_MAX)
            return lambda rng: _fast_int(rng, lo, hi)
        if t == "number":
            lo, hi = node.get("minimum", -1e9), node.get("maximum", 1e9)
            return lambda rng: rng.uniform(lo, hi)
        if t == "string":
            refined = _FAST_REFINED.get(node.get("x-fuzz"))
            if refined is not None:
                return refined
            if node.get("x-absolute-path"):
                return lambda rng: "/" + "/".join(_fast_word(rng) for _ in range(rng.randint(0, 3)))
            if node.get("format") == "uri":
                return lambda rng: "https://example.com/" + _fast_word(rng)
            pattern = node.get("pattern")
            if pattern is not None:
                if not (pattern.startswith("^") and pattern[1:].isalnum() or pattern[1:] == "_"):
                    raise _Unsupported(f"pattern {pattern}")
                prefix = pattern[1:]
                return lambda rng: prefix + _fast_text(rng)
            lo = node.get("minLength", 0)
            return lambda rng: (_fast_text(rng) + "x" * lo)[: max(lo, node.get("maxLength", MAX_TEXT))] \
                if lo else _fast_text(rng)
        if t == "array":
            items = self._node(node["items"]) if node.get("items") else _fast_json
            lo = node.get("minItems", 0)
            hi = min(node.get("maxItems", lo + MAX_ITEMS), lo + MAX_ITEMS)
            return lambda rng: [items(rng) for _ in range(rng.randint(lo, hi))]
        if t == "object":
            props = node.get("properties", {})
            required = sorted(set(node.get("required", ())))
            forbidden = node.get("forbidden", set())
            req = [(k, self._node(props[k]) if k in props else _fast_json) for k in required]
            opt = [(k, self._node(v)) for k, v in props.items() if k not in required and k not in forbidden]

            def obj(rng):
                out = {k: f(rng) for k, f in req}
                for k, f in opt:
                    if rng.random() < 0.3:
                        out[k] = f(rng)
                return out
            return obj
        raise _Unsupported(f"type {t}")


def _first_valid(fn, ok, rng, name: str, tries: int = 20) -> Any:
    for _ in range(tries):
        v = fn(rng)
        if ok(v):
            return v
    raise ValueError(f"no valid {name} in {tries} tries")


_WORDS = ["", "a", "hello", "README.md", "src", "0", "é", "日本", "\u2028", " ", "x" * 40, "null", "$", "\n"]


def _fast_word(rng) -> str:
    return rng.choice(("a", "src", "docs", "build", "x y", "é"))


def _fast_text(rng) -> str:
    return rng.choice(_WORDS) if rng.random() < 0.6 else "".join(rng.choice(_WORDS) for _ in range(rng.randint(0, 4)))


_FAST_REFINED = {
    "base64": lambda rng: base64.b64encode(rng.randbytes(rng.randint(0, 12))).decode("ascii"),
    "https-or-data-uri": lambda rng: rng.choice(("https://example.com/icon.png", "data:image/png;base64,AAAA")),
    "iso8601": lambda rng: f"20{rng.randint(0, 99):02d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T12:00:00Z",
}


def _fast_int(rng, lo: int, hi: int) -> int:
    r = rng.random()
    if r < 0.2:
        return rng.choice((lo, hi, max(lo, min(hi, 0)), max(lo, min(hi, 1))))
    if r < 0.6:
        return max(lo, min(hi, rng.randint(-100, 100)))
    return rng.randint(lo, hi)


def _fast_json(rng) -> Any:
    r = rng.random()
    if r < 0.5:
        return rng.choice((None, True, False, 0, 1.5, "", "x"))
    if r < 0.75:
        return {}
    return {_fast_text(rng): rng.choice((None, 1, "v"))}


@lru_cache(maxsize=4)
def fast_generator_for(schema_path: str | None = None) -> FastGenerator:
    return FastGenerator(cached_schema(schema_path))
