"""Client side: how the client answers the agent's requests, and its own request ids.

Permission and elicitation answers, unknown methods, one answer per request, no answer to a
notification, request ids that are never null nor reused while pending.
"""

from __future__ import annotations

from ...wire.transcript import EV_EOF, SENT
from ..monitor import NOTIFICATION, REQUEST, RESPONSE
from ..reading import id_key
from ._client import CLIENT_REQUESTS, agent_msgs, cap, client_init, client_msgs, crashed, hung_up_at
from ._common import UNPARSED, ConnLog, ConnMonitor, Msg, fr, js, request_id_faults

ELICIT_MODES = ("form", "url")


class ClientAnswerMonitor(ConnMonitor):
    side = "client"
    rules = ("CLIENT-012", "CLIENT-013", "CLIENT-016", "CLIENT-017", "CLIENT-018", "CLIENT-019", "CLIENT-021",
             "CLIENT-027")

    def analyze(self, log: ConnLog) -> None:
        self._answers(log)
        self._stray(log)
        self._ids(log)
        self._cancel(log)

    # -- one answer per request, CLIENT-013/018/019/021 -----------------------------------------
    def _answers(self, log: ConnLog) -> None:
        modes = cap(client_init(log), "capabilities", "elicitation") or {}
        hung = hung_up_at(log)
        end = log.end.t if log.end is not None else None
        for q in agent_msgs(log, REQUEST):
            answers = q.responses
            if len(answers) > 1:
                self.failed("CLIENT-017", f"the agent's {q.method} (id {js(q.id)}) was answered {len(answers)} "
                            "times.", fr([answers[1], answers[0], q]))
            if not answers:
                if (end is not None and end <= q.t) or (hung is not None and hung <= q.t + 0.5):
                    continue  # the connection was gone (or ended by the suite) before it could be answered
                closed = _closed_before(log, q)
                if crashed(log):
                    self.noted("CLIENT-017", f"the agent's {q.method} (id {js(q.id)}) was never answered: the "
                               "client crashed first.", fr([q]))
                elif _scope_not_pending(log, q):
                    # a request-scoped elicitation must name a pending request of the client (ElicitationRequestScope);
                    # one that names none broke the protocol first, and what the client owes it the spec omits
                    self.noted("CLIENT-017", f"the agent's {q.method} (id {js(q.id)}) was never answered; it was "
                               f"tied to request {js(q.params.get('requestId'))}, which was not a pending request of "
                               f"the client ({log.end_desc or 'the test ended'}).", fr([q]))
                elif closed is not None:
                    # the agent asked about a session the client had closed, and the client, done with it,
                    # ended: the agent broke the protocol first, and what the client owes it the spec omits
                    self.noted("CLIENT-017", f"the agent's {q.method} (id {js(q.id)}) was never answered; it was "
                               f"for a session the client had closed (t={closed.t:.2f}) "
                               f"({log.end_desc or 'the test ended'}).", fr([q, closed]))
                else:
                    self.failed("CLIENT-017", f"the agent's {q.method} (id {js(q.id)}) was never answered "
                                f"({log.end_desc or 'the test ended'}).", fr([q]))
                continue
            a = answers[0]
            if len(answers) == 1:
                self.pass_few("CLIENT-017", f"{q.method} (id {js(q.id)}) was answered once, with the same id.", [a, q])
            if q.method not in CLIENT_REQUESTS:
                if a.error_code == -32601:
                    self.pass_few("CLIENT-018", f"the unknown method {q.method!r} got -32601.", [a, q])
                else:
                    self.failed("CLIENT-018", f"the agent's request for {q.method!r}, which a client does not "
                                f"implement, got {js(a.msg, 160)} instead of -32601.", fr([a, q]))
            elif q.method == "session/request_permission":
                self._permission(q, a)
            elif q.method == "elicitation/create":
                self._elicitation(q, a, modes)

    def _permission(self, q: Msg, a: Msg) -> None:
        if not a.ok:
            return  # an error (e.g. -32800 after $/cancel_request) is not a permission outcome
        offered = [o.get("optionId") for o in cap(q.params, "options") or [] if isinstance(o, dict)]
        out = cap(a.result, "outcome")
        kind = cap(out, "outcome")
        if kind == "cancelled" or (kind == "selected" and cap(out, "optionId") in offered):
            self.pass_few("CLIENT-013", f"the permission answer {js(out)} is well-formed.", [a, q])
        elif kind == "selected":
            self.failed("CLIENT-013", f"the permission answer selects {js(cap(out, 'optionId'))}, which is not one of "
                        f"the offered options {js(offered)}.", fr([a, q]))
        else:
            self.failed("CLIENT-013", f"the permission answer {js(a.result)} is neither outcome cancelled nor "
                        "selected.", fr([a, q]))

    def _elicitation(self, q: Msg, a: Msg, modes: dict) -> None:
        mode = cap(q.params, "mode")
        if mode in ELICIT_MODES and modes.get(mode) is None or mode not in ELICIT_MODES:
            known = mode in ELICIT_MODES
            if a.error_code == -32602:
                self.pass_few("CLIENT-019", f"elicitation/create in the mode {js(mode)}, which the client did not "
                              "advertise, got -32602.", [a, q])
            elif a.error_code == -32601 and not modes:
                # no elicitation capability at all: the method is simply not implemented (CLIENT-018's
                # -32601); the spec does not say which of the two codes wins, so this is only noted
                self.noted("CLIENT-019", f"elicitation/create (mode {js(mode)}) got -32601: the client advertised "
                           "no elicitation at all, so it treats the method as not implemented.", fr([a, q]))
            elif not known and a.ok and cap(a.result, "action") in ("decline", "cancel"):
                self.pass_few("CLIENT-019", f"elicitation/create in the unknown mode {js(mode)} was "
                              f"{cap(a.result, 'action')}d.", [a, q])
            else:
                self.failed("CLIENT-019", f"elicitation/create in the {'unadvertised' if known else 'unknown'} mode "
                            f"{js(mode)} got {js(a.msg, 160)} instead of -32602.", fr([a, q]))
            return
        if not a.ok:
            return
        action = cap(a.result, "action")
        if action not in ("accept", "decline", "cancel"):
            self.failed("CLIENT-021", f"the elicitation answer's action is {js(action)}, not accept, decline or "
                        "cancel.", fr([a, q]))
            return
        if action == "accept" and mode == "form":
            schema = cap(q.params, "requestedSchema") or {}
            props = schema.get("properties") if isinstance(schema, dict) else None
            content = cap(a.result, "content")
            if not isinstance(content, dict):
                self.failed("CLIENT-021", f"the accepted form answer carries content {js(content)}, not an object.",
                            fr([a, q]))
                return
            extra = [k for k in content if isinstance(props, dict) and k not in props]
            missing = [k for k in (schema.get("required") or []) if k not in content] if isinstance(schema, dict) else []
            if extra or missing:
                self.failed("CLIENT-021", f"the accepted form content does not match the requested schema "
                            f"(unknown: {extra}, missing: {missing}).", fr([a, q]))
                return
        self.pass_few("CLIENT-021", f"the elicitation answer ({action}) is well-formed.", [a, q])

    # -- CLIENT-016: responses to nothing -------------------------------------------------------
    def _stray(self, log: ConnLog) -> None:
        notes = agent_msgs(log, NOTIFICATION)
        bad = False
        for m in client_msgs(log, RESPONSE):
            if m.request is None:
                bad = True
                self.failed("CLIENT-016", f"the client wrote a response (id {js(m.id)}) that answers no request of "
                            f"the agent: {js(m.msg, 160)}.",
                            fr([m] + [n for n in notes if n.order < m.order][-1:]))
        if notes and not bad and (client_msgs(log, REQUEST) or log.end is not None):
            self.pass_few("CLIENT-016", f"the client answered none of the agent's {len(notes)} notification(s).",
                          [notes[0]], limit=1)

    # -- CLIENT-027: the client's request ids ---------------------------------------------------
    def _ids(self, log: ConnLog) -> None:
        reqs = client_msgs(log, REQUEST)
        if not reqs:
            return
        bad = False
        for m, earlier in request_id_faults(reqs, agent_msgs(log, RESPONSE)):
            bad = True
            if earlier is None:
                self.failed("CLIENT-027", f"the client sent {m.method!r} with id {js(m.id)}; request ids are integers "
                            "or strings, never null.", fr([m]))
            else:
                self.failed("CLIENT-027", f"the client sent {m.method!r} with id {js(m.id)} while its earlier "
                            f"{earlier.method!r} with that id was still pending.", fr([m, earlier]))
        if not bad:
            self.pass_few("CLIENT-027", f"the client's {len(reqs)} request id(s) were valid and never reused while "
                          "pending.", [reqs[0]], limit=1)

    # -- CLIENT-012 -----------------------------------------------------------------------------
    def _cancel(self, log: ConnLog) -> None:
        for c in client_msgs(log, NOTIFICATION, "session/cancel"):
            sid = cap(c.params, "sessionId")
            for q in agent_msgs(log, REQUEST, "session/request_permission"):
                if q.order > c.order or cap(q.params, "sessionId") != sid:
                    continue
                first = q.responses[0] if q.responses else None
                if first is not None and first.order < c.order:
                    continue  # answered before the cancel
                if first is None:
                    if log.end is not None and log.end.event == EV_EOF and crashed(log):
                        continue
                    self.failed("CLIENT-012", f"after its session/cancel of {js(sid)} the client never answered the "
                                f"pending permission request (id {js(q.id)}).", fr([c, q]))
                elif first.ok and cap(first.result, "outcome", "outcome") == "cancelled":
                    self.pass_few("CLIENT-012", f"after session/cancel the pending permission request (id {js(q.id)}) "
                                  "was answered cancelled.", [first, c, q])
                elif first.error_code == -32800:
                    self.pass_few("CLIENT-012", f"after session/cancel the pending permission request (id {js(q.id)}) "
                                  "was answered -32800.", [first, c, q])
                else:
                    self.failed("CLIENT-012", f"after its session/cancel of {js(sid)} the client answered the pending "
                                f"permission request (id {js(q.id)}) with {js(first.msg, 160)}, not the cancelled "
                                "outcome.", fr([first, c, q]))


_ = UNPARSED


def _closed_before(log: ConnLog, q: Msg) -> Msg | None:
    """The successful answer to the client's session/close of the session ``q`` is for, when it came
    before ``q``."""
    sid = q.params.get("sessionId") if isinstance(q.params, dict) else None
    if not isinstance(sid, str):
        return None
    for m in log.msgs:
        if m.order >= q.order:
            return None
        if m.direction == SENT and m.kind == RESPONSE and m.ok and m.request is not None \
                and m.request.method == "session/close" and m.request.session_id == sid:
            return m
    return None


def _scope_not_pending(log: ConnLog, q: Msg) -> bool:
    """``q`` is tied to a request (``requestId``, no ``sessionId``: ElicitationRequestScope) that was not a request
    of the client still waiting for its answer when ``q`` came."""
    params = q.params if isinstance(q.params, dict) else {}
    if "sessionId" in params or "requestId" not in params:
        return False
    rid = id_key(params["requestId"])
    return not any(m.order < q.order and id_key(m.id) == rid and not any(r.order < q.order for r in m.responses)
                   for m in client_msgs(log, REQUEST))
