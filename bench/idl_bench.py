"""Side-by-side benchmark of the pyovsdb IDL and the PyPI `ovs` IDL (pure-Python JSON
parser), against the same real ovsdb-server, in one run.

Measured, each client in its own subprocess (so peak memory is its own):
- initial full replica of one table shaped like OVN's Logical_Switch_Port (Neutron-like
  contents), at each size: wall time from connecting to holding every row, and peak RSS
  (VmHWM) of the client process;
- single-row transactions per second, one in flight, each waited for;
- "seed-002": after a one-column change, one transaction that rewrites every row of a
  50,000-row table, with write-changed-only off and on (the `ovs` IDL's equivalent of
  "on" is a column with `alert = False`, which skips unchanged writes): time, and bytes
  of the transact request sent.

Usage: python bench/idl_bench.py [--sizes 20000,100000] [--rewrite 50000] [--txns 2000]
       [--reps 3]   (about 7 minutes; the ovs IDL takes most of it)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from pyovsdb.jsonrpc.client import Client
from pyovsdb.testing import NB_SCHEMA, ServerProcess, compile_bytecode, run

TABLE = "Port"
CLIENTS = ("ovs", "ours")
REWRITE_COLUMNS = ("type", "addresses", "options", "external_ids")
# Transactions not counted: the real server is slow on its first few after serving a
# large monitor reply (about 10 ms each), whoever the client.
WARMUP = 50


# -- the database -----------------------------------------------------------------------


def bench_schema(name: str) -> dict[str, Any]:
    """OVN's Logical_Switch_Port as a root table of its own (references kept as plain
    uuids, since the referenced tables are not part of the benchmark)."""
    with open(NB_SCHEMA) as f:
        lsp = json.load(f)["tables"]["Logical_Switch_Port"]
    for col in lsp["columns"].values():
        t = col["type"]
        if isinstance(t, dict) and isinstance(t.get("key"), dict):
            t["key"].pop("refTable", None)
            t["key"].pop("refType", None)
    lsp["isRoot"] = True
    return {"name": name, "version": "1.0.0", "tables": {TABLE: lsp}}


def port_row(i: int, rng: random.Random) -> dict[str, Any]:
    """A port as Neutron writes it."""
    mac = f"fa:16:3e:{i >> 16 & 255:02x}:{i >> 8 & 255:02x}:{i & 255:02x}"
    ip = f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}"
    host = f"compute-{rng.randrange(200)}"
    net = str(uuid.UUID(int=rng.getrandbits(128)))
    return {
        "name": str(uuid.UUID(int=rng.getrandbits(128))),
        "type": "",
        "addresses": f"{mac} {ip}",
        "port_security": f"{mac} {ip}",
        "up": True,
        "enabled": True,
        "options": ["map", [["requested-chassis", host], ["mcast_flood_reports", "true"]]],
        "external_ids": ["map", [
            ["neutron:cidrs", f"{ip}/16"],
            ["neutron:device_id", str(uuid.UUID(int=rng.getrandbits(128)))],
            ["neutron:device_owner", "compute:nova"],
            ["neutron:host_id", host],
            ["neutron:network_name", f"neutron-{net}"],
            ["neutron:port_name", ""],
            ["neutron:project_id", f"{rng.getrandbits(128):032x}"],
            ["neutron:revision_number", "4"],
            ["neutron:security_group_ids", str(uuid.UUID(int=rng.getrandbits(128)))],
        ]],
    }


def populate(remote: str, db: str, start: int, stop: int, batch: int = 5000) -> None:
    rng = random.Random(start)
    with Client(remote) as c:
        for lo in range(start, stop, batch):
            ops: list[Any] = [db] + [{"op": "insert", "table": TABLE, "row": port_row(i, rng)}
                                     for i in range(lo, min(stop, lo + batch))]
            reply = c.call("transact", ops)
            bad = [r for r in reply if r is not None and "error" in r]
            if bad:
                raise SystemExit(f"populate failed: {bad[:2]}")


def change_one(remote: str, db: str) -> None:
    """Another client changes one column of one row."""
    with Client(remote) as c:
        rows = c.call("transact", [db, {"op": "select", "table": TABLE, "where": [],
                                        "columns": ["_uuid"]}])[0]["rows"]
        target = rows[len(rows) // 2]["_uuid"]
        c.call("transact", [db, {"op": "update", "table": TABLE,
                                 "where": [["_uuid", "==", target]],
                                 "row": {"type": "localport"}}])


# -- measurements in the child processes -------------------------------------------------


def peak_rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def desired(row_values: dict[str, Any], changed: bool) -> dict[str, Any]:
    """The state an application re-asserts for a row: its current values, except the
    `type` of the one row changed behind its back, which it puts back."""
    out = dict(row_values)
    if changed:
        out["type"] = ""
    return out


# The `ovs` IDL ---------------------------------------------------------------------------


def ovs_child(args: argparse.Namespace) -> dict[str, Any]:
    import ovs.db.idl as ovs_idl
    import ovs.json
    import ovs.jsonrpc
    import ovs.poller

    assert ovs.json.PARSER == ovs.json.PARSER_PY, ovs.json.PARSER
    sent: list[int] = []
    orig_send = ovs.jsonrpc.Connection.send

    def send(self: Any, msg: Any) -> Any:
        if msg.method == "transact":
            sent.append(len(ovs.json.to_string(msg.to_json()).encode()))
        return orig_send(self, msg)

    ovs.jsonrpc.Connection.send = send  # type: ignore[method-assign]

    base = rss_mb()
    helper = ovs_idl.SchemaHelper(schema_json=bench_schema(args.db))
    helper.register_all()
    t0 = time.perf_counter()
    idl = ovs_idl.Idl(args.remote, helper)

    def run_until(pred: Any) -> None:
        while True:
            idl.run()
            if pred():
                return
            poller = ovs.poller.Poller()
            idl.wait(poller)
            poller.block()

    table = idl.tables[TABLE]
    run_until(lambda: len(table.rows) >= args.rows)
    out: dict[str, Any] = {"seconds": time.perf_counter() - t0, "peak_mb": peak_rss_mb(),
                           "base_mb": base}
    if args.txns:
        rows = list(table.rows.values())[: args.txns + WARMUP]
        for i, row in enumerate(rows):
            if i == WARMUP:
                t0 = time.perf_counter()
            txn = ovs_idl.Transaction(idl)
            row.type = f"ovs-{i}"
            status = txn.commit_block()
            assert status == ovs_idl.Transaction.SUCCESS, status
        out["txn_per_s"] = args.txns / (time.perf_counter() - t0)
    if args.rewrite:
        change_one(args.remote, args.db)
        run_until(lambda: any(r.type == "localport" for r in table.rows.values()))
        if args.wco:
            for c in REWRITE_COLUMNS:
                table.columns[c].alert = False
        t0 = time.perf_counter()
        txn = ovs_idl.Transaction(idl)
        for row in table.rows.values():
            want = desired({c: getattr(row, c) for c in REWRITE_COLUMNS},
                           row.type == "localport")
            for c, v in want.items():
                setattr(row, c, v)
        status = txn.commit_block()
        assert status == ovs_idl.Transaction.SUCCESS, (status, txn.get_error())
        out["rewrite_s"] = time.perf_counter() - t0
        out["rewrite_bytes"] = sent[-1]
    idl.close()
    return out


# pyovsdb ---------------------------------------------------------------------------------


def ours_child(args: argparse.Namespace) -> dict[str, Any]:
    from pyovsdb.idl import Idl, Status

    base = rss_mb()

    async def main() -> dict[str, Any]:
        t0 = time.perf_counter()
        idl = Idl(args.remote, args.db, write_changed_only=args.wco)
        async with idl:
            table = idl[TABLE]
            assert len(table) >= args.rows, len(table)
            out: dict[str, Any] = {"seconds": time.perf_counter() - t0,
                                   "peak_mb": peak_rss_mb(), "base_mb": base}
            if args.txns:
                rows = list(table.rows.values())[: args.txns + WARMUP]
                for i, row in enumerate(rows):
                    if i == WARMUP:
                        t0 = time.perf_counter()
                    txn = idl.transaction()
                    txn.update(row, type=f"ours-{i}")
                    result = await txn.commit()
                    assert result.status is Status.SUCCESS, result
                out["txn_per_s"] = args.txns / (time.perf_counter() - t0)
            if args.rewrite:
                seqno = idl.seqno
                await asyncio.to_thread(change_one, args.remote, args.db)
                while idl.seqno == seqno:
                    await asyncio.sleep(0.01)
                t0 = time.perf_counter()
                txn = idl.transaction()
                for row in table.rows.values():
                    want = desired({c: row[c] for c in REWRITE_COLUMNS},
                                   row.type == "localport")
                    txn.update(row, **want)
                result = await txn.commit()
                assert result.status is Status.SUCCESS, result
                out["rewrite_s"] = time.perf_counter() - t0
                out["rewrite_bytes"] = txn.request_bytes
            return out

    return asyncio.run(main())


def child(args: argparse.Namespace) -> None:
    fn = ovs_child if args.client == "ovs" else ours_child
    print(json.dumps(fn(args)))


def spawn(client: str, remote: str, db: str, rows: int, *, txns: int = 0,
          rewrite: bool = False, wco: bool = False) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", client, "--remote", remote, "--db", db,
           "--rows", str(rows), "--txns", str(txns)]
    if rewrite:
        cmd.append("--rewrite-child")
    if wco:
        cmd.append("--wco")
    p = run(cmd, timeout=1800)
    return json.loads(p.stdout.strip().splitlines()[-1])


# -- driver --------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="20000,100000")
    ap.add_argument("--rewrite", type=int, default=50000, dest="rewrite_rows")
    ap.add_argument("--txns", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=3, help="runs of each replica measurement")
    ap.add_argument("--child", choices=CLIENTS)
    ap.add_argument("--remote")
    ap.add_argument("--db")
    ap.add_argument("--rows", type=int, default=0)
    ap.add_argument("--rewrite-child", action="store_true", dest="rewrite")
    ap.add_argument("--wco", action="store_true")
    args = ap.parse_args()
    compile_bytecode()  # (our daemons start as an installed package's do)
    if args.child:
        args.client = args.child
        child(args)
        return 0
    if shutil.which("ovsdb-server") is None or shutil.which("ovsdb-tool") is None:
        print("bench: the real ovsdb-server is not installed", file=sys.stderr)
        return 1
    sizes = [int(s) for s in args.sizes.split(",") if s]
    with tempfile.TemporaryDirectory(prefix="pyovsdb-idlbench-") as tmp:
        root = Path(tmp)
        dbs = []
        for name in ("Bench", "Rewrite"):
            schema = root / f"{name}.ovsschema"
            schema.write_text(json.dumps(bench_schema(name)))
            run(["ovsdb-tool", "create", str(root / f"{name}.db"), str(schema)])
            dbs.append(str(root / f"{name}.db"))
        srv = ServerProcess("real", root, dbs, name="bench").start()
        try:
            return report(srv, sizes, args)
        finally:
            srv.stop()


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over the runs (the transaction figures come from the first)."""
    out = dict(runs[0])
    for key in ("seconds", "peak_mb"):
        values = sorted(r[key] for r in runs)
        out[key] = values[len(values) // 2]
    return out


def report(srv: ServerProcess, sizes: list[int], args: argparse.Namespace) -> int:
    lines: list[tuple[str, str, float, float, str]] = []
    have = 0
    for k, n in enumerate(sizes):
        populate(srv.unix, "Bench", have, n)
        have = n
        # The first size also measures transactions, on the replica just loaded.
        txns = args.txns if k == 0 else 0
        runs: dict[str, list[dict[str, Any]]] = {c: [] for c in CLIENTS}
        for rep in range(args.reps):
            for c in CLIENTS:
                r = spawn(c, srv.unix, "Bench", n, txns=txns if rep == 0 else 0)
                print(f"replica {n}: {c}: {r}", file=sys.stderr)
                runs[c].append(r)
        res = {c: median_run(runs[c]) for c in CLIENTS}
        lines.append((f"initial replica, {n:,} rows", "s", res["ovs"]["seconds"],
                      res["ours"]["seconds"], "x faster"))
        lines.append((f"peak RSS, {n:,} rows", "MB", res["ovs"]["peak_mb"],
                      res["ours"]["peak_mb"], "x less"))
        lines.append(("  of which the replica (peak - interpreter and imports)", "MB",
                      res["ovs"]["peak_mb"] - res["ovs"]["base_mb"],
                      res["ours"]["peak_mb"] - res["ours"]["base_mb"], "x less"))
        if txns:
            lines.append((f"single-row txns, 1 in flight, {n:,}-row replica", "txn/s",
                          res["ovs"]["txn_per_s"], res["ours"]["txn_per_s"], "x more"))
    rewrite: dict[tuple[str, bool], dict[str, Any]] = {}
    if args.rewrite_rows:
        n = args.rewrite_rows
        populate(srv.unix, "Rewrite", 0, n)
        for wco in (False, True):
            for c in CLIENTS:
                r = spawn(c, srv.unix, "Rewrite", n, rewrite=True, wco=wco)
                print(f"rewrite wco={wco}: {c}: {r}", file=sys.stderr)
                rewrite[(c, wco)] = r
            label = "on" if wco else "off"
            lines.append((f"seed-002 rewrite txn, write-changed-only {label}", "s",
                          rewrite[("ovs", wco)]["rewrite_s"],
                          rewrite[("ours", wco)]["rewrite_s"], "x faster"))
    print()
    print("| measurement | unit | ovs (PyPI) IDL | pyovsdb IDL | ratio |")
    print("|---|---|---|---|---|")
    for label, unit, theirs, ours, how in lines:
        if how == "x more":
            ratio = ours / theirs
        else:
            ratio = theirs / ours if ours else float("inf")
        print(f"| {label} | {unit} | {theirs:.4g} | {ours:.4g} | {ratio:.1f}{how} |")
    if rewrite:
        n = args.rewrite_rows
        print(f"\nseed-002: after a one-column change, one transaction rewriting every row "
              f"of a {n:,}-row table (columns {', '.join(REWRITE_COLUMNS)}); bytes of the "
              "transact request sent. For the ovs IDL, \"on\" is its equivalent: the "
              "written columns with alert=False.\n")
        print("| client | bytes, write-changed-only off | bytes, on | off/on | "
              "time off (s) | time on (s) |")
        print("|---|---|---|---|---|---|")
        for c, name in (("ovs", "ovs (PyPI) IDL"), ("ours", "pyovsdb IDL")):
            off, on = rewrite[(c, False)], rewrite[(c, True)]
            print(f"| {name} | {off['rewrite_bytes']:,} | {on['rewrite_bytes']:,} | "
                  f"{off['rewrite_bytes'] / on['rewrite_bytes']:,.0f}x smaller | "
                  f"{off['rewrite_s']:.3g} | {on['rewrite_s']:.3g} |")
    print(f"\nmachine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the "
          f"end; rows shaped like Logical_Switch_Port (Neutron external_ids, options, "
          f"addresses); median of {args.reps} runs per replica size")
    return 0


if __name__ == "__main__":
    sys.exit(main())
