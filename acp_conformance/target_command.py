"""The target's command line as the user gave it (--agent-cmd / --client-cmd), checked once for
the pytest plugin and the console script alike."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path


class CommandError(ValueError):
    """The command line cannot start anything; the message is one sentence for the user."""


def target_argv(side: str, cmd: str) -> list[str]:
    try:
        argv = shlex.split(cmd)
    except ValueError as e:
        raise CommandError(f"--{side}-cmd cannot be parsed as a command line: {e}") from None
    if not argv or not argv[0].strip():
        raise CommandError(f"--{side}-cmd is empty: give the command that starts your {side}")
    if shutil.which(argv[0]) is None and not Path(argv[0]).exists():
        raise CommandError(f"--{side}-cmd: {argv[0]!r} is not a command on PATH nor a file")
    return argv


ARGS_PLACEHOLDER = "{args}"


def with_extra_args(argv: list[str], extra: list[str]) -> list[str]:
    """The command with the extra arguments (--acp-client-arg, a scenario's ``args``) where ``{args}``
    stands as a word of its own, or at the end without one: a client whose own flags must come before
    something (``-- {agent}``) marks the place."""
    if ARGS_PLACEHOLDER in argv:
        i = argv.index(ARGS_PLACEHOLDER)
        return [*argv[:i], *extra, *argv[i + 1:]]
    return [*argv, *extra]
