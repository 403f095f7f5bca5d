"""JSON-RPC error handling on the wire: malformed input, invalid requests, ids, unknown methods,
notifications, the shape of responses, requests before initialize.

The answers to malformed input are paired with the lines the suite wrote by ``_attribution``.
"""

from __future__ import annotations

import bisect
from typing import Any

from ...wire.transcript import RECEIVED, SENT, Frame
from ..monitor import REQUEST, RESPONSE
from ._attribution import (DEFINED_CODES, INVALID_PARAMS, INVALID_REQ, NOT_FOUND_M, PARSE,
                           SESSION_NOT_FOUND, Sent, attribute, init_result, initialized_at, is_int,
                           leniently_readable, null_error, undecided, valid_id)
from ._common import ConnLog, ConnMonitor, FrameLogMixin, Msg, fr, id_key, js, offers_config_options, request_id_faults


class WireErrorMonitor(FrameLogMixin, ConnMonitor):
    side = "both"  # judges the target's frames in either role (ctx.target_side)
    rules = ("ERR-005", "ERR-006", "ERR-007", "ERR-008", "ERR-009", "ERR-010", "ERR-011", "ERR-012",
             "ERR-013", "ERR-014", "ERR-015")

    def on_msg(self, log: ConnLog, m: Msg) -> None:
        if m.direction == RECEIVED and m.is_dict and "method" not in m.msg and (
                "result" in m.msg or "error" in m.msg or m.kind == RESPONSE):
            self._judge_shape(m)
        if m.direction == RECEIVED and m.kind == RESPONSE and isinstance(m.error, dict):
            code = m.error.get("code")
            if is_int(code):
                if (-32768 <= code <= -32000 or -32899 <= code <= -32800) and code not in DEFINED_CODES:
                    self.warned("ERR-015", f"the {self.ctx.target_side} answered {m.method or 'a request'} (id {js(m.id)}) with "
                                f"error code {code}, inside a reserved range but not defined by ACP/JSON-RPC.",
                                fr([m, m.request]))
                else:
                    self.pass_few("ERR-015", f"error code {code} (for {m.method or 'a request'}) is allowed.",
                                  [m])

    # -- ERR-012 ------------------------------------------------------------------------------
    def _judge_shape(self, m: Msg) -> None:
        d = m.msg
        label = f"the response at t={m.t:.2f} (id {js(d.get('id', '<missing>'))})"
        problems = []
        if d.get("jsonrpc") != "2.0":
            problems.append(f"jsonrpc is {js(d.get('jsonrpc', '<missing>'))}, not \"2.0\"")
        if "id" not in d:
            problems.append("it has no id")
        if ("result" in d) == ("error" in d):
            problems.append("it has both result and error" if "result" in d else "it has neither result nor error")
        err = d.get("error")
        if "error" in d:
            if not isinstance(err, dict):
                problems.append(f"error is {js(err)}, not an object")
            else:
                if not is_int(err.get("code")):
                    problems.append(f"error.code is {js(err.get('code', '<missing>'))}, not an integer")
                msg = err.get("message")
                if not isinstance(msg, str) or not msg.strip():
                    problems.append(f"error.message is {js(msg if 'message' in err else '<missing>')}, not a "
                                    "non-empty string")
                elif "\n" in msg.strip():
                    self.warned("ERR-012", f"{label}: error.message spans several lines (it should be a concise "
                                "sentence): {js(msg, 120)}.", fr([m]))
        if problems:
            self.failed("ERR-012", f"{label} is not a well-formed JSON-RPC 2.0 response: {'; '.join(problems)}.",
                        fr([m, m.request]))
        else:
            self.pass_few("ERR-012", f"{label} is a well-formed JSON-RPC 2.0 response.", [m])

    # -- per connection -----------------------------------------------------------------------
    def analyze(self, log: ConnLog) -> None:
        frames = self._frames_of(log.conn)
        sent, stray = attribute(frames, log.msgs)
        init_t = initialized_at(log)
        self._malformed(log, sent)
        self._notifications(log, sent, stray)
        self._before_init(log, init_t)
        self._methods(log, init_t)
        self._ids(log)
        self._agent_requests(log)
        self._params(log, init_t)

    def _later_health(self, log: ConnLog, after: Frame) -> tuple[bool | None, Msg | None]:
        """Did a later request of the suite on this connection get its response? (None: no later request)"""
        seqs, reqs, answered = self._requests_of(log)
        i = bisect.bisect_right(seqs, after.seq)
        if i == len(reqs):
            return None, None
        if answered[i] is not None:
            return True, answered[i]
        return False, reqs[i]

    def _requests_of(self, log: ConnLog) -> tuple[list[int], list[Msg], list[Msg | None]]:
        """The suite's requests of the connection in order, and from each on the first one answered: computed
        once per connection (a session with many notifications asks for every one of them)."""
        cache = getattr(self, "_requests_cache", None)
        if cache is None or cache[0] is not log or cache[1] != len(log.msgs):
            reqs = sorted((m for m in log.msgs if m.direction == SENT and m.kind == REQUEST and valid_id(m.id)),
                          key=lambda m: m.frame.seq)
            answered: list[Msg | None] = [None] * len(reqs)
            nxt = None
            for k in range(len(reqs) - 1, -1, -1):
                if reqs[k].responses:
                    nxt = reqs[k]
                answered[k] = nxt
            cache = self._requests_cache = (log, len(log.msgs), ([m.frame.seq for m in reqs], reqs, answered))
        return cache[2]

    def _malformed(self, log: ConnLog, sent: list[Sent]) -> None:
        for s in sent:
            if s.kind == "parse" and not s.batch_like:  # TRANSPORT-009 judges a broken batch
                rule, code = "ERR-006", PARSE
            elif s.kind == "invalid":
                rule, code = "ERR-007", INVALID_REQ
            elif s.kind == "nullid":
                self._judge_nullid(log, s)
                continue
            else:
                continue
            quoted = js(s.frame.raw.decode("utf-8", "replace"), 90)
            echo = s.value.get("id") if isinstance(s.value, dict) and valid_id(s.value.get("id")) else None
            if rule == "ERR-006" and leniently_readable(s.frame.raw) and (
                    not s.answers or null_error(s.answers[0].msg, code, echo) is not None):
                self.noted(rule, f"the suite wrote {quoted}: JSON once a byte order mark is dropped or bytes that "
                           "are not UTF-8 are replaced, which a reader may do (RFC 8259 lets parsers ignore a byte "
                           "order mark; the spec does not say a receiver must refuse bad UTF-8); the agent did not "
                           "answer it -32700.", fr(s.answers[:1] + [s.frame]))
                continue
            if s.ambiguous:
                self.noted(rule, f"the suite wrote {quoted}; {undecided(s)}", fr([s.maybe[0], s.frame]))
                continue
            if not s.answers:
                if rule == "ERR-007" and _reads_as_response(s.value):
                    # {"jsonrpc":"2.0","id":7}: as much a malformed response as a malformed request, and JSON-RPC 2.0
                    # owes answers to requests only (a peer may drop a response to nothing); a -32600 still passes
                    self.noted(rule, f"the suite wrote {quoted}, which has an id and no method: it reads as a "
                               "malformed response as well as a malformed request, and JSON-RPC 2.0 answers requests "
                               "only; the agent did not answer it (not failed).", fr([s.frame]))
                    continue
                if s.closed_by is not None:
                    why = (f"a request written after it was answered at t={s.closed_by.t:.2f}, and no answer that "
                           f"could be this line's arrived before {log.end_desc or 'the end of the test'}")
                else:
                    why = log.end_desc if log.end else "nothing answered it"
                self.failed(rule, f"the suite wrote {quoted} and got no {code} answer ({why}).",
                            fr([s.frame] + ([s.closed_by] if s.closed_by is not None else [])))
                continue
            a = s.answers[0]
            why = null_error(a.msg, code, echo)
            if why is not None:
                self.failed(rule, f"the suite wrote {quoted} and the agent answered with {why}.", fr([a, s.frame]))
                continue
            if rule == "ERR-006":
                ok, nxt = self._later_health(log, s.frame)
                if ok is False:
                    self.failed(rule, f"after the parse error for {quoted} the agent answered no further request "
                                f"({nxt.method} id={js(nxt.id)} got no response; {log.end_desc}).",
                                fr([nxt, a, s.frame]))
                    continue
                tail = " and answered the next request" if ok else ""
                self.pass_few(rule, f"the suite wrote {quoted}; the agent answered -32700 with id null{tail}.",
                              [a, s.frame])
            else:
                self.pass_few(rule, f"the suite wrote {quoted}; the agent answered -32600 (id "
                              f"{js(a.msg.get('id'))}).", [a, s.frame], key=quoted, limit=1)

    def _judge_nullid(self, log: ConnLog, s: Sent) -> None:
        method = s.value.get("method")
        if s.ambiguous:
            self.noted("ERR-009", f"the suite sent {method} with id null; {undecided(s)}", fr([s.maybe[0], s.frame]))
            return
        if not s.answers:
            self.noted("ERR-009", f"the suite sent {method} with id null and got no answer; what a receiver does "
                       "with a null id is not specified.", fr([s.frame]))
            return
        a = s.answers[0]
        why = null_error(a.msg, INVALID_REQ)
        if why is None:
            self.pass_few("ERR-009", f"the suite sent {method} with id null; the agent refused it with -32600.",
                          [a, s.frame])
        else:
            self.noted("ERR-009", f"the suite sent {method} with id null and got {why}; -32600 is expected, but "
                       "receiver behaviour is not specified.", fr([a, s.frame]))

    def _notifications(self, log: ConnLog, sent: list[Sent], stray: list[tuple[Frame, Sent | None]]) -> None:
        blamed: set[int] = set()
        for f, note in stray:
            if note is None or note.kind != "silent":
                continue  # ERR-004 judges responses to nothing; a notification batch is TRANSPORT-007's
            blamed.add(note.frame.seq)
            self.failed("ERR-011", f"the suite sent the notification {note.value.get('method')!r} and the {self.ctx.target_side} "
                        f"answered it (t={f.t:.2f}): {js(f.msg, 160)}.", fr([f, note.frame]))
        for s in sent:
            if s.kind != "silent" or s.frame.seq in blamed:
                continue
            method = s.value.get("method")
            if method == "session/update":
                continue
            if s.maybe:
                self.noted("ERR-011", f"after the notification {method!r} an id-null answer arrived "
                           f"(t={s.maybe[0].t:.2f}) that may answer it or may be the late answer to an earlier line "
                           "that was still unanswered; not judged.", fr([s.maybe[0], s.frame]))
                continue
            ok, _ = self._later_health(log, s.frame)
            if ok:
                self.pass_few("ERR-011", f"the notification {method!r} got no response and the next request was "
                              "answered.", [s.frame], key=method, limit=1)

    def _before_init(self, log: ConnLog, init_t: float | None) -> None:
        for m in log.msgs:
            if m.direction != SENT or m.kind != REQUEST or not valid_id(m.id) or m.method == "initialize":
                continue
            if init_t is not None and m.t >= init_t:
                continue
            if not m.responses:
                continue
            r = m.responses[0]
            if init_t is not None and r.t > init_t:
                continue  # overlapped with the initialize exchange: not judged
            label = f"{m.method} id={js(m.id)} sent before initialize had succeeded on this connection"
            if r.ok:
                self.failed("ERR-014", f"{label} succeeded ({js(r.result, 120)}); it must be rejected with -32600.",
                            fr([r, m]))
            elif r.error_code == INVALID_REQ:
                self.pass_few("ERR-014", f"{label} was rejected with -32600.", [r, m])
            else:
                self.noted("ERR-014", f"{label} was rejected with {js(r.error_code)}; -32600 is expected (only the "
                           "site's error page names the code; the seeds do not).", fr([r, m]))

    def _methods(self, log: ConnLog, init_t: float | None) -> None:
        if init_t is None:
            return
        res = init_result(log) or {}
        caps = res.get("capabilities") if isinstance(res.get("capabilities"), dict) else {}
        sess = caps.get("session") if isinstance(caps.get("session"), dict) else {}
        gated = {}
        if not isinstance(sess.get("delete"), dict):
            gated["session/delete"] = "capabilities.session.delete is not advertised"
        if not res.get("authMethods"):
            gated["auth/login"] = gated["auth/logout"] = "no authMethods are advertised"
        agent_methods = self.ctx.schema.requests_to("agent")  # the rest is "not implemented" for an agent
        for m in log.msgs:
            if m.direction != SENT or m.kind != REQUEST or not valid_id(m.id) or m.t < init_t or not m.responses:
                continue
            why = None
            if m.method not in agent_methods:
                why = "not an ACP v2 agent method"
            elif m.method in gated:
                why = gated[m.method]
            if why is None:
                continue
            r = m.responses[0]
            label = f"{m.method} id={js(m.id)} ({why})"
            if r.error_code == NOT_FOUND_M:
                self.pass_few("ERR-005", f"{label} got -32601.", [r, m], key=m.method, limit=1)
            elif r.ok:
                self.failed("ERR-005", f"{label} succeeded with {js(r.result, 120)}; -32601 was expected.",
                            fr([r, m]))
            else:
                self.failed("ERR-005", f"{label} got error {js(r.error_code)} instead of -32601.", fr([r, m]))

    def _ids(self, log: ConnLog) -> None:
        reqs = [m for m in log.msgs if m.direction == SENT and m.kind == REQUEST and valid_id(m.id)]
        strays = [m for m in log.msgs if m.direction == RECEIVED and m.kind == RESPONSE and m.request is None
                  and m.id is not None]
        for s in strays:
            twin = next((r for r in reqs if not r.responses and id_key(r.id) != id_key(s.id)
                         and str(r.id) == str(s.id) and r.order < s.order), None)
            if twin is not None:
                self.failed("ERR-008", f"{twin.method} was sent with id {js(twin.id)} ({type(twin.id).__name__}) "
                            f"and answered with id {js(s.id)} ({type(s.id).__name__}).", fr([s, twin]))
        seen: set[str] = set()
        for r in reqs:
            if not r.responses or r.responses[0].duplicate:
                continue
            kind = type(r.id).__name__
            key = kind + (":neg" if is_int(r.id) and r.id < 0 else "") + (":big" if is_int(r.id) and r.id > 2**31
                                                                           else "")
            if key in seen:
                continue
            seen.add(key)
            self.pass_few("ERR-008", f"{r.method} with id {js(r.id)} ({kind}) was answered with the identical id.",
                          [r.responses[0], r], key=key, limit=1)

    def _agent_requests(self, log: ConnLog) -> None:
        reqs = [m for m in log.msgs if m.direction == RECEIVED and m.kind == REQUEST]
        if not reqs:
            return
        bad009 = bad010 = False
        for m, earlier in request_id_faults(reqs, [m for m in log.msgs if m.direction == SENT and m.kind == RESPONSE]):
            if earlier is None:
                bad009 = True
                self.failed("ERR-009", f"the {self.ctx.target_side} sent the request {m.method!r} with id {js(m.id)}; request ids "
                            "are integers or strings, never null.", fr([m]))
            else:
                bad010 = True
                self.failed("ERR-010", f"the {self.ctx.target_side} sent {m.method!r} with id {js(m.id)} while its earlier request "
                            f"{earlier.method!r} with that id was still awaiting a response.", fr([m, earlier]))
        if not bad009:
            self.pass_few("ERR-009", f"all {len(reqs)} request(s) the {self.ctx.target_side} sent carried an integer or string id.",
                          [reqs[0]])
        if not bad010:
            self.pass_few("ERR-010", f"the {self.ctx.target_side}'s {len(reqs)} request(s) never reused an id that was still "
                          "pending.", [reqs[0]])

    def _params(self, log: ConnLog, init_t: float | None) -> None:
        if init_t is None:
            return
        config_offered = offers_config_options(log.msgs)
        for m in log.msgs:
            if m.direction != SENT or m.kind != REQUEST or not valid_id(m.id) or m.t < init_t or not m.responses:
                continue
            why = _malformed_params(m.method, m.params)
            if why is None:
                continue
            r = m.responses[0]
            label = f"{m.method} id={js(m.id)} with malformed params ({why})"
            if r.error_code == INVALID_PARAMS:
                self.pass_few("ERR-013", f"{label} got -32602.", [r, m], key=m.method, limit=1)
            elif r.ok:
                self.warned("ERR-013", f"{label} succeeded ({js(r.result, 100)}); -32602 was expected.", fr([r, m]))
            elif r.error_code == SESSION_NOT_FOUND:
                self.noted("ERR-013", f"{label} got -32002: its session is unknown too.", fr([r, m]))
            elif r.error_code == -32601 and m.method == "session/set_config_option" and not config_offered:
                self.noted("ERR-013", f"{label} got -32601: the agent advertised no config options, so it need "
                           "not support the method.", fr([r, m]))
            else:
                self.warned("ERR-013", f"{label} got error {js(r.error_code)}; -32602 was expected.", fr([r, m]))


def _malformed_params(method: str | None, p: Any) -> str | None:
    if not isinstance(p, dict):
        return None
    if method == "session/new":
        if "cwd" not in p:
            return "no cwd"
        if not isinstance(p.get("cwd"), str):
            return f"cwd is {js(p.get('cwd'))}"
    elif method == "session/prompt":
        if "prompt" in p and not isinstance(p.get("prompt"), list):
            return f"prompt is {js(p.get('prompt'), 40)}, not an array"
    elif method == "session/set_config_option":
        if isinstance(p.get("sessionId"), str) and "configId" not in p:
            return "no configId"
    elif method == "session/list":
        if p.get("cursor") is not None and not isinstance(p.get("cursor"), str):
            return f"cursor is {js(p.get('cursor'))}"
    return None


def _reads_as_response(value) -> bool:
    """A line with an id and no method: a response object missing its result or error as much as a request
    missing its method (JSON-RPC 2.0 section 5 vs 4)."""
    return isinstance(value, dict) and "method" not in value and "id" in value
