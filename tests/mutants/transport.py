"""Mutants of the TRANSPORT rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

import json
import sys

from acp_conformance.reference.agent import INVALID_REQUEST, ReferenceAgent


class Transport003(ReferenceAgent):
    """Prints a banner line on stdout before anything else."""

    def on_startup(self):
        sys.stdout.buffer.write(b"Agent starting...\n")
        sys.stdout.buffer.flush()


class Transport006(ReferenceAgent):
    """The empty batch [] is answered with an array."""

    def handle_batch(self, items):
        if not items:
            self.write_line([{"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST,
                                                                       "message": "Invalid Request"}}])
            return
        super().handle_batch(items)


class Transport012(ReferenceAgent):
    """Batch arrays are dropped without an answer (neither the v2 refusal nor the older member answers)."""

    def handle_batch(self, items):
        if not items:
            super().handle_batch(items)  # [] still gets its -32600: TRANSPORT-006 is not this mutant's


class Transport012Both(ReferenceAgent):
    """A batch is refused whole with -32600 and its members are served all the same."""

    def handle_batch(self, items):
        super().handle_batch(items)
        if items:
            self.handle_batch_per_member(items)


def _write_bytes(agent: ReferenceAgent, data: bytes) -> None:
    """Write ``data`` plus \\n to stdout as is (what write_line does after serialising)."""
    if agent.quiet:
        return
    try:
        out = sys.stdout.buffer
        out.write(data + b"\n")
        out.flush()
    except (OSError, ValueError):
        agent.quiet = True
        agent.stop(0)


def _chunk_update(obj) -> bool:
    update = (obj.get("params") or {}).get("update") if isinstance(obj, dict) else None
    return isinstance(update, dict) and update.get("sessionUpdate") == "agent_message_chunk"


class Transport001(ReferenceAgent):
    """Its own text (agent_message_chunk notifications) is written in Latin-1, not UTF-8: "You said: héllo"
    carries the byte 0xE9, an invalid UTF-8 sequence.

    A line that does not decode is also stray non-JSON-RPC output on stdout, which TRANSPORT-003 judges
    on the same frame. The other way to break TRANSPORT-001 (valid UTF-8, but the prompt's code points
    not preserved, e.g. double encoding) is caught on the user_message echo, where PROMPT-002 warns
    about the changed text as well; so TRANSPORT-001 cannot be broken alone."""

    def write_line(self, obj):
        if _chunk_update(obj):
            text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
            _write_bytes(self, text.encode("latin-1", "replace"))
            return
        super().write_line(obj)


class Transport002(ReferenceAgent):
    """agent_message_chunk notifications are pretty-printed over several lines.

    The fragment lines are also non-JSON-RPC output on stdout, which TRANSPORT-003 judges on the same
    frames: a message spread over several lines cannot break TRANSPORT-002 alone."""

    def write_line(self, obj):
        if _chunk_update(obj):
            _write_bytes(self, json.dumps(obj, ensure_ascii=False, indent=2).encode("utf-8"))
            return
        super().write_line(obj)


class TransportEmptyArray(ReferenceAgent):
    """The empty batch [] is answered with an empty array [] (it escaped every mandatory rule, issue 25)."""

    def handle_batch(self, items):
        if not items:
            self.write_line([])
            return
        super().handle_batch(items)


# a defect in every exchange, after acp-tck's v2 fixture emits_batch_updates: the suite names it in one sentence and the
# whole run still ends in seconds (bench/bench_systemic.py times it)
class BatchUpdates(ReferenceAgent):
    """Writes its agent_message_chunk notifications in pairs: a chunk is held until the next line, and when
    that is another session/update the two go out as one JSON array line (a JSON-RPC 2.0 batch, which the v2
    Preview removed). Anything else written after a held chunk (a response, the idle) goes out after it, on
    its own line; so every frame arrives, in its order, and only the framing is wrong."""

    held: dict | None = None

    def write_line(self, obj):
        held, self.held = self.held, None
        if held is not None:
            if isinstance(obj, dict) and obj.get("method") == "session/update":
                super().write_line([held, obj])
                return
            super().write_line(held)
        if isinstance(obj, dict) and _is_chunk(obj):
            self.held = obj
            return
        super().write_line(obj)


def _is_chunk(obj: dict) -> bool:
    update = (obj.get("params") or {}).get("update") if obj.get("method") == "session/update" else None
    return isinstance(update, dict) and update.get("sessionUpdate") == "agent_message_chunk"


class HangsOnHalfClose(ReferenceAgent):
    """Stdin closed while a turn runs: the agent goes on and never exits (its turn ends, the process stays).
    Only the fault scenario fault-half-close-mid-turn creates the situation (--acp-faults)."""

    SUITE_OPTIONS = ("--acp-faults",)

    def on_eof(self):
        if any(s.turn is not None for s in self.sessions.values()):
            return  # the half-closed connection is never noticed
        super().on_eof()


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "transport-003": (("TRANSPORT-003",), Transport003),
    "wire-transport-006": (("TRANSPORT-006", "TRANSPORT-012"), Transport006),
    "wire-empty-batch-empty-array": (("TRANSPORT-006", "TRANSPORT-012"), TransportEmptyArray),
    "wire-transport-012": (("TRANSPORT-012",), Transport012),
    "wire-transport-012-both": (("TRANSPORT-012",), Transport012Both),
    "wire2-transport-001": (("TRANSPORT-001", "TRANSPORT-003"), Transport001),  # an undecodable line is stray output
    "wire2-transport-002": (("TRANSPORT-002", "TRANSPORT-003"), Transport002),  # fragments are stray output too
    "emits-batch-updates": (("TRANSPORT-013",), BatchUpdates),
    "fault-hangs-on-half-close": (("TRANSPORT-011",), HangsOnHalfClose),
}
