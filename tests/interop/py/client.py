"""A small ACP v2 client on the official Python SDK (agent-client-protocol 1.0.0rc3, acp.experimental.v2).

It mirrors acp_conformance/reference/client.py as far as the SDK lets application code do it (see
docs/interop.md): it launches its agent, then initialize (protocol version 2,
capabilities.elicitation.form), session/new with the absolute cwd (auth/login with an advertised
``agent`` method when session/new answers -32000), one or more text prompts, each waiting for its
response and the idle state that ends the turn, session/close, and it closes the agent's stdin. The
SDK owns framing, ids, routing, params validation, the version check of the initialize response and
the answers to methods this file does not handle (-32601).

Requests from the agent: session/request_permission gets the first allow option (``cancelled`` once
this client cancelled the turn, or when $/cancel_request names it); a form elicitation/create is
declined, any other mode gets -32602. Unknown updates are ignored.

Steered like the reference client, by the environment: ACP_CLIENT_PROMPT, ACP_CLIENT_PROMPTS,
ACP_CLIENT_CANCEL_AFTER (send session/cancel S seconds after each prompt), ACP_CLIENT_PERMISSION
(allow|reject|cancelled|hold: hold = the user has not decided, answered ``cancelled`` when the turn is
cancelled or over), ACP_CLIENT_LIST=1 (page through session/list), ACP_CLIENT_RESUME=1 (resume the
first listed session), ACP_CLIENT_SET_CONFIG=1 (set each select/boolean option once),
ACP_CLIENT_CANCEL_TOOLS=1 (would tool_call/cancel a tool call that advertises capabilities.cancel; the SDK
has neither that method nor the field, so it only logs),
ACP_CLIENT_REQUEST_TIMEOUT (a request unanswered after S seconds is given up: the SDK sends
$/cancel_request when the awaiting task is cancelled, and drops the answer), ACP_CLIENT_TIMEOUT
(default 20).

Run: tests/interop/.venv/bin/python tests/interop/py/client.py [--] AGENT ARGS...
(one argument = a whole command line, such as the suite's {agent})
"""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from typing import Any

from acp.exceptions import RequestError
from acp.experimental.v2 import connect_to_agent

AUTH_REQUIRED = -32000


def log(text: str) -> None:
    print(f"[interop-py-client] {text}", file=sys.stderr, flush=True)


def env_float(name: str, default: float | None) -> float | None:
    value = os.environ.get(name)
    return float(value) if value else default


class Options:
    prompt = os.environ.get("ACP_CLIENT_PROMPT") or "Say hello"
    prompts = int(os.environ.get("ACP_CLIENT_PROMPTS") or "1")
    cancel_after = env_float("ACP_CLIENT_CANCEL_AFTER", None)
    permission = os.environ.get("ACP_CLIENT_PERMISSION") or "allow"
    list = os.environ.get("ACP_CLIENT_LIST") == "1"
    resume = os.environ.get("ACP_CLIENT_RESUME") == "1"
    set_config = os.environ.get("ACP_CLIENT_SET_CONFIG") == "1"
    cancel_tools = os.environ.get("ACP_CLIENT_CANCEL_TOOLS") == "1"
    request_timeout = env_float("ACP_CLIENT_REQUEST_TIMEOUT", None)
    timeout = env_float("ACP_CLIENT_TIMEOUT", 20.0)


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True) if hasattr(model, "model_dump") else model


class InteropClient:
    """The handlers the SDK routes the agent's requests and notifications to."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.conn: Any = None
        self.session_id: str | None = None
        self.turn_idle = asyncio.Event()
        self.cancelled_sessions: set[str] = set()
        self.held: dict[str, set[asyncio.Event]] = {}
        self.cancelled_tools: set[str] = set()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    def release_held(self, session_id: str) -> None:
        for event in self.held.pop(session_id, set()):
            event.set()

    def outcome(self, session_id: str, options: list) -> dict:
        if session_id in self.cancelled_sessions or self.opts.permission == "cancelled":
            return {"outcome": "cancelled"}
        want = "allow" if self.opts.permission == "allow" else "reject"
        for o in (dump(x) for x in options):
            if str(o.get("kind", "")).startswith(want):
                return {"outcome": "selected", "optionId": o["optionId"]}
        return {"outcome": "cancelled"}

    async def request_permission(self, session_id: str, title: str, options: list, **_: Any) -> dict:
        try:
            if self.opts.permission == "hold" and session_id not in self.cancelled_sessions:
                # the user has not decided yet: answered when the turn is cancelled or over
                decided = asyncio.Event()
                self.held.setdefault(session_id, set()).add(decided)
                await decided.wait()
                return {"outcome": {"outcome": "cancelled"}}
            return {"outcome": self.outcome(session_id, options)}
        except asyncio.CancelledError:
            # the SDK cancels this handler when $/cancel_request names the request; the permission's
            # defined cancellation result is the `cancelled` outcome (else the SDK answers -32800)
            return {"outcome": {"outcome": "cancelled"}}

    async def create_elicitation(self, message: str, mode: str, **_: Any) -> dict:
        if mode == "form":
            return {"action": "decline"}
        raise RequestError.invalid_params({"details": f"Elicitation mode {mode!r} is not supported"})

    async def complete_elicitation(self, elicitation_id: str, **_: Any) -> None:
        return None

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        u = dump(update) or {}
        kind = u.get("sessionUpdate")
        if kind == "state_update" and u.get("state") == "idle" and session_id == self.session_id:
            self.turn_idle.set()
        elif kind == "tool_call_update" and self.opts.cancel_tools and not self.cancelled_tools:
            # The SDK (schema v2.0.0-alpha.5) has no tool_call/cancel method, and its tool_call_update
            # model drops `capabilities`: this client cannot see which calls are cancellable, nor cancel one.
            self.cancelled_tools.add(u.get("toolCallId"))
            log("ACP_CLIENT_CANCEL_TOOLS: the SDK offers no tool_call/cancel; nothing cancelled")
        # anything else (unknown variants included) would be shown generically by a real client


async def call(opts: Options, coro: Any) -> Any:
    """Await one request; with ACP_CLIENT_REQUEST_TIMEOUT give it up after that long (the SDK then sends
    $/cancel_request and drops the answer)."""
    if opts.request_timeout is None or opts.request_timeout >= opts.timeout:
        return await asyncio.wait_for(coro, opts.timeout)
    return await asyncio.wait_for(coro, opts.request_timeout)


async def converse(opts: Options, client: InteropClient, conn: Any) -> None:
    try:
        init = await call(opts, conn.initialize(protocol_version=2,
                                                info={"name": "interop-py-client", "version": "0.1.0"},
                                                capabilities={"elicitation": {"form": {}}}))
    except (RequestError, ValueError) as e:
        log(f"initialize failed (the SDK accepts protocol version 2 only): {e}")
        return
    init = dump(init)
    cwd = os.path.abspath(os.getcwd())
    try:
        created = await call(opts, conn.new_session(cwd=cwd))
    except RequestError as e:
        methods = [m for m in init.get("authMethods") or [] if m.get("type") == "agent"]
        if e.code != AUTH_REQUIRED or not methods:
            log(f"session/new failed: {e}")
            return
        await call(opts, conn.login(method_id=methods[0]["methodId"]))
        created = await call(opts, conn.new_session(cwd=cwd))
    created = dump(created)
    sid = created["sessionId"]
    client.session_id = sid
    if opts.list:
        listed: list = []
        cursor = None
        for page in range(20):
            res = dump(await call(opts, conn.list_sessions(cursor=cursor) if page else conn.list_sessions()))
            listed += res.get("sessions") or []
            if res.get("nextCursor") is None:  # missing or null: the last page ("" is a real cursor)
                break
            cursor = res["nextCursor"]
        if opts.resume and listed:
            try:
                await call(opts, conn.resume_session(session_id=listed[0]["sessionId"], cwd=listed[0]["cwd"]))
            except RequestError as e:
                log(f"session/resume failed: {e}")
    if opts.set_config:
        for opt in created.get("configOptions") or []:
            if opt.get("type") == "select" and opt.get("options"):
                value, kind = opt["options"][-1]["value"], "id"
            elif opt.get("type") == "boolean":
                value, kind = not opt.get("currentValue"), "boolean"
            else:
                continue  # an option type this client does not know is never set
            try:
                await call(opts, conn.set_config_option(config_id=opt["configId"], session_id=sid, value=value, type=kind))
            except RequestError as e:
                log(f"set_config_option {opt['configId']!r} failed: {e}")
    for n in range(opts.prompts):
        await prompt_turn(opts, client, conn, sid, n)
    try:
        await call(opts, conn.close_session(session_id=sid))
    except RequestError as e:
        if e.code != -32002:  # already gone, which is what closing wanted
            log(f"session/close failed: {e}")


async def prompt_turn(opts: Options, client: InteropClient, conn: Any, sid: str, n: int) -> None:
    client.turn_idle = asyncio.Event()
    text = opts.prompt if n == 0 else f"{opts.prompt} ({n + 1})"

    async def cancel_later() -> None:
        await asyncio.sleep(opts.cancel_after)  # the user presses "stop" after a while
        client.cancelled_sessions.add(sid)
        await conn.cancel_session(session_id=sid)
        client.release_held(sid)

    canceller = asyncio.ensure_future(cancel_later()) if opts.cancel_after is not None else None
    ok = True
    try:
        await call(opts, conn.prompt(session_id=sid, prompt=[{"type": "text", "text": text}]))
    except RequestError as e:
        log(f"session/prompt failed: {e}")  # a failed request is a failure of that request only
        ok = False
    if ok:
        try:
            await asyncio.wait_for(client.turn_idle.wait(), opts.timeout)
        except asyncio.TimeoutError:
            log("the turn did not end in time")
    if canceller is not None:
        canceller.cancel()
    client.release_held(sid)  # nothing is left unanswered once the turn is over
    client.cancelled_sessions.discard(sid)


async def main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if len(argv) == 1 and not os.path.exists(argv[0]):
        argv = shlex.split(argv[0])  # the agent given as one command line (the suite's {agent})
    if not argv:
        log("usage: client.py [--] AGENT ARGS...")
        return 2
    opts = Options()
    proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE, limit=1 << 30)
    client = InteropClient(opts)
    conn = connect_to_agent(client, proc.stdin, proc.stdout)
    code = 0
    talk = asyncio.ensure_future(converse(opts, client, conn))
    gone = asyncio.ensure_future(proc.wait())
    done, _ = await asyncio.wait({talk, gone}, return_when=asyncio.FIRST_COMPLETED)
    if talk not in done:  # the agent exited: what it left pending cannot be answered
        log("the agent exited")
        talk.cancel()
        code = 1
    try:
        await talk
    except asyncio.CancelledError:
        pass
    except (asyncio.TimeoutError, ConnectionError, RequestError) as e:
        log(f"the conversation ended: {e!r}")
        code = 1
    try:
        await conn.close()
    except Exception:  # noqa: BLE001
        pass
    if proc.stdin is not None and not proc.stdin.is_closing():
        proc.stdin.close()
    try:
        await asyncio.wait_for(asyncio.shield(gone), 5)
    except asyncio.TimeoutError:
        proc.terminate()
        await gone
    return code


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
