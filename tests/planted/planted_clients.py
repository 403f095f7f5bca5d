"""Reference clients with planted bugs that only a sequence or an odd value reaches.

The client fuzzer must find each within a fixed budget without being aimed at it (its strategies
know nothing of these values). Run one with ``python tests/planted/planted_clients.py NAME -- AGENT``
(under the fuzzer: ``python tests/planted/planted_clients.py NAME -- {agent}``), or speaking ACP on
its own stdio, with the suite as its agent directly: ``python tests/planted/planted_clients.py NAME --stdio``.
"""

from __future__ import annotations

import asyncio
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from acp_conformance.reference.client import ReferenceClient, main  # noqa: E402


def crash(why: str, status: int) -> None:
    print(f"planted client: crashing on {why}", file=sys.stderr, flush=True)
    os._exit(status)


class FourthChunk(ReferenceClient):
    """Crashes on the fourth agent_message_chunk of a turn (a fixed-size buffer of three chunks)."""

    async def prompt(self, session_id, n):
        self.chunks = 0
        await super().prompt(session_id, n)

    def on_update(self, session_id, update):
        if update.get("sessionUpdate") == "agent_message_chunk":
            self.chunks = getattr(self, "chunks", 0) + 1
            if self.chunks >= 4:
                crash("the fourth agent_message_chunk of the turn", 70)
        super().on_update(session_id, update)


class ThreeOptions(ReferenceClient):
    """With three or more options, answers a permission request with an option id it was not
    offered (an off-by-one in the option list of its dialog): CLIENT-013."""

    def permission_outcome(self, params):
        options = [o for o in params.get("options") or [] if isinstance(o, dict) and isinstance(o.get("optionId"), str)]
        if len(options) >= 3:
            return {"outcome": "selected", "optionId": "".join(o["optionId"] for o in options) + "#"}
        return super().permission_outcome(params)


class EmptyToolContent(ReferenceClient):
    """Dies on a tool_call_update whose content list is empty (it renders content[0])."""

    def on_update(self, session_id, update):
        if update.get("sessionUpdate") == "tool_call_update" and update.get("content") == []:
            crash("a tool_call_update with an empty content list", 71)
        super().on_update(session_id, update)


class ReplyUnderscoreNotification(ReferenceClient):
    """Answers a notification whose method starts with `_` (it treats extensions as requests): CLIENT-016."""

    def on_notification(self, method, params):
        super().on_notification(method, params)
        if method.startswith("_"):
            asyncio.ensure_future(self.send({"jsonrpc": "2.0", "id": None, "result": {}}))


class BigIdHangs(ReferenceClient):
    """Never answers an agent request whose id is an integer above 2^31 (it keeps request ids in a
    32-bit table, where the lookup fails): the agent waits forever (CLIENT-017)."""

    def dispatch(self, msg):
        rid = msg.get("id")
        if isinstance(msg.get("method"), str) and isinstance(rid, int) and not isinstance(rid, bool) and rid > 2 ** 31:
            return  # dropped on the floor
        super().dispatch(msg)


PLANTED = {"fourth-chunk": FourthChunk, "three-options": ThreeOptions, "empty-tool-content": EmptyToolContent,
           "reply-underscore-notification": ReplyUnderscoreNotification, "big-id-hangs": BigIdHangs}


def stdio_class(cls: type[ReferenceClient]) -> type[ReferenceClient]:
    """The planted client speaking on its own stdio (no relay: one process fewer per example)."""
    sys.path.insert(0, os.path.join(_ROOT, "tests", "hostile_clients"))
    from stdio_client import StdioClient

    return type(f"Stdio{cls.__name__}", (StdioClient, cls), {})


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0] not in PLANTED:
        raise SystemExit(f"usage: planted_clients.py NAME [--stdio | -- AGENT...]; NAME is one of {', '.join(PLANTED)}")
    if args[1:2] == ["--stdio"]:
        from acp_conformance.reference.client import parse

        opts, _ = parse(args[2:] + ["--", "unused"])
        sys.exit(asyncio.run(stdio_class(PLANTED[args[0]])(opts).main([])))
    sys.exit(main(args[1:], PLANTED[args[0]]))
