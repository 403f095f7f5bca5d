"""Mutants of the reference client for the CLIENT rules: each a small subclass of the reference
client that breaks one rule (or a tightly bound group).

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
client_mutants.py, which runs one: ``python tests/client_mutants/client_mutants.py NAME -- AGENT...``.
"""

from __future__ import annotations

import asyncio
import json
import os

from acp_conformance.reference.client import ReferenceClient, RpcError
from client_mutant_bases import crash  # beside this file (client_mutants.py puts the folder on sys.path)


class EmptyPrompt(ReferenceClient):
    def prompt_blocks(self, n):
        return []


class ImageNotAdvertised(ReferenceClient):
    def prompt_blocks(self, n):
        return super().prompt_blocks(n) + [{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}]


class RelativeCwd(ReferenceClient):
    def new_session_params(self):
        return {"cwd": "project"}


class PromptBeforeInitialize(ReferenceClient):
    async def converse(self):
        await self.send({"jsonrpc": "2.0", "id": 99, "method": "session/prompt",
                         "params": {"sessionId": "sess_guess", "prompt": [{"type": "text", "text": "hi"}]}})
        await super().converse()


class LoginWithoutAuthMethods(ReferenceClient):
    async def new_session(self):
        await self.request("auth/login", {"methodId": "default"})
        return await super().new_session()


class LoginTerminalMethod(ReferenceClient):
    async def new_session(self):
        try:
            return await super().new_session()
        except RpcError:
            raise

    async def request(self, method, params):
        if method == "auth/login":
            terminal = [m for m in self.agent_init.get("authMethods") or [] if m.get("type") == "terminal"]
            if terminal:
                params = {"methodId": terminal[0]["methodId"]}
        return await super().request(method, params)


class ReplyToNotification(ReferenceClient):
    def on_notification(self, method, params):
        super().on_notification(method, params)
        if method == "session/update":
            asyncio.ensure_future(self.send({"jsonrpc": "2.0", "id": None, "result": {}}))


class SelectedAfterCancel(ReferenceClient):
    async def answer_pending(self, session_id):
        for req in list(self.incoming.values()):
            if req.get("method") == "session/request_permission":
                await self.respond(req["id"], {"outcome": {"outcome": "selected", "optionId": "allow"}})


class NullRequestId(ReferenceClient):
    async def new_session(self):
        await self.send({"jsonrpc": "2.0", "id": None, "method": "session/list", "params": {}})
        return await super().new_session()


class ReusedRequestId(ReferenceClient):
    async def new_session(self):
        line = self.encode({"jsonrpc": "2.0", "id": 77, "method": "session/list", "params": {}})
        async with self.write_lock:  # both in one write, so the first cannot be answered in between
            self.proc.stdin.write(line + line)
            await self.proc.stdin.drain()
        return await super().new_session()


class CrashOnUnknownUpdate(ReferenceClient):
    KNOWN = ("user_message", "agent_message_chunk", "state_update", "tool_call_update", "available_commands_update",
             "session_info_update", "subagent_update", "agent_message", "user_message_chunk")

    def on_update(self, session_id, update):
        if update.get("sessionUpdate") not in self.KNOWN:
            crash(f"the update variant {update.get('sessionUpdate')!r}")
        super().on_update(session_id, update)


class MultiLineJson(ReferenceClient):
    async def close_session(self, session_id):
        text = json.dumps({"jsonrpc": "2.0", "id": self.new_id(), "method": "session/close",
                           "params": {"sessionId": session_id}}, indent=2)
        self.proc.stdin.write(text.encode() + b"\n")
        await self.proc.stdin.drain()


class NotUtf8(ReferenceClient):
    async def close_session(self, session_id):
        raw = b'{"jsonrpc":"2.0","id":%d,"method":"session/close","params":{"sessionId":"%s","_meta":{"x":"\xff\xfe"}}}\n'
        self.proc.stdin.write(raw % (self.new_id(), session_id.encode()))
        await self.proc.stdin.drain()


class DeleteNotAdvertised(ReferenceClient):
    async def close_session(self, session_id):
        try:
            await self.request("session/delete", {"sessionId": session_id})
        except RpcError:
            pass
        await super().close_session(session_id)


class ResumeWrongCwd(ReferenceClient):
    async def request(self, method, params):
        if method == "session/resume":
            params = {**params, "cwd": os.path.abspath(os.getcwd())}
        return await super().request(method, params)


class CursorModified(ReferenceClient):
    async def request(self, method, params):
        if method == "session/list" and isinstance(params.get("cursor"), str) and params["cursor"]:
            params = {**params, "cursor": params["cursor"].rstrip("=")}
        return await super().request(method, params)


class CancelUncancellableTool(ReferenceClient):
    def on_update(self, session_id, update):
        if update.get("sessionUpdate") == "tool_call_update" and update.get("toolCallId") == "call_plain" \
                and "plain" not in self.cancelled_tools:
            self.cancelled_tools.add("plain")
            asyncio.ensure_future(self.cancel_tool(session_id, "call_plain"))
        super().on_update(session_id, update)


class ConfigWrongType(ReferenceClient):
    async def set_config(self, session_id):
        for opt in self.new_session_result.get("configOptions") or []:
            if opt.get("type") == "select":
                try:
                    await self.request("session/set_config_option", {"sessionId": session_id,
                                                                     "configId": opt["configId"],
                                                                     "type": "id", "value": "not-an-option"})
                except RpcError:
                    pass


class PermissionBadOption(ReferenceClient):
    def permission_outcome(self, params):
        return {"outcome": "selected", "optionId": "not-offered"}


class DoubleAnswer(ReferenceClient):
    async def on_request(self, msg):
        if msg["method"] == "session/request_permission":
            await self.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"outcome": {"outcome": "cancelled"}}})
        await super().on_request(msg)


class UnknownMethodWrongError(ReferenceClient):
    async def on_request(self, msg):
        if msg["method"] not in ("session/request_permission", "elicitation/create"):
            await self.respond(msg["id"], error={"code": -32603, "message": "Internal error"})
            return
        await super().on_request(msg)


class ElicitationUrlAccepted(ReferenceClient):
    async def on_request(self, msg):
        if msg["method"] == "elicitation/create" and (msg.get("params") or {}).get("mode") == "url":
            await self.respond(msg["id"], {"action": "accept"})
            return
        await super().on_request(msg)


class ElicitationBadContent(ReferenceClient):
    async def on_request(self, msg):
        if msg["method"] == "elicitation/create" and (msg.get("params") or {}).get("mode") == "form":
            await self.respond(msg["id"], {"action": "accept", "content": {"somethingElse": "x"}})
            return
        await super().on_request(msg)


class CrashOnElicitationComplete(ReferenceClient):
    def on_notification(self, method, params):
        if method == "elicitation/complete":
            crash("elicitation/complete for an elicitation it never saw")
        super().on_notification(method, params)


class RetryLoopOnUnknownError(ReferenceClient):
    async def request(self, method, params):
        try:
            return await super().request(method, params)
        except RpcError as e:
            if method != "session/prompt" or e.code in (-32602, -32002):
                raise
            # the same prompt again, three times at once
            got = await asyncio.gather(*[super(RetryLoopOnUnknownError, self).request(method, params)
                                         for _ in range(3)], return_exceptions=True)
            return next((g for g in got if not isinstance(g, BaseException)), None)


class CrashOnLateUserMessage(ReferenceClient):
    def __init__(self, opts):
        super().__init__(opts)
        self.prompt_ids = set()
        self.prompt_answered = False

    async def send(self, msg):
        if isinstance(msg, dict) and msg.get("method") == "session/prompt":
            self.prompt_ids.add(msg.get("id"))
        await super().send(msg)

    def dispatch(self, msg):
        if "method" not in msg and msg.get("id") in self.prompt_ids:
            self.prompt_answered = True  # seen on the wire, before the awaiting coroutine resumes
        super().dispatch(msg)

    def on_update(self, session_id, update):
        if update.get("sessionUpdate") == "user_message" and self.prompt_answered:
            crash("a user_message after the prompt response")
        super().on_update(session_id, update)


class CrashOnEarlyUpdate(ReferenceClient):
    def on_update(self, session_id, update):
        if self.session_id is None:
            crash("an update before the session/new response")
        super().on_update(session_id, update)


class MutateChild(ReferenceClient):
    def on_update(self, session_id, update):
        if update.get("sessionUpdate") == "subagent_update":
            asyncio.ensure_future(self.notify("session/cancel", {"sessionId": update.get("sessionId")}))
        super().on_update(session_id, update)


class UnknownOutcome(ReferenceClient):
    def permission_outcome(self, params):
        return {"outcome": "approved"}


class ReservedErrorCode(ReferenceClient):
    async def on_request(self, msg):
        if msg["method"] not in ("session/request_permission", "elicitation/create"):
            await self.respond(msg["id"], error={"code": -32099, "message": "Not here"})
            return
        await super().on_request(msg)


class IgnoresVersion(ReferenceClient):
    async def initialize(self):
        await super().initialize()
        return True


class BatchesLifecycle(ReferenceClient):
    async def initialize(self):
        rid = self.new_id()
        fut = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        await self.send([{"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": self.initialize_params()}])
        self.agent_init = (await asyncio.wait_for(fut, self.opts.timeout)).get("result") or {}
        return True

    def encode(self, msg):
        return json.dumps(msg, separators=(",", ":")).encode("utf-8") + b"\n"


class CrashOnToolUpdateAfterCancel(ReferenceClient):
    def on_update(self, session_id, update):
        if update.get("sessionUpdate") == "tool_call_update" and session_id in self.cancelled_sessions:
            crash("a tool_call_update after its own session/cancel")
        super().on_update(session_id, update)


class RetriesCloseAfter32002(ReferenceClient):
    async def close_session(self, session_id):
        for _ in range(2):
            try:
                await self.request("session/close", {"sessionId": session_id})
                return
            except RpcError:
                pass


MUTANTS = {
    "empty-prompt": (["CLIENT-007"], EmptyPrompt),
    "image-not-advertised": (["CLIENT-007"], ImageNotAdvertised),
    "relative-cwd": (["CLIENT-006", "CONTENT-004"], RelativeCwd),
    "prompt-before-initialize": (["CLIENT-001", "CLIENT-008"], PromptBeforeInitialize),
    "login-without-auth-methods": (["CLIENT-003"], LoginWithoutAuthMethods),
    "login-terminal-method": (["CLIENT-004"], LoginTerminalMethod),
    "reply-to-notification": (["CLIENT-016", "ERR-011"], ReplyToNotification),
    "selected-after-cancel": (["CLIENT-012"], SelectedAfterCancel),
    "null-request-id": (["CLIENT-027", "ERR-009"], NullRequestId),
    "reused-request-id": (["CLIENT-027", "ERR-010"], ReusedRequestId),
    "crash-on-unknown-update": (["CLIENT-015"], CrashOnUnknownUpdate),
    "multi-line-json": (["CLIENT-025", "TRANSPORT-002"], MultiLineJson),
    "not-utf8": (["CLIENT-025", "TRANSPORT-001"], NotUtf8),
    "delete-not-advertised": (["CLIENT-009"], DeleteNotAdvertised),
    "resume-wrong-cwd": (["CLIENT-010"], ResumeWrongCwd),
    "cursor-modified": (["CLIENT-022"], CursorModified),
    "cancel-uncancellable-tool": (["CLIENT-023"], CancelUncancellableTool),
    "config-wrong-value": (["CLIENT-024"], ConfigWrongType),
    "permission-bad-option": (["CLIENT-013"], PermissionBadOption),
    "double-answer": (["CLIENT-017"], DoubleAnswer),
    "unknown-method-wrong-error": (["CLIENT-018"], UnknownMethodWrongError),
    "elicitation-url-accepted": (["CLIENT-019"], ElicitationUrlAccepted),
    "elicitation-bad-content": (["CLIENT-021"], ElicitationBadContent),
    "crash-on-elicitation-complete": (["CLIENT-020"], CrashOnElicitationComplete),
    "retry-loop-on-unknown-error": (["CLIENT-028"], RetryLoopOnUnknownError),
    "crash-on-late-user-message": (["CLIENT-011"], CrashOnLateUserMessage),
    "crash-on-early-update": (["CLIENT-029"], CrashOnEarlyUpdate),
    "mutate-child-session": (["CLIENT-032"], MutateChild),
    "unknown-permission-outcome": (["CLIENT-013", "EXT-005"], UnknownOutcome),
    # SHOULD rules: a warning, which blocks under --acp-strict
    "reserved-error-code": (["CLIENT-018", "ERR-015"], ReservedErrorCode),
    "ignores-version": (["CLIENT-002"], IgnoresVersion),
    "batches-lifecycle": (["CLIENT-026", "TRANSPORT-010"], BatchesLifecycle),
    "crash-on-tool-update-after-cancel": (["CLIENT-014"], CrashOnToolUpdateAfterCancel),
    "retries-close-after-32002": (["CLIENT-031"], RetriesCloseAfter32002),
}
