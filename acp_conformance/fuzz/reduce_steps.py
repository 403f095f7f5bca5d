"""The steps of a scenario being shrunk (``reduce.py``) as a graph: what each step refers to and needs,
which steps a removal takes along, the slice around the failing rule, and the steps that close a
candidate cleanly for a correct target."""

from __future__ import annotations

import re
from typing import Any

_REF = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


def _refs(value: Any) -> set[str]:
    if isinstance(value, str):
        return set(_REF.findall(value))
    if isinstance(value, list):
        return set().union(*(_refs(v) for v in value)) if value else set()
    if isinstance(value, dict):
        return set().union(*(_refs(v) for v in value.values())) if value else set()
    return set()


def _save(step: dict[str, Any]) -> str | None:
    (_, args), = step.items()
    return args.get("save") if isinstance(args, dict) else None


def _session_of(step: dict[str, Any]) -> Any:
    """The session a cancel, an await of idle or a session/prompt request is about (as written: $r2...)."""
    (kind, args), = step.items()
    if not isinstance(args, dict):
        return None
    if kind == "cancel":
        return args.get("session")
    if kind == "await":
        return args.get("idle")
    if kind == "request" and args.get("method") == "session/prompt" and isinstance(args.get("params"), dict):
        return args["params"].get("sessionId")
    return None


def _idles_owed(steps: list[dict[str, Any]]) -> bool:
    """Every ``await: idle`` of a session follows a prompt of it not yet matched by an earlier await.

    A candidate that drops a prompt but keeps the await of its idle waits for an idle nobody owes: it
    "fails" against any agent, the correct one too, so it is no counterexample.
    """
    owed: dict[Any, int] = {}
    for step in steps:
        (kind, args), = step.items()
        sid = _session_of(step)
        if kind == "request" and sid is not None:
            owed[repr(sid)] = owed.get(repr(sid), 0) + 1
        elif kind == "prompt" and isinstance(args, dict):
            owed[repr(args.get("session"))] = owed.get(repr(args.get("session")), 0) + 1
        elif kind == "await" and sid is not None:
            if owed.get(repr(sid), 0) <= 0:
                return False
            owed[repr(sid)] -= 1
    return True


def _deps(steps: list[dict[str, Any]]) -> list[set[int]]:
    """For each step, the earlier steps it needs: those that saved what it refers to ($r2 ...), and, for
    a cancel or an await of idle, the last prompt sent to that session (without it there is no turn to
    cancel, and no idle to wait for)."""
    by_save: dict[str, int] = {}
    last_prompt: dict[Any, int] = {}
    out: list[set[int]] = []
    for j, st in enumerate(steps):
        d = {by_save[n] for n in _refs(st) if n in by_save}
        (kind, _), = st.items()
        sid = _session_of(st)
        if kind in ("cancel", "await") and sid is not None and sid in last_prompt:
            d.add(last_prompt[sid])
        out.append(d)
        if kind == "request" and sid is not None:
            last_prompt[sid] = j
        if _save(st):
            by_save[_save(st)] = j
    return out


def _dependents(steps: list[dict[str, Any]], removed: set[int]) -> set[int]:
    """``removed`` and every later step that needs one of them (directly or not)."""
    deps = _deps(steps)
    out = set(removed)
    for j in range(len(steps)):
        if j not in out and deps[j] & out:
            out.add(j)
    return out


def _needs(steps: list[dict[str, Any]], keep: set[int]) -> set[int]:
    """``keep`` and every earlier step they need (directly or not)."""
    deps = _deps(steps)
    out = set(keep)
    todo = list(keep)
    while todo:
        for i in deps[todo.pop()]:
            if i not in out:
                out.add(i)
                todo.append(i)
    return out


def _slice(steps: list[dict[str, Any]], lo: int, failing: int, wide: bool) -> set[int]:
    """The steps to keep: the first, the failing rule's (lo..failing) and what they need (and, wide,
    every step on the sessions they touch), and the cancels and awaits after them on the sessions kept
    (which end the turns left running, so that no scenario stops in the middle of a turn)."""
    keep = _needs(steps, {0, *range(lo, failing + 1)})
    if wide:
        names = {_save(steps[i]) for i in keep} - {None}
        keep = _needs(steps, keep | {j for j, st in enumerate(steps[:lo]) if _refs(st) & names})
    deps = _deps(steps)
    for j in range(failing + 1, len(steps)):
        (kind, _), = steps[j].items()
        if kind in ("cancel", "await") and deps[j] and deps[j] <= keep:
            keep.add(j)
    return keep


def closing_steps(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The steps that end a scenario cleanly for a correct target: a cancel for each session whose last
    prompt is not followed by an await of its idle, then a short ``settle`` (until the target has been
    quiet for 0.3 s), in which the cancelled turns end and held prompts are answered. A counterexample
    stops where the target under test failed (it died, or rejected a prompt); a correct target runs on,
    and without these it would be cut off in the middle of a turn (PROMPT-012, ERR-004) when the
    scenario ends. (A cancel for a turn that has already ended is ignored by a correct agent.)"""
    open_turns: dict[Any, None] = {}
    unanswered: dict[str, None] = {}
    for st in steps:
        (kind, args), = st.items()
        if not isinstance(args, dict):
            continue
        sid = _session_of(st)
        if kind == "request" and args.get("method") == "session/prompt":
            open_turns[sid] = None
        elif kind == "await" and "idle" in args:
            open_turns.pop(sid, None)
        if kind == "request" and args.get("wait") is False and args.get("save"):
            unanswered[args["save"]] = None
        elif kind == "await" and isinstance(args.get("response"), str):
            unanswered.pop(args["response"].lstrip("$"), None)
    if not open_turns and not unanswered:
        return []
    return [{"cancel": {"session": sid}} for sid in open_turns] + [{"settle": {"seconds": 0.3}}]


def _prompt_blocks(step: dict[str, Any]) -> list | None:
    """The content blocks of a session/prompt request step (the list itself), else None."""
    args = step.get("request")
    if not isinstance(args, dict) or args.get("method") != "session/prompt":
        return None
    params = args.get("params")
    blocks = params.get("prompt") if isinstance(params, dict) else None
    return blocks if isinstance(blocks, list) else None
