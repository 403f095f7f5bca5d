"""Builder for schema/acp-v2.schema.json (written by hand from the seeds and WIRE-NOTES; not derived
from the npm schema). Run from the repo root: python schema/build_schema.py > schema/acp-v2.schema.json"""
import json
import sys

D = {}


def ref(n):
    return {"$ref": f"#/$defs/{n}"}


def nul(x):
    return {"anyOf": [x, {"type": "null"}]}


def arr(x, **kw):
    return {"type": "array", "items": x, **kw}


def narr(x):
    return {"type": ["array", "null"], "items": x}


S = {"type": "string"}
NS = {"type": ["string", "null"]}
# "Format: uri" in the schema reference: an annotation (validators do not assert it; the fuzzer
# generates URIs there, since a peer may rightly reject a string that is not one)
URI = {"type": "string", "format": "uri"}
NURI = {"type": ["string", "null"], "format": "uri"}
INT = {"type": "integer"}
NINT = {"type": ["integer", "null"]}
NNUM = {"type": ["number", "null"]}
BOOL = {"type": "boolean"}
NBOOL = {"type": ["boolean", "null"]}
META = {"type": ["object", "null"], "description": "Reserved for extension metadata; omitted and null mean none."}
ANY = {}


def obj(name, desc, props=None, required=(), meta=True, **extra):
    p = dict(props or {})
    if meta:
        p["_meta"] = META
    d = {"description": desc, "type": "object", "properties": p}
    if required:
        d["required"] = list(required)
    d.update(extra)
    D[name] = d
    return d


def string(name, desc, **extra):
    D[name] = {"description": desc, "type": "string", **extra}


def open_enum(name, desc, values, typ="string"):
    D[name] = {
        "description": desc,
        "anyOf": [{"enum": list(values)}, {"type": "string", "pattern": "^_"}],
    }


def branch(disc, value, target=None, extra_props=None, required=()):
    b = {"type": "object", "properties": {disc: {"const": value}}, "required": [disc, *required]}
    if extra_props:
        b["properties"].update(extra_props)
    if target:
        b["allOf"] = [ref(target)]
    return b


def catch_all(disc, shared_props=None, shared_required=()):
    b = {
        "title": "custom",
        "description": f"Implementation-specific variant: `{disc}` begins with `_`.",
        "type": "object",
        "properties": {disc: {"type": "string", "pattern": "^_"}},
        "required": [disc, *shared_required],
    }
    if shared_props:
        b["properties"].update(shared_props)
    return b


def union(name, desc, disc, variants, custom_props=None, custom_required=(), base=None, custom=True):
    """variants: list of (value, target_def_or_None, extra_props, extra_required)."""
    branches = []
    for v in variants:
        value, target = v[0], v[1]
        extra_props = v[2] if len(v) > 2 else None
        extra_req = v[3] if len(v) > 3 else ()
        branches.append(branch(disc, value, target, extra_props, extra_req))
    if custom:
        branches.append(catch_all(disc, custom_props, custom_required))
    d = {"description": desc}
    if base:
        d.update(base)
    d["x-discriminator"] = disc
    d["anyOf"] = branches
    D[name] = d
    return d


# ---------------------------------------------------------------- primitives and ids
D["RequestId"] = {
    "description": "Identifier of a JSON-RPC request: an integer or a string, never null. Each side picks ids for its own requests.",
    "anyOf": [{"type": "integer"}, {"type": "string"}],
}
D["ProtocolVersion"] = {
    "description": "Major protocol version number, bumped only for breaking changes.",
    "type": "integer", "minimum": 0, "maximum": 65535,
}
D["AbsolutePath"] = {
    "description": "A filesystem path in the native syntax of the agent's machine; it must be absolute and is not a URI.",
    "type": "string", "x-absolute-path": True,
}
string("SessionId", "Opaque identifier of a session.")
string("MessageId", "Identifier of a message in the ACP conversation, chosen by the agent.")
string("ToolCallId", "Identifier of a tool call, unique within its session.")
string("TerminalId", "Identifier of an agent-owned terminal.")
string("SessionListCursor", "Opaque pagination cursor for session/list; the empty string is a real cursor.")
string("MediaType", "A MIME type such as text/plain or image/png.")
string("AuthMethodId", "Identifier of an authentication method advertised by the agent.")
string("PermissionOptionId", "Identifier of one option in a permission request.")
string("ElicitationId", "Identifier of a URL-mode elicitation, used to report its completion.")
string("PlanId", "Identifier of a plan, used to update or remove it.")
string("CompactionId", "Agent-owned identifier of a context compaction, unique within the session.")
string("SessionConfigId", "Identifier of a session configuration option.")
string("SessionConfigValueId", "Identifier of one selectable value of a select config option.")
string("SessionConfigGroupId", "Identifier of a group of select values.")
string("McpServerAcpId", "Identifier of an MCP server that is reached through the ACP connection itself (draft).")

D["ExtRequest"] = {"description": "Parameters of a custom (`_`-prefixed) request outside the ACP spec: any JSON value."}
D["ExtResponse"] = {"description": "Result of a custom (`_`-prefixed) request outside the ACP spec: any JSON value."}
D["ExtNotification"] = {"description": "Parameters of a custom (`_`-prefixed) notification outside the ACP spec: any JSON value."}

# ---------------------------------------------------------------- errors
D["ErrorCode"] = {
    "description": "Integer error code: the JSON-RPC codes, -32800 for cancelled requests, and the ACP codes -32000, -32002 and -32022; other integers are allowed.",
    "anyOf": [
        {"enum": [-32700, -32600, -32601, -32602, -32603, -32800, -32000, -32002, -32022]},
        {"type": "integer"},
    ],
}
D["ErrorData"] = {
    "description": "Extra error details: the shapes ACP defines for -32022 and -32002, or any other value.",
    "anyOf": [ref("UnsupportedProtocolVersionErrorData"), ref("SessionNotFoundErrorData"), {}],
}
obj("Error", "A JSON-RPC error object with an integer code, a short message and optional data.",
    {"code": ref("ErrorCode"), "message": S, "data": nul(ref("ErrorData"))},
    ["code", "message"], meta=False,
    allOf=[{
        "if": {"properties": {"code": {"const": -32022}, "data": {"type": "object"}}, "required": ["code", "data"]},
        "then": {"properties": {"data": ref("UnsupportedProtocolVersionErrorData")}},
    }])
obj("UnsupportedProtocolVersionErrorData",
    "Data of a -32022 error: the version the client asked for and the versions the agent supports.",
    {"requested": ref("ProtocolVersion"), "supported": arr(ref("ProtocolVersion"))}, ["requested", "supported"])
obj("SessionNotFoundErrorData",
    "Data of a -32002 error raised because a session-scoped request named an unknown or inactive session.",
    {"sessionId": ref("SessionId")}, ["sessionId"])

# ---------------------------------------------------------------- implementation and capabilities
obj("Implementation", "Name and version of a client or agent implementation.",
    {"name": S, "title": NS, "version": S}, ["name", "version"])


def leaf(name, desc):
    obj(name, desc + " An empty object means supported; omitted or null means not supported.")


obj("ClientCapabilities", "Optional features the client supports, sent in initialize.",
    {"auth": nul(ref("ClientAuthCapabilities")), "elicitation": nul(ref("ElicitationCapabilities"))})
obj("ClientAuthCapabilities", "Authentication features the client supports.",
    {"terminal": nul(ref("TerminalAuthCapabilities"))})
leaf("TerminalAuthCapabilities", "Whether the client can run terminal-based authentication methods.")
obj("ElicitationCapabilities", "Which elicitation modes the client can present to the user.",
    {"form": nul(ref("ElicitationFormCapabilities")), "url": nul(ref("ElicitationUrlCapabilities"))})
leaf("ElicitationFormCapabilities", "Whether the client supports form elicitations.")
leaf("ElicitationUrlCapabilities", "Whether the client supports URL elicitations.")
obj("AgentCapabilities", "Optional features the agent supports, returned by initialize.",
    {"session": nul(ref("SessionCapabilities")), "auth": nul(ref("AgentAuthCapabilities"))})
obj("AgentAuthCapabilities",
    "Authentication extensions of the agent; auth/login and auth/logout are advertised by authMethods instead.")
obj("SessionCapabilities",
    "Session features of the agent; an empty object commits the agent to the baseline session methods.",
    {"prompt": nul(ref("PromptCapabilities")), "mcp": nul(ref("McpCapabilities")),
     "delete": nul(ref("SessionDeleteCapabilities")),
     "additionalDirectories": nul(ref("SessionAdditionalDirectoriesCapabilities")),
     "systemPrompt": nul(ref("SessionSystemPromptCapabilities"))})
obj("PromptCapabilities", "Content block types the agent accepts in prompts beyond text and resource links.",
    {"image": nul(ref("PromptImageCapabilities")), "audio": nul(ref("PromptAudioCapabilities")),
     "embeddedContext": nul(ref("PromptEmbeddedContextCapabilities"))})
leaf("PromptImageCapabilities", "Whether prompts may contain image blocks.")
leaf("PromptAudioCapabilities", "Whether prompts may contain audio blocks.")
leaf("PromptEmbeddedContextCapabilities", "Whether prompts may contain embedded resource blocks.")
obj("McpCapabilities", "MCP server transports the agent accepts on session setup.",
    {"stdio": nul(ref("McpStdioCapabilities")), "http": nul(ref("McpHttpCapabilities")),
     "acp": nul(ref("McpAcpCapabilities"))})
leaf("McpStdioCapabilities", "Whether the agent accepts stdio MCP servers.")
leaf("McpHttpCapabilities", "Whether the agent accepts HTTP MCP servers.")
leaf("McpAcpCapabilities", "Whether the agent accepts MCP servers tunnelled over ACP (draft).")
leaf("SessionDeleteCapabilities", "Whether the agent supports session/delete.")
leaf("SessionAdditionalDirectoriesCapabilities", "Whether the agent accepts additionalDirectories on session setup.")
obj("SessionSystemPromptCapabilities",
    "Whether the agent accepts a client system prompt; an empty object means append mode only.",
    {"mode": nul(ref("SessionSystemPromptModeCapabilities"))})
obj("SessionSystemPromptModeCapabilities", "System prompt modes the agent supports besides append.",
    {"override": nul(ref("SessionSystemPromptOverrideCapabilities"))})
leaf("SessionSystemPromptOverrideCapabilities", "Whether the client system prompt may replace the agent's default instructions.")

# ---------------------------------------------------------------- auth
union("AuthMethod", "An authentication method the agent advertises, selected by `type`.", "type",
      [("terminal", "AuthMethodTerminal"), ("agent", "AuthMethodAgent")],
      custom_props={"methodId": ref("AuthMethodId"), "name": S}, custom_required=("methodId", "name"))
obj("AuthMethodTerminal", "Authentication performed by the client running the agent binary in a terminal with extra arguments and environment.",
    {"methodId": ref("AuthMethodId"), "name": S, "description": NS, "args": arr(S), "env": arr(ref("EnvVariable"))},
    ["methodId", "name"])
obj("AuthMethodAgent", "Authentication handled by the agent itself through auth/login.",
    {"methodId": ref("AuthMethodId"), "name": S, "description": NS}, ["methodId", "name"])
obj("EnvVariable", "An environment variable given to a process.", {"name": S, "value": S}, ["name", "value"])

# ---------------------------------------------------------------- content
union("ContentBlock", "A piece of displayable content (text, image, audio, resource link or embedded resource), selected by `type`.",
      "type", [("text", "TextContent"), ("image", "ImageContent"), ("audio", "AudioContent"),
               ("resource_link", "ResourceLink"), ("resource", "EmbeddedResource")])
obj("TextContent", "Plain or Markdown text.", {"text": S, "annotations": nul(ref("Annotations"))}, ["text"])
obj("ImageContent", "Base64-encoded image data.",
    {"data": S, "mimeType": ref("MediaType"), "uri": NURI, "annotations": nul(ref("Annotations"))}, ["data", "mimeType"])
obj("AudioContent", "Base64-encoded audio data.",
    {"data": S, "mimeType": ref("MediaType"), "annotations": nul(ref("Annotations"))}, ["data", "mimeType"])
obj("ResourceLink", "A reference to a resource the receiver may be able to read.",
    {"name": S, "uri": URI, "title": NS, "description": NS, "icons": narr(ref("Icon")),
     "mimeType": nul(ref("MediaType")), "size": NINT, "annotations": nul(ref("Annotations"))}, ["name", "uri"])
obj("EmbeddedResource", "The full contents of a resource, embedded in the message.",
    {"resource": ref("EmbeddedResourceResource"), "annotations": nul(ref("Annotations"))}, ["resource"])
D["EmbeddedResourceResource"] = {
    "description": "Embedded resource payload: text contents or base64 blob contents.",
    "anyOf": [ref("TextResourceContents"), ref("BlobResourceContents")],
}
obj("TextResourceContents", "Text contents of a resource.", {"text": S, "uri": URI, "mimeType": nul(ref("MediaType"))}, ["text", "uri"])
obj("BlobResourceContents", "Base64 binary contents of a resource.", {"blob": S, "uri": URI, "mimeType": nul(ref("MediaType"))}, ["blob", "uri"])
obj("Annotations", "Display and routing hints for content: audience, modification time and priority.",
    {"audience": narr(ref("Role")), "lastModified": NS, "priority": NNUM})
open_enum("Role", "Who content is meant for in a conversation.", ["assistant", "user"])
obj("Icon", "An icon a user interface may display, optionally sized and themed.",
    {"src": S, "mimeType": nul(ref("MediaType")), "sizes": narr(S), "theme": nul(ref("IconTheme"))}, ["src"])
open_enum("IconTheme", "The UI theme an icon is designed for.", ["light", "dark"])

# ---------------------------------------------------------------- tool calls
open_enum("ToolKind", "Category of a tool, used to pick icons and presentation.",
          ["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"])
open_enum("ToolCallStatus", "Execution status of a tool call.",
          ["pending", "in_progress", "paused", "completed", "failed", "cancelled"])
TOOL_CALL_FIELDS = {
    "toolCallId": ref("ToolCallId"), "name": NS, "title": NS, "kind": nul(ref("ToolKind")),
    "status": nul(ref("ToolCallStatus")), "content": narr(ref("ToolCallContent")),
    "locations": narr(ref("ToolCallLocation")), "rawInput": ANY, "rawOutput": ANY,
    "capabilities": nul(ref("ToolCallCapabilities")),
}
obj("ToolCallUpdate", "Creates or patches a tool call identified by toolCallId; only the id is required.",
    TOOL_CALL_FIELDS, ["toolCallId"])
union("ToolCallContent", "One item of tool call output (content, diff, terminal or session reference), selected by `type`.",
      "type", [("content", "Content"), ("diff", "Diff"), ("terminal", "Terminal"), ("session", "SessionReference")])
obj("Content", "A standard content block produced by a tool call.", {"content": ref("ContentBlock")}, ["content"])
obj("Diff", "File changes made by a tool call, with an optional textual patch.",
    {"changes": arr(ref("DiffChange")), "patch": nul(ref("DiffPatch"))}, ["changes"])
union("DiffChange", "One file-level change of a diff, selected by `operation`.", "operation",
      [("add", "DiffPathChange"), ("delete", "DiffPathChange"), ("modify", "DiffPathChange"),
       ("move", "DiffPathPairChange"), ("copy", "DiffPathPairChange")],
      base={"type": "object", "properties": {"fileType": nul(ref("DiffFileType")), "mimeType": nul(ref("MediaType")),
                                               "_meta": META}})
obj("DiffPathChange", "Target path of an add, delete or modify change.", {"path": ref("AbsolutePath")}, ["path"], meta=False)
obj("DiffPathPairChange", "Source and destination paths of a move or copy change.",
    {"oldPath": ref("AbsolutePath"), "path": ref("AbsolutePath")}, ["oldPath", "path"], meta=False)
open_enum("DiffFileType", "Kind of file content involved in a diff change.", ["text", "binary", "directory", "symlink"])
obj("DiffPatch", "A textual patch in a named format.", {"format": ref("DiffPatchFormat"), "text": S}, ["format", "text"])
open_enum("DiffPatchFormat", "Format of a textual patch.", ["git_patch"])
obj("Terminal", "Display-only reference to an agent-owned terminal.", {"terminalId": ref("TerminalId")}, ["terminalId"])
obj("SessionReference", "Display-only reference to another known session (such as a subagent) that the tool call works with.",
    {"sessionId": ref("SessionId")}, ["sessionId"])
obj("ToolCallLocation", "A file (and optional 1-based line) a tool call reads or changes.",
    {"path": ref("AbsolutePath"), "line": {"type": ["integer", "null"], "minimum": 1}}, ["path"])
obj("ToolCallCapabilities", "Controls the client may use on a tool call.", {"cancel": nul(ref("ToolCallCancelCapabilities"))})
leaf("ToolCallCancelCapabilities", "Whether the tool call can be cancelled with tool_call/cancel.")
obj("ToolCallContentChunk", "Appends one item of content to a tool call.",
    {"toolCallId": ref("ToolCallId"), "content": ref("ToolCallContent")}, ["toolCallId", "content"])

# ---------------------------------------------------------------- terminals
obj("TerminalUpdate", "Creates or patches an agent-owned terminal identified by terminalId.",
    {"terminalId": ref("TerminalId"), "command": NS, "cwd": nul(ref("AbsolutePath")), "output": nul(ref("TerminalOutput")),
     "exitStatus": nul(ref("TerminalExitStatus")), "size": nul(ref("TerminalSize")),
     "capabilities": nul(ref("TerminalCapabilities"))}, ["terminalId"])
obj("TerminalOutput", "Complete replacement output of a terminal.", {"data": S}, ["data"])
obj("TerminalExitStatus", "How a terminal's process ended: exit code and/or signal.", {"exitCode": NINT, "signal": NS})
obj("TerminalSize", "Terminal dimensions in columns and rows.",
    {"cols": {"type": "integer", "minimum": 0}, "rows": {"type": "integer", "minimum": 0}}, ["cols", "rows"])
obj("TerminalCapabilities", "Controls the client may use on a terminal.", {"cancel": nul(ref("TerminalCancelCapabilities"))})
leaf("TerminalCancelCapabilities", "Whether the terminal can be cancelled with terminal/cancel.")
obj("TerminalOutputChunk", "Appends output data to a terminal.", {"terminalId": ref("TerminalId"), "data": S}, ["terminalId", "data"])

# ---------------------------------------------------------------- plans, commands, config
obj("PlanUpdate", "Creates or replaces a plan.", {"plan": ref("PlanUpdateContent")}, ["plan"])
union("PlanUpdateContent", "The content of a plan (entries, file or markdown), selected by `type`.", "type",
      [("items", "PlanItems"), ("file", "PlanFile"), ("markdown", "PlanMarkdown")],
      custom_props={"planId": ref("PlanId")}, custom_required=("planId",))
obj("PlanItems", "A plan given as a list of entries.", {"planId": ref("PlanId"), "entries": arr(ref("PlanEntry"))}, ["planId", "entries"])
obj("PlanFile", "A plan stored in a file the client can open (draft).", {"planId": ref("PlanId"), "uri": S}, ["planId", "uri"])
obj("PlanMarkdown", "A plan given as Markdown text (draft).", {"planId": ref("PlanId"), "content": S}, ["planId", "content"])
obj("PlanEntry", "One task of a plan with its priority and status.",
    {"content": S, "priority": ref("PlanEntryPriority"), "status": ref("PlanEntryStatus")}, ["content", "priority", "status"])
open_enum("PlanEntryPriority", "Relative importance of a plan entry.", ["high", "medium", "low"])
open_enum("PlanEntryStatus", "Progress of a plan entry.", ["pending", "in_progress", "completed", "cancelled"])
obj("PlanRemoved", "Removes the plan with the given id (draft).", {"planId": ref("PlanId")}, ["planId"])
obj("AvailableCommandsUpdate", "Replaces the list of commands the agent offers.",
    {"availableCommands": arr(ref("AvailableCommand"))}, ["availableCommands"])
union("AvailableCommand", "A command the agent advertises, selected by `type`.", "type", [("command", "Command")],
      custom_props={"name": S, "description": S}, custom_required=("name", "description"))
obj("Command", "A slash command the user can invoke from a prompt.",
    {"name": S, "description": S, "input": nul(ref("AvailableCommandInput"))}, ["name", "description"])
union("AvailableCommandInput", "How a command takes input, selected by `type`.", "type", [("text", "TextCommandInput")])
obj("TextCommandInput", "The text after the command name is the command's input; hint describes it.", {"hint": S}, ["hint"])
obj("ConfigOptionUpdate", "Replaces the session's configuration options.",
    {"configOptions": arr(ref("SessionConfigOption"))}, ["configOptions"])
union("SessionConfigOption", "A session configuration option (select or boolean), selected by `type`.", "type",
      [("select", "SessionConfigSelect"), ("boolean", "SessionConfigBoolean")],
      base={"type": "object",
            "properties": {"configId": ref("SessionConfigId"), "name": S, "description": NS,
                           "category": nul(ref("SessionConfigOptionCategory")), "_meta": META},
            "required": ["configId", "name"]})
open_enum("SessionConfigOptionCategory", "Semantic category of a config option, used for presentation.",
          ["mode", "model", "model_config", "thought_level"])
obj("SessionConfigSelect", "A single-choice option: its current value and the values to choose from.",
    {"currentValue": ref("SessionConfigValueId"), "options": ref("SessionConfigSelectOptions")}, ["currentValue", "options"], meta=False)
obj("SessionConfigBoolean", "An on/off option and its current value.", {"currentValue": BOOL}, ["currentValue"], meta=False)
D["SessionConfigSelectOptions"] = {
    "description": "The values of a select option: a flat non-empty list or a non-empty list of groups.",
    "anyOf": [arr(ref("SessionConfigSelectOption"), minItems=1), arr(ref("SessionConfigSelectGroup"), minItems=1)],
}
obj("SessionConfigSelectOption", "One selectable value.", {"value": ref("SessionConfigValueId"), "name": S, "description": NS}, ["value", "name"])
obj("SessionConfigSelectGroup", "A named group of selectable values.",
    {"groupId": ref("SessionConfigGroupId"), "name": S, "options": arr(ref("SessionConfigSelectOption"))}, ["groupId", "name", "options"])

# ---------------------------------------------------------------- other session updates
CHUNK = {"messageId": ref("MessageId"), "content": ref("ContentBlock")}
MSG = {"messageId": ref("MessageId"), "content": narr(ref("ContentBlock"))}
obj("ContentChunk", "One content block appended to the message with the given id.", CHUNK, ["messageId", "content"])
obj("UserMessage", "Creates or patches a user message; a content array replaces the message's content.", MSG, ["messageId"])
obj("AgentMessage", "Creates or patches an agent message; a content array replaces the message's content.", MSG, ["messageId"])
obj("AgentThought", "Creates or patches an agent reasoning message; a content array replaces its content.", MSG, ["messageId"])
obj("SessionInfoUpdate", "Patches session metadata such as the title and the last activity time.", {"title": NS, "updatedAt": NS})
obj("UsageUpdate", "Context window usage and cumulative cost of the session.",
    {"used": {"type": "integer", "minimum": 0}, "size": {"type": "integer", "minimum": 0}, "cost": nul(ref("Cost"))}, ["used", "size"])
obj("Cost", "An amount of money in a currency.", {"amount": {"type": "number"}, "currency": S}, ["amount", "currency"])
obj("Notice", "A fire-and-forget message for the user; live only, never part of history.",
    {"severity": ref("NoticeSeverity"), "title": {"type": "string", "minLength": 1}, "description": NS}, ["severity", "title"])
open_enum("NoticeSeverity", "Severity hint of a notice.", ["info", "warning", "error"])
obj("CompactionUpdate", "Creates or patches a context compaction and its status.",
    {"compactionId": ref("CompactionId"), "status": ref("CompactionStatus"), "summary": narr(ref("ContentBlock")), "error": NS},
    ["compactionId", "status"])
open_enum("CompactionStatus", "Lifecycle state of a context compaction.", ["in_progress", "completed", "failed", "cancelled"])
obj("CompactionSummaryChunk", "Appends one content block to a compaction's summary.",
    {"compactionId": ref("CompactionId"), "content": ref("ContentBlock")}, ["compactionId", "content"])
obj("SubagentUpdate", "Announces or patches a child (subagent) session of this session.",
    {"sessionId": ref("SessionId"), "title": NS, "description": NS, "capabilities": nul(ref("SubagentSessionCapabilities")),
     "state": nul(ref("StateUpdate")), "cwd": nul(ref("AbsolutePath")), "additionalDirectories": narr(ref("AbsolutePath"))},
    ["sessionId"])
obj("SubagentSessionCapabilities", "Controls the client may use on a subagent session.", {"cancel": nul(ref("SessionCancelCapabilities"))})
leaf("SessionCancelCapabilities", "Whether the subagent session can be cancelled by the client.")
obj("SessionMessage", "Creates or patches a message exchanged between sessions.",
    {"messageId": ref("MessageId"), "senderSessionId": nul(ref("SessionId")), "recipientSessionId": nul(ref("SessionId")),
     "senderMessageId": nul(ref("MessageId")), "recipientMessageId": nul(ref("MessageId")), "content": narr(ref("ContentBlock"))},
    ["messageId"])
obj("SessionMessageChunk", "Appends one content block to a message exchanged between sessions.", CHUNK, ["messageId", "content"])
obj("ReplayComplete", "Marks the end of the history replayed for a session/resume with replayFrom; sent once, even for an empty history.")

# ---------------------------------------------------------------- state updates
BG = {"background": narr(ref("BackgroundWork"))}
union("StateUpdate", "Snapshot of the session's foreground activity, selected by `state`.", "state",
      [("running", "RunningStateUpdate"), ("idle", "IdleStateUpdate"),
       ("requires_action", "RequiresActionStateUpdate"), ("unknown", "UnknownStateUpdate")],
      custom_props=BG)
obj("RunningStateUpdate", "Foreground work is in progress.", BG)
obj("RequiresActionStateUpdate", "Foreground work is blocked waiting for the user.", BG)
obj("UnknownStateUpdate", "The agent cannot tell whether foreground work is active (draft).", BG)
IDLE_BASE = obj("IdleStateUpdate", "No foreground work is active; stopReason tells why the work that just ended stopped.",
                {"usage": nul(ref("Usage")), **BG, "stopReason": NS})
del D["IdleStateUpdate"]
STOP = ["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error"]
union("IdleStateUpdate", IDLE_BASE["description"], "stopReason",
      [(v, "ErrorStopReason" if v == "error" else None) for v in STOP],
      base={"type": "object", "properties": IDLE_BASE["properties"]})
D["IdleStateUpdate"]["anyOf"].append({
    "title": "not reported",
    "description": "No stop reason: omitted or null.",
    "type": "object", "properties": {"stopReason": {"type": "null"}},
})
obj("ErrorStopReason", "Failure details for an idle update whose stopReason is error.", {"error": nul(ref("Error"))}, meta=False)
open_enum("StopReason", "Why foreground work stopped (the stopReason values of IdleStateUpdate).", STOP)
obj("Usage", "Token counts of completed foreground work (draft).",
    {"totalTokens": INT, "inputTokens": INT, "outputTokens": INT, "thoughtTokens": NINT,
     "cachedReadTokens": NINT, "cachedWriteTokens": NINT}, ["totalTokens", "inputTokens", "outputTokens"])
union("BackgroundWork", "One item of work running independently of the foreground, selected by `type`.", "type",
      [("terminal", "BackgroundTerminal"), ("tool_call", "BackgroundToolCall"), ("subagent", "BackgroundSubagent")])
obj("BackgroundTerminal", "A terminal still running in the background.", {"terminalId": ref("TerminalId")}, ["terminalId"])
obj("BackgroundToolCall", "A tool call still running in the background.", {"toolCallId": ref("ToolCallId")}, ["toolCallId"])
obj("BackgroundSubagent", "A subagent session still working in the background.", {"sessionId": ref("SessionId")}, ["sessionId"])

union("SessionUpdate", "One update about a session (messages, state, tool calls, terminals, plans, ...), selected by `sessionUpdate`.",
      "sessionUpdate", [
          ("user_message_chunk", "ContentChunk"), ("user_message", "UserMessage"),
          ("agent_message_chunk", "ContentChunk"), ("agent_message", "AgentMessage"),
          ("agent_thought_chunk", "ContentChunk"), ("agent_thought", "AgentThought"),
          ("state_update", "StateUpdate"), ("tool_call_content_chunk", "ToolCallContentChunk"),
          ("tool_call_update", "ToolCallUpdate"), ("terminal_update", "TerminalUpdate"),
          ("terminal_output_chunk", "TerminalOutputChunk"), ("plan_update", "PlanUpdate"),
          ("plan_removed", "PlanRemoved"), ("available_commands_update", "AvailableCommandsUpdate"),
          ("config_option_update", "ConfigOptionUpdate"), ("session_info_update", "SessionInfoUpdate"),
          ("usage_update", "UsageUpdate"), ("notice", "Notice"), ("compaction_update", "CompactionUpdate"),
          ("compaction_summary_chunk", "CompactionSummaryChunk"), ("subagent_update", "SubagentUpdate"),
          ("session_message", "SessionMessage"), ("session_message_chunk", "SessionMessageChunk"),
          ("replay_complete", "ReplayComplete"),
      ])

# ---------------------------------------------------------------- MCP, system prompt, replay, session info
union("McpServer", "An MCP server the agent should connect to, selected by its transport `type`.", "type",
      [("http", "McpServerHttp"), ("acp", "McpServerAcp"), ("stdio", "McpServerStdio")])
obj("McpServerHttp", "An MCP server reached over HTTP.", {"name": S, "url": URI, "headers": arr(ref("HttpHeader"))}, ["name", "url"])
obj("McpServerAcp", "An MCP server tunnelled through the ACP connection (draft).", {"name": S, "serverId": ref("McpServerAcpId")}, ["name", "serverId"])
obj("McpServerStdio", "An MCP server the agent starts as a subprocess speaking over stdio.",
    {"name": S, "command": ref("AbsolutePath"), "args": arr(S), "env": arr(ref("EnvVariable"))}, ["name", "command"])
obj("HttpHeader", "An HTTP header sent to an MCP server.", {"name": S, "value": S}, ["name", "value"])
obj("SystemPrompt", "Client-supplied system instructions and how they combine with the agent's own.",
    {"mode": ref("SystemPromptMode"), "content": arr(ref("ContentBlock"))}, ["mode", "content"])
open_enum("SystemPromptMode", "Whether a client system prompt is appended to or replaces the agent's defaults.", ["append", "override"])
union("ReplayFrom", "Inclusive cursor saying where replayed history starts, selected by `type`.", "type", [("start", "ReplayFromStart")])
obj("ReplayFromStart", "Replay all retained history from the beginning.")
obj("SessionInfo", "A session as listed by session/list.",
    {"sessionId": ref("SessionId"), "cwd": ref("AbsolutePath"), "additionalDirectories": arr(ref("AbsolutePath")),
     "title": NS, "updatedAt": NS}, ["sessionId", "cwd"])

# ---------------------------------------------------------------- permissions
union("RequestPermissionSubject", "What a permission request is about (a tool call or a command), selected by `type`.", "type",
      [("tool_call", "ToolCallPermissionSubject"), ("command", "CommandPermissionSubject")])
obj("ToolCallPermissionSubject", "Permission concerns a tool call, described by a tool call patch.", {"toolCall": ref("ToolCallUpdate")}, ["toolCall"])
obj("CommandPermissionSubject", "Permission concerns running a command in a directory.",
    {"command": S, "cwd": ref("AbsolutePath"), "toolCallId": nul(ref("ToolCallId")), "terminalId": nul(ref("TerminalId"))},
    ["command", "cwd"])
obj("PermissionOption", "One choice offered to the user in a permission request.",
    {"optionId": ref("PermissionOptionId"), "name": S, "kind": ref("PermissionOptionKind")}, ["optionId", "name", "kind"])
open_enum("PermissionOptionKind", "Nature of a permission option, used for icons and presentation.",
          ["allow_once", "allow_always", "reject_once", "reject_always"])
union("RequestPermissionOutcome", "The client's answer to a permission request, selected by `outcome`; unknown outcomes are never approval.",
      "outcome", [("cancelled", "CancelledPermissionOutcome"), ("selected", "SelectedPermissionOutcome")])
obj("CancelledPermissionOutcome", "No option was selected (cancelled, dismissed or declined); the agent must not proceed.")
obj("SelectedPermissionOutcome", "The user picked the option with the given id.", {"optionId": ref("PermissionOptionId")}, ["optionId"])

# ---------------------------------------------------------------- elicitation schemas
obj("ElicitationSessionScope", "Ties an elicitation to a session and optionally a tool call in it.",
    {"sessionId": ref("SessionId"), "toolCallId": nul(ref("ToolCallId"))}, ["sessionId"], meta=False)
obj("ElicitationRequestScope", "Ties an elicitation to a JSON-RPC request outside any session.",
    {"requestId": ref("RequestId")}, ["requestId"], meta=False)
SCOPES = [{"title": "session", "allOf": [ref("ElicitationSessionScope")]},
          {"title": "request", "allOf": [ref("ElicitationRequestScope")]}]
obj("ElicitationFormMode", "Form elicitation: the client renders a form from requestedSchema; scoped to a session or a request.",
    {"requestedSchema": ref("ElicitationSchema")}, ["requestedSchema"], meta=False, oneOf=SCOPES)
obj("ElicitationUrlMode", "URL elicitation: the client sends the user to a URL; scoped to a session or a request.",
    {"elicitationId": ref("ElicitationId"), "url": URI}, ["elicitationId", "url"],
    meta=False, oneOf=SCOPES)
obj("ElicitationSchema", "A restricted JSON Schema of a flat form: an object with typed properties.",
    {"type": ref("ElicitationSchemaType"), "title": NS,
     "properties": {"type": "object", "additionalProperties": ref("ElicitationPropertySchema")},
     "required": narr(S), "description": NS}, ["type", "properties"])
D["ElicitationSchemaType"] = {"description": "The type of an elicitation schema; always object.", "enum": ["object"]}
union("ElicitationPropertySchema", "Schema of one form field, selected by its JSON Schema `type`.", "type",
      [("string", "StringPropertySchema"), ("number", "NumberPropertySchema"), ("integer", "IntegerPropertySchema"),
       ("boolean", "BooleanPropertySchema"), ("array", "MultiSelectPropertySchema")])
TD = {"title": NS, "description": NS}
obj("StringPropertySchema", "A text field, or a single-choice field when enum or oneOf is given.",
    {**TD, "minLength": {"type": ["integer", "null"], "minimum": 0}, "maxLength": {"type": ["integer", "null"], "minimum": 0},
     "pattern": NS, "format": nul(ref("StringFormat")), "default": NS,
     "enum": {"type": ["array", "null"], "items": S, "minItems": 1},
     "oneOf": {"type": ["array", "null"], "items": ref("EnumOption"), "minItems": 1}})
obj("NumberPropertySchema", "A floating-point number field.", {**TD, "minimum": NNUM, "maximum": NNUM, "default": NNUM})
obj("IntegerPropertySchema", "An integer field.", {**TD, "minimum": NINT, "maximum": NINT, "default": NINT})
obj("BooleanPropertySchema", "A yes/no field.", {**TD, "default": NBOOL})
obj("MultiSelectPropertySchema", "A multiple-choice field whose value is an array of strings.",
    {**TD, "minItems": {"type": ["integer", "null"], "minimum": 0}, "maxItems": {"type": ["integer", "null"], "minimum": 0},
     "items": ref("MultiSelectItems"), "default": narr(S)}, ["items"])
union("MultiSelectItems", "Allowed values of a multiple-choice field: plain strings (`type: string`) or titled options (no `type`, identified by anyOf).",
      "type", [("string", "StringMultiSelectItems")])
D["MultiSelectItems"]["anyOf"].append({"title": "titled", "not": {"required": ["type"]}, "allOf": [ref("TitledMultiSelectItems")]})
obj("StringMultiSelectItems", "Plain string choices.", {"enum": arr(S)}, ["enum"])
obj("TitledMultiSelectItems", "Choices with human-readable titles.", {"anyOf": arr(ref("EnumOption"), minItems=1)}, ["anyOf"])
obj("EnumOption", "A choice value with a title and optional description.", {"const": S, "title": S, "description": NS}, ["const", "title"])
open_enum("StringFormat", "Format hint of a text field.", ["email", "uri", "date", "date-time"])
obj("ElicitationAcceptAction", "The user accepted; content holds the submitted form values.",
    {"content": {"type": ["object", "null"], "additionalProperties": ref("ElicitationContentValue")}}, meta=False)
D["ElicitationContentValue"] = {
    "description": "A submitted form value: string, number, boolean or array of strings (other values are tolerated).",
    "anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}, arr(S), {}],
}

# ---------------------------------------------------------------- methods
METHODS = {}


def m(name, desc, props=None, required=(), **extra):
    obj(name, desc, props, required, **extra)


# client -> agent
m("InitializeRequest", "Parameters of initialize: the client's latest protocol version, identity and capabilities.",
  {"protocolVersion": ref("ProtocolVersion"), "info": ref("Implementation"), "capabilities": ref("ClientCapabilities")},
  ["protocolVersion", "info"])
m("InitializeResponse", "Result of initialize: the negotiated version (highest supported at or below the request), agent identity, capabilities and auth methods.",
  {"protocolVersion": ref("ProtocolVersion"), "info": ref("Implementation"), "capabilities": ref("AgentCapabilities"),
   "authMethods": arr(ref("AuthMethod"))}, ["protocolVersion", "info"])
m("LoginAuthRequest", "Parameters of auth/login: which advertised authentication method to run.", {"methodId": ref("AuthMethodId")}, ["methodId"])
m("LoginAuthResponse", "Empty result of a successful auth/login.")
m("LogoutAuthRequest", "Parameters of auth/logout (none besides _meta).")
m("LogoutAuthResponse", "Empty result of a successful auth/logout.")
m("NewSessionRequest", "Parameters of session/new: working directory, extra roots, MCP servers and an optional system prompt.",
  {"cwd": ref("AbsolutePath"), "additionalDirectories": arr(ref("AbsolutePath")), "mcpServers": arr(ref("McpServer")),
   "systemPrompt": nul(ref("SystemPrompt"))}, ["cwd"])
m("NewSessionResponse", "Result of session/new: the new session's id and its initial config options and commands (arrays when present).",
  {"sessionId": ref("SessionId"), "configOptions": arr(ref("SessionConfigOption")), "availableCommands": arr(ref("AvailableCommand"))},
  ["sessionId"])
m("ListSessionsRequest", "Parameters of session/list: an optional exact-cwd filter and a pagination cursor.",
  {"cwd": nul(ref("AbsolutePath")), "cursor": nul(ref("SessionListCursor"))})
m("ListSessionsResponse", "Result of session/list: one page of sessions and the cursor of the next page, if any.",
  {"sessions": arr(ref("SessionInfo")), "nextCursor": nul(ref("SessionListCursor"))}, ["sessions"])
m("DeleteSessionRequest", "Parameters of session/delete: the session to delete.", {"sessionId": ref("SessionId")}, ["sessionId"])
m("DeleteSessionResponse", "Empty result of session/delete.")
m("ResumeSessionRequest", "Parameters of session/resume: the session, its working directory, and optionally where to start replaying history.",
  {"sessionId": ref("SessionId"), "cwd": ref("AbsolutePath"), "additionalDirectories": arr(ref("AbsolutePath")),
   "mcpServers": arr(ref("McpServer")), "replayFrom": nul(ref("ReplayFrom")), "systemPrompt": nul(ref("SystemPrompt"))},
  ["sessionId", "cwd"])
m("ResumeSessionResponse", "Result of session/resume, sent after any replay, replay_complete and the current state_update.",
  {"configOptions": arr(ref("SessionConfigOption")), "availableCommands": arr(ref("AvailableCommand"))})
m("CloseSessionRequest", "Parameters of session/close: the session to close; running work is cancelled first.", {"sessionId": ref("SessionId")}, ["sessionId"])
m("CloseSessionResponse", "Empty result of session/close; nothing more is sent for the session afterwards.")
m("PromptRequest", "Parameters of session/prompt: the session and the user message as content blocks.",
  {"sessionId": ref("SessionId"), "prompt": arr(ref("ContentBlock")),
   # RFD "v2 Idempotency Keys" (https://agentclientprotocol.com/rfds/v2/idempotency-keys)
   "idempotencyKey": {"type": ["string", "null"],
                      "description": "Optional, generated by the client and the same on every attempt of one "
                                     "submission: the agent inserts the user message at most once per key and "
                                     "answers retries with the original messageId. Omitted or null: no key."}},
  ["sessionId", "prompt"])
m("PromptResponse", "Result of session/prompt: the id of the inserted user message; completion is reported by state updates, not by this response.",
  {"messageId": ref("MessageId")}, ["messageId"])
union("SetSessionConfigOptionRequest", "Parameters of session/set_config_option: the option and its new value, whose shape is selected by `type`.",
      "type", [("id", None, {"value": ref("SessionConfigValueId")}, ("value",)),
               ("boolean", None, {"value": BOOL}, ("value",))],
      custom_props={"value": ANY},
      base={"type": "object", "properties": {"sessionId": ref("SessionId"), "configId": ref("SessionConfigId"), "_meta": META},
            "required": ["sessionId", "configId"]})
m("SetSessionConfigOptionResponse", "Result of session/set_config_option: the complete updated list of config options.",
  {"configOptions": arr(ref("SessionConfigOption"))}, ["configOptions"])
m("CancelToolCallRequest", "Parameters of tool_call/cancel: the cancellable tool call to stop.",
  {"sessionId": ref("SessionId"), "toolCallId": ref("ToolCallId")}, ["sessionId", "toolCallId"])
m("CancelToolCallResponse", "Empty result of tool_call/cancel.")
m("CancelTerminalRequest", "Parameters of terminal/cancel: the cancellable terminal to stop.",
  {"sessionId": ref("SessionId"), "terminalId": ref("TerminalId")}, ["sessionId", "terminalId"])
m("CancelTerminalResponse", "Empty result of terminal/cancel.")
m("CancelSessionNotification", "Parameters of session/cancel: stop the session's foreground work; no response.",
  {"sessionId": ref("SessionId")}, ["sessionId"])
# agent -> client
m("RequestPermissionRequest", "Parameters of session/request_permission: what needs approval and the options offered to the user.",
  {"sessionId": ref("SessionId"), "title": S, "description": NS, "subject": nul(ref("RequestPermissionSubject")),
   "options": arr(ref("PermissionOption"))}, ["sessionId", "title", "options"])
m("RequestPermissionResponse", "Result of session/request_permission: the outcome chosen by the client.",
  {"outcome": ref("RequestPermissionOutcome")}, ["outcome"])
union("CreateElicitationRequest", "Parameters of elicitation/create: a message and a form or URL interaction, selected by `mode`.",
      "mode", [("form", "ElicitationFormMode"), ("url", "ElicitationUrlMode")],
      base={"type": "object", "properties": {"message": S, "_meta": META}, "required": ["message"]})
union("CreateElicitationResponse", "Result of elicitation/create: the user's action (accept, decline, cancel), selected by `action`.",
      "action", [("accept", "ElicitationAcceptAction"), ("decline", None), ("cancel", None)],
      base={"type": "object", "properties": {"_meta": META}})
m("UpdateSessionNotification", "Parameters of session/update: one update for the given session.",
  {"sessionId": ref("SessionId"), "update": ref("SessionUpdate")}, ["sessionId", "update"])
m("CompleteElicitationNotification", "Parameters of elicitation/complete: the URL elicitation that has finished.",
  {"elicitationId": ref("ElicitationId")}, ["elicitationId"])
m("CancelRequestNotification", "Parameters of $/cancel_request: the id of a request the sender issued and no longer needs.",
  {"requestId": ref("RequestId")}, ["requestId"])

CA, AC = "client->agent", "agent->client"
for args in [
    ("initialize", "agent", CA, "request", "InitializeRequest", "InitializeResponse"),
    ("auth/login", "agent", CA, "request", "LoginAuthRequest", "LoginAuthResponse"),
    ("auth/logout", "agent", CA, "request", "LogoutAuthRequest", "LogoutAuthResponse"),
    ("session/new", "agent", CA, "request", "NewSessionRequest", "NewSessionResponse"),
    ("session/list", "agent", CA, "request", "ListSessionsRequest", "ListSessionsResponse"),
    ("session/delete", "agent", CA, "request", "DeleteSessionRequest", "DeleteSessionResponse"),
    ("session/resume", "agent", CA, "request", "ResumeSessionRequest", "ResumeSessionResponse"),
    ("session/close", "agent", CA, "request", "CloseSessionRequest", "CloseSessionResponse"),
    ("session/prompt", "agent", CA, "request", "PromptRequest", "PromptResponse"),
    ("session/set_config_option", "agent", CA, "request", "SetSessionConfigOptionRequest", "SetSessionConfigOptionResponse"),
    ("tool_call/cancel", "agent", CA, "request", "CancelToolCallRequest", "CancelToolCallResponse"),
    ("terminal/cancel", "agent", CA, "request", "CancelTerminalRequest", "CancelTerminalResponse"),
    ("session/cancel", "agent", CA, "notification", "CancelSessionNotification", None),
    ("session/request_permission", "client", AC, "request", "RequestPermissionRequest", "RequestPermissionResponse"),
    ("elicitation/create", "client", AC, "request", "CreateElicitationRequest", "CreateElicitationResponse"),
    ("session/update", "client", AC, "notification", "UpdateSessionNotification", None),
    ("elicitation/complete", "client", AC, "notification", "CompleteElicitationNotification", None),
    ("$/cancel_request", "protocol", "both", "notification", "CancelRequestNotification", None),
]:
    name, side, direction, kind, params, result = args
    ann = {"x-method": name, "x-side": side}
    for n in (params, result):
        if n is not None:
            D[n].update(ann)
    METHODS[name] = {"direction": direction, "kind": kind, "params": params, "result": result}

schema = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://acp-conformance.invalid/schema/acp-v2.schema.json",
    "title": "Agent Client Protocol v2 (acp-conformance)",
    "description": "JSON Schema of the ACP v2 wire surface used by acp-conformance, written from the v2 schema reference and prompt lifecycle texts. Open enums accept `_`-prefixed custom values; unknown non-underscore variants are rejected on purpose.",
    "x-acp-methods": METHODS,
    "$defs": dict(sorted(D.items())),
}
json.dump(schema, sys.stdout, indent=2, ensure_ascii=False)
sys.stdout.write("\n")
