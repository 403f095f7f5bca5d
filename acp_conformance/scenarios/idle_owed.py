"""Idle bookkeeping: whether the target still owes an idle state_update for a session."""

from __future__ import annotations

import json
from typing import Any

from ..rules.turns import IDLE, STATE_UPDATE, WORKING
from ..wire.transcript import RECEIVED, SENT, Frame, members
from .frame_match import _is_update


class _IdleOwed:
    """Whether the target still owes an idle for session ``sid``, read from the frames so far: it does while a
    session/prompt for it is unanswered, or a prompt it accepted has no idle after the answer, or its last
    state_update is running / requires_action (an agent that ends a turn before answering its prompt is waited
    for as before: to the timeout). When it owes none (every turn has ended, nothing is
    held), an await of its idle has nothing to wait for: a session/cancel of an idle session, a prompt refused
    with an error, a turn that ended before the cancel reached it."""

    def __init__(self, sid: Any, frames: list[Frame]):
        self.sid, self.frames = sid, frames
        self.pos = 0
        self.conn: int | None = None
        self.pending: set[str] = set()  # ids of unanswered session/prompt requests for sid, on this connection
        self.accepted = -1  # seq of the last answer (a result) to a session/prompt for sid
        self.idle = -1  # seq of the last idle for sid
        self.busy = False  # the last state_update for sid was running or requires_action

    def owed(self, upto: int | None = None) -> bool:
        """Reads the frames up to seq ``upto`` (all of them: None) not read yet; then the answer."""
        end = len(self.frames) if upto is None else min(upto + 1, len(self.frames))
        while self.pos < end:
            for one in members(self.frames[self.pos]):  # a batch array: each member on its own
                self._read(one)
            self.pos += 1
        return bool(self.pending) or self.busy or self.accepted > self.idle

    def _read(self, f: Frame) -> None:
        m = f.msg
        if not isinstance(m, dict):
            return
        if f.conn != self.conn:  # a new process: what the old one owed died with it
            self.conn, self.pending, self.accepted, self.busy = f.conn, set(), -1, False
        if f.direction == SENT:
            params = m.get("params")
            if (m.get("method") == "session/prompt" and "id" in m and isinstance(params, dict)
                    and params.get("sessionId") == self.sid):
                self.pending.add(json.dumps(m["id"]))
            return
        if f.direction != RECEIVED:
            return
        if "method" not in m and "id" in m:
            key = json.dumps(m["id"])
            if key in self.pending:
                self.pending.discard(key)
                if "result" in m:  # its turn ends with an idle after this answer (a prompt held behind
                    # another turn is answered when its own starts, after the idle of the one before)
                    self.accepted = f.seq
        elif _is_update(f, self.sid, STATE_UPDATE, None):
            state = m["params"]["update"].get("state")
            self.busy = state in WORKING
            if state == IDLE:
                self.idle = f.seq
