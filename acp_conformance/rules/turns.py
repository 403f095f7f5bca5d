"""The turn and state vocabulary of ACP v2 sessions, one definition for the monitors' reading (``sessions.py``,
``turn_ends.py``) and the scenario runner's waits (``scenarios/frame_match.py``, ``scenarios/idle_owed.py``):
which message is a session's update, which states mean the target holds the turn, and which idle ends a turn.

Reads messages only (a frame's ``msg``, a reading's ``Msg.msg``); no rule's policy lives here.
"""

from __future__ import annotations

from typing import Any

RUNNING, REQUIRES_ACTION, IDLE = "running", "requires_action", "idle"
WORKING = (RUNNING, REQUIRES_ACTION)  # the target holds the turn (requires_action: waiting for the client)
STATE_UPDATE = "state_update"


def session_update(msg: Any, sid: Any = None) -> dict[str, Any] | None:
    """The ``update`` of a session/update notification (of session ``sid``, unless None), else None."""
    if not isinstance(msg, dict) or msg.get("method") != "session/update":
        return None
    params = msg.get("params")
    if not isinstance(params, dict) or (sid is not None and params.get("sessionId") != sid):
        return None
    update = params.get("update")
    return update if isinstance(update, dict) else None


def ends_turn(update: dict[str, Any], worked: bool) -> bool:
    """Does this state_update end a turn? An idle does when it carries a stopReason or follows work of the turn
    (running / requires_action); a bare idle snapshot before any work does not (snapshots repeat)."""
    return update.get("state") == IDLE and (worked or "stopReason" in update)
