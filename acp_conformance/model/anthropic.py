"""The Anthropic Messages API (``POST /v1/messages``) as Claude Code calls it: streaming (SSE) and not."""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any, Iterator

from . import scripts
from .scripts import Step

# the agent's tool for each kind of step, in order of preference (Claude Code's built-in tools)
TOOLS = {"read": ("Read",), "edit": ("Write", "Edit"), "shell": ("Bash",), "background": ("Bash",), "plan": ("TodoWrite",)}
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


def _has(content: Any, kind: str) -> bool:
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == kind for b in content)


def turn(body: dict) -> tuple[str, int]:
    """The user's prompt of the turn this request belongs to, and how many tool calls the model has made in it."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") == "user" and not _has(m.get("content"), "tool_result"):
            prompt = " ".join(_REMINDER.sub("", t) for t in _texts(m.get("content"))).strip()
            if prompt:
                done = sum(1 for a in messages[i + 1:] if a.get("role") == "assistant" and _has(a.get("content"), "tool_use"))
                return prompt, done
    return "", 0


def _structured_text(body: dict) -> str | None:
    """A JSON answer for a request that asks for structured output (Claude Code's session title)."""
    fmt = (body.get("output_config") or {}).get("format") or {}
    schema = fmt.get("schema") if fmt.get("type") == "json_schema" else None
    if not isinstance(schema, dict):
        return None
    return json.dumps({name: scripts.SIDE_REPLY for name in schema.get("required") or []})


def plan(body: dict, raw: str) -> tuple[str, Step, list[dict]]:
    """(script, step, content blocks) for one request; a stream step has no blocks (it is written as it goes)."""
    offered = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    structured = _structured_text(body)
    if structured is not None or not offered:
        return "side", Step("text", structured or scripts.SIDE_REPLY), [{"type": "text", "text": structured or scripts.SIDE_REPLY}]
    prompt, done = turn(body)
    script = scripts.choose(prompt)
    step = scripts.step(script, done)
    if step.kind == "tool":
        name = next((n for n in TOOLS[step.tool] if n in offered), None)
        if name is None:  # the agent offers no such tool: say so and end the turn
            step = Step("text", f"No {step.tool} tool is offered.")
        else:
            return script, step, [{"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}", "name": name,
                                   "input": tool_input(name, scripts.working_directory(raw), step.tool)}]
    if step.kind == "text":
        return script, step, [{"type": "text", "text": step.text}]
    return script, step, []


def tool_input(name: str, cwd: str | None, kind: str = "") -> dict:
    if name == "Read":
        return {"file_path": scripts.tool_path(cwd, scripts.READ_FILE)}
    if name == "Write":
        return {"file_path": scripts.tool_path(cwd, scripts.EDIT_FILE), "content": "written by the scripted model\n"}
    if name == "Edit":
        return {"file_path": scripts.tool_path(cwd, scripts.EDIT_FILE), "old_string": "a", "new_string": "b"}
    if name == "Bash" and kind == "background":  # Claude Code's background task: a tool call the client can cancel
        return {"command": scripts.BACKGROUND_COMMAND, "description": "Wait in the background", "run_in_background": True}
    if name == "Bash":
        return {"command": scripts.SHELL_COMMAND, "description": "Print a word"}
    return {"todos": [{"content": c, "status": "pending", "activeForm": c} for c in scripts.PLAN_ITEMS]}


def error_body(step: Step) -> dict:
    return {"type": "error", "error": {"type": "invalid_request_error", "message": step.text}}


def _usage() -> dict:
    return {"input_tokens": 10, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def message(body: dict, blocks: list[dict]) -> dict:
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
            "model": body.get("model") or "scripted", "content": blocks, "stop_reason": stop,
            "stop_sequence": None, "usage": _usage()}


def _event(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def stream(body: dict, step: Step, blocks: list[dict]) -> Iterator[bytes]:
    """The SSE events of one answer; a ``stream`` step yields text chunks until the reader stops reading."""
    head = message(body, [])
    head["stop_reason"] = None
    yield _event("message_start", {"type": "message_start", "message": head})
    if step.kind == "stream":
        yield _event("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": {"type": "text", "text": ""}})
        for n in range(1, scripts.LONG_CHUNKS + 1):
            yield _event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                 "delta": {"type": "text_delta", "text": f"{n}\n"}})
            time.sleep(scripts.STREAM_INTERVAL)
        yield _event("content_block_stop", {"type": "content_block_stop", "index": 0})
        blocks = [{"type": "text"}]
    for i, block in enumerate(blocks if step.kind != "stream" else []):
        if block["type"] == "text":
            yield _event("content_block_start", {"type": "content_block_start", "index": i,
                                                 "content_block": {"type": "text", "text": ""}})
            yield _event("content_block_delta", {"type": "content_block_delta", "index": i,
                                                 "delta": {"type": "text_delta", "text": block["text"]}})
        else:
            yield _event("content_block_start", {"type": "content_block_start", "index": i,
                                                 "content_block": {**block, "input": {}}})
            yield _event("content_block_delta", {"type": "content_block_delta", "index": i,
                                                 "delta": {"type": "input_json_delta",
                                                           "partial_json": json.dumps(block["input"])}})
        yield _event("content_block_stop", {"type": "content_block_stop", "index": i})
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    yield _event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                   "usage": {"output_tokens": 10}})
    yield _event("message_stop", {"type": "message_stop"})
