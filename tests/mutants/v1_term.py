"""Mutants of the v1 reference agent (acp_conformance/reference/agent_v1.py) breaking V1-TERM rules."""


from acp_conformance.reference.agent_v1 import V1ReferenceAgent


class V1IgnoresTerminalCapability(V1ReferenceAgent):
    def work(self, turn, text):
        self.request("terminal/create", {"sessionId": turn.session_id, "command": "true"})
        super().work(turn, text)


class V1NeverReleasesTerminal(V1ReferenceAgent):
    def release_terminal(self, sid, tid):
        pass


MUTANTS = {
    "v1-ignores-terminal-capability": (("V1-TERM-001",), V1IgnoresTerminalCapability),
    "v1-never-releases-terminal": (("V1-TERM-002",), V1NeverReleasesTerminal),
}
