"""northd cold start on an ovn-kubernetes-like cluster: our northd and the real
ovn-northd 23.03, same machine, same run.

    python bench/northd_k8s_bench.py [--nodes N] [--dual-stack] [--reps N] [--servers real|ours]

The NB is the corpus's ovn-kubernetes-like cluster (`tests/northd/k8sgen.py`: the
cluster router and join switch, and per node a node switch with a management port and
3 pods, a gateway router with `dynamic_neigh_routers`, `lb_force_snat_ip=router_ip`,
SNAT, routes and a NodePort load balancer, an external switch with a localnet port,
a src-ip route and a reroute policy on the cluster router; 3 namespaces of port
groups, address sets and ACLs; a cluster load-balancer group on every node switch and
gateway router; with `--dual-stack` every network, address, route, policy, ACL and
service also in IPv6), loaded in one `ovn-nbctl --no-wait` transaction into a fresh NB
before northd starts. Then northd is started and, right away, `ovn-nbctl --wait=sb
sync` is run: it returns once northd has written an SB that reflects the whole NB, so
the time from northd's start to its return is the cold start. Figures: that time,
northd's CPU seconds and peak RSS at that point, and the Logical_Flow rows in the SB
(all, of switch stages and of router stages: both northds build the whole pipeline, so
they should be equal).

Every repetition starts fresh NB and SB servers on unix sockets in a temporary
directory; the two northds of one repetition run one after the other, and repetitions
interleave them (real, ours, real, ours, ...). Medians over repetitions, and the ratio
ours / real of each. Only processes this script started are stopped, by pid.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from northd_lflow_bench import (  # the switch mix's benchmark, beside this file
    NORTHDS,
    medians,
    missing_tools,
    tool,
)
from pyovsdb.testing import compile_bytecode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "northd"))
import k8sgen  # the cluster lives beside the corpus it generates

FIELDS = ("start_s", "cpu_s", "rss_mib", "flows", "ls_flows", "lr_flows")


def load_cluster(nb: str, nodes: int, dual: bool) -> None:
    """The whole cluster in one NB transaction."""
    cmds = [c for line in k8sgen.nbctl_lines(nodes, dual) for c in line]
    tool("ovn-nbctl", nb, "--no-wait", *k8sgen.joined(cmds))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=100, help="cluster nodes (1 to 250)")
    ap.add_argument("--dual-stack", action="store_true",
                    help="IPv6 beside IPv4 everywhere")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--servers", choices=("real", "ours"), default="real",
                    help="which ovsdb server serves NB and SB")
    args = ap.parse_args()
    compile_bytecode()  # (our daemons start as an installed package's do)
    missing = missing_tools(args.servers)
    if missing:
        print(f"bench: not installed: {', '.join(missing)} (Debian: ovn-central)",
              file=sys.stderr)
        return 1
    med = medians(args.reps, args.servers, "pyovsdb-k8s-bench-",
                  lambda nb: load_cluster(nb, args.nodes, args.dual_stack))
    stack = " dual-stack" if args.dual_stack else ""
    print(f"\ncold start on the {args.nodes}-node ovn-kubernetes-like{stack} cluster "
          f"({args.servers} ovsdb-server for NB and SB); median of {args.reps}\n")
    print("| northd | until `--wait=sb sync` returns, s | CPU s | peak RSS MiB "
          "| Logical_Flow rows | of switch stages | of router stages |")
    print("|---|---|---|---|---|---|---|")
    for kind, f in med.items():
        print(f"| {NORTHDS[kind]} | {f['start_s']:.2f} | {f['cpu_s']:.2f} | "
              f"{f['rss_mib']:.0f} | {f['flows']:.0f} | {f['ls_flows']:.0f} | "
              f"{f['lr_flows']:.0f} |")
    ours, real = med["ours"], med["real"]

    def ratio(f: str) -> str:
        return f"{ours[f] / real[f]:.1f}x" if real[f] else "-"
    print(f"| ours / real | {' | '.join(ratio(f) for f in FIELDS)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
