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
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from northd_lflow_bench import (  # the switch mix's benchmark, beside this file
    MAC_PREFIX,
    NORTHDS,
    SVC_MONITOR_MAC,
    cpu_seconds,
    peak_rss_mib,
    tool,
)
from pyovsdb.testing import NB_SCHEMA, SB_SCHEMA, ServerProcess, create_db, stop_process

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "northd"))
import k8sgen  # the cluster lives beside the corpus it generates

FIELDS = ("start_s", "cpu_s", "rss_mib", "flows", "ls_flows", "lr_flows")


def load_cluster(nb: str, nodes: int, dual: bool) -> None:
    """The whole cluster in one NB transaction."""
    cmds = [c for line in k8sgen.nbctl_lines(nodes, dual) for c in line]
    tool("ovn-nbctl", nb, "--no-wait", *k8sgen.joined(cmds))


def flow_counts(sb: str) -> dict[str, float]:
    """Logical_Flow rows in the SB: all of them, of switch stages, of router stages."""
    out = tool("ovn-sbctl", sb, "--format=json", "--columns=external_ids", "list",
               "Logical_Flow")
    rows = json.loads(out)["data"]
    stages = [dict(ids[1]).get("stage-name", "") for (ids,) in rows]
    return {"flows": float(len(rows)),
            "ls_flows": float(sum(1 for s in stages if s.startswith("ls_"))),
            "lr_flows": float(sum(1 for s in stages if s.startswith("lr_")))}


def cold_start(root: Path, tag: str, northd: str, servers: str, nodes: int,
               dual: bool) -> dict[str, float]:
    d = root / tag
    d.mkdir(parents=True)
    creator = "ours" if servers == "ours" else "real"
    nb = ServerProcess(servers, d, [create_db(creator, d / "nb.db", NB_SCHEMA)], name="nb")
    sb = ServerProcess(servers, d, [create_db(creator, d / "sb.db", SB_SCHEMA)], name="sb")
    proc: subprocess.Popen[bytes] | None = None
    try:
        nb.start()
        sb.start()
        tool("ovn-nbctl", nb.unix, "--no-wait", "init", "--", "set", "NB_Global", ".",
             f"options:mac_prefix={MAC_PREFIX}", f'options:svc_monitor_mac="{SVC_MONITOR_MAC}"')
        load_cluster(nb.unix, nodes, dual)
        base = ["ovn-northd"] if northd == "real" else [sys.executable, "-m", "pyovsdb",
                                                         "northd"]
        cmd = [*base, f"--ovnnb-db={nb.unix}", f"--ovnsb-db={sb.unix}",
               f"--unixctl={d / 'northd.ctl'}", f"--pidfile={d / 'northd.pid'}",
               f"--log-file={d / 'northd.log'}", "-vconsole:off", "--no-chdir"]
        with open(d / "northd.stderr", "wb") as err:
            t0 = time.monotonic()
            proc = subprocess.Popen(cmd, cwd=d, stdout=subprocess.DEVNULL, stderr=err)
        tool("ovn-nbctl", nb.unix, "--wait=sb", "sync")
        elapsed = time.monotonic() - t0
        if proc.poll() is not None:
            raise SystemExit(f"{northd} northd exited {proc.returncode}: "
                             f"{(d / 'northd.stderr').read_text()[-2000:]}")
        cpu, rss = cpu_seconds(proc.pid), peak_rss_mib(proc.pid)
        return {"start_s": elapsed, "cpu_s": cpu, "rss_mib": rss, **flow_counts(sb.unix)}
    finally:
        if proc is not None:
            stop_process(proc)
        sb.stop()
        nb.stop()


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
    need = ["ovn-northd", "ovn-nbctl", "ovn-sbctl"] + (
        ["ovsdb-server", "ovsdb-tool"] if args.servers == "real" else [])
    missing = [b for b in need if shutil.which(b) is None]
    if missing:
        print(f"bench: not installed: {', '.join(missing)} (Debian: ovn-central)",
              file=sys.stderr)
        return 1
    samples: dict[str, list[dict[str, float]]] = {k: [] for k in NORTHDS}
    with tempfile.TemporaryDirectory(prefix="pyovsdb-k8s-bench-") as tmp:
        for r in range(args.reps):
            for kind in NORTHDS:
                print(f"[cold start] rep {r + 1}/{args.reps}: {NORTHDS[kind]}",
                      file=sys.stderr, flush=True)
                res = cold_start(Path(tmp), f"{kind}-{r}", kind, args.servers, args.nodes,
                                 args.dual_stack)
                print(f"    {json.dumps({k: round(x, 3) for k, x in res.items()})}",
                      file=sys.stderr, flush=True)
                samples[kind].append(res)
    med = {k: {f: statistics.median(s[f] for s in ss) for f in FIELDS}
           for k, ss in samples.items()}
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
