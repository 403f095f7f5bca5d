"""session/update shape rules beyond the schema: the notification envelope, messageIds, the
usage/plan/commands/info variants, the draft notices/compactions/subagents, session attribution,
and the content blocks and paths the agent emits.

Variants the agent never sends leave their rule ``skip`` ("the agent sent no usage_update"): the
rule is about a form the agent did not use, so there is nothing to judge and nothing to demand.
"""

from __future__ import annotations

import base64
import binascii
import posixpath
import re
from typing import Any

from ...wire.transcript import RECEIVED, SENT
from ..findings import SKIP
from ..monitor import NOTIFICATION, REQUEST, RESPONSE
from ._common import ConnLog, ConnMonitor, Msg, fr, is_abs_path, js

MESSAGE_KINDS = ("user_message", "user_message_chunk", "agent_message", "agent_message_chunk",
                 "agent_thought", "agent_thought_chunk")
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_ISO8601 = re.compile(r"^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?)?$")
_CMD_NAME = re.compile(r"^[^/\s]\S*$")
_TERMINAL = ("completed", "failed", "cancelled")
_CONTENT_TYPES = ("text", "image", "audio", "resource_link", "resource")

# the rule -> the variant whose absence makes it skip
_USAGE = {"UPDATE-006": "usage_update", "UPDATE-007": "plan_update", "UPDATE-008": "available_commands_update",
          "UPDATE-009": "session_info_update", "UPDATE-010": "notice", "UPDATE-011": "compaction_update",
          "UPDATE-012": "subagent_update"}


def _ext(v: Any) -> bool:
    return isinstance(v, str) and v.startswith("_")


def _int_ge0(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _b64(v: Any) -> bool:
    if not isinstance(v, str):
        return False
    try:
        base64.b64decode(v, validate=True)
        return True
    except (binascii.Error, ValueError):
        return False


def content_problems(block: Any) -> list[str]:
    """CONTENT-001 problems of one ContentBlock (empty: well-formed)."""
    if not isinstance(block, dict):
        return [f"a content block is not an object: {js(block, 80)}"]
    t = block.get("type")
    if _ext(t):
        return []
    if t not in _CONTENT_TYPES:
        return [f"content block type {js(t)} is neither defined nor `_`-prefixed"]
    out = []
    if t == "text" and not isinstance(block.get("text"), str):
        out.append("text block without a string `text`")
    if t in ("image", "audio"):
        if not _b64(block.get("data")):
            out.append(f"{t} block whose `data` is not base64")
        if not isinstance(block.get("mimeType"), str):
            out.append(f"{t} block without a string `mimeType`")
    if t == "resource_link":
        if not isinstance(block.get("uri"), str) or not isinstance(block.get("name"), str):
            out.append("resource_link without string `uri` and `name`")
        if block.get("size") is not None and not _int_ge0(block.get("size")):
            out.append(f"resource_link size {js(block.get('size'))} is not a non-negative integer")
    if t == "resource":
        r = block.get("resource")
        if not isinstance(r, dict) or not isinstance(r.get("uri"), str):
            out.append("resource block without resource.uri")
        elif not isinstance(r.get("text"), str) and not _b64(r.get("blob")):
            out.append("embedded resource with neither a string `text` nor a base64 `blob`")
    return out


def icon_problems(block: Any) -> list[str] | None:
    """CONTENT-002: None when the block has no icons."""
    icons = block.get("icons") if isinstance(block, dict) else None
    if not isinstance(icons, list) or not icons:
        return None
    out = []
    for ic in icons:
        src = ic.get("src") if isinstance(ic, dict) else None
        if not isinstance(src, str) or not (src.lower().startswith("https:") or src.lower().startswith("data:")):
            out.append(f"icon src {js(src, 80)} is not an https: or data: URI")
    return out


def annotation_problems(block: Any) -> list[str] | None:
    """CONTENT-003: None when the block has no annotations."""
    a = block.get("annotations") if isinstance(block, dict) else None
    if not isinstance(a, dict):
        return None
    out = []
    p = a.get("priority")
    if p is not None and (not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 <= p <= 1):
        out.append(f"annotations.priority {js(p)} is not within 0..1")
    aud = a.get("audience")
    if aud is not None:
        if not isinstance(aud, list) or any(not (x in ("user", "assistant") or _ext(x)) for x in aud):
            out.append(f"annotations.audience {js(aud, 80)} holds a role other than user/assistant/_x")
    lm = a.get("lastModified")
    if lm is not None and (not isinstance(lm, str) or not _ISO8601.match(lm)):
        out.append(f"annotations.lastModified {js(lm, 60)} is not an ISO 8601 timestamp")
    return out


def update_blocks(upd: dict[str, Any]) -> list[Any]:
    """Content blocks carried by an update (message content, tool content, summaries)."""
    out: list[Any] = []
    c = upd.get("content")
    if isinstance(c, dict) and "type" in c and upd.get("sessionUpdate") not in ("tool_call_update",
                                                                                 "tool_call_content_chunk"):
        out.append(c)
    elif isinstance(c, list):
        for x in c:
            if isinstance(x, dict) and x.get("type") == "content" and isinstance(x.get("content"), dict):
                out.append(x["content"])  # tool call content wrapper
            elif isinstance(x, dict) and x.get("type") in _CONTENT_TYPES:
                out.append(x)
    elif isinstance(c, dict) and c.get("type") == "content" and isinstance(c.get("content"), dict):
        out.append(c["content"])
    s = upd.get("summary")
    if isinstance(s, list):
        out.extend(s)
    return out


def path_problems(upd: dict[str, Any]) -> tuple[list[str], int]:
    """CONTENT-004: (problems, number of paths seen) in an update."""
    out, n = [], 0
    locs = upd.get("locations")
    if isinstance(locs, list):
        for loc in locs:
            if not isinstance(loc, dict):
                continue
            if "path" in loc:
                n += 1
                if not is_abs_path(loc["path"]):
                    out.append(f"tool location path {js(loc['path'], 80)} is not absolute")
            line = loc.get("line")
            if line is not None and (not isinstance(line, int) or isinstance(line, bool) or line < 1):
                out.append(f"tool location line {js(line)} is not 1-based")
    if upd.get("sessionUpdate") in ("subagent_update", "terminal_update") and upd.get("cwd") is not None:
        n += 1
        if not is_abs_path(upd["cwd"]):
            out.append(f"{upd.get('sessionUpdate')} cwd {js(upd['cwd'], 80)} is not absolute")
    c = upd.get("content")
    for x in c if isinstance(c, list) else []:
        if isinstance(x, dict) and x.get("type") == "diff":
            for key in ("path", "oldPath"):
                if x.get(key) is not None:
                    n += 1
                    if not is_abs_path(x[key]):
                        out.append(f"diff {key} {js(x[key], 80)} is not absolute")
    return out, n


class SessionUpdateMonitor(ConnMonitor):
    rules = ("UPDATE-001", "UPDATE-004", "UPDATE-006", "UPDATE-007", "UPDATE-008", "UPDATE-009",
             "UPDATE-010", "UPDATE-011", "UPDATE-012", "SESSION-010", "SESSION-011",
             "CONTENT-001", "CONTENT-002", "CONTENT-003", "CONTENT-004")

    def __init__(self, ctx):
        super().__init__(ctx)
        self.seen: dict[str, int] = {}  # rule -> number of situations judged over the test
        self.proc_cwd: dict[int, Any] = {}
        self.inner_session = False  # an update came for a session whose cwd is inside the process's

    def on_event(self, log: ConnLog, frame) -> None:
        if frame.event == "start" and isinstance(frame.detail, dict):
            self.proc_cwd[log.conn] = frame.detail.get("cwd")

    def _judge_cwd(self, m: Msg, sid: str, upd: dict[str, Any], cwds: dict[str, str], proc: Any) -> None:
        """SESSION-011, for a session whose cwd lies strictly inside the process's directory."""
        b = cwds.get(sid)
        if not isinstance(b, str) or not isinstance(proc, str):
            return
        a, b = posixpath.normpath(str(proc)), posixpath.normpath(b)
        if a == b or not b.startswith(a.rstrip("/") + "/"):
            return
        self.inner_session = True
        paths = [x.get("path") for x in upd.get("locations") or [] if isinstance(x, dict)]
        if upd.get("sessionUpdate") == "terminal_update" and upd.get("cwd") is not None:
            paths.append(upd.get("cwd"))
        for path in paths:
            if not isinstance(path, str) or not is_abs_path(path):
                continue
            q = posixpath.normpath(path)
            self.bump("SESSION-011")
            if q == b or q.startswith(b.rstrip("/") + "/"):
                self.pass_few("SESSION-011", f"{upd.get('sessionUpdate')} for {sid!r} at t={m.t:.2f} reports {path!r}, "
                              f"inside the session cwd {b!r}.", [m], limit=1)
            elif q == a or q.startswith(a.rstrip("/") + "/"):
                self.failed("SESSION-011", f"{upd.get('sessionUpdate')} for {sid!r} at t={m.t:.2f} reports {path!r}: in "
                            f"the agent process's directory {a!r}, outside the session cwd {b!r}.", fr([m]))

    def bump(self, rule: str) -> None:
        self.seen[rule] = self.seen.get(rule, 0) + 1

    def analyze(self, log: ConnLog) -> None:
        known: set[str] = set()  # sessions created/resumed (requested) on this connection
        children: set[str] = set()
        pending_new: list[Msg] = []
        compactions: dict[tuple[str, Any], dict[str, Any]] = {}
        cwds: dict[str, str] = {}  # sessionId -> the cwd the client gave
        for m in log.msgs:
            if m.direction == SENT:
                if m.kind == REQUEST and m.method == "session/resume" and isinstance(m.params, dict) \
                        and isinstance(m.session_id, str) and isinstance(m.params.get("cwd"), str):
                    cwds[m.session_id] = m.params["cwd"]
                if m.kind == REQUEST and m.method in ("session/resume", "session/load") and isinstance(m.session_id, str):
                    known.add(m.session_id)
                elif m.kind == REQUEST and m.method == "session/new":
                    pending_new.append(m)
                continue
            if m.kind == RESPONSE and m.method == "session/new" and isinstance(m.result, dict):
                sid = m.result.get("sessionId")
                if isinstance(sid, str):
                    known.add(sid)
                    rp = m.request.params if m.request is not None and isinstance(m.request.params, dict) else {}
                    if isinstance(rp.get("cwd"), str):
                        cwds[sid] = rp["cwd"]
                if m.request in pending_new:
                    pending_new.remove(m.request)
                continue
            if m.method != "session/update" or m.kind not in (REQUEST, NOTIFICATION) or not m.is_dict:
                continue
            # UPDATE-001
            p = m.params
            bad = []
            if m.kind == REQUEST:
                bad.append(f"it carries an id ({js(m.id)}): it is a request, not a notification")
            if not isinstance(p, dict) or not isinstance(p.get("sessionId"), str):
                bad.append("params.sessionId is not a string")
            upd = p.get("update") if isinstance(p, dict) else None
            if not isinstance(upd, dict) or not isinstance(upd.get("sessionUpdate"), str):
                bad.append("params.update is not an object with a string sessionUpdate")
            if bad:
                self.failed("UPDATE-001", f"session/update at t={m.t:.2f}: {'; '.join(bad)}.", fr([m]))
                continue
            self.pass_few("UPDATE-001", f"session/update at t={m.t:.2f} is a notification with sessionId and "
                          f"update.sessionUpdate {js(upd['sessionUpdate'])}.", [m], limit=1)
            sid, kind = p["sessionId"], upd["sessionUpdate"]
            # SESSION-010 (an update that arrives while a session/new is unanswered may be for it: SESSION-004)
            if kind == "subagent_update" and isinstance(upd.get("sessionId"), str):
                if sid in known or sid in children:
                    children.add(upd["sessionId"])
            if sid in known or sid in children:
                self.pass_few("SESSION-010", f"session/update {kind} at t={m.t:.2f} names {sid!r}, a session of "
                              "this connection.", [m], limit=1)
            elif not pending_new:
                self.failed("SESSION-010", f"session/update {kind} at t={m.t:.2f} names {sid!r}, which was neither "
                            "created nor resumed on this connection nor announced by subagent_update.", fr([m]))
            self._judge_update(m, sid, kind, upd, known, children, compactions)
            self._judge_cwd(m, sid, upd, cwds, self.proc_cwd.get(log.conn))
        # UPDATE-011: status change after terminal is judged inline; nothing left at the end

    def _judge_update(self, m: Msg, sid: str, kind: str, upd: dict[str, Any], known: set[str],
                      children: set[str], compactions: dict) -> None:
        where = f"{kind} for {sid!r} at t={m.t:.2f}"
        if kind in MESSAGE_KINDS:
            self.bump("UPDATE-004")
            mid = upd.get("messageId")
            if not isinstance(mid, str) or not mid:
                self.failed("UPDATE-004", f"{where} has messageId {js(mid)}, not a non-empty string.", fr([m]))
            else:
                self.pass_few("UPDATE-004", f"{where} carries messageId {mid!r}.", [m], limit=1)
        elif kind == "usage_update":
            self.bump("UPDATE-006")
            bad = [f"{k} {js(upd.get(k))} is not a non-negative integer" for k in ("used", "size") if not _int_ge0(upd.get(k))]
            cost = upd.get("cost")
            if cost is not None and not (isinstance(cost, dict) and isinstance(cost.get("amount"), (int, float))
                                         and not isinstance(cost.get("amount"), bool)
                                         and isinstance(cost.get("currency"), str)):
                bad.append(f"cost {js(cost, 80)} is not {{amount: number, currency: string}}")
            if not bad and upd["used"] > upd["size"]:  # odd, but the context may overflow: a warning
                self.warned("UPDATE-006", f"{where}: used {upd['used']} is more than the window size {upd['size']}.",
                            fr([m]))
                return
            self._verdict("UPDATE-006", where, bad, m)
        elif kind == "plan_update":
            self.bump("UPDATE-007")
            plan, bad = upd.get("plan"), []
            if not isinstance(plan, dict):
                bad.append("plan is not an object")
            else:
                t = plan.get("type")
                if t not in ("items", "markdown", "file") and not _ext(t):
                    bad.append(f"plan.type {js(t)} is not items, markdown, file or `_`-prefixed")
                if not isinstance(plan.get("planId"), str):
                    bad.append("plan.planId is not a string")
                if t == "items":
                    for e in plan.get("entries") if isinstance(plan.get("entries"), list) else [None]:
                        if not isinstance(e, dict) or not isinstance(e.get("content"), str):
                            bad.append(f"plan entry {js(e, 80)} has no string content")
                            continue
                        if not (e.get("priority") in ("high", "medium", "low") or _ext(e.get("priority"))):
                            bad.append(f"plan entry priority {js(e.get('priority'))} is not defined")
                        if not (e.get("status") in ("pending", "in_progress", "completed", "cancelled")
                                or _ext(e.get("status"))):
                            bad.append(f"plan entry status {js(e.get('status'))} is not defined")
                if t == "file" and not isinstance(plan.get("uri"), str):
                    bad.append("file plan without a uri")
                elif t == "file" and not re.match(r"^([A-Za-z][A-Za-z0-9+.-]*:|/)", plan["uri"]):
                    bad.append(f"file plan uri {js(plan['uri'])} is not absolute")
            self._verdict("UPDATE-007", where, bad, m)
        elif kind == "available_commands_update":
            self.bump("UPDATE-008")
            cmds, bad, names = upd.get("availableCommands"), [], set()
            for c in cmds if isinstance(cmds, list) else []:
                if not isinstance(c, dict) or not isinstance(c.get("type", "command"), str):
                    bad.append(f"command {js(c, 80)} has no string type")
                    continue
                if c.get("type", "command") != "command":
                    continue
                n = c.get("name")
                if not isinstance(n, str) or not _CMD_NAME.match(n):
                    bad.append(f"command name {js(n)} has a leading slash, whitespace or is empty")
                elif n in names:
                    bad.append(f"command name {n!r} appears twice")
                names.add(n) if isinstance(n, str) else None
                if not isinstance(c.get("description"), str):
                    bad.append(f"command {js(n)} has no string description")
                inp = c.get("input")
                if inp is not None and not (isinstance(inp, dict) and (_ext(inp.get("type")) or (
                        inp.get("type") == "text" and isinstance(inp.get("hint"), str)))):
                    bad.append(f"command {js(n)} input {js(inp, 80)} is not {{type: text, hint}} or `_`-typed")
            self._verdict("UPDATE-008", where, bad, m)
        elif kind == "session_info_update":
            self.bump("UPDATE-009")
            bad, warn = [], [k for k in ("sessionId", "cwd", "additionalDirectories") if k in upd]
            if upd.get("title") is not None and not isinstance(upd.get("title"), str):
                bad.append(f"title {js(upd.get('title'))} is not a string")
            ua = upd.get("updatedAt")
            if ua is not None and (not isinstance(ua, str) or not _RFC3339.match(ua)):
                bad.append(f"updatedAt {js(ua)} is not an RFC 3339 date-time")
            if not bad and warn:
                self.warned("UPDATE-009", f"{where} carries {', '.join(warn)}, which session_info_update does "
                            "not patch.", fr([m]))
            else:
                self._verdict("UPDATE-009", where, bad, m)
        elif kind == "notice":
            self.bump("UPDATE-010")
            bad = []
            sev = upd.get("severity")
            if not (sev in ("info", "warning", "error") or _ext(sev)):
                bad.append(f"severity {js(sev)} is not info, warning, error or `_`-prefixed")
            if not isinstance(upd.get("title"), str) or not upd["title"].strip():
                bad.append(f"title {js(upd.get('title'))} is not a non-empty string")
            if upd.get("description") is not None and not isinstance(upd.get("description"), str):
                bad.append("description is not a string")
            self._verdict("UPDATE-010", where, bad, m)
        elif kind in ("compaction_update", "compaction_summary_chunk"):
            self.bump("UPDATE-011")
            self._compaction(m, sid, kind, upd, where, compactions)
        elif kind in ("session_message", "session_message_chunk"):
            self.bump("UPDATE-012")
            bad = []
            mid = upd.get("messageId")
            if not isinstance(mid, str) or not mid:
                bad.append(f"messageId {js(mid)} is not a non-empty string")
            for k in ("senderSessionId", "recipientSessionId"):
                v = upd.get(k)
                if isinstance(v, str) and v not in known and v not in children:
                    bad.append(f"{k} {v!r} names a session that no subagent_update announced")
            self._verdict("UPDATE-012", where, bad, m)
        elif kind == "subagent_update":
            self.bump("UPDATE-012")
            self.pass_few("UPDATE-012", f"{where} announces child {js(upd.get('sessionId'))} before its messages.",
                          [m], limit=1)
        # content blocks and paths, whatever the variant
        for b in update_blocks(upd):
            self.bump("CONTENT-001")
            probs = content_problems(b)
            self._verdict("CONTENT-001", where, probs, m, key="c1")
            ip = icon_problems(b)
            if ip is not None:
                self.bump("CONTENT-002")
                self._verdict("CONTENT-002", where, ip, m)
            ap = annotation_problems(b)
            if ap is not None:
                self.bump("CONTENT-003")
                self._verdict("CONTENT-003", where, ap, m)
        probs, n = path_problems(upd)
        if n or probs:
            self.bump("CONTENT-004")
            self._verdict("CONTENT-004", where, probs, m)

    def _compaction(self, m: Msg, sid: str, kind: str, upd: dict, where: str, comps: dict) -> None:
        cid = upd.get("compactionId")
        if not isinstance(cid, str) or not cid:
            self.failed("UPDATE-011", f"{where} has compactionId {js(cid)}, not a non-empty string.", fr([m]))
            return
        st = comps.setdefault((sid, cid), {"status": None, "terminal": None, "first": m})
        if kind == "compaction_summary_chunk":
            if st["status"] is None:
                self.failed("UPDATE-011", f"{where}: a summary chunk for compaction {cid!r} before any "
                            "compaction_update for it.", fr([m]))
            elif st["terminal"] is not None:
                self.failed("UPDATE-011", f"{where}: a summary chunk for compaction {cid!r} after its terminal "
                            f"status {st['status']!r}.", fr([m, st["terminal"]]))
            else:
                self.pass_few("UPDATE-011", f"{where}: summary chunk while compaction {cid!r} is in progress.", [m])
            return
        status = upd.get("status")
        bad = []
        if not isinstance(status, str):
            bad.append(f"status {js(status)} is not a string")
        if st["terminal"] is not None:
            bad.append(f"compaction {cid!r} already ended with {st['status']!r} (t={st['terminal'].t:.2f}) and "
                       f"now reports {js(status)}")
        summ = upd.get("summary")
        if isinstance(summ, list) and summ and status != "completed":
            bad.append(f"a non-empty summary with status {js(status)}")
        if upd.get("error") is not None and status != "failed":
            bad.append(f"an error with status {js(status)}")
        if bad:
            self.failed("UPDATE-011", f"{where}: {'; '.join(bad)}.", fr([m] + ([st["terminal"]] if st["terminal"] else [])))
        else:
            self.pass_few("UPDATE-011", f"{where}: compaction {cid!r} status {status!r}.", [m])
        if isinstance(status, str):
            st["status"] = status
            if status in _TERMINAL and st["terminal"] is None:
                st["terminal"] = m

    def _verdict(self, rule: str, where: str, bad: list[str], m: Msg, key: Any = None) -> None:
        if bad:
            self.failed(rule, f"{where}: {'; '.join(bad)}.", fr([m]))
        else:
            self.pass_few(rule, f"{where} is well-formed for {rule}.", [m], key=key, limit=1)

    def finish_test(self) -> None:
        if self.inner_session and not self.seen.get("SESSION-011"):
            self.untested("SESSION-011", "the session whose cwd is a subdirectory of the agent's directory got no "
                          "update with a tool location or terminal cwd; --acp-tool-prompt should make the agent "
                          "call a tool")
        for rule, variant in _USAGE.items():
            if not self.seen.get(rule):
                self.ctx.report(rule, SKIP, f"the agent sent no {variant} updates in this test", self.expected[rule])
        for rule, what in (("CONTENT-002", "icons"), ("CONTENT-003", "annotations"),
                           ("CONTENT-004", "paths (tool locations, diffs, cwd) in its updates")):
            if not self.seen.get(rule):
                self.ctx.report(rule, SKIP, f"the agent sent no content with {what} in this test", self.expected[rule])
