"""The shape of what a session/update carries, as pure functions: each variant's fields (UPDATE-006..010)
and the content blocks and paths of any update (CONTENT-001..004). Each returns its problems, empty when
the shape is well-formed; ``SessionUpdateMonitor`` (update.py) turns them into findings.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from ._common import is_abs_path, js

_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_ISO8601 = re.compile(r"^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?)?$")
_CMD_NAME = re.compile(r"^[^/\s]\S*$")
_CONTENT_TYPES = ("text", "image", "audio", "resource_link", "resource")
_PLAN_PRIORITIES = ("high", "medium", "low")
_PLAN_STATUSES = ("pending", "in_progress", "completed", "cancelled")


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


# -- the variants -----------------------------------------------------------------------------------------
def usage_problems(upd: dict[str, Any]) -> list[str]:
    """UPDATE-006: usage_update's used/size and optional cost."""
    bad = [f"{k} {js(upd.get(k))} is not a non-negative integer" for k in ("used", "size") if not _int_ge0(upd.get(k))]
    cost = upd.get("cost")
    if cost is not None and not (isinstance(cost, dict) and isinstance(cost.get("amount"), (int, float))
                                 and not isinstance(cost.get("amount"), bool)
                                 and isinstance(cost.get("currency"), str)):
        bad.append(f"cost {js(cost, 80)} is not {{amount: number, currency: string}}")
    return bad


def plan_problems(upd: dict[str, Any]) -> list[str]:
    """UPDATE-007: plan_update's plan (items, markdown or file)."""
    plan, bad = upd.get("plan"), []
    if not isinstance(plan, dict):
        return ["plan is not an object"]
    t = plan.get("type")
    if t not in ("items", "markdown", "file") and not _ext(t):
        bad.append(f"plan.type {js(t)} is not items, markdown, file or `_`-prefixed")
    if not isinstance(plan.get("planId"), str):
        bad.append("plan.planId is not a string")
    if t == "items":
        bad.extend(_plan_entry_problems(plan.get("entries")))
    if t == "file" and not isinstance(plan.get("uri"), str):
        bad.append("file plan without a uri")
    elif t == "file" and not re.match(r"^([A-Za-z][A-Za-z0-9+.-]*:|/)", plan["uri"]):
        bad.append(f"file plan uri {js(plan['uri'])} is not absolute")
    return bad


def _plan_entry_problems(entries: Any) -> list[str]:
    bad = []
    for e in entries if isinstance(entries, list) else [None]:
        if not isinstance(e, dict) or not isinstance(e.get("content"), str):
            bad.append(f"plan entry {js(e, 80)} has no string content")
            continue
        if not (e.get("priority") in _PLAN_PRIORITIES or _ext(e.get("priority"))):
            bad.append(f"plan entry priority {js(e.get('priority'))} is not defined")
        if not (e.get("status") in _PLAN_STATUSES or _ext(e.get("status"))):
            bad.append(f"plan entry status {js(e.get('status'))} is not defined")
    return bad


def command_problems(upd: dict[str, Any]) -> list[str]:
    """UPDATE-008: available_commands_update's commands (names unique, without a slash; a description)."""
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
        if isinstance(n, str):
            names.add(n)
        if not isinstance(c.get("description"), str):
            bad.append(f"command {js(n)} has no string description")
        inp = c.get("input")
        if inp is not None and not (isinstance(inp, dict) and (_ext(inp.get("type")) or (
                inp.get("type") == "text" and isinstance(inp.get("hint"), str)))):
            bad.append(f"command {js(n)} input {js(inp, 80)} is not {{type: text, hint}} or `_`-typed")
    return bad


def session_info_problems(upd: dict[str, Any]) -> tuple[list[str], list[str]]:
    """UPDATE-009: (problems of session_info_update's title/updatedAt, the fields it carries but does not patch)."""
    bad, unpatched = [], [k for k in ("sessionId", "cwd", "additionalDirectories") if k in upd]
    if upd.get("title") is not None and not isinstance(upd.get("title"), str):
        bad.append(f"title {js(upd.get('title'))} is not a string")
    ua = upd.get("updatedAt")
    if ua is not None and (not isinstance(ua, str) or not _RFC3339.match(ua)):
        bad.append(f"updatedAt {js(ua)} is not an RFC 3339 date-time")
    return bad, unpatched


def notice_problems(upd: dict[str, Any]) -> list[str]:
    """UPDATE-010: a notice's severity, title and description."""
    bad = []
    sev = upd.get("severity")
    if not (sev in ("info", "warning", "error") or _ext(sev)):
        bad.append(f"severity {js(sev)} is not info, warning, error or `_`-prefixed")
    if not isinstance(upd.get("title"), str) or not upd["title"].strip():
        bad.append(f"title {js(upd.get('title'))} is not a non-empty string")
    if upd.get("description") is not None and not isinstance(upd.get("description"), str):
        bad.append("description is not a string")
    return bad
