"""A small, correct ACP v2 reference agent (JSON-RPC 2.0 over stdio, standard library only).

Run it as ``python -m acp_conformance.reference.agent``. It reads newline-delimited JSON from
stdin (lines of any length) and writes one JSON-RPC message per line to stdout, flushing after
each line; nothing else ever goes to stdout (diagnostics go to stderr, traffic too when
``ACP_REFERENCE_DEBUG=1``). It exits with status 0 when stdin reaches EOF.
``ACP_REFERENCE_MEMORY_ONLY=1`` keeps sessions only for the life of the process (a state directory of
its own, removed at exit), as an agent without durable storage does: a resume from a new process is
then answered -32002, while the sessions it created stay resumable on the connection.

What it advertises (initialize result)::

    {"protocolVersion": 2,
     "info": {"name": "acp-conformance-reference-agent", "version": ...},
     "capabilities": {"session": {"delete": {}, "prompt": {"embeddedContext": {}}}}}

* protocol version 2 only (a request for >= 2 gets 2; below 2 gets -32022 {requested, supported});
* the baseline session methods plus ``session/delete``; prompt content ``text``,
  ``resource_link`` and (embeddedContext) ``resource``; no image/audio, no MCP transport
  (any ``mcpServers`` entry is -32602), no additionalDirectories, no systemPrompt, no auth
  (no ``authMethods``);
* per-session config options: a select ``mode`` (``ask`` | ``code``, default ``ask``,
  category ``mode``) and a boolean ``verbose`` (default false), settable with
  ``session/set_config_option``.

What a prompt does is steered by its text (the text blocks joined with newlines); the triggers
are case-insensitive substrings, checked in this order:

* ``background`` - an ``execute`` tool call showing a terminal (``npm run dev``, ``capabilities.cancel
  {}``) completes while the terminal keeps running; from then on every state_update of the session
  carries ``background`` (the terminal, later ``[]``). session/cancel does not stop it; terminal/cancel
  (or 30 s) does: exitStatus, then a state_update snapshot without it. session/close stops it silently.
* ``permission`` - a tool call (kind ``delete`` if the text contains "delete", else ``edit``)
  that asks ``session/request_permission`` (options ``allow`` = allow_once, ``reject`` =
  reject_once) and reports ``requires_action`` while waiting. Allow -> running, tool call
  in_progress -> completed, a message, idle end_turn. Anything else (reject, ``cancelled``, an
  option not offered, an unknown outcome, an error answer) -> running, tool call failed, a
  message, idle end_turn. session/cancel while waiting -> ``$/cancel_request`` for the pending
  permission request, tool call cancelled, idle cancelled; a late answer is ignored.
* ``elicit`` - when the client advertised ``capabilities.elicitation.form``: a session-scoped
  form ``elicitation/create`` (one string property ``projectName``) with ``requires_action``
  while waiting; accept -> uses the content, anything else (decline, cancel, unknown action,
  error) -> a default, then idle end_turn; session/cancel -> ``$/cancel_request``. Without the
  capability: no elicitation, a message, idle end_turn. If the text also contains ``url`` and
  the client advertised ``elicitation.url``: a URL-mode elicitation instead (fresh
  ``elicitationId``, an https URL); accept -> ``elicitation/complete`` with that id, a message,
  end_turn; anything else -> a message, end_turn.
* ``terminal`` - an ``execute`` tool call (no cancel capability) whose content references an
  agent-owned terminal: terminal_update (command, absolute cwd, ``capabilities.cancel {}``),
  base64 terminal_output_chunk; it waits up to 5 s for ``terminal/cancel`` (acknowledged {},
  then exitStatus ``{signal: SIGTERM}``) else exits 0; exitStatus withdraws the capability; the
  tool call then completes, idle end_turn.
* ``cancellable`` - an ``execute`` tool call in_progress with ``capabilities.cancel {}``; it
  waits up to 5 s for ``tool_call/cancel`` (acknowledged {}, then status cancelled), else
  completes; the final update withdraws the capability; the turn goes on to end_turn.
  tool_call/cancel or terminal/cancel for anything else (unknown, final, not cancellable) is -32602.
* ``tool`` - a ``read`` tool call: pending -> in_progress -> completed (with text content and a
  session reference ``{type: "session", sessionId}`` to the prompting session), then a message,
  idle end_turn. (An allowed ``permission`` tool call completes with ``diff`` content: changes
  plus a git_patch with absolute paths.)
* ``fail`` - the message is inserted (success response), then the work fails: idle with
  stopReason ``error`` and ``error: {code: -32603, message}``.
* ``slowly`` - a long turn: 60 agent_message_chunk updates 100 ms apart (about 6 s), end_turn;
  session/cancel stops it with idle stopReason ``cancelled``.
* anything else - "You said: <text>" in two chunks, idle end_turn.

Every accepted prompt: ``user_message`` (full content array, fresh messageId) -> response
``{messageId}`` -> ``state_update running`` -> work -> ``state_update idle`` with a stopReason.
A prompt that arrives while a turn runs is held (no insertion, no response) and run when the
turn ends; session/cancel, session/close, session/delete or ``$/cancel_request`` for it answer
it with -32800 instead.

Idempotency keys (``idempotencyKey`` on session/prompt, RFD "v2 Idempotency Keys"): the message is
inserted at most once per key and session. A retry of an inserted submission (while its turn runs or
after it ended, also after a resume: the keys are kept with the session) is answered at once with the
original ``messageId``, with no second user message and no second turn; a retry of a held submission
waits for it and gets the same answer (or -32800 when the held submission is cancelled).

State: sessions persist as one JSON file per session in ``$ACP_REFERENCE_STATE_DIR/sessions/``,
or ``./.acp-reference-agent/sessions/`` relative to the process cwd, rewritten after every change
(creation, inserted user message, final tool call state, finished agent message, config change;
deleted sessions are removed). A new process started in the same directory can therefore
session/resume them (with ``replayFrom: {"type": "start"}`` it replays user_message /
tool_call_update / agent_message with the original ids, then ``replay_complete``).

Structure: ``ReferenceAgent`` splits its behaviour into small methods so that a broken variant
("mutant", see tests/mutants/agent_mutants.py) is a subclass overriding one of them; ``main()``
takes the class to run.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import traceback
from collections import deque
from typing import Any

AGENT_NAME = "acp-conformance-reference-agent"
AGENT_VERSION = "0.1.0"
SUPPORTED_VERSIONS = (2,)
PAGE_SIZE = 50

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
RESOURCE_NOT_FOUND = -32002
UNSUPPORTED_VERSION = -32022

FINAL_TOOL_STATUSES = ("completed", "failed", "cancelled")
_SAFE_ID = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,199}")
_CURSOR = re.compile(r"offset-([1-9][0-9]{0,8})")



def _work_scale(value: str | None) -> float:
    """ACP_REFERENCE_WORK_SCALE: how long the simulated work of a turn takes, as a factor (a
    benchmark of the fuzzer sets it below 1 to see what the fuzzer does when the agent is quick)."""
    try:
        scale = float(value) if value is not None else 1.0
    except ValueError:
        scale = -1.0
    if not scale >= 0:
        print(f"reference agent: ACP_REFERENCE_WORK_SCALE={value!r} is not a number >= 0; using 1", file=sys.stderr)
        return 1.0
    return scale

class InvalidParams(Exception):
    """Raised by a handler: answer -32602 with this message."""


class SessionNotFound(Exception):
    """Raised by a handler: the session does not exist or is not active on this connection."""

    def __init__(self, session_id: str):
        super().__init__(session_id)
        self.session_id = session_id


def new_id(prefix: str) -> str:
    return prefix + os.urandom(16).hex()


def now_rfc3339() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % (int(t * 1000) % 1000)


def request_key(request_id: Any) -> tuple:
    """Ids are matched by JSON type and value ("1" != 1)."""
    return (type(request_id).__name__, request_id)


def _reject_constant(name: str) -> Any:
    raise ValueError("non-standard JSON constant " + name)


# ------------------------------------------------------------------------------------------------
# small state holders


class Batch:
    """Collects the responses of one batch array and writes them as one array when complete."""

    def __init__(self, agent: "ReferenceAgent"):
        self.agent = agent
        self.expected = 0
        self.responses: list = []
        self.sealed = False
        self.flushed = False

    def add(self, response: dict) -> None:
        self.responses.append(response)
        self.flush_if_complete()

    def flush_if_complete(self) -> None:
        if self.sealed and not self.flushed and self.expected and len(self.responses) >= self.expected:
            self.flushed = True
            self.agent.write_line(self.responses)


class Ctx:
    """One inbound request (or invalid message) that is owed exactly one response."""

    def __init__(self, request_id: Any, method: str | None, batch: Batch | None):
        self.id = request_id
        self.method = method
        self.batch = batch
        self.answered = False
        self.idempotency_key: str | None = None  # session/prompt: the submission's key, if any
        if batch is not None:
            batch.expected += 1


class Turn:
    """The foreground work of one inserted prompt."""

    def __init__(self, ctx: Ctx, user_message_id: str, prompt: list, text: str):
        self.ctx = ctx
        self.user_message_id = user_message_id
        self.prompt = prompt
        self.text = text
        self.agent_message_id: str | None = None
        self.agent_text: list[str] = []
        self.tool: dict | None = None
        self.pending_requests: list[int] = []
        self.waiting_for_user = False
        self.task: asyncio.Task | None = None
        self.started = False
        self.cancel_requested = False
        self.recorded = False
        self.done: asyncio.Future | None = None
        self.stop_tool: asyncio.Future | None = None  # set by tool_call/cancel (cancellable tool call)
        self.terminal: dict | None = None  # the live terminal of a "terminal" turn
        self.stop_terminal: asyncio.Future | None = None  # set by terminal/cancel


class LiveSession:
    """A session that is active on this connection (created or resumed here, not closed)."""

    def __init__(self, record: dict):
        self.record = record
        self.id: str = record["sessionId"]
        self.turn: Turn | None = None
        self.held: deque = deque()  # (ctx, prompt) of prompts not inserted yet
        self.retries: dict[str, list] = {}  # idempotency key of a held prompt -> retries (ctx) waiting for it
        self.closed = False
        self.background: list | None = None  # the reported background list (None: never reported)
        self.bg_terminals: dict[str, dict] = {}  # terminalId -> live background terminal (its stop future)


class SessionStore:
    """One JSON file per session, written atomically."""

    def __init__(self, directory: str):
        self.directory = os.path.join(directory, "sessions")

    def _path(self, session_id: Any) -> str | None:
        if not isinstance(session_id, str) or not _SAFE_ID.fullmatch(session_id):
            return None
        return os.path.join(self.directory, session_id + ".json")

    def load(self, session_id: Any) -> dict | None:
        path = self._path(session_id)
        if path is None or not os.path.isfile(path):
            return None
        try:
            with open(path, encoding="utf-8") as f:
                record = json.load(f)
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) and record.get("sessionId") == session_id else None

    def save(self, record: dict) -> None:
        path = self._path(record["sessionId"])
        if path is None:
            return
        os.makedirs(self.directory, exist_ok=True)
        tmp = "%s.%d.tmp" % (path, os.getpid())
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(record, f, ensure_ascii=False)
        os.replace(tmp, path)

    def delete(self, session_id: Any) -> None:
        path = self._path(session_id)
        if path is not None:
            try:
                os.remove(path)
            except OSError:
                pass

    def all(self) -> list[dict]:
        try:
            names = sorted(os.listdir(self.directory))
        except OSError:
            return []
        records = []
        for name in names:
            if name.endswith(".json"):
                record = self.load(name[:-5])
                if record is not None:
                    records.append(record)
        return records


# ------------------------------------------------------------------------------------------------
# the agent


class ReferenceAgent:
    # method name -> handler attribute (looked up on the instance, so subclasses can override)
    REQUESTS = {
        "initialize": "handle_initialize",
        "session/new": "handle_session_new",
        "session/list": "handle_session_list",
        "session/resume": "handle_session_resume",
        "session/close": "handle_session_close",
        "session/delete": "handle_session_delete",
        "session/prompt": "handle_session_prompt",
        "session/set_config_option": "handle_set_config_option",
        "tool_call/cancel": "handle_tool_call_cancel",
        "terminal/cancel": "handle_terminal_cancel",
    }
    NOTIFICATIONS = {
        "session/cancel": "handle_session_cancel",
        "$/cancel_request": "handle_cancel_request",
    }
    SUPPORTS_EMBEDDED_CONTEXT = True
    STEERING_WORDS = ("background", "permission", "elicit", "terminal", "cancellable", "tool", "fail", "slowly")

    def __init__(self, state_dir: str | None = None):
        if not state_dir and os.environ.get("ACP_REFERENCE_MEMORY_ONLY") == "1":
            state_dir = tempfile.mkdtemp(prefix="acp-reference-memory-")
            atexit.register(shutil.rmtree, state_dir, True)
        state_dir = state_dir or os.environ.get("ACP_REFERENCE_STATE_DIR") or os.path.join(
            os.getcwd(), ".acp-reference-agent"
        )
        self.store = SessionStore(state_dir)
        self.debug = os.environ.get("ACP_REFERENCE_DEBUG") == "1"
        self.work_scale = _work_scale(os.environ.get("ACP_REFERENCE_WORK_SCALE"))
        self.initialized = False
        self.client_capabilities: dict = {}
        self.sessions: dict[str, LiveSession] = {}
        self.inbound: dict[tuple, Any] = {}  # request key -> callback answering it with -32800
        self.pending_out: dict[int, asyncio.Future] = {}
        self.next_out_id = 0
        self.quiet = False  # set at shutdown: nothing more is written
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stopped: asyncio.Future | None = None
        self.exit_code = 0

    # -- process lifecycle -------------------------------------------------------------------

    def run(self) -> int:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.stopped = self.loop.create_future()
        self.on_startup()
        threading.Thread(target=self._read_stdin, name="stdin-reader", daemon=True).start()
        try:
            self.loop.run_until_complete(self.stopped)
            self.quiet = True
            tasks = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
            for session in self.sessions.values():
                if session.turn is not None:
                    self.cancel_turn(session.turn)
            for t in tasks:
                t.cancel()
            if tasks:
                self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        finally:
            self.loop.close()
        return self.exit_code

    def on_startup(self) -> None:
        """Hook run before the first line is read (writes nothing)."""

    def _read_stdin(self) -> None:
        stdin = sys.stdin.buffer
        while True:
            try:
                line = stdin.readline()
            except (OSError, ValueError):
                line = b""
            if not line:
                break
            self.loop.call_soon_threadsafe(self.on_line, line)
        self.loop.call_soon_threadsafe(self.on_eof)

    def on_eof(self) -> None:
        self.stop(0)

    def stop(self, code: int = 0) -> None:
        self.exit_code = code
        if self.stopped is not None and not self.stopped.done():
            self.stopped.set_result(None)

    def log(self, message: str) -> None:
        try:
            sys.stderr.write("[reference-agent] %s\n" % message)
            sys.stderr.flush()
        except (OSError, ValueError):
            pass

    # -- output ------------------------------------------------------------------------------

    def write_line(self, obj: Any) -> None:
        if self.quiet:
            return
        try:
            data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates from the peer: escape them
            data = json.dumps(obj, separators=(",", ":")).encode("ascii")
        if self.debug:
            self.log("-> " + data.decode("utf-8", "replace")[:2000])
        try:
            out = sys.stdout.buffer
            out.write(data + b"\n")
            out.flush()
        except (OSError, ValueError):
            self.quiet = True
            self.stop(0)

    def respond(self, ctx: Ctx, result: dict) -> None:
        self._send_response(ctx, {"jsonrpc": "2.0", "id": ctx.id, "result": result})

    def respond_error(self, ctx: Ctx, code: int, message: str, data: Any = None) -> None:
        error: dict = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._send_response(ctx, {"jsonrpc": "2.0", "id": ctx.id, "error": error})

    def _send_response(self, ctx: Ctx, response: dict) -> None:
        if ctx.answered:
            self.log("BUG: second response for id %r suppressed" % (ctx.id,))
            return
        ctx.answered = True
        if ctx.batch is not None:
            ctx.batch.add(response)
        else:
            self.write_line(response)

    def notify(self, method: str, params: dict) -> None:
        self.write_line({"jsonrpc": "2.0", "method": method, "params": params})

    def send_update(self, session: LiveSession, update: dict) -> None:
        if session.closed:  # nothing more for a closed session on this connection
            return
        if (update.get("sessionUpdate") == "state_update" and session.background is not None
                and "background" not in update):  # once reported, on every state update (STATE-005)
            update = dict(update, background=[dict(item) for item in session.background])
        self.notify("session/update", {"sessionId": session.id, "update": update})

    def send_request(self, method: str, params: dict) -> tuple[int, asyncio.Future]:
        request_id = self.next_out_id
        self.next_out_id += 1
        future = self.loop.create_future()
        self.pending_out[request_id] = future
        self.write_line({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id, future

    def abandon_request(self, request_id: int) -> None:
        """Stop waiting for one of our requests and tell the client with $/cancel_request."""
        future = self.pending_out.pop(request_id, None)
        if future is not None:
            if not future.done():
                future.cancel()
            self.notify("$/cancel_request", {"requestId": request_id})

    # -- input -------------------------------------------------------------------------------

    def on_line(self, raw: bytes) -> None:
        if self.debug:
            self.log("<- " + raw.decode("utf-8", "replace")[:2000].rstrip())
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and not text.strip():
            return  # blank line: nothing to answer
        try:
            if text is None:
                raise ValueError("not UTF-8")
            message = json.loads(text, parse_constant=_reject_constant)
        except ValueError:
            self.write_line({"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": "Parse error"}})
            return
        if isinstance(message, list):
            self.handle_batch(message)
        else:
            self.handle_message(message, None)

    def handle_batch(self, items: list) -> None:
        """ACP v2 has no JSON-RPC batches (the v2 Preview; ACP schema crate v1.14.0, #2625): a batch array,
        [] included, is one invalid request, refused whole; none of its members is dispatched."""
        self.respond_error(Ctx(None, None, None), INVALID_REQUEST, "Invalid Request: ACP v2 has no JSON-RPC batches")

    def handle_batch_per_member(self, items: list) -> None:
        """The older JSON-RPC 2.0 reading (members served, responses in one array): kept for the tests that
        prove the suite notes it and never fails it."""
        if not items:
            self.respond_error(Ctx(None, None, None), INVALID_REQUEST, "Invalid Request")
            return
        batch = Batch(self)
        for item in items:
            self.handle_message(item, batch)
        batch.sealed = True
        batch.flush_if_complete()

    @staticmethod
    def _valid_id(value: Any) -> bool:
        return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))

    def handle_message(self, msg: Any, batch: Batch | None) -> None:
        if not isinstance(msg, dict):
            self.respond_error(Ctx(None, None, batch), INVALID_REQUEST, "Invalid Request")
            return
        readable_id = msg.get("id") if self._valid_id(msg.get("id")) else None
        if "method" not in msg:
            if msg.get("jsonrpc") == "2.0" and "id" in msg and (("result" in msg) != ("error" in msg)):
                self.handle_response(msg)
            else:
                self.respond_error(Ctx(readable_id, None, batch), INVALID_REQUEST, "Invalid Request")
            return
        method = msg["method"]
        params = msg.get("params")
        bad_params = params is not None and not isinstance(params, (dict, list))
        if msg.get("jsonrpc") != "2.0" or not isinstance(method, str) or bad_params:
            if "id" in msg or not isinstance(method, str):
                self.respond_error(Ctx(readable_id, None, batch), INVALID_REQUEST, "Invalid Request")
            return  # a malformed notification is never answered
        if "id" not in msg:
            self.dispatch_notification(method, params)
            return
        if readable_id is None:  # id null, a float, a bool, an object ...
            self.respond_error(Ctx(None, method, batch), INVALID_REQUEST, "Invalid Request: bad id")
            return
        self.dispatch_request(Ctx(readable_id, method, batch), method, params)

    def handle_response(self, msg: dict) -> None:
        request_id = msg.get("id")
        if not (isinstance(request_id, int) and not isinstance(request_id, bool)):
            return
        future = self.pending_out.pop(request_id, None)
        if future is None or future.done():
            return  # unknown or abandoned request: a late answer is ignored
        if "error" in msg:
            future.set_result(("error", msg["error"]))
        else:
            future.set_result(("result", msg["result"]))

    def dispatch_notification(self, method: str, params: Any) -> None:
        if not self.initialized:
            return
        name = self.NOTIFICATIONS.get(method)
        if name is None or not isinstance(params, dict):
            return  # unknown notifications ($/..., _..., anything) are ignored
        try:
            getattr(self, name)(params)
        except Exception:
            self.log("notification %s failed:\n%s" % (method, traceback.format_exc()))

    def dispatch_request(self, ctx: Ctx, method: str, params: Any) -> None:
        if not self.initialized and method != "initialize":
            self.respond_error(ctx, INVALID_REQUEST, "Connection not initialized")
            return
        name = self.REQUESTS.get(method)
        if name is None:
            self.respond_error(ctx, METHOD_NOT_FOUND, "Method not found")
            return
        if params is None:
            params = {}
        if not isinstance(params, dict):
            self.respond_error(ctx, INVALID_PARAMS, "Invalid params: params must be an object")
            return
        self.guarded(ctx, getattr(self, name), ctx, params)

    def guarded(self, ctx: Ctx, fn, *args) -> None:
        """Run a handler step, turning its exceptions into the one response owed for ctx."""
        try:
            fn(*args)
        except InvalidParams as e:
            if not ctx.answered:
                self.respond_error(ctx, INVALID_PARAMS, "Invalid params: %s" % e)
        except SessionNotFound as e:
            if not ctx.answered:
                self.error_unknown_session(ctx, e.session_id)
        except Exception:
            self.log("request %s failed:\n%s" % (ctx.method, traceback.format_exc()))
            if not ctx.answered:
                self.respond_error(ctx, INTERNAL_ERROR, "Internal error")

    def spawn(self, coro, ctx: Ctx | None = None) -> asyncio.Task:
        async def wrapper():
            try:
                await coro
            except asyncio.CancelledError:
                raise
            except Exception:
                self.log("task failed:\n%s" % traceback.format_exc())
                if ctx is not None and not ctx.answered:
                    self.respond_error(ctx, INTERNAL_ERROR, "Internal error")

        return self.loop.create_task(wrapper())

    # -- parameter helpers ---------------------------------------------------------------------

    @staticmethod
    def require_str(params: dict, key: str) -> str:
        value = params.get(key)
        if not isinstance(value, str):
            raise InvalidParams("%s must be a string" % key)
        return value

    @staticmethod
    def require_abs_path(params: dict, key: str) -> str:
        value = params.get(key)
        if not isinstance(value, str) or not os.path.isabs(value):
            raise InvalidParams("%s must be an absolute path" % key)
        return value

    def check_session_setup(self, params: dict) -> None:
        """mcpServers / additionalDirectories / systemPrompt: nothing of it is advertised."""
        servers = params.get("mcpServers")
        if servers is not None:
            if not isinstance(servers, list):
                raise InvalidParams("mcpServers must be an array")
            if servers:
                raise InvalidParams("MCP servers are not supported (no MCP transport advertised)")
        dirs = params.get("additionalDirectories")
        if dirs is not None:
            if not isinstance(dirs, list):
                raise InvalidParams("additionalDirectories must be an array")
            if dirs:
                raise InvalidParams("additionalDirectories is not supported")
        if params.get("systemPrompt") is not None:
            raise InvalidParams("systemPrompt is not supported")

    def live_session(self, session_id: str) -> LiveSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise SessionNotFound(session_id)
        return session

    def error_unknown_session(self, ctx: Ctx, session_id: str) -> None:
        self.respond_error(ctx, RESOURCE_NOT_FOUND, "Session not found", {"sessionId": session_id})

    def save(self, session: LiveSession) -> None:
        session.record["updatedAt"] = now_rfc3339()
        try:
            self.store.save(session.record)
        except OSError as e:
            self.log("cannot persist session %s: %s" % (session.id, e))

    # -- initialize ----------------------------------------------------------------------------

    def negotiate_version(self, requested: int) -> int | None:
        """Highest supported version <= requested, or None."""
        candidates = [v for v in SUPPORTED_VERSIONS if v <= requested]
        return max(candidates) if candidates else None

    def capabilities(self) -> dict:
        session: dict = {"delete": {}}
        if self.SUPPORTS_EMBEDDED_CONTEXT:
            session["prompt"] = {"embeddedContext": {}}
        return {"session": session}

    def initialize_result(self, version: int) -> dict:
        return {
            "protocolVersion": version,
            "info": {"name": AGENT_NAME, "version": AGENT_VERSION},
            "capabilities": self.capabilities(),
        }

    def unsupported_version(self, ctx: Ctx, requested: int) -> None:
        self.respond_error(
            ctx,
            UNSUPPORTED_VERSION,
            "Unsupported protocol version",
            {"requested": requested, "supported": list(SUPPORTED_VERSIONS)},
        )

    def handle_initialize(self, ctx: Ctx, params: dict) -> None:
        version = params.get("protocolVersion")
        if not isinstance(version, int) or isinstance(version, bool) or not 0 <= version <= 65535:
            raise InvalidParams("protocolVersion must be an integer 0..65535")
        info = params.get("info")
        if not isinstance(info, dict) or not isinstance(info.get("name"), str) or not isinstance(info.get("version"), str):
            raise InvalidParams("info {name, version} is required")
        negotiated = self.negotiate_version(version)
        if negotiated is None:
            self.unsupported_version(ctx, version)  # the connection stays as it was
            return
        caps = params.get("capabilities")
        self.client_capabilities = caps if isinstance(caps, dict) else {}  # malformed = none
        self.initialized = True
        self.respond(ctx, self.initialize_result(negotiated))

    # -- config options ------------------------------------------------------------------------

    def default_config(self) -> dict:
        return {"mode": "ask", "verbose": False}

    def config_options(self, session_record: dict) -> list:
        config = session_record.get("config") or self.default_config()
        return [
            {
                "configId": "mode",
                "name": "Mode",
                "description": "Ask before changing files, or just write code",
                "category": "mode",
                "type": "select",
                "currentValue": config.get("mode", "ask"),
                "options": [
                    {"value": "ask", "name": "Ask"},
                    {"value": "code", "name": "Code"},
                ],
            },
            {
                "configId": "verbose",
                "name": "Verbose",
                "description": "Explain more in replies",
                "type": "boolean",
                "currentValue": bool(config.get("verbose", False)),
            },
        ]

    def handle_set_config_option(self, ctx: Ctx, params: dict) -> None:
        session = self.live_session(self.require_str(params, "sessionId"))
        config_id = self.require_str(params, "configId")
        kind = params.get("type")
        value = params.get("value")
        if config_id == "mode":
            if kind != "id" or value not in ("ask", "code"):
                raise InvalidParams("mode takes type \"id\" with value \"ask\" or \"code\"")
        elif config_id == "verbose":
            if kind != "boolean" or not isinstance(value, bool):
                raise InvalidParams("verbose takes type \"boolean\" with a boolean value")
        else:
            raise InvalidParams("unknown configId %r" % config_id)
        config = dict(session.record.get("config") or self.default_config())
        config[config_id] = value
        session.record["config"] = config
        self.save(session)
        self.respond(ctx, {"configOptions": self.config_options(session.record)})

    # -- session/new, list, delete ---------------------------------------------------------------

    def new_session_record(self, cwd: str) -> dict:
        return {
            "sessionId": new_id("sess_"),
            "cwd": cwd,
            "title": None,
            "createdAt": now_rfc3339(),
            "updatedAt": now_rfc3339(),
            "config": self.default_config(),
            "history": [],
        }

    def handle_session_new(self, ctx: Ctx, params: dict) -> None:
        cwd = self.require_abs_path(params, "cwd")
        self.check_session_setup(params)
        session = LiveSession(self.new_session_record(cwd))
        self.save(session)
        self.sessions[session.id] = session
        self.respond(ctx, self.new_session_result(session))

    def new_session_result(self, session: LiveSession) -> dict:
        return {"sessionId": session.id, "configOptions": self.config_options(session.record)}

    @staticmethod
    def encode_cursor(offset: int) -> str:
        return "offset-%d" % offset

    @staticmethod
    def decode_cursor(cursor: Any) -> int:
        if cursor is None:
            return 0
        match = _CURSOR.fullmatch(cursor) if isinstance(cursor, str) else None
        if match is None:
            raise InvalidParams("invalid cursor")
        return int(match.group(1))

    def session_info(self, record: dict) -> dict:
        info = {"sessionId": record["sessionId"], "cwd": record["cwd"]}
        if record.get("title"):
            info["title"] = record["title"]
        if record.get("updatedAt"):
            info["updatedAt"] = record["updatedAt"]
        return info

    def handle_session_list(self, ctx: Ctx, params: dict) -> None:
        cwd = params.get("cwd")
        if cwd is not None and (not isinstance(cwd, str) or not os.path.isabs(cwd)):
            raise InvalidParams("cwd must be an absolute path")
        offset = self.decode_cursor(params.get("cursor"))
        records = self.store.all()
        if cwd is not None:
            wanted = os.path.normpath(cwd)
            records = [r for r in records if isinstance(r.get("cwd"), str) and os.path.normpath(r["cwd"]) == wanted]
        records.sort(key=lambda r: (str(r.get("updatedAt") or ""), r["sessionId"]), reverse=True)
        if offset > len(records):
            raise InvalidParams("invalid cursor")
        page = records[offset : offset + PAGE_SIZE]
        result: dict = {"sessions": [self.session_info(r) for r in page]}
        if offset + PAGE_SIZE < len(records):
            result["nextCursor"] = self.encode_cursor(offset + PAGE_SIZE)
        self.respond(ctx, result)

    def handle_session_delete(self, ctx: Ctx, params: dict) -> None:
        session_id = self.require_str(params, "sessionId")
        session = self.sessions.pop(session_id, None)

        def finish() -> None:
            self.store.delete(session_id)
            self.respond(ctx, {})

        if session is None:
            finish()
        else:
            self.deactivate(ctx, session, finish)

    # -- session/close ---------------------------------------------------------------------------

    def close_unknown_session(self, ctx: Ctx, session_id: str) -> None:
        self.respond(ctx, {})

    def handle_session_close(self, ctx: Ctx, params: dict) -> None:
        session_id = self.require_str(params, "sessionId")
        session = self.sessions.pop(session_id, None)  # inactive for every later request
        if session is None:
            self.close_unknown_session(ctx, session_id)
            return
        self.deactivate(ctx, session, lambda: self.respond(ctx, {}))

    def deactivate(self, ctx: Ctx, session: LiveSession, then) -> None:
        """Cancel held prompts and running work (cancelled idle first), then mark closed and call then()."""
        self.cancel_held_prompts(session)
        turn = session.turn

        def finish() -> None:
            session.closed = True
            then()

        if turn is None:
            finish()
            return
        self.cancel_turn(turn)

        async def wait_then_finish():
            await turn.done
            self.guarded(ctx, finish)

        self.spawn(wait_then_finish(), ctx)

    # -- session/resume --------------------------------------------------------------------------

    @staticmethod
    def parse_replay_from(params: dict) -> bool:
        """True: replay from the start; False: no replay. Anything else is -32602."""
        cursor = params.get("replayFrom")
        if cursor is None:
            return False
        if isinstance(cursor, dict) and cursor.get("type") == "start":
            return True
        raise InvalidParams("unsupported replayFrom cursor")

    def handle_session_resume(self, ctx: Ctx, params: dict) -> None:
        session_id = self.require_str(params, "sessionId")
        self.require_abs_path(params, "cwd")
        self.check_session_setup(params)
        replay = self.parse_replay_from(params)
        session = self.sessions.get(session_id)
        if session is None:
            record = self.store.load(session_id)
            if record is None:
                raise SessionNotFound(session_id)
            session = LiveSession(record)
            self.sessions[session_id] = session
        self.resume_sequence(session, replay)
        self.respond(ctx, self.resume_result(session))

    def resume_sequence(self, session: LiveSession, replay: bool) -> None:
        if replay:
            self.replay_history(session)
            self.replay_marker(session)
        self.resume_state_snapshot(session, replay)

    def replay_history(self, session: LiveSession) -> None:
        for entry in session.record.get("history", []):
            update = self.history_update(entry)
            if update is not None:
                self.send_update(session, update)

    @staticmethod
    def history_update(entry: dict) -> dict | None:
        kind = entry.get("kind")
        if kind in ("user_message", "agent_message"):
            return {"sessionUpdate": kind, "messageId": entry["messageId"], "content": entry.get("content") or []}
        if kind == "tool_call":
            update = {"sessionUpdate": "tool_call_update"}
            update.update({k: v for k, v in entry.items() if k != "kind"})
            return update
        return None

    def replay_marker(self, session: LiveSession) -> None:
        self.send_update(session, {"sessionUpdate": "replay_complete"})

    def current_state(self, session: LiveSession) -> str:
        if session.turn is None:
            return "idle"
        return "requires_action" if session.turn.waiting_for_user else "running"

    def resume_state_snapshot(self, session: LiveSession, replay: bool) -> None:
        self.send_update(session, {"sessionUpdate": "state_update", "state": self.current_state(session)})

    def resume_result(self, session: LiveSession) -> dict:
        return {"configOptions": self.config_options(session.record)}

    # -- tool_call/cancel, terminal/cancel ---------------------------------------------------------

    def handle_tool_call_cancel(self, ctx: Ctx, params: dict) -> None:
        session_id = self.require_str(params, "sessionId")
        tool_call_id = self.require_str(params, "toolCallId")
        session = self.live_session(session_id)
        turn = session.turn
        tool = turn.tool if turn is not None else None
        if (tool is None or tool.get("toolCallId") != tool_call_id or tool.get("status") in FINAL_TOOL_STATUSES
                or (tool.get("capabilities") or {}).get("cancel") is None or turn.stop_tool is None):
            raise InvalidParams("unknown, final or non-cancellable tool call")
        self.accept_tool_cancel(ctx, turn)

    def accept_tool_cancel(self, ctx: Ctx, turn: Turn) -> None:
        """Acknowledge first; the work then reports the final status (work_cancellable)."""
        self.respond(ctx, {})
        if not turn.stop_tool.done():
            turn.stop_tool.set_result(True)

    def handle_terminal_cancel(self, ctx: Ctx, params: dict) -> None:
        session_id = self.require_str(params, "sessionId")
        terminal_id = self.require_str(params, "terminalId")
        session = self.live_session(session_id)
        bg = session.bg_terminals.get(terminal_id)
        if bg is not None:
            self.respond(ctx, {})
            if not bg["stop"].done():
                bg["stop"].set_result(True)
            return
        turn = session.turn
        term = turn.terminal if turn is not None else None
        if (term is None or term.get("terminalId") != terminal_id or term.get("exitStatus") is not None
                or (term.get("capabilities") or {}).get("cancel") is None or turn.stop_terminal is None):
            raise InvalidParams("unknown, exited or non-cancellable terminal")
        self.accept_terminal_cancel(ctx, turn)

    def accept_terminal_cancel(self, ctx: Ctx, turn: Turn) -> None:
        self.respond(ctx, {})
        if not turn.stop_terminal.done():
            turn.stop_terminal.set_result(True)

    # -- cancellation --------------------------------------------------------------------------

    def handle_session_cancel(self, params: dict) -> None:
        session_id = params.get("sessionId")
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            return  # unknown or inactive session: a notification is never answered
        self.cancel_held_prompts(session)
        if session.turn is not None:
            self.cancel_turn(session.turn)

    def handle_cancel_request(self, params: dict) -> None:
        request_id = params.get("requestId")
        if not self._valid_id(request_id):
            return
        callback = self.inbound.pop(request_key(request_id), None)
        if callback is not None:
            callback()  # otherwise: unknown or already answered, ignored

    def cancel_held_prompts(self, session: LiveSession) -> None:
        while session.held:
            ctx, _prompt = session.held.popleft()
            self.inbound.pop(request_key(ctx.id), None)
            self.respond_error(ctx, REQUEST_CANCELLED, "Request cancelled")
            self.settle_retries(session, ctx, None)

    def cancel_turn(self, turn: Turn) -> None:
        if turn.cancel_requested:
            return
        turn.cancel_requested = True
        if turn.started and turn.task is not None and not turn.task.done():
            turn.task.cancel()

    def cancelled_stop_reason(self) -> str:
        return "cancelled"

    def on_work_cancelled(self, session: LiveSession, turn: Turn) -> None:
        """Abandon pending permission requests and cancel an unfinished tool call."""
        for request_id in list(turn.pending_requests):
            self.abandon_request(request_id)
        turn.pending_requests.clear()
        if turn.tool is not None and turn.tool.get("status") not in FINAL_TOOL_STATUSES:
            if (turn.tool.get("capabilities") or {}).get("cancel") is not None:  # withdraw it (TOOL-009)
                self.tool_update(session, turn, status="cancelled", capabilities={"cancel": None})
            else:
                self.tool_update(session, turn, status="cancelled")

    # -- session/prompt ----------------------------------------------------------------------------

    def validate_block(self, block: Any) -> None:
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise InvalidParams("content blocks must be objects with a string type")
        kind = block["type"]
        if kind == "text":
            if not isinstance(block.get("text"), str):
                raise InvalidParams("text block without text")
        elif kind == "resource_link":
            if not isinstance(block.get("uri"), str) or not isinstance(block.get("name"), str):
                raise InvalidParams("resource_link needs uri and name")
            size = block.get("size")
            if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
                raise InvalidParams("resource_link size must be a non-negative integer")
        elif kind == "resource" and self.SUPPORTS_EMBEDDED_CONTEXT:
            resource = block.get("resource")
            if not isinstance(resource, dict) or not isinstance(resource.get("uri"), str):
                raise InvalidParams("resource block needs resource.uri")
            if not isinstance(resource.get("text"), str) and not isinstance(resource.get("blob"), str):
                raise InvalidParams("resource block needs resource.text or resource.blob")
        else:
            raise InvalidParams("unsupported content block type %r" % kind)

    def validate_prompt(self, prompt: list) -> None:
        if not prompt:
            raise InvalidParams("prompt must contain at least one content block")
        for block in prompt:
            self.validate_block(block)

    @staticmethod
    def prompt_text(prompt: list) -> str:
        return "\n".join(b["text"] for b in prompt if isinstance(b, dict) and b.get("type") == "text")

    def handle_session_prompt(self, ctx: Ctx, params: dict) -> None:
        session_id = self.require_str(params, "sessionId")
        prompt = params.get("prompt")
        if not isinstance(prompt, list):
            raise InvalidParams("prompt must be an array of content blocks")
        session = self.live_session(session_id)
        try:
            self.validate_prompt(prompt)
        except InvalidParams as e:
            self.reject_prompt(ctx, session, prompt, str(e))
            return
        key = params.get("idempotencyKey")
        if isinstance(key, str):
            ctx.idempotency_key = key
            if self.answer_retry(ctx, session, key):
                return
        if session.turn is not None or session.held:
            self.hold_prompt(ctx, session, prompt)
        else:
            self.insert_prompt(ctx, session, prompt)

    def reject_prompt(self, ctx: Ctx, session: LiveSession, prompt: list, reason: str) -> None:
        self.respond_error(ctx, INVALID_PARAMS, "Invalid params: %s" % reason)

    def hold_prompt(self, ctx: Ctx, session: LiveSession, prompt: list) -> None:
        session.held.append((ctx, prompt))
        if ctx.idempotency_key is not None:
            session.retries[ctx.idempotency_key] = []

        def cancel() -> None:  # $/cancel_request for a held prompt
            for item in list(session.held):
                if item[0] is ctx:
                    session.held.remove(item)
                    self.respond_error(ctx, REQUEST_CANCELLED, "Request cancelled")
                    self.settle_retries(session, ctx, None)

        self.inbound[request_key(ctx.id)] = cancel

    # -- idempotency keys --------------------------------------------------------------------------

    def keyed_message_ids(self, session: LiveSession) -> dict:
        """Idempotency key -> messageId of the submission it inserted (kept with the session)."""
        return session.record.setdefault("idempotencyKeys", {})

    def answer_retry(self, ctx: Ctx, session: LiveSession, key: str) -> bool:
        """A retry of a known submission: answer it with the original messageId (at once, or once the
        held original is inserted). False for a key not seen in this session."""
        message_id = self.keyed_message_ids(session).get(key)
        if isinstance(message_id, str):
            self.respond_prompt(ctx, session, message_id)
            return True
        waiting = session.retries.get(key)
        if waiting is None:
            return False
        waiting.append(ctx)

        def cancel() -> None:  # $/cancel_request for a waiting retry
            if ctx in waiting:
                waiting.remove(ctx)
                self.respond_error(ctx, REQUEST_CANCELLED, "Request cancelled")

        self.inbound[request_key(ctx.id)] = cancel
        return True

    def remember_key(self, ctx: Ctx, session: LiveSession, message_id: str) -> None:
        if ctx.idempotency_key is not None:
            self.keyed_message_ids(session)[ctx.idempotency_key] = message_id

    def settle_retries(self, session: LiveSession, ctx: Ctx, message_id: str | None) -> None:
        """Answer the retries that waited for the held submission ``ctx``: its messageId, or -32800 when
        it was cancelled before insertion."""
        if ctx.idempotency_key is None:
            return
        for retry in session.retries.pop(ctx.idempotency_key, []):
            self.inbound.pop(request_key(retry.id), None)
            if message_id is None:
                self.respond_error(retry, REQUEST_CANCELLED, "Request cancelled")
            else:
                self.respond_prompt(retry, session, message_id)

    def start_next_held(self, session: LiveSession) -> None:
        if session.held and not session.closed and self.sessions.get(session.id) is session:
            ctx, prompt = session.held.popleft()
            self.inbound.pop(request_key(ctx.id), None)
            self.guarded(ctx, self.insert_prompt, ctx, session, prompt)

    def new_user_message_id(self, session: LiveSession, prompt: list) -> str:
        return new_id("msg_")

    def new_agent_message_id(self, session: LiveSession) -> str:
        return new_id("msg_")

    def prompt_result(self, message_id: str) -> dict:
        return {"messageId": message_id}

    def record_user_message(self, session: LiveSession, message_id: str, prompt: list) -> None:
        session.record.setdefault("history", []).append(
            {"kind": "user_message", "messageId": message_id, "content": prompt}
        )
        if not session.record.get("title"):
            title = " ".join(self.prompt_text(prompt).split())[:60]
            session.record["title"] = title or None
        self.save(session)

    def emit_user_message(self, session: LiveSession, message_id: str, prompt: list) -> None:
        self.send_update(session, {"sessionUpdate": "user_message", "messageId": message_id, "content": prompt})

    def respond_prompt(self, ctx: Ctx, session: LiveSession, message_id: str) -> None:
        self.respond(ctx, self.prompt_result(message_id))

    def insert_prompt(self, ctx: Ctx, session: LiveSession, prompt: list) -> None:
        message_id = self.new_user_message_id(session, prompt)
        self.remember_key(ctx, session, message_id)  # saved with the user message
        self.record_user_message(session, message_id, prompt)
        self.emit_user_message(session, message_id, prompt)
        self.respond_prompt(ctx, session, message_id)
        self.settle_retries(session, ctx, message_id)
        self.start_work(ctx, session, message_id, prompt)

    def start_work(self, ctx: Ctx, session: LiveSession, message_id: str, prompt: list) -> None:
        turn = Turn(ctx, message_id, prompt, self.prompt_text(prompt))
        turn.done = self.loop.create_future()
        session.turn = turn
        self.report_running(session)
        turn.task = self.loop.create_task(self.run_turn(session, turn))

    def report_running(self, session: LiveSession) -> None:
        if session.turn is not None:
            session.turn.waiting_for_user = False
        self.send_update(session, {"sessionUpdate": "state_update", "state": "running"})

    def report_requires_action(self, session: LiveSession) -> None:
        if session.turn is not None:
            session.turn.waiting_for_user = True
        self.send_update(session, {"sessionUpdate": "state_update", "state": "requires_action"})

    def idle_update(self, stop_reason: str | None, error: dict | None = None) -> dict:
        update: dict = {"sessionUpdate": "state_update", "state": "idle", "stopReason": stop_reason}
        if error is not None:
            update["error"] = error
        return update

    def finish_work(self, session: LiveSession, turn: Turn, stop_reason: str, error: dict | None) -> None:
        self.send_update(session, self.idle_update(stop_reason, error))

    async def run_turn(self, session: LiveSession, turn: Turn) -> None:
        turn.started = True
        stop_reason, error = "end_turn", None
        try:
            if turn.cancel_requested:  # cancelled before the task got to run
                raise asyncio.CancelledError()
            stop_reason, error = await self.do_work(session, turn)
        except asyncio.CancelledError:
            stop_reason, error = self.cancelled_stop_reason(), None
            self.on_work_cancelled(session, turn)
        except Exception:
            self.log("work failed:\n%s" % traceback.format_exc())
            stop_reason, error = "error", {"code": INTERNAL_ERROR, "message": "Internal error while working"}
        self.record_agent_message(session, turn)
        session.turn = None
        self.finish_work(session, turn, stop_reason, error)
        if turn.done is not None and not turn.done.done():
            turn.done.set_result(stop_reason)
        self.start_next_held(session)

    # -- work (steered by the prompt text) ------------------------------------------------------

    def choose_behaviour(self, text: str) -> str:
        lowered = text.lower()
        for word in self.STEERING_WORDS:
            if word in lowered:
                return word
        return "echo"

    async def do_work(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        behaviour = self.choose_behaviour(turn.text)
        return await getattr(self, "work_" + behaviour)(session, turn)

    def agent_chunk(self, session: LiveSession, turn: Turn, text: str) -> None:
        if turn.agent_message_id is None:
            turn.agent_message_id = self.new_agent_message_id(session)
        turn.agent_text.append(text)
        self.send_update(
            session,
            {
                "sessionUpdate": "agent_message_chunk",
                "messageId": turn.agent_message_id,
                "content": {"type": "text", "text": text},
            },
        )

    def record_agent_message(self, session: LiveSession, turn: Turn) -> None:
        if turn.recorded or turn.agent_message_id is None:
            return
        turn.recorded = True
        session.record.setdefault("history", []).append(
            {
                "kind": "agent_message",
                "messageId": turn.agent_message_id,
                "content": [{"type": "text", "text": "".join(turn.agent_text)}],
            }
        )
        self.save(session)

    def tool_update(self, session: LiveSession, turn: Turn, **fields: Any) -> None:
        if turn.tool is None:
            turn.tool = {"toolCallId": new_id("call_")}
        turn.tool.update(fields)
        update = {"sessionUpdate": "tool_call_update", "toolCallId": turn.tool["toolCallId"]}
        update.update(fields)
        self.send_update(session, update)
        if fields.get("status") in FINAL_TOOL_STATUSES:  # the final state is history
            entry = {"kind": "tool_call"}
            entry.update(turn.tool)
            session.record.setdefault("history", []).append(entry)
            self.save(session)

    async def pause(self, seconds: float) -> None:
        """Simulated work: ``seconds`` times ACP_REFERENCE_WORK_SCALE (1 by default; 0 answers at once)."""
        await asyncio.sleep(seconds * self.work_scale)

    async def work_echo(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        self.agent_chunk(session, turn, "You said: ")
        await self.pause(0.01)
        self.agent_chunk(session, turn, turn.text or "(no text)")
        return "end_turn", None

    async def work_slowly(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        for i in range(60):
            self.agent_chunk(session, turn, "%d " % (i + 1))
            await self.pause(0.1)
        return "end_turn", None

    async def work_fail(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        await self.pause(0.01)
        return "error", {"code": INTERNAL_ERROR, "message": "Simulated failure: the prompt asked to fail"}

    async def work_tool(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        path = os.path.join(session.record["cwd"], "README.md")
        self.tool_update(session, turn, title="Read README.md", name="read_file", kind="read", status="pending",
                         locations=[{"path": path}])
        await self.pause(0.02)
        self.tool_update(session, turn, status="in_progress")
        self.tool_content_chunk(session, turn, {"type": "content", "content": {"type": "text", "text": "(reading)"}})
        await self.pause(0.02)
        self.tool_update(session, turn, status="completed",
                         content=[{"type": "content", "content": {"type": "text", "text": "(README.md is empty)"}},
                                  self.session_reference(session)])
        self.agent_chunk(session, turn, "I read README.md; it is empty.")
        return "end_turn", None

    @staticmethod
    def permission_approved(answer: tuple) -> bool:
        kind, value = answer
        if kind != "result" or not isinstance(value, dict):
            return False
        outcome = value.get("outcome")
        return isinstance(outcome, dict) and outcome.get("outcome") == "selected" and outcome.get("optionId") == "allow"

    async def work_permission(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        deleting = "delete" in turn.text.lower()
        kind = "delete" if deleting else "edit"
        title = "Delete build/" if deleting else "Edit README.md"
        self.tool_update(session, turn, title=title, name="delete_path" if deleting else "edit_file",
                         kind=kind, status="pending")
        request_id, future = self.send_request(
            "session/request_permission",
            {
                "sessionId": session.id,
                "title": title + "?",
                "subject": {"type": "tool_call", "toolCall": {"toolCallId": turn.tool["toolCallId"]}},
                "options": [
                    {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
                ],
            },
        )
        turn.pending_requests.append(request_id)
        self.report_requires_action(session)
        answer = await future  # session/cancel cancels this await (see on_work_cancelled)
        turn.pending_requests.remove(request_id)
        self.report_running(session)
        if not self.permission_approved(answer):
            self.tool_update(session, turn, status="failed")
            self.agent_chunk(session, turn, "Permission was not granted; nothing was changed.")
            return "end_turn", None
        self.tool_update(session, turn, status="in_progress")
        await self.pause(0.02)
        self.tool_update(session, turn, status="completed",
                         content=[{"type": "content", "content": {"type": "text", "text": "Done: " + title}},
                                  self.tool_diff(session, deleting)])
        self.agent_chunk(session, turn, "Done.")
        return "end_turn", None

    def tool_diff(self, session: LiveSession, deleting: bool) -> dict:
        """Diff content of the permitted edit / delete (changes plus a git_patch with absolute paths)."""
        if deleting:
            path = os.path.join(session.record["cwd"], "build", "out.txt")
            return {"type": "diff", "changes": [{"operation": "delete", "path": path}],
                    "patch": {"format": "git_patch", "text": "diff --git %s %s\ndeleted file mode 100644\n--- %s\n"
                              "+++ /dev/null\n@@ -1 +0,0 @@\n-built\n" % (path, path, path)}}
        path = os.path.join(session.record["cwd"], "README.md")
        return {"type": "diff", "changes": [{"operation": "modify", "path": path}],
                "patch": {"format": "git_patch", "text": "diff --git %s %s\n--- %s\n+++ %s\n@@ -0,0 +1 @@\n"
                          "+# Project\n" % (path, path, path, path)}}

    def session_reference(self, session: LiveSession) -> dict:
        """Tool content referring to a session the client knows (here: the prompting session itself)."""
        return {"type": "session", "sessionId": session.id}

    def tool_content_chunk(self, session: LiveSession, turn: Turn, content: dict) -> None:
        """Append one ToolCallContent item to the running tool call (tool_call_content_chunk)."""
        self.send_update(session, {"sessionUpdate": "tool_call_content_chunk", "toolCallId": turn.tool["toolCallId"],
                                   "content": content})

    async def wait_stop(self, future: asyncio.Future, seconds: float) -> bool:
        """True when ``future`` is set (a tool_call/cancel or terminal/cancel) within ``seconds``."""
        try:
            await asyncio.wait_for(asyncio.shield(future), seconds)
            return True
        except asyncio.TimeoutError:
            return False

    async def work_cancellable(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        turn.stop_tool = self.loop.create_future()
        self.tool_update(session, turn, title="Run the test suite", name="run_tests", kind="execute",
                         status="in_progress", capabilities={"cancel": {}})
        if await self.wait_stop(turn.stop_tool, 5.0):
            self.tool_update(session, turn, status="cancelled", capabilities={"cancel": None})
            self.agent_chunk(session, turn, "The test run was cancelled; carrying on without it.")
        else:
            self.tool_update(session, turn, status="completed", capabilities={"cancel": None},
                             content=[{"type": "content", "content": {"type": "text", "text": "all tests passed"}}])
            self.agent_chunk(session, turn, "All tests passed.")
        return "end_turn", None

    def terminal_update(self, session: LiveSession, turn: Turn, **fields: Any) -> None:
        turn.terminal.update(fields)
        update = {"sessionUpdate": "terminal_update", "terminalId": turn.terminal["terminalId"]}
        update.update(fields)
        self.send_update(session, update)

    def terminal_chunk(self, session: LiveSession, turn: Turn, data: bytes) -> None:
        import base64
        self.send_update(session, {"sessionUpdate": "terminal_output_chunk", "terminalId": turn.terminal["terminalId"],
                                   "data": base64.b64encode(data).decode("ascii")})

    async def work_terminal(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        turn.stop_terminal = self.loop.create_future()
        turn.terminal = {"terminalId": new_id("term_")}
        self.tool_update(session, turn, title="Run make test", name="run_command", kind="execute", status="in_progress",
                         content=[{"type": "terminal", "terminalId": turn.terminal["terminalId"]}])
        self.terminal_update(session, turn, command="make test", cwd=session.record["cwd"], capabilities={"cancel": {}})
        self.terminal_chunk(session, turn, b"running tests...\n")
        if await self.wait_stop(turn.stop_terminal, 5.0):
            self.terminal_chunk(session, turn, b"^C\n")
            self.terminal_update(session, turn, exitStatus={"exitCode": None, "signal": "SIGTERM"},
                                 capabilities={"cancel": None})
            text = "The test command was stopped."
        else:
            self.terminal_chunk(session, turn, b"all tests passed\n")
            self.terminal_update(session, turn, exitStatus={"exitCode": 0, "signal": None}, capabilities={"cancel": None})
            text = "All tests passed."
        await self.pause(0.02)
        self.tool_update(session, turn, status="completed")  # the agent's own decision, not the cancel's
        self.agent_chunk(session, turn, text)
        return "end_turn", None

    async def work_background(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        """A dev server whose tool call returns while its terminal keeps running in the background."""
        terminal_id = new_id("term_")
        turn.terminal = {"terminalId": terminal_id}
        self.tool_update(session, turn, title="Start the dev server", name="run_command", kind="execute",
                         status="in_progress", content=[{"type": "terminal", "terminalId": terminal_id}])
        self.terminal_update(session, turn, command="npm run dev", cwd=session.record["cwd"],
                             capabilities={"cancel": {}})
        self.terminal_chunk(session, turn, b"server listening on :3000\n")
        self.tool_update(session, turn, status="completed")  # control returns; the process keeps running
        bg = {"terminalId": terminal_id, "stop": self.loop.create_future()}
        session.bg_terminals[terminal_id] = bg
        session.background = (session.background or []) + [{"type": "terminal", "terminalId": terminal_id}]
        self.loop.create_task(self.run_background_terminal(session, bg))
        self.agent_chunk(session, turn, "The dev server runs in the background.")
        return "end_turn", None

    BACKGROUND_SECONDS = 30.0  # a background terminal nobody stops ends on its own

    async def run_background_terminal(self, session: LiveSession, bg: dict) -> None:
        """Wait for terminal/cancel (or the time limit): exitStatus first, then the snapshot without it."""
        stopped = await self.wait_stop(bg["stop"], self.BACKGROUND_SECONDS)
        self.end_background_terminal(session, bg["terminalId"], {"exitCode": None, "signal": "SIGTERM"} if stopped
                                     else {"exitCode": 0, "signal": None})

    def end_background_terminal(self, session: LiveSession, terminal_id: str, exit_status: dict) -> None:
        if session.bg_terminals.pop(terminal_id, None) is None:
            return
        self.send_update(session, {"sessionUpdate": "terminal_update", "terminalId": terminal_id,
                                   "exitStatus": exit_status, "capabilities": {"cancel": None}})
        session.background = [item for item in session.background or [] if item.get("terminalId") != terminal_id]
        self.send_update(session, {"sessionUpdate": "state_update", "state": self.current_state(session)})

    def elicitation_modes(self) -> set:
        """Elicitation modes the client advertised in initialize (a non-null object each)."""
        caps = self.client_capabilities.get("elicitation")
        if not isinstance(caps, dict):
            return set()
        return {m for m in ("form", "url") if isinstance(caps.get(m), dict)}

    @staticmethod
    def elicitation_content(answer: tuple) -> dict | None:
        """The accepted content, or None for anything else (decline, cancel, unknown action, error)."""
        kind, value = answer
        if kind != "result" or not isinstance(value, dict) or value.get("action") != "accept":
            return None
        content = value.get("content")
        return content if isinstance(content, dict) else {}

    def elicitation_schema(self) -> dict:
        """The requestedSchema of the form elicitation."""
        return {"type": "object", "properties": {"projectName": {"type": "string", "title": "Project name"}},
                "required": ["projectName"]}

    def new_elicitation_id(self) -> str:
        return new_id("elic_")

    def complete_elicitation(self, elicitation_id: str) -> None:
        """The out-of-band URL interaction is over: elicitation/complete (a notification)."""
        self.notify("elicitation/complete", {"elicitationId": elicitation_id})

    def elicit_waiting(self, session: LiveSession) -> None:
        """An elicitation blocks the turn: report requires_action."""
        self.report_requires_action(session)

    async def work_elicit_url(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        eid = self.new_elicitation_id()
        request_id, future = self.send_request("elicitation/create", {
            "sessionId": session.id, "mode": "url", "message": "Please confirm the licence in your browser.",
            "elicitationId": eid, "url": "https://example.com/acp/licence?elicitation=" + eid,
        })
        turn.pending_requests.append(request_id)
        self.elicit_waiting(session)
        answer = await future  # session/cancel cancels this await (see on_work_cancelled)
        turn.pending_requests.remove(request_id)
        self.report_running(session)
        if self.elicitation_content(answer) is None:
            self.agent_chunk(session, turn, "The licence was not confirmed; I carried on without it.")
            return "end_turn", None
        await self.pause(0.02)  # the user finishes in the browser
        self.complete_elicitation(eid)
        self.agent_chunk(session, turn, "The licence was confirmed.")
        return "end_turn", None

    async def work_elicit(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        if "url" in turn.text.lower() and "url" in self.elicitation_modes():
            return await self.work_elicit_url(session, turn)
        if "form" not in self.elicitation_modes():
            self.agent_chunk(session, turn, "I would ask you for a project name, but your client has no forms.")
            return "end_turn", None
        request_id, future = self.send_request("elicitation/create", {
            "sessionId": session.id,
            "mode": "form",
            "message": "What should the project be called?",
            "requestedSchema": self.elicitation_schema(),
        })
        turn.pending_requests.append(request_id)
        self.elicit_waiting(session)
        answer = await future  # session/cancel cancels this await (see on_work_cancelled)
        turn.pending_requests.remove(request_id)
        self.report_running(session)
        content = self.elicitation_content(answer)
        if content is None:
            self.agent_chunk(session, turn, "No name given; I used the default name.")
        else:
            self.agent_chunk(session, turn, "Project name: %s" % content.get("projectName"))
        return "end_turn", None


def main(agent_class: type = ReferenceAgent) -> int:
    return agent_class().run()


if __name__ == "__main__":
    sys.exit(main())
