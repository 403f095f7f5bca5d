"""Extensibility: custom and ``$/`` notifications, ``_meta`` equivalence, no custom root fields,
trace context keys, strict known discriminators, advertised extension capabilities."""

from __future__ import annotations

import json
import re
from typing import Any

from ...wire.transcript import RECEIVED, SENT
from ..monitor import REQUEST, RESPONSE
from ._attribution import attribute, initialized_at, valid_id
from ._common import ConnLog, ConnMonitor, FrameLogMixin, Msg, fr, js, session_update

OPEN_ENUMS = {
    "state": ("running", "idle", "requires_action", "unknown"),
    "stopReason": ("end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error"),
    "status": ("pending", "in_progress", "paused", "completed", "failed", "cancelled"),
    "kind": ("read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"),
    "optionKind": ("allow_once", "allow_always", "reject_once", "reject_always"),
    "contentType": ("text", "image", "audio", "resource_link", "resource"),
    # what a client sends: permission outcomes, elicitation actions
    "outcome": ("cancelled", "selected"),
    "action": ("accept", "decline", "cancel"),
}
TRACEPARENT = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")


def strip_meta(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: strip_meta(x) for k, x in v.items() if k != "_meta"}
    if isinstance(v, list):
        return [strip_meta(x) for x in v]
    return v


def metas(v: Any, path: str = "$") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    if isinstance(v, dict):
        for k, x in v.items():
            if k == "_meta":
                out.append((path, x))
            else:
                out.extend(metas(x, f"{path}.{k}"))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            out.extend(metas(x, f"{path}[{i}]"))
    return out


CANCELLED = "error -32800"


def _outcome(r: Msg) -> str:
    if r.ok and isinstance(r.result, dict):  # a client's answer: the outcome it chose is the outcome
        choice = r.result.get("outcome", {}).get("outcome") if isinstance(r.result.get("outcome"), dict) \
            else r.result.get("action")
        if isinstance(choice, str):
            return f"success ({choice})"
    return "success" if r.ok else f"error {js(r.error_code)}"


class ExtMonitor(FrameLogMixin, ConnMonitor):
    side = "both"  # judges the target's frames in either role (ctx.target_side)
    rules = ("EXT-001", "EXT-002", "EXT-003", "EXT-004", "EXT-005", "EXT-006", "EXT-007", "EXT-008")

    def on_msg(self, log: ConnLog, m: Msg) -> None:
        if m.direction != RECEIVED or not m.is_dict:
            return
        self._roots(m)
        self._trace(m)
        self._enums(m)
        caps = None
        if m.kind == RESPONSE and m.ok and m.request is not None and m.request.method == "initialize" \
                and isinstance(m.result, dict) and isinstance(m.result.get("capabilities"), dict):
            caps = m.result["capabilities"]
        elif m.kind == REQUEST and m.method == "initialize" and isinstance(m.params, dict) \
                and isinstance(m.params.get("capabilities"), dict):
            caps = m.params["capabilities"]  # a client advertises in its initialize request
        if caps is not None:
            found = [p for p, _ in metas(caps, "capabilities")]
            if found:
                self.pass_few("EXT-008", f"the {self.ctx.target_side} advertises extension capabilities under {', '.join(found[:5])}.",
                              [m], limit=1)
            else:
                self.noted("EXT-008", f"the {self.ctx.target_side}'s capabilities carry no _meta (no extension advertised; "
                           "informational).", fr([m]))

    def _roots(self, m: Msg) -> None:
        roots: list[tuple[str, Any]] = [("params", m.params), ("result", m.result), ("error", m.error)]
        su = session_update(m)
        if su is not None:
            roots.append(("params.update", su[1]))
            if isinstance(su[1].get("content"), dict):
                roots.append(("params.update.content", su[1]["content"]))
        if m.kind == RESPONSE and m.request is not None and m.request.method == "initialize" \
                and isinstance(m.result, dict):
            for k in ("info", "capabilities"):
                roots.append((f"result.{k}", m.result.get(k)))
        bad = [(where, k) for where, obj in roots if isinstance(obj, dict)
               for k in obj if isinstance(k, str) and k.startswith("_") and k != "_meta"]
        what = m.method or "a response"
        undefined = self._undefined_names(m, su)
        if bad:
            where, k = bad[0]
            self.failed("EXT-004", f"{what} (t={m.t:.2f}) carries the custom root field {k!r} in {where}; extension "
                        "data belongs in _meta.", fr([m]))
        elif undefined:
            where, typ, k = undefined
            self.failed("EXT-004", f"{what} (t={m.t:.2f}) carries the field {k!r} at the root of {where} ({typ}), "
                        "which the type does not define: every name there is reserved for the protocol, and "
                        "extension data belongs in _meta.", fr([m]))
        elif any(isinstance(obj, dict) for _, obj in roots):
            self.pass_few("EXT-004", f"{what} has no custom root fields.", [m])

    def _undefined_names(self, m: Msg, su) -> tuple[str, str, str] | None:
        """A name an agent wrote at the root of a result or a session update that its type does not define
        (where, type, name), read from the run's schema; None where the schema leaves the type open. Only the
        agent's messages: a client's request params may carry a newer (unstable) field of a request."""
        if self.ctx.target_side != "agent":
            return None
        from ...protocol.root_names import root_names, update_names
        schema = self.ctx.schema
        checks: list[tuple[str, str, Any, set[str] | None]] = []
        if m.kind == RESPONSE and m.ok and m.request is not None and m.request.method in schema.methods:
            typ = schema.methods[m.request.method].result
            if typ:
                checks.append(("result", typ, m.result, root_names(schema, typ)))
        if su is not None:
            kind = su[1].get("sessionUpdate")
            checks.append(("params.update", f"SessionUpdate {kind}", su[1], update_names(schema, kind)))
        for where, typ, obj, names in checks:
            if names is not None and isinstance(obj, dict):
                extra = [k for k in obj if isinstance(k, str) and not k.startswith("_") and k not in names]
                if extra:
                    return where, typ, extra[0]
        return None

    def _enums(self, m: Msg) -> None:
        vals: list[tuple[str, str, Any]] = []  # (field, enum, value)
        su = session_update(m)
        if su is not None:
            u = su[1]
            if u.get("sessionUpdate") == "state_update":
                vals.append(("state", "state", u.get("state")))
                if "stopReason" in u:
                    vals.append(("stopReason", "stopReason", u.get("stopReason")))
            if u.get("sessionUpdate") in ("tool_call_update", "tool_call"):
                for k in ("status", "kind"):
                    if k in u:
                        vals.append((k, k, u.get(k)))
            c = u.get("content")
            if u.get("sessionUpdate") in ("user_message", "agent_message", "user_message_chunk",
                                          "agent_message_chunk", "agent_thought", "agent_thought_chunk"):
                for b in (c if isinstance(c, list) else [c]):
                    if isinstance(b, dict) and "type" in b:
                        vals.append(("content type", "contentType", b.get("type")))
        if m.kind == RESPONSE and m.ok and isinstance(m.result, dict) and m.method in ("session/request_permission",
                                                                           "elicitation/create"):
            out = m.result.get("outcome")
            if m.method == "session/request_permission" and isinstance(out, dict) and "outcome" in out:
                vals.append(("permission outcome", "outcome", out.get("outcome")))
            elif m.method == "elicitation/create" and "action" in m.result:
                vals.append(("elicitation action", "action", m.result.get("action")))
        if m.kind == REQUEST and m.method == "session/prompt" and isinstance(m.params, dict):
            for b in m.params.get("prompt") or []:
                if isinstance(b, dict) and "type" in b:
                    vals.append(("content type", "contentType", b.get("type")))
        if m.kind == REQUEST and m.method == "session/request_permission" and isinstance(m.params, dict):
            for o in m.params.get("options") or []:
                if isinstance(o, dict) and "kind" in o:
                    vals.append(("permission option kind", "optionKind", o.get("kind")))
        for field, enum, v in vals:
            if v is None or not isinstance(v, str):
                continue  # shape errors are the schema's
            if v in OPEN_ENUMS[enum] or v.startswith("_"):
                self.pass_few("EXT-005", f"{field} {v!r} is spec-defined or _-prefixed.", [m])
            else:
                self.failed("EXT-005", f"{m.method} (t={m.t:.2f}) uses the {field} value {v!r}, neither defined by ACP "
                            "nor _-prefixed (custom values must start with _).", fr([m]))

    def _trace(self, m: Msg) -> None:
        for obj in (m.params, m.result):
            meta = obj.get("_meta") if isinstance(obj, dict) else None
            if not isinstance(meta, dict):
                continue
            for k in ("traceparent", "tracestate", "baggage"):
                if k not in meta:
                    continue
                v = meta[k]
                if not isinstance(v, str) or (k == "traceparent" and not TRACEPARENT.match(v)):
                    self.warned("EXT-006", f"{m.method or 'a response'} carries _meta.{k} = {js(v, 80)}, not a W3C "
                                "trace context value.", fr([m]))
                else:
                    self.pass_few("EXT-006", f"_meta.{k} is a W3C trace context string.", [m], key=k, limit=1)

    def analyze(self, log: ConnLog) -> None:
        init_t = initialized_at(log)
        sent, stray = attribute(self._frames_of(log.conn), log.msgs)
        stray_by_note = {}
        for f, note in stray:
            if note is not None:
                stray_by_note.setdefault(note.frame.seq, f)
        later_ok = [m for m in log.msgs if m.direction == SENT and m.kind == REQUEST and valid_id(m.id) and m.responses]
        for s in sent:
            if s.kind != "silent" or init_t is None or s.frame.t < init_t:
                continue
            method = s.value.get("method", "")
            if not (method.startswith("_") or (method.startswith("$/") and method != "$/cancel_request")):
                continue
            rule = "EXT-001" if method.startswith("_") else "EXT-002"
            answer = stray_by_note.get(s.frame.seq)
            nxt = next((r for r in later_ok if r.frame.seq > s.frame.seq), None)
            if answer is not None:
                (self.warned if rule == "EXT-001" else self.noted)(
                    rule, f"the notification {method!r} was answered: {js(answer.msg, 140)}.", fr([answer, s.frame]))
            elif s.maybe:  # an id-null answer that may be its, or the late answer of an earlier line
                self.noted(rule, f"after the notification {method!r} an id-null answer arrived (t={s.maybe[0].t:.2f}) "
                           "that may answer it or an earlier line; not judged.", fr([s.maybe[0], s.frame]))
            elif nxt is not None:
                self.pass_few(rule, f"the notification {method!r} got no answer and the next request "
                              f"({nxt.method}) was answered.", [s.frame, nxt], key=method, limit=1)
            elif log.end is not None and not log.suite_closed:
                (self.warned if rule == "EXT-001" else self.noted)(
                    rule, f"after the notification {method!r} the {self.ctx.target_side} answered nothing more: {log.end_desc}.",
                    fr([s.frame]))
        self._meta_equivalence(log, init_t)
        self._strict_blocks(log, init_t)

    def _meta_equivalence(self, log: ConnLog, init_t: float | None) -> None:
        if init_t is None:
            return
        groups: dict[str, list[Msg]] = {}
        for m in log.msgs:
            if m.direction == SENT and m.kind == REQUEST and valid_id(m.id) and m.t >= init_t and m.responses \
                    and m.method != "initialize":
                key = m.method + " " + json.dumps(strip_meta(m.params), sort_keys=True)
                groups.setdefault(key, []).append(m)
        for key, reqs in groups.items():
            sigs = {json.dumps(metas(r.params), sort_keys=True) for r in reqs}
            if len(reqs) < 2 or len(sigs) < 2:
                continue
            base = reqs[0]
            for r in reqs[1:]:
                if json.dumps(metas(r.params)) == json.dumps(metas(base.params)):
                    continue
                a, b = _outcome(base.responses[0]), _outcome(r.responses[0])
                mb = js(metas(base.params), 80) if metas(base.params) else "no _meta"
                mr = js(metas(r.params), 80) if metas(r.params) else "no _meta"
                if CANCELLED in (a, b):
                    continue  # a request cancelled (its turn ended, say) tells nothing of how its _meta was read
                if a != b:
                    self.failed("EXT-003", f"{r.method} with {mr} got {b}, the same request with {mb} got {a}.",
                                fr([r.responses[0], r, base.responses[0], base]))
                else:
                    self.pass_few("EXT-003", f"{r.method} with {mr} got {b}, like the same request with {mb}.",
                                  [r.responses[0], r, base], key=r.method, limit=2)

    def _strict_blocks(self, log: ConnLog, init_t: float | None) -> None:
        if init_t is None:
            return
        for m in log.msgs:
            if m.direction != SENT or m.kind != REQUEST or m.method != "session/prompt" or not m.responses:
                continue
            blocks = (m.params or {}).get("prompt") if isinstance(m.params, dict) else None
            if not isinstance(blocks, list):
                continue
            why = None
            for b in blocks:
                if isinstance(b, dict) and b.get("type") == "text" and "text" not in b:
                    why = "a text block without text"
                elif isinstance(b, dict) and b.get("type") == "resource_link" and "name" not in b:
                    why = "a resource_link block without name"
            if why is None:
                continue
            r = m.responses[0]
            label = f"session/prompt id={js(m.id)} with {why}"
            if r.error_code == -32602:
                self.pass_few("EXT-007", f"{label} was rejected with -32602.", [r, m], key=why, limit=1)
            elif r.ok:
                self.warned("EXT-007", f"{label} was accepted ({js(r.result, 80)}); -32602 was expected.", fr([r, m]))
            elif r.error_code == -32002:
                self.noted("EXT-007", f"{label} got -32002 (its session is unknown).", fr([r, m]))
            else:
                self.warned("EXT-007", f"{label} got error {js(r.error_code)}; -32602 was expected.", fr([r, m]))
