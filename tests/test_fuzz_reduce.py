"""The reducer's value pass (``reduce.py``, 5.): generated values of a counterexample become simpler
(optional keys gone, strings empty or short, numbers 0, lists cut) while the failure stays, and what
the failure needs, the scenario's plumbing and the steering prompts are left as they are.

A fake runner judges each candidate scenario (no process is started): the planted agents'
end-to-end checks are in test_fuzz_planted.py.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from types import SimpleNamespace
from typing import Any

import pytest

from acp_conformance.fuzz import reduce as reduce_module
from acp_conformance.fuzz.reduce import Outcome, Reducer, _apply_edits, _ladder, _validity, _value_edits
from acp_conformance.fuzz.config import DEFAULT_PROMPTS, FuzzConfig, StepStats
from acp_conformance.fuzz.recorded import Recorded
from acp_conformance.rules.findings import Finding
from acp_conformance.protocol.schema import cached_schema
from acp_conformance.protocol.validate import Validator

JUNK = "xq9Zt\u00e9\u65e5" * 12  # what hypothesis leaves in a counterexample
SESSION = "$r2.result.sessionId"
BIG_ID = 2 ** 33 + 5


def _request(method: str, params: Any, rid: Any, save: str) -> dict[str, Any]:
    return {"request": {"method": method, "params": params, "id": rid, "save": save, "wait": True}}


def counterexample() -> list[dict[str, Any]]:
    annotations = {"audience": ["user", "assistant"], "lastModified": "2063-12-01T12:00:00Z", "priority": 0.75,
                   "_meta": {"k": JUNK}}
    return [
        _request("initialize", {"protocolVersion": 2,
                                "info": {"name": JUNK, "title": JUNK, "version": "0.0.0-" + JUNK,
                                         "_meta": {"a": [1, 2]}},
                                "capabilities": {"auth": None, "_meta": {"x": JUNK}}, "_meta": None}, "\u2948$h", "r1"),
        _request("session/new", {"cwd": "/x y/" + JUNK, "additionalDirectories": ["/a/" + JUNK, "/b"], "_meta": {}},
                 23316884, "r2"),
        _request("session/prompt",
                 {"sessionId": SESSION, "prompt": [{"type": "text", "text": DEFAULT_PROMPTS["simple"]}]}, 931462, "r3"),
        {"await": {"idle": SESSION}},
        _request("session/prompt", {"sessionId": SESSION, "_meta": {"trace": JUNK}, "prompt": [
            {"type": "text", "text": JUNK * 3, "annotations": annotations, "_meta": None},
            {"type": "resource", "resource": {"uri": "file:///" + JUNK, "text": "", "mimeType": "text/plain",
                                              "_meta": {}}, "annotations": copy.deepcopy(annotations)},
            {"type": "resource_link", "name": JUNK, "uri": "https://example.com/" + JUNK, "title": None,
             "description": JUNK, "size": 123456789, "mimeType": "image/png",
             "icons": [{"src": "https://example.com/icon.png", "sizes": ["16x16", JUNK]},
                       {"src": "data:image/png;base64,AAAA", "theme": "dark"}]},
        ]}, BIG_ID, "r4"),
        {"await": {"idle": SESSION}},
    ]


def needs(steps: list[dict[str, Any]]) -> bool:
    """The planted failure: a prompt of three or more blocks, one an embedded resource whose text is
    empty, sent with an id above 2^31, after an earlier prompt of the same session (any content)."""
    prompts = [s["request"] for s in steps if "request" in s and s["request"].get("method") == "session/prompt"]
    return any(i > 0 and isinstance(r.get("id"), int) and r["id"] > 2 ** 31 and len(r["params"]["prompt"]) >= 3
               and any(b.get("type") == "resource" and b["resource"].get("text") == "" for b in r["params"]["prompt"])
               for i, r in enumerate(prompts))


class FakeReducer(Reducer):
    """Runs candidates through ``fails`` instead of a target; ``seen`` holds every candidate run."""

    def __init__(self, rec: Recorded, fails=needs, deadline: float = 1e18):
        validator = Validator(cached_schema(None))
        super().__init__(SimpleNamespace(validator=validator, config=FuzzConfig([]), stats=StepStats()), rec, deadline)
        self.fails = fails
        self.seen: list[list[dict[str, Any]]] = []

    def run(self, steps, answers):
        self.runs += 1
        self.seen.append(copy.deepcopy(steps))
        if self.fails(steps):
            return Outcome(True, None, ["PROMPT-003"], "PROMPT-003 failed: planted")
        return Outcome(False, None, [], "the example failed")


def recorded(steps: list[dict[str, Any]]) -> Recorded:
    return Recorded(steps, {}, "PROMPT-003 failed: planted", ["PROMPT-003"], fail_index=5, fail_start=4)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


def _keys(value: Any) -> set[str]:
    if isinstance(value, list):
        return set().union(*(_keys(v) for v in value)) if value else set()
    if isinstance(value, dict):
        return set(value).union(*(_keys(v) for v in value.values()))
    return set()


def test_the_planted_counterexample_is_valid_and_fails():
    validator = Validator(cached_schema(None))
    for st in counterexample():
        if "request" in st:
            method = cached_schema(None).methods[st["request"]["method"]]
            assert validator.is_valid(method.params, st["request"]["params"]), st
    assert needs(counterexample())


def test_values_become_simpler_and_the_failure_stays():
    original = counterexample()
    reducer = FakeReducer(recorded(original))
    out = reducer.reduce()
    steps = out.steps
    assert needs(steps)  # the same failure, what it needs kept
    assert out.rules == ["PROMPT-003"]
    size = lambda s: len(json.dumps(s, ensure_ascii=False))  # noqa: E731
    assert size(steps) < size(original) / 3, json.dumps(steps, indent=1)
    requests = [s["request"] for s in steps if "request" in s]
    init, new, steered, planted = requests

    # the scenario's plumbing is untouched: methods, ids, saves, waits, $variables, protocolVersion
    assert [(r["method"], r["id"], r["save"], r["wait"]) for r in requests] == [
        (r["request"]["method"], r["request"]["id"], r["request"]["save"], r["request"]["wait"])
        for r in original if "request" in r]
    assert init["params"]["protocolVersion"] == 2
    assert steered["params"] == original[2]["request"]["params"]  # the steering prompt stays as configured
    assert planted["params"]["sessionId"] == SESSION

    # the generated values are gone or short
    assert init["params"] == {"protocolVersion": 2, "info": {"name": "", "version": ""}}  # info is required
    assert new["params"] == {"cwd": "/"}  # a path stays absolute
    assert planted["params"]["prompt"] == [
        {"type": "text", "text": ""},
        {"type": "resource", "resource": {"uri": "", "text": ""}},  # text and uri are required
        {"type": "resource_link", "name": "", "uri": ""},
    ]
    assert not {"_meta", "annotations", "title", "icons", "mimeType", "size"} & _keys(steps)
    kept = {SESSION, DEFAULT_PROMPTS["simple"], "resource_link"}  # (a discriminator)
    assert all(len(s) <= 8 for r in requests for s in _strings(r["params"]) if s not in kept)

    # coarse first: a few runs of the pass do it (all steps, the failing prompt's params, each kind of
    # its edits at once, then the lists' edits alone: six runs)
    assert 0 < reducer.value_runs <= 8 and reducer.value_stop is None, reducer.value_runs
    # every candidate the pass ran (and the last run) kept the ids and the discriminators of the blocks
    types = [["text"], ["text", "resource", "resource_link"]]
    for cand in reducer.seen[-reducer.value_runs - 1:]:
        assert [s["request"]["id"] for s in cand if "request" in s] == [r["id"] for r in requests]
        blocks = [s["request"]["params"]["prompt"] for s in cand
                  if "request" in s and "prompt" in s["request"]["params"]]
        assert all([b["type"] for b in bs] == t[:len(bs)] for bs, t in zip(blocks, types, strict=True)), blocks


def test_a_value_the_failure_needs_is_kept_with_a_finer_edit():
    """A failure that needs a long name: the name becomes its eight-character prefix, not empty."""
    original = counterexample()

    def fails(steps):
        link = [b for s in steps if "request" in s and s["request"]["id"] == BIG_ID
                for b in s["request"]["params"]["prompt"] if b["type"] == "resource_link"]
        return needs(steps) and bool(link) and len(link[0]["name"]) >= 5

    reducer = FakeReducer(recorded(original), fails)
    steps = reducer.reduce().steps
    assert fails(steps)
    link, = [b for s in steps if "request" in s and s["request"]["id"] == BIG_ID
             for b in s["request"]["params"]["prompt"] if b["type"] == "resource_link"]
    assert link == {"type": "resource_link", "name": JUNK[:8], "uri": ""}


def test_the_value_pass_spends_at_most_its_runs(monkeypatch):
    """A failure that needs every generated value as it is: the pass tries, and stops at its cap."""
    original = counterexample()
    planted_params = original[4]["request"]["params"]

    def fails(steps):
        return needs(steps) and any("request" in s and s["request"]["params"] == planted_params for s in steps)

    monkeypatch.setattr(reduce_module, "VALUE_RERUNS", 5)
    reducer = FakeReducer(recorded(original), fails)
    out = reducer.reduce()
    assert reducer.value_runs == 5 and reducer.value_stop == "cap"
    assert fails(out.steps)


def test_the_value_pass_stops_at_the_deadline():
    reducer = FakeReducer(recorded(counterexample()))
    reducer.steps, reducer.answers, reducer.lo, reducer.failing = counterexample(), [], 4, 4
    reducer.history = []
    reducer.deadline = 0.0  # spent
    reducer._simplify_values()
    assert reducer.value_runs == 0 and reducer.seen == [] and reducer.value_stop == "deadline"


@pytest.mark.parametrize("value, ladder", [
    ("hello world!", ["", "h", "hello wo"]), ("ab", ["", "a"]), ("a", [""]), ("", []),
    ("/x y/abcdefgh", ["/", "/x y/abc"]), ("/", []),
    (2 ** 40, [0, 1]), (-7, [0, -1]), (1, [0]), (0, []), (True, []), (0.5, [0.0]), (None, []),
    ([1, 2, 3], [[1]]), ([1], []),
])
def test_ladders(value, ladder):
    assert _ladder(value) == ladder


def test_edits_leave_variables_discriminators_and_steering_prompts():
    params = {"sessionId": "$r2.result.sessionId", "cwd": "$cwd", "protocolVersion": 2,
              "prompt": [{"type": "text", "text": DEFAULT_PROMPTS["tool"]}, {"type": "text", "text": "x${a}"}]}
    edits = _value_edits(params, (), frozenset(DEFAULT_PROMPTS.values()),
                         frozenset({"sessionId", "protocolVersion", "type"}))
    # the only edits: none of the keys holding a variable or a steering prompt, none inside them
    assert edits == []


def test_an_edit_that_would_make_valid_params_invalid_is_skipped():
    validator = Validator(cached_schema(None))
    params = {"protocolVersion": 2, "info": {"name": "n", "version": "v", "title": "t"}}
    ok = _validity(validator, "initialize", params)
    edits = _value_edits(params, (), frozenset(), frozenset({"protocolVersion"}))
    assert _apply_edits(params, edits, ok) == {"protocolVersion": 2, "info": {"name": "", "version": ""}}
    # invalid params stay invalid (a malformed request is still malformed)
    bad = {"info": {"name": "n", "version": 3}}
    ok = _validity(validator, "initialize", bad)
    simpler = _apply_edits(bad, _value_edits(bad, (), frozenset(), frozenset()), ok)
    assert simpler != bad and not validator.is_valid("InitializeRequest", simpler)


def _frames(*specs: tuple[str, dict[str, Any]]) -> list[Any]:
    from acp_conformance.wire.transcript import Frame
    return [Frame(i, 1, direction, float(i), json.dumps(msg).encode(), msg) for i, (direction, msg) in enumerate(specs)]


def test_the_failing_step_is_the_one_that_sent_the_request_its_evidence_answers():
    """Under load the prompt's error answer arrives while later steps run: the failure is still the
    prompt's, and the steps that ran meanwhile are not kept whole with it (a flake of
    test_fuzz_planted[empty-embedded-text] kept nine set_config_option requests this way)."""
    sid = "$r2.result.sessionId"
    steps = [_request("initialize", {"protocolVersion": 2}, 1, "r1"),
             _request("session/new", {"cwd": "/"}, 2, "r2"),
             _request("session/prompt", {"sessionId": sid, "prompt": []}, 3, "r3"),
             _request("session/set_config_option", {"sessionId": sid}, 4, "r4"),
             _request("session/set_config_option", {"sessionId": sid}, 5, "r5"),
             {"await": {"idle": sid}}]
    transcript = _frames(("sent", {"jsonrpc": "2.0", "id": 1, "method": "initialize"}),
                         ("received", {"jsonrpc": "2.0", "id": 1, "result": {}}),
                         ("sent", {"jsonrpc": "2.0", "id": 2, "method": "session/new"}),
                         ("received", {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s"}}),
                         ("sent", {"jsonrpc": "2.0", "id": 3, "method": "session/prompt"}),   # step 2
                         ("sent", {"jsonrpc": "2.0", "id": 4, "method": "session/set_config_option"}),  # step 3
                         ("received", {"jsonrpc": "2.0", "id": 4, "result": {}}),
                         ("sent", {"jsonrpc": "2.0", "id": 5, "method": "session/set_config_option"}),  # step 4
                         ("received", {"jsonrpc": "2.0", "id": 3, "error": {"code": -32603, "message": "x"}}),
                         ("received", {"jsonrpc": "2.0", "id": 5, "result": {}}))
    step_frames = [0, 2, 4, 5, 7, 10]
    finding = Finding("PROMPT-003", "fail", "rejected after insertion", frames=[8, 4])
    rec = Recorded(steps, {}, "PROMPT-003 failed", ["PROMPT-003"], findings=[finding], transcript=transcript,
                   fail_index=6, fail_start=0, step_frames=step_frames, rule_starts=[0, 1, 2, 3, 4, 5])
    assert rec.failing_rule() == (2, 2)
    # the answer to a later step's request counts from that step
    late = Finding("PROMPT-003", "fail", "x", frames=[9])
    assert dataclasses.replace(rec, findings=[late]).failing_rule() == (4, 4)
