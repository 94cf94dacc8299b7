"""`pyovsdb scale`: an OVN control plane at scale on one machine, stacks side by side.

Rules kept here:
- Each stack asked for (`--stacks`, see `scale.stack.STACKS`) runs the same scenario in
  turn, in its own directory under `--out` (a temporary one by default): its servers,
  the topology, its northd, the simulated chassis, the scenario, then everything it
  started is stopped by pid, also when something fails.
- The report (`report.html`, `summary.json`) is written once every stack has run; the
  ratios divide each stack's figures by the first stack's.
- Bad options are one line of error and status 2; a stack that fails is one line of
  error naming it and status 1, after the others' processes are stopped. SIGTERM and
  SIGHUP stop the run the same way: every process it started is stopped by pid.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..scale import scenarios
from ..scale.driver import Driver, build_topology
from ..scale.report import render_html, summarize
from ..scale.stack import STACKS, Stack
from ..scale.topology import PODS_PER_NODE


def _args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="pyovsdb scale",
        description="Run an OVN control plane with simulated chassis and a CMS scenario, "
                    "stacks side by side, and write a report.")
    ap.add_argument("--stacks", default="c,ours",
                    help=f"comma-separated, of: {', '.join(STACKS)} (default: c,ours)")
    ap.add_argument("--scenario", default="density-light", choices=scenarios.SCENARIOS,
                    help="ovn-heater's (see scale/scenarios.py)")
    ap.add_argument("--nodes", type=int, default=10, help="worker nodes (chassis)")
    ap.add_argument("--startup-pods", type=int, default=5, help="per node, not measured")
    ap.add_argument("--pods", type=int, default=50,
                    help="measured pods, in total (density-light, density-heavy)")
    ap.add_argument("--iterations", type=int, default=10,
                    help="measured iterations (cluster-density), namespaces "
                         "(netpol-multitenant) or projects (openstack)")
    ap.add_argument("--startup-iterations", type=int, default=0,
                    help="cluster-density's iterations (openstack's projects) before the "
                         "measured ones")
    ap.add_argument("--vms-per-project", type=int, default=10,
                    help="openstack's VMs per project (at most 250)")
    ap.add_argument("--rate", type=float, default=0.0,
                    help="density-light's measured pods (openstack's projects) per "
                         "second, not waiting for each (default: one at a time)")
    ap.add_argument("--transport", choices=("unix", "tcp"), default="unix")
    ap.add_argument("--clustered", action="store_true",
                    help="each database a 3-member Raft cluster (ovn-heater's clustered_db)")
    ap.add_argument("--work-ms", type=float, default=0.0,
                    help="chassis CPU per wake-up, standing for flow computation (all "
                         "the chassis share this machine's cores: off by default)")
    ap.add_argument("--work-us-per-row", type=float, default=0.0,
                    help="chassis CPU per Southbound row changed (off by default)")
    ap.add_argument("--wake-delay-ms", type=float, default=0.0,
                    help="chassis' delayed wake (seed 004)")
    ap.add_argument("--server-update-delay-ms", type=float, default=0.0,
                    help="our servers' --update-delay-ms: a client's monitor updates "
                         "no sooner than this after its previous ones (seed 004 on the "
                         "server's output; the real server has no such option)")
    ap.add_argument("--upstream", type=Path,
                    help="for the c-newest and ours-servers-newest stacks: the directory "
                         "bench/build_upstream_ovn.sh printed (ovn-northd and the schemas "
                         "of the newest OVN)")
    ap.add_argument("--northd-backoff-ms", type=int, default=0,
                    help="NB_Global northd-backoff-interval-ms (seed 000)")
    ap.add_argument("--monitor-all", action="store_true", help="chassis monitor every row")
    ap.add_argument("--timeout", type=float, default=60.0, help="per pod, seconds")
    ap.add_argument("--out", help="directory for the stacks' files and the report")
    args = ap.parse_args(argv)
    bad = [s for s in args.stacks.split(",") if s not in STACKS]
    if bad:
        ap.error(f"unknown stack {bad[0]!r} (expected one of {', '.join(STACKS)})")
    if args.nodes < 1 or min(args.startup_pods, args.pods, args.rate, args.iterations,
                             args.startup_iterations) < 0:
        ap.error("--nodes must be at least 1, --startup-pods, --pods, --iterations, "
                 "--startup-iterations and --rate at least 0")
    newest = [s for s in args.stacks.split(",") if STACKS[s][1] == "newest"]
    if newest and (
            args.upstream is None or not (args.upstream / "northd" / "ovn-northd").exists()):
        ap.error(f"the {newest[0]} stack needs --upstream DIR, an upstream OVN build "
                 "(bench/build_upstream_ovn.sh)")
    if not 0 <= args.server_update_delay_ms <= 60_000:
        ap.error("--server-update-delay-ms takes milliseconds from 0 to 60000")
    if scenarios.pods_needed(args.scenario, _config(args)) > PODS_PER_NODE:
        ap.error(f"at most {PODS_PER_NODE} pods per node")
    if not 0 <= args.vms_per_project <= 250 or args.iterations + args.startup_iterations > 4000:
        ap.error("--vms-per-project takes 0 to 250, and at most 4000 projects in all")
    return args


def _config(args: argparse.Namespace) -> scenarios.Config:
    return scenarios.Config(nodes=args.nodes, startup=args.startup_pods, pods=args.pods,
                            iterations=args.iterations,
                            startup_iterations=args.startup_iterations, rate=args.rate,
                            vms=args.vms_per_project)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


async def run_stack(name: str, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    chassis_args = [f"--work-ms={args.work_ms}", f"--work-us-per-row={args.work_us_per_row}",
                    f"--wake-delay-ms={args.wake_delay_ms}"]
    if args.monitor_all:
        chassis_args.append("--monitor-all")
    stack = Stack(name, root, transport=args.transport, chassis_args=chassis_args,
                  update_delay_ms=args.server_update_delay_ms, upstream=args.upstream,
                  clustered=args.clustered)
    try:
        stack.start_servers()
        stack.start_sampling()
        build_topology(stack.remote("nb", member=0), args.nodes, args.northd_backoff_ms,
                       "openstack" if args.scenario == "openstack" else "kubernetes")
        stack.start_northd()
        stack.start_chassis(args.nodes)
        async with Driver(stack.remote("nb"), stack.remote("sb"), args.nodes, args.timeout,
                          lambda line: _say(f"{name}: {line}")) as driver:
            scenario = await scenarios.run(args.scenario, driver, _config(args))
        engine = stack.northd_engine_stats()
    finally:
        await stack.stop_sampling()  # the last sample (and peak) before the processes go
        stack.stop()
    db_bytes = stack.db_sizes()
    series = {role: {**asdict(s), "cpu_s": s.cpu_s} for role, s in stack.series.items()}
    return {"stack": name, "scenario": scenario, "series": series,
            "chassis": stack.chassis_stats(), "db_bytes": db_bytes,
            "commands": stack.commands(), "engine": engine}


async def _amain(args: argparse.Namespace, root: Path) -> int:
    runs = []
    for name in args.stacks.split(","):
        _say(f"{name}: {args.scenario}, {args.nodes} nodes, {args.startup_pods} startup "
             f"pods per node")
        runs.append(await run_stack(name, root, args))
    summaries = [summarize(r) for r in runs]
    params = {k: str(v) if isinstance(v, Path) else v
              for k, v in vars(args).items() if k != "out"}
    (root / "summary.json").write_text(json.dumps(
        {"params": params, "stacks": summaries}, indent=1) + "\n")
    (root / "runs.json").write_text(json.dumps(runs) + "\n")
    (root / "report.html").write_text(render_html(
        f"pyovsdb scale: {args.scenario}, {args.nodes} nodes", params, runs, summaries))
    for s in summaries:
        up, pol, it = s["latency_ms"]["up"], s["policy_ms"]["hv_cfg"], s["iteration_ms"]
        extra = "".join(
            f"; {label} P50 {f['p50']:.1f} ms, P99 {f['p99']:.1f} ms"
            for label, f in (("policy --wait=hv", pol), ("iteration", it)) if f["n"])
        print(f"{s['stack']}: port up P50 {up['p50']:.1f} ms, P99 {up['p99']:.1f} ms, "
              f"max {up['max']:.1f} ms{extra}; --wait=hv "
              f"{s['wait_hv_ms'].get('hv_cfg', 0):.0f} ms")
    print(f"report: {root / 'report.html'}")
    return 0


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds: every stack stops what it started


def main(argv: list[str]) -> int:
    args = _args(argv)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGHUP, _stop)
    try:
        if args.out:
            root = Path(args.out).resolve()  # the processes run in their own directories
            root.mkdir(parents=True, exist_ok=True)
            return asyncio.run(_amain(args, root))
        with tempfile.TemporaryDirectory(prefix="pyovsdb-scale-") as tmp:
            status = asyncio.run(_amain(args, Path(tmp)))
            print("(the report was in a temporary directory: give --out to keep it)",
                  file=sys.stderr)
            return status
    except (RuntimeError, OSError) as e:
        print(f"pyovsdb scale: {e}", file=sys.stderr)
        return 1
