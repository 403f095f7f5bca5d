"""What the v1 monitors share (private to ``rules/monitors``): each keeps the messages of a test per connection
and judges at its end, over the whole exchange; ``protocol = 1`` routes only version-1 connections to them
(``MonitorContext``). Names are the v1 pages' (https://agentclientprotocol.com/protocol/v1/overview)."""

from __future__ import annotations

from typing import Any, Iterator

from ...wire.transcript import RECEIVED, SENT, Frame
from ..monitor import NOTIFICATION, REQUEST, Monitor, Rpc
from ..reading import Msg

STOP_REASONS = ("end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled")
CONTENT_KINDS = ("agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan")
MESSAGE_KINDS = ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk")
RACE = 0.1  # s: an answer this close after a cancel or close may have been on its way (noted, not failed)
TURN_OPENERS = ("session/prompt", "session/load", "session/resume")  # a request after which updates are due again


class V1Monitor(Monitor):
    """A monitor of version-1 connections: the messages of each connection, judged in ``judge`` at the end."""

    protocol = 1

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.conns: dict[int, list[Msg]] = {}

    def on_frame(self, frame: Frame, rpc: Rpc | None) -> None:
        if rpc is not None:
            self.conns.setdefault(frame.conn, []).extend(m for m in rpc.msgs if m.is_dict)

    def finish(self) -> None:
        for conn, msgs in self.conns.items():
            self.judge(conn, msgs)

    def judge(self, conn: int, msgs: list[Msg]) -> None:  # pragma: no cover - overridden
        pass


def params(m: Msg) -> dict[str, Any]:
    p = m.msg.get("params")
    return p if isinstance(p, dict) else {}


def requests(msgs: list[Msg], method: str, direction: str = SENT) -> Iterator[Msg]:
    return (m for m in msgs if m.kind == REQUEST and m.direction == direction and m.method == method)


def first_answer(req: Msg) -> Msg | None:
    return req.responses[0] if req.responses else None


def result_of(m: Msg | None) -> Any:
    return m.msg.get("result") if m is not None else None


def error_of(m: Msg | None) -> Any:
    return m.msg.get("error") if m is not None else None


def update_of(m: Msg) -> tuple[str, dict[str, Any], Any] | None:
    """(sessionId, update, its sessionUpdate kind) of a session/update from the target."""
    if m.direction != RECEIVED or m.kind != NOTIFICATION or m.method != "session/update":
        return None
    p = params(m)
    upd = p.get("update")
    if not isinstance(upd, dict):
        return None
    return p.get("sessionId"), upd, upd.get("sessionUpdate")


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def client_caps(msgs: list[Msg]) -> dict[str, Any]:
    """The clientCapabilities of the suite's initialize on this connection ({} when none)."""
    for m in requests(msgs, "initialize"):
        caps = params(m).get("clientCapabilities")
        return caps if isinstance(caps, dict) else {}
    return {}


def agent_init(msgs: list[Msg]) -> dict[str, Any]:
    for m in requests(msgs, "initialize"):
        r = result_of(first_answer(m))
        if isinstance(r, dict):
            return r
    return {}

