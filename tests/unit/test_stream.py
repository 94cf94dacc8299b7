"""JSON stream framing: message boundaries, arbitrary splits, limits, and linear cost."""

from __future__ import annotations

import random

import orjson
import pytest

from pyovsdb.jsonrpc import stream as stream_mod
from pyovsdb.jsonrpc.stream import FramingError, JsonStream, dumps

MESSAGES = [
    {"method": "echo", "params": [], "id": 1},
    {"id": 2, "result": [{"rows": [{"name": "a\"b\\c", "x": ["set", [1, 2]]}]}], "error": None},
    {"method": "update2", "params": ["m", {"T": {"u": {"modify": {"s": "{[}]\"\\"}}}}],
     "id": None},
    [1, 2, {"deep": [[[[[[[[["x"]]]]]]]]]}],
    {"unicode": "é€😀", "esc": "\u0001\n\t"},
]


def encoded() -> bytes:
    return b" \n".join(orjson.dumps(m) for m in MESSAGES)


def test_whole_buffer_yields_every_message() -> None:
    assert JsonStream().feed(encoded()) == MESSAGES


@pytest.mark.parametrize("seed", range(40))
def test_any_split_yields_same_messages(seed: int) -> None:
    data = encoded()
    rng = random.Random(seed)
    s = JsonStream()
    out = []
    i = 0
    while i < len(data):
        n = rng.randint(1, 9)
        out += s.feed(data[i:i + n])
        i += n
    assert out == MESSAGES
    assert s.buffered == 0


def test_byte_by_byte() -> None:
    s = JsonStream()
    out = []
    for b in encoded():
        out += s.feed(bytes([b]))
    assert out == MESSAGES


def test_split_inside_escape_sequence() -> None:
    msg = orjson.dumps({"s": 'a\\"b'})
    cut = msg.index(b"\\") + 1  # split between backslash and the escaped char
    s = JsonStream()
    assert s.feed(msg[:cut]) == []
    assert s.feed(msg[cut:]) == [{"s": 'a\\"b'}]


def test_top_level_scalar_is_rejected() -> None:
    with pytest.raises(FramingError):
        JsonStream().feed(b'"just a string"')


def test_invalid_json_is_rejected() -> None:
    with pytest.raises(FramingError):
        JsonStream().feed(b'{"a": nope}')


def test_bytes_that_are_not_utf8_are_kept_as_the_real_parser_keeps_them() -> None:
    """Invalid, overlong and encoded-surrogate bytes in a string, and a `\\u` escape of
    an unpaired trailing surrogate (its three bytes), come out as lone surrogates that
    `dumps` writes back as the same bytes, whole or split; an unpaired leading
    surrogate is still invalid JSON, as for the real parser."""
    data = (b'{"a": "x\xff\xfe", "b": ["\xc0\xaf", "\xed\xa0\x80", '
            b'"\\udcff\\ud83d\\ude00\\\\udcff"]}')
    msg = {"a": "x\udcff\udcfe", "b": ["\udcc0\udcaf", "\udced\udca0\udc80",
                                      "\udced\udcb3\udcbf\U0001f600\\udcff"]}
    assert JsonStream().feed(data) == [msg]
    s = JsonStream()
    assert s.feed(data[:9]) + s.feed(data[9:]) == [msg]
    assert [m for b in data for m in s.feed(bytes([b]))] == [msg]
    out = dumps(msg)
    assert out == (b'{"a":"x\xff\xfe","b":["\xc0\xaf","\xed\xa0\x80",'
                   b'"\xed\xb3\xbf\xf0\x9f\x98\x80\\\\udcff"]}')
    assert JsonStream().feed(out) == [msg]
    for bad in (b'["\\ud800"]', b'["\\ud800\\u0041\xff"]', b'["\xff", 01]', b'["\xff", NaN]',
                b'["\xff", 1e999]', b'["\xff\\u0000"]'):
        with pytest.raises(FramingError):
            JsonStream().feed(bad)


def test_message_size_limit() -> None:
    s = JsonStream(max_size=100)
    with pytest.raises(FramingError):
        s.feed(b'{"a": "' + b"x" * 200)
    # the stream is usable again after the error
    assert s.feed(b'{"ok": 1}') == [{"ok": 1}]


def test_nesting_limit() -> None:
    with pytest.raises(FramingError):
        JsonStream(max_depth=1000).feed(b"[" * 10000 + b"]" * 10000)


def test_scan_cost_is_linear_in_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A large message in many small reads must not be rescanned from its start: count
    the bytes handed to the scanning regex."""
    scanned = 0
    real = stream_mod._SKIP

    class Counting:
        def match(self, buf: bytearray, pos: int) -> object:
            nonlocal scanned
            m = real.match(buf, pos)
            assert m is not None
            scanned += m.end() - pos
            return m

    monkeypatch.setattr(stream_mod, "_SKIP", Counting())
    rows = {f"{i:08x}-0000-4000-8000-000000000000": {"initial": {"name": f"n{i}",
            "ports": ["set", [["uuid", "x"], ["uuid", "y"]]]}} for i in range(3000)}
    data = orjson.dumps({"id": 1, "result": {"T": rows}, "error": None})
    s = JsonStream()
    out = []
    for i in range(0, len(data), 1000):
        out += s.feed(data[i:i + 1000])
    assert len(out) == 1 and len(out[0]["result"]["T"]) == 3000
    assert scanned <= 2 * len(data)
