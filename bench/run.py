"""Side-by-side benchmark: the real ovsdb-server and ours, same machine, same run.

Every figure is a time (per operation, or for the whole job), so the ratio ours/theirs
is below 1.0 where we are faster. Usage:

    python bench/run.py [--reps N] [--quick] [--only NAME[,NAME...]]
                        [--transport unix,tcp,ssl]

Each server runs standalone in a fresh temporary directory, with a unix socket, a
loopback TCP port and, for `ssl`, a TLS one (`pssl:`, certificates of a throwaway CA,
peers verified both ways, as deployments run); every figure is measured over each
transport asked for (unix and tcp by default: deployments reach their databases over
TCP). The repetitions of the two
servers are interleaved (real, ours, ours, real, ...), so that load from elsewhere
falls on both alike; each figure is the median of its repetitions. Nothing else is
started or stopped.
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
from functools import partial
from pathlib import Path
from typing import Any

from pyovsdb.jsonrpc import tls
from pyovsdb.jsonrpc.client import Client
from pyovsdb.testing import NB_SCHEMA, ServerProcess, compile_bytecode, create_db, free_port
from pyovsdb.testing_pki import Authority, Cert

KINDS = ("real", "ours")
TRANSPORTS = ("unix", "tcp", "ssl")
# (`ssl`) the servers' certificate and the clients' one, of one throwaway CA
PKI: dict[str, Cert] = {}
SSL_PORTS: dict[int, int] = {}  # server pid -> its pssl: port


def fresh_server(kind: str, root: Path, tag: str) -> ServerProcess:
    d = root / f"{kind}-{tag}"
    d.mkdir()
    db = create_db("real", d / "nb.db", NB_SCHEMA)
    extra: list[str] = []
    port = 0
    if PKI:
        port = free_port()
        extra = [f"--remote=pssl:{port}:127.0.0.1", *PKI["server"].options()]
    srv = ServerProcess(kind, d, [db], name="nb", tcp=True, extra=extra).start()
    if port and srv.proc is not None:
        SSL_PORTS[srv.proc.pid] = port
    return srv


def address(srv: ServerProcess, transport: str) -> str:
    if transport == "ssl":
        assert srv.proc is not None
        return f"ssl:127.0.0.1:{SSL_PORTS[srv.proc.pid]}"
    return srv.tcp if transport == "tcp" else srv.unix


def pki_args(remote: str) -> list[str]:
    """The real tools' PKI options, for an `ssl:` remote."""
    return PKI["client"].options() if remote.startswith("ssl:") else []


def use_tls(root: Path) -> None:
    """Certificates for the servers and the clients, and this process's client PKI."""
    ca = Authority(root / "pki")
    PKI["server"], PKI["client"] = ca.issue("server"), ca.issue("bench")
    c = PKI["client"]
    tls.set_client_pki(tls.PkiFiles(c.key, c.cert, c.ca))


def check(reply: dict) -> None:
    if reply.get("error") is not None:
        raise SystemExit(f"error reply: {reply}")
    for r in reply["result"]:
        if r is not None and "error" in r:
            raise SystemExit(f"op error: {reply}")


def insert_op(name: str) -> dict:
    return {"op": "insert", "table": "Logical_Switch", "row": {"name": name}}


# -- benchmarks: each returns seconds for the measured job ----------------------------------


def bench_lsadd(remote: str, n: int) -> float:
    nbctl = ["ovn-nbctl", f"--db={remote}", *pki_args(remote)]
    subprocess.run([*nbctl, "init"], check=True)
    t0 = time.perf_counter()
    for i in range(n):
        subprocess.run([*nbctl, "ls-add", f"ls{i}"], check=True)
    return (time.perf_counter() - t0) / n


def bench_seq(remote: str, n: int) -> float:
    with Client(remote) as c:
        t0 = time.perf_counter()
        for i in range(n):
            check(c.wait(c.send("transact", ["OVN_Northbound", insert_op(f"s{i}")])))
        return (time.perf_counter() - t0) / n


def bench_pipe(remote: str, n: int, window: int = 64) -> float:
    with Client(remote) as c:
        t0 = time.perf_counter()
        pending: list[int] = []
        sent = 0
        while sent < n or pending:
            while sent < n and len(pending) < window:
                pending.append(c.send("transact", ["OVN_Northbound", insert_op(f"p{sent}")]))
                sent += 1
            check(c.wait(pending.pop(0)))
        return (time.perf_counter() - t0) / n


def bench_bulk(remote: str, n: int) -> float:
    ops = ["OVN_Northbound"] + [insert_op(f"b{i}") for i in range(n)]
    with Client(remote) as c:
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


def bench_dump(remote: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(["ovsdb-client", *pki_args(remote), "dump", remote, "OVN_Northbound"],
                   check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


# -- driver ----------------------------------------------------------------------------------


def measure(root: Path, reps: int, name: str, transport: str,
            job: Callable[[str], float], setup: Callable[[ServerProcess], None]
            | None = None, fresh_each: bool = True) -> dict[str, float]:
    """Median of `reps` runs of `job(remote)` per kind, the kinds taking turns (and
    going first in turn). A server is fresh for each run unless `fresh_each` is
    false; `setup` runs on each new server."""
    samples: dict[str, list[float]] = {kind: [] for kind in KINDS}
    servers: dict[str, ServerProcess] = {}
    try:
        for r in range(reps):
            for kind in (KINDS if r % 2 == 0 else KINDS[::-1]):
                srv = servers.get(kind)
                if srv is None or fresh_each:
                    if srv is not None:
                        srv.stop()
                    srv = servers[kind] = fresh_server(kind, root,
                                                       f"{name}-{transport}-{r}")
                    if setup is not None:
                        setup(srv)
                samples[kind].append(job(address(srv, transport)))
    finally:
        for srv in servers.values():
            srv.stop()
    return {kind: statistics.median(v) for kind, v in samples.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    ap.add_argument("--only", default="", help="comma-separated benchmark names")
    ap.add_argument("--transport", default="unix,tcp",
                    help="comma-separated client transports to measure over")
    args = ap.parse_args()
    compile_bytecode()  # (our daemons start as an installed package's do)
    transports = [t for t in args.transport.split(",") if t]
    if not transports or any(t not in TRANSPORTS for t in transports):
        ap.error("--transport takes a comma-separated list of unix, tcp and ssl")
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
    rows: list[tuple[str, str, str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="pyovsdb-bench-") as tmp:
        root = Path(tmp)
        if "ssl" in transports:
            use_tls(root)

        def want(name: str) -> bool:
            return not only or name in only

        n_ls, n_seq, n_pipe, n_bulk = (sizes[k] for k in ("lsadd", "seq", "pipe", "bulk"))
        nsw, npt = sizes["dump_sw"], sizes["dump_port"]
        # name, label, unit, scale, job, keyword arguments of `measure`
        benches: list[tuple[str, str, str, float, Callable[[str], float], dict[str, Any]]] = [
            ("lsadd", f"{n_ls} sequential ovn-nbctl ls-add, per op", "ms", 1e3,
             partial(bench_lsadd, n=n_ls), {}),
            ("seq", f"raw single-insert txn, 1 in flight ({n_seq}), per txn", "us", 1e6,
             partial(bench_seq, n=n_seq), {}),
            ("pipe", f"raw single-insert txn, 64 in flight ({n_pipe}), per txn", "us", 1e6,
             partial(bench_pipe, n=n_pipe), {}),
            ("bulk", f"one txn of {n_bulk} inserts", "ms", 1e3,
             partial(bench_bulk, n=n_bulk), {}),
            ("dump", f"ovsdb-client dump, NB {nsw} LS x {npt} LSP", "ms", 1e3, bench_dump,
             {"setup": partial(populate, nsw=nsw, nport=npt), "fresh_each": False}),
        ]
        for name, label, unit, scale, job, kw in benches:
            if not want(name):
                continue
            for tr in transports:
                r = measure(root, args.reps, name, tr, job, **kw)
                rows.append((label, tr, unit, _scale(r, scale)))
    print()
    print("| benchmark | over | unit | real ovsdb-server | pyovsdb | ratio ours/real |")
    print("|---|---|---|---|---|---|")
    for label, tr, unit, r in rows:
        ratio = r["ours"] / r["real"] if r["real"] else float("nan")
        print(f"| {label} | {tr} | {unit} | {r['real']:.3g} | {r['ours']:.3g} | "
              f"{ratio:.2f} |")
    return 0


def _scale(d: dict[str, float], k: float) -> dict[str, float]:
    return {kind: v * k for kind, v in d.items()}


if __name__ == "__main__":
    sys.exit(main())
