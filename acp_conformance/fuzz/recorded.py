"""One fuzz example as a scenario: its steps, the options they need, and how it failed (what the
reducer shrinks and what is written out)."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from ..rules.findings import Finding
from ..rules.reading import id_key
from ..wire.transcript import RECEIVED, SENT


@dataclass
class Recorded:
    """One example as a scenario: its steps (raw step dicts) and the options they need."""

    steps: list[dict[str, Any]]
    options: dict[str, Any]
    failure: str
    rules: list[str]
    frames: list[str] = field(default_factory=list)  # the last frames, as text
    findings: list[Finding] = field(default_factory=list)  # the blocking failures it was failed for
    transcript: list[Any] = field(default_factory=list)  # every frame of the example
    stderr: str = ""  # the tail of what the target wrote on stderr (known once its process ended)
    broken: str | None = None  # how the target broke: died | timeout | stray (None: a rule failed)
    answer_steps: list[int] = field(default_factory=list)  # options.permission_answers[i] is for this step
    fail_index: int = 0  # the steps before it led to the failure; the steps from it on wind down
    fail_start: int = 0  # the first step of the rule that failed (steps fail_start..fail_index-1)
    step_frames: list[int] = field(default_factory=list)  # the transcript's length when each step began
    rule_starts: list[int] = field(default_factory=list)  # the first step of each rule of the example

    def failing_rule(self) -> tuple[int, int]:
        """(first, last) step of the rule that failed: the rule of the step during which the first
        blocking finding's offending frame came (a failure judged at the end of a connection points
        back to it), or of the last step when the target broke. An offending answer counts from the
        step that sent its request: when an answer comes depends on the machine's load, and the
        steps run while it was on its way are not part of the failure."""
        n = len(self.steps)
        failing = min(self.fail_index or n, n) - 1
        if not self.broken and self.findings and self.findings[0].frames and self.step_frames:
            at = self._asked_at(self.findings[0].frames[0])
            failing = min(max(bisect.bisect_right(self.step_frames, at) - 1, 0), n - 1)
        starts = [r for r in self.rule_starts if r <= failing] or [min(self.fail_start, failing)]
        ends = [r - 1 for r in self.rule_starts if r > failing]  # the rule runs on to its end (an await)
        return max(max(starts), 0), max(min(ends + [failing if self.broken else self.fail_index - 1]), failing, 0)

    def _asked_at(self, seq: int) -> int:
        """The seq of the request that the frame ``seq`` answers (``seq`` itself for any other frame)."""
        frames = self.transcript
        i = seq if 0 <= seq < len(frames) and getattr(frames[seq], "seq", None) == seq else \
            next((j for j, f in enumerate(frames) if getattr(f, "seq", None) == seq), None)
        if i is None:
            return seq
        msg = frames[i].msg
        if frames[i].direction != RECEIVED or not isinstance(msg, dict) or "method" in msg or "id" not in msg:
            return seq
        for f in reversed(frames[:i]):
            m = f.msg
            if f.direction == SENT and f.conn == frames[i].conn and isinstance(m, dict) and "method" in m \
                    and "id" in m and id_key(m["id"]) == id_key(msg["id"]):
                return f.seq
        return seq
