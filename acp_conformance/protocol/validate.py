"""Method-aware validation of ACP messages.

A request or notification is validated by its method's params definition, a response by the
result definition of the request it answers (or by ``Error``), and a ``session/update`` by its
``sessionUpdate`` branch. The hot path asks jsonschema-rs a yes/no question against one compiled
definition; only when the answer is no does jsonschema (pure Python) compute the readable
explanation: the definition, the branch of each discriminated union on the way, and the JSON path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jsonschema
import jsonschema_rs

from .schema import Schema


@dataclass(frozen=True)
class Violation:
    definition: str  # what the value was checked against, e.g. "UpdateSessionNotification"
    where: str  # "params", "result" or "error"
    path: str  # JSON path inside the message, e.g. "$.params.update.messageId"
    message: str  # the readable reason
    branch: str = ""  # the discriminated-union branches taken, e.g. "sessionUpdate=agent_message_chunk"

    def __str__(self) -> str:
        via = f" (branch {self.branch})" if self.branch else ""
        return f"{self.where} does not match {self.definition}{via}: at {self.path}: {self.message}"


class Validator:
    def __init__(self, schema: Schema):
        self.schema = schema
        self._fast: dict[str, Any] = {}
        self._slow: dict[str, jsonschema.protocols.Validator] = {}

    # -- compiled definitions -------------------------------------------------------------------
    def _fast_for(self, name: str):
        v = self._fast.get(name)
        if v is None:
            v = self._fast[name] = jsonschema_rs.validator_for(self.schema.definition_schema(name))
        return v

    def is_valid(self, name: str, value: Any) -> bool:
        return self._fast_for(name).is_valid(value)

    def check(self, name: str, value: Any, where: str = "value", prefix: str = "$") -> Violation | None:
        if self._fast_for(name).is_valid(value):
            return None
        return self.explain(name, value, where, prefix)

    # -- messages -------------------------------------------------------------------------------
    def check_message(self, msg: Any, request_method: str | None = None) -> Violation | None:
        """Validate one JSON-RPC message of ACP. ``request_method`` names the request a response
        answers (None when unknown). Unknown methods are not schema-checked (other rules judge them)."""
        if not isinstance(msg, dict):
            return None
        if "method" in msg:
            m = self.schema.methods.get(msg.get("method"))
            if m is None or not m.params:
                return None
            params = msg.get("params")
            if params is None and "params" not in msg:
                params = {}  # omitted params: check the required fields all the same
            return self.check(m.params, params, "params", "$.params")
        if "error" in msg:
            if "Error" in self.schema.defs:
                return self.check("Error", msg["error"], "error", "$.error")
            return None
        if "result" in msg and request_method:
            m = self.schema.methods.get(request_method)
            if m is not None and m.result:
                return self.check(m.result, msg["result"], "result", "$.result")
        return None

    # -- explanation (slow path) ----------------------------------------------------------------
    def _slow_for(self, name: str):
        v = self._slow.get(name)
        if v is None:
            cls = jsonschema.validators.validator_for(self.schema.document, default=jsonschema.Draft202012Validator)
            v = self._slow[name] = cls(self.schema.definition_schema(name))
        return v

    def explain(self, name: str, value: Any, where: str = "value", prefix: str = "$") -> Violation:
        errors = list(self._slow_for(name).iter_errors(value))
        if not errors:  # the two engines disagree; say so rather than invent a reason
            return Violation(name, where, prefix, "rejected by the fast validator only (engine disagreement)")
        err = _pick(errors)
        branches: list[str] = []
        err = self._descend(err, branches)
        path = prefix + _json_path(err.absolute_path)
        return Violation(name, where, path, _message(err), ", ".join(branches))

    def _descend(self, err, branches: list[str]):
        """Walk into anyOf/oneOf errors along the branch the instance's discriminator selects."""
        while err.validator in ("anyOf", "oneOf") and err.context:
            disc = err.schema.get("x-discriminator") if isinstance(err.schema, dict) else None
            inst = err.instance
            by_branch: dict[int, list] = {}
            for sub in err.context:
                by_branch.setdefault(sub.relative_schema_path[0], []).append(sub)
            chosen = None
            if disc and isinstance(inst, dict):
                value = inst.get(disc)
                for idx, sub_schema in enumerate(err.validator_value):
                    const = ((sub_schema.get("properties") or {}).get(disc) or {}).get("const") \
                        if isinstance(sub_schema, dict) else None
                    if const is not None and const == value:
                        chosen = idx
                        branches.append(f"{disc}={value}")
                        break
                if chosen is None:
                    known = [((s.get("properties") or {}).get(disc) or {}).get("const")
                             for s in err.validator_value if isinstance(s, dict)]
                    known = [k for k in known if k is not None]
                    err.message = (f"unknown {disc} {value!r}: not one of {', '.join(map(repr, known))}, "
                                   "and custom values must begin with '_'") if disc in inst else \
                        f"{disc!r} is a required property"
                    return err
            if chosen is None:
                # no discriminator: the branch whose errors go deepest is the likeliest intent
                chosen = max(by_branch, key=lambda i: max(len(e.absolute_path) for e in by_branch[i]))
            subs = by_branch.get(chosen)
            if not subs:
                return err
            err = _pick(subs)
        return err


def _pick(errors):
    # jsonschema's own ranking (shallow, strong validators first); unions are then descended by us
    return max(errors, key=jsonschema.exceptions.relevance)


def _json_path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _message(err) -> str:
    msg = err.message
    return msg if len(msg) <= 300 else msg[:300] + "..."
