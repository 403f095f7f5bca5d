"""Mutants of the v1 reference agent (acp_conformance/reference/agent_v1.py) breaking V1-ERR rules."""


from acp_conformance.reference.agent_v1 import V1ReferenceAgent


class V1AnswersUnknownMethods(V1ReferenceAgent):
    def dispatch(self, msg):
        if str(msg.get("method", "")).startswith(("conformance/", "_conformance/")) and "id" in msg:
            self.respond(msg["id"], {})
            return
        super().dispatch(msg)


class V1AnswersTwice(V1ReferenceAgent):
    def on_session_new(self, params, rid):
        result = super().on_session_new(params, rid)
        self.respond(rid, result)
        return result


MUTANTS = {
    "v1-answers-unknown-methods": (("V1-ERR-002",), V1AnswersUnknownMethods),
    "v1-answers-twice": (("V1-ERR-001",), V1AnswersTwice),
}
