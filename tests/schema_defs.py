"""Our ACP v2 schema (schema/acp-v2.schema.json), its definitions, and a validity check that two JSON Schema
implementations (jsonschema, jsonschema-rs) must agree on. Shared by tests/test_schema.py and
tests/test_schema_examples.py."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jsonschema
import jsonschema_rs


REPO = Path(__file__).resolve().parents[1]
SCHEMA_PATH = REPO / "schema" / "acp-v2.schema.json"
DRAFT = "https://json-schema.org/draft/2020-12/schema"


@functools.cache
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def defs() -> dict:
    return schema()["$defs"]


@functools.cache
def _validators(name: str):
    s = schema()
    root = {"$schema": DRAFT, "$ref": f"#/$defs/{name}", "$defs": s["$defs"]}
    return jsonschema.Draft202012Validator(root), jsonschema_rs.validator_for(root)


def is_valid(name: str, instance) -> bool:
    assert name in defs(), f"no definition {name}"
    py, rs = _validators(name)
    a, b = py.is_valid(instance), rs.is_valid(instance)
    assert a == b, f"jsonschema ({a}) and jsonschema-rs ({b}) disagree on {name}: {instance!r}"
    return a
