"""Crash safety: our server killed with SIGKILL at random moments while clients commit,
restarted on the same file, must have every acknowledged transaction and no part of an
unacknowledged one; and the file must stay readable by the real ovsdb-tool. A failing
disk write must not be acknowledged either.

Each client commits transactions that insert 1-4 `Txn` rows (each with a strong
reference to a `Part` row of a non-root table) under one tag, sometimes delete the rows
of an older tag of theirs (whose `Part` rows are then garbage-collected), and always
count the transaction in their `Counter` row; about half the transactions end with
`{"op": "commit", "durable": true}`. A client waits for each reply, so at a kill it has
at most one transaction whose fate it does not know: after the restart, that one must be
either wholly present or wholly absent, and everything else must match what the client
was told.
"""

from __future__ import annotations

import random
import resource
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from robust_helpers import (
    DB,
    READ_TIMEOUT,
    Watch,
    real_tool_check,
    running,
    select,
    start_server,
    transact,
    unixctl,
)

from procs import ServerProcess, require
from pyovsdb.jsonrpc.client import Client, RpcError
from robust_counts import COUNTS

N_CLIENTS = 4
ROUNDS = 50


@dataclass
class ClientModel:
    """What one client was told (`present`, `acked`) and the one transaction it sent
    without hearing back (`pending`: new tag, deleted tag)."""

    cid: int
    present: list[str] = field(default_factory=list)  # tags, oldest first
    acked: int = 0
    checked: int = 0  # of `acked`, those already counted in COUNTS.acked_txns
    pending: tuple[str, str | None] | None = None
    error: str | None = None

    def apply(self, tag: str, old: str | None) -> None:
        if old is not None:
            self.present.remove(old)
        self.present.append(tag)
        self.acked += 1


def _txn_ops(m: ClientModel, tag: str, old: str | None, rng: random.Random
             ) -> list[dict[str, Any]]:
    k = rng.randint(1, 4)
    big = rng.random() < 0.05
    ops: list[dict[str, Any]] = []
    for i in range(k):
        ops.append({"op": "insert", "table": "Part", "uuid-name": f"p{i}",
                    "row": {"tag": tag, "weight": rng.random()}})
        ops.append({"op": "insert", "table": "Txn", "row": {
            "tag": tag, "part": i, "of": k, "client": m.cid,
            "payload": ("x" * 30000 if big else f"payload {rng.random()}"),
            "attrs": ["map", [["k", tag], ["i", str(i)]]],
            "nums": ["set", list(range(i + 1))],
            "peer": ["named-uuid", f"p{i}"]}})
    mutations: list[Any] = [["count", "+=", 1], ["tags", "insert", ["set", [tag]]]]
    if old is not None:
        ops.append({"op": "delete", "table": "Txn", "where": [["tag", "==", old]]})
        mutations.append(["tags", "delete", ["set", [old]]])
    ops.append({"op": "mutate", "table": "Counter", "where": [["client", "==", m.cid]],
                "mutations": mutations})
    if rng.random() < 0.5:
        ops.append({"op": "commit", "durable": True})
    return ops


def _client(srv: ServerProcess, m: ClientModel, round_no: int, seed: int) -> None:
    rng = random.Random(seed)
    try:
        c = Client(srv.unix, timeout=READ_TIMEOUT)
    except RpcError:
        return  # killed before we connected
    try:
        seq = 0
        while True:
            tag = f"c{m.cid}-r{round_no}-{seq}"
            seq += 1
            old = m.present[0] if len(m.present) > 6 or (
                len(m.present) > 3 and rng.random() < 0.7) else None
            ops = _txn_ops(m, tag, old, rng)
            m.pending = (tag, old)
            try:
                res = transact(c, *ops)
            except (RpcError, OSError):
                return  # the server is gone: `pending` is unknown
            errors = [r for r in res if isinstance(r, dict) and "error" in r]
            if errors:
                m.error = f"{tag}: {errors}"
                return
            m.pending = None
            m.apply(tag, old)
    finally:
        c.close()


def _verify(srv: ServerProcess, models: list[ClientModel]) -> None:
    """The database holds exactly what the clients were told, plus or minus each
    client's one unknown transaction, applied whole or not at all."""
    with Client(srv.unix, timeout=READ_TIMEOUT) as c:
        txns = select(c, "Txn", ["tag", "part", "of", "client", "peer"])
        parts = {r["_uuid"][1]: r["tag"] for r in select(c, "Part", ["_uuid", "tag"])}
        counters = {r["client"]: r for r in select(c, "Counter", ["client", "count", "tags"])}
    by_tag: dict[str, list[dict[str, Any]]] = {}
    for r in txns:
        by_tag.setdefault(r["tag"], []).append(r)
    for tag, rows in by_tag.items():
        of = rows[0]["of"]
        whole = sorted(r["part"] for r in rows) == list(range(of)) and all(
            r["of"] == of and parts.get(r["peer"][1]) == tag for r in rows)
        if not whole:
            COUNTS.half_present += 1
        assert whole, f"transaction {tag} is half-present: {rows}"
    referenced = {r["peer"][1] for r in txns}
    assert set(parts) == referenced, "Part rows left behind by garbage collection"
    for m in models:
        counter = counters[m.cid]
        in_db = sorted(t for t, rows in by_tag.items() if rows[0]["client"] == m.cid)
        told = sorted(m.present)
        counted = counter["count"]
        tags = counter["tags"]
        tags = sorted(tags[1]) if isinstance(tags, list) else [tags]
        assert tags == in_db, f"client {m.cid}: counter tags {tags} != rows {in_db}"
        if in_db == told and counted == m.acked:
            m.pending = None  # the unknown transaction did not commit
            continue
        assert m.pending is not None, (
            f"client {m.cid}: acknowledged transactions lost: told {told}, found {in_db}, "
            f"count {counted} (expected {m.acked})")
        tag, old = m.pending
        m.pending = None
        m.apply(tag, old)  # committed without its reply reaching the client
        assert in_db == sorted(m.present) and counted == m.acked, (
            f"client {m.cid}: neither before nor after {tag}: found {in_db}, count "
            f"{counted}, expected {sorted(m.present)} / {m.acked}")
    for m in models:
        COUNTS.acked_txns += m.acked - m.checked
        m.checked = m.acked


def _compare_with_real_tool(db_file: str, srv: ServerProcess) -> None:
    """ovsdb-tool reads the file whole and finds the rows our server serves."""
    q = [DB, {"op": "select", "table": "Txn", "where": [], "columns": ["tag", "part"]},
         {"op": "select", "table": "Counter", "where": [], "columns": ["client", "count"]}]
    (res,) = real_tool_check(db_file, q)
    with Client(srv.unix, timeout=READ_TIMEOUT) as c:
        ours = transact(c, *q[1:])

    def norm(r: list[Any]) -> list[Any]:
        return [sorted(orjson.dumps(row, option=orjson.OPT_SORT_KEYS) for row in x["rows"])
                for x in r]

    assert norm(res) == norm(ours)


@pytest.mark.interop
def test_kill_at_random_points_loses_nothing_acknowledged(tmp_path: Path) -> None:
    require("ovsdb-tool")
    rng = random.Random(7)
    srv = start_server("ours", tmp_path)
    db_file = srv.dbs[0]
    watch = Watch(srv)
    models = [ClientModel(cid) for cid in range(N_CLIENTS)]
    try:
        with Client(srv.unix, timeout=READ_TIMEOUT) as c:
            transact(c, *({"op": "insert", "table": "Counter", "row": {"client": m.cid}}
                          for m in models),
                     {"op": "insert", "table": "Blob", "row": {"name": "round"}})
        for round_no in range(ROUNDS):
            if round_no:
                srv.start()
                _verify(srv, models)
                with Client(srv.unix, timeout=READ_TIMEOUT) as c:  # first write: drops
                    transact(c, {"op": "update", "table": "Blob",  # a torn tail
                                 "where": [["name", "==", "round"]],
                                 "row": {"data": str(round_no)}})
                _compare_with_real_tool(db_file, srv)
                COUNTS.kill_rounds_ok += 1
                if round_no % 4 == 0:  # keeps restarts quick; the file stays small
                    unixctl(srv, "ovsdb-server/compact")
            threads = [threading.Thread(target=_client, args=(srv, m, round_no,
                                                              rng.random()))
                       for m in models]
            for t in threads:
                t.start()
            time.sleep(rng.uniform(0.02, 0.25))
            if rng.random() < 0.3:  # kill during (or just after) a compaction
                threading.Thread(target=_compact_quietly, args=(srv,), daemon=True).start()
                time.sleep(rng.uniform(0, 0.01))
            watch.alive()
            assert srv.proc is not None
            srv.proc.send_signal(signal.SIGKILL)
            srv.proc.wait(timeout=10)
            srv.stop()
            COUNTS.kill_rounds += 1
            for t in threads:
                t.join(timeout=READ_TIMEOUT)
            errs = [m.error for m in models if m.error]
            assert not errs, errs
        srv.start()
        _verify(srv, models)
        COUNTS.kill_rounds_ok += 1
        watch.check_log()
        srv.stop()
        real_tool_check(db_file)
        # the real server serves the file too
        with running("real", tmp_path / "real", db_file=db_file) as real:
            _verify(real, models)
    finally:
        srv.stop()


def _compact_quietly(srv: ServerProcess) -> None:
    try:
        unixctl(srv, "ovsdb-server/compact")
    except (RpcError, OSError):
        pass


def test_failed_write_acknowledges_nothing(tmp_path: Path) -> None:
    """The disk refuses a write (here: the file size limit): the transaction must not
    be acknowledged, nor any later one; after a restart every acknowledged one is
    there."""
    srv = start_server("ours", tmp_path)
    db_file = srv.dbs[0]
    acked: list[str] = []
    try:
        with Client(srv.unix, timeout=READ_TIMEOUT) as c:
            monitor = Client(srv.unix, timeout=READ_TIMEOUT)
            monitor.call("monitor_cond", [DB, "m", {"Txn": {"columns": ["tag"]}}])
            for i in range(5):
                transact(c, {"op": "insert", "table": "Txn", "row": {"tag": f"ok-{i}"}})
                acked.append(f"ok-{i}")
            assert srv.proc is not None
            size = Path(db_file).stat().st_size
            resource.prlimit(srv.proc.pid, resource.RLIMIT_FSIZE, (size + 3000, size + 3000))
            refused = 0
            for i in range(100):
                tag = f"t-{i}"
                try:
                    res = transact(c, {"op": "insert", "table": "Txn",
                                       "row": {"tag": tag, "payload": "p" * 700}})
                except (RpcError, OSError):
                    refused += 1
                    break
                if "error" in res[-1]:
                    refused += 1
                    break
                acked.append(tag)
            assert refused, "the size limit never made a write fail"
            assert len(acked) < 12
            # nothing the monitor was told is missing from the file either
            seen: list[str] = []
            try:
                while True:
                    note = monitor.next_notification()
                    seen += [r["insert"]["tag"] for r in note["params"][1]["Txn"].values()]
            except RpcError:
                pass
            monitor.close()
            assert set(seen) <= set(acked), (seen, acked)
        assert srv.proc is not None
        assert srv.proc.wait(timeout=10) == 1
        srv.stop()
        srv.start()
        with Client(srv.unix, timeout=READ_TIMEOUT) as c:
            tags = {r["tag"] for r in select(c, "Txn", ["tag"])}
            assert set(acked) <= tags
            transact(c, {"op": "insert", "table": "Txn", "row": {"tag": "after"}})
        srv.stop()
        if _have_tool():
            real_tool_check(db_file)
    finally:
        srv.stop()


def _have_tool() -> bool:
    import shutil

    return shutil.which("ovsdb-tool") is not None

