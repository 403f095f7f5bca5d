"""Mutants of the v1 reference agent (acp_conformance/reference/agent_v1.py) breaking V1-FS rules."""

import os

from acp_conformance.reference.agent_v1 import V1ReferenceAgent


class V1IgnoresFsCapability(V1ReferenceAgent):
    def work(self, turn, text):
        self.request("fs/read_text_file", {"sessionId": turn.session_id,
                                           "path": os.path.join(self.sessions[turn.session_id]["cwd"], "x.txt")})
        super().work(turn, text)


class V1RelativePath(V1ReferenceAgent):
    def read_tool(self, turn):
        self.update(turn.session_id, {"sessionUpdate": "tool_call", "toolCallId": "call_rel", "title": "Read",
                                      "kind": "read", "status": "completed", "locations": [{"path": "README.md"}]})


MUTANTS = {
    "v1-ignores-fs-capability": (("V1-FS-001",), V1IgnoresFsCapability),
    "v1-relative-path": (("V1-FS-002",), V1RelativePath),
}
