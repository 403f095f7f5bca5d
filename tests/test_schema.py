"""Our ACP v2 schema (schema/acp-v2.schema.json): well-formedness, the method table and conventions
(its hand-written valid/invalid examples: tests/test_schema_examples.py)."""

from __future__ import annotations

import json
import re

import jsonschema
import jsonschema_rs
import pytest

from schema_defs import DRAFT, _validators, defs, is_valid, schema


# ------------------------------------------------------------------ (a) well-formed

def test_schema_is_valid_draft_2020_12():
    s = schema()
    assert s["$schema"] == DRAFT
    jsonschema.Draft202012Validator.check_schema(s)


def test_schema_compiles_under_jsonschema_rs():
    jsonschema_rs.validator_for(schema())
    for name in defs():
        _validators(name)


def test_every_ref_resolves():
    refs = set(re.findall(r'"#/\$defs/([^"]+)"', json.dumps(schema())))
    assert refs - set(defs()) == set()


def test_every_definition_has_a_description():
    missing = [n for n, d in defs().items() if not str(d.get("description", "")).strip()]
    assert not missing


def test_no_closed_objects():
    assert '"additionalProperties": false' not in json.dumps(schema())


# ------------------------------------------------------------------ (b) method table

EXPECTED_METHODS = {
    "initialize": ("client->agent", "request"),
    "auth/login": ("client->agent", "request"),
    "auth/logout": ("client->agent", "request"),
    "session/new": ("client->agent", "request"),
    "session/list": ("client->agent", "request"),
    "session/delete": ("client->agent", "request"),
    "session/resume": ("client->agent", "request"),
    "session/close": ("client->agent", "request"),
    "session/prompt": ("client->agent", "request"),
    "session/set_config_option": ("client->agent", "request"),
    "tool_call/cancel": ("client->agent", "request"),
    "terminal/cancel": ("client->agent", "request"),
    "session/cancel": ("client->agent", "notification"),
    "session/request_permission": ("agent->client", "request"),
    "elicitation/create": ("agent->client", "request"),
    "session/update": ("agent->client", "notification"),
    "elicitation/complete": ("agent->client", "notification"),
    "$/cancel_request": ("both", "notification"),
}
SIDE = {"client->agent": "agent", "agent->client": "client", "both": "protocol"}


def test_method_table_is_the_seed_surface():
    table = schema()["x-acp-methods"]
    assert {m: (e["direction"], e["kind"]) for m, e in table.items()} == EXPECTED_METHODS


@pytest.mark.parametrize("method", sorted(EXPECTED_METHODS))
def test_method_entry_points_at_annotated_definitions(method):
    e = schema()["x-acp-methods"][method]
    assert set(e) == {"direction", "kind", "params", "result"}
    side = SIDE[e["direction"]]
    p = defs()[e["params"]]
    assert (p.get("x-method"), p.get("x-side")) == (method, side)
    if e["kind"] == "request":
        assert e["params"].endswith("Request") and e["result"].endswith("Response")
        r = defs()[e["result"]]
        assert (r.get("x-method"), r.get("x-side")) == (method, side)
    else:
        assert e["result"] is None and e["params"].endswith("Notification")
    for name in filter(None, (e["params"], e["result"])):
        meta = defs()[name].get("properties", {}).get("_meta")
        assert meta and meta.get("type") == ["object", "null"], f"{name} lacks _meta"


def test_every_x_method_annotation_is_in_the_table():
    table = schema()["x-acp-methods"]
    for name, d in defs().items():
        if "x-method" in d:
            e = table[d["x-method"]]
            assert name in (e["params"], e["result"]), name
            assert d["x-side"] == SIDE[e["direction"]], name


def test_out_of_scope_methods_are_absent():
    table = schema()["x-acp-methods"]
    for m in ("auth/status", "providers/list", "session/fork", "session/archive", "session/unarchive",
              "session/status", "session/set_title", "mcp/message", "proxy/initialize", "proxy/successor"):
        assert m not in table


# ------------------------------------------------------------------ conventions

def _unions():
    return [(n, d) for n, d in defs().items() if "x-discriminator" in d]


@pytest.mark.parametrize("name", [n for n, _ in _unions()])
def test_discriminated_union_shape(name):
    d = defs()[name]
    disc = d["x-discriminator"]
    branches = d.get("anyOf") or d.get("oneOf")
    known = [b for b in branches if "const" in b.get("properties", {}).get(disc, {})]
    assert known, name
    for b in known:
        assert disc in b["required"]
    custom = [b for b in branches if b.get("properties", {}).get(disc, {}).get("pattern") == "^_"]
    assert len(custom) == 1, f"{name} needs exactly one '_' catch-all branch"


def test_expected_unions_are_marked():
    expected = {
        "SessionUpdate": "sessionUpdate", "ContentBlock": "type", "StateUpdate": "state", "ToolCallContent": "type",
        "McpServer": "type", "AuthMethod": "type", "PlanUpdateContent": "type", "RequestPermissionSubject": "type",
        "RequestPermissionOutcome": "outcome", "SessionConfigOption": "type", "ReplayFrom": "type",
        "AvailableCommand": "type", "AvailableCommandInput": "type", "DiffChange": "operation",
        "BackgroundWork": "type", "CreateElicitationRequest": "mode", "CreateElicitationResponse": "action",
        "SetSessionConfigOptionRequest": "type", "IdleStateUpdate": "stopReason",
        "ElicitationPropertySchema": "type",
    }
    for name, disc in expected.items():
        assert defs()[name].get("x-discriminator") == disc, name


def test_absolute_path_is_a_marked_plain_string():
    d = defs()["AbsolutePath"]
    assert d["type"] == "string" and d["x-absolute-path"] is True and "pattern" not in d
    assert is_valid("AbsolutePath", "C:\\Users\\me\\project") and is_valid("AbsolutePath", "/home/me")


@pytest.mark.parametrize("name", ["ToolKind", "ToolCallStatus", "PermissionOptionKind", "StopReason", "NoticeSeverity",
                                  "CompactionStatus", "PlanEntryStatus", "PlanEntryPriority", "Role", "DiffFileType",
                                  "SessionConfigOptionCategory", "SystemPromptMode", "StringFormat", "IconTheme"])
def test_simple_open_enums(name):
    d = defs()[name]
    first = d["anyOf"][0]["enum"][0]
    assert is_valid(name, first)
    assert is_valid(name, "_vendor.example/custom")
    assert not is_valid(name, "future_value")
    assert not is_valid(name, 3)
