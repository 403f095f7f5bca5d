"""The content blocks a prompt may carry: the baseline every agent accepts (PROMPT-008) and unsupported
types rejected with -32602 (PROMPT-009). The block helpers serve the cancel family too (held prompts).
"""

from __future__ import annotations

import re
from typing import Any

from ...wire.transcript import RECEIVED, SENT
from ..monitor import REQUEST, RESPONSE
from ..sessions import end_ok
from ._common import WORK_STATES, ConnLog, ConnMonitor, Msg, fr, js, session_update

BASE_BLOCKS = ("text", "resource_link")
GATED_BLOCKS = {"image": "image", "audio": "audio", "resource": "embeddedContext"}


def prompt_blocks(m: Msg) -> Any:
    return (m.params or {}).get("prompt") if isinstance(m.params, dict) else None


def unknown_blocks(types: list) -> list:
    """Block types no agent can support (neither standard nor gated by a capability; a custom `_` type)."""
    return [t for t in types if not (isinstance(t, str) and (t in BASE_BLOCKS or t in GATED_BLOCKS))]


def unadvertised_blocks(types: list, caps: dict | None) -> list:
    """Block types gated by a prompt capability that the initialize result ``caps`` does not advertise."""
    sess = (caps or {}).get("session")
    pcaps = sess.get("prompt") if isinstance(sess, dict) and isinstance(sess.get("prompt"), dict) else {}
    return [t for t in types if isinstance(t, str) and t in GATED_BLOCKS
            and not isinstance(pcaps.get(GATED_BLOCKS[t]), dict)]


def init_capabilities(m: Msg) -> dict | None:
    """The agent's capabilities when ``m`` is its successful answer to initialize ({} without any), else None."""
    if m.direction == RECEIVED and m.kind == RESPONSE and m.ok and m.request is not None \
            and m.request.method == "initialize" and isinstance(m.result, dict):
        c = m.result.get("capabilities")
        return c if isinstance(c, dict) else {}
    return None




_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")  # a scheme (RFC 3986): what every URI starts with


# sessions created or resumed on this connection, not closed: the others are the unknown-session rules'
_OPENS, _CLOSED = ("session/new", "session/resume"), end_ok(["session/close"])


class PromptBlocksMonitor(ConnMonitor):
    rules = ("PROMPT-008", "PROMPT-009")

    def analyze(self, log: ConnLog) -> None:
        caps: dict | None = None
        busy: dict[Any, bool] = {}  # session -> foreground work active
        for m in log.msgs:
            su = session_update(m)
            if su is not None and su[1].get("sessionUpdate") == "state_update":
                busy[su[0]] = su[1].get("state") in WORK_STATES
            if (c := init_capabilities(m)) is not None:
                caps = c
            if not (m.direction == SENT and m.kind == REQUEST and m.method == "session/prompt"):
                continue
            blocks = prompt_blocks(m)
            if not isinstance(blocks, list) or not blocks or not all(isinstance(b, dict) for b in blocks) \
                    or not m.responses or caps is None:
                continue
            r = m.responses[0]
            if m.session_id not in log.sessions.open_at(m, _CLOSED, opens=_OPENS):
                continue  # a prompt for a session not active here is the unknown-session rules' business
            if not r.ok and r.error_code in (-32002, -32800):
                continue
            types = [b.get("type") for b in blocks]
            sess = caps.get("session") if isinstance(caps.get("session"), dict) else None
            where = f"session/prompt id={js(m.id)} with blocks {js(types, 120)}"
            if all(t in BASE_BLOCKS for t in types) and sess is not None and self._well_formed(blocks):
                key = "resource_link" in types
                if r.ok:
                    self.pass_few("PROMPT-008", f"{where} was accepted.", [r, m], key=key, limit=1)
                elif r.error_code == -32602 and (busy.get(m.session_id) or any(
                        p.method == "session/prompt" and p.session_id == m.session_id and p.order < m.order
                        and not any(x.order < r.order for x in p.responses) for p in log.msgs
                        if p.direction == SENT and p.kind == REQUEST)):
                    self.noted("PROMPT-008", f"{where} was rejected with -32602 {js(r.error)} while the session was "
                               "busy; the rejection may not be about the blocks.", fr([r, m]))
                elif r.error_code == -32602:
                    self.failed("PROMPT-008", f"{where} was rejected with -32602 {js(r.error)}.", fr([r, m]))
                continue
            unknown = unknown_blocks(types)
            gated = unadvertised_blocks(types, caps)
            if unknown:
                if r.ok:
                    self.failed("PROMPT-009", f"{where}: block type {js(unknown[0])} is not a type the agent can "
                                "support, yet the prompt was accepted.", fr([r, m]))
                elif r.error_code == -32602:
                    self.pass_few("PROMPT-009", f"{where} was rejected with -32602.", [r, m])
                else:
                    self.failed("PROMPT-009", f"{where} was answered with error {js(r.error)}, not -32602.",
                                fr([r, m]))
            elif gated:
                if r.ok:
                    self.noted("PROMPT-009", f"{where}: block type {js(gated[0])} is accepted although its capability "
                               "is not advertised (the agent may support it without advertising).", fr([r, m]))
                elif r.error_code == -32602:
                    self.pass_few("PROMPT-009", f"{where} (capability not advertised) was rejected with -32602.",
                                  [r, m])

    @staticmethod
    def _well_formed(blocks: list) -> bool:
        for b in blocks:
            if b.get("type") == "text" and not isinstance(b.get("text"), str):
                return False
            if b.get("type") == "resource_link" and not (isinstance(b.get("uri"), str) and _URI.match(b["uri"])
                                                         and isinstance(b.get("name"), str)):
                return False  # the schema gives uri "Format: uri": "" or "notes.txt" may rightly be refused
        return True

