"""Interop targets: small ACP v2 agents and clients written by us on the two official SDKs, run under the suite.

The verdicts recorded in tests/interop/expected.yaml (explained in docs/interop.md) are asserted
exactly: every checked rule listed there must have that status, every other checked rule must pass
(or skip, for capabilities the target does not advertise). A change in the suite or in an SDK
therefore shows up here; refresh expected.yaml and docs/interop.md together when it is intended.

Agent targets run under ``--agent-cmd`` (the suite plays the client); client targets under
``--client-cmd="CLIENT {agent}"`` (the suite plays the agent; the client launches the relay as its agent).

The SDKs come from the public registries via tests/interop/install.sh; without them (no node, no
network) these tests skip. They try the install script once (300 s timeout) before skipping. The
suite runs are opt-in (ACP_INTEROP=1): they take minutes.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from suite_run import ROOT, SuiteRun, run_and_read, run_suite

INTEROP = ROOT / "tests" / "interop"
EXPECTED_FILE = INTEROP / "expected.yaml"
DOC = ROOT / "docs" / "interop.md"
TS_SDK_VERSION = "2.4.0"
PY_SDK_VERSION = "1.0.0rc3"
PY_VENV_PYTHON = INTEROP / ".venv" / "bin" / "python"


@dataclass(frozen=True)
class Target:
    side: str  # "agent": run under --agent-cmd; "client": under --client-cmd with {agent}
    sdk: str  # "typescript" | "python" | "adapters" (released agents from npm, tests/interop/adapters)
    argv: tuple[str, ...]


ADAPTERS = INTEROP / "adapters" / "node_modules" / "@agentclientprotocol"
# the released v2 adapters, pinned by tests/interop/adapters/package-lock.json; run with --acp-model (docs/model.md)
ADAPTER_VERSIONS = {"claude-agent-acp": "0.101.0", "codex-acp": "2.6.0"}


V1_AGENTS = INTEROP / "v1" / "node_modules"
V1_VENV = INTEROP / ".venv-v1"
# the released v1-only agents (ACP_INTEROP_V1=1: about 1 GB), pinned by tests/interop/v1/package-lock.json and
# tests/interop/install.sh; run with --acp-model (docs/model.md) and judged by the V1 rules (docs/v1.md)
V1_VERSIONS = {"@google/gemini-cli": "0.61.0", "@qwen-code/qwen-code": "0.24.4",
               "@zed-industries/claude-code-acp": "0.16.2", "opencode-ai": "1.18.33"}
FAST_AGENT_VERSION = "0.10.48"

TARGETS = {
    "typescript": Target("agent", "typescript", ("node", str(INTEROP / "ts" / "agent.mjs"))),
    "python": Target("agent", "python", (str(PY_VENV_PYTHON), str(INTEROP / "py" / "agent.py"))),
    "typescript-client": Target("client", "typescript", ("node", str(INTEROP / "ts" / "client.mjs"))),
    "python-client": Target("client", "python", (str(PY_VENV_PYTHON), str(INTEROP / "py" / "client.py"))),
    "claude-agent-acp": Target("agent", "adapters", ("node", str(ADAPTERS / "claude-agent-acp" / "dist" / "index.js"))),
    "codex-acp": Target("agent", "adapters", ("node", str(ADAPTERS / "codex-acp" / "dist" / "index.js"))),
    "gemini-cli": Target("agent", "v1", ("node", str(V1_AGENTS / "@google/gemini-cli/bundle/gemini.js"),
                                         "--experimental-acp")),
    "qwen-code": Target("agent", "v1", ("node", str(V1_AGENTS / "@qwen-code/qwen-code/cli-entry.js"), "--acp",
                                        "--auth-type=openai")),
    "claude-code-acp": Target("agent", "v1", ("node", str(V1_AGENTS / "@zed-industries/claude-code-acp/dist/index.js"))),
    "opencode": Target("agent", "v1", (str(V1_AGENTS / "opencode-ai/bin/opencode.exe"), "acp")),
    "fast-agent": Target("agent", "v1", (str(V1_VENV / "bin" / "fast-agent"), "acp", "--model", "openai.gpt-4o")),
}
OK_STATUSES = {"pass", "skip"}
# The Python SDK takes seconds of CPU to import (pydantic models): allow a slow start on a busy machine.
SLOW_START = "--acp-startup-timeout=60"


def load_expected() -> dict[str, dict[str, dict]]:
    """target -> rule -> entry (the ``_verdict`` entry, the run's verdict.reason_kind, is left out)."""
    data = yaml.safe_load(EXPECTED_FILE.read_text()) or {}
    return {target: {k: v for k, v in (data.get(target) or {}).items() if not k.startswith("_")} for target in TARGETS}


def expected_reason_kind(target: str) -> str | None:
    data = yaml.safe_load(EXPECTED_FILE.read_text()) or {}
    return ((data.get(target) or {}).get("_verdict") or {}).get("reason_kind")


def without_credentials(home: Path) -> dict[str, str]:
    """The adapters' environment: no credentials of the machine's user (an empty HOME, no API keys; --acp-model
    then gives the agent the scripted model's URL and a dummy key). As root, Claude Code refuses its
    permission-bypass mode unless told the machine is a sandbox (IS_SANDBOX=1)."""
    home.mkdir(parents=True, exist_ok=True)
    env = {"HOME": str(home), "ANTHROPIC_API_KEY": "", "CLAUDE_CODE_OAUTH_TOKEN": "", "OPENAI_API_KEY": "",
           "CODEX_API_KEY": "", "GEMINI_API_KEY": "", "GOOGLE_API_KEY": ""}
    (home / ".codex").mkdir(exist_ok=True)
    if os.environ.get("CODEX_HOME"):  # never the user's own (its credentials)
        env["CODEX_HOME"] = str(home / ".codex")
    if os.geteuid() == 0:
        env["IS_SANDBOX"] = "1"
    return env


def loopback_only() -> list[str]:
    """A prefix that runs a command in a network namespace of its own with only the loopback interface up (Linux:
    ``unshare -n`` as root, ``unshare -rn`` with unprivileged user namespaces): an adapter run inside it shows that
    --acp-model needs no network beyond 127.0.0.1. Empty where no such namespace can be made."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return []
    for flags in (["-n"], ["-rn"]):
        prefix = ["unshare", *flags, "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]
        try:
            if subprocess.run([*prefix, "true"], capture_output=True, timeout=30).returncode == 0:
                return prefix
        except (OSError, subprocess.TimeoutExpired):
            pass
    return []


def statuses(entry: dict) -> list[str]:
    status = entry["status"]
    return [status] if isinstance(status, str) else list(status)


def _missing(sdk: str) -> str | None:
    if sdk == "v1":
        if not os.environ.get("ACP_INTEROP_V1"):
            return "the released v1 agents are opt-in: ACP_INTEROP_V1=1 bash tests/interop/install.sh"
        if shutil.which("node") is None:
            return "node is not on PATH"
        for name, version in V1_VERSIONS.items():
            pkg = V1_AGENTS / name / "package.json"
            if not pkg.is_file() or json.loads(pkg.read_text()).get("version") != version:
                return f"{name}@{version} is not installed in tests/interop/v1/node_modules"
        if not (V1_VENV / "bin" / "fast-agent").exists():
            return f"fast-agent-mcp=={FAST_AGENT_VERSION} is not installed in tests/interop/.venv-v1"
        return None
    if sdk == "adapters":
        if shutil.which("node") is None:
            return "node is not on PATH"
        for name, version in ADAPTER_VERSIONS.items():
            pkg = ADAPTERS / name / "package.json"
            if not pkg.is_file() or json.loads(pkg.read_text()).get("version") != version:
                return f"@agentclientprotocol/{name}@{version} is not installed in tests/interop/adapters/node_modules"
        return None
    if sdk == "typescript":
        if shutil.which("node") is None:
            return "node is not on PATH"
        pkg = INTEROP / "ts" / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"
        if not pkg.is_file() or f'"version": "{TS_SDK_VERSION}"' not in pkg.read_text():
            return f"@agentclientprotocol/sdk@{TS_SDK_VERSION} is not installed in tests/interop/ts/node_modules"
        return None
    if not PY_VENV_PYTHON.exists():
        return "tests/interop/.venv does not exist"
    probe = subprocess.run(
        [str(PY_VENV_PYTHON), "-c",
         "import importlib.metadata as m, acp.experimental.v2; print(m.version('agent-client-protocol'))"],
        capture_output=True, text=True, timeout=60)
    if probe.returncode != 0 or probe.stdout.strip() != PY_SDK_VERSION:
        return f"agent-client-protocol=={PY_SDK_VERSION} is not installed in tests/interop/.venv"
    return None


def require_sdk(target: str) -> None:
    """Skip unless the target's SDK is installed; try tests/interop/install.sh once first."""
    sdk = TARGETS[target].sdk
    if _missing(sdk) is None:
        return
    marker = Path(tempfile.gettempdir()) / f"acp-interop-install-tried-{os.getuid()}-{ROOT.stat().st_ino}"
    with open(str(marker) + ".lock", "w") as lock:  # xdist workers: one install at a time
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _missing(sdk) is not None and not marker.exists():
            marker.write_text("tried")
            try:
                subprocess.run(["bash", str(INTEROP / "install.sh")], capture_output=True, timeout=300)
            except subprocess.TimeoutExpired:
                pass
    reason = _missing(sdk)
    if reason is not None:
        pytest.skip(f"interop target {target} unavailable ({reason}); run tests/interop/install.sh")


def run_client_suite(argv: tuple[str, ...], workdir: Path, *extra: str, timeout: float = 900) -> SuiteRun:
    """The client suite against ``argv {agent}``, from a directory outside the repo (like suite_run.run_suite)."""
    workdir.mkdir(parents=True, exist_ok=True)
    report_dir = workdir / "reports"
    junit = workdir / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", f"--client-cmd={shlex.join(argv)} {{agent}}",
           f"--acp-report-dir={report_dir}", f"--junitxml={junit}", "-p", "no:cacheprovider",
           "-q", *extra]
    return run_and_read(cmd, workdir, report_dir, junit, timeout=timeout)


def verdict_problems(report: dict, expected: dict[str, list[str]]) -> list[str]:
    """How the checked rules' statuses in ``report`` differ from ``expected`` (unlisted: pass or skip)."""
    checked = {r["id"]: r["status"] for r in report["rules"] if r["checked"]}
    problems = []
    for rule, status in sorted(expected.items()):
        if checked.get(rule) not in status:
            problems.append(f"{rule}: expected {'/'.join(status)}, observed {checked.get(rule, 'not checked')}")
    for rule, status in sorted(checked.items()):
        if status not in OK_STATUSES and rule not in expected:
            problems.append(f"{rule}: observed {status}, expected pass (not in expected.yaml)")
    return problems


@pytest.mark.parametrize("target", list(TARGETS))
def test_interop_target_verdicts(target: str, tmp_path: Path) -> None:
    if not os.environ.get("ACP_INTEROP"):
        # a full suite run against an SDK target takes minutes (the Python SDK spends seconds of CPU
        # importing at every start): too long for the default CI budget, so it is opt-in
        pytest.skip("interop runs are opt-in: bash tests/interop/install.sh && ACP_INTEROP=1 pytest tests/test_interop.py")
    require_sdk(target)
    t = TARGETS[target]
    expected = {rule: statuses(entry) for rule, entry in load_expected()[target].items()}
    if t.sdk in ("adapters", "v1"):  # released agents, without credentials or network: whole turns, scripted model
        report_dir, junit = tmp_path / "reports", tmp_path / "junit.xml"
        cmd = [*loopback_only(), sys.executable, "-m", "pytest", f"--agent-cmd={shlex.join(t.argv)}", "--acp-model",
               f"--acp-report-dir={report_dir}", f"--junitxml={junit}", "-p", "no:cacheprovider", "-q", SLOW_START]
        run = run_and_read(cmd, tmp_path, report_dir, junit, timeout=1800, env=without_credentials(tmp_path / "home"))
        assert (run.report_dir / "transcripts" / "model-requests.jsonl").is_file(), \
            f"{target} never called the scripted model; output:\n{run.output[-3000:]}"
    elif t.side == "agent":
        run = run_suite(list(t.argv), tmp_path, SLOW_START, timeout=1800)
    else:
        run = run_client_suite(t.argv, tmp_path, SLOW_START)
    assert run.report is not None, f"no report.json was written; output:\n{run.output[-3000:]}"
    assert run.report["target"]["side"] == t.side, run.report["target"]
    problems = verdict_problems(run.report, expected)
    kind = run.report["verdict"].get("reason_kind")
    if kind != expected_reason_kind(target):
        problems.append(f"verdict.reason_kind: expected {expected_reason_kind(target)}, observed {kind} "
                        f"({run.report['verdict'].get('reason')})")
    rec, observed = recorded_revisions(target), run.report["verdict"].get("revisions") or {}
    for rev in target_revisions(target):  # the verdict under each ACP revision, from the same run
        # a row whose status depends on timing ([fail, pass]) may block one run and not the next
        timing = set(revision_verdicts(target)["maybe"][rev])
        if rev in observed and observed[rev]["conformant"] != rec.get(rev) and not (
                rec.get(rev) and set(observed[rev]["blocking"]) <= timing):
            problems.append(f"the verdict under {rev}: expected conformant={rec.get(rev)}, observed "
                            f"{observed[rev]['conformant']} (blocking: {observed[rev]['blocking']})")
    ready = {r["id"] for r in run.report["verdict"].get("preview_readiness") or []}
    if not ready <= set(rec.get("readiness", [])):
        problems.append(f"Preview readiness: observed {sorted(ready)}, recorded {rec.get('readiness')}")
    assert not problems, (
        f"interop target {target}: verdicts differ from tests/interop/expected.yaml "
        f"(refresh it and docs/interop.md if intended; report: {run.report_dir / 'report.json'}):\n  "
        + "\n  ".join(problems))


def test_interop_expected_is_well_formed() -> None:
    """expected.yaml names exactly the targets, valid statuses and causes, and rules of the target's side."""
    from acp_conformance.rules.catalog import load_catalog
    catalog = load_catalog()
    data = yaml.safe_load(EXPECTED_FILE.read_text()) or {}
    assert set(data) == set(TARGETS), f"expected.yaml targets {sorted(data)} != {sorted(TARGETS)}"
    for target, rules in load_expected().items():
        sides = {"agent", "both"} if TARGETS[target].side == "agent" else {"client", "both"}
        for rule, entry in rules.items():
            assert set(statuses(entry)) <= {"fail", "warn", "not-tested", "not-exercised", "pass"}, (target, rule, entry)
            assert statuses(entry) != ["pass"], (target, rule, "a rule that always passes is not listed")
            assert entry.get("cause") in {"sdk", "app", "suite"}, (target, rule, entry)
            assert str(entry.get("why", "")).strip(), (target, rule, "no why")
            if rule in catalog:  # SCHEMA-001 and the like are the project's own
                assert catalog[rule].side in sides, (target, rule, catalog[rule].side)


def target_revisions(target: str) -> tuple[str, ...]:
    """The revisions a target is judged under: v1 for a released v1 agent, else base and preview."""
    return ("v1",) if TARGETS[target].sdk == "v1" else ("base", "preview")


def revision_verdicts(target: str) -> dict:
    """What the rows of ``target`` say of its verdict under each ACP revision: ``{base, preview}`` (CONFORMANT or
    not: no blocking rule of the revision whose every recorded status blocks), ``readiness`` (the Preview rules
    that may block under preview and not under base) and ``maybe`` (per revision, the rules that may block)."""
    from acp_conformance.rules.catalog import load_catalog
    catalog = load_catalog()
    out, maybe = {}, {}
    for rev in target_revisions(target):
        rules = {rule: statuses(e) for rule, e in load_expected()[target].items()
                 if rule in catalog and catalog[rule].blocking and catalog[rule].in_revision(rev)}
        bad = {rule: [s for s in st if s in ("fail", "flaky", "not-tested")] for rule, st in rules.items()}
        out[rev] = not any(b and len(b) == len(rules[r]) for r, b in bad.items())
        maybe[rev] = [r for r, b in bad.items() if b]
    out["readiness"] = [r for r in maybe.get("preview", []) if r not in maybe.get("base", [])]
    out["maybe"] = maybe
    return out


def recorded_revisions(target: str) -> dict:
    data = yaml.safe_load(EXPECTED_FILE.read_text()) or {}
    return (data.get(target) or {}).get("_revisions") or {}


def test_interop_revisions_follow_the_rows() -> None:
    """Each target's `_revisions` (its verdict under base and preview, its Preview readiness) is what its rows say."""
    for target in TARGETS:
        rec = recorded_revisions(target)
        assert rec, (target, "no _revisions entry")
        derived = {k: v for k, v in revision_verdicts(target).items() if k != "maybe"}
        assert {**rec, "readiness": sorted(rec["readiness"])} == {**derived, "readiness": sorted(derived["readiness"])}, target


def test_interop_doc_shows_expected() -> None:
    """docs/interop.md shows the same tables as tests/interop/expected.yaml (the one source of data)."""
    names = "|".join(sorted(TARGETS, key=len, reverse=True))
    rows = set()
    for line in DOC.read_text().splitlines():
        m = re.match(rf"\|\s*({names})\s*\|\s*`?((?:V1-)?[A-Z]+-\d+)`?\s*\|\s*([a-z/-]+)\s*\|\s*([a-z]+)\s*\|", line)
        if m:
            rows.add(m.groups())
    data = {(t, rule, "/".join(statuses(e)), e["cause"]) for t, rules in load_expected().items() for rule, e in rules.items()}
    assert rows == data, f"docs/interop.md tables and expected.yaml differ: doc-only {rows - data}, yaml-only {data - rows}"


DEFECTS = INTEROP / "defects"


@pytest.mark.parametrize("scenario", sorted(DEFECTS.glob("*.yaml")), ids=lambda p: p.stem)
def test_defect_scenarios_pass_on_the_reference_agent(scenario: Path, tmp_path: Path) -> None:
    """A defect of a released agent written up as a scenario (docs/interop.md) is one a correct agent passes."""
    p = subprocess.run([sys.executable, "-m", "acp_conformance.cli", "replay", str(scenario), "--agent-cmd",
                        shlex.join([sys.executable, "-m", "acp_conformance.reference.agent"]),
                        "--report-dir", str(tmp_path / "r")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "PASSED" in p.stdout, p.stdout + p.stderr


@pytest.mark.parametrize("scenario", sorted(DEFECTS.glob("*.yaml")), ids=lambda p: p.stem)
def test_defect_scenarios_reproduce_on_the_released_agent(scenario: Path, tmp_path: Path) -> None:
    if not os.environ.get("ACP_INTEROP"):
        pytest.skip("interop runs are opt-in: bash tests/interop/install.sh && ACP_INTEROP=1 pytest tests/test_interop.py")
    require_sdk("claude-agent-acp")
    target = next(name for name in ADAPTER_VERSIONS if scenario.name.startswith(name))
    rules = re.findall(r"rules: \[([A-Z0-9, -]+)\]", scenario.read_text())
    # --timeout 30: the adapter starts Claude Code for a resume, which took over 5 s (the default) beside the
    # other interop runs; the defect is the answer's error code, not its delay
    p = subprocess.run([sys.executable, "-m", "acp_conformance.cli", "replay", str(scenario), "--agent-cmd",
                        shlex.join(TARGETS[target].argv), "--report-dir", str(tmp_path / "r"), "--timeout", "30"],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, **without_credentials(tmp_path / "home")})
    assert p.returncode == 1 and "REPRODUCED" in p.stdout, p.stdout + p.stderr
    for rule in rules[0].split(", "):
        assert f"{rule} failed" in p.stdout, p.stdout
