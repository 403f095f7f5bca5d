"""Every value the fuzz strategies call valid validates against our schema; every derived invalid
value that breaks the schema is rejected by it (per definition and per method)."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_conformance.fuzz.strategies import FastGenerator, Invalid, invalid_request, strategies_for
from acp_conformance.protocol.schema import cached_schema
from acp_conformance.protocol.validate import Validator

SCHEMA = cached_schema()
GEN = strategies_for()
FAST = FastGenerator(SCHEMA)
VALIDATOR = Validator(SCHEMA)
FAST_SETTINGS = settings(max_examples=150, database=None, deadline=None, derandomize=True,
                         suppress_health_check=list(HealthCheck))
DEFS = sorted(SCHEMA.defs)
# the raw (unfiltered) walker output must be valid too, or the filter would hide a walker bug
RAW_FAILURES_ALLOWED = {"Error", "IdleStateUpdate", "StateUpdate", "SessionUpdate", "UpdateSessionNotification",
                        "ErrorStopReason", "SubagentUpdate"}  # if/then of Error's -32022 data: filtered


@FAST_SETTINGS
@given(st.sampled_from(DEFS), st.data())
def test_every_definition_generates_valid_values(name, data):
    value = data.draw(GEN.definition(name))
    assert VALIDATOR.is_valid(name, value), (name, value)


@FAST_SETTINGS
@given(st.sampled_from(DEFS), st.data())
def test_the_walker_itself_is_right_before_the_filter(name, data):
    value = data.draw(GEN._ref(name))
    if name not in RAW_FAILURES_ALLOWED:
        assert VALIDATOR.is_valid(name, value), (name, value)


def test_no_definition_needs_the_hypothesis_jsonschema_fallback():
    for name in DEFS:
        GEN._build_definition(name)
    assert GEN.fallbacks == {}


@pytest.mark.parametrize("name", DEFS)
def test_fast_generator_is_valid_for_every_definition(name):
    rng = random.Random(name)
    for _ in range(20):
        assert VALIDATOR.is_valid(name, FAST.definition(name, rng))


@FAST_SETTINGS
@given(st.sampled_from(sorted(SCHEMA.methods)), st.data())
def test_messages_per_method_validate(method, data):
    m = SCHEMA.methods[method]
    msg = data.draw(GEN.request(method) if m.kind == "request" else GEN.notification(method))
    assert VALIDATOR.check_message(msg) is None
    if m.result:
        resp = data.draw(GEN.response(method))
        assert VALIDATOR.check_message(resp, method) is None


@FAST_SETTINGS
@given(st.sampled_from(["client", "agent"]), st.data())
def test_messages_of_each_side_validate(side, data):
    msg = data.draw(GEN.messages_of(side))
    method = msg.get("method")
    assert VALIDATOR.check_message(msg) is None or method is None


SCHEMA_LEVEL = {"drop_required", "wrong_type", "unknown_block_type", "version_out_of_range"}
INVALID_METHODS = ["initialize", "session/new", "session/prompt", "session/resume", "session/list",
                   "session/set_config_option", "session/close", "session/delete"]


@FAST_SETTINGS
@given(st.sampled_from(INVALID_METHODS), st.data())
def test_invalid_values_break_the_schema_where_the_schema_can_tell(method, data):
    inv: Invalid = data.draw(invalid_request(GEN, method))
    assert inv.rules
    if inv.how in SCHEMA_LEVEL:
        definition = SCHEMA.methods[method].params
        assert not VALIDATOR.is_valid(definition, inv.params), inv
    elif inv.how == "relative_path":
        assert not inv.params["cwd"].startswith("/")
    elif inv.how == "empty_prompt":
        assert inv.params["prompt"] == []


def test_a_definition_the_walker_cannot_draw_without_the_fallback_extra_is_one_sentence(monkeypatch):
    # hypothesis-jsonschema is the extra schema-fallback (it pins hypothesis below 6.170.10): without it, a user's
    # schema with a definition the walker does not know is a sentence naming the definition and the extra
    import sys

    from acp_conformance.fuzz import strategies
    from acp_conformance.protocol.schema import SchemaError

    gen = strategies.SchemaStrategies(SCHEMA)
    gen.defs = dict(gen.defs, Impossible={"$ref": "other.json#/x"})  # an external $ref: the walker stops
    monkeypatch.setitem(sys.modules, "hypothesis_jsonschema", None)  # import fails as if not installed
    with pytest.raises(SchemaError, match=r"Impossible .*acp-conformance\[schema-fallback\]"):
        gen._build_definition("Impossible")
