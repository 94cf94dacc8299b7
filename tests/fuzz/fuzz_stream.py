"""Fuzz target: JSON-RPC stream framing (`pyovsdb.jsonrpc.stream.JsonStream`).

The input is one option byte (size and depth limits, how to split) and then the bytes
received on a connection. Properties checked:
- Fed whole, in random pieces, or one byte at a time, the stream yields the same
  messages, and fails (or not) the same way: `FramingError` after the same messages.
- Nothing but `FramingError` is ever raised.
- Every message is a JSON object or array, within the limits, and `dumps` writes it
  back to text that reads as the same value (bytes that are not UTF-8 included).
- Linear work: the scanning expressions consume each received byte at most once (plus
  one byte per read, a string's trailing backslash), they are called at most once per
  byte or read, and each message is parsed once.

Run it: `python tests/fuzz/fuzz_stream.py [libFuzzer options] [corpus dirs]`
(docs/fuzzing.md).
"""

from __future__ import annotations

import contextlib
import random
import zlib
from collections.abc import Iterator
from typing import Any

from fuzzing import Choices, instrumented, run

with instrumented():
    from pyovsdb.jsonrpc import stream
    from pyovsdb.jsonrpc.stream import FramingError, JsonStream, dumps

MAX_SIZES = (48, 300, 4096, stream.DEFAULT_MAX_SIZE)
MAX_DEPTHS = (2, 6, 9, stream.DEFAULT_MAX_DEPTH)


class Work:
    """Counts what the scan does, through wrappers around its expressions."""

    def __init__(self) -> None:
        self.calls = 0
        self.consumed = 0
        self.parsed = 0

    def wrap(self, match: Any) -> Any:
        def counted(buf: Any, pos: int) -> Any:
            m = match(buf, pos)
            self.calls += 1
            self.consumed += m.end() - pos
            return m

        return counted


class _Pattern:
    def __init__(self, match: Any) -> None:
        self.match = match


@contextlib.contextmanager
def counting(work: Work) -> Iterator[None]:
    saved = (stream._SKIP, list(stream._SHALLOW), stream._STR_REST, stream._WS, stream._parse)
    real_parse = stream._parse

    def parse(buf: bytearray, start: int, end: int) -> Any:
        work.parsed += end - start
        return real_parse(buf, start, end)

    stream._SKIP = _Pattern(work.wrap(saved[0].match))  # type: ignore[assignment]
    stream._SHALLOW[:] = [work.wrap(m) for m in saved[1]]
    stream._STR_REST = _Pattern(work.wrap(saved[2].match))  # type: ignore[assignment]
    stream._WS = _Pattern(work.wrap(saved[3].match))  # type: ignore[assignment]
    stream._parse = parse
    try:
        yield
    finally:
        stream._SKIP, stream._STR_REST, stream._WS, stream._parse = (
            saved[0], saved[2], saved[3], saved[4])
        stream._SHALLOW[:] = saved[1]


def feed_all(chunks: list[bytes], max_size: int, max_depth: int
             ) -> tuple[list[Any], bool, Work]:
    """Messages up to the first error, whether there was one, and the work done."""
    s = JsonStream(max_size=max_size, max_depth=max_depth)
    out: list[Any] = []
    work = Work()
    with counting(work):
        try:
            for c in chunks:
                out += s.feed(c)
        except FramingError as e:
            return out + e.messages, True, work
    return out, False, work


def split(data: bytes, n: int) -> list[bytes]:
    rng = random.Random(zlib.crc32(data) ^ n)
    cuts = sorted(rng.sample(range(1, len(data)), min(n, len(data) - 1))) if len(data) > 1 \
        else []
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


def check(data: bytes) -> None:
    if not data:
        return
    ch = Choices(data[:1])
    max_size = ch.pick(MAX_SIZES)
    max_depth = MAX_DEPTHS[(data[0] >> 2) % len(MAX_DEPTHS)]
    n_pieces = 1 + (data[0] >> 4)
    body = data[1:]
    ways = [[body], split(body, n_pieces)]
    if len(body) <= 512:
        ways.append([bytes([b]) for b in body])
    results = [feed_all(w, max_size, max_depth) for w in ways]
    whole_msgs, whole_err, _ = results[0]
    for (msgs, err, _), w in zip(results[1:], ways[1:], strict=True):
        assert (msgs, err) == (whole_msgs, whole_err), (
            f"fed in {len(w)} pieces: {msgs!r} error={err}, whole: {whole_msgs!r} "
            f"error={whole_err}")
    for (_msgs, _err, work), w in zip(results, ways, strict=True):
        assert work.consumed <= len(body) + len(w), (work.consumed, len(body), len(w))
        assert work.calls <= 2 * (len(body) + len(w)), (work.calls, len(body), len(w))
        assert work.parsed <= len(body), (work.parsed, len(body))
    for m in whole_msgs:
        assert type(m) in (dict, list), m
        assert JsonStream().feed(dumps(m)) == [m]


def TestOneInput(data: bytes) -> None:
    check(data)


if __name__ == "__main__":
    run(TestOneInput)
