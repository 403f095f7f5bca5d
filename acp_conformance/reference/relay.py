"""The relay: what a client under test launches as its agent, so that the suite can play that agent.

``python -m acp_conformance.reference.relay --connect ADDRESS`` connects to the suite (ADDRESS is
a Unix socket path, or a loopback TCP port number) and carries bytes unchanged in both directions:
its stdin to the socket, the socket to its stdout. It never parses, adds or drops a byte, so the
suite sees exactly what the client wrote. When the client closes the relay's stdin (or kills the
relay), the suite sees the connection close; when the suite ends its side, the relay closes its
stdout and exits, which the client sees as its agent exiting. Standard library only.
"""

from __future__ import annotations

import os
import socket
import sys
import threading

CHUNK = 1 << 16


def connect(address: str) -> socket.socket:
    if address.isdigit():
        return socket.create_connection(("127.0.0.1", int(address)))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(address)
    return s


def _stdin_to_socket(sock: socket.socket, done: threading.Event) -> None:
    fd = sys.stdin.fileno()
    try:
        while True:
            data = os.read(fd, CHUNK)
            if not data:
                break
            sock.sendall(data)
    except OSError:
        pass
    finally:
        try:
            sock.shutdown(socket.SHUT_WR)  # the suite sees the client close its agent's stdin
        except OSError:
            pass
        done.set()


def _socket_to_stdout(sock: socket.socket, done: threading.Event) -> None:
    fd = sys.stdout.fileno()
    try:
        while True:
            data = sock.recv(CHUNK)
            if not data:
                break
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
    except OSError:
        pass
    finally:
        done.set()


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or args[0] != "--connect":
        print("usage: python -m acp_conformance.reference.relay --connect SOCKET_PATH_OR_PORT", file=sys.stderr)
        return 2
    try:
        sock = connect(args[1])
    except OSError as e:
        print(f"acp-conformance relay: cannot connect to the suite at {args[1]}: {e}", file=sys.stderr)
        return 1
    done = threading.Event()
    for target in (_stdin_to_socket, _socket_to_stdout):
        threading.Thread(target=target, args=(sock, done), daemon=True).start()
    done.wait()  # either side ended: an agent whose stdin closed exits, and so does one whose suite left
    try:
        sock.close()
    except OSError:
        pass
    os._exit(0)  # the other pump may be blocked in a read; nothing is buffered in this process


if __name__ == "__main__":
    sys.exit(main())
