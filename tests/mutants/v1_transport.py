"""Mutants of the v1 reference agent (acp_conformance/reference/agent_v1.py) breaking V1-TRANSPORT rules."""

import sys

from acp_conformance.reference.agent_v1 import V1ReferenceAgent


class V1LogsOnStdout(V1ReferenceAgent):
    def on_session_new(self, params, rid):
        with self.lock:
            sys.stdout.write("creating a session...\n")
            sys.stdout.flush()
        return super().on_session_new(params, rid)


MUTANTS = {
    "v1-logs-on-stdout": (("V1-TRANSPORT-001",), V1LogsOnStdout),
}
