"""The run pipeline both runners share: their steps within the test timeout, in a task group of their own, the
connection shut down whatever happens, and no exception lost (it becomes the result's harness error)."""

from __future__ import annotations

from typing import Any, Awaitable, Callable

import anyio

from ..wire.transcript import EV_TIMEOUT
from .run_types import RunResult


async def run_bounded(runner: Any, body: Callable[[Any], Awaitable[None]], who: str,
                      on_error: Callable[[Exception], bool], disconnect: Callable[[], Awaitable[None]]) -> RunResult:
    """Run ``body(task_group)`` for ``runner`` (which has settings, transcript, result and _tg) within
    --acp-test-timeout; ``on_error`` records an exception it knows in the result (True) or lets it go on (False).
    ``who`` names what did not finish in the timeout's sentence."""
    result, settings = runner.result, runner.settings
    try:
        async with anyio.create_task_group() as tg:
            runner._tg = tg
            try:
                with anyio.move_on_after(settings.test_timeout) as scope:
                    await body(tg)
                if scope.cancelled_caught:
                    runner.transcript.event(EV_TIMEOUT, what="test", seconds=settings.test_timeout)
                    result.error = (f"{who} did not finish within the test timeout "
                                    f"({settings.test_timeout:g} s, --acp-test-timeout)")
                    result.error_kind = result.error_kind or "test-timeout"
            except Exception as e:
                if not on_error(e):
                    raise
            finally:
                with anyio.CancelScope(shield=True):
                    await disconnect()
                tg.cancel_scope.cancel()
    except Exception as e:  # pragma: no cover - report, never lose the run
        if result.error is None and result.harness_error is None:
            result.harness_error = f"internal error in the suite: {e!r}"
    return result


async def shut_down(runner: Any) -> bool:
    """Shut down ``runner``'s target process (if any: False when none), keeping how it ended and its stderr."""
    if runner.transport is None:
        return False
    how = await runner.transport.shutdown(runner.settings.shutdown_grace)
    runner.result.endings.append(how)
    runner.result.stderr.append(runner.transport.stderr.text())
    return True
