"""Mutants of the v1 reference agent breaking V1-SESSION, V1-MODE and V1-AUTH rules."""

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


class V1BadCurrentMode(V1ReferenceAgent):
    def modes(self, sid):
        return {**super().modes(sid), "currentModeId": "nonexistent"}


class V1AcceptsUnknownAuth(V1ReferenceAgent):
    def on_authenticate(self, params, rid):
        return {}


MUTANTS = {
    "v1-same-session-id": (("V1-SESSION-001",), V1SameSessionId),
    "v1-load-without-replay": (("V1-SESSION-002",), V1LoadWithoutReplay),
    "v1-replay-after-load": (("V1-SESSION-003", "V1-SESSION-002"), V1ReplayAfterLoad),
    "v1-bad-current-mode": (("V1-MODE-001",), V1BadCurrentMode),
    "v1-accepts-unknown-auth": (("V1-AUTH-002",), V1AcceptsUnknownAuth),
}
