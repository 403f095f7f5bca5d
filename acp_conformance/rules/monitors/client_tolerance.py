"""Client side: the client keeps working through what an agent is free to send.

Each rule here names a situation the scripted agent creates (an unknown update variant, a
user_message after the prompt response, an unknown error code, ...). The client honours the rule
when it is seen working afterwards (it writes another message: a request, an answer, a
notification); it breaks it when it crashes (exits with a failure status) before that. A client
that simply has nothing more to say is noted, not failed.
"""

from __future__ import annotations

from typing import Any

from ..monitor import NOTIFICATION, REQUEST, RESPONSE
from ._client import (CONTENT_TYPES, DEFINED_CODES, STATES, TOOL_KINDS, TOOL_STATUSES, UPDATE_KINDS, agent_msgs,
                      client_msgs, crashed, exit_status, updates)
from ._common import ConnLog, ConnMonitor, Msg, fr, js

LOOP_WINDOW = 1.0  # s: three or more re-sends of a failed request within this is a tight retry loop


def _unknown(u: dict[str, Any]) -> str | None:
    """Why an update is one a client may not know (an unknown variant or enum value), else None."""
    kind = u.get("sessionUpdate")
    if kind not in UPDATE_KINDS:
        return f"the update variant {js(kind)}"
    if kind == "state_update" and u.get("state") not in STATES:
        return f"the state {js(u.get('state'))}"
    if kind == "tool_call_update":
        if "status" in u and u["status"] not in TOOL_STATUSES:
            return f"the tool status {js(u['status'])}"
        if "kind" in u and u["kind"] not in TOOL_KINDS:
            return f"the tool kind {js(u['kind'])}"
    c = u.get("content")
    for block in (c if isinstance(c, list) else [c]):
        if isinstance(block, dict) and "type" in block and block["type"] not in CONTENT_TYPES:
            return f"the content type {js(block['type'])}"
    if isinstance(u.get("_meta"), dict) and u["_meta"]:
        return f"unknown _meta keys {js(list(u['_meta']))}"
    return None


class ClientToleranceMonitor(ConnMonitor):
    side = "client"
    rules = ("CLIENT-011", "CLIENT-014", "CLIENT-015", "CLIENT-020", "CLIENT-028", "CLIENT-029")

    def analyze(self, log: ConnLog) -> None:
        found: dict[str, tuple[Msg, str]] = {}

        def provoke(rule: str, m: Msg, what: str) -> None:
            found.setdefault(rule, (m, what))

        resp_at: dict[Any, Msg] = {}  # messageId -> the prompt response carrying it
        setup_done = log.sessions.known_at(None, hows=("session/new",))  # sessions the agent ever created
        idle: dict[Any, bool] = {}
        cancels = client_msgs(log, NOTIFICATION, "session/cancel")
        issued = {m.params.get("elicitationId") for m in agent_msgs(log, REQUEST, "elicitation/create")
                  if isinstance(m.params, dict)}
        for m in sorted(agent_msgs(log), key=lambda m: m.order):
            if m.kind == RESPONSE:
                if m.method == "session/prompt" and m.ok and isinstance(m.result, dict):
                    resp_at[m.result.get("messageId")] = m
                    if idle.get((m.request.params or {}).get("sessionId") if m.request else None) is False:
                        provoke("CLIENT-029", m, "the prompt response while the session was already running")
                if isinstance(m.error, dict) and m.error.get("code") not in DEFINED_CODES:
                    provoke("CLIENT-028", m, f"the error code {js(m.error.get('code'))} for {m.method}")
                continue
            if m.kind == NOTIFICATION and m.method == "elicitation/complete":
                eid = (m.params or {}).get("elicitationId") if isinstance(m.params, dict) else None
                if eid not in issued:
                    provoke("CLIENT-020", m, f"elicitation/complete for the unknown id {js(eid)}")
        for m, sid, u in updates(log):
            kind = u.get("sessionUpdate")
            why = _unknown(u)
            if why:
                provoke("CLIENT-015", m, why)
            if kind == "user_message":
                r = resp_at.get(u.get("messageId"))
                if r is not None and r.order < m.order:
                    provoke("CLIENT-011", m, "the user_message update after the prompt response")
                else:
                    provoke("CLIENT-011", m, "the user_message update before the prompt response")
            if sid not in setup_done and kind != "subagent_update":
                provoke("CLIENT-029", m, "a session update before the session/new response")
            if kind == "state_update":
                st = u.get("state")
                if st == "idle" and idle.get(sid):
                    provoke("CLIENT-029", m, "a repeated idle snapshot")
                if st in ("running", "requires_action", "idle"):
                    idle[sid] = st == "idle"
            elif idle.get(sid) and kind not in ("user_message", "user_message_chunk"):
                provoke("CLIENT-029", m, f"a {kind} update while the session was idle")
            if kind == "tool_call_update" and any(c.order < m.order and (c.params or {}).get("sessionId") == sid
                                                  for c in cancels if isinstance(c.params, dict)):
                provoke("CLIENT-014", m, "a tool_call_update after the client's session/cancel")
        for rule, (m, what) in found.items():
            self._judge(log, rule, m, what)
        self._retry_loop(log)

    def _judge(self, log: ConnLog, rule: str, p: Msg, what: str) -> None:
        if log.end is not None and log.end.t < p.t:
            return  # the client was gone before this was sent
        # what shows the client read it and went on: a message after it that is not an answer to a request the
        # suite sent before it (such an answer may have been written before the client read it: a permission
        # answered "cancelled" right after the client's own session/cancel, while the update was on its way)
        after = next((m for m in client_msgs(log) if m.order > p.order
                      and not (m.kind == RESPONSE and m.request is not None and m.request.order < p.order)), None)
        if after is not None:
            self.pass_few(rule, f"after {what} the client kept working ({after.method or 'a response'} at "
                          f"t={after.t:.2f}).", [p, after], limit=1)
        elif crashed(log):
            self.failed(rule, f"after {what} the client wrote nothing more and exited with status "
                        f"{exit_status(log)}.", fr([p] + ([log.end] if log.end is not None else [])))
        else:
            self.noted(rule, f"after {what} the client wrote nothing more ({log.end_desc}); it was not asked to.",
                       fr([p]))

    def _retry_loop(self, log: ConnLog) -> None:
        for e in agent_msgs(log, RESPONSE):
            if not isinstance(e.error, dict) or e.error.get("code") in DEFINED_CODES or e.request is None:
                continue
            again = [m for m in client_msgs(log, REQUEST, e.method) if e.order < m.order and m.t - e.t <= LOOP_WINDOW]
            if len(again) >= 3:
                self.failed("CLIENT-028", f"after the error code {js(e.error.get('code'))} for {e.method} the client "
                            f"re-sent it {len(again)} times within {LOOP_WINDOW:g} s (a tight retry loop).",
                            fr([again[0], e]))
