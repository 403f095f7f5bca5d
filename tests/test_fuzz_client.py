"""The client fuzzer: it plays the agent against a client and finds bugs that only a sequence or an
odd value reaches (tests/planted/planted_clients.py), shrinks them into client scenario files that
replay reproduces, and leaves the correct reference client alone.

Each planted client runs with the same seed and the same limits (the strategies know nothing of the
planted values); shrinking is bounded by client runs, not by the clock, so the result does not
depend on how busy the machine is.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from acp_conformance.fuzz.client_fuzz import (ClientConfigError, client_config, fuzz_client,
                                              is_client_scenario_file, replay_client)
from acp_conformance.resources import scenarios_dir
from acp_conformance.rules.catalog import load_catalog
from acp_conformance.scenarios.client_model import load_client_file

PLANTED = Path(__file__).resolve().parent / "planted" / "planted_clients.py"
SEED = 0
MAX_EXAMPLES = 100  # the bug must be found within this many examples
SHRINK_RUNS = 12  # client runs that shrinking may spend
SAFETY_BUDGET = 150.0  # seconds: only a net against a runaway run, never what decides a result


def planted(name: str, *, via_relay: bool = False):
    argv = [sys.executable, str(PLANTED), name] + (["--", "{agent}"] if via_relay else ["--stdio"])
    return client_config(argv, timeout=1.0, shrink_runs=SHRINK_RUNS)


def reference():
    return client_config(timeout=2.0)  # the bundled reference client, through the relay ({agent})


def _turn(path: Path) -> list:
    (scn,) = load_client_file(path, set(load_catalog()))
    return [(st.kind, st.args) for st in scn.handlers["session/prompt#1"]]


def _updates(turn, kind):
    return [a["update"] for k, a in turn if k == "update" and a["update"].get("sessionUpdate") == kind]


def _requests(turn, method):
    return [a for k, a in turn if k == "request" and a["method"] == method]


# name -> (what the failure says, what the shrunk script must hold to reach the bug); the first
# runs through the relay ({agent}), the others speak on the client's own stdio
CASES = {
    "fourth-chunk": ("the client died (exited with status 70)",
                     lambda t: sum(1 for k, _ in t if k == "message") + len(_updates(t, "agent_message_chunk")) >= 4),
    "three-options": ("CLIENT-013 failed",
                      lambda t: any(len(r["params"]["options"]) >= 3
                                    for r in _requests(t, "session/request_permission"))),
    "empty-tool-content": ("the client died (exited with status 71)",
                           lambda t: any(u.get("content") == [] for u in _updates(t, "tool_call_update"))),
    "reply-underscore-notification": ("CLIENT-016 failed",
                                      lambda t: any(k == "notify" and a["method"].startswith("_") for k, a in t)),
    "big-id-hangs": ("CLIENT-017 failed",
                     lambda t: any(isinstance(a.get("id"), int) and a["id"] > 2 ** 31 for k, a in t if k == "request")),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_planted_client_bug_is_found_shrunk_and_replayed(name, tmp_path):
    says, reaches = CASES[name]
    cfg = planted(name, via_relay=name == "fourth-chunk")
    result = fuzz_client(cfg, seed=SEED, max_examples=MAX_EXAMPLES, budget=SAFETY_BUDGET, step_count=30,
                         report_dir=tmp_path)
    assert result.failure is not None and result.failure.startswith(says), result.failure
    assert not result.budget_spent
    # shrunk: the written script is no bigger than the first failing one, and still reaches the bug
    assert result.scenario_path is not None and result.scenario_path.exists()
    assert result.actions is not None and result.shrunk_from_actions is not None
    assert result.actions <= result.shrunk_from_actions
    turn = _turn(result.scenario_path)
    assert reaches(turn), result.scenario_path.read_text()
    assert is_client_scenario_file(result.scenario_path)
    report = json.loads(result.report_path.read_text())
    assert report["failure"] == result.failure and report["side"] == "client"
    # replay with the ordinary client runner shows the same failure ...
    again = replay_client(result.scenario_path, cfg)
    assert again.failed and any(f.startswith(says) for f in again.failures), again
    # ... which is the planted client's, not the script's: the reference client passes it
    ok = replay_client(result.scenario_path, reference())
    assert not ok.failed, ok


ALT_CLIENT = [sys.executable, "-m", "acp_conformance.reference.alt_client", "--", "{agent}"]  # other legal choices


@pytest.mark.parametrize("alternative", [False, True], ids=["reference", "alternative"])
def test_reference_client_survives(alternative, tmp_path):
    cfg = client_config(ALT_CLIENT, timeout=2.0) if alternative else reference()
    result = fuzz_client(cfg, seed=1, max_examples=20, step_count=30, report_dir=tmp_path)
    assert result.failure is None, (result.failure, result.step_log)
    assert result.examples >= 15 and result.scenario_path is None  # (a script drawn twice runs once)
    kinds = json.loads(result.report_path.read_text())["messages_by_kind"]
    # the traffic it survived: answers, valid and unknown updates, requests it had to answer
    for kind in ("response", "update:agent_message_chunk", "update:tool_call_update", "update:_custom",
                 "update:unknown", "session/request_permission", "elicitation/create", "_extension",
                 "$/cancel_request"):
        assert kinds.get(kind, 0) > 0, (kind, kinds)
    assert result.steps == sum(kinds.values())


def test_same_seed_same_run():
    cfg = reference()
    a = fuzz_client(cfg, seed=7, max_examples=5)
    # hypothesis would also draw literals of newly imported local modules (here the planted values):
    # the fuzzer must not, or a run would depend on what else is loaded, and aim at the tests' bugs
    spec = importlib.util.spec_from_file_location("planted_clients_literals", PLANTED)
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        b = fuzz_client(cfg, seed=7, max_examples=5)
    finally:
        del sys.modules[spec.name]
    c = fuzz_client(cfg, seed=8, max_examples=5)
    assert a.failure is None and b.failure is None
    assert a.scripts_sha256 == b.scripts_sha256 and a.steps == b.steps and a.examples == b.examples == 5
    assert c.scripts_sha256 != a.scripts_sha256


def test_a_client_that_never_talks_is_not_a_counterexample(tmp_path):
    result = fuzz_client(client_config([sys.executable, "-c", "pass"], startup_timeout=5.0), max_examples=20,
                         report_dir=tmp_path)
    assert result.failure is not None and result.failure.startswith("the client could not be fuzzed")
    assert result.examples == 1 and result.scenario_path is None


def test_replay_of_the_bundled_client_scenarios_passes_the_reference_client():
    """replay_client judges any client scenario as the fuzzer does: the bundled ones (an agent that
    dies mid-turn, idle before the prompt response, ...) pass against the correct client."""
    for path in sorted((scenarios_dir() / "client").glob("*.yaml")):
        result = replay_client(path, reference())
        assert not result.failed and result.frames > 0, (path.name, result)


def test_scenario_files_by_side():
    assert all(is_client_scenario_file(p) for p in (scenarios_dir() / "client").glob("*.yaml"))
    assert not any(is_client_scenario_file(p) for p in (scenarios_dir() / "agent").glob("*.yaml"))


def test_client_config():
    assert client_config().via_relay and client_config(None).argv == client_config([]).argv
    cfg = client_config(f"{sys.executable} -m acp_conformance.reference.client -- {{agent}}", env={"A": "1"})
    assert cfg.via_relay and cfg.env == {"A": "1"} and cfg.argv[-1] == "{agent}"
    assert not client_config([sys.executable, str(PLANTED), "fourth-chunk", "--stdio"]).via_relay
    for bad in (["no-such-command-xyz"], "'unterminated", {"timeout": 0}):
        with pytest.raises(ClientConfigError):
            client_config(**bad) if isinstance(bad, dict) else client_config(bad)
