"""Validate a report.json against schema/report.schema.json (the tests validate every report they produce)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from ..resources import schema_dir


@lru_cache(maxsize=1)
def report_validator():
    from jsonschema import Draft202012Validator
    schema = json.loads((schema_dir() / "report.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def report_errors(report: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
            for e in report_validator().iter_errors(report)]
