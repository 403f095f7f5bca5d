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

This module holds the hypothesis walker (``SchemaStrategies``); the normal form and the refinements
are in ``schema_walk.py``, the leaf strategies (sizes, paths, ids) in ``base_strategies.py``, the fast
generator in ``fast_generator.py``, the invalid requests in ``invalid_requests.py``. Every name the
rest of the fuzzer, the tests and the bench use is importable from here.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from hypothesis import strategies as st

from ..protocol.schema import Schema, SchemaError, cached_schema
from ..protocol.validate import Validator
from .base_strategies import (JSON_INT_MAX, JSON_INT_MIN, MAX_ITEMS, MAX_TEXT, _REFINED_STRINGS, _text,
                              absolute_paths, free_objects, json_scalars, json_values, relative_paths,
                              request_ids, uris)
from .fast_generator import FastGenerator, fast_generator_for
from .invalid_requests import Invalid, invalid_request
from .local_constants import without_local_constants
from .schema_walk import _ANNOTATIONS, SPEC_REFINEMENTS, _discriminated, _dnf, _merge, _Unsupported, refined_defs

# the names other modules, the tests and the bench import from here
__all__ = ["JSON_INT_MAX", "JSON_INT_MIN", "MAX_ITEMS", "MAX_TEXT", "SPEC_REFINEMENTS", "FastGenerator", "Invalid",
           "SchemaStrategies", "absolute_paths", "fast_generator_for", "free_objects", "invalid_request",
           "json_scalars", "json_values", "refined_defs", "relative_paths", "request_ids", "strategies_for", "uris",
           "without_local_constants"]


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
            # only a user's own schema (--acp-schema) can get here: ours is drawn by the walker (a test says so)
            try:
                from hypothesis_jsonschema import from_schema
            except ImportError:
                raise SchemaError(
                    f"the fuzzer cannot draw {name} of this schema by itself ({e}); "
                    "pip install 'acp-conformance[schema-fallback]' adds hypothesis-jsonschema for it") from None
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


@lru_cache(maxsize=4)
def strategies_for(schema_path: str | None = None) -> SchemaStrategies:
    return SchemaStrategies(cached_schema(schema_path))
