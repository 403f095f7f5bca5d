"""Mutants of the ELICIT rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

from acp_conformance.reference.agent import ReferenceAgent


class ElicitUnadvertised(ReferenceAgent):
    """Elicits (form, and URL when asked) whatever modes the client advertised under elicitation."""

    def elicitation_modes(self):
        # only where capabilities.elicitation is present at all: its absence is INIT-007's business
        return {"form", "url"} if isinstance(self.client_capabilities.get("elicitation"), dict) else set()


class ElicitUnknownSession(ReferenceAgent):
    """elicitation/create is scoped to a session that does not exist."""

    def send_request(self, method, params):
        if method == "elicitation/create":
            params = dict(params, sessionId="sess_conformance_nowhere")
        return super().send_request(method, params)


class ElicitFixedId(ReferenceAgent):
    """Every URL elicitation uses the same elicitationId."""

    def new_elicitation_id(self):
        return "elic_1"


class ElicitDeclineAccepted(ReferenceAgent):
    """Any elicitation result (decline, cancel, unknown action) is taken as accepted: after a declined
    URL elicitation the agent sends elicitation/complete as if the user had gone through it."""

    @staticmethod
    def elicitation_content(answer):
        content = ReferenceAgent.elicitation_content(answer)
        return {} if content is None and answer[0] == "result" else content


class ElicitCompleteWrongId(ReferenceAgent):
    """elicitation/complete names an elicitationId that was never used."""

    def complete_elicitation(self, elicitation_id):
        self.notify("elicitation/complete", {"elicitationId": "elic_conformance_other"})


class ElicitNoRequiresAction(ReferenceAgent):
    """A pending elicitation is not reflected as requires_action (SHOULD)."""

    def elicit_waiting(self, session):
        pass


class ElicitAsksSecret(ReferenceAgent):
    """The form elicitation asks for an API key."""

    def elicitation_schema(self):
        return {"type": "object", "properties": {"apiKey": {"type": "string", "title": "API key"}},
                "required": ["apiKey"]}


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "elicit-unadvertised": (("ELICIT-001",), ElicitUnadvertised),
    "elicit-unknown-session": (("ELICIT-002",), ElicitUnknownSession),
    "elicit-fixed-id": (("ELICIT-003",), ElicitFixedId),
    "elicit-decline-accepted": (("ELICIT-004",), ElicitDeclineAccepted),
    "elicit-complete-wrong-id": (("ELICIT-005",), ElicitCompleteWrongId),
    "elicit-no-requires-action": (("ELICIT-006",), ElicitNoRequiresAction),
    "elicit-asks-secret": (("ELICIT-007",), ElicitAsksSecret),
}
