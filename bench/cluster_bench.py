"""The seed-003 experiment, side by side: a 3-server OVN Northbound cluster of the real
ovsdb-server and one of ours (all three servers share this machine's cores, as in
shared/anchors/cluster_lsadd.sh), in one run.

Measured on each cluster:
- N sequential `ovn-nbctl --no-leader-only ls-add` processes through a follower (the
  write is forwarded to the leader: seed 003's case), and N through the leader;
- single-insert transactions per second on the leader over raw JSON-RPC, one in flight
  and 64 in flight.
Ours runs twice: with commit sync (the default) and with `--no-raft-commit-sync`.

Every figure is turned into a time (ms per operation), so ratio ours/real < 1 means we
are faster and the on/off ratio < 1 means commit sync helps. Usage:

    python bench/cluster_bench.py [--n 100] [--reps 3] [--txns 2000] [--raft unix|tcp]
                                  [--transport tcp,unix] [--only real,ours,ours-nosync]

Clients reach the members over TCP and over unix sockets (both reported, TCP first:
deployments run over TCP). The three clusters run at once, and each repetition measures
every one of them in turn, in alternating order, starting from an empty table.
Servers run as our children in a temporary directory, on loopback TCP client ports,
and are stopped by pid at the end, whatever happens.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pyovsdb.jsonrpc.client import Client
from pyovsdb.testing import NB_SCHEMA, compile_bytecode
from pyovsdb.testing_cluster import OURS, REAL, Cluster, Member

CONFIGS = [("real", REAL, []), ("ours", OURS, []),
           ("ours-nosync", OURS, ["--no-raft-commit-sync"])]


def lsadd(remote: str, names: list[str], leader_only: bool) -> float:
    """ms per `ovn-nbctl ls-add` process."""
    opts = [f"--db={remote}", "--timeout=60"]
    if not leader_only:
        opts.append("--no-leader-only")
    t0 = time.perf_counter()
    for name in names:
        subprocess.run(["ovn-nbctl", *opts, "ls-add", name], check=True)
    return (time.perf_counter() - t0) * 1000 / len(names)


def txns(remote: str, n: int, window: int, tag: str) -> float:
    """ms per single-insert transaction with `window` in flight."""
    with Client(remote, timeout=60) as c:
        pending: list[int] = []
        t0 = time.perf_counter()
        for i in range(n):
            pending.append(c.send("transact", [
                "OVN_Northbound", {"op": "insert", "table": "Logical_Switch",
                                   "row": {"name": f"{tag}-{i}"}}]))
            if len(pending) >= window:
                _check(c.wait(pending.pop(0)))
        for mid in pending:
            _check(c.wait(mid))
        return (time.perf_counter() - t0) * 1000 / n


def _check(reply: dict) -> None:
    if reply.get("error") is not None or any(
            r is not None and "error" in r for r in reply["result"]):
        raise SystemExit(f"transaction failed: {reply}")


FIGURES = [("ls-add via follower, `--no-leader-only` (ms/op)", "follower"),
           ("ls-add via leader (ms/op)", "leader"),
           ("single-insert txn on leader, 1 in flight (ms/txn)", "seq"),
           ("single-insert txn on leader, 64 in flight (ms/txn)", "pipe")]


def start_cluster(root: Path, label: str, kind: str, extra: list[str],
                  args: argparse.Namespace) -> Cluster:
    d = root / label
    d.mkdir()
    c = Cluster(d, NB_SCHEMA, "OVN_Northbound", [kind] * 3, extra=extra,
                raft_tcp=args.raft == "tcp")
    c.create()
    t0 = time.perf_counter()
    c.start()
    c.wait_formed()
    print(f"{label}: formed in {time.perf_counter() - t0:.2f} s", file=sys.stderr)
    return c


def one_rep(c: Cluster, transport: str, r: int, args: argparse.Namespace
            ) -> dict[str, float]:
    """One repetition of every figure on cluster `c`, clients over `transport`."""
    leader = c.leader()
    lm, fm = c.members[leader - 1], c.members[c.followers(leader)[0] - 1]

    def at(m: Member) -> str:
        return m.tcp if transport == "tcp" else m.unix

    tag = f"{transport}{r}"
    out = {"follower": lsadd(at(fm), [f"f{tag}-{i}" for i in range(args.n)], False),
           "leader": lsadd(at(lm), [f"l{tag}-{i}" for i in range(args.n)], True),
           "seq": txns(at(lm), args.txns, 1, f"s{tag}"),
           "pipe": txns(at(lm), args.txns, 64, f"p{tag}")}
    # The next repetition starts from an empty table: `ovn-nbctl` fetches the whole
    # database on every call, so a growing one would make later repetitions measure
    # its size rather than the transaction path.
    with Client(lm.tcp, timeout=60) as cl:
        _check(cl.wait(cl.send("transact", ["OVN_Northbound", {
            "op": "delete", "table": "Logical_Switch", "where": []}])))
    return out


def report(results: dict[str, dict[str, float]], transport: str,
           args: argparse.Namespace) -> None:
    real, ours, off = (results.get(k) for k in ("real", "ours", "ours-nosync"))

    def f(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    def ratio(a: dict[str, float] | None, b: dict[str, float] | None, key: str) -> str:
        return "-" if a is None or b is None else f"{a[key] / b[key]:.2f}"

    print(f"\nclients over {transport}, raft over {args.raft}: {args.n} ls-add per mode, "
          f"{args.txns} txns per rate, median of {args.reps}\n")
    print("| figure | real | ours (sync on) | ours/real | ours (sync off) | on/off |")
    print("|---|---|---|---|---|---|")
    for title, key in FIGURES:
        print(f"| {title} | {f(real and real[key])} | {f(ours and ours[key])} | "
              f"{ratio(ours, real, key)} | {f(off and off[key])} | {ratio(ours, off, key)} |")
    for title, key in FIGURES[2:]:
        vals = [f"{1000 / r[key]:,.0f}" if r else "-" for r in (real, ours, off)]
        print(f"| {title.replace('(ms/txn)', '(txn/s)')} | {vals[0]} | {vals[1]} | "
              f"{ratio(real, ours, key)} | {vals[2]} | - |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100, help="ls-add processes per mode and rep")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--txns", type=int, default=2000, help="transactions per txn/s rep")
    ap.add_argument("--raft", choices=("unix", "tcp"), default="tcp")
    ap.add_argument("--transport", default="tcp,unix",
                    help="comma-separated client transports to measure over")
    ap.add_argument("--only", default="", help="comma-separated config labels")
    args = ap.parse_args()
    compile_bytecode()  # (our daemons start as an installed package's do)
    transports = [t for t in args.transport.split(",") if t]
    if not transports or any(t not in ("unix", "tcp") for t in transports):
        ap.error("--transport takes unix, tcp or both")
    configs = [c for c in CONFIGS if not args.only or c[0] in args.only.split(",")]
    samples: dict[tuple[str, str], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="cbench") as tmp:
        clusters: dict[str, Cluster] = {}
        try:
            for label, kind, extra in configs:
                clusters[label] = start_cluster(Path(tmp), label, kind, extra, args)
            for r in range(args.reps):
                # every configuration in each repetition, in turn, the order reversed
                # every other time: load from elsewhere falls on all of them alike
                order = configs if r % 2 == 0 else configs[::-1]
                for transport in transports:
                    for label, _, _ in order:
                        got = one_rep(clusters[label], transport, r, args)
                        samples.setdefault((label, transport), []).append(got)
                        print(f"rep {r} {label} over {transport}: "
                              + " ".join(f"{k}={v:.3f}" for k, v in got.items()),
                              file=sys.stderr)
        finally:
            for c in clusters.values():
                c.close()
    for transport in transports:
        results = {label: {key: statistics.median(s[key] for s in samples[(label, transport)])
                           for _, key in FIGURES}
                   for label, _, _ in configs}
        report(results, transport, args)


if __name__ == "__main__":
    main()
