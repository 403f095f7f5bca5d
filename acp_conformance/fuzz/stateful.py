"""Stateful fuzzing of an agent: a hypothesis state machine over connections and sessions.

Every rule of ``AgentMachine`` is expressed as scenario steps (the format of ``scenarios/``) and
run by the ordinary scenario runner against ONE live target process (``live.py``), kept open across
steps on an event loop that the fuzzing thread runs one step at a time (a process is started per
example, and again only to resume in a new process). Every frame goes to the example's judge
(``judge.py``: a ``MonitorContext`` with all agent monitors), so every rule of the catalog judges the
generated traffic; a blocking FAIL finding, a timeout or a crash fails the example. The shrunk
example's steps, already in scenario form, are written as a scenario file that ``replay`` reruns
through the same runner and monitors.

This module holds the rules (what traffic is drawn); ``example_steps.py`` runs their steps.
"""

from __future__ import annotations

import functools
import json
import random
from typing import Any, Callable

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from ..scenarios.runner import _select_values
from .base_strategies import sampled
from .config import PERMISSION_ANSWERS, has_var
from .envelope import EnvelopeCase, envelope_cases, informational_note, step_for
from .example_steps import ExampleSteps, Session
from .live import FuzzSession
from .strategies import MAX_ITEMS, Invalid, invalid_request, request_ids

_SESSION_METHODS = ("session/prompt", "session/close", "session/delete", "session/resume", "session/set_config_option")
# what the fast generator's strategies draw: a seed (the payload is made from it)
PAYLOAD_SEEDS = st.integers(0, 2 ** 32 - 1)
_OTHER_METHODS = ("auth/login", "auth/logout", "tool_call/cancel", "terminal/cancel", "session/list")


class MachineDraws:
    """The schema's strategies that the rules draw from, built once per run (``--acp-schema`` chooses
    the schema). Payloads (params, content blocks) come from the fast generator, hypothesis drawing only
    its seed: one choice instead of dozens per payload (an eighth less CPU per step, and more rules fit
    in an example); the counterexample is shrunk as a scenario (reduce.py), not through hypothesis'
    choices. A rule's own arguments draw the seed (``PAYLOAD_SEEDS``, the same for every schema), and
    the rule turns it into a payload of the run's schema (``payload``, ``params``)."""

    def __init__(self, fs: FuzzSession):
        self.schema = fs.gen.schema
        self.fast = fs.fast
        self._params: dict[str, st.SearchStrategy] = {}
        self._blocks: dict[tuple[str, ...] | None, st.SearchStrategy] = {}
        self._any_block = self.fast.strategy("ContentBlock")
        self._block_of_type = self.fast.branches("ContentBlock")  # type -> its blocks (text, image, ...)
        invalid_of = {m: invalid_request(fs.gen, m) for m in (
            "initialize", "session/new", "session/prompt", "session/resume", "session/list",
            "session/set_config_option", "session/close", "session/delete")}
        self.invalid = st.sampled_from(sorted(invalid_of)).flatmap(invalid_of.__getitem__)

    def payload(self, name: str, seed: int) -> Any:
        """The value of definition ``name`` that ``seed`` makes (as ``fast.strategy(name)`` draws it)."""
        return self.fast.definition(name, random.Random(seed))

    def params(self, method: str, seed: int | None) -> Any:
        """The params of ``method`` that ``seed`` makes (None: no seed, no params)."""
        if seed is None:
            return None
        m = self.schema.methods[method]
        return self.payload(m.params, seed) if m.params else {}

    def params_of(self, method: str) -> st.SearchStrategy:
        s = self._params.get(method)
        if s is None:
            m = self.schema.methods[method]
            s = self._params[method] = self.fast.strategy(m.params) if m.params else st.just({})
        return s

    def blocks_of(self, accepts: tuple[str, ...] | None) -> st.SearchStrategy:
        """1..MAX_ITEMS content blocks of the types ``accepts`` (None: of any type)."""
        s = self._blocks.get(accepts)
        if s is None:
            block = self._any_block if accepts is None else st.one_of(
                [self._block_of_type[t] for t in accepts if t in self._block_of_type])
            # the number of blocks is drawn first, uniformly (hypothesis' own list sizes favour one or
            # two items: a prompt of three or more blocks came once in five)
            of_size = {n: st.lists(block, min_size=n, max_size=n) for n in range(1, MAX_ITEMS + 1)}  # made once
            s = self._blocks[accepts] = st.integers(1, MAX_ITEMS).flatmap(of_size.__getitem__)
        return s


def machine_for(fs: FuzzSession) -> Callable[[], AgentMachine]:
    """The factory of the run's examples (what ``run_state_machine_as_test`` calls once per example); with
    --faults, the machine with the fault rules too (fuzz/fault_rules.py: a run without them draws as before)."""
    if fs.config.faults:
        from .fault_rules import FaultAgentMachine
        return functools.partial(FaultAgentMachine, fs, MachineDraws(fs))
    return functools.partial(AgentMachine, fs, MachineDraws(fs))


class AgentMachine(ExampleSteps):
    """Connections and sessions of one agent; every rule is scenario steps, judged by every monitor."""

    def __init__(self, fs: FuzzSession, draws: MachineDraws):
        super().__init__(fs)
        self.draws = draws
        # envelope cases carry ids of their own: none that the example has used
        self.fresh_envelope_cases = envelope_cases(request_ids.filter(self.unused_id))

    def unused_id(self, rid: Any) -> bool:
        return (type(rid).__name__, rid) not in self.used_ids

    # -- rules -------------------------------------------------------------------------------
    # a connection starts with a session: hypothesis enables a random subset of the rules in each
    # example (swarm testing), and an example whose new_session is off would otherwise never
    # reach a session rule at all (half of them did)
    @initialize(params_seed=PAYLOAD_SEEDS, rid=request_ids, session_rid=request_ids)
    def start(self, params_seed, rid, session_rid):
        self.initialize_connection(self.draws.payload("InitializeRequest", params_seed), rid)
        # the next example's process starts once this one has answered: not while it is still
        # starting, when the two could race for what only one may hold (a lock, a port)
        self.fs.refill_spare()
        self.open_session(None, session_rid)

    @precondition(lambda self: len(self.known()) < 4)
    @rule(params_seed=st.none() | PAYLOAD_SEEDS, rid=request_ids)
    def new_session(self, params_seed, rid):
        self.open_session(self.draws.params("session/new", params_seed), rid)

    def open_session(self, generated: Any, rid: Any) -> None:
        params = {"cwd": "$cwd"} if generated is None or has_var(generated) else generated
        save = self.request("session/new", params, rid)
        if self.ok(save):
            result = self.target.var(save).result
            self.sessions[f"${save}.result.sessionId"] = Session(
                cwd=params["cwd"], config=result.get("configOptions") if isinstance(result, dict) else None)

    # prompts are the heart of the protocol: two rules of their own (generated content blocks, and
    # the configured prompts that steer an agent into its behaviours), so that they get two
    # shares of the steps and swarm testing can switch either on alone
    @precondition(lambda self: self.alive(busy=False))
    @rule(data=st.data(), rid=request_ids, anything=st.integers(0, 3).map(lambda i: i == 3),
          keyed=st.booleans())
    def prompt_blocks(self, data, rid, anything, keyed):
        """1..MAX_ITEMS generated blocks: in three prompts of four only kinds the agent advertised
        (so that they get past its validation to its logic), else of any kind (it may reject them).
        Half of them carry an idempotencyKey, which ``prompt_retry`` may send again."""
        ref = self.pick(data, self.alive(busy=False))
        content = data.draw(self.draws.blocks_of(None if anything else self.accepts), label="prompt")
        if has_var(content):
            content = [{"type": "text", "text": ""}]
        # a key only where the run's schema has one (not under --acp-revision base: it would mean nothing there)
        keyed = keyed and "idempotencyKey" in self.draws.schema.defs.get("PromptRequest", {}).get("properties", {})
        self.prompt(ref, content, rid, key=f"fuzz-key-{len(self.steps)}" if keyed else None)

    @precondition(lambda self: any(self.sessions[r].keyed for r in self.alive(busy=False)))
    @rule(data=st.data(), rid=request_ids, after_turn=st.booleans())
    def prompt_retry(self, data, rid, after_turn):
        """The session's last keyed prompt sent again, key and all: a retry of the same submission, after
        its turn ended or while it may still run (the IDEM monitors judge the answer and its effects).
        A retry starts no turn, so nothing waits for an idle of its own."""
        ref = data.draw(sampled([r for r in self.alive(busy=False) if self.sessions[r].keyed]),
                        label="session")
        if after_turn:
            self.idle(ref)
        self.request("session/prompt", dict(self.sessions[ref].keyed), rid)

    @precondition(lambda self: self.alive(busy=False))
    @rule(data=st.data(), rid=request_ids, kind=st.sampled_from(["simple", "tool", "permission"]),
          answer=st.sampled_from(PERMISSION_ANSWERS))
    def prompt_steered(self, data, rid, kind, answer):
        """A configured prompt: a plain answer, a tool call, a permission request (answered as drawn)."""
        ref = self.pick(data, self.alive(busy=False))
        if kind == "permission":
            # its own turn: sent while another turn runs, the agent may hold it (and ask later) or
            # insert it into that work (and never ask); the spec allows both, and the answers
            # scripted in order would then go to other requests than drawn
            self.idle(ref)
            self.options["permission_answers"].append(answer)
            self.answer_steps.append(len(self.steps))  # the prompt's step (for the reducer)
        self.prompt(ref, [{"type": "text", "text": self.fs.config.prompts[kind]}], rid)
        if kind == "permission":
            # answers are taken in the order the agent asks: this turn asks (and ends) before any
            # later step can make the agent ask, in the fuzz run and in its replay alike
            self.idle(ref)

    @precondition(lambda self: self.alive(busy=False))
    @rule(data=st.data(), rid=request_ids, kind=st.sampled_from(["long", "hold"]))
    def prompt_long(self, data, rid, kind):
        """Work that runs until it is cancelled (or for seconds): the session is busy meanwhile."""
        ref = self.pick(data, self.alive(busy=False))
        self.idle(ref)
        text = self.fs.config.prompts["permission" if kind == "hold" else kind]
        if kind == "hold":
            self.options["permission_answers"].append("hold")
            self.answer_steps.append(len(self.steps))
        save = self.request("session/prompt", {"sessionId": ref, "prompt": [{"type": "text", "text": text}]}, rid)
        if self.ok(save):
            self.sessions[ref].busy = True
            self.sessions[ref].since = len(self.judge.ctx.frames)
            if kind == "hold":
                # permission answers are taken in the order the agent asks: let this turn ask (and
                # take its "hold") before any later step can ask, so that the order is the steps'
                # order in the fuzz run and in its replay alike
                # (or until the turn ends: an agent that asks no permission is not waited for in vain)
                self.do({"await": {"update": {"session": ref, "kind": "state_update",
                                              "state": ["requires_action", "idle"]},
                                   "optional": True, "timeout": min(self.fs.config.timeout, 1.0)}})

    @precondition(lambda self: self.alive(busy=True))
    @rule(data=st.data(), rid=request_ids)
    def prompt_while_busy(self, data, rid):
        """A prompt for a session whose work runs: held, answered when the turn ends (or -32800)."""
        ref = data.draw(sampled(self.alive(busy=True)), label="session")
        content = [{"type": "text", "text": self.fs.config.prompts["simple"]}]
        save = self.request("session/prompt", {"sessionId": ref, "prompt": content}, rid, wait=False)
        self.sessions[ref].pending.append(save)

    @precondition(lambda self: self.alive(busy=True))
    @rule(data=st.data())
    def cancel(self, data):
        ref = data.draw(sampled(self.alive(busy=True)), label="session")
        if self.turn_over(ref):  # nothing left to cancel: an idle after a cancel would never come
            self.settle(ref)
            return
        self.do({"cancel": {"session": ref}})
        # optional: the turn may have ended before the cancel (an agent that did not do what the
        # steering prompt does to the reference agent); a missing idle for active work is CANCEL-001's
        self.do({"await": {"idle": ref, "optional": True}})
        self.settle(ref)

    @precondition(lambda self: any(s.pending for s in self.sessions.values()))
    @rule(data=st.data())
    def cancel_request(self, data):
        """$/cancel_request for a held prompt: it is answered -32800 (or was already answered)."""
        ref = data.draw(sampled(sorted(r for r, s in self.sessions.items() if s.pending)), label="s")
        save = self.sessions[ref].pending.pop(0)
        p = self.target.var(save) if self.target is not None else None
        if p is None:
            return
        self.do({"notify": {"method": "$/cancel_request", "params": {"requestId": p.id}}})
        self.do({"await": {"response": "$" + save}})

    def cancel_request_unknown(self, rid):
        """$/cancel_request for an id that is not in flight: ignored, never answered."""
        if (type(rid).__name__, rid) in self.used_ids or has_var(rid):
            return
        self.do({"notify": {"method": "$/cancel_request", "params": {"requestId": rid}}})

    def list_sessions(self, rid, params):
        if has_var(params):
            params = {}
        self.request("session/list", params, rid)

    # closing and deleting share one rule (a session ends one way or the other), so that ending
    # sessions does not take two shares of the steps from the traffic inside them
    @precondition(lambda self: self.known())
    @rule(data=st.data(), rid=request_ids, how=st.sampled_from(["close", "delete"]))
    def end_session(self, data, rid, how):
        # a refused close or delete (an agent without session/delete: -32601) leaves the session,
        # and the work it runs, as they were: the wind-down still cancels that work
        if how == "close" and self.alive():
            ref = self.pick(data, self.alive())
            self.idle(ref)
            if not self.ok(self.request("session/close", {"sessionId": ref}, rid)):
                return
            self.sessions[ref].alive = False
        else:
            ref = self.pick(data, self.known())
            self.idle(ref)
            if not self.ok(self.request("session/delete", {"sessionId": ref}, rid)):
                return
            self.sessions[ref].alive = False
            self.sessions[ref].deleted = True
        self.settle(ref)

    # one resume in sixteen first moves to a new process: a process start costs as much as dozens
    # of steps (with one in eight, restarts took a fifth of a run), so they are kept rare enough
    # that most time goes to traffic
    @precondition(lambda self: any(not s.busy for s in self.sessions.values() if not s.deleted))
    @rule(data=st.data(), rid=request_ids, replay=st.sampled_from(["none", "start", "null"]),
          new_process=st.integers(0, 15).map(lambda i: i == 15))
    def resume(self, data, rid, replay, new_process):
        ref = self.pick(data, sorted(r for r in self.known() if not self.sessions[r].busy))
        if new_process and not self.alive(busy=True):
            self.restart()
        self.idle(ref)
        s = self.sessions[ref]
        params: dict[str, Any] = {"sessionId": ref, "cwd": s.cwd or "$cwd"}
        if replay == "start":
            params["replayFrom"] = {"type": "start"}
        elif replay == "null":
            params["replayFrom"] = None
        save = self.request("session/resume", params, rid)
        if self.ok(save):
            s.alive = True
        # a resume in a new process may come next: its process starts now, while the example goes on
        self.fs.prestart_restart(self.target)

    @precondition(lambda self: self.alive())
    @rule(data=st.data(), params_seed=st.none() | PAYLOAD_SEEDS, rid=request_ids)
    def set_config(self, data, params_seed, rid):
        """An advertised option set to one of its values, or a generated (mostly unknown) one."""
        generated = self.draws.params("session/set_config_option", params_seed)
        ref = self.pick(data, self.alive())
        self.idle(ref)
        options = [o for o in self.sessions[ref].config or [] if isinstance(o, dict)
                   and o.get("type") in ("select", "boolean") and isinstance(o.get("configId"), str)]
        if generated is None and options:
            opt = data.draw(sampled(options), label="option")
            if opt["type"] == "boolean":
                params = {"type": "boolean", "value": data.draw(st.booleans(), label="value")}
            else:
                values = [v.get("value") for v in _select_values(opt)] or [opt.get("currentValue")]
                params = {"type": "id", "value": data.draw(sampled(values), label="value")}
            params.update(sessionId=ref, configId=opt["configId"])
        elif generated is not None and not has_var(generated):
            params = {**generated, "sessionId": ref}
        else:
            return
        save = self.request("session/set_config_option", params, rid)
        if self.ok(save):
            result = self.target.var(save).result
            if isinstance(result, dict) and isinstance(result.get("configOptions"), list):
                self.sessions[ref].config = result["configOptions"]

    def invalid_request(self, data, inv: Invalid, rid):
        """A malformed request: it must be rejected (monitors judge the code) and the agent survive."""
        params = dict(inv.params)
        if "sessionId" in params and isinstance(params["sessionId"], str) and self.alive(busy=False) \
                and data.draw(st.booleans(), label="real session"):
            params["sessionId"] = self.pick(data, self.alive(busy=False))
            self.idle(params["sessionId"])  # a later await of its idle looks for one after this request
        if has_var(params):
            return
        self.request(inv.method, params, rid)  # a failed re-initialize leaves the connection as it was

    def unknown_session(self, rid, method):
        params: dict[str, Any] = {"sessionId": "$unknown_session"}
        if method == "session/prompt":
            params["prompt"] = [{"type": "text", "text": "hello"}]
        elif method == "session/resume":
            params["cwd"] = "$cwd"
        elif method == "session/set_config_option":
            params.update(configId="mode", type="id", value="code")
        self.request(method, params, rid)

    def other_request(self, data, method, rid):
        params = data.draw(self.draws.params_of(method), label="params")
        if not has_var(params):
            self.request(method, params, rid)

    def envelope(self, case: EnvelopeCase, rid):
        """Raw framing / envelope input, then a liveness probe that must be answered."""
        for line in case.lines:
            if has_var(line if isinstance(line, str) else ""):
                return
        for line in case.lines:  # ids written in raw lines are taken, like those of requests
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            for item in msg if isinstance(msg, list) else [msg]:
                if isinstance(item, dict) and isinstance(item.get("id"), (str, int, float)):
                    self.used_ids.add((type(item["id"]).__name__, item["id"]))
        if case.informational:
            self.do({"note": {"text": informational_note(case.lines)}})
        for line in case.lines:
            self.do(step_for(line))
        self.request("session/list", {}, rid)

    # the traffic mix: session rules each get a share of the steps; the rest (malformed,
    # unknown-session, envelope, other methods) shares one rule, so that it does not crowd them out
    @rule(data=st.data(), kind=st.sampled_from(["cancel_request_unknown", "list_sessions", "invalid_request",
                                                "unknown_session", "other_request", "envelope"]))
    def other_traffic(self, data, kind):
        d = lambda s, label: data.draw(s, label=label)  # noqa: E731
        if kind == "cancel_request_unknown":
            self.cancel_request_unknown(d(request_ids, "rid"))
        elif kind == "list_sessions":
            self.list_sessions(d(request_ids, "rid"), d(self.draws.params_of("session/list"), "params"))
        elif kind == "invalid_request":
            self.invalid_request(data, d(self.draws.invalid, "invalid"), d(request_ids, "rid"))
        elif kind == "unknown_session":
            self.unknown_session(d(request_ids, "rid"), d(sampled(_SESSION_METHODS), "method"))
        elif kind == "other_request":
            self.other_request(data, d(sampled(_OTHER_METHODS), "method"), d(request_ids, "rid"))
        else:
            self.envelope(d(self.fresh_envelope_cases, "case"), d(request_ids, "rid"))

    @invariant()
    def no_blocking_failure(self):
        self.check()
        self.rule_start = len(self.steps)  # the next rule's first step
        self.rule_starts.append(self.rule_start)

