"""The OpenAI Responses API (``POST /v1/responses``, as Codex calls it) and Chat Completions
(``POST /v1/chat/completions``): streaming (SSE) and not."""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any, Iterator

from . import scripts
from .scripts import Step

_WRAPPED = re.compile(r"<(\w+)>.*?</\1>", re.S)  # Codex's <environment_context>, <user_instructions>...
_CALLS = {"function_call", "custom_tool_call", "local_shell_call"}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(str(b.get("text", "")) for b in content or [] if isinstance(b, dict)
                    and b.get("type") in ("input_text", "text", "output_text"))


def turn(body: dict, chat: bool = False) -> tuple[str, int]:
    """The user's prompt of the turn this request belongs to, and how many tool calls the model has made in it."""
    items = [i for i in (body.get("messages") if chat else body.get("input")) or [] if isinstance(i, dict)]
    if isinstance(body.get("input"), str) and not chat:
        return body["input"], 0
    for n in range(len(items) - 1, -1, -1):
        item = items[n]
        if item.get("role") == "user" and item.get("type", "message") == "message":
            prompt = _WRAPPED.sub("", _text(item.get("content"))).strip()
            if prompt:
                later = items[n + 1:]
                done = (sum(len(i.get("tool_calls") or []) > 0 for i in later if i.get("role") == "assistant") if chat
                        else sum(i.get("type") in _CALLS for i in later))
                return prompt, done
    return "", 0


def _offered(body: dict) -> set[str]:
    """The names of the tools the request offers: top-level ``tools`` and Codex's ``additional_tools`` input items,
    namespaces included."""
    names: set[str] = set()

    def walk(tools: Any) -> None:
        for t in tools or []:
            if isinstance(t, dict):
                name = t.get("name") or (t.get("function") or {}).get("name")
                if name:
                    names.add(name)
                walk(t.get("tools"))
    walk(body.get("tools"))
    for item in body.get("input") or [] if isinstance(body.get("input"), list) else []:
        if isinstance(item, dict) and item.get("type") == "additional_tools":
            walk(item.get("tools"))
    return names


_PATCH = "*** Begin Patch\n*** Add File: {path}\n+written by the scripted model\n*** End Patch\n"
_ESCALATED = {"sandbox_permissions": "require_escalated", "justification": "The user asked to be asked first."}


def _call(kind: str, offered: set[str], cwd: str | None) -> tuple[str, str, str] | None:
    """(item type, tool name, arguments or input) for a tool step, or None when no fitting tool is offered.
    Codex's code mode offers one tool, ``exec`` (JavaScript that calls the nested tools); otherwise its
    function tools. A permission step is a command that asks to leave the sandbox (Codex then asks the user)."""
    path = scripts.tool_path(cwd, scripts.EDIT_FILE)
    command = {"read": f"cat {scripts.READ_FILE}", "shell": scripts.SHELL_COMMAND,
               "edit": f"echo written by the scripted model > {path}"}.get(kind)
    if "exec" in offered:
        if command is None and kind != "plan":
            return None
        if kind == "plan":
            source = ("const r = await tools.update_plan({plan: "
                      + json.dumps([{"step": s, "status": "pending"} for s in scripts.PLAN_ITEMS]) + "});\n")
        else:
            args = {"cmd": command, **(_ESCALATED if kind == "edit" else {})}
            source = f"const r = await tools.exec_command({json.dumps(args)});\n"
        return "custom_tool_call", "exec", source + "text(JSON.stringify(r));\n"
    if kind == "plan" and "update_plan" in offered:
        return "function_call", "update_plan", json.dumps({"plan": [{"step": s, "status": "pending"} for s in scripts.PLAN_ITEMS]})
    if command is None:
        return None
    extra = _ESCALATED if kind == "edit" else {}
    if "exec_command" in offered:
        return "function_call", "exec_command", json.dumps({"cmd": command, **extra})
    if "shell_command" in offered:
        return "function_call", "shell_command", json.dumps({"command": command, **extra})
    if "shell" in offered:
        return "function_call", "shell", json.dumps({"command": ["bash", "-lc", command], **extra})
    return _file_tool_call(kind, offered, cwd)


# agents that offer file and shell tools of their own over Chat Completions: qwen-code (gemini-cli's names,
# file_path) and opencode (filePath); (tool, its path parameter) in order of preference
_FILE_TOOLS = {"read": (("read_file", "file_path"), ("read", "filePath")),
               "edit": (("write_file", "file_path"), ("write", "filePath"))}
_SHELL_TOOLS = ("run_shell_command", "bash")


def _file_tool_call(kind: str, offered: set[str], cwd: str | None) -> tuple[str, str, str] | None:
    for name, param in _FILE_TOOLS.get(kind, ()):
        if name in offered:
            path = scripts.tool_path(cwd, scripts.READ_FILE if kind == "read" else scripts.EDIT_FILE)
            args = {param: path, **({"content": "written by the scripted model\n"} if kind == "edit" else {})}
            return "function_call", name, json.dumps(args)
    if kind == "shell":
        name = next((n for n in _SHELL_TOOLS if n in offered), None)
        if name is not None:
            return "function_call", name, json.dumps({"command": scripts.SHELL_COMMAND})
    return None


def plan(body: dict, raw: str, chat: bool = False) -> tuple[str, Step, list[dict]]:
    """(script, step, output items) for one request; a stream step has no items (it is written as it goes).
    Items are Responses API items ({type: message|function_call|custom_tool_call}); ``whole`` and ``stream``
    turn them into chat completions when ``chat``."""
    offered = _offered(body)
    if not offered:
        return "side", Step("text", scripts.SIDE_REPLY), [_message(scripts.SIDE_REPLY)]
    prompt, done = turn(body, chat)
    script = scripts.choose(prompt)
    step = scripts.step(script, done)
    if step.kind == "tool":
        call = _call(step.tool, offered, scripts.working_directory(raw))
        if call is None:
            step = Step("text", f"No {step.tool} tool is offered.")
        else:
            kind, name, args = call
            item = {"type": kind, "id": f"fc_{uuid.uuid4().hex[:24]}", "call_id": f"call_{uuid.uuid4().hex[:24]}",
                    "name": name, "status": "completed", ("input" if kind == "custom_tool_call" else "arguments"): args}
            return script, step, [item]
    if step.kind == "text":
        return script, step, [_message(step.text)]
    return script, step, []


def _message(text: str) -> dict:
    return {"type": "message", "id": f"msg_{uuid.uuid4().hex[:24]}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def error_body(step: Step) -> dict:
    return {"error": {"type": "invalid_request_error", "code": "scripted_error", "message": step.text, "param": None}}


_USAGE = {"input_tokens": 10, "output_tokens": 10, "total_tokens": 20,
          "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}


def _response(body: dict, rid: str, status: str, output: list[dict]) -> dict:
    return {"id": rid, "object": "response", "created_at": int(time.time()), "status": status,
            "model": body.get("model") or "scripted", "output": output, "usage": _USAGE if status == "completed" else None}


def _chat_message(items: list[dict]) -> dict:
    calls = [{"id": i["call_id"], "type": "function",
              "function": {"name": i["name"], "arguments": i.get("arguments", i.get("input", ""))}}
             for i in items if i["type"] != "message"]
    text = "".join(c["text"] for i in items if i["type"] == "message" for c in i["content"])
    return {"role": "assistant", "content": text or None, **({"tool_calls": calls} if calls else {})}


def whole(body: dict, step: Step, items: list[dict], chat: bool = False) -> dict:
    if chat:
        msg = _chat_message(items)
        return {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model") or "scripted",
                "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if msg.get("tool_calls") else "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}
    return _response(body, f"resp_{uuid.uuid4().hex[:24]}", "completed", items)


def _sse(data: dict, event: str | None = None) -> bytes:
    return ((f"event: {event}\n" if event else "") + f"data: {json.dumps(data)}\n\n").encode()


def _long_text() -> Iterator[str]:
    for n in range(1, scripts.LONG_CHUNKS + 1):
        yield f"{n}\n"
        time.sleep(scripts.STREAM_INTERVAL)


def stream(body: dict, step: Step, items: list[dict], chat: bool = False) -> Iterator[bytes]:
    if chat:
        yield from _chat_stream(body, step, items)
        return
    rid = f"resp_{uuid.uuid4().hex[:24]}"
    yield _sse({"type": "response.created", "response": _response(body, rid, "in_progress", [])}, "response.created")
    if step.kind == "stream":
        msg = _message("")
        yield _sse({"type": "response.output_item.added", "output_index": 0, "item": {**msg, "status": "in_progress", "content": []}},
                   "response.output_item.added")
        text = ""
        for chunk in _long_text():
            text += chunk
            yield _sse({"type": "response.output_text.delta", "item_id": msg["id"], "output_index": 0,
                        "content_index": 0, "delta": chunk}, "response.output_text.delta")
        items = [_message(text)]
    for n, item in enumerate(items if step.kind != "stream" else []):
        yield _sse({"type": "response.output_item.added", "output_index": n,
                    "item": {**item, "status": "in_progress", **({"content": []} if item["type"] == "message" else {})}},
                   "response.output_item.added")
        if item["type"] == "message":
            yield _sse({"type": "response.output_text.delta", "item_id": item["id"], "output_index": n, "content_index": 0,
                        "delta": item["content"][0]["text"]}, "response.output_text.delta")
        yield _sse({"type": "response.output_item.done", "output_index": n, "item": item}, "response.output_item.done")
    if step.kind == "stream":
        yield _sse({"type": "response.output_item.done", "output_index": 0, "item": items[0]}, "response.output_item.done")
    yield _sse({"type": "response.completed", "response": _response(body, rid, "completed", items)}, "response.completed")


def _chat_stream(body: dict, step: Step, items: list[dict]) -> Iterator[bytes]:
    cid, model, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", body.get("model") or "scripted", int(time.time())

    def chunk(delta: dict, finish: str | None = None) -> bytes:
        return _sse({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                     "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    yield chunk({"role": "assistant", "content": ""})
    if step.kind == "stream":
        for text in _long_text():
            yield chunk({"content": text})
        yield chunk({}, "stop")
    else:
        msg = _chat_message(items)
        if msg.get("content"):
            yield chunk({"content": msg["content"]})
        for n, call in enumerate(msg.get("tool_calls") or []):
            yield chunk({"tool_calls": [{"index": n, **call}]})
        yield chunk({}, "tool_calls" if msg.get("tool_calls") else "stop")
    yield b"data: [DONE]\n\n"
