"""Hypothesis strategies for ACP v2 messages, generated from our schema.

Valid values come from a walker over ``schema/acp-v2.schema.json``, not from hand-written
per-type code: every node is brought to a disjunctive normal form (``anyOf``/``oneOf`` are
alternatives, ``allOf`` and sibling keywords are conjunctions, ``$ref`` is resolved), each
alternative is merged into one plain node, and the plain node is generated directly. A union
annotated with ``x-discriminator`` therefore becomes a choice among its const branches (custom
``_`` values included), which is what makes ``SessionUpdate`` cheap. One strategy is built per
definition and cached (``st.deferred`` handles recursive definitions). hypothesis-jsonschema
canonicalises the large unions for hundreds of milliseconds per example (DESIGN.md section 3),
so it is used only as the fallback for a definition whose keywords the walker does not know
(none in our schema today; ``if``/``then`` is left to the filter); every definition strategy is finally checked by the fast validator, so a value
that the walker got wrong is never handed out as valid.

Both walkers generate from the schema with ``SPEC_REFINEMENTS`` applied: what the spec requires of a
value beyond our schema (base64 data, https:/data: icons, priority in 0..1, ISO 8601 times,
non-negative sizes), so that valid traffic is valid for the monitors too. Strings hit their boundary,
the empty string, one time in ten.

Invalid values are derived from valid ones (``invalid_request``): a required field dropped, a
wrong type, an unknown discriminator without ``_``, an out-of-range integer, a relative path, an
empty prompt array. Each carries the rule ids of the catalog that say how it must be answered.
"""

from __future__ import annotations

import base64
import contextlib
import random
import string
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from hypothesis import strategies as st

from ..protocol.schema import Schema, cached_schema
from ..protocol.validate import Validator

# sizes: big enough to reach "three blocks", "an empty string", small enough to stay fast
MAX_ITEMS = 6
MAX_TEXT = 24
# integers without bounds in the schema: the interoperable JSON range (IEEE double, 2^53)
JSON_INT_MIN, JSON_INT_MAX = -(2 ** 53 - 1), 2 ** 53 - 1

_text = st.text(max_size=MAX_TEXT)
_path_part = st.text(alphabet=string.ascii_letters + string.digits + "_-. ", min_size=1, max_size=10) \
    .filter(lambda s: s not in (".", ".."))
absolute_paths = st.lists(_path_part, min_size=0, max_size=4).map(lambda parts: "/" + "/".join(parts))
relative_paths = st.lists(_path_part, min_size=1, max_size=3).map("/".join)
uris = st.builds(lambda scheme, path: f"{scheme}://example.com/{path}",
                 st.sampled_from(["https", "http", "file"]), st.text(alphabet=string.ascii_lowercase + "/", max_size=12))
json_scalars = st.none() | st.booleans() | st.integers(JSON_INT_MIN, JSON_INT_MAX) \
    | st.floats(allow_nan=False, allow_infinity=False) | _text
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(_text, inner, max_size=3), max_leaves=6)
# an object with no declared properties (``_meta``, ``rawInput``, ...): cheap, mostly small
free_objects = st.just({}) | st.dictionaries(_text, json_scalars, min_size=1, max_size=3)
# request ids: the whole legal range (integers and strings), boundaries included by hypothesis itself
request_ids = st.integers(JSON_INT_MIN, JSON_INT_MAX) | st.integers(0, JSON_INT_MAX) | _text


_NO_CONST = object()


def _discriminated(definition: dict[str, Any]) -> list[tuple[Any, dict[str, Any]]]:
    """(discriminator value, branch) of a discriminated union (``x-discriminator``); branches without
    a const for the discriminator are left out."""
    key = definition.get("x-discriminator")
    out = []
    for branch in definition.get("anyOf", []) + definition.get("oneOf", []):
        value = ((branch.get("properties") or {}).get(key) or {}).get("const", _NO_CONST)
        if key and value is not _NO_CONST:
            out.append((value, branch))
    return out

# What the spec requires of values beyond what our schema states (the catalog's CONTENT-001..003 check
# them): valid traffic honours it, or a correct agent that echoes the client's content would be
# blamed for it. Each entry narrows one property of one definition; the schema stays the judge of
# validity (a refined value is still a schema-valid value).
SPEC_REFINEMENTS: dict[tuple[str, str], dict[str, Any]] = {
    ("ImageContent", "data"): {"type": "string", "x-fuzz": "base64"},
    ("AudioContent", "data"): {"type": "string", "x-fuzz": "base64"},
    ("BlobResourceContents", "blob"): {"type": "string", "x-fuzz": "base64"},
    ("ResourceLink", "size"): {"type": ["integer", "null"], "minimum": 0},
    ("Icon", "src"): {"type": "string", "x-fuzz": "https-or-data-uri"},
    ("Annotations", "priority"): {"type": ["number", "null"], "minimum": 0, "maximum": 1},
    ("Annotations", "lastModified"): {"type": ["string", "null"], "x-fuzz": "iso8601"},
}


def refined_defs(defs: dict[str, Any]) -> dict[str, Any]:
    """The schema's definitions with ``SPEC_REFINEMENTS`` applied (a copy; the schema is untouched)."""
    out = dict(defs)
    for (name, prop), node in SPEC_REFINEMENTS.items():
        if name in out and prop in (out[name].get("properties") or {}):
            out[name] = {**out[name], "properties": {**out[name]["properties"], prop: node}}
    return out


_b64_text = st.binary(max_size=MAX_TEXT).map(lambda b: base64.b64encode(b).decode("ascii"))
_https_or_data = st.one_of(st.text(alphabet=string.ascii_lowercase + "/.", max_size=12).map(
    lambda p: "https://example.com/" + p), _b64_text.map(lambda d: "data:image/png;base64," + d))
_iso8601 = st.datetimes(timezones=st.just(__import__("datetime").timezone.utc)).map(
    lambda d: d.isoformat().replace("+00:00", "Z"))
_REFINED_STRINGS = {"base64": _b64_text, "https-or-data-uri": _https_or_data, "iso8601": _iso8601}


class _Unsupported(Exception):
    """The walker cannot generate this node; the definition falls back to hypothesis-jsonschema."""


def _dnf(schema: Any, defs: dict[str, Any], depth: int = 0) -> list[list[dict[str, Any]]]:
    """The node as alternatives, each a list of plain nodes (no $ref/allOf/anyOf/oneOf) to be merged."""
    if schema is True or schema == {}:
        return [[{}]]
    if schema is False:
        return []
    if depth > 12:
        raise _Unsupported("combinators nested too deep")
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise _Unsupported(f"external $ref {ref}")
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        alts = _dnf(defs[ref[len("#/$defs/"):]], defs, depth + 1)
        return _and(alts, _dnf(rest, defs, depth + 1)) if rest else alts
    # if/then (only Error's -32022 data shape here) is left to the validator that checks every
    # definition strategy: the rare value that breaks it is filtered out, not generated right
    base = {k: v for k, v in schema.items() if k not in ("allOf", "anyOf", "oneOf", "if", "then", "else")}
    alts = [[base]]
    for part in schema.get("allOf", []):
        alts = _and(alts, _dnf(part, defs, depth + 1))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            union = [a for branch in schema[key] for a in _dnf(branch, defs, depth + 1)]
            alts = _and(alts, union)
    return alts


def _and(a: list[list[dict]], b: list[list[dict]]) -> list[list[dict]]:
    return [x + y for x in a for y in b]


_ANNOTATIONS = {"description", "title", "default", "examples", "x-method", "x-side", "x-discriminator", "$schema",
                "$comment", "deprecated"}


def _merge(nodes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One plain node satisfying all ``nodes`` (None when they contradict each other)."""
    out: dict[str, Any] = {}
    props: dict[str, list[Any]] = {}
    for n in nodes:
        for k, v in n.items():
            if k in _ANNOTATIONS:
                continue
            if k == "properties":
                for name, sub in v.items():
                    props.setdefault(name, []).append(sub)
            elif k == "required":
                out["required"] = sorted(set(out.get("required", [])) | set(v))
            elif k == "type":
                types = set(v if isinstance(v, list) else [v])
                if "integer" in types:
                    types.add("integer")
                if "type" in out:
                    have = set(out["type"])
                    if "number" in have and "integer" in types:
                        have.add("integer")
                    if "number" in types and "integer" in have:
                        types.add("integer")
                    types &= have
                    if not types:
                        return None
                out["type"] = sorted(types)
            elif k == "const":
                if "const" in out and out["const"] != v:
                    return None
                out["const"] = v
            elif k == "enum":
                out["enum"] = [e for e in v if e in out["enum"]] if "enum" in out else list(v)
                if not out["enum"]:
                    return None
            elif k == "not":
                if set(v) - {"required"}:
                    raise _Unsupported("not with more than required")
                out.setdefault("forbidden", set()).update(v.get("required", []))
            elif k in ("minimum", "minItems", "minLength"):
                out[k] = max(out.get(k, v), v)
            elif k in ("maximum", "maxItems", "maxLength"):
                out[k] = min(out.get(k, v), v)
            elif k in ("items", "additionalProperties", "pattern", "format", "x-absolute-path", "x-fuzz"):
                if k in out and out[k] != v:
                    if k == "items":
                        out[k] = {"allOf": [out[k], v]}
                        continue
                    raise _Unsupported(f"two different {k}")
                out[k] = v
            else:
                raise _Unsupported(f"keyword {k}")
    if props:
        out["properties"] = {name: subs[0] if len(subs) == 1 else {"allOf": subs} for name, subs in props.items()}
    if "const" in out and "enum" in out and out["const"] not in out["enum"]:
        return None
    for name in out.get("forbidden", ()):
        if name in out.get("required", ()):
            return None
    return out


class SchemaStrategies:
    """Strategies for the definitions of one schema, built once each."""

    def __init__(self, schema: Schema | None = None):
        self.schema = schema or cached_schema()
        self.defs = refined_defs(self.schema.defs)
        self.validator = Validator(self.schema)
        self._by_def: dict[str, st.SearchStrategy] = {}
        self._raw: dict[str, st.SearchStrategy] = {}
        self.fallbacks: dict[str, str] = {}  # definition -> why hypothesis-jsonschema generates it

    # -- public -----------------------------------------------------------------------------
    def definition(self, name: str) -> st.SearchStrategy:
        """Valid values of one definition (checked by the fast validator)."""
        s = self._by_def.get(name)
        if s is None:
            is_valid = self.validator._fast_for(name).is_valid
            s = self._by_def[name] = self._ref(name).filter(is_valid)
        return s

    def branches(self, name: str) -> dict[Any, st.SearchStrategy]:
        """The branches of a discriminated union (``x-discriminator``), by discriminator value: each a
        strategy of valid values of ``name`` with that value (branches without a const are left out;
        ``definition(name)`` has them)."""
        is_valid = self.validator._fast_for(name).is_valid
        return {value: self._node(branch).filter(is_valid) for value, branch in _discriminated(self.defs[name])}

    def params(self, method: str) -> st.SearchStrategy:
        m = self.schema.methods[method]
        return self.definition(m.params) if m.params else st.just({})

    def result(self, method: str) -> st.SearchStrategy:
        m = self.schema.methods[method]
        if not m.result:
            raise KeyError(f"{method} has no result")
        return self.definition(m.result)

    def request(self, method: str, ids: st.SearchStrategy = request_ids) -> st.SearchStrategy:
        return st.builds(lambda i, p: {"jsonrpc": "2.0", "id": i, "method": method, "params": p}, ids, self.params(method))

    def notification(self, method: str) -> st.SearchStrategy:
        return self.params(method).map(lambda p: {"jsonrpc": "2.0", "method": method, "params": p})

    def response(self, method: str, ids: st.SearchStrategy = request_ids) -> st.SearchStrategy:
        return st.builds(lambda i, r: {"jsonrpc": "2.0", "id": i, "result": r}, ids, self.result(method))

    def error_response(self, ids: st.SearchStrategy = request_ids) -> st.SearchStrategy:
        return st.builds(lambda i, e: {"jsonrpc": "2.0", "id": i, "error": e}, ids, self.definition("Error"))

    def messages_of(self, side: str) -> st.SearchStrategy:
        """Any valid message ``side`` ("client" or "agent") may send: its requests and notifications,
        and the responses to the other side's requests."""
        parts = []
        for m in self.schema.methods.values():
            if m.sent_by(side):
                parts.append(self.request(m.name) if m.kind == "request" else self.notification(m.name))
            elif m.kind == "request" and m.result:
                parts.append(self.response(m.name))
        return st.one_of(parts)

    # -- building ---------------------------------------------------------------------------
    def _ref(self, name: str) -> st.SearchStrategy:
        s = self._raw.get(name)
        if s is None:
            # deferred: a recursive definition refers to itself while it is being built
            s = self._raw[name] = st.deferred(lambda: self._build_definition(name))
        return s

    def _build_definition(self, name: str) -> st.SearchStrategy:
        try:
            return self._node(self.defs[name], top=True)
        except _Unsupported as e:
            from hypothesis_jsonschema import from_schema
            self.fallbacks[name] = str(e)
            return from_schema(self.schema.definition_schema(name))

    def _node(self, schema: Any, top: bool = False) -> st.SearchStrategy:
        if isinstance(schema, dict) and set(schema) - _ANNOTATIONS == {"$ref"} and not top:
            return self._ref(schema["$ref"][len("#/$defs/"):])
        alts = [m for m in (_merge(a) for a in _dnf(schema, self.defs)) if m is not None]
        if not alts:
            raise _Unsupported("no satisfiable alternative")
        strategies = [self._plain(a) for a in alts]
        return strategies[0] if len(strategies) == 1 else st.one_of(strategies)

    def _plain(self, node: dict[str, Any]) -> st.SearchStrategy:
        if "const" in node:
            return st.just(node["const"])
        if "enum" in node:
            return st.sampled_from(node["enum"])
        types = node.get("type")
        if types is None:
            types = ["object"] if "properties" in node or "required" in node else None
        if types is None:
            return json_values
        return st.one_of([self._typed(t, node) for t in types])

    def _typed(self, t: str, node: dict[str, Any]) -> st.SearchStrategy:
        if t == "null":
            return st.none()
        if t == "boolean":
            return st.booleans()
        if t == "integer":
            return st.integers(node.get("minimum", JSON_INT_MIN), node.get("maximum", JSON_INT_MAX))
        if t == "number":
            return st.floats(node.get("minimum"), node.get("maximum"), allow_nan=False, allow_infinity=False)
        if t == "string":
            if node.get("x-fuzz") in _REFINED_STRINGS:
                return _REFINED_STRINGS[node["x-fuzz"]]
            if node.get("x-absolute-path"):
                return absolute_paths
            if node.get("format") == "uri":
                return uris
            if "pattern" in node:
                return st.from_regex(node["pattern"]).filter(lambda s: len(s) <= 4 * MAX_TEXT)
            lo = node.get("minLength", 0)
            text = st.text(min_size=lo, max_size=max(lo, node.get("maxLength", MAX_TEXT)))
            # the boundary, the empty string, one string in ten: hypothesis' text strategy, left to
            # itself, gave not one empty string among 46 embedded resource texts in a 20 s stateful run
            return st.one_of(*[text] * 9, st.just("")) if lo == 0 else text
        if t == "array":
            items = node.get("items", {})
            lo = node.get("minItems", 0)
            hi = min(node.get("maxItems", lo + MAX_ITEMS), lo + MAX_ITEMS)
            return st.lists(self._node(items) if items else json_values, min_size=lo, max_size=hi)
        if t == "object":
            return self._object(node)
        raise _Unsupported(f"type {t}")

    def _object(self, node: dict[str, Any]) -> st.SearchStrategy:
        props = node.get("properties", {})
        if not props and not node.get("required") and node.get("additionalProperties") is None:
            return free_objects
        required = set(node.get("required", ()))
        forbidden = node.get("forbidden", set())
        req = {k: self._node(props[k]) if k in props else json_values for k in sorted(required)}
        opt = {k: self._node(v) for k, v in props.items() if k not in required and k not in forbidden}
        base = st.fixed_dictionaries(req, optional=opt)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            more = st.dictionaries(_text.filter(lambda k: k not in props and k not in forbidden),
                                   self._node(extra), max_size=3)
            return st.builds(lambda b, m: {**m, **b}, base, more)
        return base


# -- the fast generator: the same normal form, compiled to plain functions of a Random -------------

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
def strategies_for(schema_path: str | None = None) -> SchemaStrategies:
    return SchemaStrategies(cached_schema(schema_path))


@lru_cache(maxsize=4)
def fast_generator_for(schema_path: str | None = None) -> FastGenerator:
    return FastGenerator(cached_schema(schema_path))


# -- invalid values, derived from valid ones ------------------------------------------------------

@dataclass(frozen=True)
class Invalid:
    method: str
    params: Any
    how: str  # what was broken, for the report
    rules: tuple[str, ...]  # the catalog rules that say how it must be answered


_WRONG_TYPE = {str: 12345, int: "not a number", bool: "true", list: {"not": "an array"}, dict: ["not", "an object"],
               float: "1.5", type(None): ["null"]}


def _wrong_type(value: Any) -> Any:
    return _WRONG_TYPE.get(type(value), None)


def invalid_request(gen: SchemaStrategies, method: str) -> st.SearchStrategy:
    """A malformed request of ``method``, derived from a valid one, that a correct agent rejects."""
    definition = gen.defs[gen.schema.methods[method].params]
    required = list(definition.get("required", []))

    @st.composite
    def build(draw) -> Invalid:
        params = dict(draw(gen.params(method)))
        kinds = ["drop_required", "wrong_type"] if required else []
        if method in ("session/new", "session/resume", "session/list"):
            kinds.append("relative_path")
        if method == "session/prompt":
            kinds += ["empty_prompt", "unknown_block_type"]
        if method == "initialize":
            kinds.append("version_out_of_range")
        kind = draw(st.sampled_from(kinds))
        rules = ("ERR-013",)
        if kind == "drop_required":
            key = draw(st.sampled_from(required))
            params.pop(key, None)
        elif kind == "wrong_type":
            key = draw(st.sampled_from(required))
            params[key] = _wrong_type(params.get(key))
        elif kind == "relative_path":
            params["cwd"] = draw(relative_paths)
            rules = ("SESSION-008", "ERR-013")
        elif kind == "empty_prompt":
            params["prompt"] = []
            rules = ("PROMPT-010",)
        elif kind == "unknown_block_type":
            blocks = list(params.get("prompt") or [{"type": "text", "text": ""}])
            i = draw(st.integers(0, len(blocks) - 1))
            name = draw(st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=12)
                        .filter(lambda s: not s.startswith("_") and s not in
                                ("text", "image", "audio", "resource_link", "resource")))
            blocks[i] = {**blocks[i], "type": name}
            params["prompt"] = blocks
            rules = ("PROMPT-009",)
        elif kind == "version_out_of_range":
            params["protocolVersion"] = draw(st.integers(65536, JSON_INT_MAX) | st.integers(JSON_INT_MIN, -1))
            rules = ("INIT-011",)
        return Invalid(method, params, kind, rules)

    return build()


@contextlib.contextmanager
def without_local_constants():
    """Hypothesis also draws literals found in the source of the loaded local modules (this project
    and its tests among them): the scripts would then depend on what else is imported (the same
    seed, another run under pytest than in the console script), and the tests' own literals would
    steer the fuzzer toward the planted bugs. A fuzz run draws from hypothesis' global pool only."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover
        yield
        return
    get = getattr(providers, "_get_local_constants", None)
    constants = getattr(providers, "Constants", None)
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if get is None or constants is None or cache is None:  # a hypothesis without the feature
        yield
        return
    empty = constants()
    providers._get_local_constants = lambda: empty
    cache.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = get
        cache.cache.clear()
