"""Each request method's retry class (RFD "v2 Idempotency Keys"), as data: whether a request whose
response was lost may be sent again as is, only with the same idempotencyKey, or not at all.

The table is ``retry_classes.json`` beside this module; ``acp-conformance rules --retry-classes`` shows it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

RETRY_CLASSES_PATH = Path(__file__).with_name("retry_classes.json")
AS_IS, WITH_KEY, NEVER = "as_is", "with_key", "never"


@dataclass(frozen=True)
class RetryClass:
    method: str
    kind: str  # as_is | with_key | never
    basis: str  # rfd (stated by the RFD) | reading (our reading of the method's effect)
    why: str


@lru_cache(maxsize=1)
def load_retry_classes() -> tuple[str, dict[str, str], dict[str, RetryClass]]:
    """(source, class name -> meaning, method -> its retry class)."""
    data = json.loads(RETRY_CLASSES_PATH.read_text(encoding="utf-8"))
    methods = {m: RetryClass(m, v["class"], v["basis"], v["why"]) for m, v in data["methods"].items()}
    return data["source"], dict(data["classes"]), methods


def retry_class(method: str) -> RetryClass | None:
    return load_retry_classes()[2].get(method)
