"""A client steered by its own flags: --acp-client-arg for the whole run and a client scenario's ``args``
go where ``{args}`` stands in --client-cmd (or at its end); the reference client takes flags equivalent to
its environment variables, so a scenario written with ``args`` drives it into the same situation."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from acp_conformance.rules.catalog import load_catalog
from acp_conformance.scenarios.client_model import ScenarioFileError, load_client_file
from acp_conformance.scenarios.client_runner import ClientRunner
from acp_conformance.scenarios.runner import RunSettings, TargetSpec
from acp_conformance.target_command import with_extra_args
from acp_conformance.wire.transcript import RECEIVED

ROOT = Path(__file__).resolve().parent.parent
CLIENT = [sys.executable, "-m", "acp_conformance.reference.client", "{args}", "--", "{agent}"]


def test_extra_args_go_where_the_placeholder_stands_or_at_the_end():
    assert with_extra_args(["c", "{args}", "--", "{agent}"], ["--x", "1"]) == ["c", "--x", "1", "--", "{agent}"]
    assert with_extra_args(["c", "{args}", "--", "{agent}"], []) == ["c", "--", "{agent}"]
    assert with_extra_args(["c", "--flag"], ["--x"]) == ["c", "--flag", "--x"]


def test_scenario_args_must_be_a_list_of_strings(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nrules: [CLIENT-012]\nargs: {cancel: 1}\n")
    with pytest.raises(ScenarioFileError, match="args is a list of strings"):
        load_client_file(bad, set(load_catalog()))
    good = tmp_path / "good.yaml"
    good.write_text("name: good\nrules: [CLIENT-012]\nargs: [--cancel-after, 0.3]\n")
    (scn,) = load_client_file(good, set(load_catalog()))
    assert scn.args == ["--cancel-after", "0.3"]


def _pending_permission_scenario(args: list[str], run_args: list[str]):
    """The cancel-with-pending-permission scenario, steered by flags instead of its environment."""
    (scn,) = [s for s in load_client_file(ROOT / "scenarios" / "client" / "client_turns.yaml", set(load_catalog()))
              if s.name == "client-cancel-with-pending-permission"]
    scn.env, scn.args = {}, args
    return scn, TargetSpec(CLIENT, {}, run_args)


def _cancels(scn, target, tmp_path) -> list:
    runner = ClientRunner(scn, target, RunSettings(timeout=10, startup_timeout=15, test_timeout=60),
                          tmp_path / "work", tmp_path / "s")
    (tmp_path / "work").mkdir()
    (tmp_path / "s").mkdir()
    result = anyio.run(runner.run)
    assert result.harness_error is None
    return [f for f in result.transcript.frames
            if f.direction == RECEIVED and isinstance(f.msg, dict) and f.msg.get("method") == "session/cancel"]


@pytest.mark.parametrize("scenario_args, run_args", [
    (["--cancel-after", "0.3", "--permission", "hold"], []),  # the scenario's own args
    (["--permission", "hold"], ["--cancel-after", "0.3"]),  # one of them for the whole run (--acp-client-arg)
])
def test_flags_steer_the_reference_client_to_cancel(tmp_path, scenario_args, run_args, monkeypatch):
    monkeypatch.delenv("ACP_CLIENT_CANCEL_AFTER", raising=False)
    scn, target = _pending_permission_scenario(scenario_args, run_args)
    assert _cancels(scn, target, tmp_path), "the client given --cancel-after never sent session/cancel"


def test_without_the_flag_the_reference_client_does_not_cancel(tmp_path, monkeypatch):
    """The control: the same scenario with no args and no environment gets no cancel (its await is bounded)."""
    monkeypatch.delenv("ACP_CLIENT_CANCEL_AFTER", raising=False)
    scn, target = _pending_permission_scenario([], [])
    assert not _cancels(scn, target, tmp_path)
