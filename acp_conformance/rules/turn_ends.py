"""What one test's frames say about how the target's turns end, for the run's early stop (early_stop.py): a turn
still running when the suite gave up waiting for it (a timeout), or a turn that ended by itself (an idle with a
stopReason while the suite had sent no cancel, close or delete). A target whose turns never end by themselves makes
every later test that waits for a turn's end wait out its timeout; several tests of such turns and none that ended
stop the run with one sentence instead (a slow agent is told to raise --acp-timeout).

Reads frames only.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..wire.transcript import EV_TIMEOUT, EVENT, RECEIVED, SENT, Frame, members
from .turns import IDLE, REQUIRES_ACTION, RUNNING, STATE_UPDATE, session_update

# what the suite sends that ends a turn it did not wait out: the turn's end that follows is not its own
ENDING = ("session/cancel", "session/close", "session/delete", "$/cancel_request")


@dataclass
class TurnEnds:
    ended: Frame | None = None  # an idle with a stopReason that nothing the suite sent had asked for
    unended: Frame | None = None  # the state_update running of a turn still running at the suite's timeout


def turn_ends(frames: list[Frame]) -> TurnEnds:
    out = TurnEnds()
    running: dict[tuple[int, str], Frame] = {}  # (conn, sessionId) -> its running state_update, while it runs
    asked: set[tuple[int, str]] = set()  # running turns the suite has asked to end (cancel, close, delete)
    for f in frames:
        if f.direction == EVENT:
            if f.event == EV_TIMEOUT and running and out.unended is None:
                out.unended = next(iter(running.values()))
            continue
        for one in members(f):
            m = one.msg
            if not isinstance(m, dict):
                continue
            params = m.get("params") if isinstance(m.get("params"), dict) else {}
            sid = params.get("sessionId")
            if f.direction == SENT and m.get("method") in ENDING:
                # $/cancel_request names a request, not a session: every turn of the connection
                asked |= {k for k in running if k[0] == f.conn and (k[1] == sid or not isinstance(sid, str))}
            update = session_update(m) if f.direction == RECEIVED else None
            if update is None or update.get("sessionUpdate") != STATE_UPDATE or not isinstance(sid, str):
                continue
            key = (f.conn, sid)
            if update.get("state") == RUNNING:
                running.setdefault(key, f)
            elif update.get("state") == REQUIRES_ACTION:  # waiting for the suite: not the target's own time
                running.pop(key, None)
            elif update.get("state") == IDLE:
                if key in running and key not in asked and "stopReason" in update and out.ended is None:
                    out.ended = f
                running.pop(key, None)
                asked.discard(key)
    return out
