"""Hostile clients: ``python hostile_client.py KIND -- {agent}``.

* ``never-connects`` - never launches its agent; sleeps.
* ``exits-at-once`` - exits with status 3 before doing anything.
* ``hangs`` - launches its agent, then never writes to it (and ignores SIGTERM).

When ``ACP_HOSTILE_PIDS`` names a file, the client appends its own pid and its agent's pid to it,
so that a test can check that nothing is left running.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading


def note(pid: int) -> None:
    path = os.environ.get("ACP_HOSTILE_PIDS")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{pid}\n")


def main() -> int:
    kind = sys.argv[1]
    agent = sys.argv[sys.argv.index("--") + 1:]
    if len(agent) == 1:
        agent = shlex.split(agent[0])
    note(os.getpid())
    if kind == "exits-at-once":
        return 3
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if kind == "hangs":
        # its own session, so that only the suite's relay bookkeeping (not the process group) can reach it
        proc = subprocess.Popen(agent, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        note(proc.pid)
    threading.Event().wait()  # forever
    return 0


if __name__ == "__main__":
    sys.exit(main())
