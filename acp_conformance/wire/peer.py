"""A JSON-RPC 2.0 endpoint over one transport: request ids, pending requests, inbound requests.

Knows JSON-RPC, not rules. The suite's own requests get fresh integer ids; responses are matched
to them by exact id; requests the target sends are handed to ``on_request``, which answers them
at once (returns a response body) or later (returns None and calls ``respond``). Waiting is on
events, never on sleeps: ``wait_for`` wakes on every frame and gives up at its deadline.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

import anyio

from .transcript import RECEIVED, Frame, Transcript, members, parse_line
from .transport import Transport


class WaitTimeout(Exception):
    """What the suite waited for did not happen in time; the message says what and how long."""


class TargetGone(Exception):
    """The target ended its output (or exited) while the suite was waiting for it."""


def encode(msg: Any) -> bytes:
    return json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


@dataclass
class Pending:
    id: Any
    method: str
    frame: Frame
    response: Frame | None = None

    def __post_init__(self) -> None:
        self.done = anyio.Event()

    @property
    def msg(self) -> dict[str, Any] | None:
        return self.response.msg if self.response is not None else None

    @property
    def result(self) -> Any:
        return self.msg.get("result") if isinstance(self.msg, dict) else None

    @property
    def error(self) -> Any:
        return self.msg.get("error") if isinstance(self.msg, dict) else None


def _id_key(value: Any) -> tuple[str, Any]:
    if isinstance(value, (list, dict)):  # an illegal id; keyed by its text so it cannot crash us
        return (type(value).__name__, json.dumps(value, sort_keys=True))
    return (type(value).__name__, value)


class Peer:
    def __init__(self, transport: Transport, transcript: Transcript,
                 on_request: Callable[[Frame, dict[str, Any]], Any] | None = None,
                 first_id: int = 0):
        self.transport = transport
        self.transcript = transcript
        self.on_request = on_request
        self.next_id = first_id
        self.pending: dict[tuple[str, Any], Pending] = {}
        self.inbound: dict[tuple[str, Any], dict[str, Any]] = {}  # target requests not yet answered
        self._changed = anyio.Event()
        transport.on_frame = self._on_frame
        transport.on_eof = self._wake

    # -- incoming ---------------------------------------------------------------------------
    def _on_frame(self, frame: Frame) -> None:
        for one in members(frame):  # a batch array's members are dispatched one by one
            item = one.msg
            if not isinstance(item, dict):
                continue
            if "method" in item and "id" in item and item.get("id") is not None:
                self.inbound[_id_key(item["id"])] = item
                if self.on_request is not None:
                    self.on_request(frame, item)
            elif "method" not in item and "id" in item:
                p = self.pending.get(_id_key(item["id"]))
                if p is not None and p.response is None:
                    p.response = one  # the member itself: p.msg is the response object
                    p.done.set()
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    # -- outgoing ---------------------------------------------------------------------------
    def new_id(self) -> int:
        i = self.next_id
        self.next_id += 1
        return i

    async def request(self, method: str, params: Any = None, id: Any = None,
                      extra: dict[str, Any] | None = None) -> Pending:
        """Send a request and return its pending handle at once (``await_response`` waits)."""
        rid = self.new_id() if id is None else id
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        if extra:
            msg.update(extra)
        frame = await self.transport.write(encode(msg), msg)
        p = Pending(rid, method, frame)
        self.pending.setdefault(_id_key(rid), p)
        return p

    async def notify(self, method: str, params: Any = None) -> Frame:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        return await self.transport.write(encode(msg), msg)

    async def respond(self, id: Any, result: Any = None, error: Any = None) -> Frame:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id}
        if error is not None:
            msg["error"] = error
        else:
            msg["result"] = result if result is not None else {}
        self.inbound.pop(_id_key(id), None)
        return await self.transport.write(encode(msg), msg)

    async def send_raw(self, raw: bytes) -> Frame:
        msg, _problem = parse_line(raw)  # None for a line that is not (strict) JSON
        return await self.transport.write(raw, msg)

    # -- waiting ----------------------------------------------------------------------------
    async def await_response(self, p: Pending, timeout: float) -> Pending:
        if p.response is None:
            await self._wait(lambda: p.response is not None, timeout,
                             f"the response to {p.method} (id {json.dumps(p.id)}, frame #{p.frame.seq})")
        return p

    async def wait_for(self, predicate: Callable[[Frame], bool], timeout: float, what: str,
                       since: int = 0) -> Frame:
        """Wait for a received frame (seq >= since) that satisfies ``predicate``; a batch array's members are
        offered one by one (``members``), and the one that satisfies it is returned."""
        pos = since
        found: list[Frame] = []

        def scan() -> bool:
            nonlocal pos
            frames = self.transcript.frames
            while pos < len(frames):
                f = frames[pos]
                pos += 1
                if f.direction != RECEIVED:
                    continue
                for one in members(f):  # a batch array: each member on its own
                    if predicate(one):
                        found.append(one)
                        return True
            return False

        await self._wait(scan, timeout, what)
        return found[0]

    async def _wait(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        with anyio.move_on_after(timeout) as scope:
            while not done():
                if self.transport.eof.is_set():
                    if done():
                        return
                    with anyio.move_on_after(1.0):  # an exit usually follows the end of output
                        await self.transport.exited.wait()
                    raise TargetGone(f"the target closed its output ({self._how_gone()}) while the "
                                     f"suite was waiting for {what}")
                await self._changed.wait()
        if scope.cancelled_caught and not done():
            raise WaitTimeout(f"{what} did not arrive within {timeout:g} s")

    def _how_gone(self) -> str:
        from .transport import describe_exit
        return describe_exit(self.transport.returncode) if self.transport.exited.is_set() else "still running"
