"""Bad input on the wire: malformed JSON, invalid UTF-8, deep nesting, oversized
messages, protocol violations, odd ids, wrong parameters for every method, and
transactions that must fail as a whole.

Each input goes to our server as a real process; after it, a bystander client must
still commit (`Watch.canary`), no row of a refused transaction may exist, and the log
may hold no internal error. Where the real ovsdb-server's behaviour is the reference, the
same input goes to it and the outcome (answered, or connection closed) must match,
except for the differences listed in `KNOWN`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from robust_helpers import (
    DB,
    Outcome,
    Raw,
    Watch,
    bad_insert,
    exchange,
    running,
    select,
)

from procs import ServerProcess
from pyovsdb.jsonrpc.stream import dumps
from robust_counts import COUNTS

MAX_MESSAGE = 1 << 20


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running("ours", tmp_path_factory.mktemp("ours"),
                 f"--max-message-size={MAX_MESSAGE}") as srv:
        yield srv


@pytest.fixture(scope="module")
def watch(ours: ServerProcess) -> Iterator[Watch]:
    w = Watch(ours)
    w.canary()
    yield w
    w.finish()


@pytest.fixture(autouse=True)
def _still_well(watch: Watch) -> Iterator[None]:
    yield
    watch.canary()
    watch.check_log()


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running("real", tmp_path_factory.mktemp("real")) as srv:
        yield srv


def _send(srv: ServerProcess, data: bytes, kind: str = "ours") -> Outcome:
    if kind == "ours":
        COUNTS.bad_inputs += 1
    else:
        COUNTS.bad_inputs_real += 1
        if srv.proc is None or srv.proc.poll() is not None:  # crashed on an earlier input
            srv.stop()
            srv.start()
    return exchange(srv, data)


def _req(method: str, params: Any, msg_id: Any = 1) -> bytes:
    return dumps({"method": method, "params": params, "id": msg_id})


def _name(value: Any) -> str:
    return dumps(value).decode()[:30]


# -- framing and protocol errors, compared with the real server -----------------------------


@dataclass
class Case:
    name: str
    data: bytes
    expect: str  # "answered" or "closed"
    replies: tuple[Any, ...] = ()  # ids answered before the outcome
    real: str | None = None  # the real server's outcome when it differs (see KNOWN)


ECHO = b'{"method":"echo","params":[],"id":1}'
DEEP_OK = b'{"method":"echo","params":[' + b"[" * 900 + b"]" * 900 + b'],"id":1}'
DEEP_BAD = b'{"method":"echo","params":[' + b"[" * 10000 + b"]" * 10000 + b'],"id":1}'
FRAMING = [
    Case("not JSON", b"hello", "closed"),
    Case("extra closing brace after a message", ECHO + b"}", "closed", (1,)),
    Case("garbage after a message in the same write", ECHO + b' {"a": nope}', "closed", (1,)),
    Case("trailing comma", b'{"method":"echo","params":[1,],"id":1}', "closed"),
    Case("single quotes", b"{'method':'echo','params':[],'id':1}", "closed"),
    Case("NaN", b'{"method":"echo","params":[NaN],"id":1}', "closed"),
    Case("leading zero", b'{"method":"echo","params":[01],"id":1}', "closed"),
    Case("number too large", b'{"method":"echo","params":[1e999],"id":1}', "closed"),
    Case("subnormal number", b'{"method":"echo","params":[1e-310],"id":1}', "closed"),
    Case("escaped NUL", b'{"method":"echo","params":["\\u0000"],"id":1}', "closed"),
    Case("raw control character", b'{"method":"echo","params":["a\x01"],"id":1}', "closed"),
    Case("lone escaped surrogate", b'{"method":"echo","params":["\\ud800"],"id":1}',
         "closed"),
    Case("byte order mark", b"\xef\xbb\xbf" + ECHO, "closed"),
    Case("invalid UTF-8", b'{"method":"echo","params":["\xff\xfe"],"id":1}', "answered",
         (1,)),
    Case("overlong UTF-8", b'{"method":"echo","params":["\xc0\xaf"],"id":1}', "answered",
         (1,)),
    Case("UTF-8 encoded surrogate", b'{"method":"echo","params":["\xed\xa0\x80"],"id":1}',
         "answered", (1,)),
    Case("escaped unpaired trailing surrogate", b'{"method":"echo","params":["\\udcff"],"id":1}',
         "answered", (1,)),
    Case("invalid UTF-8 in a member name", b'{"method":"echo","params":[],"id\xff":1}',
         "closed"),
    Case("top-level array", b"[1,2]", "closed"),
    Case("top-level string", b'"x"', "closed"),
    Case("params not an array", b'{"method":"echo","params":{},"id":1}', "closed"),
    Case("unexpected member", b'{"method":"echo","params":[],"id":1,"x":1}', "closed"),
    Case("method not a string", b'{"method":1,"params":[],"id":1}', "closed"),
    Case("result and error", b'{"id":1,"result":1,"error":1}', "closed"),
    Case("id alone", b'{"id":1}', "closed"),
    Case("empty object", b"{}", "closed"),
    Case("notification without params", b'{"method":"echo","id":null}', "closed"),
    Case("reply nobody asked for", b'{"id":5,"result":[],"error":null}', "closed"),
    Case("error reply nobody asked for", b'{"id":5,"error":"x"}', "closed"),
    Case("reply to the server's echo probe", b'{"id":"echo","result":[],"error":null}',
         "answered"),
    Case("JSON nested 10,000 deep", DEEP_BAD, "closed"),
    Case("JSON nested 900 deep", DEEP_OK, "answered", (1,)),
    Case("unknown method", _req("no_such_method", []), "answered", (1,)),
    Case("cancel sent as a request", _req("cancel", [1]), "answered", (1,)),
    Case("echo notification", b'{"method":"echo","params":[],"id":null}', "answered"),
    Case("unknown notification", b'{"method":"bogus","params":[1]}', "answered"),
    Case("transact as a notification (no id)",
         orjson.dumps({"method": "transact", "params": [DB, bad_insert("notify")]}),
         "answered"),
    Case("transact with a null id",
         orjson.dumps({"method": "transact", "params": [DB, bad_insert("nullid")],
                       "id": None}), "answered"),
    Case("a hundred messages in one write", b"\n".join(
        _req("echo", [i], i) for i in range(100)), "answered", tuple(range(100))),
]
# Where the real server differs and why we keep our behaviour.
KNOWN: dict[str, str] = {}


@pytest.mark.parametrize("case", FRAMING, ids=lambda c: c.name)
def test_framing_and_protocol_errors(ours: ServerProcess, case: Case) -> None:
    out = _send(ours, case.data)
    assert out.kind == case.expect, out
    got = [m.get("id") for m in out.replies()]
    assert got == list(case.replies), out


@pytest.mark.interop
@pytest.mark.parametrize("case", FRAMING, ids=lambda c: c.name)
def test_framing_matches_real_server(ours: ServerProcess, real: ServerProcess,
                                     case: Case) -> None:
    theirs = _send(real, case.data, "real")
    expected = case.real or case.expect
    assert theirs.kind == expected, (theirs, KNOWN.get(case.name))
    mine = _send(ours, case.data)
    assert mine.kind == case.expect
    if case.real is None:
        assert [m.get("id") for m in mine.replies()] == [m.get("id") for m in theirs.replies()]


def test_message_split_into_single_bytes(ours: ServerProcess) -> None:
    with Raw(ours.sock) as r:
        for b in _req("echo", ["é", {"a": [1, 2.5]}], "split"):
            r.send(bytes([b]))
        COUNTS.bad_inputs += 1
        r.read_until(lambda ms: len(ms) == 1)
        assert r.msgs == [{"id": "split", "result": ["é", {"a": [1, 2.5]}], "error": None}]


def test_incomplete_message_then_close(ours: ServerProcess, watch: Watch) -> None:
    """Half a transaction, then the client goes away: nothing is applied."""
    data = orjson.dumps({"method": "transact", "params": [DB, bad_insert("half")], "id": 1})
    for cut in (1, len(data) // 2, len(data) - 1):
        with Raw(ours.sock) as r:
            r.send(data[:cut])
        COUNTS.bad_inputs += 1
    watch.canary()
    watch.no_bad_rows()


# -- size limit ------------------------------------------------------------------------------


def test_message_over_the_size_limit_closes(ours: ServerProcess) -> None:
    big = _req("echo", ["x" * (2 * MAX_MESSAGE)])
    assert _send(ours, big).closed
    # the same, arriving in many small writes
    with Raw(ours.sock) as r:
        for i in range(0, len(big), 65536):
            if not r.send(big[i:i + 65536]):
                break
        COUNTS.bad_inputs += 1
        r.read_until(lambda ms: False)
        assert r.closed and not r.msgs
    # one that never ends: refused once it passes the limit, not buffered forever
    with Raw(ours.sock) as r:
        r.send(b'{"method":"echo","params":[' + b"1," * MAX_MESSAGE)
        COUNTS.bad_inputs += 1
        r.read_until(lambda ms: False)
        assert r.closed


def test_message_under_the_size_limit_is_answered(ours: ServerProcess) -> None:
    payload = "y" * (MAX_MESSAGE - 1000)
    out = exchange(ours, _req("echo", [payload], "big"))
    assert not out.closed and out.reply("big")["result"] == [payload]


# -- ids -------------------------------------------------------------------------------------


ODD_IDS: list[Any] = [
    {"a": [1, {"b": None}]}, [1, "two", 3.5], [], {}, 1.5, -7, 0, True, False, "", "é\u2028",
    2**63 - 1, -(2**63), 2**64 - 1, 1e300, -0.0, orjson.loads(b"[" * 300 + b"]" * 300),
]


def _same_id(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(
            a, b, rel_tol=1e-14)
    return bool(a == b)


@pytest.mark.parametrize("msg_id", ODD_IDS, ids=_name)
def test_odd_ids_are_echoed(ours: ServerProcess, msg_id: Any) -> None:
    out = _send(ours, _req("transact", [DB, {"op": "select", "table": "Txn",
                                             "where": [["tag", "==", "none"]]}], msg_id))
    assert not out.closed
    (reply,) = out.replies()
    assert _same_id(reply["id"], msg_id) and reply["result"] == [{"rows": []}]


def test_huge_integer_id(ours: ServerProcess) -> None:
    """Beyond 64 bits the real parser reads a real (and prints it as one); so do we."""
    out = _send(ours, b'{"method":"echo","params":[],"id":123456789012345678901234567890}')
    (reply,) = out.replies()
    assert math.isclose(reply["id"], 1.2345678901234568e29)


@pytest.mark.interop
@pytest.mark.parametrize("msg_id", ODD_IDS[:13], ids=_name)
def test_odd_ids_match_real_server(real: ServerProcess, msg_id: Any) -> None:
    out = _send(real, _req("echo", [], msg_id), "real")
    (reply,) = out.replies()
    assert _same_id(reply["id"], msg_id)


def test_duplicate_ids_in_flight(ours: ServerProcess) -> None:
    with Raw(ours.sock) as r:
        sel = {"op": "select", "table": "Txn", "where": [["tag", "==", "none"]]}
        r.send(_req("transact", [DB, sel], "dup") + _req("transact", [DB, sel], "dup"))
        COUNTS.bad_inputs += 1
        r.read_until(lambda ms: len(ms) == 2)
        assert [m["id"] for m in r.msgs] == ["dup", "dup"] and not r.closed


# -- wrong parameters for every method -------------------------------------------------------


METHODS = ["list_dbs", "get_schema", "echo", "get_server_id", "set_db_change_aware",
           "transact", "monitor", "monitor_cond", "monitor_cond_since", "monitor_cond_change",
           "monitor_cancel", "lock", "steal", "unlock", "convert", "cancel", "no_such"]
VALUES: list[Any] = [None, 1, -1, 1.5, True, "", DB, "_Server", "X", [], {}, [DB],
                     {"Txn": {}}, {"Txn": [{}]}, {"Txn": {"columns": "tag"}},
                     "00000000-0000-0000-0000-000000000000", 2**62, [[[[["deep"]]]]],
                     {"op": "select", "table": "Txn", "where": []},
                     {"op": "insert", "table": "Txn", "row": {"tag": "params"}}]


def _param_lists() -> list[list[Any]]:
    out: list[list[Any]] = [[]]
    out += [[v] for v in VALUES]
    out += [[DB, v] for v in VALUES]
    out += [[DB, mid, v] for mid in (None, 1, "m") for v in VALUES]
    out += [[DB, "m", {"Txn": {}}, v] for v in VALUES]
    out += [[v] * 5 for v in VALUES]
    return out


def test_wrong_params_for_every_method(ours: ServerProcess, watch: Watch) -> None:
    """Every request is answered (an error, or a result where the params are ignored);
    none closes the connection; nothing that the answers refused is applied. Each
    method's requests go in one write and its answers are read before the next: a
    server reads no more from a client that does not read its answers (as the real
    one), so a client that only writes would wait on itself."""
    params = _param_lists()
    ids = itertools.count()
    with Raw(ours.sock, timeout=60) as r:
        for method in METHODS:
            batch = b""
            wanted: set[int] = set()
            for p in params:
                i = next(ids)
                wanted.add(i)
                batch += _req(method, p, i)
            r.send(batch)
            COUNTS.bad_inputs += len(params)
            r.read_until(lambda ms, wanted=wanted: wanted <= {
                m.get("id") for m in ms if isinstance(m, dict) and "method" not in m},
                timeout=60)
            assert not r.closed, method
        # the session still works after all that
        out = r.exchange(_req("list_dbs", [], "after"))
        assert out.reply("after")["result"] == [DB, "_Server"]
    watch.no_bad_rows()


# -- transactions that must fail as a whole --------------------------------------------------


def _bad_txns() -> list[list[Any]]:
    """Each starts with a valid insert of a "bad-" row and fails later, in parsing, in
    execution, or at commit: none of it may be applied."""
    ins = bad_insert
    txns: list[list[Any]] = [
        [ins("unknown-op"), {"op": "frobnicate"}],
        [ins("op-not-object"), 42],
        [ins("op-missing"), {"table": "Txn"}],
        [ins("no-table"), {"op": "insert", "table": "Nope", "row": {}}],
        [ins("no-column"), {"op": "insert", "table": "Txn", "row": {"nope": 1}}],
        [ins("wrong-type"), {"op": "insert", "table": "Txn", "row": {"part": "x"}}],
        [ins("bad-map"), {"op": "insert", "table": "Txn", "row": {"attrs": ["map", [[1, 2]]]}}],
        [ins("bad-set"), {"op": "insert", "table": "Txn", "row": {"nums": ["set", ["a"]]}}],
        [ins("set-as-map"), {"op": "insert", "table": "Txn", "row": {"nums": ["map", []]}}],
        [ins("huge-int"), {"op": "insert", "table": "Txn", "row": {"part": 2**63}}],
        [ins("bad-uuid"), {"op": "insert", "table": "Txn", "row": {"peer": ["uuid", "zz"]}}],
        [ins("dangling-ref"), {"op": "insert", "table": "Txn", "row": {
            "peer": ["uuid", "00000000-0000-0000-0000-000000000001"]}}],
        [ins("undefined-name"), {"op": "insert", "table": "Txn", "row": {
            "peer": ["named-uuid", "nobody"]}}],
        [ins("dup-name"), {"op": "insert", "table": "Part", "row": {}, "uuid-name": "p"},
         {"op": "insert", "table": "Part", "row": {}, "uuid-name": "p"}],
        [ins("index"), bad_insert("index")],
        [ins("where-bad"), {"op": "select", "table": "Txn", "where": [["tag", "~", 1]]}],
        [ins("where-type"), {"op": "delete", "table": "Txn", "where": [["part", "==", "x"]]}],
        [ins("mutate-type"), {"op": "mutate", "table": "Txn", "where": [],
                              "mutations": [["part", "+=", "x"]]}],
        [ins("mutate-div0"), {"op": "insert", "table": "Counter", "row": {"client": -99}},
         {"op": "mutate", "table": "Counter", "where": [["client", "==", -99]],
          "mutations": [["count", "/=", 0]]}],
        [ins("mutate-overflow"), {"op": "insert", "table": "Counter", "row": {
            "client": -98, "count": 2**62}},
         {"op": "mutate", "table": "Counter", "where": [["client", "==", -98]],
          "mutations": [["count", "*=", 4]]}],
        [ins("update-uuid"), {"op": "update", "table": "Txn", "where": [],
                              "row": {"_uuid": ["uuid", "00000000-0000-0000-0000-000000000001"]}}],
        [ins("wait-fails"), {"op": "wait", "table": "Txn", "where": [], "columns": ["tag"],
                             "until": "==", "rows": [], "timeout": 0}],
        [ins("assert-lock"), {"op": "assert", "lock": "nobody_holds_this"}],
        [ins("abort"), {"op": "abort"}],
        [ins("commit-bad"), {"op": "commit", "durable": "yes"}],
        [ins("comment-bad"), {"op": "comment", "comment": 5}],
        [ins("orphan"), {"op": "insert", "table": "Part", "row": {"tag": "bad-orphan"}},
         {"op": "insert", "table": "Txn", "row": {"tag": "bad-orphan2", "peer": [
             "uuid", "00000000-0000-0000-0000-00000000000f"]}}],
        [ins("deep-value"), {"op": "insert", "table": "Txn", "row": {
            "tag": orjson.loads(b"[" * 500 + b"]" * 500)}}],
        [ins("where-uuid"), {"op": "insert", "table": "Counter", "row": {}},
         {"op": "delete", "table": "Txn", "where": [["_uuid", "==", "x"]]}],
    ]
    return txns


BAD_TXNS = _bad_txns()


def _is_refused(reply: dict[str, Any]) -> bool:
    res = reply.get("result")
    return reply.get("error") is not None or (
        isinstance(res, list) and any(isinstance(x, dict) and "error" in x for x in res))


def test_failing_transactions_apply_nothing(ours: ServerProcess, watch: Watch) -> None:
    with Raw(ours.sock) as r:
        for i, ops in enumerate(BAD_TXNS):
            r.send(_req("transact", [DB, *ops], i))
        COUNTS.bad_inputs += len(BAD_TXNS)
        r.read_until(lambda ms: len(ms) >= len(BAD_TXNS))
        assert not r.closed
        by_id = {m["id"]: m for m in r.msgs}
    not_refused = [(BAD_TXNS[i], by_id[i]) for i in range(len(BAD_TXNS))
                   if not _is_refused(by_id[i])]
    assert not not_refused, not_refused
    watch.no_bad_rows()
    assert watch.client is not None
    assert not select(watch.client, "Part", ["tag"], [["tag", "==", "bad-orphan"]])
    assert not select(watch.client, "Counter", ["client"], [["client", "<", 0]])


@pytest.mark.interop
def test_failing_transactions_fail_on_real_server(real: ServerProcess) -> None:
    """The reference agrees that each of them fails."""
    with Raw(real.sock) as r:
        for i, ops in enumerate(BAD_TXNS):
            r.send(_req("transact", [DB, *ops], i))
        COUNTS.bad_inputs_real += len(BAD_TXNS)
        r.read_until(lambda ms: len(ms) >= len(BAD_TXNS))
        by_id = {m["id"]: m for m in r.msgs}
    assert all(_is_refused(by_id[i]) for i in range(len(BAD_TXNS)))


def test_transaction_then_immediate_close_is_whole(ours: ServerProcess, watch: Watch,
                                                   tmp_path: Path) -> None:
    """A client that sends a whole transaction and leaves at once: all of it or none."""
    for n in range(20):
        tag = f"leave-{n}"
        ops = [{"op": "insert", "table": "Txn", "row": {"tag": tag, "part": i, "of": 5}}
               for i in range(5)]
        with Raw(ours.sock) as r:
            r.send(_req("transact", [DB, *ops], n))
        COUNTS.bad_inputs += 1
    watch.canary()
    assert watch.client is not None
    rows = select(watch.client, "Txn", ["tag", "part"])
    for n in range(20):
        parts = sorted(r["part"] for r in rows if r["tag"] == f"leave-{n}")
        assert parts in ([], [0, 1, 2, 3, 4]), (n, parts)
