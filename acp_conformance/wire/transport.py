"""The target as a subprocess, spoken to over stdio with newline framing.

Knows bytes, not ACP. Every line the target writes is recorded in the transcript with its raw
bytes (no line-length limit); stderr is captured apart into a bounded buffer; the target runs in
its own process group so that the shutdown ladder (close stdin, SIGTERM, SIGKILL) reaches every
process it started. A descendant that left the group (setsid, a daemon's double fork) still carries
the environment tag the target was started with; on Linux the ladder finds and kills those too.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import anyio
from anyio.abc import Process

from .framing import LineSplitter
from .transcript import (EV_EOF, EV_EXIT, EV_START, EV_STDIN_CLOSED, Frame,
                         Transcript)

READ_CHUNK = 1 << 16
# inherited by everything the target starts: the sweep after the ladder finds escaped descendants by it
TAG_VAR = "ACP_CONFORMANCE_TARGET"
# one id per suite run, in the environment of the run's processes (xdist workers too): a signal's sweep
# finds by it the targets of workers that died before they could shut their own down
RUN_VAR = "ACP_CONFORMANCE_RUN"
# targets this process started and has not shut down yet: tag -> pid (= process group)
_LIVE: dict[str, int] = {}
# set by a signal's sweep (interruption.py): no target starts any more, and shutting one down waits for nothing
_STOPPING: list[str] = []


def stop_all(why: str) -> int:
    """Kill every live target of this process at once and refuse to start new ones: the run is being
    interrupted, and nothing in its unwinding may wait on a target (the signal handler calls this)."""
    if not _STOPPING:
        _STOPPING.append(why)
    return kill_live_targets()


def resume_starts() -> None:
    _STOPPING.clear()


class TargetError(Exception):
    """The target could not be started or talked to; the message is for a person."""


class TargetClosed(TargetError):
    """The target closed its stdin (or exited) while the suite was writing to it."""


@dataclass
class StderrBuffer:
    """Keeps the head and the tail of what the target wrote on stderr, and counts the rest."""

    head_limit: int = 64 * 1024
    tail_limit: int = 64 * 1024
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    def text(self) -> str:
        skipped = self.total - len(self.head) - len(self.tail)
        middle = f"\n... [{skipped} bytes of stderr not kept] ...\n" if skipped > 0 else ""
        return (bytes(self.head).decode("utf-8", "replace") + middle
                + bytes(self.tail).decode("utf-8", "replace"))

    def tail_text(self, limit: int = 4000) -> str:
        s = self.text()
        return s if len(s) <= limit else "..." + s[-limit:]


def _started_when() -> dict[str, Any]:
    """When and by which process of the suite a connection began (the start event's ``wall``, seconds since the
    epoch, and ``suite_pid``): what puts the transcripts of one run back on one time line, per xdist worker
    (bench/floor.py replays a run's exchanges in the order and with the concurrency the run had)."""
    return {"wall": round(time.time(), 6), "suite_pid": os.getpid()}


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}"
    return f"exited with status {returncode}"


def kill_tagged(tag: str, proc: Path = Path("/proc")) -> int:
    """SIGKILL every process whose environment carries ``TAG_VAR=tag``; returns how many (0 off Linux).

    Only processes of our own user are readable, which is all a target can start.
    """
    needle = f"{TAG_VAR}={tag}".encode()
    return _kill_matching(lambda env: needle in env, proc)


def kill_run(run_id: str, proc: Path = Path("/proc")) -> int:
    """SIGKILL every target process (and descendant) of the suite run ``run_id``: those whose environment
    carries both ``RUN_VAR=run_id`` and a ``TAG_VAR``; the run's own processes carry no ``TAG_VAR``."""
    run = f"{RUN_VAR}={run_id}".encode()
    tag = f"{TAG_VAR}=".encode()
    return _kill_matching(lambda env: run in env and any(e.startswith(tag) for e in env), proc)


def kill_live_targets() -> int:
    """SIGKILL, at once and without awaiting anything, every target this process started and has not shut
    down, with its group and tagged descendants (what a signal handler does before the run unwinds)."""
    killed = 0
    for tag, pid in list(_LIVE.items()):
        try:
            os.killpg(pid, signal.SIGKILL)
            killed += 1
        except (ProcessLookupError, PermissionError):
            pass
        killed += kill_tagged(tag)
    return killed


def _kill_matching(match: Callable[[list[bytes]], bool], proc: Path) -> int:
    killed = 0
    try:
        entries = [e for e in os.listdir(proc) if e.isdigit()]
    except OSError:
        return 0
    for pid in entries:
        try:
            with open(proc / pid / "environ", "rb") as f:
                environ = f.read()
        except OSError:  # gone meanwhile, or not ours
            continue
        if match(environ.split(b"\0")):
            try:
                os.kill(int(pid), signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
    return killed


class Transport:
    """One connection: one target process. ``on_frame`` is called for every line it writes."""

    def __init__(self, argv: list[str], transcript: Transcript, *, cwd: Path | str,
                 env: dict[str, str] | None = None,
                 on_frame: Callable[[Frame], Any] | None = None,
                 max_frame_bytes: int = 256 * 1024 * 1024):
        if not argv:
            raise TargetError("the target command is empty")
        self.argv = list(argv)
        self.cwd = str(cwd)
        self.env = env
        self.transcript = transcript
        self.on_frame = on_frame
        self.on_eof: Callable[[], Any] | None = None
        self.max_frame_bytes = max_frame_bytes
        self.stderr = StderrBuffer()
        self.process: Process | None = None
        self.returncode: int | None = None
        self.eof = anyio.Event()
        self.exited = anyio.Event()
        self.stdin_closed = False
        self._reading_held: anyio.Event | None = None  # set when reading stdout goes on (hold_reading)
        self._write_lock = anyio.Lock()
        self.tag = uuid.uuid4().hex

    @property
    def command_line(self) -> str:
        return shlex.join(self.argv)

    async def spawn(self) -> None:
        """Start the process (raises TargetError with a sentence when it cannot)."""
        env = dict(os.environ)
        if self.env:
            env.update(self.env)
        env[TAG_VAR] = self.tag
        if _STOPPING:  # unwind as for Ctrl-C: no driver may take this for the target's failure
            raise KeyboardInterrupt(_STOPPING[0])
        try:
            self.process = await anyio.open_process(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                cwd=self.cwd, env=env, start_new_session=True)
        except FileNotFoundError:
            raise TargetError(f"could not start the target: command not found: {self.argv[0]!r} "
                              f"(command line: {self.command_line})") from None
        except PermissionError:
            raise TargetError(f"could not start the target: {self.argv[0]!r} is not executable") from None
        except OSError as e:
            raise TargetError(f"could not start the target ({self.command_line}): {e}") from None
        _LIVE[self.tag] = self.process.pid
        self.transcript.event(EV_START, argv=self.argv, cwd=self.cwd, pid=self.process.pid, **_started_when())

    def adopt(self, transcript: Transcript) -> None:
        """Take over a process started ahead of its connection (the fuzzer's spare, started while the
        previous example ran): its frames go to ``transcript`` from now on, which records the start."""
        self.transcript = transcript
        transcript.event(EV_START, argv=self.argv, cwd=self.cwd, pid=self.process.pid if self.process else None,
                         prestarted=True, **_started_when())

    def pause(self, settle: float = 1.0) -> bool:
        """Stop the process group (SIGSTOP) of a process started ahead, until ``unpause``: it keeps what it
        holds and takes nothing more meanwhile (False: it is gone). A signal takes effect when the process
        next runs: this returns once the process is seen stopped (where /proc tells; at most ``settle`` s)."""
        if not self._signal_group(signal.SIGSTOP):
            return False
        deadline = time.monotonic() + settle
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{self.process.pid}/stat", encoding="ascii", errors="replace") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):  # no /proc, or the process is gone
                break
            if state in ("T", "t", "Z", "X"):
                break
            time.sleep(0.0005)
        return True

    def unpause(self) -> None:
        self._signal_group(signal.SIGCONT)

    async def discard(self) -> None:
        """Kill a process started ahead that is not used (its output was never read)."""
        self._signal_group(signal.SIGKILL)
        kill_tagged(self.tag)
        _LIVE.pop(self.tag, None)
        if self.process is not None:
            with anyio.move_on_after(5):
                await self.process.aclose()

    @property
    def running(self) -> bool:
        """Started and not seen to exit (for a process whose readers have not started yet)."""
        return self.process is not None and self.process.returncode is None

    def start_readers(self, task_group) -> None:
        task_group.start_soon(self._read_stdout)
        task_group.start_soon(self._read_stderr)
        task_group.start_soon(self._wait_exit)

    async def _read_stdout(self) -> None:
        assert self.process and self.process.stdout
        await self._read_frames(self.process.stdout)

    async def _read_frames(self, stream) -> None:
        """Frame what the target writes on ``stream`` until it ends (EOF, or the stream fails)."""
        lines = LineSplitter(self._emit, self.max_frame_bytes)
        try:
            while True:
                if self._reading_held is not None:  # a slow client (hold_reading): the target's writes wait
                    await self._reading_held.wait()
                try:
                    chunk = await stream.receive(READ_CHUNK)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    break
                if self._reading_held is not None:  # taken from the pipe as the hold began: read after it
                    await self._reading_held.wait()
                lines.feed(chunk)
            rest = lines.end()
            if rest is not None:
                self._emit(rest, unterminated=True)
        finally:
            self.transcript.event(EV_EOF)
            self.eof.set()
            if self.on_eof is not None:
                self.on_eof()

    def _emit(self, line: bytes, oversize: bool = False, *, unterminated: bool = False) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]  # CRLF framing is tolerated on read; the raw bytes say so
        frame = self.transcript.received(line)
        if oversize:
            frame.problem = f"line longer than {self.max_frame_bytes} bytes"
        elif unterminated and frame.problem is None:
            frame.detail = {"unterminated": True}
        if self.on_frame is not None:
            self.on_frame(frame)

    async def _read_stderr(self) -> None:
        assert self.process and self.process.stderr
        while True:
            try:
                self.stderr.add(await self.process.stderr.receive(READ_CHUNK))
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return

    async def _wait_exit(self) -> None:
        assert self.process
        rc = await self.process.wait()
        self.returncode = rc
        self.transcript.event(EV_EXIT, returncode=rc, status=describe_exit(rc))
        self.exited.set()

    async def write(self, raw: bytes, msg: Any = None) -> Frame:
        """Write one framed line; record it (also when the write fails)."""
        if self.process is None or self.process.stdin is None:
            raise TargetClosed("the target is not running")
        async with self._write_lock:
            frame = self.transcript.sent(raw, msg)
            if self.stdin_closed or self.exited.is_set():
                raise TargetClosed(f"the target is gone ({describe_exit(self.returncode)}); "
                                   f"could not write frame #{frame.seq}")
            try:
                await self.process.stdin.send(raw + b"\n")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError,
                    ConnectionResetError) as e:
                # a broken pipe usually means the target died: say how, once its exit is seen
                with anyio.move_on_after(1.0):
                    await self.exited.wait()
                if self.exited.is_set():
                    raise TargetClosed(f"the target is gone ({describe_exit(self.returncode)}); "
                                       f"could not write frame #{frame.seq}") from None
                raise TargetClosed(f"the target closed its stdin; could not write frame #{frame.seq} ({e!r})") from None
            return frame

    async def hold_reading(self, seconds: float) -> None:
        """Read nothing from the target's stdout for ``seconds`` (a slow client; what it writes waits in the
        pipe, a writer that fills the pipe blocks), then read on."""
        held = self._reading_held = anyio.Event()
        try:
            await anyio.sleep(seconds)  # the pause is the behaviour under test, not a wait for an event
        finally:
            self._reading_held = None
            held.set()

    async def close_stdin(self) -> None:
        if self.process and self.process.stdin and not self.stdin_closed:
            self.stdin_closed = True
            try:
                await self.process.stdin.aclose()
            except (OSError, anyio.BrokenResourceError):
                pass
            self.transcript.event(EV_STDIN_CLOSED)

    def _signal_group(self, sig: int) -> bool:
        if self.process is None:
            return False
        try:
            os.killpg(self.process.pid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    async def shutdown(self, grace: float = 2.0) -> str:
        """The ladder: close stdin, wait; SIGTERM the group, wait; SIGKILL the group.

        Returns how the target ended, for the report. Processes the target left behind in its
        group are killed too, even when the target itself exited cleanly.
        """
        if self.process is None:
            return "never started"
        if _STOPPING:  # the run is interrupted: the sweep has killed the group; waiting could only hang
            self._signal_group(signal.SIGKILL)
            kill_tagged(self.tag)
            _LIVE.pop(self.tag, None)
            # its pipes are closed in this loop (briefly: it was killed): left open, the subprocess transport is
            # collected after the loop has closed and prints "Exception ignored ... Event loop is closed"
            with anyio.move_on_after(1.0):
                await self.process.aclose()
            return f"killed with SIGKILL ({_STOPPING[0]})"
        await self.close_stdin()
        how = "exited after stdin was closed"
        with anyio.move_on_after(grace):
            await self.exited.wait()
        if not self.exited.is_set():
            self._signal_group(signal.SIGTERM)
            how = "terminated with SIGTERM (it did not exit when stdin was closed)"
            with anyio.move_on_after(grace):
                await self.exited.wait()
        if not self.exited.is_set():
            self._signal_group(signal.SIGKILL)
            how = "killed with SIGKILL (it ignored stdin EOF and SIGTERM)"
            with anyio.move_on_after(grace):
                await self.exited.wait()
        # grandchildren that stayed in the group, and those that left it
        self._signal_group(signal.SIGKILL)
        kill_tagged(self.tag)
        _LIVE.pop(self.tag, None)
        with anyio.move_on_after(grace):
            await self.eof.wait()
        for stream in (self.process.stdout, self.process.stderr):
            try:
                if stream is not None:
                    await stream.aclose()
            except Exception:  # pragma: no cover - closing a dead pipe
                pass
        # let the event loop run the callbacks the closed pipes left (the subprocess transport's
        # connection lost): a loop closed before them leaves a transport that, collected later, calls
        # into the closed loop
        await anyio.sleep(0.01)
        return how
