"""Quick speed smoke, ours vs the real ovsdb-server in one run, for CI: a regression of
the size of a lost TCP_NODELAY (9x per transaction on a cluster over TCP) must fail.

Each figure is the median time of one `ovn-nbctl ls-add` process (what scripts and
CMSes pay per call), the two servers taking turns call by call, so that whatever else
the machine does falls on both alike:
- a standalone server over unix and over TCP;
- a 3-member cluster (Raft over TCP) through its leader and through a follower
  (`--no-leader-only`, the write forwarded: seed 003's case), clients over TCP.

    python bench/smoke.py [--calls 15] [--threshold 2.0]

Prints one line per figure with the ratio ours/real (below 1 = we are faster) and exits
1 if any ratio is above the threshold. The threshold is wide on purpose: process start
dominates a call, so a healthy run sits near 1 and only gross regressions cross 2.
Every server runs as our child in a temporary directory and is stopped by pid.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyovsdb.testing import NB_SCHEMA, ServerProcess, compile_bytecode, create_db
from pyovsdb.testing_cluster import OURS, REAL, Cluster

KINDS = (REAL, OURS)


def lsadd_ms(remote: str, name: str, leader_only: bool = True) -> float:
    cmd = ["ovn-nbctl", f"--db={remote}", "--timeout=30"]
    if not leader_only:
        cmd.append("--no-leader-only")
    t0 = time.perf_counter()
    subprocess.run([*cmd, "ls-add", name], check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - t0) * 1000


@contextmanager
def standalone(root: Path, kind: str) -> Iterator[ServerProcess]:
    d = root / f"standalone-{kind}"
    d.mkdir()
    srv = ServerProcess(kind, d, [create_db(kind, d / "nb.db", NB_SCHEMA)], name="nb",
                        tcp=True)
    with srv:
        yield srv


@contextmanager
def cluster(root: Path, kind: str) -> Iterator[Cluster]:
    d = root / f"cluster-{kind}"
    d.mkdir()
    c = Cluster(d, NB_SCHEMA, "OVN_Northbound", [kind] * 3, raft_tcp=True)
    try:
        c.create()
        c.start()
        c.wait_formed()
        yield c
    finally:
        c.close()


def run(calls: int) -> dict[str, dict[str, float]]:
    """{figure: {kind: median ms per call}}."""
    samples: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="pyovsdb-smoke-") as tmp:
        root = Path(tmp)
        with standalone(root, REAL) as sr, standalone(root, OURS) as so, \
                cluster(root, REAL) as cr, cluster(root, OURS) as co:
            targets: dict[str, dict[str, tuple[str, bool]]] = {
                "standalone-unix": {REAL: (sr.unix, True), OURS: (so.unix, True)},
                "standalone-tcp": {REAL: (sr.tcp, True), OURS: (so.tcp, True)},
            }
            for kind, c in ((REAL, cr), (OURS, co)):
                leader = c.leader()
                follower = c.followers(leader)[0]
                targets.setdefault("cluster-leader-tcp", {})[kind] = (
                    c.members[leader - 1].tcp, True)
                targets.setdefault("cluster-follower-tcp", {})[kind] = (
                    c.members[follower - 1].tcp, False)
            for fig, by_kind in targets.items():
                for remote, leader_only in by_kind.values():
                    lsadd_ms(remote, f"{fig}-warm", leader_only)  # connect paths warm
                for i in range(calls):
                    order = KINDS if i % 2 == 0 else KINDS[::-1]
                    for kind in order:
                        remote, leader_only = by_kind[kind]
                        samples.setdefault(fig, {}).setdefault(kind, []).append(
                            lsadd_ms(remote, f"{fig}-{i}", leader_only))
    return {fig: {k: statistics.median(v) for k, v in by.items()}
            for fig, by in samples.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=15, help="ls-add calls per figure and kind")
    ap.add_argument("--threshold", type=float, default=2.0,
                    help="fail when a ratio ours/real is above this")
    args = ap.parse_args()
    compile_bytecode()  # (our daemons start as an installed package's do)
    failed = []
    for fig, r in run(args.calls).items():
        ratio = r[OURS] / r[REAL]
        print(f"{fig}: real {r[REAL]:.1f} ms, ours {r[OURS]:.1f} ms, ratio {ratio:.2f}")
        if ratio > args.threshold:
            failed.append(fig)
    if failed:
        print(f"above {args.threshold}x the real server's time: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
