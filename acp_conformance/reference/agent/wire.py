"""The agent's JSON-RPC vocabulary: error codes, ids, and the inbound request owed one response."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import ReferenceAgent

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
RESOURCE_NOT_FOUND = -32002
UNSUPPORTED_VERSION = -32022

FINAL_TOOL_STATUSES = ("completed", "failed", "cancelled")


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
