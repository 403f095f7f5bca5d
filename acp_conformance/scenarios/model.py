"""The scenario file format: loading and checking, with errors that name the file and the step.

A scenario file (YAML) holds one scenario or a list under ``scenarios:``. See docs/scenarios.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

# libyaml's parser where PyYAML was built with it: ten times faster, and collection is mostly parsing
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# step name -> keys it accepts (the value may also be a scalar, see SCALAR_KEY)
STEPS: dict[str, set[str]] = {
    "initialize": {"protocolVersion", "capabilities", "info", "params", "save", "expect", "wait"},
    "new_session": {"cwd", "params", "save", "expect", "mkdir"},
    "prompt": {"session", "text", "blocks", "key", "save", "wait", "expect"},
    "await": {"response", "idle", "after", "update", "permission", "timeout", "optional", "save"},
    "cancel": {"session", "if_working"},  # if_working: only while the session still owes an idle
    "resume": {"session", "replay", "cwd", "params", "save", "expect", "wait"},
    "close": {"session", "save", "wait"},
    "request": {"method", "params", "id", "save", "wait", "expect"},
    # session/list, then every nextCursor it gives until none, one already followed (a loop) or `max` pages
    "list_pages": {"params", "max"},
    "notify": {"method", "params"},
    "raw": {"line", "b64", "answer"},  # b64: bytes that are not UTF-8 (written as decoded, one line); answer: an id
    "restart": {"env"},
    "settle": {"seconds"},
    "note": {"text"},
    "set_config": {"session", "pick", "to", "save"},
    "answer_held": {"session", "with"},  # answer the permission requests held so far (a late answer)
    # fault steps (docs/faults.md; named after the faults of the upstream draft "ACP Remote Conformance and Fault
    # Testing"): each only makes the situation happen, the monitors judge it; run with --acp-faults
    "drop_response": {"request"},  # the response to $p was read, but the suite acts as if it never came
    "kill": {"grace"},  # the agent dies at once (SIGKILL of its process group): a crash mid-turn
    "duplicate": {"request", "timeout"},  # the exact line of $p written again (a duplicated message)
    "delay": {"until", "then"},  # a message held back until a barrier (an idle, a response), then sent
    "half_close": {"wait"},  # close the agent's stdin while its turn runs; wait (bounded) for its exit
    "pause_reading": {"seconds"},  # stop reading the agent's stdout for a while (a slow client), bounded
}
# the fault steps: a scenario holding one is a fault scenario, run only with --acp-faults
FAULT_STEPS = frozenset({"drop_response", "kill", "duplicate", "delay", "half_close", "pause_reading"})
# keys every step takes: `if_saved: t` runs the step only when an earlier step saved $t (an optional
# await that timed out saves nothing, and what depends on it is then left out, not a harness error)
COMMON_KEYS = {"if_saved"}
# a step may be written `cancel: s` instead of `cancel: {session: s}`
SCALAR_KEY = {"cancel": "session", "close": "session", "raw": "line", "settle": "seconds",
              "note": "text", "await": "response", "drop_response": "request", "duplicate": "request",
              "pause_reading": "seconds"}


class ScenarioFileError(Exception):
    """A scenario file cannot be read or is malformed; the message names the file and the place."""


@dataclass
class Step:
    kind: str
    args: dict[str, Any]
    index: int

    def describe(self) -> str:
        return f"step {self.index + 1} ({self.kind})"


@dataclass
class Scenario:
    name: str
    path: Path
    rules: list[str]
    steps: list[Step]
    description: str = ""
    requires: list[str] = field(default_factory=list)  # capability paths, e.g. session.delete
    options: dict[str, Any] = field(default_factory=dict)  # monitor option overrides
    side: str = "agent"

    @property
    def faulty(self) -> bool:
        """It injects a fault (docs/faults.md): it runs only with --acp-faults."""
        return any(s.kind in FAULT_STEPS for s in self.steps)

    @property
    def long_turn(self) -> bool:
        """It prompts with --acp-long-prompt: the agent works for seconds (a hint for the order of running ahead)."""
        return any(s.kind == "prompt" and "${opt.long}" in str(s.args.get("text", "")) for s in self.steps)


def _fail(path: Path, where: str, problem: str) -> ScenarioFileError:
    return ScenarioFileError(f"{path}: {where}: {problem}")


def _step(path: Path, name: str, i: int, raw: Any) -> Step:
    where = f"scenario {name!r}, step {i + 1}"
    if isinstance(raw, str) and raw in STEPS:
        return Step(raw, {}, i)
    if not isinstance(raw, dict) or len(raw) != 1:
        raise _fail(path, where, "a step is a mapping with exactly one key, the step name "
                                 f"(one of {', '.join(sorted(STEPS))})")
    kind, args = next(iter(raw.items()))
    if kind not in STEPS:
        raise _fail(path, where, f"unknown step {kind!r} (known: {', '.join(sorted(STEPS))})")
    if args is None:
        args = {}
    elif not isinstance(args, dict):
        if kind not in SCALAR_KEY:
            raise _fail(path, where, f"{kind} takes a mapping of {', '.join(sorted(STEPS[kind]))}")
        args = {SCALAR_KEY[kind]: args}
    unknown = set(args) - STEPS[kind] - COMMON_KEYS
    if unknown:
        raise _fail(path, where, f"{kind} does not take {', '.join(sorted(unknown))} "
                                 f"(it takes {', '.join(sorted(STEPS[kind]))})")
    args = dict(args)
    if kind == "delay":  # the held message is a step of its own, sent once the barrier is reached
        until = args.get("until")
        if not isinstance(until, dict) or len(until) != 1 or not set(until) <= {"idle", "response"}:
            raise _fail(path, where, "delay needs until: {idle: $s} or until: {response: $p} (the barrier)")
        if args.get("then") is None:
            raise _fail(path, where, "delay needs then: the step whose message is held back until the barrier")
        args["then"] = _step(path, name, i, args["then"])
        if args["then"].kind in FAULT_STEPS or args["then"].kind in ("restart", "settle", "await"):
            raise _fail(path, where, "delay's then is a step that sends a message (cancel, prompt, request, notify...)")
    return Step(kind, args, i)


CASE_KEYS = {"caseId", "profile", "requiresCapabilities", "actors", "steps", "invariants", "allowedOutcomes",
             "description", "options"}


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def _from_case(path: Path, n: int, case: dict[str, Any]) -> dict[str, Any]:
    """A case of the upstream draft "ACP Remote Conformance and Fault Testing" (caseId, profile,
    requiresCapabilities, actors, steps, invariants, allowedOutcomes) as a scenario: docs/faults.md has the
    mapping. Its steps are written in this format's step vocabulary; its invariants are rule IDs."""
    cid = case.get("caseId")
    if not isinstance(cid, str) or not cid.strip():
        raise _fail(path, f"case {n + 1}", "caseId is a non-empty string")
    where = f"case {cid!r}"
    unknown = set(case) - CASE_KEYS
    if unknown:
        raise _fail(path, where, f"unknown keys {', '.join(sorted(unknown))} (a case has {', '.join(sorted(CASE_KEYS))})")
    req = case.get("requiresCapabilities", [])
    if not _strings(req) or not all(r.startswith("capabilities.") and len(r) > 13 for r in req):
        raise _fail(path, where, "requiresCapabilities is a list of capability paths, each starting with capabilities.")
    actors = case.get("actors", [])
    if not _strings(actors) or len(set(actors)) != len(actors):
        raise _fail(path, where, "actors is a list of distinct names")
    if len(actors) > 2:
        raise _fail(path, where, f"{len(actors)} actors: a stdio connection has one client and one agent")
    outcomes = case.get("allowedOutcomes", [])
    if not _strings(outcomes):
        raise _fail(path, where, "allowedOutcomes is a list of strings (the outcomes the protocol allows)")
    profile = case.get("profile")
    if profile is not None and not (isinstance(profile, str) and profile):
        raise _fail(path, where, "profile is a non-empty string")
    said = [str(case.get("description") or "").strip()]
    if profile:
        said.append(f"Profile {profile}.")
    if outcomes:
        said.append("Allowed outcomes: " + "; ".join(outcomes) + ".")
    scenario = {"name": cid, "description": " ".join(x for x in said if x), "rules": case.get("invariants") or [],
                "requires": [r[len("capabilities."):] for r in req], "steps": case.get("steps")}
    if "options" in case:
        scenario["options"] = case["options"]
    return scenario


def load_file(path: str | Path, known_rules: set[str] | None = None, side: str = "agent") -> list[Scenario]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ScenarioFileError(f"{p}: cannot read the scenario file: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ScenarioFileError(f"{p}: the scenario file is not UTF-8 text ({e.reason})") from None
    try:
        doc = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        raise ScenarioFileError(f"{p}: not valid YAML: {e}") from None
    if isinstance(doc, dict) and "scenarios" in doc:
        items = doc["scenarios"]
    else:
        items = [doc]
    if not isinstance(items, list) or not items:
        raise ScenarioFileError(f"{p}: expected a scenario mapping or a list under 'scenarios:'")
    out = []
    seen = set()
    for n, item in enumerate(items):
        if isinstance(item, dict) and "caseId" in item:  # a case in the draft's field names (docs/faults.md)
            item = _from_case(p, n, item)
        if not isinstance(item, dict):
            raise _fail(p, f"scenario {n + 1}", "a scenario is a mapping with name, rules and steps")
        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            raise _fail(p, f"scenario {n + 1}", "missing 'name' (a non-empty string)")
        if name in seen:
            raise _fail(p, f"scenario {name!r}", "the name is used twice in this file")
        seen.add(name)
        unknown = set(item) - {"name", "description", "rules", "requires", "steps", "options", "side"}
        if unknown:
            raise _fail(p, f"scenario {name!r}", f"unknown keys {', '.join(sorted(unknown))}")
        rules = item.get("rules") or []
        if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
            raise _fail(p, f"scenario {name!r}", "'rules' is a list of rule IDs")
        if known_rules is not None:
            bad = [r for r in rules if r not in known_rules]
            if bad:
                raise _fail(p, f"scenario {name!r}", f"unknown rule IDs {', '.join(bad)}")
        steps = item.get("steps")
        if not isinstance(steps, list) or not steps:
            raise _fail(p, f"scenario {name!r}", "'steps' is a non-empty list")
        requires = item.get("requires") or []
        if not isinstance(requires, list):
            raise _fail(p, f"scenario {name!r}", "'requires' is a list of capability paths")
        options = item.get("options") or {}
        if not isinstance(options, dict):
            raise _fail(p, f"scenario {name!r}", "'options' is a mapping")
        out.append(Scenario(name, p, list(rules), [_step(p, name, i, s) for i, s in enumerate(steps)],
                            str(item.get("description") or ""), [str(r) for r in requires], options,
                            str(item.get("side") or side)))
    return out
