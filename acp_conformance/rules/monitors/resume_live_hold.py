"""Live updates held during a replay (RESUME-013, MUST since the v2 Preview's reworded replay_complete).

While it replays a session for ``session/resume`` with a replayFrom cursor, the agent holds the
session's live updates until ``replay_complete``; a live update it wrote before it read the request may
still arrive after the request (in flight), and is allowed. Only what is provably live *and* provably
written during the replay is judged:

* the replay had begun: an update of the session after the request carries a messageId/toolCallId
  that was seen on this connection before the request (history; the first such update marks it);
* the session was not working when the request was written (its last state_update was idle, or none),
  and the suite then wrote a ``session/prompt`` for it (the only cause of new work);
* after that prompt and after the first replayed update, before replay_complete, a state_update
  reports running or requires_action: a state change is never history, and only the prompt written
  after the resume request can have caused it.

The suite creates the situation by writing a prompt right after the resume request (scenario
resume-then-prompt): an agent that finishes the resume before it serves the prompt passes, one that
serves it during the replay without holding its updates fails. A resume without replay_complete is
RESUME-002's (successful) or a truncation (error or no response), not judged here.
"""

from __future__ import annotations

from typing import Any

from ...wire.transcript import RECEIVED, SENT
from ..monitor import REQUEST
from ._common import AGENT_MESSAGE_KINDS, TOOL_KINDS, USER_KINDS, WORK_STATES, ConnLog, ConnMonitor, Msg, fr, \
    hashable, js, session_update
from .resume import CURSOR, cursor_kind

_ID_KINDS = {**{k: "messageId" for k in (*USER_KINDS, *AGENT_MESSAGE_KINDS)}, **{k: "toolCallId" for k in TOOL_KINDS}}


def _ref(upd: dict[str, Any]) -> tuple[str, Any] | None:
    key = _ID_KINDS.get(upd.get("sessionUpdate"))
    return (key, upd.get(key)) if key and hashable(upd.get(key)) else None


class ResumeLiveHoldMonitor(ConnMonitor):
    rules = ("RESUME-013",)
    expected = {
        "RESUME-013": "While replaying for session/resume the agent holds the session's live updates until "
                      "replay_complete: no update caused after the request (a new running state) arrives between "
                      "the replayed history and replay_complete.",
    }

    def analyze(self, log: ConnLog) -> None:
        msgs = log.msgs
        for r in msgs:
            if (r.direction == SENT and r.kind == REQUEST and r.method == "session/resume"
                    and isinstance(r.session_id, str) and cursor_kind(r.params) == CURSOR):
                self._judge(log, r, r.session_id)

    def _judge(self, log: ConnLog, r: Msg, sid: str) -> None:
        msgs = log.msgs
        before = [m for m in msgs if m.order < r.order]
        after = [m for m in msgs if m.order > r.order]
        marker = next((m for m in after if (su := session_update(m)) and su[0] == sid
                       and su[1].get("sessionUpdate") == "replay_complete"), None)
        prompt = next((m for m in after if m.direction == SENT and m.kind == REQUEST and m.method == "session/prompt"
                       and m.session_id == sid), None)
        if marker is None or prompt is None or prompt.order > marker.order:
            return  # no replay_complete (RESUME-002's), or nothing written during the replay that makes work
        label = (f"session/resume id={js(r.id)} of {sid!r} with replayFrom {js(r.params.get('replayFrom'), 80)} "
                 f"(t={r.t:.2f}), then session/prompt id={js(prompt.id)} (t={prompt.t:.2f}), replay_complete at "
                 f"t={marker.t:.2f}")
        if any(m.direction == SENT and m.kind == REQUEST and m.method == "session/resume" and m.session_id == sid
               for m in after if m.order < marker.order):
            self.noted("RESUME-013", f"{label}: another resume of the session overlapped it, so whose replay the "
                       "updates belong to is unknown; not judged.", fr([r, prompt, marker]))
            return
        states = [su[1].get("state") for m in before if (su := session_update(m)) and su[0] == sid
                  and su[1].get("sessionUpdate") == "state_update"]
        if states and states[-1] in WORK_STATES:
            self.noted("RESUME-013", f"{label}: the session was {states[-1]} when the resume was written, so a "
                       "state change during the replay may come from that work; not judged.", fr([r, marker]))
            return
        known = {ref for m in before if (su := session_update(m)) and su[0] == sid and (ref := _ref(su[1]))}
        window = [m for m in after if m.order < marker.order and (su := session_update(m)) and su[0] == sid]
        first = next((m for m in window if (ref := _ref(session_update(m)[1])) and ref in known), None)
        def running(since: Msg) -> Msg | None:
            return next((m for m in window if m.order > since.order
                         and session_update(m)[1].get("sessionUpdate") == "state_update"
                         and session_update(m)[1].get("state") in WORK_STATES), None)

        live = running(max(prompt, first, key=lambda m: m.order)) if first is not None else None
        early = running(prompt)
        if live is not None:
            self.failed("RESUME-013", f"{label}: the session reported {session_update(live)[1].get('state')} at "
                        f"t={live.t:.2f}, after the replay had begun (replayed "
                        f"{session_update(first)[1].get('sessionUpdate')} at t={first.t:.2f}) and before "
                        "replay_complete: a live update caused by the prompt written after the request was not held.",
                        fr([live, first, prompt, r, marker]))
        elif early is not None:
            self.noted("RESUME-013", f"{label}: the session reported {session_update(early)[1].get('state')} at "
                       f"t={early.t:.2f}, before any replayed history: the agent may have served the prompt before "
                       "it began the replay (allowed).", fr([early, prompt, r, marker]))
        else:
            self.pass_few("RESUME-013", f"{label}: no update caused by the prompt (no running state) arrived "
                          "before replay_complete.", [marker, prompt, r])
