"""Mutants of the CONTENT rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

from acp_conformance.reference.agent import ReferenceAgent, new_id


class Content001(ReferenceAgent):
    """The reply's first chunk is an image whose data is not base64."""

    def send_update(self, session, update):
        if update.get("sessionUpdate") == "agent_message_chunk" and update.get("content", {}).get("text") == "You said: ":
            update = dict(update, content={"type": "image", "data": "!!not base64!!", "mimeType": "image/png"})
        super().send_update(session, update)


class Content004(ReferenceAgent):
    """Tool call locations are relative paths."""

    def tool_update(self, session, turn, **fields):
        if "locations" in fields:
            fields["locations"] = [{"path": "README.md", "line": 0}]
        super().tool_update(session, turn, **fields)


class Content002(ReferenceAgent):
    """A thought chunk holding a resource_link whose icon src is plain http:."""

    def report_running(self, session):
        super().report_running(session)
        self.send_update(session, {"sessionUpdate": "agent_thought_chunk", "messageId": new_id("msg_"), "content": {
            "type": "resource_link", "uri": "https://example.com/docs/guide", "name": "guide",
            "icons": [{"src": "http://example.com/favicon.png", "mimeType": "image/png"}]}})


class Content003(ReferenceAgent):
    """A thought chunk whose text block has annotations.priority 3 (outside 0..1)."""

    def report_running(self, session):
        super().report_running(session)
        self.send_update(session, {"sessionUpdate": "agent_thought_chunk", "messageId": new_id("msg_"), "content": {
            "type": "text", "text": "Thinking about the prompt.",
            "annotations": {"priority": 3, "audience": ["user"]}}})


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "content-001": (("CONTENT-001",), Content001),
    "content-004": (("CONTENT-004",), Content004),
    "content-002": (("CONTENT-002",), Content002),
    "content-003": (("CONTENT-003",), Content003),
}
