"""What the agent keeps: the turn of a prompt, a session live on the connection, sessions on disk."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections import deque
from typing import Any

from .wire import Ctx

_SAFE_ID = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,199}")


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
