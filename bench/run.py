"""Side-by-side benchmark: the real ovsdb-server and ours, same machine, same run.

Every figure is a time (per operation, or for the whole job), so the ratio ours/theirs
is below 1.0 where we are faster. Usage:

    python bench/run.py [--reps N] [--quick] [--only NAME[,NAME...]]

Each server runs standalone on a unix socket in a fresh temporary directory; nothing
else is started or stopped.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pyovsdb.jsonrpc.client import Client
from pyovsdb.testing import NB_SCHEMA, ServerProcess, create_db

KINDS = ("real", "ours")


def fresh_server(kind: str, root: Path, tag: str) -> ServerProcess:
    d = root / f"{kind}-{tag}"
    d.mkdir()
    db = create_db("real", d / "nb.db", NB_SCHEMA)
    return ServerProcess(kind, d, [db], name="nb").start()


def check(reply: dict) -> None:
    if reply.get("error") is not None:
        raise SystemExit(f"error reply: {reply}")
    for r in reply["result"]:
        if r is not None and "error" in r:
            raise SystemExit(f"op error: {reply}")


def insert_op(name: str) -> dict:
    return {"op": "insert", "table": "Logical_Switch", "row": {"name": name}}


# -- benchmarks: each returns seconds for the measured job ----------------------------------


def bench_lsadd(srv: ServerProcess, n: int) -> float:
    subprocess.run(["ovn-nbctl", f"--db={srv.unix}", "init"], check=True)
    t0 = time.perf_counter()
    for i in range(n):
        subprocess.run(["ovn-nbctl", f"--db={srv.unix}", "ls-add", f"ls{i}"], check=True)
    return (time.perf_counter() - t0) / n


def bench_seq(srv: ServerProcess, n: int) -> float:
    with Client(srv.unix) as c:
        t0 = time.perf_counter()
        for i in range(n):
            check(c.wait(c.send("transact", ["OVN_Northbound", insert_op(f"s{i}")])))
        return (time.perf_counter() - t0) / n


def bench_pipe(srv: ServerProcess, n: int, window: int = 64) -> float:
    with Client(srv.unix) as c:
        t0 = time.perf_counter()
        pending: list[int] = []
        sent = 0
        while sent < n or pending:
            while sent < n and len(pending) < window:
                pending.append(c.send("transact", ["OVN_Northbound", insert_op(f"p{sent}")]))
                sent += 1
            check(c.wait(pending.pop(0)))
        return (time.perf_counter() - t0) / n


def bench_bulk(srv: ServerProcess, n: int) -> float:
    ops = ["OVN_Northbound"] + [insert_op(f"b{i}") for i in range(n)]
    with Client(srv.unix) as c:
        t0 = time.perf_counter()
        check(c.wait(c.send("transact", ops)))
        return time.perf_counter() - t0


def populate(srv: ServerProcess, nsw: int, nport: int, batch: int = 100) -> None:
    with Client(srv.unix) as c:
        for start in range(0, nsw, batch):
            ops: list = ["OVN_Northbound"]
            for s in range(start, min(nsw, start + batch)):
                ports = []
                for p in range(nport):
                    name = f"p{s}_{p}"
                    ops.append({"op": "insert", "table": "Logical_Switch_Port",
                                "uuid-name": f"p{s}x{p}",
                                "row": {"name": f"lsp-{s}-{p}",
                                        "addresses": f"0a:00:00:{s // 256 % 256:02x}:"
                                                     f"{s % 256:02x}:{p:02x} 10.{s // 256}."
                                                     f"{s % 256}.{p + 2}",
                                        "external_ids": ["map", [["owner", name]]]}})
                    ports.append(["named-uuid", f"p{s}x{p}"])
                ops.append({"op": "insert", "table": "Logical_Switch",
                            "row": {"name": f"ls{s}", "ports": ["set", ports]}})
            check(c.wait(c.send("transact", ops)))


def bench_dump(srv: ServerProcess) -> float:
    t0 = time.perf_counter()
    subprocess.run(["ovsdb-client", "dump", srv.unix, "OVN_Northbound"], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


# -- driver ----------------------------------------------------------------------------------


def measure(root: Path, reps: int, name: str,
            job: Callable[[ServerProcess], float], setup: Callable[[ServerProcess], None]
            | None = None, fresh_each: bool = True) -> dict[str, float]:
    out: dict[str, float] = {}
    for kind in KINDS:
        samples = []
        srv = None
        for r in range(reps):
            if srv is None or fresh_each:
                if srv is not None:
                    srv.stop()
                srv = fresh_server(kind, root, f"{name}-{r}")
                if setup is not None:
                    setup(srv)
            samples.append(job(srv))
        assert srv is not None
        srv.stop()
        out[kind] = statistics.median(samples)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    ap.add_argument("--only", default="", help="comma-separated benchmark names")
    args = ap.parse_args()
    for b in ("ovsdb-server", "ovsdb-tool", "ovsdb-client", "ovn-nbctl"):
        if shutil.which(b) is None:
            print(f"bench: {b} is not installed (Debian: openvswitch-common, ovn-central)",
                  file=sys.stderr)
            return 1
    q = args.quick
    sizes = {
        "lsadd": 20 if q else 100,
        "seq": 500 if q else 5000,
        "pipe": 2000 if q else 20000,
        "bulk": 2000 if q else 10000,
        "dump_sw": 200 if q else 2000,
        "dump_port": 10,
    }
    only = set(filter(None, args.only.split(",")))
    rows: list[tuple[str, str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="pyovsdb-bench-") as tmp:
        root = Path(tmp)

        def want(name: str) -> bool:
            return not only or name in only

        if want("lsadd"):
            n = sizes["lsadd"]
            rows.append((f"{n} sequential ovn-nbctl ls-add, per op", "ms",
                         _scale(measure(root, args.reps, "lsadd",
                                        lambda s: bench_lsadd(s, n)), 1e3)))
        if want("seq"):
            n = sizes["seq"]
            rows.append((f"raw single-insert txn, 1 in flight ({n}), per txn", "us",
                         _scale(measure(root, args.reps, "seq",
                                        lambda s: bench_seq(s, n)), 1e6)))
        if want("pipe"):
            n = sizes["pipe"]
            rows.append((f"raw single-insert txn, 64 in flight ({n}), per txn", "us",
                         _scale(measure(root, args.reps, "pipe",
                                        lambda s: bench_pipe(s, n)), 1e6)))
        if want("bulk"):
            n = sizes["bulk"]
            rows.append((f"one txn of {n} inserts", "ms",
                         _scale(measure(root, args.reps, "bulk",
                                        lambda s: bench_bulk(s, n)), 1e3)))
        if want("dump"):
            nsw, npt = sizes["dump_sw"], sizes["dump_port"]
            rows.append((f"ovsdb-client dump, NB {nsw} LS x {npt} LSP", "ms",
                         _scale(measure(root, args.reps, "dump", bench_dump,
                                        setup=lambda s: populate(s, nsw, npt),
                                        fresh_each=False), 1e3)))
    print()
    print("| benchmark | unit | real ovsdb-server | pyovsdb | ratio ours/real |")
    print("|---|---|---|---|---|")
    for label, unit, r in rows:
        ratio = r["ours"] / r["real"] if r["real"] else float("nan")
        print(f"| {label} | {unit} | {r['real']:.3g} | {r['ours']:.3g} | {ratio:.2f} |")
    return 0


def _scale(d: dict[str, float], k: float) -> dict[str, float]:
    return {kind: v * k for kind, v in d.items()}


if __name__ == "__main__":
    sys.exit(main())
