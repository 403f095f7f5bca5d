"""A stand-in agent for the byte-transparency tests of tap: it writes the bytes of OUT_FILE to stdout before it
reads anything (in uneven pieces, so lines reach the proxy cut anywhere), copies its stdin to IN_FILE until
end of input, then exits with STATUS.

    python byte_agent.py OUT_FILE IN_FILE STATUS [ERR_FILE]

With ERR_FILE, its bytes go to stderr first.
"""

import os
import sys


def main() -> int:
    out_file, in_file, status = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if len(sys.argv) > 4:
        with open(sys.argv[4], "rb") as fh:
            os.write(2, fh.read())
    with open(out_file, "rb") as fh:
        data = fh.read()
    i, step = 0, 1
    while i < len(data):  # pieces of 1, 2, 4 ... bytes up to 1 MB, so that partial lines go out
        os.write(1, data[i:i + step])
        i += step
        step = min(step * 2, 1 << 20)
    with open(in_file, "wb") as out:
        while True:
            chunk = os.read(0, 1 << 16)
            if not chunk:
                break
            out.write(chunk)
    return status


if __name__ == "__main__":
    sys.exit(main())
