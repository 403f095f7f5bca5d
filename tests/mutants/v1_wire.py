"""Mutants of the v1 reference agent breaking V1-ERR and V1-TRANSPORT rules."""

import sys

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


class V1LogsOnStdout(V1ReferenceAgent):
    def on_session_new(self, params, rid):
        with self.lock:
            sys.stdout.write("creating a session...\n")
            sys.stdout.flush()
        return super().on_session_new(params, rid)


MUTANTS = {
    "v1-answers-unknown-methods": (("V1-ERR-002",), V1AnswersUnknownMethods),
    "v1-answers-twice": (("V1-ERR-001",), V1AnswersTwice),
    "v1-logs-on-stdout": (("V1-TRANSPORT-001",), V1LogsOnStdout),
}
