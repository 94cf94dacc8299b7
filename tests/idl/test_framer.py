"""The client framer (`jsonrpc.session.Framer`): messages and streamed rows come out
exactly as a whole-message parse would give them, however the bytes are cut, and the
bytes of streamed rows are not kept."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from pyovsdb.jsonrpc.session import Framer
from pyovsdb.jsonrpc.stream import FramingError


class Sink:
    def __init__(self, index: int | None, accept: bool = True) -> None:
        self.index = index
        self.accept = accept
        self.header: list[Any] | None = None
        self.rows: dict[str, dict[str, Any]] = {}

    def start(self, header: list[Any]) -> bool:
        self.header = header
        return self.accept

    def row(self, table: str, uuid: str, update: Any) -> None:
        assert uuid not in self.rows.get(table, {})
        self.rows.setdefault(table, {})[uuid] = update


def uuid(i: int) -> str:
    return f"{i:08x}-0000-4000-8000-{i:012x}"


def table_updates(n: int, rng: random.Random, tables: tuple[str, ...] = ("A", "B")) -> Any:
    out: dict[str, Any] = {}
    for t in tables:
        rows = {}
        for i in range(n):
            kind = rng.choice(["initial", "insert", "modify", "delete"])
            body: Any = None if kind == "delete" else {
                "name": rng.choice(["x", 'q"uote', "back\\slash", '}},"' + uuid(i) + '":{',
                                    "ünïcode", ""]),
                "n": rng.randrange(-5, 10**12),
                "r": rng.random(),
                "m": ["map", [[f"k{j}", f"v{j}"] for j in range(rng.randrange(4))]],
                "s": ["set", [["uuid", uuid(j)] for j in range(rng.randrange(3))]],
                "deep": [[[[[[[[["x"]]]]]]]]],
            }
            rows[uuid(i + (1000 if t == "B" else 0))] = {kind: body}
        out[t] = rows
    return out


def feed_in_pieces(framer: Framer, data: bytes, rng: random.Random) -> None:
    pos = 0
    while pos < len(data):
        n = rng.choice([1, 2, 3, 17, 100, 999, 4096, 1 << 16])
        framer.feed(data[pos:pos + n])
        pos += n


@pytest.mark.parametrize("seed", range(6))
def test_streamed_rows_equal_whole_parse(seed: int) -> None:
    rng = random.Random(seed)
    updates = table_updates(40, rng)
    reply = {"id": 7, "result": [False, uuid(1), updates], "error": None}
    note = {"id": None, "method": "update3", "params": [["monid", "db"], uuid(2), updates]}
    note2 = {"method": "update2", "params": [["monid", "_Server"], {"T": {}}], "id": None}
    others = [{"id": 8, "result": {"a": [1, 2, {"b": None}]}, "error": None},
              {"id": "echo", "method": "echo", "params": []}]
    data = b"".join(orjson.dumps(m) for m in [reply, note, note2, *others])
    if seed % 2:  # whitespace and newlines between tokens, as other encoders write
        data = b"\n".join(orjson.dumps(m, option=orjson.OPT_INDENT_2)
                          for m in [reply, note, note2, *others])
    out: list[Any] = []
    reply_sink = Sink(2)
    note_sinks: list[Sink] = []

    def notify_sink(method: str) -> Sink:
        s = Sink(2 if method == "update3" else 1, accept=method == "update3")
        note_sinks.append(s)
        return s

    framer = Framer(out.append, lambda i: reply_sink if i == 7 else None, notify_sink,
                    whole_at_most=0)  # (every message cut by a read streamed)
    feed_in_pieces(framer, data, rng)
    assert len(out) == 5
    assert out[0]["id"] == 7 and out[0]["result"][:2] == [False, uuid(1)]
    assert out[0]["result"][2] is reply_sink
    assert reply_sink.header == [False, uuid(1)]
    assert reply_sink.rows == updates
    assert out[1]["params"][2] is note_sinks[0] and note_sinks[0].rows == updates
    assert out[2] == note2  # the sink declined: parsed normally
    assert out[3:] == others
    assert framer.buf == bytearray()


def test_consumed_bytes_are_dropped_while_streaming() -> None:
    updates = {"T": {uuid(i): {"initial": {"name": "x" * 100}} for i in range(50_000)}}
    data = orjson.dumps({"id": 1, "result": updates, "error": None})
    sink = Sink(None)
    framer = Framer(lambda m: None, lambda i: sink, lambda m: None)
    peak = 0
    for pos in range(0, len(data), 1 << 16):
        framer.feed(data[pos:pos + (1 << 16)])
        peak = max(peak, len(framer.buf))
    assert len(sink.rows["T"]) == 50_000
    assert len(data) > 6_000_000 and peak < 1_500_000


def test_a_table_ending_in_a_read_is_not_parsed_again_at_every_row(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A read that holds the end of one table's rows and the start of the next: the
    bulk parse up to the last row boundary fails (that boundary is in the next table),
    the rest of the table is taken row by row, and the bulk parse is tried again only
    past that boundary. Before, every row of the rest tried it again: a parse, and an
    error holding the text, of up to a whole read per row."""
    import pyovsdb.jsonrpc.session as session

    n = 2000
    updates = {t: {uuid(i + k): {"initial": {"name": "x" * 40}} for i in range(n)}
               for t, k in (("A", 0), ("B", n))}
    data = orjson.dumps({"id": 1, "result": updates, "error": None})
    failures = 0
    real = orjson.loads

    def loads(text: Any) -> Any:
        nonlocal failures
        try:
            return real(text)
        except orjson.JSONDecodeError:
            failures += 1
            raise

    monkeypatch.setattr(session.orjson, "loads", loads)
    sink = Sink(None)
    framer = Framer(lambda m: None, lambda i: sink, lambda m: None, whole_at_most=0)
    quarter = len(data) // 4  # (half of table A's rows, and its end, in the second read)
    framer.feed(data[:quarter])
    framer.feed(data[quarter:])
    assert sink.rows == updates
    assert failures <= 4, failures


def test_result_before_id_is_parsed_whole() -> None:
    """No server writes it, but the order of members is free in JSON."""
    sink = Sink(None)
    out: list[Any] = []
    framer = Framer(out.append, lambda i: sink, lambda m: None)
    framer.feed(b'{"result": {"T": {"%s": {"initial": {}}}}, "id": 3, "error": null}'
                % uuid(1).encode())
    assert out == [{"result": {"T": {uuid(1): {"initial": {}}}}, "id": 3, "error": None}]
    assert sink.rows == {}


def test_row_boundary_lookalike_inside_a_string() -> None:
    tricky = '"},"' + uuid(9) + '":{"insert":{}}'
    updates = {"T": {uuid(1): {"insert": {"s": tricky}}, uuid(2): {"insert": {"s": "y"}}}}
    data = orjson.dumps({"id": 1, "result": updates, "error": None})
    for cut in range(1, len(data)):
        sink = Sink(None)
        framer = Framer(lambda m: None, lambda i, s=sink: s, lambda m: None,
                        whole_at_most=0)  # (every message cut by a read streamed)
        framer.feed(data[:cut])
        framer.feed(data[cut:])
        assert sink.rows == updates, cut


@pytest.mark.parametrize("data", [
    b'"just a string"',
    b'{"id": 1, "result": [1, 2}',
    b'{"id": 1 "result": 2}',
    b'{"id": 1, "result": {"T": {"x": {"insert": {]}}}}',
])
def test_bad_input_raises(data: bytes) -> None:
    framer = Framer(lambda m: None, lambda i: Sink(None), lambda m: None)
    with pytest.raises(FramingError):
        framer.feed(data)


def test_size_and_depth_limits() -> None:
    framer = Framer(lambda m: None, lambda i: None, lambda m: None, max_size=1000)
    with pytest.raises(FramingError):
        framer.feed(b'{"id": 1, "result": "' + b"x" * 2000)
    framer = Framer(lambda m: None, lambda i: None, lambda m: None, max_depth=50,
                    whole_at_most=0)
    with pytest.raises(FramingError):
        framer.feed(b'{"id": 1, "result": ' + b"[" * 100)


def test_whole_messages_in_one_read_come_out_in_order() -> None:
    """A read of several whole messages (an update and the reply after it), one with
    `}{` in a string, one not ASCII, the last cut by the end of the read: each comes
    out once, in order, as parsed whole, whichever path frames it."""
    msgs = [{"id": None, "method": "update3", "params": [["m", "db"], uuid(1), {}]},
            {"id": 4, "result": [{"uuid": ["uuid", uuid(2)]}, {"details": "}{"}],
             "error": None},
            {"id": 5, "result": [{"name": "ünïcode"}], "error": None},
            {"id": 6, "result": [], "error": None},
            {"id": 7, "result": [{"count": 1}], "error": None}]
    data = b"".join(orjson.dumps(m) for m in msgs[:2]) + b"\n" + \
        b" ".join(orjson.dumps(m) for m in msgs[2:])
    for cut in (len(data), len(data) - 5):
        out: list[Any] = []
        framer = Framer(out.append, lambda i: None, lambda m: None)
        framer.feed(data[:cut])
        assert out == msgs[:5 if cut == len(data) else 4]
        framer.feed(data[cut:])
        assert out == msgs
        assert framer.buf == bytearray()


def test_a_message_cut_by_reads_is_parsed_whole_below_the_bound() -> None:
    """A message cut by the end of a read is kept and parsed whole once it ends, up to
    `whole_at_most` bytes (a node's SB echo in two reads costs one parse, not a
    framing row by row); a longer one streams its rows to the sink as they come."""
    updates = {"T": {uuid(i): {"insert": {"name": "x" * 50}} for i in range(200)}}
    data = orjson.dumps({"id": None, "method": "update3",
                         "params": [["monid", "db"], uuid(1), updates]})
    reply = orjson.dumps({"id": 4, "result": [{}], "error": None})
    for bound, streamed in ((len(data) + 1, False), (len(data) // 2, True)):
        out: list[Any] = []
        sink = Sink(2)
        framer = Framer(out.append, lambda i: None, lambda m, s=sink: s, whole_at_most=bound)
        for pos in range(0, len(data), 3000):
            framer.feed(data[pos:pos + 3000])
            assert out == [] or pos + 3000 >= len(data)
        framer.feed(reply)
        assert [m.get("id") for m in out] == [None, 4]
        if streamed:
            assert out[0]["params"][2] is sink and sink.rows == updates
        else:
            assert out[0]["params"][2] == updates and sink.rows == {}
        assert framer.buf == bytearray()
