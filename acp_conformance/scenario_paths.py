"""Which scenario files a run collects: the bundled suite (unless --acp-no-bundled) and the user's own,
given with --acp-scenarios PATH (a file or a folder, repeatable) or as pytest's positional arguments.

Every file is loaded once here, before any test runs, so that a path that does not exist, a folder
without scenario files or a file that is not a valid scenario file is a usage error at once (one
sentence, exit 2), and a positional argument is never silently ignored.
"""

from __future__ import annotations

from pathlib import Path

SUFFIXES = (".yaml", ".yml")


class ScenarioPathError(ValueError):
    """A scenario path the user gave cannot be run; the message is one sentence."""


def _files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file())


def user_paths(given: list[str], positional: list[str]) -> list[str]:
    """The user's scenario paths, options first; a positional argument that is not a scenario file or a
    folder is an error (pytest would otherwise collect it beside, or instead of, the suite)."""
    out = list(given)
    for arg in positional:
        p = Path(arg.split("::")[0])
        if p.is_dir() or p.suffix in SUFFIXES:
            out.append(str(p))
        else:
            raise ScenarioPathError(
                f"{arg!r} is not a scenario file: with --agent-cmd or --client-cmd pytest runs the bundled suite "
                "and the scenario files you give (as .yaml arguments or with --acp-scenarios PATH)")
    return out


def scenario_roots(paths: list[str], bundled: Path | None, side: str, known_rules: set[str]) -> list[Path]:
    """The folders and files to collect, each checked now; ``bundled``: the suite's folder, or None."""
    from .scenarios.model import ScenarioFileError, load_file
    if side == "client":
        from .scenarios.client_model import load_client_file as load_file  # the scripted-agent format
    roots: list[Path] = [bundled] if bundled is not None else []
    for raw in paths:
        p = Path(raw).resolve()
        if not p.exists():
            raise ScenarioPathError(f"--acp-scenarios: {raw!r} does not exist")
        if p.is_file() and p.suffix not in SUFFIXES:
            raise ScenarioPathError(f"--acp-scenarios: {raw!r} is not a scenario file (.yaml or .yml)")
        files = [p] if p.is_file() else _files(p)
        if not files:
            raise ScenarioPathError(f"--acp-scenarios: the folder {raw!r} holds no scenario file (.yaml or .yml)")
        for f in files:
            try:
                load_file(f, known_rules)
            except ScenarioFileError as e:
                raise ScenarioPathError(" ".join(str(e).split())) from None
        if any(_under(p, r) for r in roots):
            continue  # already collected (a file of the bundled suite, or given twice)
        roots = [r for r in roots if not _under(r, p)] + [p]
    if not roots:
        raise ScenarioPathError("--acp-no-bundled leaves nothing to run: give your scenario files with "
                                "--acp-scenarios PATH")
    return roots


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def collects(file_path: Path, roots: list[Path]) -> bool:
    return file_path.suffix in SUFFIXES and any(_under(file_path.resolve(), r) for r in roots)
