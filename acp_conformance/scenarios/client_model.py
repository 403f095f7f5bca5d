"""The client scenario format: a scripted agent, loaded and checked (see docs/scenarios.md, client side).

A client drives the conversation, so a client scenario does not list steps: it says what the
scripted agent answers to each method the client sends (``on``), as a list of actions run when
that request (or notification) arrives, and what the agent advertises in its initialize result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .model import Scenario, ScenarioFileError, Step

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# action -> the keys it accepts (a scalar value is allowed where SCALAR names the key)
ACTIONS: dict[str, set[str]] = {
    "respond": {"result", "error"},  # answer the triggering request (default: the method's usual result)
    "user_message": {"content"},  # the user_message echo of the prompt (messageId of the answer)
    "state": {"state", "stopReason", "error"},  # a state_update; `state: idle` ends a turn with end_turn
    "update": {"update", "session"},  # any session/update (the update object as is)
    "message": {"text"},  # an agent_message_chunk
    "request": {"method", "params", "id", "wait", "timeout", "save"},  # a request to the client
    "notify": {"method", "params"},
    "cancel_request": {"request"},  # $/cancel_request for a saved request of ours (or any id)
    "await_answer": {"request", "timeout"},  # wait (bounded) for the client's answer to a saved request
    "await_cancel": {"timeout"},  # wait (bounded) for the client's session/cancel of this session
    "delay": {"seconds"},
    "raw": {"line"},
    "exit": {"status"},  # the agent dies: the connection closes at once, mid-turn
    "note": {"text"},
}
SCALAR = {"delay": "seconds", "state": "state", "message": "text", "raw": "line", "note": "text",
          "await_cancel": "timeout", "exit": "status", "cancel_request": "request", "await_answer": "request"}
TOP_KEYS = {"name", "description", "rules", "requires", "options", "initialize", "when", "env", "args", "side"}


def _action(path: Path, where: str, raw: Any) -> Step:
    if isinstance(raw, str) and raw in ACTIONS:
        return Step(raw, {}, 0)
    if not isinstance(raw, dict) or len(raw) != 1:
        raise ScenarioFileError(f"{path}: {where}: an action is a mapping with one key, the action name "
                                f"(one of {', '.join(sorted(ACTIONS))})")
    kind, args = next(iter(raw.items()))
    if kind not in ACTIONS:
        raise ScenarioFileError(f"{path}: {where}: unknown action {kind!r} (known: {', '.join(sorted(ACTIONS))})")
    if args is None:
        args = {}
    elif not isinstance(args, dict) or kind == "update" and "update" not in args:
        if kind == "update":
            args = {"update": args}
        elif kind in SCALAR:
            args = {SCALAR[kind]: args}
        else:
            raise ScenarioFileError(f"{path}: {where}: {kind} takes a mapping")
    unknown = set(args) - ACTIONS[kind]
    if unknown:
        raise ScenarioFileError(f"{path}: {where}: {kind} does not take {', '.join(sorted(unknown))} "
                                f"(it takes {', '.join(sorted(ACTIONS[kind]))})")
    return Step(kind, args, 0)


def _scenario(path: Path, raw: Any, known_rules: set[str]) -> Scenario:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise ScenarioFileError(f"{path}: each scenario is a mapping with a string name")
    name = raw["name"]
    extra = set(raw) - TOP_KEYS
    if extra:
        raise ScenarioFileError(f"{path}: scenario {name!r}: unknown keys {', '.join(sorted(extra))}")
    rules = raw.get("rules") or []
    bad = [r for r in rules if r not in known_rules]
    if bad:
        raise ScenarioFileError(f"{path}: scenario {name!r}: unknown rule IDs {', '.join(bad)}")
    handlers: dict[str, list[Step]] = {}
    for method, actions in (raw.get("when") or {}).items():
        if isinstance(actions, dict) and set(actions) <= {"result", "error"}:
            actions = [{"respond": actions}]  # `session/new: {result: ...}` is a one-action handler
        if not isinstance(actions, list):
            raise ScenarioFileError(f"{path}: scenario {name!r}: when.{method} is a list of actions")
        steps = []
        for i, a in enumerate(actions):
            st = _action(path, f"scenario {name!r}, when.{method}, action {i + 1}", a)
            st.index = i
            steps.append(st)
        handlers[method] = steps
    init = raw.get("initialize") or {}
    if not isinstance(init, dict):
        raise ScenarioFileError(f"{path}: scenario {name!r}: initialize is a mapping (result fields or error)")
    env = raw.get("env") or {}
    if not isinstance(env, dict):
        raise ScenarioFileError(f"{path}: scenario {name!r}: env is a mapping of strings")
    args = raw.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in args):
        raise ScenarioFileError(f"{path}: scenario {name!r}: args is a list of strings (the client's extra arguments)")
    options = dict(raw.get("options") or {})
    scn = Scenario(name=name, path=path, rules=list(rules), steps=[], description=raw.get("description", ""),
                   requires=list(raw.get("requires") or []), options=options, side="client")
    scn.handlers = handlers  # type: ignore[attr-defined]
    scn.initialize = init  # type: ignore[attr-defined]
    scn.env = {str(k): str(v) for k, v in env.items()}  # type: ignore[attr-defined]
    scn.args = [str(a) for a in args]  # type: ignore[attr-defined]
    return scn


def load_client_file(path: Path, known_rules: set[str]) -> list[Scenario]:
    try:
        data = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=_Loader)
    except (OSError, yaml.YAMLError) as e:
        raise ScenarioFileError(f"{path}: cannot read the scenario file: {e}") from None
    items = data.get("scenarios") if isinstance(data, dict) and "scenarios" in data else [data]
    if not isinstance(items, list):
        raise ScenarioFileError(f"{path}: `scenarios` is a list")
    out = [_scenario(Path(path), x, known_rules) for x in items]
    names = [s.name for s in out]
    if len(set(names)) != len(names):
        raise ScenarioFileError(f"{path}: scenario names repeat")
    return out
