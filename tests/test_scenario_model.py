"""The scenario format: good files load, bad files are refused with a sentence naming the place."""

from pathlib import Path

import pytest

from acp_conformance.resources import scenarios_dir
from acp_conformance.rules.catalog import load_catalog
from acp_conformance.scenarios.model import STEPS, ScenarioFileError, load_file


def test_bundled_scenarios_load_and_name_known_rules():
    files = sorted((scenarios_dir() / "agent").glob("*.yaml"))
    assert files, "no bundled agent scenarios"
    names = set()
    for f in files:
        for scn in load_file(f, set(load_catalog())):
            assert scn.rules, f"{f.name}:{scn.name} names no rules"
            assert scn.name not in names, f"scenario name {scn.name} used twice"
            names.add(scn.name)
            assert all(s.kind in STEPS for s in scn.steps)


@pytest.mark.parametrize("text, words", [
    ("name: x\nrules: []\nsteps: [{frobnicate: {}}]\n", "unknown step 'frobnicate'"),
    ("name: x\nsteps: [{prompt: {sesion: s}}]\n", "prompt does not take sesion"),
    ("name: x\nsteps: []\n", "'steps' is a non-empty list"),
    ("rules: []\nsteps: [initialize]\n", "missing 'name'"),
    ("name: x\nrules: [NOPE-999]\nsteps: [initialize]\n", "unknown rule IDs NOPE-999"),
    ("name: [unclosed\n", "not valid YAML"),
    ("scenarios:\n  - {name: a, steps: [initialize]}\n  - {name: a, steps: [initialize]}\n", "used twice"),
])
def test_malformed_files_are_refused_with_the_place(tmp_path: Path, text, words):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(ScenarioFileError) as e:
        load_file(f, set(load_catalog()))
    assert words in str(e.value)
    assert str(f) in str(e.value)


def test_unreadable_file(tmp_path: Path):
    with pytest.raises(ScenarioFileError, match="cannot read"):
        load_file(tmp_path / "missing.yaml")
    f = tmp_path / "latin1.yaml"
    f.write_bytes(b"name: \xff\n")
    with pytest.raises(ScenarioFileError, match="not UTF-8"):
        load_file(f)


def test_scalar_shorthand():
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
        fh.write("name: x\nsteps: [initialize, {cancel: $s}, {settle: 0.1}, restart]\n")
    scn = load_file(fh.name)[0]
    assert [s.kind for s in scn.steps] == ["initialize", "cancel", "settle", "restart"]
    assert scn.steps[1].args == {"session": "$s"}
    assert scn.steps[2].args == {"seconds": 0.1}
    Path(fh.name).unlink()


def test_steps_guarded_by_if_saved_are_left_out_when_nothing_was_saved(tmp_path):
    """An optional await that times out saves nothing; the steps that need its value are left out
    (a note in the transcript), not a harness error; with the value saved they run."""
    result = _run_against_reference(tmp_path, "name: guard\nrules: [PROMPT-001]\nsteps:\n"
                 "  - initialize: {}\n  - new_session: {save: s}\n"
                 "  - await: {update: {session: $s, kind: terminal_update}, save: t, optional: true, timeout: 0.3}\n"
                 "  - request: {method: terminal/cancel, params: {sessionId: $s, terminalId: $t.params.update.terminalId},"
                 " if_saved: t}\n"
                 "  - request: {method: session/list, params: {}, if_saved: s}\n")
    sent = [fr.msg.get("method") for fr in result.transcript.frames if fr.direction == "sent" and fr.msg]
    assert "terminal/cancel" not in sent and "session/list" in sent
    assert any("left out: $t was not saved" in str(fr.detail) for fr in result.transcript.frames if fr.event)


def test_await_idle_after_a_held_prompt_waits_for_the_end_of_its_own_turn(tmp_path):
    """Two prompts back to back: the second is held until the first turn ends. ``await: {idle, after}``
    waits for the idle after the held prompt's answer: the end of its own turn, not of the first."""
    result = _run_against_reference(tmp_path, "name: held\nrules: [PROMPT-001]\nsteps:\n"
                 "  - initialize: {}\n  - new_session: {save: s}\n"
                 "  - prompt: {session: $s, text: first, wait: none, save: a}\n"
                 "  - prompt: {session: $s, text: second, wait: none, save: b}\n"
                 "  - await: {idle: $s, after: $b}\n"
                 "  - request: {method: session/list, params: {}}\n")
    frames = result.transcript.frames
    idles = [fr.seq for fr in frames if fr.direction == "received" and '"state":"idle"' in fr.raw.decode()]
    answer_b = next(fr.seq for fr in frames if fr.direction == "received" and isinstance(fr.msg, dict)
                    and "result" in fr.msg and fr.msg.get("id") == _id_of(frames, "second"))
    listed = next(fr.seq for fr in frames if fr.direction == "sent" and isinstance(fr.msg, dict)
                  and fr.msg.get("method") == "session/list")
    # two turns, two idles; the list went out after the second one, which follows the held prompt's answer
    assert len(idles) == 2 and idles[0] < answer_b < idles[1] < listed


def _id_of(frames, text):
    return next(fr.msg["id"] for fr in frames if fr.direction == "sent" and isinstance(fr.msg, dict)
                and fr.msg.get("method") == "session/prompt" and text in str(fr.msg["params"]["prompt"]))


def _run_against_reference(tmp_path, text: str):
    """The scenario file ``text`` run by the runner against the reference agent (no harness error)."""
    import sys

    import anyio

    from acp_conformance.scenarios.runner import Runner, RunSettings, TargetSpec
    f = tmp_path / "scenario.yaml"
    f.write_text(text)
    scn, = load_file(f, set(load_catalog()))
    result = anyio.run(Runner(scn, TargetSpec([sys.executable, "-m", "acp_conformance.reference.agent"]),
                              RunSettings(timeout=5, startup_timeout=15, test_timeout=30), tmp_path).run)
    assert result.error is None and result.harness_error is None, (result.error, result.harness_error)
    return result
