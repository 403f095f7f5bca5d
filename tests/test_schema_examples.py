"""Our ACP v2 schema (schema/acp-v2.schema.json): hand-written valid and invalid examples of its types."""

from __future__ import annotations

from pathlib import Path

import pytest

from schema_defs import defs, is_valid


# ------------------------------------------------------------------ (c) examples

TEXT = {"type": "text", "text": "hi"}
SESSION_UPDATES_VALID = {
    "user_message_chunk": {"messageId": "m1", "content": TEXT},
    "user_message": {"messageId": "m1", "content": [TEXT]},
    "agent_message_chunk": {"messageId": "m2", "content": TEXT},
    "agent_message": {"messageId": "m2", "content": None},
    "agent_thought_chunk": {"messageId": "m3", "content": TEXT},
    "agent_thought": {"messageId": "m3"},
    "state_update": {"state": "running", "background": [{"type": "terminal", "terminalId": "t1"}]},
    "tool_call_content_chunk": {"toolCallId": "c1", "content": {"type": "content", "content": TEXT}},
    "tool_call_update": {"toolCallId": "c1", "kind": "execute", "status": "in_progress",
                         "locations": [{"path": "/p/a.rs", "line": 3}], "rawInput": {"cmd": "ls"},
                         "capabilities": {"cancel": {}}},
    "terminal_update": {"terminalId": "t1", "command": "make", "cwd": "/p", "output": {"data": "ok"},
                        "exitStatus": {"exitCode": 0}, "size": {"cols": 80, "rows": 24}},
    "terminal_output_chunk": {"terminalId": "t1", "data": "more"},
    "plan_update": {"plan": {"type": "items", "planId": "p1",
                             "entries": [{"content": "step", "priority": "high", "status": "pending"}]}},
    "plan_removed": {"planId": "p1"},
    "available_commands_update": {"availableCommands": [{"type": "command", "name": "help", "description": "Help",
                                                         "input": {"type": "text", "hint": "topic"}}]},
    "config_option_update": {"configOptions": [{"type": "boolean", "configId": "fast", "name": "Fast", "currentValue": True}]},
    "session_info_update": {"title": "t", "updatedAt": None},
    "usage_update": {"used": 10, "size": 100, "cost": {"amount": 0.5, "currency": "USD"}},
    "notice": {"severity": "warning", "title": "Heads up"},
    "compaction_update": {"compactionId": "k1", "status": "in_progress"},
    "compaction_summary_chunk": {"compactionId": "k1", "content": TEXT},
    "subagent_update": {"sessionId": "child", "state": {"state": "idle", "stopReason": "end_turn"}},
    "session_message": {"messageId": "sm1", "senderSessionId": "child", "content": [TEXT]},
    "session_message_chunk": {"messageId": "sm1", "content": TEXT},
    "replay_complete": {},
}
SESSION_UPDATES_INVALID = {
    "user_message_chunk": {"content": TEXT},                       # no messageId
    "agent_message_chunk": {"messageId": "m", "content": [TEXT]},  # chunk content is one block
    "user_message": {"messageId": 5},
    "state_update": {"state": "asleep"},
    "tool_call_content_chunk": {"toolCallId": "c1", "content": {"type": "video"}},
    "tool_call_update": {"kind": "execute"},
    "terminal_update": {"command": "make"},
    "terminal_output_chunk": {"terminalId": "t1"},
    "plan_update": {"plan": {"type": "items", "entries": []}},
    "plan_removed": {},
    "available_commands_update": {"availableCommands": [{"name": "help", "description": "no type"}]},
    "config_option_update": {"configOptions": [{"type": "select", "configId": "m", "name": "Mode", "currentValue": "a", "options": []}]},
    "session_info_update": {"title": 3},
    "usage_update": {"used": 10},
    "notice": {"severity": "loud", "title": "x"},
    "compaction_update": {"compactionId": "k1"},
    "compaction_summary_chunk": {"compactionId": "k1"},
    "subagent_update": {"title": "no session"},
    "session_message": {"content": [TEXT]},
    "session_message_chunk": {"messageId": "x"},
    "replay_complete": {"_meta": "not an object"},
    "agent_thought": {},
    "agent_message": {"messageId": "m", "content": TEXT},
    "agent_thought_chunk": {"messageId": "m"},
}


def test_every_variant_has_examples():
    d = defs()["SessionUpdate"]
    known = {b["properties"]["sessionUpdate"]["const"] for b in d["anyOf"] if "const" in b["properties"]["sessionUpdate"]}
    assert known == set(SESSION_UPDATES_VALID) == set(SESSION_UPDATES_INVALID)


@pytest.mark.parametrize("variant", sorted(SESSION_UPDATES_VALID))
def test_session_update_variant_valid(variant):
    upd = {"sessionUpdate": variant, **SESSION_UPDATES_VALID[variant]}
    assert is_valid("SessionUpdate", upd)
    assert is_valid("UpdateSessionNotification", {"sessionId": "s", "update": upd})


@pytest.mark.parametrize("variant", sorted(SESSION_UPDATES_INVALID))
def test_session_update_variant_invalid(variant):
    assert not is_valid("SessionUpdate", {"sessionUpdate": variant, **SESSION_UPDATES_INVALID[variant]})


def test_session_update_open_enum():
    assert not is_valid("SessionUpdate", {"sessionUpdate": "future_variant"})
    assert not is_valid("SessionUpdate", {"sessionUpdate": "prompt_suggestions_update", "suggestions": []})
    assert is_valid("SessionUpdate", {"sessionUpdate": "_custom"})
    assert is_valid("SessionUpdate", {"sessionUpdate": "_example.com/thing", "anything": [1, 2]})
    assert not is_valid("SessionUpdate", {"messageId": "m"})
    assert not is_valid("UpdateSessionNotification", {"update": {"sessionUpdate": "replay_complete"}})


def test_unknown_fields_are_accepted():
    assert is_valid("PromptResponse", {"messageId": "m", "extra": 1})
    assert is_valid("SessionUpdate", {"sessionUpdate": "replay_complete", "later": True, "_meta": {"k": 1}})


# -- state updates and stop reasons
@pytest.mark.parametrize("upd,ok", [
    ({"state": "idle"}, True),
    ({"state": "idle", "stopReason": None}, True),
    ({"state": "idle", "stopReason": "end_turn", "background": []}, True),
    ({"state": "idle", "stopReason": "cancelled"}, True),
    ({"state": "idle", "stopReason": "max_tokens"}, True),
    ({"state": "idle", "stopReason": "max_turn_requests"}, True),
    ({"state": "idle", "stopReason": "refusal"}, True),
    ({"state": "idle", "stopReason": "error", "error": {"code": -32603, "message": "boom"}}, True),
    ({"state": "idle", "stopReason": "error"}, True),
    ({"state": "idle", "stopReason": "error", "error": {"message": "no code"}}, False),
    ({"state": "idle", "stopReason": "_vendor_reason"}, True),
    ({"state": "idle", "stopReason": "timeout"}, False),
    ({"state": "idle", "stopReason": 3}, False),
    ({"state": "idle", "usage": {"totalTokens": 3, "inputTokens": 1, "outputTokens": 2}}, True),
    ({"state": "idle", "usage": {"totalTokens": 3}}, False),
    ({"state": "requires_action"}, True),
    ({"state": "unknown"}, True),
    ({"state": "running", "background": [{"type": "tool_call", "toolCallId": "c"}, {"type": "subagent", "sessionId": "s"},
                                          {"type": "_custom"}]}, True),
    ({"state": "running", "background": [{"type": "daemon"}]}, False),
    ({"state": "running", "background": [{"type": "terminal"}]}, False),
    ({"state": "running", "background": None}, True),
    ({"state": "_paused"}, True),
    ({"state": "sleeping"}, False),
    ({}, False),
])
def test_state_update(upd, ok):
    assert is_valid("StateUpdate", upd) is ok


# -- content blocks
@pytest.mark.parametrize("block,ok", [
    (TEXT, True),
    ({"type": "text"}, False),
    ({"type": "image", "data": "aGk=", "mimeType": "image/png"}, True),
    ({"type": "image", "data": "aGk="}, False),
    ({"type": "audio", "data": "aGk=", "mimeType": "audio/wav"}, True),
    ({"type": "resource_link", "name": "a.rs", "uri": "file:///p/a.rs", "icons": [{"src": "x.png", "theme": "dark"}]}, True),
    ({"type": "resource_link", "name": "a.rs"}, False),
    ({"type": "resource", "resource": {"uri": "file:///p/a.rs", "text": "fn main(){}"}}, True),
    ({"type": "resource", "resource": {"uri": "file:///p/a.bin", "blob": "AAAA", "mimeType": "application/octet-stream"}}, True),
    ({"type": "resource", "resource": {"uri": "file:///p/a.rs"}}, False),
    ({"type": "text", "text": "x", "annotations": {"audience": ["user"], "priority": 0.5}}, True),
    ({"type": "text", "text": "x", "annotations": {"audience": ["robot"]}}, False),
    ({"type": "_conformance/unknown_block"}, True),
    ({"type": "unknown_block"}, False),
    ({"text": "no type"}, False),
])
def test_content_block(block, ok):
    assert is_valid("ContentBlock", block) is ok


# -- tool call content, including the seed-only session reference
@pytest.mark.parametrize("content,ok", [
    ({"type": "content", "content": TEXT}, True),
    ({"type": "diff", "changes": [{"operation": "modify", "path": "/p/a.rs", "fileType": "text"},
                                  {"operation": "move", "oldPath": "/p/b", "path": "/p/c"}],
      "patch": {"format": "git_patch", "text": "--- a\n+++ b\n"}}, True),
    ({"type": "diff", "changes": [{"operation": "move", "path": "/p/c"}]}, False),
    ({"type": "diff", "changes": [{"operation": "rename", "path": "/p/c"}]}, False),
    ({"type": "diff", "changes": [{"operation": "_symlink", "target": "/x"}]}, True),
    ({"type": "diff"}, False),
    ({"type": "terminal", "terminalId": "t1"}, True),
    ({"type": "terminal"}, False),
    ({"type": "session", "sessionId": "child"}, True),
    ({"type": "session"}, False),
    ({"type": "_custom", "x": 1}, True),
    ({"type": "video"}, False),
])
def test_tool_call_content(content, ok):
    assert is_valid("ToolCallContent", content) is ok


def test_tool_call_update():
    assert is_valid("ToolCallUpdate", {"toolCallId": "c1"})
    assert is_valid("ToolCallUpdate", {"toolCallId": "c1", "kind": "_custom", "status": "paused"})
    assert not is_valid("ToolCallUpdate", {"toolCallId": "c1", "kind": "compile"})
    assert not is_valid("ToolCallUpdate", {"toolCallId": "c1", "status": "done"})
    assert not is_valid("ToolCallUpdate", {"toolCallId": "c1", "locations": [{"path": "/a", "line": 0}]})
    assert not is_valid("ToolCallUpdate", {"title": "x"})


# -- methods: params and results
@pytest.mark.parametrize("name,value,ok", [
    ("InitializeRequest", {"protocolVersion": 2, "info": {"name": "c", "version": "1"}, "capabilities": {}}, True),
    ("InitializeRequest", {"protocolVersion": 2, "info": {"name": "c", "version": "1"},
                           "capabilities": {"auth": {"terminal": {}}, "elicitation": {"form": {}, "url": None}}}, True),
    ("InitializeRequest", {"protocolVersion": 70000, "info": {"name": "c", "version": "1"}}, False),
    ("InitializeRequest", {"protocolVersion": -1, "info": {"name": "c", "version": "1"}}, False),
    ("InitializeRequest", {"protocolVersion": "2", "info": {"name": "c", "version": "1"}}, False),
    ("InitializeRequest", {"protocolVersion": 2}, False),
    ("InitializeResponse", {"protocolVersion": 2, "info": {"name": "a", "version": "1"}, "capabilities": {"session": {}}}, True),
    ("InitializeResponse", {"protocolVersion": 2, "info": {"name": "a"}}, False),
    ("InitializeResponse", {"protocolVersion": 2, "info": {"name": "a", "version": "1"},
                            "capabilities": {"session": {"prompt": {"image": {}}, "mcp": {"stdio": {}, "http": {}},
                                                         "delete": {}, "additionalDirectories": {},
                                                         "systemPrompt": {"mode": {"override": {}}}}},
                            "authMethods": [{"type": "agent", "methodId": "oauth", "name": "Log in"},
                                            {"type": "terminal", "methodId": "tty", "name": "Terminal", "args": ["--login"],
                                             "env": [{"name": "X", "value": "1"}]},
                                            {"type": "_vendor", "methodId": "v", "name": "Vendor"}]}, True),
    ("InitializeResponse", {"protocolVersion": 2, "info": {"name": "a", "version": "1"},
                            "authMethods": [{"type": "_vendor", "name": "Vendor"}]}, False),
    ("InitializeResponse", {"protocolVersion": 2, "info": {"name": "a", "version": "1"},
                            "authMethods": [{"type": "env_var", "methodId": "k", "name": "Key"}]}, False),
    ("LoginAuthRequest", {"methodId": "oauth"}, True),
    ("LoginAuthRequest", {}, False),
    ("LogoutAuthRequest", {}, True),
    ("LoginAuthResponse", {"_meta": None}, True),
    ("NewSessionRequest", {"cwd": "/p", "mcpServers": [{"type": "stdio", "name": "fs", "command": "/bin/fs", "args": []},
                                                       {"type": "http", "name": "web", "url": "https://x", "headers": []},
                                                       {"type": "acp", "name": "tunnel", "serverId": "s1"}]}, True),
    ("NewSessionRequest", {"cwd": "/p", "mcpServers": [{"type": "sse", "name": "old", "url": "https://x"}]}, False),
    ("NewSessionRequest", {"cwd": "/p", "mcpServers": [{"type": "stdio", "name": "fs"}]}, False),
    ("NewSessionRequest", {"cwd": "/p", "systemPrompt": {"mode": "append", "content": [TEXT]}}, True),
    ("NewSessionRequest", {"mcpServers": []}, False),
    ("NewSessionResponse", {"sessionId": "s"}, True),
    ("NewSessionResponse", {"sessionId": "s", "configOptions": None}, False),
    ("NewSessionResponse", {"sessionId": "s", "configOptions": [
        {"type": "select", "configId": "mode", "name": "Mode", "category": "mode", "currentValue": "code",
         "options": [{"value": "code", "name": "Code"}, {"value": "ask", "name": "Ask"}]},
        {"type": "select", "configId": "model", "name": "Model", "currentValue": "a",
         "options": [{"groupId": "g", "name": "G", "options": [{"value": "a", "name": "A"}]}]}]}, True),
    ("NewSessionResponse", {}, False),
    ("ListSessionsRequest", {}, True),
    ("ListSessionsRequest", {"cwd": None, "cursor": ""}, True),
    ("ListSessionsResponse", {"sessions": [{"sessionId": "s", "cwd": "/p"}], "nextCursor": None}, True),
    ("ListSessionsResponse", {"sessions": [{"sessionId": "s"}]}, False),
    ("ListSessionsResponse", {"sessions": None}, False),
    ("ListSessionsResponse", {}, False),
    ("DeleteSessionRequest", {"sessionId": "s"}, True),
    ("DeleteSessionRequest", {}, False),
    ("ResumeSessionRequest", {"sessionId": "s", "cwd": "/p", "replayFrom": {"type": "start"}}, True),
    ("ResumeSessionRequest", {"sessionId": "s", "cwd": "/p", "replayFrom": None}, True),
    ("ResumeSessionRequest", {"sessionId": "s", "cwd": "/p", "replayFrom": {"type": "_conformance/from_message"}}, True),
    ("ResumeSessionRequest", {"sessionId": "s", "cwd": "/p", "replayFrom": {"type": "from_message"}}, False),
    ("ResumeSessionRequest", {"sessionId": "s"}, False),
    ("ResumeSessionResponse", {}, True),
    ("CloseSessionRequest", {"sessionId": "s"}, True),
    ("CloseSessionResponse", {}, True),
    ("PromptRequest", {"sessionId": "s", "prompt": [TEXT]}, True),
    ("PromptRequest", {"sessionId": "s", "prompt": TEXT}, False),
    ("PromptRequest", {"prompt": [TEXT]}, False),
    ("PromptResponse", {"messageId": "m"}, True),
    ("PromptResponse", {}, False),
    ("PromptResponse", {"messageId": None}, False),
    ("SetSessionConfigOptionRequest", {"sessionId": "s", "configId": "mode", "type": "id", "value": "code"}, True),
    ("SetSessionConfigOptionRequest", {"sessionId": "s", "configId": "fast", "type": "boolean", "value": True}, True),
    ("SetSessionConfigOptionRequest", {"sessionId": "s", "configId": "fast", "type": "boolean", "value": "yes"}, False),
    ("SetSessionConfigOptionRequest", {"sessionId": "s", "configId": "mode", "type": "id"}, False),
    ("SetSessionConfigOptionRequest", {"sessionId": "s", "configId": "x", "type": "_range", "value": [1, 2]}, True),
    ("SetSessionConfigOptionRequest", {"sessionId": "s", "configId": "x", "type": "number", "value": 3}, False),
    ("SetSessionConfigOptionRequest", {"sessionId": "s", "type": "id", "value": "code"}, False),
    ("SetSessionConfigOptionResponse", {"configOptions": []}, True),
    ("SetSessionConfigOptionResponse", {}, False),
    ("CancelToolCallRequest", {"sessionId": "s", "toolCallId": "c"}, True),
    ("CancelToolCallRequest", {"sessionId": "s"}, False),
    ("CancelTerminalRequest", {"sessionId": "s", "terminalId": "t"}, True),
    ("CancelTerminalRequest", {"terminalId": "t"}, False),
    ("CancelSessionNotification", {"sessionId": "s"}, True),
    ("CancelSessionNotification", {}, False),
    ("CancelRequestNotification", {"requestId": 0}, True),
    ("CancelRequestNotification", {"requestId": "abc"}, True),
    ("CancelRequestNotification", {"requestId": None}, False),
    ("CancelRequestNotification", {"requestId": 1.5}, False),
    ("CompleteElicitationNotification", {"elicitationId": "e1"}, True),
    ("CompleteElicitationNotification", {}, False),
])
def test_method_payloads(name, value, ok):
    assert is_valid(name, value) is ok


@pytest.mark.parametrize("value,ok", [
    (0, True), ("req-1", True), (None, False), (1.5, False), (True, False), ([], False),
])
def test_request_id(value, ok):
    assert is_valid("RequestId", value) is ok


# -- permissions
PERM = {"sessionId": "s", "title": "Delete build/?", "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]}


@pytest.mark.parametrize("value,ok", [
    (PERM, True),
    ({**PERM, "subject": {"type": "tool_call", "toolCall": {"toolCallId": "c1"}}}, True),
    ({**PERM, "subject": {"type": "command", "command": "rm -rf build", "cwd": "/p"}}, True),
    ({**PERM, "subject": {"type": "command", "command": "rm -rf build"}}, False),
    ({**PERM, "subject": {"type": "file_write", "path": "/p"}}, False),
    ({**PERM, "subject": {"type": "_vendor"}}, True),
    ({**PERM, "options": [{"optionId": "x", "name": "X", "kind": "maybe"}]}, False),
    ({"sessionId": "s", "options": []}, False),
])
def test_request_permission_request(value, ok):
    assert is_valid("RequestPermissionRequest", value) is ok


@pytest.mark.parametrize("outcome,ok", [
    ({"outcome": "cancelled"}, True), ({"outcome": "selected", "optionId": "allow"}, True),
    ({"outcome": "selected"}, False), ({"outcome": "approved"}, False), ({"outcome": "_deferred"}, True), ({}, False),
])
def test_request_permission_outcome(outcome, ok):
    assert is_valid("RequestPermissionResponse", {"outcome": outcome}) is ok


# -- elicitation
FORM_SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "minLength": 1, "format": "email"},
    "count": {"type": "integer", "minimum": 0}, "ratio": {"type": "number"}, "ok": {"type": "boolean", "default": True},
    "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
    "color": {"type": "array", "items": {"anyOf": [{"const": "r", "title": "Red"}]}},
    "choice": {"type": "string", "oneOf": [{"const": "x", "title": "X"}]}},
    "required": ["name"]}


@pytest.mark.parametrize("value,ok", [
    ({"mode": "form", "message": "Who?", "sessionId": "s", "requestedSchema": FORM_SCHEMA}, True),
    ({"mode": "form", "message": "Who?", "requestId": 3, "requestedSchema": FORM_SCHEMA}, True),
    ({"mode": "form", "message": "Who?", "sessionId": "s", "requestId": 3, "requestedSchema": FORM_SCHEMA}, False),
    ({"mode": "form", "message": "Who?", "requestedSchema": FORM_SCHEMA}, False),
    ({"mode": "form", "message": "Who?", "sessionId": "s"}, False),
    ({"mode": "form", "message": "Who?", "sessionId": "s",
      "requestedSchema": {"type": "object", "properties": {"f": {"type": "file"}}}}, False),
    ({"mode": "form", "message": "Who?", "sessionId": "s",
      "requestedSchema": {"type": "array", "properties": {}}}, False),
    ({"mode": "url", "message": "Log in", "sessionId": "s", "toolCallId": "c", "elicitationId": "e", "url": "https://x"}, True),
    ({"mode": "url", "message": "Log in", "sessionId": "s", "url": "https://x"}, False),
    ({"mode": "popup", "message": "x", "sessionId": "s"}, False),
    ({"mode": "_vendor", "message": "x"}, True),
    ({"mode": "url", "sessionId": "s", "elicitationId": "e", "url": "https://x"}, False),
])
def test_create_elicitation_request(value, ok):
    assert is_valid("CreateElicitationRequest", value) is ok


@pytest.mark.parametrize("value,ok", [
    ({"action": "accept", "content": {"name": "a@b.c", "count": 2, "tags": ["a"], "ok": False}}, True),
    ({"action": "accept"}, True), ({"action": "decline"}, True), ({"action": "cancel"}, True),
    ({"action": "_later"}, True), ({"action": "ignore"}, False), ({}, False),
])
def test_create_elicitation_response(value, ok):
    assert is_valid("CreateElicitationResponse", value) is ok


# -- errors
@pytest.mark.parametrize("value,ok", [
    ({"code": -32002, "message": "Session not found", "data": {"sessionId": "sess_nope"}}, True),
    ({"code": -32022, "message": "Unsupported protocol version", "data": {"requested": 0, "supported": [2]}}, True),
    ({"code": -32022, "message": "Unsupported protocol version", "data": {"supported": [2]}}, False),
    ({"code": -32022, "message": "Unsupported protocol version"}, True),
    ({"code": -32601, "message": "Method not found"}, True),
    ({"code": -1, "message": "custom", "data": "anything"}, True),
    ({"code": "oops", "message": "x"}, False),
    ({"code": -32600}, False),
    ({"message": "x"}, False),
])
def test_error(value, ok):
    assert is_valid("Error", value) is ok


def test_error_data_shapes():
    assert is_valid("SessionNotFoundErrorData", {"sessionId": "sess_nope"})
    assert not is_valid("SessionNotFoundErrorData", {})
    assert is_valid("UnsupportedProtocolVersionErrorData", {"requested": 3, "supported": [1, 2]})
    assert not is_valid("UnsupportedProtocolVersionErrorData", {"requested": 3})
    assert not is_valid("UnsupportedProtocolVersionErrorData", {"requested": 3, "supported": ["2"]})


# -- commands, config options, plans
def test_available_commands():
    assert is_valid("AvailableCommand", {"type": "command", "name": "help", "description": "Show help"})
    assert not is_valid("AvailableCommand", {"name": "help", "description": "Show help"})
    assert not is_valid("AvailableCommand", {"type": "command", "name": "help"})
    assert is_valid("AvailableCommand", {"type": "_macro", "name": "m", "description": "d"})
    assert not is_valid("AvailableCommand", {"type": "_macro", "name": "m"})
    assert not is_valid("AvailableCommandInput", {"type": "choices"})


def test_plans():
    assert is_valid("PlanUpdateContent", {"type": "markdown", "planId": "p", "content": "# Plan"})
    assert is_valid("PlanUpdateContent", {"type": "file", "planId": "p", "uri": "file:///p/PLAN.md"})
    assert is_valid("PlanUpdateContent", {"type": "_graph", "planId": "p"})
    assert not is_valid("PlanUpdateContent", {"type": "_graph"})
    assert not is_valid("PlanUpdateContent", {"type": "graph", "planId": "p"})
    assert not is_valid("PlanEntry", {"content": "x", "priority": "urgent", "status": "pending"})


def test_config_options():
    base = {"configId": "c", "name": "C"}
    assert is_valid("SessionConfigOption", {**base, "type": "_slider", "min": 0})
    assert not is_valid("SessionConfigOption", {**base, "type": "slider"})
    assert not is_valid("SessionConfigOption", {"type": "boolean", "currentValue": True})
    assert not is_valid("SessionConfigOption", {**base, "type": "boolean", "currentValue": "on"})
    assert not is_valid("SessionConfigOption", {**base, "type": "select", "currentValue": "a"})


def test_checked_in_schema_is_what_the_builder_writes():
    """schema/build_schema.py is the source; the JSON beside it must be its current output."""
    import subprocess
    import sys
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, str(root / "schema" / "build_schema.py")], capture_output=True, check=True)
    assert out.stdout == (root / "schema" / "acp-v2.schema.json").read_bytes(), \
        "schema/acp-v2.schema.json is stale: regenerate it with python schema/build_schema.py"
