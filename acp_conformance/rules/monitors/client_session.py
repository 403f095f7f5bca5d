"""Client side: pagination of session/list, tool and terminal cancellation, config options, idempotency
keys of session/prompt."""

from __future__ import annotations

from typing import Any

from ..monitor import REQUEST, RESPONSE
from ._client import agent_msgs, cap, client_msgs, updates
from ._common import ConnLog, ConnMonitor, Msg, fr, js

_MISSING = object()


class ClientSessionMonitor(ConnMonitor):
    side = "client"
    rules = ("CLIENT-022", "CLIENT-023", "CLIENT-024", "IDEM-004")

    def analyze(self, log: ConnLog) -> None:
        self._cursors(log)
        self._cancels(log)
        self._config(log)
        self._keys(log)

    # -- IDEM-004 -------------------------------------------------------------------------------
    def _keys(self, log: ConnLog) -> None:
        first: dict[tuple[Any, str], Msg] = {}  # (session, key) -> the first prompt that carried it
        for m in client_msgs(log, REQUEST, "session/prompt"):
            p = m.params if isinstance(m.params, dict) else {}
            key = p.get("idempotencyKey")
            if not isinstance(key, str) or not key:
                continue
            sid = p.get("sessionId")
            sid = sid if isinstance(sid, str) else js(sid)
            was = first.setdefault((sid, key), m)
            if was is m:
                continue
            if cap(was.params, "prompt") == p.get("prompt"):
                self.pass_few("IDEM-004", f"session/prompt id={js(m.id)} reused idempotencyKey {js(key)} for the same "
                              f"prompt as id={js(was.id)} (a retry).", [m, was])
            else:
                self.warned("IDEM-004", f"session/prompt id={js(m.id)} reused idempotencyKey {js(key)} of "
                            f"id={js(was.id)} in session {js(sid)} with another prompt ({js(p.get('prompt'), 120)} "
                            f"after {js(cap(was.params, 'prompt'), 120)}): an agent takes it for a retry and "
                            "inserts nothing.", fr([m, was]))

    # -- CLIENT-022 -----------------------------------------------------------------------------
    def _cursors(self, log: ConnLog) -> None:
        given: Any = _MISSING  # the nextCursor of the latest page answered (None: the listing ended)
        last_page: Msg | None = None
        for m in sorted(client_msgs(log, REQUEST, "session/list") + agent_msgs(log, RESPONSE, "session/list"),
                        key=lambda m: m.order):
            if m.direction == "sent":
                if m.ok:
                    given, last_page = cap(m.result, "nextCursor"), m
                continue
            p = m.params if isinstance(m.params, dict) else {}
            cursor = p.get("cursor")
            if cursor is None:
                continue  # a listing from the start
            if given is _MISSING or last_page is None:
                self.failed("CLIENT-022", f"session/list sends cursor {js(cursor)} before any page gave one.", fr([m]))
            elif given is None:
                self.failed("CLIENT-022", f"session/list sends cursor {js(cursor)} after a page without nextCursor, "
                            "which ended the listing.", fr([m, last_page]))
            elif cursor != given:
                self.failed("CLIENT-022", f"session/list sends cursor {js(cursor)}; the previous page's nextCursor was "
                            f"{js(given)} (cursors are passed back unmodified).", fr([m, last_page]))
            else:
                self.pass_few("CLIENT-022", f"session/list passed back the cursor {js(cursor)} unmodified"
                              f"{' (an empty string is a real cursor)' if cursor == '' else ''}.", [m, last_page])
            given = _MISSING

    # -- CLIENT-023 -----------------------------------------------------------------------------
    def _cancels(self, log: ConnLog) -> None:
        state: dict[tuple[str, Any], bool] = {}  # (kind, id) -> currently advertises cancel
        keys = {"tool_call_update": ("tool", "toolCallId"), "terminal_update": ("terminal", "terminalId")}
        methods = {"tool_call/cancel": ("tool", "toolCallId"), "terminal/cancel": ("terminal", "terminalId")}
        evs = [(m.order, "u", m, u) for m, _s, u in updates(log) if u.get("sessionUpdate") in keys]
        evs += [(m.order, "c", m, None) for m in client_msgs(log, REQUEST) if m.method in methods]
        for _, what, m, u in sorted(evs, key=lambda x: x[0]):
            if what == "u":
                kind, field = keys[u["sessionUpdate"]]
                k = (kind, u.get(field))
                if "capabilities" in u:
                    state[k] = cap(u, "capabilities", "cancel") is not None
                else:
                    state.setdefault(k, False)
                continue
            kind, field = methods[m.method]
            ident = cap(m.params, field)
            if state.get((kind, ident)):
                self.pass_few("CLIENT-023", f"{m.method} for {js(ident)} came while it advertised "
                              "capabilities.cancel.", [m])
            else:
                self.failed("CLIENT-023", f"the client sent {m.method} for {js(ident)}, which "
                            f"{'does not currently advertise' if (kind, ident) in state else 'the agent never announced with'} "
                            "capabilities.cancel.", fr([m]))

    # -- CLIENT-024 -----------------------------------------------------------------------------
    def _config(self, log: ConnLog) -> None:
        options: dict[Any, dict] = {}
        for m in sorted(agent_msgs(log) + client_msgs(log, REQUEST, "session/set_config_option"), key=lambda m: m.order):
            if m.direction == "sent":
                found = cap(m.result, "configOptions") if m.kind == RESPONSE else None
                if m.method == "session/update":
                    u = cap(m.params, "update") or {}
                    if u.get("sessionUpdate") == "config_option_update":
                        found = u.get("configOptions")
                for o in found or []:
                    if isinstance(o, dict):
                        options[o.get("configId")] = o
                continue
            p = m.params if isinstance(m.params, dict) else {}
            opt = options.get(p.get("configId"))
            if opt is None:
                self.failed("CLIENT-024", f"set_config_option names {js(p.get('configId'))}, an option the agent "
                            "never offered.", fr([m]))
                continue
            t, v = p.get("type"), p.get("value")
            if opt.get("type") == "select":
                values = []
                for o in opt.get("options") or []:
                    if isinstance(o, dict) and "value" in o:
                        values.append(o["value"])
                    elif isinstance(o, dict):  # a group of options
                        values += [x.get("value") for x in o.get("options") or [] if isinstance(x, dict)]
                ok = t == "id" and v in values
                want = f"type \"id\" with one of {js(values)}"
            elif opt.get("type") == "boolean":
                ok = t == "boolean" and isinstance(v, bool)
                want = "type \"boolean\" with a boolean"
            else:
                self.failed("CLIENT-024", f"set_config_option sets {js(p.get('configId'))}, an option of the unknown "
                            f"type {js(opt.get('type'))}, which a client ignores.", fr([m]))
                continue
            if ok:
                self.pass_few("CLIENT-024", f"set_config_option for {js(p.get('configId'))} is well-typed "
                              f"({t} {js(v)}).", [m])
            else:
                self.failed("CLIENT-024", f"set_config_option for the {opt.get('type')} option "
                            f"{js(p.get('configId'))} sends type {js(t)} value {js(v)}; expected {want}.", fr([m]))
