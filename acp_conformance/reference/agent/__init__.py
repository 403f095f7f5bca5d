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

Layout: ``ReferenceAgent`` splits its behaviour into small methods so that a broken variant ("mutant",
see tests/mutants/agent_mutants.py) is a subclass overriding one of them; ``main()`` takes the class to
run. The methods live in one mixin per responsibility, each in its own module of this package (the
mixins share the state ``ReferenceAgent.__init__`` sets up; none is usable alone):

* ``wire``: error codes, ids, the request owed a response (``Ctx``), batches;
* ``state``: a turn, a live session, the session store on disk;
* ``connection``: the process, reading and writing lines, dispatching messages;
* ``initialize``, ``config``: initialize and the per-session config options;
* ``sessions``: session/new, list, close, delete and the parameter checks they share;
* ``resume``: session/resume and the replay of history;
* ``cancellation``: session/cancel, ``$/cancel_request``, tool_call/cancel, terminal/cancel;
* ``prompts``: session/prompt, held prompts, idempotency keys and the turn around the work;
* ``work``, ``elicitation``: the simulated work a prompt's text steers.

Every name the mutants import (``ReferenceAgent``, ``main``, the error codes, ``Ctx``, ``Turn``,
``LiveSession``, ...) is importable from here.
"""

from __future__ import annotations

import sys

import asyncio
import atexit
import os
import shutil
import tempfile
from typing import Any

from .cancellation import CancellationMixin
from .config import ConfigMixin
from .connection import ConnectionMixin
from .elicitation import ElicitationMixin
from .initialize import AGENT_NAME, AGENT_VERSION, SUPPORTED_VERSIONS, InitializeMixin
from .prompts import PromptsMixin
from .resume import ResumeMixin
from .sessions import _CURSOR, PAGE_SIZE, SessionsMixin
from .state import _SAFE_ID, LiveSession, SessionStore, Turn
from .wire import (FINAL_TOOL_STATUSES, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND,
                   PARSE_ERROR, REQUEST_CANCELLED, RESOURCE_NOT_FOUND, UNSUPPORTED_VERSION, Batch, Ctx,
                   InvalidParams, SessionNotFound, _reject_constant, new_id, now_rfc3339, request_key)
from .work import WorkMixin, _work_scale

__all__ = [
    "AGENT_NAME", "AGENT_VERSION", "FINAL_TOOL_STATUSES", "INTERNAL_ERROR", "INVALID_PARAMS", "INVALID_REQUEST",
    "METHOD_NOT_FOUND", "PAGE_SIZE", "PARSE_ERROR", "REQUEST_CANCELLED", "RESOURCE_NOT_FOUND", "SUPPORTED_VERSIONS",
    "UNSUPPORTED_VERSION", "_CURSOR", "_SAFE_ID", "_reject_constant", "_work_scale", "Batch", "Ctx",
    "InvalidParams", "LiveSession", "ReferenceAgent", "SessionNotFound", "SessionStore", "Turn", "main", "new_id",
    "now_rfc3339", "request_key",
]


class ReferenceAgent(ConnectionMixin, InitializeMixin, ConfigMixin, SessionsMixin, ResumeMixin, CancellationMixin,
                     PromptsMixin, WorkMixin, ElicitationMixin):
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


def main(agent_class: type = ReferenceAgent) -> int:
    if sys.argv[1:3] == ["--protocol", "1"] and agent_class is ReferenceAgent:  # the v1 mode (agent_v1.py)
        from ..agent_v1 import main as main_v1
        return main_v1()
    return agent_class().run()
