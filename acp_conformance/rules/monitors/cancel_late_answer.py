"""A late "allow" to a permission request of cancelled work (CANCEL-007, SHOULD).

The situation: the agent asked ``session/request_permission`` for a tool call; the suite held the
request, sent ``session/cancel`` and saw the cancelled idle (stopReason "cancelled"); only then did
it answer the abandoned request with an allow option. Whether the agent had already withdrawn the
request ($/cancel_request) does not matter: the answer is late either way.

What the late allow may not cause: progress of *that* tool call (status in_progress or completed,
at any later point of the connection), or a new ``running`` state of the session before the suite
next asks the session for work (a prompt, a resume): nothing else could have started work then.
Work the agent starts afterwards for other reasons is legal and not judged. The suite bounds its
wait by events, not time: after the late answer it sends a request the agent must answer
(session/list), then a short prompt whose idle ends the scenario; the tool call's progress is
judged up to the end of the connection.
"""

from __future__ import annotations

from typing import Any

from ...wire.transcript import RECEIVED, SENT
from ..monitor import NOTIFICATION, REQUEST, RESPONSE
from ._common import ConnLog, ConnMonitor, Msg, fr, js, session_update

PROGRESS = ("in_progress", "completed")
WORK_METHODS = ("session/prompt", "session/resume")  # requests of the suite that may legally start work


def _tool_call_id(q: Msg) -> Any:
    p = q.params if isinstance(q.params, dict) else {}
    subject = p.get("subject") if isinstance(p.get("subject"), dict) else {}
    tool = subject.get("toolCall") if isinstance(subject.get("toolCall"), dict) else p.get("toolCall")
    return tool.get("toolCallId") if isinstance(tool, dict) else None


def _allow_answer(q: Msg, a: Msg) -> Any:
    """The optionId when answer ``a`` selects an allow_* option that request ``q`` offered, else None."""
    outcome = a.result.get("outcome") if a.ok and isinstance(a.result, dict) else None
    if not isinstance(outcome, dict) or outcome.get("outcome") != "selected":
        return None
    options = (q.params or {}).get("options") if isinstance(q.params, dict) else None
    chosen = next((o for o in options or [] if isinstance(o, dict) and o.get("optionId") == outcome.get("optionId")),
                  None)
    if chosen is not None and str(chosen.get("kind", "")).startswith("allow"):
        return chosen.get("optionId")
    return None


class LateAnswerMonitor(ConnMonitor):
    rules = ("CANCEL-007",)
    expected = {
        "CANCEL-007": "After cancellation completes, the agent ignores a late answer to a request of the cancelled "
                      "work: a late \"allow\" to its permission request starts no new running state and no progress "
                      "(in_progress/completed) of that tool call.",
    }

    def analyze(self, log: ConnLog) -> None:
        msgs = log.msgs
        for a in msgs:
            if a.direction != SENT or a.kind != RESPONSE or a.duplicate or a.request is None:
                continue
            q = a.request
            if q.direction != RECEIVED or q.method != "session/request_permission" or not isinstance(q.session_id, str):
                continue
            option = _allow_answer(q, a)
            if option is None:
                continue
            sid = q.session_id
            cancel = next((m for m in msgs if q.order < m.order < a.order and m.direction == SENT
                           and m.kind == NOTIFICATION and m.method == "session/cancel" and m.session_id == sid), None)
            if cancel is None:
                continue
            idle = next((m for m in msgs if cancel.order < m.order < a.order and (su := session_update(m))
                         and su[0] == sid and su[1].get("sessionUpdate") == "state_update"
                         and su[1].get("state") == "idle" and su[1].get("stopReason") == "cancelled"), None)
            if idle is None:
                continue  # the answer was not late: the work had not ended when it was sent (CANCEL-004's case)
            self._judge(log, q, a, cancel, idle, sid, option)

    def _judge(self, log: ConnLog, q: Msg, a: Msg, cancel: Msg, idle: Msg, sid: str, option: Any) -> None:
        where = (f"session/request_permission id={js(q.id)} answered with {js(option)} at t={a.t:.2f}, after "
                 f"session/cancel (t={cancel.t:.2f}) and the cancelled idle (t={idle.t:.2f})")
        tcid = _tool_call_id(q)
        later = [m for m in log.msgs if m.order > a.order]
        if tcid is not None:
            moved = next((m for m in later if (su := session_update(m)) and su[0] == sid
                          and su[1].get("toolCallId") == tcid and su[1].get("status") in PROGRESS), None)
            if moved is not None:
                self.warned("CANCEL-007", f"{where}: tool call {js(tcid)} of the cancelled work reported status "
                            f"{js(session_update(moved)[1].get('status'))} at t={moved.t:.2f}.", fr([moved, a, idle, q]))
                return
        # until the suite next asks this session for work (a prompt, a resume), only the late answer can have
        # started work; what bounds the wait is the first later request of the suite that was answered
        work = next((m for m in later if m.direction == SENT and m.kind == REQUEST and m.session_id == sid
                     and m.method in WORK_METHODS), None)
        # a prompt held behind the cancelled work (answered after the cancelled idle, or not yet) may legally
        # run now: a running may then be its own
        held = any(m.direction == SENT and m.kind == REQUEST and m.method == "session/prompt" and m.session_id == sid
                   and m.order < a.order and (not m.responses or m.responses[0].order > idle.order) for m in log.msgs)
        running = None if held else next(
            (m for m in later if (work is None or m.order < work.order) and (su := session_update(m))
             and su[0] == sid and su[1].get("sessionUpdate") == "state_update" and su[1].get("state") == "running"),
            None)
        if running is not None:
            self.warned("CANCEL-007", f"{where}: the session reported running at t={running.t:.2f}, before the suite "
                        "asked it for more work.", fr([running, a, idle, q]))
            return
        bound = next((m for m in later if m.direction == SENT and m.kind == REQUEST and m.responses), None)
        if bound is None:
            self.untested("CANCEL-007", f"{where}: nothing the agent had to answer followed the late answer, so "
                          f"whether it resumed the work later is unknown ({log.end_desc}).", fr([a, idle, q]))
            return
        self.pass_few("CANCEL-007", f"{where}: no progress of tool call {js(tcid)}, and no new running state before "
                      f"{bound.method} (t={bound.t:.2f}) was answered"
                      + (f" and before the suite asked for more work ({work.method} at t={work.t:.2f})."
                         if work is not None else "."), [a, idle, q])
