"""Every frame the target writes, validated method-aware against the schema (SCHEMA-001,
UPDATE-002, UPDATE-003). The explanation names the definition, the union branch and the path."""

from __future__ import annotations

from ...protocol.schema import cached_schema
from ...protocol.validate import Validator
from ...wire.transcript import RECEIVED, Frame
from ..findings import FAIL
from ..monitor import BATCH, NOTIFICATION, REQUEST, RESPONSE, Monitor, Rpc


class SchemaMonitor(Monitor):
    finish_last = True
    rules = ("SCHEMA-001", "UPDATE-002", "UPDATE-003")

    def __init__(self, ctx):
        super().__init__(ctx)
        self.validator: Validator = ctx.options.get("validator") or Validator(cached_schema(None))
        union = self.validator.schema.defs.get("SessionUpdate", {})
        self.known_updates = {
            ((b.get("properties") or {}).get("sessionUpdate") or {}).get("const")
            for b in union.get("anyOf", union.get("oneOf", [])) if isinstance(b, dict)} - {None}
        self.checked: dict[str, int] = {}
        self.bad: set[str] = set()
        self.pending: list[tuple[str, Frame, str]] = []

    def on_frame(self, frame: Frame, rpc: Rpc | None) -> None:
        if rpc is None or frame.direction != RECEIVED:
            return
        if rpc.kind == BATCH:
            for item in frame.msg:
                self._check(frame, item, None)
        elif rpc.kind in (REQUEST, NOTIFICATION, RESPONSE):
            self._check(frame, frame.msg, rpc.method if rpc.kind == RESPONSE else None)

    def _rule_for(self, msg: dict) -> str:
        if msg.get("method") != "session/update":
            return "SCHEMA-001"
        params = msg.get("params")
        update = params.get("update") if isinstance(params, dict) else None
        kind = update.get("sessionUpdate") if isinstance(update, dict) else None
        # an unknown variant that is not `_`-prefixed is UPDATE-002's; a malformed known one UPDATE-003's
        if isinstance(kind, str) and kind not in self.known_updates and not kind.startswith("_"):
            return "UPDATE-002"
        return "UPDATE-003"

    def _check(self, frame: Frame, msg, request_method: str | None) -> None:
        if not isinstance(msg, dict):
            return
        if "method" in msg and msg.get("method") not in self.validator.schema.methods:
            return  # unknown methods are other rules' business
        if "method" not in msg and "result" in msg and not request_method:
            return  # a response to an unknown request: ERR-004 judges it
        if request_method == "initialize" and isinstance(msg.get("result"), dict) \
                and _below_v2(msg["result"].get("protocolVersion")):
            return  # a v1 answer (an agent of both versions, asked for 1) has v1's shape, not v2's schema
        rule = self._rule_for(msg)
        violation = self.validator.check_message(msg, request_method)
        if msg.get("method") == "session/update":
            for r in ("UPDATE-002", "UPDATE-003"):
                self.checked[r] = self.checked.get(r, 0) + 1
        else:
            self.checked[rule] = self.checked.get(rule, 0) + 1
        if violation is not None:
            self.pending.append((rule, frame, str(violation)))

    def finish(self) -> None:
        # one defect, one verdict: a frame that a specific rule already failed is only noted here
        owned = {}
        for f in self.ctx.findings:
            if f.status == FAIL and f.frames and f.rule not in self.rules:
                owned.setdefault(f.frames[0], f.rule)
        for rule, frame, text in self.pending:
            if frame.seq in owned:
                self.noted(rule, f"frame #{frame.seq}: {text} (judged as {owned[frame.seq]})", [frame])
            else:
                self.bad.add(rule)
                self.failed(rule, f"frame #{frame.seq}: {text}", [frame])
        for rule, n in self.checked.items():
            if rule not in self.bad:
                self.passed(rule, f"{n} message(s) from the target matched the schema")


def _below_v2(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v < 2


class ClientSchemaMonitor(SchemaMonitor):
    """SCHEMA-001 for a client: what it writes matches the schema (UPDATE-002/003 bind agents only)."""

    side = "client"
    rules = ("SCHEMA-001",)

