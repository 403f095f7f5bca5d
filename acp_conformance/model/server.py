"""The scripted model server: an HTTP server on 127.0.0.1 (a free port) that answers the model requests of an
agent from scripts (``scripts.py``) in the wire format of the API it was called with, and logs each request.

Only the standard library: ``http.server`` with one thread per connection is enough for a handful of agent
processes, and a long reply is a loop of writes that ends when the client's connection does.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

from . import anthropic, gemini, openai

LOOPBACK = "127.0.0.1"
DUMMY_KEY = "acp-model-dummy-key"
_SECRET_HEADERS = {"authorization", "x-api-key", "api-key"}


class ModelServer:
    """``start()`` binds 127.0.0.1 on a free port and serves in a daemon thread; ``url`` is its base URL;
    ``stop()`` closes it. Every request is appended to ``log_path`` (JSONL) when one is given."""

    def __init__(self, log_path: Path | None = None) -> None:
        self.log_path = log_path
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self.requests = 0

    def start(self) -> "ModelServer":
        httpd = ThreadingHTTPServer((LOOPBACK, 0), _Handler)
        httpd.daemon_threads = True
        httpd.model = self  # type: ignore[attr-defined]
        self._httpd = httpd
        threading.Thread(target=httpd.serve_forever, name="acp-model", daemon=True).start()
        return self

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the model server is not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "ModelServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log(self, entry: dict) -> None:
        with self._lock:
            self.requests += 1
            if self.log_path is not None:
                with open(self.log_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(entry) + "\n")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "acp-model"

    def log_message(self, format: str, *args: Any) -> None:  # the JSONL log says it all
        pass

    @property
    def model(self) -> ModelServer:
        return self.server.model  # type: ignore[attr-defined]

    def _entry(self, **more: Any) -> dict:
        headers = {k: ("<redacted>" if k.lower() in _SECRET_HEADERS else v) for k, v in self.headers.items()}
        return {"wall": round(time.time(), 3), "method": self.command, "path": self.path, "headers": headers, **more}

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode() if payload is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def do_HEAD(self) -> None:  # Claude Code's reachability probe (HEAD /api/hello)
        self.model.log(self._entry(status=200))
        self._send(200, None)

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path.endswith("/models"):  # both APIs' model lists: none beyond what the agent asks for
            self.model.log(self._entry(status=200))
            self._send(200, {"object": "list", "data": [], "models": [], "has_more": False})
            return
        self.model.log(self._entry(status=404))
        self._send(404, {"error": {"type": "not_found_error", "message": f"no {path} here"}})

    def do_POST(self) -> None:
        path = self.path.split("?")[0]
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", errors="replace") if length else ""
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = None
        api = ("anthropic" if path.endswith("/messages") else "openai-responses" if path.endswith("/responses")
               else "openai-chat" if path.endswith("/chat/completions")
               else "gemini" if path.endswith((":generateContent", ":streamGenerateContent")) else None)
        if path.endswith(":countTokens"):  # gemini-cli counts before it sends
            self.model.log(self._entry(status=200))
            self._send(200, {"totalTokens": 10})
            return
        if api is None or not isinstance(body, dict):
            self.model.log(self._entry(status=404 if api is None else 400))
            self._send(404 if api is None else 400, {"error": {"type": "invalid_request_error",
                                                               "message": f"cannot serve POST {path}"}})
            return
        if api == "gemini":
            self._gemini(path, body, raw)
            return
        if api == "anthropic":
            script, step, blocks = anthropic.plan(body, raw)
            prompt = anthropic.turn(body)[0]
        else:
            script, step, blocks = openai.plan(body, raw, chat=api == "openai-chat")
            prompt = openai.turn(body, chat=api == "openai-chat")[0]
        entry = self._entry(api=api, model=body.get("model"), stream=bool(body.get("stream")), prompt=prompt[:200],
                            script=script, step=step.kind, tool=step.tool or None)
        if step.kind == "error":
            self.model.log({**entry, "status": step.status})
            self._send(step.status, anthropic.error_body(step) if api == "anthropic" else openai.error_body(step))
            return
        if not body.get("stream"):
            reply = anthropic.message(body, blocks) if api == "anthropic" else openai.whole(body, step, blocks, chat=api == "openai-chat")
            self.model.log({**entry, "status": 200, "ended": "complete"})
            self._send(200, reply)
            return
        events = anthropic.stream(body, step, blocks) if api == "anthropic" else openai.stream(body, step, blocks, chat=api == "openai-chat")
        ended = self._stream(events)
        self.model.log({**entry, "status": 200, "ended": ended})

    def _gemini(self, path: str, body: dict, raw: str) -> None:
        """The Gemini API: streaming is chosen by the method in the path, not by the body."""
        script, step, parts = gemini.plan(body, raw)
        streaming = path.endswith(":streamGenerateContent")
        entry = self._entry(api="gemini", model=gemini.model_of(path), stream=streaming, prompt=gemini.turn(body)[0][:200],
                            script=script, step=step.kind, tool=step.tool or None)
        if step.kind == "error":
            self.model.log({**entry, "status": step.status})
            self._send(step.status, gemini.error_body(step))
        elif not streaming:
            self.model.log({**entry, "status": 200, "ended": "complete"})
            self._send(200, gemini.whole(gemini.model_of(path), parts))
        else:
            ended = self._stream(gemini.stream(gemini.model_of(path), step, parts))
            self.model.log({**entry, "status": 200, "ended": ended})

    def _stream(self, events: Iterator[bytes]) -> str:
        """Write the SSE events; 'client-gone' when the client closed the connection first (a cancelled turn)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")  # the body ends with the connection: no chunked framing needed
        self.end_headers()
        self.close_connection = True
        try:
            for chunk in events:
                self.wfile.write(chunk)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            return "client-gone"
        finally:
            close = getattr(events, "close", None)
            if close:
                close()
        return "complete"


def agent_env(url: str, key: str = DUMMY_KEY, claude_config_dir: Path | None = None) -> dict[str, str]:
    """The environment that points an agent at the server ``url`` with a dummy key, and keeps it off the network
    otherwise (docs/model.md). ``claude_config_dir``: a Claude Code configuration folder of the run's own
    (``claude_config``), so that the agent asks before it edits or runs anything."""
    codex_provider = {"name": "acp-model", "base_url": f"{url}/v1", "env_key": "OPENAI_API_KEY", "wire_api": "responses",
                      "supports_websockets": False, "request_max_retries": 0, "stream_max_retries": 0}
    return {
        # Anthropic clients (Claude Code, the Claude Agent SDK, claude-agent-acp)
        "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": key, "CLAUDE_CODE_OAUTH_TOKEN": "",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1", "CLAUDE_CODE_MAX_RETRIES": "0",
        **({"CLAUDE_CONFIG_DIR": str(claude_config_dir)} if claude_config_dir else {}),
        # OpenAI clients; codex-acp reads its Codex provider from CODEX_CONFIG (the Codex CLI ignores OPENAI_BASE_URL)
        "OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": key, "CODEX_API_KEY": key,
        "CODEX_CONFIG": json.dumps({"model_provider": "acp_model", "model_providers": {"acp_model": codex_provider},
                                    "check_for_update_on_startup": False, "analytics": {"enabled": False}}),
        # codex-acp's default mode ("agent", auto review) has the model review an escalation instead of asking the
        # user (the client): no permission request would reach the suite. "workspace-write" asks the user.
        "INITIAL_AGENT_MODE": "workspace-write",
        # qwen-code (with --auth-type=openai) names the model it asks for; opencode takes a provider of its own
        "OPENAI_MODEL": "acp-model-scripted",
        "OPENCODE_CONFIG_CONTENT": json.dumps(
            {"model": "acpmodel/scripted", "autoupdate": False, "share": "disabled",
             "provider": {"acpmodel": {"npm": "@ai-sdk/openai-compatible", "name": "acp model",
                                       "options": {"baseURL": f"{url}/v1", "apiKey": key},
                                       "models": {"scripted": {"name": "scripted"}}}}}),
        # gemini-cli (the Gemini API; a key chosen by GEMINI_API_KEY, without it the agent asks for a login)
        "GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": key, "GOOGLE_API_KEY": "", "GOOGLE_GENAI_USE_VERTEXAI": "false",
        # nothing else may leave the machine
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
    }


def claude_config(folder: Path) -> Path:
    """A Claude Code configuration folder whose settings start sessions in the ``default`` permission mode:
    without it a session starts in ``auto`` where the catalog offers it, and Claude Code edits and runs commands in
    the working directory without asking (no permission request for the suite to see)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps({"permissions": {"defaultMode": "default"}}) + "\n")
    return folder


def serve_for_run(log_path: Path) -> tuple[ModelServer, dict[str, str]]:
    """A started server for this process's run and the agent's environment for it; both end with the process."""
    import atexit
    import shutil
    import tempfile
    server = ModelServer(log_path).start()
    config = Path(tempfile.mkdtemp(prefix="acp-model-claude-"))
    atexit.register(shutil.rmtree, config, True)
    atexit.register(server.stop)
    return server, agent_env(server.url, claude_config_dir=claude_config(config))
