"""Fault steps (docs/faults.md): a response the suite acts as if it never got, an agent killed mid-turn, a
duplicated message, a message held back to a barrier, a half-closed stdin, a client that stops reading for a
while. Each only makes its situation happen and marks it in the transcript (a note with ``fault``); the
monitors judge what the agent does, as in every other scenario and in the fuzzer's runs.

The names follow the fault vocabulary of the upstream draft "ACP Remote Conformance and Fault Testing"
(docs/rfds/remote/conformance.mdx in the ACP spec repository): drop a response, restart losing the process
(durable state is the agent's), duplicate a complete message, delay a message until a named barrier,
half-close one direction, pause one consumer."""

from __future__ import annotations

import signal
from typing import Any

import anyio

from ..rules.reading import id_key
from ..wire.peer import Pending
from ..wire.transcript import EV_NOTE
from .model import Step
from .run_types import HarnessError

KILL_WAIT = 5.0  # seconds to see a SIGKILLed group exit (the kernel's work: at once in practice)
HALF_CLOSE_WAIT = 6.0  # TRANSPORT-011 allows 5 s after stdin is closed: one more, so that a hang is seen
MAX_PAUSE = 10.0  # the longest a scenario may stop reading: a slow client, never a stalled test


class FaultSteps:
    """Mixed into Runner."""

    def _fault(self, name: str, text: str, **detail: Any) -> None:
        self.transcript.event(EV_NOTE, text=f"fault {name}: {text}", fault=name, **detail)

    def _pending(self, a: dict[str, Any], step: Step) -> Pending:
        p = a.get("request")
        if not isinstance(p, Pending):
            raise HarnessError(f"{step.describe()}: {step.kind} needs request: a saved request ($p)")
        return p

    async def _step_drop_response(self, a: dict[str, Any], step: Step) -> None:
        """The response to ``request`` is lost: the suite reads it (it is in the transcript, for the monitors) but
        forgets it, so no later step can use its result; the scenario then retries as a client that never got it."""
        p = self._pending(a, step)
        await self._await(p)
        for name, value in list(self.vars.items()):
            if value is p:
                self.vars[name] = None  # `if_saved: name` now leaves the steps that would use it out
        self._fault("drop-response", f"the response to {p.method} #{p.frame.seq} is treated as lost",
                    request=p.frame.seq)

    async def _step_kill(self, a: dict[str, Any], step: Step) -> None:
        """The agent crashes: SIGKILL to its whole process group, at once, whatever it is doing. A ``restart``
        starts the next process; what survives is what the agent had made durable."""
        t = self.transport
        self._fault("kill", "SIGKILL to the agent's process group")
        if t is None or not t._signal_group(signal.SIGKILL):
            return
        with anyio.move_on_after(float(a.get("grace", KILL_WAIT))):
            await t.exited.wait()

    async def _step_duplicate(self, a: dict[str, Any], step: Step) -> None:
        """The exact line of ``request`` is written once more, with its id, and the step waits for the answer to
        the copy. Sent after the original was answered (as a network duplicate arriving late does), it is a new
        request that reuses an id no longer pending, which ACP allows; its answer is judged like any other."""
        p = self._pending(a, step)
        self._fault("duplicate", f"{p.method} #{p.frame.seq} written again with the same id", request=p.frame.seq)
        mark = len(self.transcript.frames)
        f = await self.peer.send_raw(p.frame.raw)
        want = id_key(p.id)
        await self.peer.wait_for(lambda x: isinstance(x.msg, dict) and "method" not in x.msg
                                 and id_key(x.msg.get("id")) == want, self._timeout(a.get("timeout")),
                                 f"the answer to the duplicate of {p.method} #{p.frame.seq} (frame #{f.seq})",
                                 since=mark)

    async def _step_delay(self, a: dict[str, Any], step: Step) -> None:
        """The message of step ``then`` is held back until the barrier ``until`` ({idle: $s}: the next idle of
        the session; {response: $p}: the response to a saved request), then sent: e.g. a cancel the client wrote
        while the turn ran, arriving only just after its idle."""
        then = a["then"]
        if isinstance(then, dict) and len(then) == 1:  # a step built in memory (the fuzzer's), not loaded
            (kind, args), = then.items()
            then = Step(kind, args if isinstance(args, dict) else {"session": args}, step.index)
        if not isinstance(then, Step):
            raise HarnessError(f"{step.describe()}: delay's then is one step")
        self._fault("delay", f"{then.kind} held back until {', '.join(f'{k}' for k in a['until'])}")
        await self._step_await(dict(a["until"]), step)
        self._fault("delay", f"{then.kind} released after the barrier")
        await self.step(then)

    async def _step_half_close(self, a: dict[str, Any], step: Step) -> None:
        """The client closes the agent's stdin (its half of the connection) and keeps reading: the agent may end
        its turn and exit; the step waits for its exit, at most ``wait`` seconds (TRANSPORT-011 judges it)."""
        t = self.transport
        self._fault("half-close", "the agent's stdin is closed; its stdout is still read")
        if t is None:
            return
        await t.close_stdin()
        with anyio.move_on_after(min(float(a.get("wait", HALF_CLOSE_WAIT)), 30.0)):
            await t.exited.wait()
        self._fault("half-close", "the agent exited" if t.exited.is_set() else "the agent had not exited "
                    f"{float(a.get('wait', HALF_CLOSE_WAIT)):g} s after its stdin was closed")

    async def _step_pause_reading(self, a: dict[str, Any], step: Step) -> None:
        """A slow client: the suite stops reading the agent's stdout for ``seconds`` (at most MAX_PAUSE), so what
        the agent writes waits in the pipe (and a writer that fills it blocks), then reads on. Frames read after
        the pause carry the time they were read."""
        seconds = float(a.get("seconds", 2.0))
        if not 0 < seconds <= MAX_PAUSE:
            raise HarnessError(f"{step.describe()}: pause_reading takes 0 < seconds <= {MAX_PAUSE:g}")
        self._fault("pause-reading", f"the suite stops reading the agent's stdout for {seconds:g} s")
        if self.transport is not None:
            await self.transport.hold_reading(seconds)
        self._fault("pause-reading", "the suite reads the agent's stdout again")
