"""Mutants of the v1 reference agent (acp_conformance/reference/agent_v1.py) breaking V1-SESSION rules."""

from acp_conformance.reference.agent_v1 import V1ReferenceAgent


class V1SameSessionId(V1ReferenceAgent):
    def new_session_id(self):
        return "sess_always_the_same"


class V1LoadWithoutReplay(V1ReferenceAgent):
    def replay(self, sid):
        pass


class V1ReplayAfterLoad(V1ReferenceAgent):
    """Answers session/load first, then replays the history."""

    def on_session_load(self, params, rid):
        replay, self.replay = self.replay, lambda sid: None
        try:
            result = super().on_session_load(params, rid)
        finally:
            self.replay = replay
        self.respond(rid, result)
        self.replay(params.get("sessionId"))
        return None


MUTANTS = {
    "v1-same-session-id": (("V1-SESSION-001",), V1SameSessionId),
    "v1-load-without-replay": (("V1-SESSION-002",), V1LoadWithoutReplay),
    "v1-replay-after-load": (("V1-SESSION-003", "V1-SESSION-002"), V1ReplayAfterLoad),
}


class V1CloseKeepsWorking(V1ReferenceAgent):
    """session/close frees the session but lets its running turn go on to end_turn."""

    def close_work(self, sid):
        pass


class V1ResumeReplays(V1ReferenceAgent):
    def on_session_resume(self, params, rid):
        result = super().on_session_resume(params, rid)
        self.replay(params.get("sessionId"))
        return result


MUTANTS["v1-close-keeps-working"] = (("V1-SESSION-007",), V1CloseKeepsWorking)
MUTANTS["v1-resume-replays"] = (("V1-SESSION-006",), V1ResumeReplays)
