"""Broken variants of the reference client, one broken rule (or a tightly bound group) each.

``python client_mutants.py NAME -- AGENT...`` runs the mutant NAME against an agent (under the
suite: ``--client-cmd="python client_mutants.py NAME -- {agent}"``). ``MUTANTS`` maps each name to
the rule IDs it must be flagged for, and the class.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from acp_conformance.reference.client import ReferenceClient, RpcError, main  # noqa: E402


def crash(why: str) -> None:
    print(f"mutant client: crashing on {why}", file=sys.stderr, flush=True)
    os._exit(70)


class EmptyPrompt(ReferenceClient):
    def prompt_blocks(self, n):
        return []


class ImageNotAdvertised(ReferenceClient):
    def prompt_blocks(self, n):
        return super().prompt_blocks(n) + [{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}]


class RelativeCwd(ReferenceClient):
    def new_session_params(self):
        return {"cwd": "project"}


class RelativeListCwd(ReferenceClient):
    async def list_sessions(self):
        await self.request("session/list", {"cwd": "project"})
        return await super().list_sessions()


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


class CancelForeignId(ReferenceClient):
    async def new_session(self):
        await self.notify("$/cancel_request", {"requestId": 4242})
        return await super().new_session()


class DoubleAnswerAfterCancelRequest(ReferenceClient):
    def on_notification(self, method, params):
        if method == "$/cancel_request":
            rid = params.get("requestId")
            if json.dumps(rid) in self.incoming:
                msg = {"jsonrpc": "2.0", "id": rid, "result": {"outcome": {"outcome": "cancelled"}}}
                asyncio.ensure_future(self.send(msg))
        super().on_notification(method, params)


class AnswerUnknownCancel(ReferenceClient):
    def __init__(self, opts):
        super().__init__(opts)
        self.seen_ids = set()

    def dispatch(self, msg):
        if isinstance(msg.get("method"), str) and msg.get("id") is not None:
            self.seen_ids.add(json.dumps(msg["id"]))
        super().dispatch(msg)

    def on_notification(self, method, params):
        if method == "$/cancel_request" and json.dumps(params.get("requestId")) not in self.seen_ids:
            asyncio.ensure_future(self.send({"jsonrpc": "2.0", "id": params.get("requestId"),
                                             "error": {"code": -32602, "message": "Unknown request"}}))
        super().on_notification(method, params)


class ErrorWithoutMessage(ReferenceClient):
    async def on_request(self, msg):
        if msg["method"] not in ("session/request_permission", "elicitation/create"):
            await self.respond(msg["id"], error={"code": -32601})
            return
        await super().on_request(msg)


class CustomRootField(ReferenceClient):
    def new_session_params(self):
        return {**super().new_session_params(), "_conformanceCustom": True}


class UnknownOutcome(ReferenceClient):
    def permission_outcome(self, params):
        return {"outcome": "approved"}


class MetaChangesOutcome(ReferenceClient):
    def permission_outcome(self, params):
        if params.get("_meta"):
            return {"outcome": "cancelled"}
        return super().permission_outcome(params)


class TextBlockWithoutText(ReferenceClient):
    def prompt_blocks(self, n):
        return [{"type": "text", "text": "Say hello"}, {"type": "text"}]


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


class BadTraceparent(ReferenceClient):
    def initialize_params(self):
        return {**super().initialize_params(), "_meta": {"traceparent": "not-a-trace"}}


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


class ReusedIdempotencyKey(ReferenceClient):
    def prompt_params(self, session_id, n):
        return {**super().prompt_params(session_id, n), "idempotencyKey": "the-same-key-every-time"}


MUTANTS = {
    "reused-idempotency-key": (["IDEM-004"], ReusedIdempotencyKey),
    "empty-prompt": (["CLIENT-007"], EmptyPrompt),
    "image-not-advertised": (["CLIENT-007"], ImageNotAdvertised),
    "relative-cwd": (["CLIENT-006", "CONTENT-004"], RelativeCwd),
    "relative-list-cwd": (["CONTENT-004"], RelativeListCwd),
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
    "cancel-foreign-id": (["CANCEL-014"], CancelForeignId),
    "double-answer-after-cancel-request": (["CANCEL-012", "CLIENT-017"], DoubleAnswerAfterCancelRequest),
    "answer-unknown-cancel": (["CANCEL-013", "CLIENT-016"], AnswerUnknownCancel),
    "error-without-message": (["ERR-012"], ErrorWithoutMessage),
    "custom-root-field": (["EXT-004"], CustomRootField),
    "unknown-permission-outcome": (["CLIENT-013", "EXT-005"], UnknownOutcome),
    "meta-changes-outcome": (["EXT-003"], MetaChangesOutcome),
    "text-block-without-text": (["SCHEMA-001"], TextBlockWithoutText),
    # SHOULD rules: a warning, which blocks under --acp-strict
    "reserved-error-code": (["CLIENT-018", "ERR-015"], ReservedErrorCode),
    "ignores-version": (["CLIENT-002"], IgnoresVersion),
    "batches-lifecycle": (["CLIENT-026", "TRANSPORT-010"], BatchesLifecycle),
    "bad-traceparent": (["EXT-006"], BadTraceparent),
    "crash-on-tool-update-after-cancel": (["CLIENT-014"], CrashOnToolUpdateAfterCancel),
    "retries-close-after-32002": (["CLIENT-031"], RetriesCloseAfter32002),
}


if __name__ == "__main__":
    name, rest = sys.argv[1], sys.argv[2:]
    if name not in MUTANTS:
        print(f"unknown mutant {name!r}; known: {', '.join(sorted(MUTANTS))}", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(rest, MUTANTS[name][1]))
