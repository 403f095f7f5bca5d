"""Step handlers that wait on the target: `await` (a response, an idle, a permission request, an update) and
`settle`. A wait for something only the target decides to send ends when the turn ends without it."""

from __future__ import annotations

from typing import Any

import anyio

from ..wire.peer import Pending, TargetGone, WaitTimeout
from ..wire.transcript import EV_NOTE, Frame, members
from .frame_match import _is_permission_request, _is_update, _turn_ended
from .idle_owed import _IdleOwed
from .model import Step
from .run_types import TARGET_UPDATE_KINDS, HarnessError

SETTLE_BOUND = 2  # a settle of q seconds ends by 2q: it was 5q, which cost the bundled suite 4.8 s on an agent that streams


class AwaitSteps:
    """Mixed into Runner."""

    async def _wait_idle(self, sid: Any, since: int, what: str, timeout: Any = None) -> Frame:
        """The idle after ``since``; when the session owes none (see _IdleOwed), the wait ends at once, or as soon
        as the last thing it owed is settled without one (a prompt answered with an error), with WaitTimeout."""
        frames = self.transcript.frames
        wanted = lambda f: _is_update(f, sid, "state_update", "idle")  # noqa: E731
        if not _IdleOwed(sid, frames).owed() and not any(f.seq > since and wanted(f) for f in frames[since:]):
            self._no_idle_owed(what, since)
        owed = _IdleOwed(sid, frames)  # read along with the wait, frame by frame: what was owed at each
        f = await self.peer.wait_for(lambda f: wanted(f) or not owed.owed(f.seq), self._timeout(timeout), what,
                                     since=since)
        if not wanted(f):  # owed() read f's whole frame: a batch array may hold the idle after f
            f = next((one for one in members(frames[f.seq]) if wanted(one)), None)
            if f is None:
                self._no_idle_owed(what, since)
        return f

    def _no_idle_owed(self, what: str, since: int) -> None:
        why = (f"{what} will not come: none is owed (every turn of the session had ended and no prompt was "
               f"pending after frame #{since})")
        raise WaitTimeout(why)

    async def _step_await(self, a: dict[str, Any], step: Step) -> None:
        try:
            if "response" in a:
                p = a["response"]
                if not isinstance(p, Pending):
                    raise HarnessError(f"{step.describe()}: 'response' must name a saved request")
                await self._await(p, a.get("timeout"))
            elif "idle" in a:
                await self._await_idle(a, step)
            elif "permission" in a:  # a session/request_permission from the target for this session
                await self._await_permission(a)
            elif "update" in a:
                await self._await_update(a)
            else:
                raise HarnessError(f"{step.describe()}: await needs response, idle or update")
        except WaitTimeout as e:
            if a.get("optional"):
                self.transcript.event(EV_NOTE, text=f"optional wait ended: {e}")
                return
            u = a.get("update") or {}
            if u.get("kind") in TARGET_UPDATE_KINDS or u.get("state") == "requires_action" or "permission" in a:
                self.result.error_kind = "target-never"  # only the target decides to do this: its right
            raise

    async def _await_idle(self, a: dict[str, Any], step: Step) -> None:
        sid = a["idle"]
        since = self.last_sent.get(sid, 0)
        if "after" in a:  # the idle ending the turn of a prompt held behind another turn
            p = a["after"]
            if not isinstance(p, Pending):
                raise HarnessError(f"{step.describe()}: 'after' must name a saved request")
            await self._await(p, a.get("timeout"))
            since = p.response.seq if p.response is not None else p.frame.seq
        await self._wait_idle(sid, since, f"an idle state_update for {sid}", a.get("timeout"))

    async def _await_permission(self, a: dict[str, Any]) -> None:
        sid = a["permission"]
        since = self.last_sent.get(sid, 0)
        ended = _turn_ended(sid, since)
        what = f"a session/request_permission for {sid}"
        f = await self.peer.wait_for(lambda f: _is_permission_request(f, sid) or ended(f),
                                     self._timeout(a.get("timeout")), what, since=since)
        if not _is_permission_request(f, sid):
            self.transcript.event(EV_NOTE, text=f"the turn ended (idle at t={f.t:.2f}) without {what}")
            raise WaitTimeout(f"{what} did not arrive: the turn ended without it (idle at t={f.t:.2f})")
        self._save(a, f.msg)

    async def _await_update(self, a: dict[str, Any]) -> None:
        u = a["update"] or {}
        sid = u.get("session")
        kind = u.get("kind")
        state = u.get("state")
        what = (f"a {kind or 'session'} update"
                + (f" ({' or '.join(state) if isinstance(state, list) else state})" if state else "")
                + f" for {sid}")
        since = self.last_sent.get(sid, 0)
        wanted = lambda f: _is_update(f, sid, kind, state)  # noqa: E731
        if kind in TARGET_UPDATE_KINDS or state == "requires_action":
            # only the target decides to send it: once its turn has ended without it, it will not come,
            # so the wait ends there instead of at the timeout
            ended = _turn_ended(sid, since)
            f = await self.peer.wait_for(lambda f: wanted(f) or ended(f), self._timeout(a.get("timeout")),
                                         what, since=since)
            if not wanted(f):
                self.transcript.event(EV_NOTE, text=f"the turn ended (idle at t={f.t:.2f}) without {what}")
                raise WaitTimeout(f"{what} did not arrive: the turn ended without it (idle at t={f.t:.2f})")
        else:
            f = await self.peer.wait_for(wanted, self._timeout(a.get("timeout")), what, since=since)
        self._save(a, f.msg if isinstance(f, Frame) else None)  # $u.params.update.toolCallId ...

    async def _step_settle(self, a: dict[str, Any], step: Step) -> None:
        """Wait until the target has been quiet for ``seconds``, and at most twice that in all. A target still
        sending then is busy (a turn streaming its work, a duplicate turn running): waiting longer for it to stop
        would wait for what may not come, and what it sends meanwhile is recorded and judged all the same. A note
        in the transcript says where the suite waited and for how long (a reader of the transcript sees why
        nothing was sent; the benchmark's floor replays the same window: bench/floor.py)."""
        quiet = float(a.get("seconds", 0.3))
        t0 = anyio.current_time()
        how = f"the target was not quiet for {quiet:g} s within {quiet * SETTLE_BOUND:g} s"
        with anyio.move_on_after(quiet * SETTLE_BOUND):
            while True:
                mark = len(self.transcript.frames)
                try:
                    await self.peer.wait_for(lambda f: True, quiet, "any frame", since=mark)
                except WaitTimeout:
                    how = f"the target was quiet for {quiet:g} s"
                    break
                except TargetGone:
                    how = "the target was gone"
                    break
        waited = anyio.current_time() - t0
        self.transcript.event(EV_NOTE, text=f"settle: waited {waited:.2f} s; {how}", settle=quiet,
                              waited=round(waited, 3))
