"""The work of an ``elicit`` prompt: a form or URL elicitation/create and elicitation/complete."""

from __future__ import annotations

from .state import LiveSession, Turn
from .wire import new_id


class ElicitationMixin:
    def elicitation_modes(self) -> set:
        """Elicitation modes the client advertised in initialize (a non-null object each)."""
        caps = self.client_capabilities.get("elicitation")
        if not isinstance(caps, dict):
            return set()
        return {m for m in ("form", "url") if isinstance(caps.get(m), dict)}

    @staticmethod
    def elicitation_content(answer: tuple) -> dict | None:
        """The accepted content, or None for anything else (decline, cancel, unknown action, error)."""
        kind, value = answer
        if kind != "result" or not isinstance(value, dict) or value.get("action") != "accept":
            return None
        content = value.get("content")
        return content if isinstance(content, dict) else {}

    def elicitation_schema(self) -> dict:
        """The requestedSchema of the form elicitation."""
        return {"type": "object", "properties": {"projectName": {"type": "string", "title": "Project name"}},
                "required": ["projectName"]}

    def new_elicitation_id(self) -> str:
        return new_id("elic_")

    def complete_elicitation(self, elicitation_id: str) -> None:
        """The out-of-band URL interaction is over: elicitation/complete (a notification)."""
        self.notify("elicitation/complete", {"elicitationId": elicitation_id})

    def elicit_waiting(self, session: LiveSession) -> None:
        """An elicitation blocks the turn: report requires_action."""
        self.report_requires_action(session)

    async def work_elicit_url(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        eid = self.new_elicitation_id()
        request_id, future = self.send_request("elicitation/create", {
            "sessionId": session.id, "mode": "url", "message": "Please confirm the licence in your browser.",
            "elicitationId": eid, "url": "https://example.com/acp/licence?elicitation=" + eid,
        })
        turn.pending_requests.append(request_id)
        self.elicit_waiting(session)
        answer = await future  # session/cancel cancels this await (see on_work_cancelled)
        turn.pending_requests.remove(request_id)
        self.report_running(session)
        if self.elicitation_content(answer) is None:
            self.agent_chunk(session, turn, "The licence was not confirmed; I carried on without it.")
            return "end_turn", None
        await self.pause(0.02)  # the user finishes in the browser
        self.complete_elicitation(eid)
        self.agent_chunk(session, turn, "The licence was confirmed.")
        return "end_turn", None

    async def work_elicit(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        if "url" in turn.text.lower() and "url" in self.elicitation_modes():
            return await self.work_elicit_url(session, turn)
        if "form" not in self.elicitation_modes():
            self.agent_chunk(session, turn, "I would ask you for a project name, but your client has no forms.")
            return "end_turn", None
        request_id, future = self.send_request("elicitation/create", {
            "sessionId": session.id,
            "mode": "form",
            "message": "What should the project be called?",
            "requestedSchema": self.elicitation_schema(),
        })
        turn.pending_requests.append(request_id)
        self.elicit_waiting(session)
        answer = await future  # session/cancel cancels this await (see on_work_cancelled)
        turn.pending_requests.remove(request_id)
        self.report_running(session)
        content = self.elicitation_content(answer)
        if content is None:
            self.agent_chunk(session, turn, "No name given; I used the default name.")
        else:
            self.agent_chunk(session, turn, "Project name: %s" % content.get("projectName"))
        return "end_turn", None
