"""northd cold start on the 100-switch mix: our northd and the real ovn-northd 23.03,
same machine, same run.

    python bench/northd_lflow_bench.py [--reps N] [--servers real|ours] [--switches N]

The NB is the corpus's 100-switch mix (`tests/northd/mixgen.py`: 100 switches x 3
VIFs, 20 port groups with 80 ACLs, 10 load balancers in 2 groups, a router joining 10
switches, DHCPv4 on 20; `--switches 1000` gives a mix of the same shape with 1000
switches), loaded in one `ovn-nbctl --no-wait` transaction into a fresh NB before
northd starts. Then northd is started and, right away, `ovn-nbctl --wait=sb sync` is
run: it returns once northd has written an SB that reflects the whole NB
(the SB_Global nb_cfg handshake), so the time from northd's start to its return is the
cold start. Figures: that time, northd's CPU seconds and peak RSS (VmHWM from
/proc/PID/status) at that point, and the Logical_Flow rows in the SB (all, and those
of switch stages, so that a northd building only some pipelines shows it).

Every repetition starts fresh NB and SB servers (the real ovsdb-server unless
`--servers=ours`) on unix sockets in a temporary directory; the two northds of one
repetition run one after the other, and repetitions interleave them (real, ours,
real, ours, ...). Medians over repetitions, and the ratio ours / real of each.
Only processes this script started are stopped, by pid.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pyovsdb.testing import (
    NB_SCHEMA,
    SB_SCHEMA,
    ServerProcess,
    compile_bytecode,
    cpu_seconds,
    create_db,
    stop_process,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "northd"))
import mixgen  # the mix lives beside the corpus it generates

NORTHDS = {"real": "ovn-northd 23.03", "ours": "pyovsdb northd"}
# A source tree holding the accelerated (compiled) build, for northd kind "compiled"
# (`northd_cold_sizes.py --compiled DIR`).
ACCELERATED = ""
MAC_PREFIX = "0a:00:00"
SVC_MONITOR_MAC = "0a:00:00:ff:ff:fe"
TIMEOUT = 600


def peak_rss_mib(pid: int) -> float:
    """VmHWM of process `pid` (its peak resident set), in MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise SystemExit(f"no VmHWM for pid {pid}")


def tool(name: str, db: str, *args: str) -> str:
    p = subprocess.run([name, f"--db={db}", f"--timeout={TIMEOUT}", *args],
                       capture_output=True, text=True, timeout=TIMEOUT + 20)
    if p.returncode != 0:
        raise SystemExit(f"{name} {' '.join(args)[:200]}: {p.stderr.strip()}")
    return p.stdout


def load_mix(nb: str, switches: int) -> None:
    """The whole mix in one NB transaction."""
    cmds = [c for line in mixgen.nbctl_lines(switches) for c in line]
    tool("ovn-nbctl", nb, "--no-wait", *mixgen.joined(cmds))


def flow_counts(sb: str) -> dict[str, float]:
    """Logical_Flow rows in the SB: all of them, of switch stages, of router stages."""
    out = tool("ovn-sbctl", sb, "--format=json", "--columns=external_ids", "list",
               "Logical_Flow")
    rows = json.loads(out)["data"]
    stages = [dict(ids[1]).get("stage-name", "") for (ids,) in rows]
    return {"flows": float(len(rows)),
            "ls_flows": float(sum(1 for s in stages if s.startswith("ls_"))),
            "lr_flows": float(sum(1 for s in stages if s.startswith("lr_")))}


def cold_start(root: Path, tag: str, northd: str, servers: str,
               load: Callable[[str], None]) -> dict[str, float]:
    """One cold start: fresh NB and SB (`servers`), `load(nb socket)` fills NB, then
    `northd` starts; the time until `--wait=sb sync` returns, its CPU, peak RSS, and
    the flows it wrote."""
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
        load(nb.unix)
        base = ["ovn-northd"] if northd == "real" else [sys.executable, "-m", "pyovsdb",
                                                         "northd"]
        env = None
        if northd == "compiled":  # (ours, the accelerated build of `ACCELERATED` first)
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(
                p for p in (ACCELERATED, os.environ.get("PYTHONPATH")) if p)}
        cmd = [*base, f"--ovnnb-db={nb.unix}", f"--ovnsb-db={sb.unix}",
               f"--unixctl={d / 'northd.ctl'}", f"--pidfile={d / 'northd.pid'}",
               f"--log-file={d / 'northd.log'}", "-vconsole:off", "--no-chdir"]
        with open(d / "northd.stderr", "wb") as err:
            t0 = time.monotonic()
            proc = subprocess.Popen(cmd, cwd=d, stdout=subprocess.DEVNULL, stderr=err,
                                    env=env)
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


def missing_tools(servers: str) -> list[str]:
    need = ["ovn-northd", "ovn-nbctl", "ovn-sbctl"] + (
        ["ovsdb-server", "ovsdb-tool"] if servers == "real" else [])
    return [b for b in need if shutil.which(b) is None]


def medians(reps: int, servers: str, prefix: str, load: Callable[[str], None],
            kinds: dict[str, str] = NORTHDS) -> dict[str, dict[str, float]]:
    """`reps` cold starts of each northd of `kinds`, interleaved; the median of each
    figure."""
    samples: dict[str, list[dict[str, float]]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        for r in range(reps):
            for kind in kinds:
                print(f"[cold start] rep {r + 1}/{reps}: {kinds[kind]}",
                      file=sys.stderr, flush=True)
                res = cold_start(Path(tmp), f"{kind}-{r}", kind, servers, load)
                print(f"    {json.dumps({k: round(x, 3) for k, x in res.items()})}",
                      file=sys.stderr, flush=True)
                samples[kind].append(res)
    return {k: {f: statistics.median(s[f] for s in ss) for f in ss[0]}
            for k, ss in samples.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--servers", choices=("real", "ours"), default="real",
                    help="which ovsdb server serves NB and SB")
    ap.add_argument("--switches", type=int, default=mixgen.SWITCHES,
                    help="switches in the mix (a multiple of 20)")
    args = ap.parse_args()
    compile_bytecode()  # (our daemons start as an installed package's do)
    missing = missing_tools(args.servers)
    if missing:
        print(f"bench: not installed: {', '.join(missing)} (Debian: ovn-central)",
              file=sys.stderr)
        return 1
    med = medians(args.reps, args.servers, "pyovsdb-lflow-bench-",
                  lambda nb: load_mix(nb, args.switches))
    print(f"\ncold start on the {args.switches}-switch mix ({args.servers} ovsdb-server for "
          f"NB and SB); median of {args.reps}\n")
    print("| northd | until `--wait=sb sync` returns, s | CPU s | peak RSS MiB "
          "| Logical_Flow rows | of switch stages |")
    print("|---|---|---|---|---|---|")
    for kind, f in med.items():
        print(f"| {NORTHDS[kind]} | {f['start_s']:.2f} | {f['cpu_s']:.2f} | "
              f"{f['rss_mib']:.0f} | {f['flows']:.0f} | {f['ls_flows']:.0f} |")
    ours, real = med["ours"], med["real"]

    def ratio(f: str) -> str:
        return f"{ours[f] / real[f]:.1f}x" if real[f] else "-"
    print(f"| ours / real | {ratio('start_s')} | {ratio('cpu_s')} | {ratio('rss_mib')} "
          f"| {ratio('flows')} | {ratio('ls_flows')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
