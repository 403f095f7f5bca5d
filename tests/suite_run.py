"""Run the installed conformance suite in a subprocess, from a directory outside the repo, the way
a vendor would, and read back what it wrote."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_AGENT = [sys.executable, "-m", "acp_conformance.reference.agent"]
MUTANT_SCRIPT = ROOT / "tests" / "mutants" / "agent_mutants.py"


def mutant_cmd(name: str) -> list[str]:
    return [sys.executable, str(MUTANT_SCRIPT), name]


@dataclass
class SuiteRun:
    returncode: int
    output: str
    report: dict[str, Any] | None
    report_dir: Path
    junit: Path

    def status(self, rule_id: str) -> str:
        return self.rule(rule_id)["status"]

    def rule(self, rule_id: str) -> dict[str, Any]:
        assert self.report is not None, f"no report.json was written; output:\n{self.output[-3000:]}"
        for r in self.report["rules"]:
            if r["id"] == rule_id:
                return r
        raise KeyError(rule_id)

    def assert_conformant(self) -> None:
        assert self.returncode == 0, self.output[-4000:]
        assert self.report["verdict"]["conformant"] is True

    def with_status(self, status: str, checked_only: bool = True) -> set[str]:
        assert self.report is not None, self.output[-3000:]
        return {r["id"] for r in self.report["rules"] if r["status"] == status and (r["checked"] or not checked_only)}


def run_suite(agent_argv: list[str], workdir: Path, *extra: str, timeout: float = 300,
              env: dict[str, str] | None = None) -> SuiteRun:
    """``env``: variables added to the suite's environment (e.g. GITHUB_STEP_SUMMARY)."""
    workdir.mkdir(parents=True, exist_ok=True)
    report_dir = workdir / "reports"
    junit = workdir / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", f"--agent-cmd={shlex.join(agent_argv)}",
           f"--acp-report-dir={report_dir}", f"--junitxml={junit}", "-p", "no:cacheprovider", "-q", *extra]
    return run_and_read(cmd, workdir, report_dir, junit, timeout=timeout, env=env)


def run_and_read(cmd: list[str], workdir: Path, report_dir: Path, junit: Path, timeout: float,
                 env: dict[str, str] | None = None) -> SuiteRun:
    """Run one suite command line in ``workdir`` and read back what it wrote (agent or client side)."""
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **env} if env else None)
    report_file = report_dir / "report.json"
    report = json.loads(report_file.read_text()) if report_file.exists() else None
    if report is not None:  # every report an end-to-end test produces must match schema/report.schema.json
        from acp_conformance.report.schema_check import report_errors
        errors = report_errors(report)
        assert not errors, f"{report_file} does not match schema/report.schema.json: {errors[:5]}"
    return SuiteRun(proc.returncode, proc.stdout + proc.stderr, report, report_dir, junit)
