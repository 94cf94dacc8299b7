"""Monitor clients that stop reading, on our server and the real ovsdb-server side by
side: while a client does not read, the server holds its monitors' changes merged per
row and sends them as one update once it reads again (docs/compat.md, "Clients that do not read").

Rules kept here:
- Four monitor clients (update, update2, update3, and update2 with a condition) stop
  reading while a writer commits many transactions of large rows; the server's memory
  is sampled from /proc (VmRSS) as they go. Its growth must stay small and must not
  follow the number of transactions: the same clients go through two rounds, the
  second with three times the transactions of the first.
- Nobody is dropped: once the clients read again, each one's replica (built from the
  updates alone) equals the server's rows, and an echo is answered after them.
- The writer's own monitor, which reads, gets one update per transaction, before the
  transaction's reply: other clients are unaffected.
- A reply never overtakes the updates held back: a slow client's transaction blocked on
  a `wait` completes while it does not read, and the update with its own insert comes
  before the reply, as on the real server.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from procs import ServerProcess
from pyovsdb.jsonrpc.client import Client
from pyovsdb.jsonrpc.stream import JsonStream

pytestmark = pytest.mark.interop

ZERO_UUID = "00000000-0000-0000-0000-000000000000"
WAKE = 1000  # the writer's last row, which a slow client's transaction waits for
ROWS = 40
VALUE = 20_000  # bytes of each written value
ROUNDS = (300, 900)  # transactions per round
SCHEMA = {"name": "S", "version": "1.0.0", "tables": {"T": {"columns": {
    "k": {"type": "integer"}, "v": {"type": "string"}}, "isRoot": True}}}
MONITORS = [
    ("monitor", {"T": {"columns": ["k", "v"]}}),
    ("monitor_cond", {"T": [{"columns": ["k", "v"]}]}),
    ("monitor_cond_since", {"T": [{"columns": ["k", "v"]}]}),
    ("monitor_cond", {"T": [{"columns": ["k", "v"], "where": [["k", "<", ROWS // 2]]}]}),
]


class Recording(JsonStream):
    """Every message in the order it came."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Any] = []

    def feed(self, data: bytes) -> list[Any]:
        msgs = super().feed(data)
        self.seen += msgs
        return msgs


def rss_kb(srv: ServerProcess) -> int:
    assert srv.proc is not None
    for line in Path(f"/proc/{srv.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


class Replica:
    """The rows of table T as one monitor's updates build them (`k`, `v`)."""

    def __init__(self, method: str, where: Callable[[int], bool]) -> None:
        self.method = method
        self.where = where
        self.rows: dict[str, tuple[int, str]] = {}
        self.updates = 0
        self.last_txn: str | None = None  # update3's transaction id

    def apply(self, table_updates: dict[str, Any]) -> None:
        self.updates += 1
        for uuid, ru in table_updates.get("T", {}).items():
            if self.method == "monitor":
                if ru.get("new") is None:
                    del self.rows[uuid]
                else:
                    self.rows[uuid] = (ru["new"]["k"], ru["new"]["v"])
                continue
            ((kind, row),) = ru.items()
            if kind == "delete":
                del self.rows[uuid]
            elif kind in ("initial", "insert"):
                assert uuid not in self.rows, f"insert of a row held already: {ru}"
                self.rows[uuid] = (row.get("k", 0), row.get("v", ""))
            else:
                k, v = self.rows[uuid]
                self.rows[uuid] = (row.get("k", k), row.get("v", v))

    def take(self, client: Client) -> None:
        while client.notes:
            note = client.notes.popleft()
            if note["method"] == "update3":
                self.last_txn = note["params"][1]
            self.apply(note["params"][-1])


def dump(writer: Client) -> dict[str, tuple[int, str]]:
    reply = writer.call("transact", ["S", {"op": "select", "table": "T", "where": [],
                                           "columns": ["_uuid", "k", "v"]}])
    return {r["_uuid"][1]: (r["k"], r["v"]) for r in reply[0]["rows"]}


def ops(n: int, live: list[str]) -> list[dict[str, Any]]:
    """Transaction `n`: rewrite one row's value; every seventh also replaces a row (a
    delete and an insert: over the rounds rows are inserted, modified and deleted while
    the slow clients do not read)."""
    value = f"{n}:".ljust(VALUE, "x")
    out: list[dict[str, Any]] = [{"op": "update", "table": "T",
                                  "where": [["_uuid", "==", ["uuid", live[n % len(live)]]]],
                                  "row": {"v": value}}]
    if n % 7 == 0:
        out += [{"op": "delete", "table": "T",
                 "where": [["_uuid", "==", ["uuid", live[(n + 3) % len(live)]]]]},
                {"op": "insert", "table": "T", "row": {"k": n % ROWS, "v": value}}]
    return out


def run_round(srv: ServerProcess, writer: Client, mine: Replica, live: list[str],
              n_txns: int, first: int) -> int:
    """Commit `n_txns` transactions; the peak RSS (kB) seen while doing so."""
    peak = 0
    for n in range(first, first + n_txns):
        result = writer.call("transact", ["S", *ops(n, live)])
        assert all("error" not in r for r in result), result
        if n % 7 == 0:
            live.remove(live[(n + 3) % len(live)])
            live.append(result[2]["uuid"][1])
        # The writer's own monitor reads: its update came before the reply.
        assert writer.notes, f"no update before the reply of transaction {n}"
        mine.take(writer)
        if n % 50 == 0:
            peak = max(peak, rss_kb(srv))
    return max(peak, rss_kb(srv))


def catch_up(slow: list[tuple[Client, Replica]]) -> None:
    """The slow clients read again: everything held comes, then the echo's reply."""
    ids = [c.send("echo", ["caught up"]) for c, _ in slow]
    for (c, rep), i in zip(slow, ids, strict=True):
        assert c.wait(i)["result"] == ["caught up"]
        rep.take(c)


def test_clients_that_stop_reading(server_pair: Callable[[str], dict[str, ServerProcess]],
                                   tmp_path: Path) -> None:
    schema = tmp_path / "s.ovsschema"
    schema.write_text(json.dumps(SCHEMA))
    figures: dict[str, list[int]] = {}
    for kind, srv in server_pair(str(schema)).items():
        writer = Client(srv.unix, timeout=10)
        slow: list[tuple[Client, Replica]] = []
        try:
            writer.call("transact", ["S", *({"op": "insert", "table": "T",
                                              "row": {"k": k, "v": "v"}}
                                             for k in range(ROWS))])
            mine = Replica("monitor_cond_since", lambda k: True)
            mine.apply(writer.call("monitor_cond_since", ["S", "mine", {"T": [{}]},
                                                          ZERO_UUID])[2])
            for i, (method, req) in enumerate(MONITORS):
                c = Client(srv.unix, timeout=10)
                c.stream = Recording()
                params: list[Any] = ["S", i, req]
                if method == "monitor_cond_since":
                    params.append(ZERO_UUID)
                reply = c.call(method, params)
                rep = Replica(method, (lambda k: k < ROWS // 2) if "where" in str(req)
                              else (lambda k: True))
                rep.apply(reply[2] if method == "monitor_cond_since" else reply)
                slow.append((c, rep))
            waiter = slow[1][0]
            wait_id = waiter.send("transact", ["S", {
                "op": "wait", "table": "T", "where": [["k", "==", WAKE]], "columns": ["k"],
                "until": "!=", "rows": [], "timeout": 60000}, {
                "op": "insert", "table": "T", "row": {"k": WAKE + 1, "v": "woken"}}])
            growth, sent = [], []
            first = 1
            live = sorted(dump(writer))
            for n_txns in ROUNDS:
                before = rss_kb(srv)
                peak = run_round(srv, writer, mine, live, n_txns, first)
                first += n_txns
                growth.append(peak - before)
                if n_txns == ROUNDS[-1]:
                    writer.call("transact", ["S", {"op": "insert", "table": "T",
                                                   "row": {"k": WAKE}}])
                counts = [rep.updates for _, rep in slow]
                catch_up(slow)
                sent.append([rep.updates - n for (_, rep), n in zip(slow, counts, strict=True)])
                rows = dump(writer)
                mine.take(writer)
                assert mine.rows == rows
                for _, rep in slow:
                    assert rep.rows == {u: r for u, r in rows.items() if rep.where(r[0])}, \
                        f"{kind}: {rep.method} replica differs from the database"
                # update3 of the merged changes names the last transaction
                assert slow[2][1].last_txn == mine.last_txn
            assert mine.updates == 1 + sum(ROUNDS) + 2
            # the waiter's transaction ran while it did not read: its update came first
            assert waiter.wait(wait_id).get("error") is None
            seen = waiter.stream.seen  # type: ignore[attr-defined]
            woken = [i for i, m in enumerate(seen) if m.get("method") == "update2" and any(
                r.get("insert", {}).get("k") == WAKE + 1 for r in m["params"][1]["T"].values())]
            answer = [i for i, m in enumerate(seen) if m.get("id") == wait_id]
            assert woken and answer and woken[0] < answer[0], (kind, woken, answer)
            figures[kind] = growth
            # the slow clients got the changes merged: far fewer updates than commits
            assert all(n < n_txns // 4 for n_txns, ns in zip(ROUNDS, sent, strict=True)
                       for n in ns), (kind, sent)
            print(f"{kind}: updates the slow clients got per round: {sent}")
        finally:
            writer.close()
            for c, _ in slow:
                c.close()
    print(f"RSS growth (kB) per round of {ROUNDS} transactions: {figures}")
    # Ours holds what the slow clients missed merged per row: its growth is small and
    # does not follow the number of transactions (unmerged it would be 4 clients x
    # 20 kB per transaction, 24 MB and 72 MB).
    ours = figures["ours"]
    assert max(ours) < 16_000, figures
    assert ours[1] < ours[0] + 8_000, figures
