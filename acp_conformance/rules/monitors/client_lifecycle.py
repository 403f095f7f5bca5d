"""Client side: what the client sends, and in what order (initialize, auth, session setup, prompts).

The target is a client: ``received`` frames are the client's, ``sent`` the scripted agent's.
"""

from __future__ import annotations

from typing import Any

from ..monitor import REQUEST, RESPONSE
from ..sessions import LISTED, NEW, OPENED, Event
from ._client import CONTENT_TYPES, agent_msgs, cap, client_msgs, init_result, updates
from ._common import ConnLog, ConnMonitor, Msg, fr, is_abs_path, js

SESSION_SETUP = ("session/new", "session/resume")


def _set_up(e: Event) -> bool:
    """CLIENT-008: a session is set up by the agent's successful answer to session/new or session/resume."""
    return e.kind == OPENED and e.how in SESSION_SETUP


def _gave_cwd(e: Event) -> bool:
    """CLIENT-010: the client learns a session's cwd from the session/new it sent, or a session/list entry."""
    return e.kind == LISTED or (e.kind == OPENED and e.how == NEW)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class ClientLifecycleMonitor(ConnMonitor):
    side = "client"
    rules = ("CLIENT-001", "CLIENT-002", "CLIENT-003", "CLIENT-004", "CLIENT-006", "CLIENT-007", "CLIENT-008",
             "CLIENT-009", "CLIENT-010", "CLIENT-031", "CLIENT-032")

    def analyze(self, log: ConnLog) -> None:
        init_m, init = init_result(log)
        self._initialize(log, init_m)
        self._version(log)
        self._auth(log, init)
        self._setup(log, init)
        self._prompts(log, init)
        self._delete(log, init)
        self._resume(log)
        self._close_32002(log)
        self._children(log)

    # -- CLIENT-001 -----------------------------------------------------------------------------
    def _initialize(self, log: ConnLog, init_m: Msg | None) -> None:
        reqs = client_msgs(log, REQUEST)
        if not reqs:
            return
        first = reqs[0]
        if first.method != "initialize":
            self.failed("CLIENT-001", f"the client's first request was {first.method!r}, not initialize.", fr([first]))
            return
        p = first.params if isinstance(first.params, dict) else {}
        problems = []
        v = p.get("protocolVersion")
        if not _is_int(v) or v < 2:
            problems.append(f"protocolVersion is {js(v if 'protocolVersion' in p else '<missing>')}, not an integer >= 2")
        info = p.get("info")
        if not isinstance(info, dict) or not isinstance(info.get("name"), str) or not isinstance(info.get("version"), str):
            problems.append(f"info is {js(info if 'info' in p else '<missing>')}, not {{name, version}} strings")
        if "capabilities" in p and not isinstance(p["capabilities"], dict):
            problems.append(f"capabilities is {js(p['capabilities'])}, not an object")
        if problems:
            self.failed("CLIENT-001", f"the client's initialize is malformed: {'; '.join(problems)}.", fr([first]))
            return
        early = [m for m in reqs if m.method != "initialize" and (init_m is None or m.order < init_m.order)]
        if early:
            when = "before the initialize response" if init_m is not None else "without a successful initialize"
            self.failed("CLIENT-001", f"the client sent {early[0].method!r} {when}.", fr([early[0], first]))
            return
        self.pass_few("CLIENT-001", f"the client's first request was a well-formed initialize (protocolVersion {v}) "
                      "and nothing else went before its response.", [first], limit=1)

    # -- CLIENT-002 -----------------------------------------------------------------------------
    def _version(self, log: ConnLog) -> None:
        for m in agent_msgs(log, RESPONSE, "initialize"):
            asked = cap(m.request.params if m.request else None, "protocolVersion")
            chose = cap(m.result, "protocolVersion")
            refused = m.error_code == -32022
            if not refused and (chose is None or chose == asked):
                continue
            later = [x for x in client_msgs(log, REQUEST) if x.order > m.order and (x.method or "").startswith("session/")]
            what = "refused initialize with -32022" if refused else f"chose protocol version {chose} (asked: {asked})"
            if later:
                self.warned("CLIENT-002", f"the agent {what}, yet the client went on with {later[0].method!r}.",
                            fr([later[0], m]))
            else:
                self.pass_few("CLIENT-002", f"the agent {what}; the client sent no session/* request afterwards"
                              f"{' and ' + log.end_desc if log.end_desc else ''}.", [m], limit=1)

    # -- CLIENT-003 / CLIENT-004 ----------------------------------------------------------------
    def _auth(self, log: ConnLog, init: dict | None) -> None:
        if init is None:
            return
        methods = init.get("authMethods")
        calls = [m for m in client_msgs(log, REQUEST) if m.method in ("auth/login", "auth/logout")]
        if not methods:
            if calls:
                self.failed("CLIENT-003", f"the agent advertised no authMethods ({js(methods) if 'authMethods' in init else 'omitted'}), "
                            f"yet the client called {calls[0].method}.", fr([calls[0]]))
            elif client_msgs(log, REQUEST, "session/new") or log.end is not None:
                self.pass_few("CLIENT-003", "without authMethods the client never called auth/login or auth/logout.",
                              [], limit=1)
            return
        by_id = {x.get("methodId"): x for x in methods if isinstance(x, dict)}
        for m in calls:
            if m.method != "auth/login":
                continue
            mid = cap(m.params, "methodId")
            meth = by_id.get(mid)
            if meth is None:
                self.failed("CLIENT-004", f"auth/login names methodId {js(mid)}, which the agent did not advertise "
                            f"(advertised: {', '.join(map(str, by_id))}).", fr([m]))
            elif meth.get("type") != "agent":
                self.failed("CLIENT-004", f"auth/login names {js(mid)}, a {js(meth.get('type'))} method: only `agent` "
                            "methods are logged in through the protocol.", fr([m]))
            else:
                self.pass_few("CLIENT-004", f"auth/login named the advertised agent method {js(mid)}.", [m])

    # -- CLIENT-006 -----------------------------------------------------------------------------
    def _setup(self, log: ConnLog, init: dict | None) -> None:
        sess = cap(init, "capabilities", "session") or {}
        for m in client_msgs(log, REQUEST):
            if m.method not in SESSION_SETUP:
                continue
            p = m.params if isinstance(m.params, dict) else {}
            problems = []
            if not is_abs_path(p.get("cwd")):
                problems.append(f"cwd {js(p.get('cwd'))} is not an absolute path")
            for srv in p.get("mcpServers") or []:
                t = srv.get("type") if isinstance(srv, dict) else None
                if t in ("stdio", "http", "acp") and cap(sess, "mcp", t) is None:
                    problems.append(f"an MCP server of transport {t!r}, which the agent did not advertise")
                if t == "stdio" and not is_abs_path(srv.get("command")):
                    problems.append(f"the stdio MCP server's command {js(srv.get('command'))} is not absolute")
            dirs = p.get("additionalDirectories")
            if dirs:
                if sess.get("additionalDirectories") is None:
                    problems.append("additionalDirectories, which the agent did not advertise")
                elif any(not is_abs_path(d) for d in dirs):
                    problems.append(f"additionalDirectories holds a relative path ({js(dirs)})")
            sp = p.get("systemPrompt")
            if sp is not None:
                if sess.get("systemPrompt") is None:
                    problems.append("a systemPrompt, which the agent did not advertise")
                elif isinstance(sp, dict) and sp.get("mode") == "override" and \
                        cap(sess, "systemPrompt", "mode", "override") is None:
                    problems.append("systemPrompt mode override, which the agent did not advertise")
            if problems:
                self.failed("CLIENT-006", f"{m.method} (id {js(m.id)}) sends {'; '.join(problems)}.", fr([m]))
            else:
                self.pass_few("CLIENT-006", f"{m.method} respects the agent's capabilities (cwd {js(p.get('cwd'))}).",
                              [m])

    # -- CLIENT-007 / CLIENT-008 ----------------------------------------------------------------
    def _prompts(self, log: ConnLog, init: dict | None) -> None:
        pc = cap(init, "capabilities", "session", "prompt") or {}
        allowed = {"text", "resource_link"} | {t for t, k in (("image", "image"), ("audio", "audio"),
                                                               ("resource", "embeddedContext"))
                                               if pc.get(k) is not None}
        for m in client_msgs(log, REQUEST, "session/prompt"):
            p = m.params if isinstance(m.params, dict) else {}
            sid = p.get("sessionId")
            s = log.sessions.session(sid)
            ready = s.last(m, _set_up) if s is not None else None  # the response that set it up
            if ready is None:
                self.failed("CLIENT-008", f"the client sent session/prompt for {js(sid)} before a successful "
                            "session/new or session/resume response for that session.", fr([m]))
            else:
                self.pass_few("CLIENT-008", f"session/prompt for {js(sid)} came after its session was set up.",
                              [m, ready.msg])
            blocks = p.get("prompt")
            if not isinstance(blocks, list) or not blocks:
                self.failed("CLIENT-007", f"the client sent session/prompt with prompt {js(blocks)}: the prompt array "
                            "is never empty.", fr([m]))
                continue
            bad = [b.get("type") if isinstance(b, dict) else b for b in blocks
                   if not isinstance(b, dict) or b.get("type") not in allowed]
            if bad:
                why = "unknown" if bad[0] not in CONTENT_TYPES else "not advertised by the agent"
                self.failed("CLIENT-007", f"the prompt holds a {js(bad[0])} block ({why}; allowed here: "
                            f"{', '.join(sorted(allowed))}).", fr([m]))
            else:
                self.pass_few("CLIENT-007", f"the prompt's {len(blocks)} block(s) are all of types the agent allows.",
                              [m])

    # -- CLIENT-009 -----------------------------------------------------------------------------
    def _delete(self, log: ConnLog, init: dict | None) -> None:
        if init is None or cap(init, "capabilities", "session", "delete") is not None:
            return
        calls = client_msgs(log, REQUEST, "session/delete")
        if calls:
            self.failed("CLIENT-009", "the client called session/delete although the agent did not advertise "
                        "session.delete.", fr([calls[0]]))
        elif client_msgs(log, REQUEST, "session/new"):
            self.pass_few("CLIENT-009", "without session.delete the client never called session/delete.", [], limit=1)

    # -- CLIENT-010 -----------------------------------------------------------------------------
    def _resume(self, log: ConnLog) -> None:
        for m in client_msgs(log, REQUEST, "session/resume"):
            sid, cwd = cap(m.params, "sessionId"), cap(m.params, "cwd")
            s = log.sessions.session(sid)
            known = s.last(m, _gave_cwd) if s is not None else None  # where the client learnt its cwd
            if known is None:
                continue
            own = known.entry.get("cwd") if known.kind == LISTED else cap(known.request.params, "cwd")
            if cwd != own:
                self.failed("CLIENT-010", f"session/resume of {js(sid)} sends cwd {js(cwd)}, not the session's own "
                            f"working directory {js(own)}.", fr([m]))
            else:
                self.pass_few("CLIENT-010", f"session/resume of {js(sid)} sends its own cwd {js(cwd)}.", [m])

    # -- CLIENT-031 -----------------------------------------------------------------------------
    def _close_32002(self, log: ConnLog) -> None:
        for m in agent_msgs(log, RESPONSE, "session/close"):
            if m.error_code != -32002 or m.request is None:
                continue
            sid = cap(m.request.params, "sessionId")
            later = [x for x in client_msgs(log, REQUEST) if x.order > m.order and cap(x.params, "sessionId") == sid]
            resumed = next((x for x in later if x.method == "session/resume"), None)
            bad = [x for x in later if x.method in ("session/close", "session/prompt")
                   and (resumed is None or x.order < resumed.order)]
            if bad:
                self.warned("CLIENT-031", f"session/close of {js(sid)} was answered -32002, yet the client then sent "
                            f"{bad[0].method} for it.", fr([bad[0], m]))
            else:
                self.pass_few("CLIENT-031", f"after -32002 to session/close of {js(sid)} the client treated it as "
                              "closed.", [m])

    # -- CLIENT-032 -----------------------------------------------------------------------------
    def _children(self, log: ConnLog) -> None:
        children: dict[Any, tuple[Msg, dict]] = {}
        for m, _sid, u in updates(log):
            if u.get("sessionUpdate") == "subagent_update" and isinstance(u.get("sessionId"), str):
                prev = children.get(u["sessionId"], (m, {}))[1]
                caps = u.get("capabilities") if "capabilities" in u else prev
                children[u["sessionId"]] = (m, caps if isinstance(caps, dict) else {})
        if not children:
            return
        bad = False
        for m in client_msgs(log):
            if m.kind == RESPONSE or m.method in ("initialize", "session/list", "session/resume"):
                continue
            sid = cap(m.params, "sessionId")
            if sid not in children:
                continue
            announced, caps = children[sid]
            grant = (m.method or "").split("/")[-1]
            if caps.get(grant) is None:
                bad = True
                self.failed("CLIENT-032", f"the client sent {m.method} naming the child session {js(sid)}, whose "
                            f"subagent_update does not grant {grant!r}.", fr([m, announced]))
        if not bad:
            self.pass_few("CLIENT-032", f"the client sent no mutation naming the child session(s) "
                          f"{', '.join(map(str, children))}.", [next(iter(children.values()))[0]], limit=1)
