"""A legal agent that reaches no resume rule: it answers every session/resume with -32002 (as if it
kept nothing, not even in memory). It breaks no rule, so it is not a mutant of MUTANTS; the reach test
uses it to show that unreached rules are caught.

    python tests/mutants/agent_never_resumes.py
"""

from __future__ import annotations

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from acp_conformance.reference.agent import ReferenceAgent, SessionNotFound, main  # noqa: E402


class NeverResumes(ReferenceAgent):
    def handle_session_resume(self, ctx, params: dict) -> None:
        raise SessionNotFound(self.require_str(params, "sessionId"))


if __name__ == "__main__":
    sys.exit(main(NeverResumes))
