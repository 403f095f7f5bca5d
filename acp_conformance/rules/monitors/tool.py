"""Tool calls: the tool_call_update upsert, status/kind values, content chunks, tool_call/cancel.

Per connection, every tool_call_update / tool_call_content_chunk from the agent is read in order
and a model of each tool call (by session and toolCallId) is kept: its status and whether it
currently advertises ``capabilities.cancel`` (a ``capabilities`` field replaces the stored one;
omission leaves it unchanged). ``tool_call/cancel`` requests the suite sends are judged against
that model as it stood when the request was sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ...wire.transcript import RECEIVED, SENT
from ..monitor import NOTIFICATION, REQUEST
from ..sessions import end_accepted, end_sent
from ._common import (CancelCapable, ConnLog, ConnMonitor, Msg, fr, is_abs_path, js, secs,
                      session_update, session_update_kind)

TOOL_STATUSES = ("pending", "in_progress", "paused", "completed", "failed", "cancelled")
FINAL = ("completed", "failed", "cancelled")
TOOL_KINDS = ("read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other")


def known_value(v: Any, allowed: tuple[str, ...]) -> bool:
    return isinstance(v, str) and (v in allowed or v.startswith("_"))


def active_sessions(log: ConnLog, upto: Msg) -> set[str]:
    """Sessions created or resumed (successfully) on this connection before ``upto``, not closed or deleted.

    For a message of the agent a session ends when the agent has answered its session/close or
    session/delete with success or -32002 (another error refused it, e.g. -32601 from an agent without
    session/delete: still active): until then the agent's message may have crossed the close on the wire.
    For a message of the suite it ends when the suite sent the close."""
    return log.sessions.open_at(upto, end_accepted() if upto.direction == RECEIVED else end_sent())


@dataclass(eq=False)
class ToolState(CancelCapable):
    status: Any = None
    updates: list[Msg] = field(default_factory=list)


def _cancel_seen(m: Msg, tools: dict) -> tuple[Msg, ToolState | None, bool, Any]:
    """A tool_call/cancel the suite sent: (request, the tool call's state, cancellable then, its status then)."""
    p = m.params if isinstance(m.params, dict) else {}
    key = (p.get("sessionId"), p.get("toolCallId"))
    st = tools.get(key) if all(isinstance(k, str) for k in key) else None  # tools are keyed by strings
    cancellable = st is not None and st.status not in FINAL and st.cancel is not None
    return m, st, cancellable, st.status if st else None


def apply_tool(tools: dict, sid: str, upd: dict, m: Msg) -> ToolState | None:
    tid = upd.get("toolCallId")
    if not isinstance(tid, str) or not tid:
        return None
    st = tools.get((sid, tid))
    if st is None:
        st = tools[(sid, tid)] = ToolState(sid, tid, m)
    st.updates.append(m)
    if upd.get("status") is not None:
        st.status = upd.get("status")
    st.store_capabilities(upd)
    return st


def _unquote(p: str) -> str:
    p = p.strip()
    if len(p) >= 2 and p[0] == p[-1] == '"':
        try:
            return json.loads(p)  # Git's C-style quoting is close enough to JSON's for the common escapes
        except ValueError:
            return p[1:-1]
    return p


def diff_problems(item: dict) -> tuple[list[str], list[str]]:
    """Problems of one Diff content item, and the paths its changes name."""
    problems: list[str] = []
    changes = item.get("changes")
    if not isinstance(changes, list) or not changes:
        return [f"changes is {js(changes, 80)} (a non-empty array is required)"], []
    paths: list[str] = []
    for i, c in enumerate(changes):
        op = c.get("operation") if isinstance(c, dict) else None
        if not isinstance(op, str):
            problems.append(f"changes[{i}] has operation {js(op)}")
            continue
        need = ("path", "oldPath") if op in ("move", "copy") else ("path",) if op in ("add", "delete", "modify") else ()
        if not need and not op.startswith("_"):
            problems.append(f"changes[{i}] has unknown operation {op!r}")
        for k in need:
            if not is_abs_path(c.get(k)):
                problems.append(f"changes[{i}] ({op}) has {k} {js(c.get(k))} (an absolute path is required)")
        paths += [c[k] for k in ("path", "oldPath") if isinstance(c.get(k), str)]
    patch = item.get("patch")
    if isinstance(patch, dict) and patch.get("format") == "git_patch":
        text = patch.get("text")
        if not isinstance(text, str):
            return problems + [f"git_patch text is {js(text, 60)}"], paths
        if text.startswith(("From ", "commit ")):
            problems.append("the git_patch starts with commit metadata or a mail envelope")
        prefixes = ("--- ", "+++ ", "rename from ", "rename to ", "copy from ", "copy to ")
        for line in text.splitlines():
            pre = next((x for x in prefixes if line.startswith(x)), None)
            if pre is None:
                continue
            p = _unquote(line[len(pre):].split("\t")[0])
            if pre in ("--- ", "+++ ") and p == "/dev/null":
                continue
            if p.startswith(("a/", "b/")) or not is_abs_path(p):
                problems.append(f"git_patch line {line[:80]!r} has a path that is not absolute (or has an a/ b/ prefix)")
            elif p not in paths:
                problems.append(f"git_patch patches {p!r}, which no entry of changes names")
    elif patch is not None and not (isinstance(patch, dict) and isinstance(patch.get("format"), str)
                                    and isinstance(patch.get("text"), str)):
        problems.append(f"patch {js(patch, 80)} is not {{format, text}}")
    return problems, paths


class ToolMonitor(ConnMonitor):
    rules = ("TOOL-001", "TOOL-002", "TOOL-003", "TOOL-004", "TOOL-005", "TOOL-006", "TOOL-007", "TOOL-008", "TOOL-009",
             "TOOL-010")

    def analyze(self, log: ConnLog) -> None:
        window = float(self.opt("tool_cancel_window", 30.0))
        tools: dict[tuple[str, str], ToolState] = {}
        cancels: list[tuple[Msg, ToolState | None, bool, Any]] = []  # request, state, cancellable, status then
        self._subagents: set[str] = set()
        for m in log.msgs:
            if m.direction == SENT and m.kind == REQUEST and m.method == "tool_call/cancel":
                cancels.append(_cancel_seen(m, tools))
                continue
            if m.direction == RECEIVED and m.kind == REQUEST and m.method == "session/request_permission":
                self._on_permission_request(m, tools)
                continue
            su = session_update_kind(m)
            if su is None:
                continue
            sid, upd, kind = su
            if kind == "subagent_update" and isinstance(upd.get("sessionId"), str):
                self._subagents.add(upd["sessionId"])
            if kind in ("tool_call_update", "tool_call_content_chunk"):
                c = upd.get("content")
                for item in (c if kind == "tool_call_update" and isinstance(c, list) else [c]):
                    if isinstance(item, dict):
                        self._content(log, sid, upd.get("toolCallId"), item, m)
            if kind == "tool_call":
                self.failed("TOOL-001", f"the agent sent a v1-style `tool_call` update at t={m.t:.2f}: "
                            f"{js(upd, 160)}; v2 has only tool_call_update.", fr([m]))
                if isinstance(upd.get("toolCallId"), str) and upd.get("toolCallId"):
                    apply_tool(tools, sid, upd, m)  # judged once: TOOL-001, not also a missing first report
                continue
            if kind not in ("tool_call_update", "tool_call_content_chunk"):
                continue
            tid = upd.get("toolCallId")
            if not isinstance(tid, str) or not tid:
                self.failed("TOOL-001", f"a {kind} at t={m.t:.2f} has toolCallId {js(tid)} (a non-empty string "
                            "is required).", fr([m]))
                continue
            new = (sid, tid) not in tools
            if kind == "tool_call_content_chunk":
                c = upd.get("content")
                if isinstance(c, dict) and isinstance(c.get("type"), str):
                    self.pass_few("TOOL-004", f"tool_call_content_chunk for {tid!r} appends one "
                                  f"{c['type']!r} item.", [m])
                else:
                    self.failed("TOOL-004", f"tool_call_content_chunk for {tid!r} at t={m.t:.2f} has content "
                                f"{js(c, 120)}: not one ToolCallContent object with a string type.", fr([m]))
                st = apply_tool(tools, sid, {"toolCallId": tid}, m)
                continue
            self.pass_few("TOOL-001", f"tool_call_update for {tid!r} with a string toolCallId.", [m])
            for fld, allowed in (("status", TOOL_STATUSES), ("kind", TOOL_KINDS)):
                v = upd.get(fld)
                if v is None:
                    continue
                if known_value(v, allowed):
                    self.pass_few("TOOL-003", f"tool call {tid!r}: {fld} {v!r}.", [m], key=fld)
                else:
                    self.failed("TOOL-003", f"tool call {tid!r} at t={m.t:.2f} has {fld} {js(v)}, not one of "
                                f"{', '.join(allowed)} or `_`-prefixed.", fr([m]))
            before_final = (sid, tid) in tools and tools[(sid, tid)].status in FINAL
            st = apply_tool(tools, sid, upd, m)
            if new:
                self._first_report(st, upd, m, "the first tool_call_update")
            if st.status in FINAL and st.had_cancel:
                if st.cancel is not None:
                    self.warned("TOOL-009", f"tool call {tid!r} is {st.status!r} (t={m.t:.2f}) but still "
                                f"advertises capabilities.cancel {js(st.cancel)}.", fr([m, st.first]))
                elif not before_final or "capabilities" in upd:
                    self.pass_few("TOOL-009", f"tool call {tid!r} reached {st.status!r} and withdrew "
                                  "capabilities.cancel.", [m])
        for req, st, cancellable, status in cancels:
            self._judge_cancel(log, req, st, cancellable, status, window)

    def _content(self, log: ConnLog, sid: str, tid: Any, item: dict, m: Msg) -> None:
        t = item.get("type")
        if t == "session":
            ref = item.get("sessionId")
            if ref in active_sessions(log, m) or ref in self._subagents:
                self.pass_few("TOOL-010", f"tool call {js(tid)} references session {ref!r}, known to the client.", [m])
            else:
                self.failed("TOOL-010", f"tool call {js(tid)} at t={m.t:.2f} references session {js(ref)}, which was "
                            "neither set up on this connection nor announced by subagent_update.", fr([m]))
        elif t == "diff":
            problems, paths = diff_problems(item)
            if problems:
                self.failed("TOOL-005", f"diff content of tool call {js(tid)} at t={m.t:.2f}: {'; '.join(problems)}.",
                            fr([m]))
                return
            self.pass_few("TOOL-005", f"diff content of tool call {js(tid)} changes {', '.join(paths)}"
                          + (" with a consistent git_patch." if isinstance(item.get("patch"), dict) else "."), [m])
            if item.get("patch") is None and any(isinstance(c, dict) and c.get("operation") == "modify"
                                                 for c in item.get("changes") or []):
                self.noted("TOOL-005", f"diff content of tool call {js(tid)} modifies a file without a patch "
                           "(agents should provide one when feasible).", fr([m]))

    def _first_report(self, st: ToolState, upd: dict, m: Msg, where: str) -> None:
        title = upd.get("title")
        if not isinstance(title, str) or not title:
            self.warned("TOOL-002", f"{where} of tool call {st.tid!r} (t={m.t:.2f}) has no title.", fr([m]))
        else:
            name = "" if upd.get("name") else " (no name)"
            self.pass_few("TOOL-002", f"{where} of tool call {st.tid!r} has title {title!r}{name}.", [m])

    def _on_permission_request(self, m: Msg, tools: dict) -> None:
        """A permission request's tool call subject is a report of that tool call too."""
        p = m.params if isinstance(m.params, dict) else {}
        subj = p.get("subject")
        tc = subj.get("toolCall") if isinstance(subj, dict) and subj.get("type") == "tool_call" else None
        if isinstance(tc, dict) and isinstance(p.get("sessionId"), str):
            new = (p["sessionId"], tc.get("toolCallId")) not in tools
            st = apply_tool(tools, p["sessionId"], tc, m)
            if st is not None and new:
                self._first_report(st, tc, m, "the permission subject")

    def _judge_cancel(self, log: ConnLog, req: Msg, st: ToolState | None, cancellable: bool, status: Any,
                      window: float) -> None:
        p = req.params if isinstance(req.params, dict) else {}
        sid, tid = p.get("sessionId"), p.get("toolCallId")
        resp = req.responses[0] if req.responses else None
        label = f"tool_call/cancel id={js(req.id)} for {js(tid)}"
        if resp is None:
            return  # an unanswered request is another rule's business
        if not cancellable:
            if not isinstance(sid, str) or sid not in active_sessions(log, req):
                return
            why = ("an unknown tool call" if st is None else f"a tool call already {status!r}" if status in FINAL
                   else "a tool call that does not advertise capabilities.cancel")
            if resp.error_code == -32602:
                self.pass_few("TOOL-007", f"{label} ({why}) was rejected with -32602.", [resp, req], key=why)
            elif resp.ok:
                self.failed("TOOL-007", f"{label} ({why}) succeeded at t={resp.t:.2f}: {js(resp.result)}.",
                            fr([resp, req]))
            else:
                self.failed("TOOL-007", f"{label} ({why}) was answered with error {js(resp.error_code)} instead "
                            "of -32602.", fr([resp, req]))
            return
        assert st is not None
        later = [m for m in log.msgs if m.order > req.order]
        finals = [m for m in later if (su := session_update(m)) and su[0] == sid
                  and su[1].get("sessionUpdate") == "tool_call_update" and su[1].get("toolCallId") == tid
                  and su[1].get("status") in FINAL]
        if not resp.ok:
            if finals and finals[0].order < resp.order:
                self.noted("TOOL-006", f"{label}: the tool call reached {finals[0].msg['params']['update']['status']!r} "
                           f"before the answer, which was error {js(resp.error_code)}.", fr([resp, req, finals[0]]))
            else:
                self.failed("TOOL-006", f"{label} (the tool call advertised capabilities.cancel and was "
                            f"{status!r}) was answered with error {js(resp.error)}.", fr([resp, req]))
            return
        if not isinstance(resp.result, dict):
            self.failed("TOOL-006", f"{label} was answered with result {js(resp.result)} (an object is required).",
                        fr([resp, req]))
            return
        idles = [m for m in later if m.order > resp.order and (su := session_update(m)) and su[0] == sid
                 and su[1].get("sessionUpdate") == "state_update" and su[1].get("state") == "idle"]
        if finals:
            f = finals[0]
            self.pass_few("TOOL-006", f"{label} was answered {js(resp.result)} (t={resp.t:.2f}) and the tool call "
                          f"reached {f.msg['params']['update']['status']!r} at t={f.t:.2f}.", [f, resp, req])
        elif idles or log.waited(resp.t) >= window:
            end = f"the turn ended (idle at t={idles[0].t:.2f})" if idles else f"{secs(log.waited(resp.t))} passed"
            self.failed("TOOL-006", f"{label} was accepted at t={resp.t:.2f} but no tool_call_update with a final "
                        f"status followed before {end}.", fr([resp, req] + idles[:1]))
        else:
            self.untested("TOOL-006", f"{label} was accepted at t={resp.t:.2f}; the connection ended "
                          f"{secs(log.waited(resp.t))} later without a final status for the tool call.", fr([resp, req]))
        # TOOL-008
        if idles:
            idle = idles[0]
            stop = idle.msg["params"]["update"].get("stopReason")
            user_stop = [m for m in log.msgs if req.order < m.order < idle.order and m.direction == SENT
                         and m.kind in (REQUEST, NOTIFICATION) and m.session_id == sid
                         and m.method in ("session/cancel", "session/close", "session/delete")]
            if stop == "cancelled" and not user_stop:
                self.failed("TOOL-008", f"after {label} the session went idle with stopReason 'cancelled' "
                            f"(t={idle.t:.2f}) though the suite sent no session/cancel or session/close.",
                            fr([idle, req, resp]))
            elif not user_stop:
                self.pass_few("TOOL-008", f"after {label} the turn went on and ended with stopReason {js(stop)} "
                              f"(t={idle.t:.2f}).", [idle, req])
