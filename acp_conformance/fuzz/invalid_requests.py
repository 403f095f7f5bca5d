"""Invalid requests, derived from valid ones: a required field dropped, a wrong type, an unknown
content block type, an out-of-range protocol version, a relative path, an empty prompt array. Each
carries the rule ids of the catalog that say how it must be answered."""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st

from .base_strategies import JSON_INT_MAX, JSON_INT_MIN, relative_paths, sampled

if TYPE_CHECKING:
    from .strategies import SchemaStrategies


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
        kind = draw(sampled(kinds))
        rules = ("ERR-013",)
        if kind == "drop_required":
            key = draw(sampled(required))
            params.pop(key, None)
        elif kind == "wrong_type":
            key = draw(sampled(required))
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
