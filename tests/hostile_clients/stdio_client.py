"""The reference client speaking ACP on its own stdio (no {agent}): the suite is its agent directly."""

from __future__ import annotations

import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from acp_conformance.reference.client import ReferenceClient, parse  # noqa: E402


class _OwnStdio:
    """Stands in for the agent process: its stdin is our stdout, its stdout our stdin."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.stdout, self.stdin = reader, writer

    async def wait(self) -> int:
        return 0

    def terminate(self) -> None:
        pass


class StdioClient(ReferenceClient):
    async def main(self, argv):
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 30)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, sys.stdout)
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        self.proc = _OwnStdio(reader, writer)
        reader_task = asyncio.ensure_future(self.read_loop())
        try:
            await self.converse()
        finally:
            reader_task.cancel()
        return 0


if __name__ == "__main__":
    opts, _ = parse(sys.argv[1:] + ["--", "unused"])
    sys.exit(asyncio.run(StdioClient(opts).main([])))
