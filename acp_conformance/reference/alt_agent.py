"""The reference agent's alternative personality: as correct, but with the other legal choice wherever
the spec leaves one to the implementation.

Run it as ``python -m acp_conformance.reference.alt_agent``. It is ``ReferenceAgent`` with these
choices changed (each quoted from the public spec, https://agentclientprotocol.com/protocol/v2/):

* capabilities ``{"session": {}}`` only: the baseline methods ("Supplying {} means the agent supports
  the baseline session methods"); no session/delete (-32601), no embedded context, no config options
  (``configOptions`` omitted; session/set_config_option is -32601: agents must support it only "for any
  session where they advertise config options");
* sessions live in memory only ("Agents are not required to persist it"): a resume from another
  process is -32002 with ``data.sessionId``; session/list lists this process's sessions;
* a prompt that arrives while work runs is inserted at once and joins that work ("A prompt starts or
  contributes to foreground work"): its response and user message go out at once, no second
  ``running``; the running work's ``idle`` ends it all;
* the order of a prompt's first frames: ``state_update running`` ("when foreground work starts"), then
  the response, then the user message ("Clients MUST tolerate the updates arriving before or after the
  response");
* the user message as ``user_message_chunk`` updates, one per content block, and the agent's reply as
  whole ``agent_message`` upserts ("either as a message update with a full content array or as
  streamed chunks");
* messageIds with non-ASCII characters (an opaque string);
* session/close of a session that is not active is -32002 ("agents MAY return an error").

A cancellation that arrives after the work ended is ignored, as by the default personality.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from .agent import (Ctx, LiveSession, ReferenceAgent, Turn, main as _main)


class MemoryStore:
    """Sessions kept for the life of the process only (the interface of agent.SessionStore)."""

    def __init__(self) -> None:
        self.records: dict[str, dict] = {}

    def load(self, session_id: Any) -> dict | None:
        return self.records.get(session_id) if isinstance(session_id, str) else None

    def save(self, record: dict) -> None:
        self.records[record["sessionId"]] = record

    def delete(self, session_id: Any) -> None:
        self.records.pop(session_id, None)

    def all(self) -> list[dict]:
        return list(self.records.values())


def _alt_id(prefix: str) -> str:
    return prefix + "ü→" + os.urandom(12).hex()


class AltAgent(ReferenceAgent):
    REQUESTS = {k: v for k, v in ReferenceAgent.REQUESTS.items()
                if k not in ("session/delete", "session/set_config_option")}
    SUPPORTS_EMBEDDED_CONTEXT = False

    def __init__(self, state_dir: str | None = None):
        super().__init__(state_dir)
        self.store = MemoryStore()  # type: ignore[assignment]

    # -- what it advertises ----------------------------------------------------------------------

    def capabilities(self) -> dict:
        return {"session": {}}

    def new_session_result(self, session: LiveSession) -> dict:
        return {"sessionId": session.id}  # no configOptions: it has none

    def resume_result(self, session: LiveSession) -> dict:
        return {}

    def close_unknown_session(self, ctx: Ctx, session_id: str) -> None:
        self.error_unknown_session(ctx, session_id)

    # -- ids ---------------------------------------------------------------------------------------

    def new_user_message_id(self, session: LiveSession, prompt: list) -> str:
        return _alt_id("nachricht-")

    def new_agent_message_id(self, session: LiveSession) -> str:
        return _alt_id("antwort-")

    # -- prompts -----------------------------------------------------------------------------------

    def hold_prompt(self, ctx: Ctx, session: LiveSession, prompt: list) -> None:
        turn = session.turn
        if turn is None or turn.cancel_requested or session.held:
            super().hold_prompt(ctx, session, prompt)  # nothing to join: held for a turn of its own
            return
        self.join_running_work(ctx, session, turn, prompt)

    def join_running_work(self, ctx: Ctx, session: LiveSession, turn: Turn, prompt: list) -> None:
        """Insert the prompt at once into the running work: no queue, no second running."""
        message_id = self.new_user_message_id(session, prompt)
        self.remember_key(ctx, session, message_id)  # an idempotency key: saved with the user message
        self.record_user_message(session, message_id, prompt)
        self.respond_prompt(ctx, session, message_id)
        self.emit_user_message(session, message_id, prompt)
        turn.text += "\n" + self.prompt_text(prompt)  # the work takes it into account from now on

    def insert_prompt(self, ctx: Ctx, session: LiveSession, prompt: list) -> None:
        message_id = self.new_user_message_id(session, prompt)
        self.remember_key(ctx, session, message_id)
        self.record_user_message(session, message_id, prompt)
        turn = Turn(ctx, message_id, prompt, self.prompt_text(prompt))
        turn.done = self.loop.create_future()
        session.turn = turn
        self.report_running(session)  # running first, then the response, then the user message
        self.respond_prompt(ctx, session, message_id)
        self.emit_user_message(session, message_id, prompt)
        self.settle_retries(session, ctx, message_id)
        turn.task = self.loop.create_task(self.run_turn(session, turn))

    def emit_user_message(self, session: LiveSession, message_id: str, prompt: list) -> None:
        for block in prompt:
            self.send_update(session, {"sessionUpdate": "user_message_chunk", "messageId": message_id,
                                       "content": block})

    def agent_chunk(self, session: LiveSession, turn: Turn, text: str) -> None:
        """Each piece of the reply re-sends the whole message as an agent_message upsert."""
        if turn.agent_message_id is None:
            turn.agent_message_id = self.new_agent_message_id(session)
        turn.agent_text.append(text)
        self.send_update(session, {"sessionUpdate": "agent_message", "messageId": turn.agent_message_id,
                                   "content": [{"type": "text", "text": "".join(turn.agent_text)}]})


def main() -> int:
    return _main(AltAgent)


if __name__ == "__main__":
    sys.exit(main())
