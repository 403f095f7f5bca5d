"""The simulated work a prompt's text steers: replies, tool calls, permissions, terminals, background work."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from .state import LiveSession, Turn
from .wire import FINAL_TOOL_STATUSES, INTERNAL_ERROR, new_id


def _work_scale(value: str | None) -> float:
    """ACP_REFERENCE_WORK_SCALE: how long the simulated work of a turn takes, as a factor (a
    benchmark of the fuzzer sets it below 1 to see what the fuzzer does when the agent is quick)."""
    try:
        scale = float(value) if value is not None else 1.0
    except ValueError:
        scale = -1.0
    if not scale >= 0:
        print(f"reference agent: ACP_REFERENCE_WORK_SCALE={value!r} is not a number >= 0; using 1", file=sys.stderr)
        return 1.0
    return scale


class WorkMixin:
    STEERING_WORDS = ("background", "permission", "elicit", "terminal", "cancellable", "tool", "fail", "slowly", "plan")

    # -- work (steered by the prompt text) ------------------------------------------------------

    def choose_behaviour(self, text: str) -> str:
        lowered = text.lower()
        for word in self.STEERING_WORDS:
            if word in lowered:
                return word
        return "echo"

    async def do_work(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        behaviour = self.choose_behaviour(turn.text)
        return await getattr(self, "work_" + behaviour)(session, turn)

    def agent_chunk(self, session: LiveSession, turn: Turn, text: str) -> None:
        if turn.agent_message_id is None:
            turn.agent_message_id = self.new_agent_message_id(session)
        turn.agent_text.append(text)
        self.send_update(
            session,
            {
                "sessionUpdate": "agent_message_chunk",
                "messageId": turn.agent_message_id,
                "content": {"type": "text", "text": text},
            },
        )

    def record_agent_message(self, session: LiveSession, turn: Turn) -> None:
        if turn.recorded or turn.agent_message_id is None:
            return
        turn.recorded = True
        session.record.setdefault("history", []).append(
            {
                "kind": "agent_message",
                "messageId": turn.agent_message_id,
                "content": [{"type": "text", "text": "".join(turn.agent_text)}],
            }
        )
        self.save(session)

    def tool_update(self, session: LiveSession, turn: Turn, **fields: Any) -> None:
        if turn.tool is None:
            turn.tool = {"toolCallId": new_id("call_")}
        turn.tool.update(fields)
        update = {"sessionUpdate": "tool_call_update", "toolCallId": turn.tool["toolCallId"]}
        update.update(fields)
        self.send_update(session, update)
        if fields.get("status") in FINAL_TOOL_STATUSES:  # the final state is history
            entry = {"kind": "tool_call"}
            entry.update(turn.tool)
            session.record.setdefault("history", []).append(entry)
            self.save(session)

    async def pause(self, seconds: float) -> None:
        """Simulated work: ``seconds`` times ACP_REFERENCE_WORK_SCALE (1 by default; 0 answers at once)."""
        await asyncio.sleep(seconds * self.work_scale)

    async def work_echo(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        self.agent_chunk(session, turn, "You said: ")
        await self.pause(0.01)
        self.agent_chunk(session, turn, turn.text or "(no text)")
        return "end_turn", None

    def plan_update(self, session: LiveSession, entries: list[dict]) -> None:
        """plan_update: an items plan, every entry each time (the client replaces the plan)."""
        self.send_update(session, {"sessionUpdate": "plan_update", "plan": {
            "type": "items", "planId": "plan_" + session.id[-8:], "entries": entries}})

    async def work_plan(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        steps = ["Read the task", "Do it"]
        for done in range(len(steps) + 1):
            self.plan_update(session, [{"content": c, "priority": "medium",
                                        "status": "completed" if i < done else "in_progress" if i == done else "pending"}
                                       for i, c in enumerate(steps)])
            await self.pause(0.01)
        self.agent_chunk(session, turn, "Planned and done.")
        return "end_turn", None

    async def work_slowly(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        for i in range(60):
            self.agent_chunk(session, turn, "%d " % (i + 1))
            await self.pause(0.1)
        return "end_turn", None

    async def work_fail(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        await self.pause(0.01)
        return "error", {"code": INTERNAL_ERROR, "message": "Simulated failure: the prompt asked to fail"}

    async def work_tool(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        path = os.path.join(session.record["cwd"], "README.md")
        self.tool_update(session, turn, title="Read README.md", name="read_file", kind="read", status="pending",
                         locations=[{"path": path}])
        await self.pause(0.02)
        self.tool_update(session, turn, status="in_progress")
        self.tool_content_chunk(session, turn, {"type": "content", "content": {"type": "text", "text": "(reading)"}})
        await self.pause(0.02)
        self.tool_update(session, turn, status="completed",
                         content=[{"type": "content", "content": {"type": "text", "text": "(README.md is empty)"}},
                                  self.session_reference(session)])
        self.agent_chunk(session, turn, "I read README.md; it is empty.")
        return "end_turn", None

    @staticmethod
    def permission_approved(answer: tuple) -> bool:
        kind, value = answer
        if kind != "result" or not isinstance(value, dict):
            return False
        outcome = value.get("outcome")
        return isinstance(outcome, dict) and outcome.get("outcome") == "selected" and outcome.get("optionId") == "allow"

    async def work_permission(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        deleting = "delete" in turn.text.lower()
        kind = "delete" if deleting else "edit"
        title = "Delete build/" if deleting else "Edit README.md"
        self.tool_update(session, turn, title=title, name="delete_path" if deleting else "edit_file",
                         kind=kind, status="pending")
        request_id, future = self.send_request(
            "session/request_permission",
            {
                "sessionId": session.id,
                "title": title + "?",
                "subject": {"type": "tool_call", "toolCall": {"toolCallId": turn.tool["toolCallId"]}},
                "options": [
                    {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
                ],
            },
        )
        turn.pending_requests.append(request_id)
        self.report_requires_action(session)
        answer = await future  # session/cancel cancels this await (see on_work_cancelled)
        turn.pending_requests.remove(request_id)
        self.report_running(session)
        if not self.permission_approved(answer):
            self.tool_update(session, turn, status="failed")
            self.agent_chunk(session, turn, "Permission was not granted; nothing was changed.")
            return "end_turn", None
        self.tool_update(session, turn, status="in_progress")
        await self.pause(0.02)
        self.tool_update(session, turn, status="completed",
                         content=[{"type": "content", "content": {"type": "text", "text": "Done: " + title}},
                                  self.tool_diff(session, deleting)])
        self.agent_chunk(session, turn, "Done.")
        return "end_turn", None

    def tool_diff(self, session: LiveSession, deleting: bool) -> dict:
        """Diff content of the permitted edit / delete (changes plus a git_patch with absolute paths)."""
        if deleting:
            path = os.path.join(session.record["cwd"], "build", "out.txt")
            return {"type": "diff", "changes": [{"operation": "delete", "path": path}],
                    "patch": {"format": "git_patch", "text": "diff --git %s %s\ndeleted file mode 100644\n--- %s\n"
                              "+++ /dev/null\n@@ -1 +0,0 @@\n-built\n" % (path, path, path)}}
        path = os.path.join(session.record["cwd"], "README.md")
        return {"type": "diff", "changes": [{"operation": "modify", "path": path}],
                "patch": {"format": "git_patch", "text": "diff --git %s %s\n--- %s\n+++ %s\n@@ -0,0 +1 @@\n"
                          "+# Project\n" % (path, path, path, path)}}

    def session_reference(self, session: LiveSession) -> dict:
        """Tool content referring to a session the client knows (here: the prompting session itself)."""
        return {"type": "session", "sessionId": session.id}

    def tool_content_chunk(self, session: LiveSession, turn: Turn, content: dict) -> None:
        """Append one ToolCallContent item to the running tool call (tool_call_content_chunk)."""
        self.send_update(session, {"sessionUpdate": "tool_call_content_chunk", "toolCallId": turn.tool["toolCallId"],
                                   "content": content})

    async def wait_stop(self, future: asyncio.Future, seconds: float) -> bool:
        """True when ``future`` is set (a tool_call/cancel or terminal/cancel) within ``seconds``."""
        try:
            await asyncio.wait_for(asyncio.shield(future), seconds)
            return True
        except asyncio.TimeoutError:
            return False

    async def work_cancellable(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        turn.stop_tool = self.loop.create_future()
        self.tool_update(session, turn, title="Run the test suite", name="run_tests", kind="execute",
                         status="in_progress", capabilities={"cancel": {}})
        if await self.wait_stop(turn.stop_tool, 5.0):
            self.tool_update(session, turn, status="cancelled", capabilities={"cancel": None})
            self.agent_chunk(session, turn, "The test run was cancelled; carrying on without it.")
        else:
            self.tool_update(session, turn, status="completed", capabilities={"cancel": None},
                             content=[{"type": "content", "content": {"type": "text", "text": "all tests passed"}}])
            self.agent_chunk(session, turn, "All tests passed.")
        return "end_turn", None

    def terminal_update(self, session: LiveSession, turn: Turn, **fields: Any) -> None:
        turn.terminal.update(fields)
        update = {"sessionUpdate": "terminal_update", "terminalId": turn.terminal["terminalId"]}
        update.update(fields)
        self.send_update(session, update)

    def terminal_chunk(self, session: LiveSession, turn: Turn, data: bytes) -> None:
        import base64
        self.send_update(session, {"sessionUpdate": "terminal_output_chunk", "terminalId": turn.terminal["terminalId"],
                                   "data": base64.b64encode(data).decode("ascii")})

    async def work_terminal(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        turn.stop_terminal = self.loop.create_future()
        turn.terminal = {"terminalId": new_id("term_")}
        self.tool_update(session, turn, title="Run make test", name="run_command", kind="execute", status="in_progress",
                         content=[{"type": "terminal", "terminalId": turn.terminal["terminalId"]}])
        self.terminal_update(session, turn, command="make test", cwd=session.record["cwd"], capabilities={"cancel": {}})
        self.terminal_chunk(session, turn, b"running tests...\n")
        if await self.wait_stop(turn.stop_terminal, 5.0):
            self.terminal_chunk(session, turn, b"^C\n")
            self.terminal_update(session, turn, exitStatus={"exitCode": None, "signal": "SIGTERM"},
                                 capabilities={"cancel": None})
            text = "The test command was stopped."
        else:
            self.terminal_chunk(session, turn, b"all tests passed\n")
            self.terminal_update(session, turn, exitStatus={"exitCode": 0, "signal": None}, capabilities={"cancel": None})
            text = "All tests passed."
        await self.pause(0.02)
        self.tool_update(session, turn, status="completed")  # the agent's own decision, not the cancel's
        self.agent_chunk(session, turn, text)
        return "end_turn", None

    async def work_background(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        """A dev server whose tool call returns while its terminal keeps running in the background."""
        terminal_id = new_id("term_")
        turn.terminal = {"terminalId": terminal_id}
        self.tool_update(session, turn, title="Start the dev server", name="run_command", kind="execute",
                         status="in_progress", content=[{"type": "terminal", "terminalId": terminal_id}])
        self.terminal_update(session, turn, command="npm run dev", cwd=session.record["cwd"],
                             capabilities={"cancel": {}})
        self.terminal_chunk(session, turn, b"server listening on :3000\n")
        self.tool_update(session, turn, status="completed")  # control returns; the process keeps running
        bg = {"terminalId": terminal_id, "stop": self.loop.create_future()}
        session.bg_terminals[terminal_id] = bg
        session.background = (session.background or []) + [{"type": "terminal", "terminalId": terminal_id}]
        self.loop.create_task(self.run_background_terminal(session, bg))
        self.agent_chunk(session, turn, "The dev server runs in the background.")
        return "end_turn", None

    BACKGROUND_SECONDS = 30.0  # a background terminal nobody stops ends on its own

    async def run_background_terminal(self, session: LiveSession, bg: dict) -> None:
        """Wait for terminal/cancel (or the time limit): exitStatus first, then the snapshot without it."""
        stopped = await self.wait_stop(bg["stop"], self.BACKGROUND_SECONDS)
        self.end_background_terminal(session, bg["terminalId"], {"exitCode": None, "signal": "SIGTERM"} if stopped
                                     else {"exitCode": 0, "signal": None})

    def end_background_terminal(self, session: LiveSession, terminal_id: str, exit_status: dict) -> None:
        if session.bg_terminals.pop(terminal_id, None) is None:
            return
        self.send_update(session, {"sessionUpdate": "terminal_update", "terminalId": terminal_id,
                                   "exitStatus": exit_status, "capabilities": {"cancel": None}})
        session.background = [item for item in session.background or [] if item.get("terminalId") != terminal_id]
        self.send_update(session, {"sessionUpdate": "state_update", "state": self.current_state(session)})
