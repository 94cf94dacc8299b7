"""What a cluster-wide load balancer group costs our northd, without servers or sockets.

    python bench/northd_lb_group_profile.py --nodes 100 --lbs 1500
    python bench/northd_lb_group_profile.py --nodes 100 --lbs 1500 --trace 12

The topology is the scale harness's ovn-kubernetes cluster (`scale/topology.py`: per
node a switch and a gateway router, both in the cluster's load balancer group), loaded
into in-memory NB and SB databases (`northd.testing.LocalNorthd`, not self-checked) and
settled. Then `--lbs` load balancer rows (one VIP each, three protocols per load
balancer as density-heavy writes them) join the group, 50 load balancers per run, and
then `--adds` more one at a time. Printed: northd's CPU seconds for the group's
startup, the process's peak RSS before and after, the median milliseconds of one
load balancer added, and the recompute counts. `--trace N` prints the N lines that hold
the most memory after the startup (tracemalloc; it slows the run about 30 times). A
tool to find where the density-heavy scenario's northd CPU and memory go; the figures
that compare with ovn-northd come from `pyovsdb scale --scenario density-heavy`.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
import tracemalloc
from typing import Any

from pyovsdb.northd.testing import LocalDb, LocalNorthd, add_chassis
from pyovsdb.scale import topology
from pyovsdb.storage.schemafile import load_schema
from pyovsdb.testing import NB_SCHEMA, SB_SCHEMA


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _vip(k: int) -> str:
    return f"100.{k >> 16 & 255}.{k >> 8 & 255}.{k & 255}:80"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--lbs", type=int, default=1500, help="load balancer rows at startup")
    ap.add_argument("--adds", type=int, default=10, help="load balancers then added alone")
    ap.add_argument("--trace", type=int, default=0, metavar="N")
    args = ap.parse_args()
    nb, sb = LocalDb(load_schema(NB_SCHEMA)), LocalDb(load_schema(SB_SCHEMA))
    for n in range(args.nodes):
        add_chassis(sb, topology.chassis_name(n), f"192.168.{n // 250}.{n % 250 + 1}",
                    hostname=topology.node_name(n))
    northd = LocalNorthd(nb, sb, self_check=False)

    def write(ops: list[dict[str, Any]]) -> list[Any]:
        northd.nb_changed(nb.transact(ops))
        return list(nb.last_results)

    write(topology.global_ops())
    group = write(topology.cluster_ops())[-1]["uuid"][1]
    for n in range(args.nodes):
        write(topology.node_ops(n, group))
    northd.settle()
    before = _peak_mib()
    if args.trace:
        tracemalloc.start(3)
    cpu = time.process_time()
    per_lb = len(topology.PROTOCOLS)
    for i in range(args.lbs // per_lb):
        write(topology.lb_ops(f"lb{i}", {_vip(i + 1): f"10.0.{i % 250}.{i % 200 + 3}:8080"}))
        if i % 50 == 49:
            northd.settle()
    northd.settle()
    cpu = time.process_time() - cpu
    print(f"{args.nodes} nodes, {args.lbs} load balancer rows: startup {cpu:.2f} s CPU, "
          f"peak RSS {before:.0f} -> {_peak_mib():.0f} MiB")
    if args.trace:
        for stat in tracemalloc.take_snapshot().statistics("lineno")[:args.trace]:
            print(" ", stat)
        tracemalloc.stop()
    took = []
    for i in range(args.adds):
        t0 = time.perf_counter()
        write(topology.lb_ops(f"lb_more{i}", {_vip(60000 + i): "10.0.0.3:8080"}))
        northd.settle()
        took.append((time.perf_counter() - t0) * 1000)
    if took:
        print(f"one load balancer added: median {statistics.median(took):.1f} ms "
              f"(of {len(took)})")
    print(f"recomputes: northd {northd.stat('northd')}, lflow {northd.stat('lflow')}")


if __name__ == "__main__":
    main()
