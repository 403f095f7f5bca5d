"""What the scripted model answers: a script per kind of prompt, chosen by the words of the user's prompt.

A script is a list of steps, one per model request of a turn: the first request of a turn gets step 0,
the request that carries the result of the step-0 tool call gets step 1, and so on. The scripts are
API-neutral; ``anthropic.py`` and ``openai.py`` render a step in their wire format and map the tool kinds
(``read``, ``edit``, ``shell``, ``plan``) to the tools the agent offered in its request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    kind: str  # "text" | "stream" (text until the client goes away) | "tool" | "error"
    text: str = ""
    tool: str = ""  # for kind "tool": "read" | "edit" | "shell" | "background" (a long command left running) | "plan"
    status: int = 0  # for kind "error": the HTTP status


SCRIPTS: dict[str, tuple[Step, ...]] = {
    "plain": (Step("text", "Hello from the scripted model."),),
    "long": (Step("stream"),),  # LONG_CHUNKS chunks, STREAM_INTERVAL apart
    "tool": (Step("tool", tool="read"), Step("text", "I read the file.")),
    "permission": (Step("tool", tool="edit"), Step("text", "The edit is done.")),
    "terminal": (Step("tool", tool="shell"), Step("text", "The command ran.")),
    "cancellable": (Step("tool", tool="background"), Step("text", "The command runs in the background.")),
    "plan": (Step("tool", tool="plan"), Step("text", "The plan is set.")),
    "error": (Step("error", "The scripted model failed this request on purpose.", status=400),),
}
# (word in the prompt, script), first match wins. They match the suite's default prompts
# (--acp-long-prompt "Count slowly ...", --acp-permission-prompt "... ask my permission first." ...):
# with --acp-model those need no option of their own.
KEYWORDS: tuple[tuple[str, str], ...] = (
    ("permission", "permission"),
    ("cancellable", "cancellable"),
    ("slowly", "long"),
    ("terminal", "terminal"),
    ("plan", "plan"),
    ("fail", "error"),
    ("tool", "tool"),
)
# the answer to a request that offers no tools (a title, a summary): never a long or failing turn
SIDE_REPLY = "Conformance session"
# a long reply: numbered chunks, like the reference agent's long turn (about 6 s: longer than
# --acp-work-threshold, shorter than --acp-timeout, so a scenario that waits for its end sees it), unless
# the client goes away first (a cancelled turn closes its request)
LONG_CHUNKS = 60
STREAM_INTERVAL = 0.1  # seconds between the chunks of a long reply


def choose(prompt: str) -> str:
    """The script for a user prompt."""
    text = prompt.lower()
    return next((script for word, script in KEYWORDS if word in text), "plain")


def step(script: str, done: int) -> Step:
    """Step ``done`` of ``script``; past its end, a short closing text (the turn must end)."""
    steps = SCRIPTS[script]
    return steps[done] if done < len(steps) else Step("text", "Done.")


def working_directory(body_text: str) -> str | None:
    """The agent's working directory as its request tells the model (Claude Code's environment section,
    Codex's <environment_context>), for absolute paths in tool calls (the v1 and v2 pages ask for them)."""
    m = (re.search(r'Primary working directory: (/[^\s\\"]+)', body_text) or re.search(r"<cwd>(/[^<]+)</cwd>", body_text)
         or re.search(r'Working directory: (/[^\s\\"]+)', body_text)  # older Claude Code (claude-code-acp 0.16), opencode
         or re.search(r'currently working in the directory: (/[^\s\\"]+)', body_text))  # qwen-code
    return m.group(1) if m else None


def tool_path(cwd: str | None, name: str) -> str:
    return f"{cwd.rstrip('/')}/{name}" if cwd else name


EDIT_FILE = "acp-model-edit.txt"
READ_FILE = "notes.txt"
SHELL_COMMAND = "echo acp-model"
BACKGROUND_COMMAND = "sleep 30"
PLAN_ITEMS = ("Read the code", "Make the change", "Run the tests")
