"""A byte recorder for the tap tests: runs CMD, passes its stdio through and appends each direction's bytes to a
file, so that what a program wrote can be compared with what the program on the other side of tap received.

    python recorder.py UP_FILE DOWN_FILE -- CMD ARGS...

UP_FILE gets what came in on stdin (and went to CMD), DOWN_FILE what CMD wrote (and went out on stdout).
The recorder exits with CMD's status.
"""

import os
import subprocess
import sys
import threading


def pump(src: int, dst: int, record: str, close_dst) -> None:
    with open(record, "wb") as rec:
        while True:
            data = os.read(src, 1 << 16)
            if not data:
                break
            rec.write(data)
            rec.flush()
            try:
                os.write(dst, data)
            except OSError:
                break
    close_dst()


def main() -> int:
    up, down, sep, *cmd = sys.argv[1:]
    assert sep == "--"
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    t_up = threading.Thread(target=pump, args=(0, proc.stdin.fileno(), up, proc.stdin.close), daemon=True)
    t_down = threading.Thread(target=pump, args=(proc.stdout.fileno(), 1, down, lambda: os.close(1)))
    t_up.start()
    t_down.start()
    rc = proc.wait()
    t_down.join()
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main())
