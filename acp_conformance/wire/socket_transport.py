"""A client under test that launches its agent itself: the wire is a local socket, not the client's stdio.

The client command carries ``{agent}``; the suite puts there the path of a small executable launcher of the
relay (``acp_conformance.reference.relay``), which the client starts as its agent. One word without spaces
or quotes serves both kinds of client: one that splits a command-line string (``--acp-agent {agent}``)
and one that executes argv as given (``-- {agent}``). The relay connects
back to a Unix socket that this transport listens on and carries bytes unchanged both ways, so
the lines read from the socket are exactly what the client wrote to its agent's stdin.

Knows bytes, not ACP. Like ``Transport``: ``eof`` is the end of the client's output to its agent
(the relay's socket closed: the client closed the agent's stdin or killed it), ``exited`` the
client process's exit, ``close_stdin`` ends what the agent writes (the client sees its agent's
stdout close), and ``shutdown`` is the same ladder over the client's process group, plus the
relay's own process (found with SO_PEERCRED), so that nothing is left running.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import stat
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

import anyio

from .transcript import EV_NOTE, EV_STDIN_CLOSED, Frame, Transcript
from .transport import READ_CHUNK, TargetClosed, TargetError, Transport, kill_tagged

PLACEHOLDER = "{agent}"


def relay_command(address: str) -> str:
    """The shell-quoted command line that the client under test launches as its agent."""
    return shlex.join([sys.executable, "-m", "acp_conformance.reference.relay", "--connect", address])


def write_launcher(directory: Path | str, address: str) -> tuple[str, bool]:
    """An executable ``agent`` script that execs the relay: (its path as one shell word, whether it lies in
    a folder of its own that the caller removes).

    The path must survive both a shell-style split and a plain exec, so a ``directory`` whose path would
    need quoting is replaced by a fresh folder under /tmp."""
    folder = Path(directory).resolve()
    own_folder = shlex.quote(str(folder)) != str(folder)
    if own_folder:
        folder = Path(tempfile.mkdtemp(prefix="acp-agent-", dir="/tmp"))
    launcher = folder / "agent"
    # arguments a client appends to its agent command (e.g. --stdio) are dropped: the relay takes none of its own
    launcher.write_text("#!/bin/sh\nexec " + relay_command(os.path.abspath(address)) + "\n", encoding="utf-8")
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(launcher), own_folder


def substitute(argv: list[str], agent_line: str) -> list[str]:
    return [a.replace(PLACEHOLDER, agent_line) for a in argv]


def uses_placeholder(argv: list[str]) -> bool:
    return any(PLACEHOLDER in a for a in argv)


class NeverConnected(TargetError):
    """The client did not start the relay (its agent) in time, or exited before it did."""


class SocketTransport(Transport):
    """One connection: the client process plus the relay connection it opens to the suite."""

    def __init__(self, argv: list[str], transcript: Transcript, *, cwd: Path | str, socket_dir: Path | str,
                 env: dict[str, str] | None = None, on_frame: Callable[[Frame], Any] | None = None,
                 connect_timeout: float = 15.0, max_frame_bytes: int = 256 * 1024 * 1024):
        self.socket_path = str(Path(socket_dir) / "agent.sock")
        self.launcher, self.launcher_folder_owned = write_launcher(socket_dir, self.socket_path)
        super().__init__(substitute(argv, self.launcher), transcript, cwd=cwd, env=env,
                         on_frame=on_frame, max_frame_bytes=max_frame_bytes)
        self.connect_timeout = connect_timeout
        self.listener: anyio.abc.SocketListener | None = None
        self.stream: anyio.abc.SocketStream | None = None
        self.relay_pid: int | None = None
        self.client_output = bytearray()  # the client's own stdout (its UI), kept with its stderr

    async def spawn(self) -> None:
        try:
            os.unlink(self.socket_path)
        except FileNotFoundError:
            pass
        self.listener = await anyio.create_unix_listener(self.socket_path)
        await super().spawn()

    def start_readers(self, task_group) -> None:
        task_group.start_soon(self._read_stdout)  # the client's stdout: not the wire, kept beside stderr
        task_group.start_soon(self._read_stderr)
        task_group.start_soon(self._wait_exit)

    async def accept(self, task_group) -> None:
        """Wait until the relay connects (raises NeverConnected when it does not), then read the wire."""
        assert self.listener is not None
        got: list[anyio.abc.SocketStream] = []

        async def take(scope: anyio.CancelScope) -> None:
            got.append(await self.listener.accept())
            scope.cancel()

        async def watch_exit(scope: anyio.CancelScope) -> None:
            await self.exited.wait()
            scope.cancel()

        with anyio.move_on_after(self.connect_timeout):
            async with anyio.create_task_group() as tg:
                tg.start_soon(take, tg.cancel_scope)
                tg.start_soon(watch_exit, tg.cancel_scope)
        await self.listener.aclose()
        self.listener = None
        if not got:
            if self.exited.is_set():
                raise NeverConnected(f"the client {_how(self.returncode)} without starting its agent "
                                     f"(the {PLACEHOLDER} command); command line: {self.command_line}")
            raise NeverConnected(f"the client did not start its agent (the {PLACEHOLDER} command) within "
                                 f"{self.connect_timeout:g} s; command line: {self.command_line}")
        self.stream = got[0]
        raw = self.stream.extra(anyio.abc.SocketAttribute.raw_socket)
        try:
            creds = raw.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            self.relay_pid = struct.unpack("3i", creds)[0]
        except (OSError, AttributeError):  # pragma: no cover - not Linux
            self.relay_pid = None
        self.transcript.event(EV_NOTE, text="the client's agent (the relay) connected", relay_pid=self.relay_pid)
        task_group.start_soon(self._read_wire)

    async def _read_stdout(self) -> None:
        assert self.process and self.process.stdout
        while True:
            try:
                chunk = await self.process.stdout.receive(READ_CHUNK)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
            self.stderr.add(chunk)

    async def _read_wire(self) -> None:
        assert self.stream is not None
        await self._read_frames(self.stream)

    async def write(self, raw: bytes, msg: Any = None) -> Frame:
        if self.stream is None:
            raise TargetClosed("the client's agent is not connected")
        async with self._write_lock:
            frame = self.transcript.sent(raw, msg)
            if self.stdin_closed or self.eof.is_set():
                raise TargetClosed(f"the client closed the connection to its agent; could not write frame #{frame.seq}")
            try:
                await self.stream.send(raw + b"\n")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError, ConnectionResetError,
                    OSError) as e:
                raise TargetClosed(f"the client closed the connection to its agent; could not write frame "
                                   f"#{frame.seq} ({e!r})") from None
            return frame

    async def close_stdin(self) -> None:
        """The agent's side ends its output: the relay closes its stdout, the client sees its agent go."""
        if self.stream is not None and not self.stdin_closed:
            self.stdin_closed = True
            try:
                await self.stream.send_eof()
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
            self.transcript.event(EV_STDIN_CLOSED)

    async def hang_up(self) -> None:
        """The agent process dies: the connection closes in both directions at once."""
        self.stdin_closed = True
        if self.stream is not None:
            try:
                await self.stream.aclose()
            except (OSError, anyio.BrokenResourceError):
                pass
        self.transcript.event(EV_STDIN_CLOSED, hang_up=True)

    async def shutdown(self, grace: float = 2.0) -> str:
        if self.listener is not None:
            try:
                await self.listener.aclose()
            except OSError:
                pass
        if self.process is None:
            return "never started"
        how = "exited after its agent closed its output"
        if self.stream is None and not self.exited.is_set():
            how = "never connected"  # nothing to close: straight to SIGTERM
        elif not self.exited.is_set():
            await self.close_stdin()
            with anyio.move_on_after(grace):
                await self.exited.wait()
        else:
            how = "had exited by itself"
        if not self.exited.is_set():
            self._signal_group(signal.SIGTERM)
            how = "terminated with SIGTERM (it did not exit when its agent closed its output)"
            with anyio.move_on_after(grace):
                await self.exited.wait()
        if not self.exited.is_set():
            self._signal_group(signal.SIGKILL)
            how = "killed with SIGKILL (it ignored its agent's end and SIGTERM)"
            with anyio.move_on_after(grace):
                await self.exited.wait()
        self._signal_group(signal.SIGKILL)  # whatever it left behind in its group
        if self.relay_pid:  # a client may start its agent in a session of its own
            try:
                os.kill(self.relay_pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        kill_tagged(self.tag)  # and whatever else the client started outside its group
        if self.stream is not None:
            with anyio.move_on_after(grace):
                await self.eof.wait()
            try:
                await self.stream.aclose()
            except (OSError, anyio.BrokenResourceError):
                pass
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):  # stdin: unused, still a pipe
            try:
                if stream is not None:
                    await stream.aclose()
            except Exception:  # pragma: no cover - closing a dead pipe
                pass
        for leftover in (self.socket_path, self.launcher):
            try:
                os.unlink(leftover)
            except OSError:
                pass
        if self.launcher_folder_owned:
            shutil.rmtree(Path(self.launcher).parent, ignore_errors=True)
        return how


def _how(rc: int | None) -> str:
    from .transport import describe_exit
    return describe_exit(rc)

