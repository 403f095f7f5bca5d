"""What a run takes and gives: the target, the settings, the result, and the ways a scenario stops early."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..wire.transcript import Transcript

SUITE_INFO = {"name": "acp-conformance", "title": "ACP Conformance Suite", "version": "0.1.0"}


@dataclass
class TargetSpec:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)  # a client's extra arguments (where {args} stands)


@dataclass
class RunSettings:
    timeout: float = 10.0  # per awaited response or update
    startup_timeout: float = 15.0  # for the first response of each connection
    test_timeout: float = 60.0
    shutdown_grace: float = 2.0
    prompts: dict[str, str] = field(default_factory=dict)  # simple, long, tool, permission
    permission_answer: str = "allow"  # allow | reject | cancelled | hold
    validate_sent: Callable[[dict[str, Any]], str | None] | None = None  # harness self-check
    auth_method: str | None = None  # --acp-auth-method: auth/login with it after initialize
    protocol: int = 2  # the ACP version the suite speaks: 1 (v1 words: clientCapabilities, mcpServers) or 2


class ScenarioAbort(Exception):
    """The scenario cannot go on; the message says why, for the report."""


AUTH_REQUIRED = -32000  # ACP's auth_required error code (schema: ErrorCode)


class AuthBlocked(ScenarioAbort):
    """The agent requires authentication the suite cannot give: session/new answered auth_required (-32000)
    without --acp-auth-method, or the login with it failed. The message names the methods it offers."""


class ScenarioSkip(Exception):
    """The scenario does not apply to this target (a capability it needs is not advertised)."""


# updates that only the target decides to send: a scenario that waited for one in vain was not exercised
TARGET_UPDATE_KINDS = frozenset({"tool_call_update", "tool_call_content_chunk", "terminal_update",
                                 "terminal_output_chunk", "plan_update", "usage_update", "available_commands_update",
                                 "session_info_update", "config_option_update", "subagent_update", "notice",
                                 "compaction_update"})


class HarnessError(Exception):
    """The suite itself did something wrong (for example it built an invalid frame)."""


@dataclass(repr=False)  # the default repr would render the whole transcript (see Frame.__repr__)
class RunResult:
    transcript: Transcript
    error: str | None = None  # why the steps could not be completed (None: completed)
    # "timeout": an awaited answer or update never came; "target-never": it was one only the target decides to send;
    # "test-timeout": the whole test outlasted --acp-test-timeout
    error_kind: str | None = None
    skipped: str | None = None
    harness_error: str | None = None
    stderr: list[str] = field(default_factory=list)  # one text per connection
    endings: list[str] = field(default_factory=list)  # how each connection ended
    agent_init: dict[str, Any] | None = None  # the initialize result, if any
    auth_blocked: str | None = None  # the scenario stopped at authentication (also in error); see AuthBlocked
    target_gone: bool = False  # the steps stopped because the target would not start or went away (run_ahead.py)

    def __repr__(self) -> str:
        return f"RunResult({self.transcript!r}, error={self.error!r}, skipped={self.skipped!r})"
