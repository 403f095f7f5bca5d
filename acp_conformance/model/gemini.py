"""The Gemini API (``POST /v1beta/models/MODEL:generateContent``, ``:streamGenerateContent?alt=sse``) as
gemini-cli calls it when ``GOOGLE_GEMINI_BASE_URL`` points it here; ``:countTokens`` too."""

from __future__ import annotations

import json
import re
import time
from typing import Any, Iterator

from . import scripts
from .scripts import Step

# the agent's tool for each kind of step, in order of preference (gemini-cli's built-in tools)
TOOLS = {"read": ("read_file",), "edit": ("write_file", "replace"), "shell": ("run_shell_command",),
         "background": ("run_shell_command",), "plan": ("write_todos",)}
_CONTEXT = re.compile(r"<session_context>.*?</session_context>", re.S)
_WORKSPACE = re.compile(r"Workspace Directories:\*\*\s*\n\s*- (/[^\s\\]+)")


def _parts(content: Any) -> list[dict]:
    return [p for p in (content or {}).get("parts") or [] if isinstance(p, dict)] if isinstance(content, dict) else []


def turn(body: dict) -> tuple[str, int]:
    """The user's prompt of the turn this request belongs to, and how many tool calls the model has made in it."""
    contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
    for i in range(len(contents) - 1, -1, -1):
        c = contents[i]
        parts = _parts(c)
        if c.get("role") == "user" and not any("functionResponse" in p for p in parts):
            prompt = " ".join(_CONTEXT.sub("", str(p.get("text", ""))) for p in parts).strip()
            if prompt:
                done = sum(1 for m in contents[i + 1:] if m.get("role") == "model"
                           and any("functionCall" in p for p in _parts(m)))
                return prompt, done
    return "", 0


def _structured_text(body: dict) -> str | None:
    """A JSON answer for a request that asks for JSON (gemini-cli's router asks for a complexity score)."""
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if config.get("responseMimeType") != "application/json" and not isinstance(schema, dict):
        return None
    props = (schema or {}).get("properties") or {}
    values = {"INTEGER": 10, "NUMBER": 10, "BOOLEAN": False, "ARRAY": [], "OBJECT": {}}
    return json.dumps({name: values.get(str((p or {}).get("type", "")).upper(), scripts.SIDE_REPLY)
                       for name, p in props.items()})


def _declared(body: dict) -> dict[str, set[str]]:
    """The functions the request offers, each with its parameter names."""
    offered: dict[str, set[str]] = {}
    for tool in body.get("tools") or []:
        for f in (tool or {}).get("functionDeclarations") or [] if isinstance(tool, dict) else []:
            if isinstance(f, dict) and f.get("name"):
                params = f.get("parametersJsonSchema") or f.get("parameters") or {}
                offered[f["name"]] = set((params.get("properties") or {}) if isinstance(params, dict) else ())
    return offered


def plan(body: dict, raw: str) -> tuple[str, Step, list[dict]]:
    """(script, step, parts) for one request; a stream step has no parts (it is written as it goes)."""
    offered = _declared(body)
    structured = _structured_text(body)
    if structured is not None or not offered:
        text = structured or scripts.SIDE_REPLY
        return "side", Step("text", text), [{"text": text}]
    prompt, done = turn(body)
    script = scripts.choose(prompt)
    step = scripts.step(script, done)
    if step.kind == "tool":
        name = next((n for n in TOOLS[step.tool] if n in offered), None)
        if name is None:  # the agent offers no such tool: say so and end the turn
            step = Step("text", f"No {step.tool} tool is offered.")
        else:
            m = _WORKSPACE.search(raw.replace("\\n", "\n"))
            return script, step, [{"functionCall": {"name": name, "args": tool_args(name, m and m.group(1), step.tool)}}]
    if step.kind == "text":
        return script, step, [{"text": step.text}]
    return script, step, []


def tool_args(name: str, cwd: str | None, kind: str = "") -> dict:
    if name == "read_file":
        return {"file_path": scripts.tool_path(cwd, scripts.READ_FILE)}
    if name == "write_file":
        return {"file_path": scripts.tool_path(cwd, scripts.EDIT_FILE), "content": "written by the scripted model\n"}
    if name == "replace":
        return {"file_path": scripts.tool_path(cwd, scripts.EDIT_FILE), "old_string": "a", "new_string": "b",
                "instruction": "Replace a with b"}
    if name == "run_shell_command" and kind == "background":
        return {"command": scripts.BACKGROUND_COMMAND, "description": "Wait in the background", "is_background": True}
    if name == "run_shell_command":
        return {"command": scripts.SHELL_COMMAND, "description": "Print a word"}
    return {"todos": [{"description": c, "status": "pending"} for c in scripts.PLAN_ITEMS]}


def error_body(step: Step) -> dict:
    return {"error": {"code": step.status, "message": step.text, "status": "INVALID_ARGUMENT"}}


def _chunk(body_model: str, parts: list[dict], finish: str | None) -> dict:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": body_model,
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 10, "totalTokenCount": 20}}


def whole(model: str, parts: list[dict]) -> dict:
    return _chunk(model, parts, "STOP")


def stream(model: str, step: Step, parts: list[dict]) -> Iterator[bytes]:
    """The SSE events of one answer; a ``stream`` step yields text chunks until the reader stops reading."""
    if step.kind == "stream":
        for n in range(1, scripts.LONG_CHUNKS + 1):
            yield f"data: {json.dumps(_chunk(model, [{'text': f'{n}'}], None))}\n\n".encode()
            time.sleep(scripts.STREAM_INTERVAL)
        parts = [{"text": "\n"}]
    yield f"data: {json.dumps(_chunk(model, parts, 'STOP'))}\n\n".encode()


def model_of(path: str) -> str:
    """The model named in ``/v1beta/models/MODEL:method``."""
    m = re.search(r"/models/([^/:]+):", path)
    return m.group(1) if m else "scripted"
