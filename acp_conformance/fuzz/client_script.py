"""What the scripted agent says to a client under fuzzing: hypothesis strategies and client scenarios.

An example is a script of the agent (a client scenario, the format of ``scenarios/client/``),
drawn whole before the client starts: the initialize and session/new results (the runner's plain
ones or generated, valid, protocolVersion 2), and for each of the first ``turns`` prompts a turn:
``running``, then up to ``step_count`` moves in a random order, with the prompt response and the
``user_message`` echo anywhere among them, the answers still owed, and the ``idle`` that ends it.

The moves: streamed message chunks; valid ``session/update`` variants (some with unknown fields
beside the valid ones); unknown variants, ``_``-prefixed or not; a tool call created and patched;
``session/request_permission``, ``elicitation/create`` and unknown-method requests, awaited or left
pending, with ids of every legal shape (among them the client's own pending id); one of them again
with its ``_meta`` changed (the answer must not change); unknown notifications,
``elicitation/complete``, ``$/cancel_request`` for our own or for unknown requests. Updates may
also come before the session/new response. Every value comes from the schema strategies
(``strategies.py``); nothing here knows any particular client.
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from ..rules.monitors._client import UPDATE_KINDS
from ..scenarios.client_model import _scenario
from ..scenarios.model import Scenario
from .run import SCENARIO_NAME
from .config import has_var
from .strategies import MAX_TEXT, SchemaStrategies, free_objects, json_values, request_ids

AUTO_ID_BASE = 1000  # our own request ids: 1001, 1002, ... (unique in an example, like an agent's counter)
SHIFT = 10 ** 6  # drawn integer ids below this are moved above it, so that they never meet AUTO ids

_ident = st.text(alphabet=string.ascii_lowercase + string.digits + "_", min_size=1, max_size=12)
_word = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=8)
_field_names = st.text(alphabet=string.ascii_letters + "_", min_size=1, max_size=10)


def _shift_id(i: Any) -> Any:
    return i + SHIFT if isinstance(i, int) and 0 <= i < SHIFT else i


# an id for one of our requests: None for our own counter (AUTO_ID_BASE + n), a drawn one of any
# legal shape, or the id of the client's own pending prompt (the other direction's id space: it
# must not confuse the client)
_id_choice = st.none() | request_ids.map(_shift_id) | st.just("$id")


def _no_var(s: st.SearchStrategy) -> st.SearchStrategy:
    """Generated values that the runner would read as a variable ($x, ${x}) are left out."""
    return s.filter(lambda v: not has_var(v))


@dataclass
class Turn:
    moves: list[tuple]
    respond_at: int  # the prompt response goes before moves[respond_at] (len(moves): after them all)
    echo_at: int  # the same for the user_message echo
    result: dict[str, Any]  # more fields of the prompt result (messageId is the runner's)
    stop: Any  # the stopReason of the idle that ends the turn


@dataclass
class Plan:
    initialize: dict[str, Any]  # more fields of the initialize result
    new_session: dict[str, Any]  # more fields of the session/new result
    turns: list[Turn]
    early_updates: list[dict[str, Any]]  # sent before the session/new response


class AgentMoves:
    """Strategies for what the scripted agent says (no knowledge of any particular client's bugs)."""

    def __init__(self, gen: SchemaStrategies, step_count: int, turns: int):
        self.gen = gen
        self.step_count = max(0, step_count)
        self.turns = turns
        known_kinds = set(UPDATE_KINDS) | _discriminator_values(gen, "SessionUpdate", "sessionUpdate")
        known_methods = set(gen.schema.methods)
        self.unknown_kinds = _ident.map(lambda s: "_" + s) | _ident.filter(lambda s: s not in known_kinds)
        self.unknown_methods = _ident.map(lambda s: "_" + s) | st.builds(
            lambda a, b: f"{a}/{b}", _word, _word).filter(lambda m: m not in known_methods)
        self.updates = gen.definition("SessionUpdate").filter(
            lambda u: not (u.get("sessionUpdate") == "state_update" and u.get("state") == "idle"))
        extra_fields = st.dictionaries(_field_names, json_values, min_size=1, max_size=3)
        wait = st.booleans()
        kinds: dict[str, st.SearchStrategy] = {
            "message": st.tuples(st.just("message"), st.text(max_size=MAX_TEXT)),
            "update": st.tuples(st.just("update"), self.updates, st.none() | extra_fields),
            "unknown_update": st.tuples(st.just("unknown_update"), self.unknown_kinds,
                                        st.dictionaries(_field_names, json_values, max_size=3)),
            # a tool call's life as an agent reports it: one toolCallId created and patched a few times
            "tool_call": st.tuples(st.just("tool_call"), st.lists(gen.definition("ToolCallUpdate"), min_size=1,
                                                                  max_size=4)),
            "permission": st.tuples(st.just("request"), st.just("session/request_permission"),
                                    gen.params("session/request_permission"), wait, _id_choice),
            "elicitation": st.tuples(st.just("request"), st.just("elicitation/create"),
                                     gen.params("elicitation/create"), wait, _id_choice),
            "unknown_request": st.tuples(st.just("request"), self.unknown_methods, st.none() | free_objects, wait,
                                         _id_choice),
            "notify": st.tuples(st.just("notify"), st.one_of(
                st.tuples(self.unknown_methods, st.none() | free_objects),
                st.tuples(st.just("elicitation/complete"), gen.params("elicitation/complete")),
                st.tuples(st.just("$/cancel_request"), st.builds(lambda i: {"requestId": i}, request_ids)))),
            "cancel_request": st.tuples(st.just("cancel_request"), st.integers(0, max(self.step_count, 1))),
            # an earlier request of the turn again, its _meta omitted, null, {} or other keys: the
            # answer must not change (EXT-003)
            "repeat": st.tuples(st.just("repeat"), st.integers(0, max(self.step_count, 1)),
                                st.sampled_from(["omit", "null"]) | free_objects),
        }
        self.move = _no_var(st.one_of(list(kinds.values())))

        # each answer is the runner's plain one or a generated one: half of the examples each, and a
        # shrink that does not need the generated answer drops it whole in one step
        self.init_result = st.just({}) | _no_var(gen.result("initialize").map(
            lambda r: {**{k: v for k, v in r.items() if k != "error"}, "protocolVersion": 2}))
        self.new_result = st.just({}) | _no_var(gen.result("session/new").map(
            lambda r: {k: v for k, v in r.items() if k != "sessionId"}))
        # updates of the new session before its session/new response (the agent's lifecycle freedom)
        self.early_updates = _no_var(st.lists(gen.definition("SessionUpdate"), max_size=3))
        self.prompt_result = st.just({}) | _no_var(gen.result("session/prompt").map(
            lambda r: {k: v for k, v in r.items() if k != "messageId"}))
        self.stop = st.just("end_turn") | _no_var(gen.definition("StopReason"))

    def turn(self) -> st.SearchStrategy:
        @st.composite
        def build(draw) -> Turn:
            # the length first (0..step_count, long turns as often as short ones: a flat list alone
            # stays short), then the moves; hypothesis shrinks the two together
            lo = draw(st.integers(0, self.step_count), label="turn length")
            moves = draw(st.lists(self.move, min_size=lo, max_size=max(lo, self.step_count)), label="moves")
            return Turn(moves, draw(st.integers(0, len(moves)), label="respond at"),
                        draw(st.integers(0, len(moves)), label="echo at"), draw(self.prompt_result, label="result"),
                        draw(self.stop, label="stopReason"))
        return build()

    def plan(self) -> st.SearchStrategy:
        return st.builds(Plan, self.init_result, self.new_result, st.lists(self.turn(), min_size=self.turns,
                                                                             max_size=self.turns),
                         self.early_updates)


def _discriminator_values(gen: SchemaStrategies, name: str, key: str) -> set[str]:
    out = set()
    for branch in gen.defs[name].get("anyOf", []):
        c = ((branch.get("properties") or {}).get(key) or {}).get("const")
        if isinstance(c, str):
            out.add(c)
    return out


# -- plans as client scenarios ---------------------------------------------------------------------

class _Ids:
    """Request ids and saved names of one example: unique across its turns."""

    def __init__(self):
        self.used: set[tuple[str, Any]] = set()
        self.n = 0
        self.saved = 0

    def take(self, choice: Any, client_id_free: bool) -> Any:
        if choice == "$id":
            if client_id_free:
                return "$id"
            choice = None
        if choice is not None and (type(choice).__name__, choice) not in self.used:
            self.used.add((type(choice).__name__, choice))
            return choice
        while True:
            self.n += 1
            rid = AUTO_ID_BASE + self.n
            if ("int", rid) not in self.used:
                self.used.add(("int", rid))
                return rid

    def name(self) -> str:
        self.saved += 1
        return f"q{self.saved}"


def turn_actions(turn: Turn, ids: _Ids) -> list[Any]:
    """One prompt turn as client-scenario actions (raw, as written to the file)."""
    out: list[Any] = [{"state": "running"}]
    saved: list[str] = []
    sent: list[tuple[str, Any]] = []  # (method, params) of the turn's requests
    owed: list[str] = []  # requests not awaited: their answers are awaited before the idle
    client_id_free = True
    for i in range(len(turn.moves) + 1):
        if i == turn.echo_at:
            out.append("user_message")
        if i == turn.respond_at:
            out.append({"respond": {"result": turn.result}} if turn.result else "respond")
        if i == len(turn.moves):
            break
        mv = turn.moves[i]
        kind = mv[0]
        if kind == "message":
            out.append({"message": mv[1]})
        elif kind == "update":
            upd = {**mv[2], **mv[1]} if mv[2] else mv[1]  # unknown fields beside the valid ones
            out.append({"update": {"update": upd}})
        elif kind == "unknown_update":
            out.append({"update": {"update": {**mv[2], "sessionUpdate": mv[1]}}})
        elif kind == "tool_call":
            tid = mv[1][0]["toolCallId"]
            out += [{"update": {"update": {**patch, "sessionUpdate": "tool_call_update", "toolCallId": tid}}}
                    for patch in mv[1]]
        elif kind == "request":
            _, method, params, wait, choice = mv
            if isinstance(params, dict) and "sessionId" in params or method == "session/request_permission":
                params = {**params, "sessionId": "$sid"}
            rid = ids.take(choice, client_id_free and not owed)
            client_id_free = client_id_free and rid != "$id"
            name = ids.name()
            req: dict[str, Any] = {"method": method}
            if params is not None:
                req["params"] = params
            req.update(id=rid, save=name)
            if not wait:
                req["wait"] = False
                owed.append(name)
            saved.append(name)
            sent.append((method, params))
            out.append({"request": req})
        elif kind == "repeat" and sent:
            method, params = sent[mv[1] % len(sent)]
            if isinstance(params, dict):
                params = {k: v for k, v in params.items() if k != "_meta"}
                if mv[2] != "omit":
                    params["_meta"] = None if mv[2] == "null" else mv[2]
            name = ids.name()
            req = {"method": method}
            if params is not None:
                req["params"] = params
            req.update(id=ids.take(None, False), save=name)
            saved.append(name)
            out.append({"request": req})
        elif kind == "notify":
            method, params = mv[1]
            n: dict[str, Any] = {"method": method}
            if params is not None:
                n["params"] = params
            out.append({"notify": n})
        elif kind == "cancel_request" and saved:
            out.append({"cancel_request": "$" + saved[mv[1] % len(saved)]})
    out += [{"await_answer": "$" + name} for name in owed]
    out.append({"state": {"state": "idle", "stopReason": turn.stop}})
    return out


def plan_document(plan: Plan, *, env: dict[str, str] | None = None, quiet: float = 1.0) -> dict[str, Any]:
    """The script as a client scenario mapping (the file's ``scenarios[0]`` without name, description
    and rules); ``env`` is the client's environment, ``quiet`` the silence that ends a run."""
    ids = _Ids()
    when: dict[str, Any] = {}
    if plan.new_session or plan.early_updates:
        when["session/new"] = [{"update": {"update": u}} for u in plan.early_updates] + \
            [{"respond": {"result": plan.new_session}} if plan.new_session else "respond"]
    for n, turn in enumerate(plan.turns, 1):
        when[f"session/prompt#{n}"] = turn_actions(turn, ids)
    doc: dict[str, Any] = {"side": "client"}
    if env:
        doc["env"] = dict(env)
    doc["options"] = {"quiet": quiet}
    doc["initialize"] = plan.initialize
    doc["when"] = when
    return doc


def as_scenario(doc: dict[str, Any], known_rules: set[str], path: Path) -> Scenario:
    """The script read by the client scenario loader itself: the run does what the file will say."""
    return _scenario(path, {"name": SCENARIO_NAME, **doc}, known_rules)


def steps_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The script as a flat list of {when, action} (FuzzResult.step_log)."""
    out = [{"when": "initialize", "action": {"respond": {"result": doc.get("initialize", {})}}}]
    for key, actions in (doc.get("when") or {}).items():
        out += [{"when": key, "action": a} for a in actions]
    return out


def count_actions(doc: dict[str, Any]) -> int:
    """How many actions the script's handlers hold (its size as a reader sees it)."""
    return sum(len(a) for a in (doc.get("when") or {}).values())


def script_size(doc: dict[str, Any]) -> tuple[int, int]:
    """The order in which failing scripts are kept: fewer actions, then fewer bytes."""
    return count_actions(doc), len(json.dumps(doc))
