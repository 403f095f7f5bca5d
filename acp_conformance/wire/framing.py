"""Newline framing: one byte stream, cut anywhere by the reads, back into the lines the peer wrote.

Shared by the suite's transports (stdio and the client's agent socket) and by the tap's judge, so that
every reader of the wire frames alike. On the hot path: a line inside one chunk is sliced, never copied
into the pending buffer.
"""

from __future__ import annotations

from typing import Callable


class LineSplitter:
    """Feed it chunks; it calls ``emit(line, oversize)`` for every line (without its newline).

    ``max_bytes``: a line that grows past it without a newline is emitted as it is, with ``oversize`` true,
    and the rest of it is framed anew (None: no limit). ``end()`` returns what is left without a newline.
    """

    __slots__ = ("_emit", "_pending", "max_bytes")

    def __init__(self, emit: Callable[[bytes, bool], object], max_bytes: int | None = None):
        self._emit = emit
        self._pending = bytearray()
        self.max_bytes = max_bytes

    def feed(self, chunk: bytes) -> None:
        pending = self._pending
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                pending += chunk[start:]
                if self.max_bytes is not None and len(pending) > self.max_bytes:
                    line = bytes(pending)
                    pending.clear()
                    self._emit(line, True)
                return
            if pending:
                pending += chunk[start:nl]
                line = bytes(pending)
                pending.clear()
            else:
                line = chunk[start:nl]
            self._emit(line, False)
            start = nl + 1

    def end(self) -> bytes | None:
        """The unterminated rest (None when the stream ended on a newline); the splitter is empty after."""
        if not self._pending:
            return None
        rest = bytes(self._pending)
        self._pending.clear()
        return rest
