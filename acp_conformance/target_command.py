"""The target's command line as the user gave it (--agent-cmd / --client-cmd), checked once for
the pytest plugin and the console script alike."""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path


class CommandError(ValueError):
    """The command line cannot start anything; the message is one sentence for the user."""


def target_argv(side: str, cmd: str, anchor: Path | None = None) -> list[str]:
    """``anchor``: the folder the user ran from, when the target will run elsewhere (each test in a fresh
    folder): the words that name a file or folder there become absolute (see ``anchored``)."""
    try:
        argv = shlex.split(cmd)
    except ValueError as e:
        raise CommandError(f"--{side}-cmd cannot be parsed as a command line: {e}") from None
    if not argv or not argv[0].strip():
        raise CommandError(f"--{side}-cmd is empty: give the command that starts your {side}")
    if shutil.which(argv[0]) is None and not Path(argv[0]).exists():
        raise CommandError(f"--{side}-cmd: {argv[0]!r} is not a command on PATH nor a file")
    return anchored(argv, anchor) if anchor is not None else argv


def anchored(argv: list[str], anchor: Path) -> list[str]:
    """``node dist/agent.js`` typed in a project folder names ``dist/agent.js`` there, but each test runs
    the target in a fresh folder of its own: a word that names an existing file or folder relative to
    ``anchor`` becomes absolute. Only words that look like paths (with a ``/``, a file suffix, or ``.``/``..``)
    and are no options (``-x``, ``--flag=...`` stay as given), so that a bare word such as ``serve`` keeps its
    meaning even where a file of that name exists."""
    out = []
    for word in argv:
        path = Path(word)
        looks_like_path = "/" in word or bool(path.suffix) or word in (".", "..")
        if word and not word.startswith("-") and not path.is_absolute() and looks_like_path \
                and (anchor / path).exists():
            word = os.path.abspath(anchor / path)  # not resolve(): a venv's python is a symlink that must stay one
        out.append(word)
    return out


ARGS_PLACEHOLDER = "{args}"


def with_extra_args(argv: list[str], extra: list[str]) -> list[str]:
    """The command with the extra arguments (--acp-client-arg, a scenario's ``args``) where ``{args}``
    stands as a word of its own, or at the end without one: a client whose own flags must come before
    something (``-- {agent}``) marks the place."""
    if ARGS_PLACEHOLDER in argv:
        i = argv.index(ARGS_PLACEHOLDER)
        return [*argv[:i], *extra, *argv[i + 1:]]
    return [*argv, *extra]
