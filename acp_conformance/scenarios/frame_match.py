"""Predicates over received frames that the runner's waits use (which update, which request, a turn's end), in
the turn and state vocabulary the monitors read with (``rules/turns.py``)."""

from __future__ import annotations

from typing import Any, Callable

from ..rules.turns import IDLE, STATE_UPDATE, WORKING, ends_turn, session_update
from ..wire.transcript import RECEIVED, Frame


def _is_permission_request(f: Frame, sid: Any) -> bool:
    m = f.msg
    return (f.direction == RECEIVED and isinstance(m, dict) and m.get("method") == "session/request_permission"
            and "id" in m and isinstance(m.get("params"), dict) and m["params"].get("sessionId") == sid)



def _turn_ended(sid: Any, since: int) -> Callable[[Frame], bool]:
    """A predicate over the frames after ``since``: the idle that ends a turn of ``sid``. An idle counts when it
    carries a stopReason or follows a running / requires_action of this turn (a bare idle snapshot before any
    work is not an end: repeated snapshots are idempotent)."""
    worked = False

    def ended(f: Frame) -> bool:
        nonlocal worked
        if f.seq <= since:
            return False
        if _is_update(f, sid, STATE_UPDATE, list(WORKING)):
            worked = True
            return False
        if _is_update(f, sid, STATE_UPDATE, IDLE):
            return ends_turn(f.msg["params"]["update"], worked)
        return False
    return ended



def _is_update(f: Frame, sid: Any, kind: str | None, state: str | None) -> bool:
    u = session_update(f.msg, sid) if f.direction == RECEIVED else None
    if u is None:
        return False
    if kind is not None and u.get("sessionUpdate") != kind:
        return False
    return state is None or (u.get("state") in state if isinstance(state, list) else u.get("state") == state)
