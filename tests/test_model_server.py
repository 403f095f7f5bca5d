"""The scripted model server (acp_conformance/model/, --acp-model) without any agent: its wire formats,
script choice, the end of a long reply when the client goes away, and its loopback-only socket."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acp_conformance.model import DUMMY_KEY, ModelServer, agent_env
from acp_conformance.model import scripts
from acp_conformance.plugin.options import DEFAULT_PROMPTS


@pytest.fixture
def server(tmp_path: Path):
    with ModelServer(tmp_path / "model-requests.jsonl") as s:
        yield s


def post(server: ModelServer, path: str, body: dict) -> tuple[int, str, str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json", "x-api-key": DUMMY_KEY})
    r = conn.getresponse()
    data = r.read().decode()
    conn.close()
    return r.status, r.getheader("Content-Type") or "", data


def sse(text: str) -> list[tuple[str | None, dict | str]]:
    """(event name, data) of each SSE event; every event ends with a blank line and its data is JSON (or [DONE])."""
    assert text.endswith("\n\n"), text[-200:]
    events = []
    for block in text.split("\n\n")[:-1]:
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        assert set(fields) <= {"event", "data"} and "data" in fields, block
        data = fields["data"] if fields["data"] == "[DONE]" else json.loads(fields["data"])
        events.append((fields.get("event"), data))
    return events


def log_entries(server: ModelServer) -> list[dict]:
    assert server.log_path is not None
    return [json.loads(line) for line in server.log_path.read_text().splitlines()] if server.log_path.exists() else []


CLAUDE_TOOLS = [{"name": n, "input_schema": {"type": "object"}} for n in ("Bash", "Edit", "Read", "Write")]


def claude_request(text: str, *history: dict, stream: bool = True) -> dict:
    return {"model": "claude-x", "stream": stream, "max_tokens": 100, "tools": CLAUDE_TOOLS,
            "system": [{"type": "text", "text": " - Primary working directory: /tmp/work-dir\n"}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "<system-reminder>plan fail</system-reminder>"},
                                                      {"type": "text", "text": text}]}, *history]}


@pytest.mark.parametrize("kind, script", [("simple", "plain"), ("long", "long"), ("tool", "tool"),
                                          ("permission", "permission"), ("terminal", "terminal"),
                                          ("cancellable", "cancellable")])
def test_the_suites_default_prompts_choose_their_scripts(kind: str, script: str) -> None:
    """--acp-model needs no prompt option: the defaults of --acp-long-prompt, --acp-tool-prompt,
    --acp-permission-prompt, --acp-terminal-prompt and --acp-cancellable-tool-prompt choose the scripts made for them."""
    assert scripts.choose(DEFAULT_PROMPTS[kind]) == script


def test_scripts_chosen_by_prompt_text() -> None:
    assert scripts.choose("Make a plan for the refactoring") == "plan"
    assert scripts.choose("This request should FAIL") == "error"
    assert scripts.choose("What is the weather?") == "plain"
    assert scripts.step("tool", 0).kind == "tool" and scripts.step("tool", 1).kind == "text"
    assert scripts.step("tool", 7) == scripts.Step("text", "Done.")  # past the script: the turn ends


def test_anthropic_stream_is_well_formed_sse(server: ModelServer) -> None:
    status, ctype, text = post(server, "/v1/messages?beta=true", claude_request(DEFAULT_PROMPTS["simple"]))
    assert status == 200 and ctype == "text/event-stream"
    events = sse(text)
    names = [e for e, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert all(data["type"] == name for name, data in events)
    deltas = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")
    assert deltas == "Hello from the scripted model."
    assert events[-2][1]["delta"]["stop_reason"] == "end_turn"


def test_anthropic_permission_script_is_a_file_edit_then_a_closing_text(server: ModelServer) -> None:
    first = sse(post(server, "/v1/messages", claude_request(DEFAULT_PROMPTS["permission"]))[2])
    start = next(d for n, d in first if n == "content_block_start")["content_block"]
    assert start["type"] == "tool_use" and start["name"] == "Write"
    args = json.loads("".join(d["delta"]["partial_json"] for n, d in first if n == "content_block_delta"))
    assert args["file_path"] == "/tmp/work-dir/acp-model-edit.txt"  # absolute, in the agent's working directory
    assert first[-2][1]["delta"]["stop_reason"] == "tool_use"
    # the next request carries the result (here: the user declined): the model closes the turn
    history = ({"role": "assistant", "content": [start]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": start["id"], "is_error": True,
                                             "content": "The user doesn't want to proceed"}]})
    second = sse(post(server, "/v1/messages", claude_request(DEFAULT_PROMPTS["permission"], *history))[2])
    assert "".join(d["delta"].get("text", "") for n, d in second if n == "content_block_delta") == "The edit is done."
    assert [(e["script"], e["step"], e["tool"]) for e in log_entries(server)] == [("permission", "tool", "edit"),
                                                                                 ("permission", "text", None)]


def test_anthropic_side_requests_and_errors(server: ModelServer) -> None:
    """A request without tools (a title) never gets a long or failing script; structured output gets JSON;
    the error script is an HTTP error in the API's shape; a non-streaming request gets one message."""
    title = {"model": "m", "stream": False, "messages": [{"role": "user", "content": "Count slowly"}],
             "output_config": {"format": {"type": "json_schema", "schema": {"type": "object", "required": ["title"]}}}}
    status, _, text = post(server, "/v1/messages", title)
    assert status == 200 and json.loads(json.loads(text)["content"][0]["text"]) == {"title": scripts.SIDE_REPLY}
    status, _, text = post(server, "/v1/messages", claude_request("please fail now"))
    assert status == 400 and json.loads(text)["error"]["type"] == "invalid_request_error"
    status, _, text = post(server, "/v1/messages", claude_request("Run make test in a terminal.", stream=False))
    message = json.loads(text)
    assert message["stop_reason"] == "tool_use" and message["content"][0]["input"]["command"] == scripts.SHELL_COMMAND
    status, _, text = post(server, "/v1/messages", claude_request(DEFAULT_PROMPTS["cancellable"], stream=False))
    assert json.loads(text)["content"][0]["input"]["run_in_background"] is True


def test_openai_responses_tool_call_then_text(server: ModelServer) -> None:
    prompt = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": DEFAULT_PROMPTS["terminal"]}]}
    body = {"model": "gpt-x", "stream": True, "tools": [{"type": "function", "name": "exec_command"}],
            "input": [{"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": "<environment_context><cwd>/tmp/w</cwd></environment_context>"}]},
                      prompt]}
    events = sse(post(server, "/v1/responses", body)[2])
    assert [e for e, _ in events][0] == "response.created" and events[-1][0] == "response.completed"
    call = events[-1][1]["response"]["output"][0]
    assert call["type"] == "function_call" and json.loads(call["arguments"]) == {"cmd": scripts.SHELL_COMMAND}
    body["input"] += [call, {"type": "function_call_output", "call_id": call["call_id"], "output": "acp-model"}]
    events = sse(post(server, "/v1/responses", body)[2])
    assert events[-1][1]["response"]["output"][0]["content"][0]["text"] == "The command ran."


def test_openai_codex_code_mode_and_chat_completions(server: ModelServer) -> None:
    """Codex's code mode offers one tool, exec (JavaScript calling nested tools): a permission step asks to leave
    the sandbox through it. Chat Completions streams chunks and ends with [DONE]."""
    body = {"model": "gpt-x", "stream": True,
            "input": [{"type": "additional_tools", "tools": [{"type": "namespace", "name": "functions",
                                                               "tools": [{"type": "custom", "name": "exec"}]}]},
                      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": DEFAULT_PROMPTS["permission"]}]}]}
    call = sse(post(server, "/v1/responses", body)[2])[-1][1]["response"]["output"][0]
    assert call["type"] == "custom_tool_call" and call["name"] == "exec"
    assert "tools.exec_command(" in call["input"] and "require_escalated" in call["input"]
    chat = {"model": "gpt-x", "stream": True, "tools": [{"type": "function", "function": {"name": "shell"}}],
            "messages": [{"role": "user", "content": DEFAULT_PROMPTS["simple"]}]}
    events = sse(post(server, "/v1/chat/completions", chat)[2])
    assert events[-1][1] == "[DONE]"
    assert "".join(d["choices"][0]["delta"].get("content") or "" for _, d in events[:-1]) == "Hello from the scripted model."


def test_long_reply_ends_when_the_client_goes_away(server: ModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scripts, "LONG_CHUNKS", 100_000)  # would stream for hours unless the client's going ends it
    body = json.dumps(claude_request(DEFAULT_PROMPTS["long"])).encode()
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    received = b""
    while received.count(b"content_block_delta") < 3:  # a few chunks of the reply have arrived
        received += sock.recv(4096)
    sock.close()
    deadline = time.monotonic() + 10
    while not log_entries(server) and time.monotonic() < deadline:  # the entry is written when the reply ends
        time.sleep(0.05)
    [entry] = log_entries(server)
    assert entry["script"] == "long" and entry["ended"] == "client-gone"


def test_long_reply_ends_by_itself(server: ModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long turn a scenario waits for ends (like the reference agent's): LONG_CHUNKS chunks, then end_turn."""
    monkeypatch.setattr(scripts, "STREAM_INTERVAL", 0.001)
    events = sse(post(server, "/v1/messages", claude_request(DEFAULT_PROMPTS["long"]))[2])
    assert sum(n == "content_block_delta" for n, _ in events) == scripts.LONG_CHUNKS
    assert events[-1][0] == "message_stop" and log_entries(server)[0]["ended"] == "complete"


def test_binds_loopback_only_and_logs_no_secrets(server: ModelServer) -> None:
    assert server.url == f"http://127.0.0.1:{server.port}"
    assert server._httpd is not None and server._httpd.server_address[0] == "127.0.0.1"
    post(server, "/v1/messages", claude_request(DEFAULT_PROMPTS["simple"]))
    [entry] = log_entries(server)
    assert entry["headers"]["x-api-key"] == "<redacted>" and DUMMY_KEY not in json.dumps(entry)


def test_agent_env_points_both_apis_at_the_server() -> None:
    env = agent_env("http://127.0.0.1:1234", claude_config_dir=Path("/tmp/c"))
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:1234" and env["OPENAI_BASE_URL"] == "http://127.0.0.1:1234/v1"
    assert env["ANTHROPIC_API_KEY"] == env["OPENAI_API_KEY"] == DUMMY_KEY and env["CLAUDE_CONFIG_DIR"] == "/tmp/c"
    provider = json.loads(env["CODEX_CONFIG"])["model_providers"]["acp_model"]
    assert provider["base_url"] == "http://127.0.0.1:1234/v1" and provider["wire_api"] == "responses"


def test_acp_model_with_a_client_target_is_a_usage_error(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--client-cmd=true {agent}",
                        "--acp-model", f"--acp-report-dir={tmp_path}"], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert p.returncode == 2 and "--acp-model serves a model to an agent" in p.stdout + p.stderr


def test_acp_model_run_points_the_agent_at_the_server_and_logs_beside_the_transcripts(tmp_path: Path) -> None:
    """A run with --acp-model against a stand-in agent that posts one model request to ANTHROPIC_BASE_URL with
    its ANTHROPIC_API_KEY, then runs the reference agent: the request lands in the model's log beside the
    transcripts, and --acp-agent-env wins over the variables --acp-model sets."""
    stand_in = tmp_path / "agent.py"
    stand_in.write_text(
        "import json, os, runpy, sys, urllib.request\n"
        "req = urllib.request.Request(os.environ['ANTHROPIC_BASE_URL'] + '/v1/messages', method='POST',\n"
        "    data=json.dumps({'model': os.environ['ACP_MODEL_PROBE'], 'messages': [{'role': 'user', 'content': 'hi'}]}).encode(),\n"
        "    headers={'x-api-key': os.environ['ANTHROPIC_API_KEY']})\n"
        "urllib.request.urlopen(req, timeout=10).read()\n"
        "sys.argv = ['agent']\n"
        "runpy.run_module('acp_conformance.reference.agent', run_name='__main__')\n")
    p = subprocess.run([sys.executable, "-m", "acp_conformance.cli", "agent", "--acp-model", "--acp-rules", "INIT-002",
                        "--acp-agent-env", "ACP_MODEL_PROBE=probe", f"--acp-report-dir={tmp_path / 'r'}",
                        "--", sys.executable, str(stand_in)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    log = tmp_path / "r" / "transcripts" / "model-requests.jsonl"
    assert log.is_file(), p.stdout + p.stderr
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert entries and all(e["model"] == "probe" for e in entries)
    assert all({k.lower(): v for k, v in e["headers"].items()}["x-api-key"] == "<redacted>" for e in entries)


def gemini_request(text: str, *history: dict) -> dict:
    tools = [{"functionDeclarations": [{"name": n, "parametersJsonSchema": {"type": "object", "properties": {"file_path": {}}}}
                                       for n in ("read_file", "write_file", "run_shell_command")]}]
    context = "<session_context>\n- **Workspace Directories:**\n  - /tmp/work-dir\n</session_context>"
    return {"contents": [{"role": "user", "parts": [{"text": context}]}, {"role": "user", "parts": [{"text": text}]}, *history],
            "tools": tools, "generationConfig": {"temperature": 1}}


def test_gemini_tool_call_then_text_streamed_and_whole(server: ModelServer) -> None:
    """gemini-cli's calls: the method is in the path (streaming or not); a permission step is a write_file call in
    the workspace directory, the request carrying its result gets the closing text."""
    events = sse(post(server, "/v1beta/models/gemini-x:streamGenerateContent?alt=sse", gemini_request(DEFAULT_PROMPTS["permission"]))[2])
    [(_, chunk)] = events
    [part] = chunk["candidates"][0]["content"]["parts"]
    assert part["functionCall"]["name"] == "write_file"
    assert part["functionCall"]["args"]["file_path"] == f"/tmp/work-dir/{scripts.EDIT_FILE}"
    history = ({"role": "model", "parts": [part]},
               {"role": "user", "parts": [{"functionResponse": {"name": "write_file", "response": {"output": "ok"}}}]})
    status, _, text = post(server, "/v1beta/models/gemini-x:generateContent", gemini_request(DEFAULT_PROMPTS["permission"], *history))
    reply = json.loads(text)["candidates"][0]
    assert status == 200 and reply["content"]["parts"] == [{"text": "The edit is done."}] and reply["finishReason"] == "STOP"
    assert [e["api"] for e in log_entries(server)] == ["gemini", "gemini"]


def test_gemini_json_requests_long_replies_and_counts(server: ModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The router's JSON request gets JSON of the asked types; a long reply streams LONG_CHUNKS chunks; countTokens
    is answered."""
    monkeypatch.setattr(scripts, "STREAM_INTERVAL", 0.001)
    router = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}],
              "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": {
                  "type": "OBJECT", "properties": {"why": {"type": "STRING"}, "score": {"type": "INTEGER"}}}}}
    text = json.loads(post(server, "/v1beta/models/g:generateContent", router)[2])["candidates"][0]["content"]["parts"][0]["text"]
    assert json.loads(text) == {"why": scripts.SIDE_REPLY, "score": 10}
    events = sse(post(server, "/v1beta/models/g:streamGenerateContent?alt=sse", gemini_request(DEFAULT_PROMPTS["long"]))[2])
    assert len(events) == scripts.LONG_CHUNKS + 1 and events[-1][1]["candidates"][0]["finishReason"] == "STOP"
    assert json.loads(post(server, "/v1beta/models/g:countTokens", {})[2]) == {"totalTokens": 10}


def test_agent_env_points_gemini_qwen_and_opencode_at_the_server() -> None:
    env = agent_env("http://127.0.0.1:1234")
    assert env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:1234" and env["GEMINI_API_KEY"] == DUMMY_KEY
    provider = json.loads(env["OPENCODE_CONFIG_CONTENT"])["provider"]["acpmodel"]
    assert provider["options"]["baseURL"] == "http://127.0.0.1:1234/v1" and env["OPENAI_MODEL"]


def test_working_directory_as_each_agent_tells_it() -> None:
    """Tool calls carry absolute paths: the working directory is read from each agent's own words."""
    assert scripts.working_directory(" - Primary working directory: /tmp/a\\n") == "/tmp/a"
    assert scripts.working_directory("<cwd>/tmp/b</cwd>") == "/tmp/b"
    assert scripts.working_directory("<env>\\nWorking directory: /tmp/c\\nIs directory a git repo") == "/tmp/c"
    assert scripts.working_directory("no directory here") is None


def test_qwen_code_and_opencode_tools_over_chat_completions(server: ModelServer) -> None:
    """qwen-code (gemini-cli's tool names, file_path) and opencode (filePath) offer file and shell tools of their own:
    a tool step calls theirs, with the path in the working directory each one names."""
    for tools, cwd_words, read, param in ((["read_file", "write_file", "run_shell_command"],
                                           "I'm currently working in the directory: /tmp/q", "read_file", "file_path"),
                                          (["read", "write", "bash"], "<env>\\n  Working directory: /tmp/q", "read", "filePath")):
        chat = {"model": "m", "stream": False, "tools": [{"type": "function", "function": {"name": n}} for n in tools],
                "messages": [{"role": "system", "content": cwd_words},
                             {"role": "user", "content": "Use a tool to read the notes"}]}
        call = json.loads(post(server, "/v1/chat/completions", chat)[2])["choices"][0]["message"]["tool_calls"][0]
        assert call["function"]["name"] == read
        assert json.loads(call["function"]["arguments"]) == {param: f"/tmp/q/{scripts.READ_FILE}"}
