"""Session config options: well-formed lists, unique ids, set_config_option answers and rejections.

Every configOptions list the agent sends (session/new and session/resume results,
set_config_option results, config_option_update) is validated (CONFIG-004, CONFIG-005) and
becomes the session's known state. A successful set must answer with the complete list showing the
new value (CONFIG-001); an unknown configId or a bad value (CONFIG-002) or an unsupported value
type (CONFIG-003) must get -32602 and leave the state as it was (judged on the next list the agent
sends for the session). A session with no config options leaves the rules skipped.
"""

from __future__ import annotations

from typing import Any

from ...wire.transcript import RECEIVED
from ..findings import SKIP
from ..monitor import RESPONSE
from ._common import ConnLog, ConnMonitor, Msg, fr, js, session_update

INVALID_PARAMS = -32602
_CATEGORIES = ("mode", "model", "model_config", "thought_level")


def select_values(opt: dict[str, Any]) -> tuple[list[Any], list[str]]:
    """(values, problems) of a select option; values flattened over groups."""
    values, bad = [], []
    options = opt.get("options")
    if not isinstance(options, list) or not options:
        return [], ["options is not a non-empty array"]
    for o in options:
        if isinstance(o, dict) and "options" in o and "value" not in o:  # a group
            if not isinstance(o.get("groupId"), str) or not isinstance(o.get("name"), str):
                bad.append(f"group {js(o, 80)} lacks a string groupId or name")
            if not isinstance(o.get("options"), list) or not o["options"]:
                bad.append(f"group {js(o.get('groupId'))} has no options")
                continue
            items = o["options"]
        else:
            items = [o]
        for x in items:
            if not isinstance(x, dict) or not isinstance(x.get("value"), str) or not isinstance(x.get("name"), str):
                bad.append(f"option value {js(x, 80)} lacks a string value or name")
            else:
                values.append(x["value"])
    dup = sorted({v for v in values if values.count(v) > 1})
    if dup:
        bad.append(f"value(s) {', '.join(map(repr, dup))} appear more than once")
    return values, bad


def option_problems(opt: Any) -> list[str]:
    if not isinstance(opt, dict):
        return [f"a config option is not an object: {js(opt, 80)}"]
    cid = opt.get("configId")
    out = [f"{k} is not a string" for k in ("configId", "name") if not isinstance(opt.get(k), str)]
    t = opt.get("type")
    cat = opt.get("category")
    if cat is not None and cat not in _CATEGORIES and not (isinstance(cat, str) and cat.startswith("_")):
        out.append(f"category {js(cat)} is not mode/model/model_config/thought_level or `_`-prefixed")
    if t == "select":
        values, bad = select_values(opt)
        out += bad
        if opt.get("currentValue") not in values:
            out.append(f"currentValue {js(opt.get('currentValue'))} is not one of its values {js(values, 120)}")
    elif t == "boolean":
        if not isinstance(opt.get("currentValue"), bool):
            out.append(f"boolean currentValue {js(opt.get('currentValue'))} is not a boolean")
    elif not isinstance(t, str):
        out.append(f"type {js(t)} is not a string")
    return [f"option {js(cid)}: {x}" for x in out]


class SessionConfigMonitor(ConnMonitor):
    rules = ("CONFIG-001", "CONFIG-002", "CONFIG-003", "CONFIG-004", "CONFIG-005", "CONFIG-006")

    def __init__(self, ctx):
        super().__init__(ctx)
        self.lists = 0
        self.updates = 0

    def analyze(self, log: ConnLog) -> None:
        state: dict[str, dict[str, Any]] = {}  # sessionId -> {configId: currentValue}
        lists: dict[str, list[Any]] = {}  # sessionId -> last full list
        watch: list[tuple[Msg, str, dict[str, Any], str]] = []  # rejected sets to confirm: (resp, sid, before, rule)
        # options a config_option_update left out: gone, or only missing from a delta; sets on them are not judged
        vanished: dict[str, set[str]] = {}
        for m in log.msgs:
            if m.direction != RECEIVED:
                continue
            sid, opts, src, upd_msg = None, None, "", None
            if m.kind == RESPONSE and not m.duplicate and m.request is not None:
                req = m.request
                if m.method in ("session/new", "session/resume") and isinstance(m.result, dict):
                    sid = m.result.get("sessionId") if m.method == "session/new" else req.session_id
                    opts, src = m.result.get("configOptions"), f"{m.method} result"
                elif m.method == "session/set_config_option":
                    sid = req.session_id
                    self._judge_set(m, req, state.get(sid) if isinstance(sid, str) else None, watch,
                                    vanished.get(sid, set()))
                    if m.ok and isinstance(m.result, dict):
                        opts, src = m.result.get("configOptions"), "set_config_option result"
            else:
                su = session_update(m)
                if su and su[1].get("sessionUpdate") == "config_option_update":
                    sid, opts, src, upd_msg = su[0], su[1].get("configOptions"), "config_option_update", m
            if not isinstance(sid, str) or not isinstance(opts, list):
                continue
            where = f"{src} for {sid!r} at t={m.t:.2f}"
            self._validate(m, opts, where)
            new = {o["configId"]: o.get("currentValue") for o in opts if isinstance(o, dict) and isinstance(o.get("configId"), str)}
            if upd_msg is not None:
                self.updates += 1
                prev = state.get(sid)
                if prev is not None:
                    gone = sorted(set(prev) - set(new))
                    vanished.setdefault(sid, set()).update(gone)
                    if gone:
                        self.warned("CONFIG-006", f"{where} lists {sorted(new)}; option(s) {gone} of the previous "
                                    "list are missing (a delta instead of the complete state?).", fr([m]))
                    else:
                        self.pass_few("CONFIG-006", f"{where} lists every option of the previous list.", [m])
            # rejected sets: the state after them must be the state before them
            for w in list(watch):
                resp, wsid, before, rule = w
                if wsid != sid:
                    continue
                watch.remove(w)
                changed = sorted(k for k in before if k in new and new[k] != before[k]
                                 and not (m.method == "session/set_config_option" and m.kind == RESPONSE
                                          and m.request is not None and (m.request.params or {}).get("configId") == k))
                if changed:
                    self.failed(rule, f"after the rejected set_config_option (t={resp.t:.2f}) {where} shows "
                                f"{', '.join(f'{k}: {js(before[k])} -> {js(new[k])}' for k in changed)}.",
                                fr([m, resp]))
            state[sid], lists[sid] = new, opts
            vanished.get(sid, set()).difference_update(new)

    def _validate(self, m: Msg, opts: list[Any], where: str) -> None:
        self.lists += 1
        probs = [p for o in opts for p in option_problems(o)]
        if probs:
            self.failed("CONFIG-004", f"{where}: {'; '.join(probs[:4])}.", fr([m]))
        elif opts:
            self.pass_few("CONFIG-004", f"{where}: {len(opts)} well-formed option(s) with valid current values.", [m])
        ids = [o.get("configId") for o in opts if isinstance(o, dict)]
        dup = sorted({str(i) for i in ids if ids.count(i) > 1})
        if dup:
            self.failed("CONFIG-005", f"{where}: configId(s) {', '.join(dup)} appear more than once.", fr([m]))
        elif opts:
            self.pass_few("CONFIG-005", f"{where}: configIds {js(ids, 120)} are unique.", [m])

    def _judge_set(self, m: Msg, req: Msg, before: dict[str, Any] | None, watch: list,
                   vanished: set[str]) -> None:
        p = req.params if isinstance(req.params, dict) else {}
        cid, vtype, value = p.get("configId"), p.get("type"), p.get("value")
        label = f"set_config_option {js({k: p.get(k) for k in ('configId', 'type', 'value')}, 140)} (t={req.t:.2f})"
        if before is None:
            return  # an unknown session (ERR-001) or one whose options were never seen
        known = cid in before
        cur = before.get(cid)
        if not known and cid in vanished:
            self.noted("CONFIG-002", f"{label} names an option that the last config_option_update left out (gone, "
                       "or only missing from a delta): not judged.", fr([m, req]))
            return
        if not known:
            rule, why = "CONFIG-002", "an unknown configId"
        elif (isinstance(cur, bool) and vtype != "boolean") or (isinstance(cur, str) and vtype != "id"):
            rule, why = "CONFIG-003", f"value type {js(vtype)} the option does not take"
        elif vtype == "boolean" and not isinstance(value, bool):
            rule, why = "CONFIG-002", f"an invalid boolean value {js(value)}"
        elif vtype == "id" and isinstance(value, str) and value.startswith("__conformance_"):
            rule, why = "CONFIG-002", f"a value {js(value)} the option does not offer"
        else:
            rule = None
        if rule is not None:
            if m.ok:
                self.failed(rule, f"{label} names {why} and succeeded: {js(m.result, 160)}.", fr([m, req]))
            elif m.error_code != INVALID_PARAMS:
                self.failed(rule, f"{label} names {why} and was answered with error code {js(m.error_code)}, "
                            "not -32602.", fr([m, req]))
            else:
                self.pass_few(rule, f"{label} names {why}: rejected with -32602.", [m, req], key=why[:12])
                watch.append((m, req.session_id, dict(before), rule))
            return
        if not m.ok:
            return  # a valid request the agent refused: nothing here says it may not
        opts = m.result.get("configOptions") if isinstance(m.result, dict) else None
        if not isinstance(opts, list):
            self.failed("CONFIG-001", f"{label} succeeded without a configOptions array: {js(m.result, 160)}.",
                        fr([m, req]))
            return
        now = {o.get("configId"): o.get("currentValue") for o in opts if isinstance(o, dict)}
        if cid not in now:
            self.failed("CONFIG-001", f"{label}: the answered list lacks option {cid!r}.", fr([m, req]))
        elif now[cid] != value:
            self.failed("CONFIG-001", f"{label}: the answered list shows {cid!r} = {js(now[cid])}, not the requested "
                        f"{js(value)}.", fr([m, req]))
        else:
            missing = sorted(set(before) - set(now))
            if missing:
                self.warned("CONFIG-001", f"{label}: the answered list lacks previously advertised option(s) "
                            f"{missing}.", fr([m, req]))
            else:
                self.pass_few("CONFIG-001", f"{label}: answered with the complete list showing {cid!r} = "
                              f"{js(value)}.", [m, req])

    def finish_test(self) -> None:
        if not self.lists:
            for rule in self.rules:
                self.ctx.report(rule, SKIP, "the agent advertised no config options in this test", self.expected[rule])
        elif not self.updates:
            self.ctx.report("CONFIG-006", SKIP, "the agent sent no config_option_update in this test",
                            self.expected["CONFIG-006"])
