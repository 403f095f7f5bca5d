"""``acp-conformance tap [OPTIONS] -- AGENT ARGS...``: a transparent stdio proxy between an editor and its agent.

The editor launches tap as its agent; tap launches the agent and forwards every byte both ways,
unchanged and in order, as soon as it is read (no framing on the forwarding path: a partial line
goes through as it came). Two threads forward, one per direction; each hands a copy of what it
forwarded to a queue, and a third thread writes the copies to the judging process (``judge.py``),
which frames, judges and reports. Nothing of tap's own ever goes to the agent's stdin or the
editor's stdout. The agent's stderr goes on to tap's (the editor's) unchanged, its copy kept beside the
transcript; ``--live`` findings go to the same stderr.

The end: when the agent exits tap waits for its output to drain, tells the judge how it ended, waits
for the reports and exits with the agent's status (killed by a signal: tap kills itself with that
signal), so the editor sees what it would have seen. SIGINT, SIGTERM and SIGHUP sent to tap are
passed on to the agent, whose exit then ends the session the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..protocol.revisions import names as revision_names, schema_ref as revision_schema_ref
from .judge import DATA_TO_AGENT, DATA_TO_CLIENT, EVENT, FACTS, STDERR, record

CHUNK = 1 << 16
SWITCH_INTERVAL = 0.0002  # seconds a forwarding thread woken by its pipe may wait for the interpreter lock
DRAIN_AFTER_EXIT = 2.0  # seconds the agent's stdout may stay open after it exited (a grandchild holds it)
SLOW_JUDGE = 2.0  # seconds after the agent's exit before tap says it is waiting for the report
EXIT_GRACE = 10.0  # seconds an agent may take to exit once its stdin is closed (the rule allows 5), then SIGTERM
KILL_GRACE = 5.0  # then SIGKILL


class TapUsage(Exception):
    """A usage error: one sentence, exit status 2."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="acp-conformance tap", usage="acp-conformance tap [OPTIONS] -- AGENT ARGS...")
    p.add_argument("--report-dir", metavar="DIR", default=None,
                   help="where the reports go (default: a new reports/tap/<UTC time>-<pid> folder per session)")
    p.add_argument("--live", metavar="FILE", nargs="?", const="-", default=None,
                   help="one line per failure or warning as it is found: on stderr (the default) or appended to FILE")
    p.add_argument("--junitxml", metavar="FILE", default=None, help="also write a JUnit XML file")
    p.add_argument("--strict", action="store_true", help="SHOULD-level failures count against conformance too")
    p.add_argument("--no-redact", action="store_true", help="keep secrets (tokens, keys) in the reports")
    p.add_argument("--acp-schema", metavar="PATH", default=None, help="another ACP v2 JSON Schema")
    p.add_argument("--acp-revision", choices=revision_names(), default=None,
                   help="the ACP v2 revision whose verdict sets the exit status: base (v2 as released) or preview "
                        "(the default); the reports show both and the Preview readiness")
    p.add_argument("--quiet", action="store_true", help="no verdict line on stderr when the session ends")
    p.add_argument("--wire-log", action="store_true",
                   help="also write wire.log: every frame's exact bytes in check's plain log format (NOT redacted)")
    p.add_argument("--exit-grace", metavar="S", type=float, default=EXIT_GRACE,
                   help=f"seconds the agent may take to exit once the editor closed its stdin, before SIGTERM "
                        f"(then {KILL_GRACE:g} s more before SIGKILL; default {EXIT_GRACE:g})")
    return p


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if any(a in ("-h", "--help") for a in argv[:argv.index("--") if "--" in argv else len(argv)]):
        parser().print_help()
        raise SystemExit(0)
    if "--" not in argv:
        raise TapUsage("give the agent's command after --, e.g. acp-conformance tap -- my-agent --acp")
    i = argv.index("--")
    opts, cmd = argv[:i], argv[i + 1:]
    if not cmd:
        raise TapUsage("no agent command after --")
    try:
        a = parser().parse_args(opts)
    except SystemExit as e:
        raise TapUsage("") if e.code else e  # argparse has said what is wrong
    if not a.exit_grace > 0:
        raise TapUsage(f"--exit-grace must be a positive number of seconds (got {a.exit_grace!r})")
    if len(cmd) == 1 and " " in cmd[0]:  # one word holding a whole command line, as some editors pass it
        import shlex
        cmd = shlex.split(cmd[0])
    return a, cmd


def default_report_dir() -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return Path("reports") / "tap" / f"{stamp}-{os.getpid()}"


def _die_with_parent() -> None:
    """In the agent's process, before it runs (Linux): an editor that kills tap outright (SIGKILL, which tap
    cannot pass on) kills the agent with it, as it would have without tap. Started before any thread is."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class Tap:
    def __init__(self, cmd: list[str], a: argparse.Namespace, report_dir: Path):
        self.cmd, self.a, self.report_dir = cmd, a, report_dir
        self.copies: queue.SimpleQueue = queue.SimpleQueue()
        self.agent: subprocess.Popen | None = None
        self.judge: subprocess.Popen | None = None
        self.ended_by: str | None = None  # the signal that ended the session, if one did

    def tee(self, kind: bytes, payload: bytes) -> None:
        self.copies.put(record(kind, time.monotonic(), payload))

    def tee_event(self, name: str, **detail) -> None:
        self.tee(EVENT, json.dumps({"name": name, "detail": detail}).encode())

    # -- the threads ---------------------------------------------------------------------------
    def _forward(self, src: int, dst: int, kind: bytes, on_eof, on_broken) -> None:
        while True:
            try:
                data = os.read(src, CHUNK)
            except OSError:
                data = b""
            if not data:
                on_eof()
                return
            # the copy is queued before the bytes go on: an answer can then never be queued before the
            # request it answers (the other direction's thread queues the answer only once it has read it)
            self.tee(kind, data)
            try:
                _write_all(dst, data)
            except OSError:  # the reader is gone: it sees what it would have seen (a closed pipe)
                on_broken()
                return

    def _to_agent_eof(self) -> None:
        self.tee_event("stdin-closed")
        self._close(self.agent.stdin)
        threading.Thread(target=self._reap, name="tap-reaper", daemon=True).start()

    def _reap(self) -> None:
        """The editor closed the agent's stdin (or went away): an agent that does not exit is stopped as the
        suite stops its targets (SIGTERM, then SIGKILL), so that tap, and the report, do not wait forever."""
        for sig, grace in ((signal.SIGTERM, self.a.exit_grace), (signal.SIGKILL, KILL_GRACE)):
            try:
                self.agent.wait(grace)
                return
            except subprocess.TimeoutExpired:
                self.tee_event("note", text=f"the agent had not exited {grace:g} s after its stdin closed: "
                                            f"{sig.name} from the tap")
                try:
                    self.agent.send_signal(sig)
                except OSError:
                    return

    def _to_client_eof(self) -> None:
        self.tee_event("eof")
        try:
            os.close(1)  # the editor sees the agent's output end
        except OSError:
            pass

    def _feeder(self) -> None:
        out = self.judge.stdin
        broken = False
        while True:
            item = self.copies.get()
            if item is None:
                break
            if broken:
                continue  # the judge died: its sentence is on stderr; the forwarding goes on regardless
            try:
                view = memoryview(item)
                while view:  # a raw pipe may take part of a write
                    view = view[out.write(view):]
            except OSError:
                broken = True
        self._close(out)

    @staticmethod
    def _close(f) -> None:
        try:
            f.close()
        except OSError:
            pass

    def _on_signal(self, signum, _frame) -> None:
        if self.ended_by is None:
            self.ended_by = signal.Signals(signum).name
            self.tee_event("stdin-closed", by=f"{self.ended_by} sent to the tap (the client ended the session)")
        try:
            self.agent.send_signal(signum)
        except (OSError, ProcessLookupError):
            pass

    # -- the session ---------------------------------------------------------------------------
    def run(self) -> int:
        config = {"report_dir": str(self.report_dir), "live": self.a.live, "strict": self.a.strict,
                  "redact": not self.a.no_redact, "argv": self.cmd, "revision": self.a.acp_revision,
                  "schema": self.a.acp_schema or revision_schema_ref(self.a.acp_revision),
                  "junitxml": str(Path(self.a.junitxml).resolve()) if self.a.junitxml else None,
                  "quiet": self.a.quiet, "wire_log": self.a.wire_log}
        try:
            self.agent = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, bufsize=0, preexec_fn=_die_with_parent)
        except OSError as e:  # before the judge starts: no empty report of a session that never was
            raise TapUsage(f"cannot start the agent {self.cmd[0]!r} ({e.strerror or e})") from None
        # its own session: a Ctrl-C or a signal to the editor's process group must not cost the report
        self.judge = subprocess.Popen([sys.executable, "-m", "acp_conformance.tap.judge", json.dumps(config)],
                                      stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True,
                                      bufsize=0)  # unbuffered: the judge sees each copy now, not at the end
        self.tee_event("start", argv=self.cmd, pid=self.agent.pid)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            # one the editor had ignored (nohup, a background job) stays ignored: the agent inherited that too,
            # and a tap that caught it would pass it to an agent that ignores it, and wait for ever
            if signal.getsignal(sig) is not signal.SIG_IGN:
                signal.signal(sig, self._on_signal)
        feeder = threading.Thread(target=self._feeder, name="tap-judge-feed", daemon=True)
        feeder.start()
        agent_in, agent_out = self.agent.stdin.fileno(), self.agent.stdout.fileno()

        def stop_reading_client() -> None:  # the agent no longer reads: the editor's writes fail as they would
            self.tee_event("note", text="the agent's stdin is closed; the client's further writes fail")
            os.close(0)

        def stop_reading_agent() -> None:
            self.tee_event("note", text="the client no longer reads; the agent's further writes fail")
            self._close(self.agent.stdout)

        up = threading.Thread(target=self._forward, daemon=True, name="tap-client-to-agent",
                              args=(0, agent_in, DATA_TO_AGENT, self._to_agent_eof, stop_reading_client))
        down = threading.Thread(target=self._forward, daemon=True, name="tap-agent-to-client",
                                args=(agent_out, 1, DATA_TO_CLIENT, self._to_client_eof, stop_reading_agent))
        err = threading.Thread(target=self._forward, daemon=True, name="tap-agent-stderr",
                               args=(self.agent.stderr.fileno(), 2, STDERR, lambda: None,
                                     lambda: self._close(self.agent.stderr)))
        up.start()
        down.start()
        err.start()
        rc = self.agent.wait()
        down.join(DRAIN_AFTER_EXIT)
        sig = -rc if rc < 0 else None
        self.tee_event("exit", returncode=rc, signal=signal.Signals(sig).name if sig else None)
        end = (f"ended by {self.ended_by}" if self.ended_by else "the agent exited") + \
              (f" (killed by {signal.Signals(sig).name})" if sig else f" (status {rc})")
        self.tee(FACTS, json.dumps({"exit": {"returncode": rc, "signal": signal.Signals(sig).name if sig else None},
                                    "end": end,
                                    "proxy_peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}).encode())
        self.copies.put(None)
        deadline = time.monotonic() + SLOW_JUDGE
        feeder.join(SLOW_JUDGE)
        try:
            self.judge.wait(0 if feeder.is_alive() else max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:  # a burst is judged after it was forwarded: say why tap is still here
            if not self.a.quiet:
                print(f"acp-conformance tap: the agent has exited (status {rc}); the judge is finishing the report "
                      f"in {self.report_dir}", file=sys.stderr, flush=True)
        feeder.join()
        self.judge.wait()
        return rc


def exit_like(rc: int) -> int:
    """Exit as the agent did: its status, or its death by the same signal."""
    if rc < 0:
        sig = -rc
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):  # SIGKILL, SIGSTOP: no handler to reset, and none can stop them
            pass
        try:  # a signal that dumps core (SIGSEGV, SIGABRT...): the agent's core is the one worth having, not tap's
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        except (OSError, ValueError):
            pass
        sys.stdout.flush()
        os.kill(os.getpid(), sig)
        return 128 + sig  # the signal was blocked or ignored after all
    return rc


def run_tap(argv: list[str]) -> int:
    try:
        a, cmd = parse(argv)
        report_dir = Path(a.report_dir) if a.report_dir else default_report_dir()
        try:
            report_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise TapUsage(f"--report-dir: cannot create {str(report_dir)!r} ({e.strerror or e})") from None
        if a.live and a.live != "-":
            try:
                open(a.live, "a").close()
            except OSError as e:
                raise TapUsage(f"--live: cannot write {a.live!r} ({e.strerror or e})") from None
        sys.stdout = sys.stderr  # nothing of tap's own may reach the editor's stdout, not even a stray print
        sys.setswitchinterval(SWITCH_INTERVAL)  # the default is 5 ms
        rc = Tap(cmd, a, report_dir.resolve()).run()
    except TapUsage as e:
        if str(e):
            print(f"acp-conformance tap: {e}", file=sys.stderr)
        return 2
    except SystemExit as e:  # --help
        return 0 if not e.code else 2
    return exit_like(rc)
