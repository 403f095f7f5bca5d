"""Interop targets: small ACP v2 agents written by us on the two official SDKs, run under the suite.

The verdicts recorded in tests/interop/expected.yaml (explained in docs/interop.md) are asserted
exactly: every checked rule listed there must have that status, every other checked rule must pass
(or skip, for capabilities the target does not advertise). A change in the suite or in an SDK
therefore shows up here; refresh expected.yaml and docs/interop.md together when it is intended.

The SDKs come from the public registries via tests/interop/install.sh; without them (no node, no
network) these tests skip. They try the install script once (300 s timeout) before skipping.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml

from suite_run import ROOT, run_suite

INTEROP = ROOT / "tests" / "interop"
EXPECTED_FILE = INTEROP / "expected.yaml"
DOC = ROOT / "docs" / "interop.md"
TS_SDK_VERSION = "2.4.0"
PY_SDK_VERSION = "1.0.0rc3"
PY_VENV_PYTHON = INTEROP / ".venv" / "bin" / "python"
TARGETS = {
    "typescript": ["node", str(INTEROP / "ts" / "agent.mjs")],
    "python": [str(PY_VENV_PYTHON), str(INTEROP / "py" / "agent.py")],
}
OK_STATUSES = {"pass", "skip"}


def load_expected() -> dict[str, dict[str, dict]]:
    data = yaml.safe_load(EXPECTED_FILE.read_text())
    return {target: data.get(target) or {} for target in TARGETS}


def statuses(entry: dict) -> list[str]:
    status = entry["status"]
    return [status] if isinstance(status, str) else list(status)


def _missing(target: str) -> str | None:
    if target == "typescript":
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


def require_target(target: str) -> None:
    """Skip unless the target's SDK is installed; try tests/interop/install.sh once first."""
    if _missing(target) is None:
        return
    marker = Path(tempfile.gettempdir()) / f"acp-interop-install-tried-{os.getuid()}-{ROOT.stat().st_ino}"
    with open(str(marker) + ".lock", "w") as lock:  # xdist workers: one install at a time
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _missing(target) is not None and not marker.exists():
            marker.write_text("tried")
            try:
                subprocess.run(["bash", str(INTEROP / "install.sh")], capture_output=True, timeout=300)
            except subprocess.TimeoutExpired:
                pass
    reason = _missing(target)
    if reason is not None:
        pytest.skip(f"interop target {target} unavailable ({reason}); run tests/interop/install.sh")


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_interop_target_verdicts(target: str, tmp_path: Path) -> None:
    if not os.environ.get("ACP_INTEROP"):
        # a full suite run against an SDK agent takes minutes (the Python SDK spends seconds of CPU
        # importing at every start): too long for the default CI budget, so it is opt-in
        pytest.skip("interop runs are opt-in: bash tests/interop/install.sh && ACP_INTEROP=1 pytest tests/test_interop.py")
    require_target(target)
    expected = {rule: statuses(entry) for rule, entry in load_expected()[target].items()}
    # The Python SDK takes seconds of CPU to import (pydantic models): allow a slow start on a busy machine.
    run = run_suite(TARGETS[target], tmp_path, "--acp-startup-timeout=60", timeout=1800)
    assert run.report is not None, f"no report.json was written; output:\n{run.output[-3000:]}"
    observed = {r["id"]: r["status"] for r in run.report["rules"] if r["checked"] and r["status"] not in OK_STATUSES}
    checked = {r["id"]: r["status"] for r in run.report["rules"] if r["checked"]}
    problems = []
    for rule, status in sorted(expected.items()):
        if checked.get(rule) not in status:
            problems.append(f"{rule}: expected {'/'.join(status)}, observed {checked.get(rule, 'not checked')}")
    for rule, status in sorted(observed.items()):
        if rule not in expected:
            problems.append(f"{rule}: observed {status}, expected pass (not in expected.yaml)")
    assert not problems, (
        f"interop target {target}: verdicts differ from tests/interop/expected.yaml "
        f"(refresh it and docs/interop.md if intended; report: {run.report_dir / 'report.json'}):\n  "
        + "\n  ".join(problems))


def test_interop_doc_shows_expected() -> None:
    """docs/interop.md shows the same table as tests/interop/expected.yaml (the one source of data)."""
    rows = set()
    for line in DOC.read_text().splitlines():
        m = re.match(r"\|\s*(typescript|python)\s*\|\s*`?([A-Z]+-\d+)`?\s*\|\s*([a-z/-]+)\s*\|\s*([a-z]+)\s*\|", line)
        if m:
            rows.add(m.groups())
    data = {(t, rule, "/".join(statuses(e)), e["cause"]) for t, rules in load_expected().items() for rule, e in rules.items()}
    assert rows == data, f"docs/interop.md table and expected.yaml differ: doc-only {rows - data}, yaml-only {data - rows}"
