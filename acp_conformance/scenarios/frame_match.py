"""Predicates over received frames that the runner's waits use (which update, which request, a turn's end)."""

from __future__ import annotations

from typing import Any, Callable

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
        if _is_update(f, sid, "state_update", ["running", "requires_action"]):
            worked = True
            return False
        if _is_update(f, sid, "state_update", "idle"):
            return worked or "stopReason" in f.msg["params"]["update"]
        return False
    return ended



def _is_update(f: Frame, sid: Any, kind: str | None, state: str | None) -> bool:
    m = f.msg
    if f.direction != RECEIVED or not isinstance(m, dict) or m.get("method") != "session/update":
        return False
    params = m.get("params")
    if not isinstance(params, dict) or (sid is not None and params.get("sessionId") != sid):
        return False
    u = params.get("update")
    if not isinstance(u, dict):
        return False
    if kind is not None and u.get("sessionUpdate") != kind:
        return False
    return state is None or (u.get("state") in state if isinstance(state, list) else u.get("state") == state)
