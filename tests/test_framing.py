"""The one newline framing every reader of the wire uses (transports and the tap's judge)."""

from __future__ import annotations

import random

from acp_conformance.wire.framing import LineSplitter


def _split(chunks, max_bytes=None):
    out = []
    s = LineSplitter(lambda line, oversize: out.append((line, oversize)), max_bytes)
    for c in chunks:
        s.feed(c)
    return out, s.end()


def test_lines_come_out_whole_however_the_reads_cut_them():
    data = b'{"a":1}\n\n{"b":"x\\ny"}\r\n' + b"z" * 1000 + b"\nrest"
    rnd = random.Random(7)
    for _ in range(50):
        cuts = sorted(rnd.sample(range(1, len(data)), rnd.randint(0, 12)))
        chunks = [data[i:j] for i, j in zip([0, *cuts], [*cuts, len(data)])]
        lines, rest = _split(chunks)
        assert [ln for ln, _ in lines] == [b'{"a":1}', b"", b'{"b":"x\\ny"}\r', b"z" * 1000]
        assert rest == b"rest" and not any(o for _, o in lines)


def test_a_line_past_the_limit_is_cut_and_said_so():
    lines, rest = _split([b"x" * 10, b"x" * 10, b"yy\nok\n"], max_bytes=15)
    assert lines == [(b"x" * 20, True), (b"yy", False), (b"ok", False)] and rest is None
