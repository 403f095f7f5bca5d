"""Which protocol version the target speaks, learnt once before collection so that the run collects the scenarios
of that version (scenarios/<side> or scenarios/<side>_v1). An agent: one initialize asking for the latest version
the suite judges, its answer read as the monitors read it (protocol/versions.py ``negotiated``). A client speaks
first: it is started once against a stand-in agent that hangs up on its first initialize, whose protocolVersion
(the latest the client supports) says which. The answer is kept in the report directory, so xdist workers and the
controller agree."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from ..protocol.versions import negotiated

PROBE_FILE = ".acp-protocol.json"  # {"protocol": 1|2}: the controller's answer, for the xdist workers
HELLO = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": 2, "capabilities": {}, "clientCapabilities": {},
                    "info": {"name": "acp-conformance", "version": "probe"}}}


def spoken_version(argv: list[str], env: Mapping[str, str], cwd: str | None, timeout: float, report_dir: Path,
                   worker: bool) -> int:
    """1 or 2: the version the agent answers in (2 when it does not answer at all: the first test then says why)."""
    return _kept_or_probed(report_dir, worker, lambda: _probe(argv, env, cwd, timeout) or 2)


def client_version(template: list[str], extra_args: list[str], env: Mapping[str, str], cwd: str | None,
                   timeout: float, report_dir: Path, worker: bool) -> int:
    """1 when the client's first initialize asks for protocolVersion 1, else 2 (a client that sends none: the
    first test then says why)."""
    return _kept_or_probed(report_dir, worker, lambda: _probe_client(template, extra_args, env, cwd, timeout))


def _kept_or_probed(report_dir: Path, worker: bool, probe: Callable[[], int]) -> int:
    """An xdist worker reads the controller's answer from the report directory; the controller probes and keeps it."""
    kept = report_dir / PROBE_FILE
    if worker and kept.exists():
        try:
            return int(json.loads(kept.read_text())["protocol"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    version = probe()
    if not worker:
        kept.write_text(json.dumps({"protocol": version}))
    return version


def _probe_client(template: list[str], extra_args: list[str], env: Mapping[str, str], cwd: str | None,
                  timeout: float) -> int:
    import anyio

    from ..scenarios.client_runner import ClientRunner
    from ..scenarios.model import Scenario, Step
    from ..scenarios.runner import RunSettings, TargetSpec
    from ..wire.transcript import RECEIVED
    scn = Scenario(name="protocol-probe", path=Path("probe"), rules=[], steps=[], side="client",
                   options={"quiet": 1.0})
    scn.handlers = {"initialize": [Step("exit", {}, 0)]}  # type: ignore[attr-defined]
    settings = RunSettings(timeout=timeout, startup_timeout=timeout, test_timeout=timeout * 2, shutdown_grace=1.0)
    with tempfile.TemporaryDirectory(prefix="acp-probe-") as tmp, \
            tempfile.TemporaryDirectory(prefix="acp-sock-") as sock:
        runner = ClientRunner(scn, TargetSpec(list(template), dict(env), list(extra_args)), settings,
                              Path(cwd or tmp), Path(sock))
        try:
            result = anyio.run(runner.run)
        except Exception:  # noqa: BLE001 - the run's own start reports a client that cannot be started
            return 2
    for f in result.transcript.frames:
        m = f.msg
        if f.direction == RECEIVED and isinstance(m, dict) and m.get("method") == "initialize":
            p = m.get("params")
            return 1 if isinstance(p, dict) and p.get("protocolVersion") == 1 else 2
    return 2


def _probe(argv: list[str], env: Mapping[str, str], cwd: str | None, timeout: float) -> int | None:
    with tempfile.TemporaryDirectory(prefix="acp-probe-") as tmp:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    cwd=cwd or tmp, env={**os.environ, **env}, start_new_session=True)
        except OSError:
            return None  # the run's own start reports it
        try:
            proc.stdin.write((json.dumps(HELLO) + "\n").encode())
            proc.stdin.flush()
            return _answer(proc, timeout)
        except OSError:
            return None
        finally:
            _stop(proc)


def _answer(proc: subprocess.Popen, timeout: float) -> int | None:
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline, buf = time.monotonic() + timeout, b""
    while time.monotonic() < deadline:
        if not sel.select(max(0.0, deadline - time.monotonic())):
            break
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            msg: Any = _json(line)
            if isinstance(msg, dict) and msg.get("id") == 1 and "method" not in msg:
                return negotiated(msg)
    return None


def _json(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()
