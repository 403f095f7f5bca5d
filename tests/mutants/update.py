"""Mutants of the UPDATE rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

from acp_conformance.reference.agent import ReferenceAgent, new_id


class Update004(ReferenceAgent):
    """Agent message chunks carry no messageId."""

    def send_update(self, session, update):
        if update.get("sessionUpdate") == "agent_message_chunk":
            update = {k: v for k, v in update.items() if k != "messageId"}
        super().send_update(session, update)


class Update001(ReferenceAgent):
    """Each turn also sends a session/update *request* (with an id) for a thought, not a notification.

    (The ``running`` notification itself stays: a session/update request is invisible to the lifecycle
    monitors, so turning that one into a request would also fail PROMPT-011.)
    """

    def report_running(self, session):
        super().report_running(session)
        if not session.closed:
            self.send_request("session/update", {"sessionId": session.id, "update": {
                "sessionUpdate": "agent_thought_chunk", "messageId": new_id("msg_"),
                "content": {"type": "text", "text": "Looking at the prompt."}}})


class Update002(ReferenceAgent):
    """Mints a custom variant without the `_` prefix (``progress_update``) in every turn."""

    def report_running(self, session):
        super().report_running(session)
        self.send_update(session, {"sessionUpdate": "progress_update", "percent": 0})


class Update003(ReferenceAgent):
    """An available_commands_update without its required ``availableCommands`` list in every turn.

    (A required field that no variant-specific rule checks, so only the schema rule UPDATE-003 sees it.)
    """

    def report_running(self, session):
        super().report_running(session)
        self.send_update(session, {"sessionUpdate": "available_commands_update"})


class Update006(ReferenceAgent):
    """usage_update with a negative ``used`` token count."""

    def report_running(self, session):
        super().report_running(session)
        self.send_update(session, {"sessionUpdate": "usage_update", "used": -120, "size": 200000})


class Update007(ReferenceAgent):
    """plan_update whose entry has priority ``urgent`` (not high/medium/low or `_`)."""

    def report_running(self, session):
        super().report_running(session)
        self.send_update(session, {"sessionUpdate": "plan_update", "plan": {
            "type": "items", "planId": "plan_1",
            "entries": [{"content": "Answer the prompt", "priority": "urgent", "status": "in_progress"}]}})


class Update008(ReferenceAgent):
    """available_commands_update whose command name has a leading slash."""

    def report_running(self, session):
        super().report_running(session)
        self.send_update(session, {"sessionUpdate": "available_commands_update", "availableCommands": [
            {"type": "command", "name": "/review", "description": "Review the current changes"}]})


class Update009(ReferenceAgent):
    """session_info_update whose ``updatedAt`` is not an RFC 3339 date-time."""

    def report_running(self, session):
        super().report_running(session)
        self.send_update(session, {"sessionUpdate": "session_info_update", "updatedAt": "just now"})


class Update010(ReferenceAgent):
    """A notice with an undefined severity (``critical``)."""

    def report_running(self, session):
        super().report_running(session)
        self.send_update(session, {"sessionUpdate": "notice", "severity": "critical",
                                   "title": "Context window almost full"})


class Update011(ReferenceAgent):
    """A compaction that completes, then gets a summary chunk after its terminal status."""

    def report_running(self, session):
        super().report_running(session)
        cid = new_id("cmp_")
        self.send_update(session, {"sessionUpdate": "compaction_update", "compactionId": cid, "status": "in_progress"})
        self.send_update(session, {"sessionUpdate": "compaction_update", "compactionId": cid, "status": "completed"})
        self.send_update(session, {"sessionUpdate": "compaction_summary_chunk", "compactionId": cid,
                                   "content": {"type": "text", "text": "Summary of the earlier turns."}})


class Update012(ReferenceAgent):
    """A session_message from a child session that no subagent_update ever announced."""

    def report_running(self, session):
        super().report_running(session)
        self.send_update(session, {"sessionUpdate": "session_message", "messageId": new_id("msg_"),
                                   "senderSessionId": "sess_child_unannounced", "recipientSessionId": session.id,
                                   "content": [{"type": "text", "text": "Child finished its search."}]})


class Update007NoPlanId(ReferenceAgent):
    """plan_update whose plan has no planId (it escaped every rule, issue 25: no scenario asked for a plan)."""

    def plan_update(self, session, entries):
        self.send_update(session, {"sessionUpdate": "plan_update", "plan": {"type": "items", "entries": entries}})


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "update-004": (("UPDATE-004",), Update004),
    "update-001": (("UPDATE-001",), Update001),
    "update-002": (("UPDATE-002",), Update002),
    "update-003": (("UPDATE-003",), Update003),
    "update-006": (("UPDATE-006",), Update006),
    "update-007": (("UPDATE-007",), Update007),
    "update-007-no-plan-id": (("UPDATE-007",), Update007NoPlanId),
    "update-008": (("UPDATE-008",), Update008),
    "update-009": (("UPDATE-009",), Update009),
    "update-010": (("UPDATE-010",), Update010),
    "update-011": (("UPDATE-011",), Update011),
    "update-012": (("UPDATE-012",), Update012),
}
