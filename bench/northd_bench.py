"""northd benchmarks: our northd and the real ovn-northd 23.03, same machine, same run.

    python bench/northd_bench.py [--reps N] [--quick] [--only churn,burst]

- churn (seed 000): NB churn faster than northd keeps up. NB preloaded with
  SWITCHES x PORTS VIF ports; once northd has bound them all in SB and gone quiet (under
  20 ms of CPU in a second: the echo of its first commit taken in), one new port per NB
  transaction at a steady RATE for SECONDS. Variants: the real ovn-northd (23.03 has no
  backoff option: it runs with 0), ours with `northd-backoff-interval-ms` 0 and 200.
  Figures: northd CPU seconds from the first churn transaction until SB holds every
  churned port, and the NB-write-to-SB-Port_Binding latency P50/P99 (a watcher IDL on
  SB timestamps the arrival of each port's Port_Binding).
- burst (seed 004): 1,000 back-to-back single-port NB transactions (one in flight) on a
  preloaded NB; and paced: the same with a pause (2 ms) after each reply on a small NB,
  where one engine run is short enough for each transaction to wake northd. Variants:
  ours with the main loop's wake delayed 0 and 5 ms (`--seq-delay-ms`), the real
  ovn-northd for reference. Figures: time from the first
  transaction until SB holds the last port, northd CPU seconds, engine runs (the
  `northd` node's recompute + compute counts of `inc-engine/show-stats`).

Every repetition starts fresh NB and SB servers (the real ovsdb-server unless
`--servers=ours`) on unix sockets in a temporary directory, and its northd; the
variants of one repetition run one after the other, repetitions interleave them.
Medians over repetitions. Only processes this script started are stopped, by pid.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyovsdb.idl import Idl, IdlRow
from pyovsdb.jsonrpc.client import Client
from pyovsdb.jsonrpc.session import ClientConnection, connect
from pyovsdb.ovsdb.changeset import Changeset
from pyovsdb.testing import (
    NB_SCHEMA,
    SB_SCHEMA,
    ServerProcess,
    compile_bytecode,
    cpu_seconds,
    create_db,
    stop_process,
)


async def settled(pid: int, timeout: float, alive: Callable[[], None],
                  quiet_s: float = 1.0, busy_cpu_s: float = 0.02) -> float:
    """Wait until process `pid` used less than `busy_cpu_s` of CPU over `quiet_s`;
    the seconds waited."""
    t0 = time.monotonic()
    samples = [(t0, cpu_seconds(pid))]
    while time.monotonic() - t0 < timeout:
        await asyncio.sleep(0.1)
        alive()
        now = (time.monotonic(), cpu_seconds(pid))
        samples.append(now)
        while samples[0][0] < now[0] - quiet_s - 0.05:
            samples.pop(0)
        if now[0] - samples[0][0] >= quiet_s and now[1] - samples[0][1] < busy_cpu_s:
            return now[0] - t0
    raise SystemExit(f"northd (pid {pid}) did not settle in {timeout:.0f} s")


@dataclass(frozen=True)
class Variant:
    label: str
    northd: str  # "ours" or "real"
    backoff_ms: int | None = None  # NB_Global options:northd-backoff-interval-ms
    seq_delay_ms: float | None = None  # our hidden --seq-delay-ms


# -- one control plane ----------------------------------------------------------------


class Plane:
    """NB and SB servers and one northd in `workdir`."""

    def __init__(self, workdir: Path, server_kind: str) -> None:
        self.dir = workdir
        self.dir.mkdir(parents=True)
        tool = "ours" if server_kind == "ours" else "real"
        self.nb = ServerProcess(server_kind, workdir,
                                [create_db(tool, workdir / "nb.db", NB_SCHEMA)], name="nb")
        self.sb = ServerProcess(server_kind, workdir,
                                [create_db(tool, workdir / "sb.db", SB_SCHEMA)], name="sb")
        self.northd: subprocess.Popen[bytes] | None = None
        self.ctl = str(workdir / "northd.ctl")

    def start_servers(self) -> None:
        self.nb.start()
        self.sb.start()
        nbctl(self.nb.unix, "init")

    def start_northd(self, v: Variant) -> int:
        base = [sys.executable, "-m", "pyovsdb", "northd"] if v.northd == "ours" \
            else ["ovn-northd"]
        extra = [] if v.seq_delay_ms is None else [f"--seq-delay-ms={v.seq_delay_ms:g}"]
        cmd = [*base, f"--ovnnb-db={self.nb.unix}", f"--ovnsb-db={self.sb.unix}",
               f"--unixctl={self.ctl}", f"--pidfile={self.dir / 'northd.pid'}",
               f"--log-file={self.dir / 'northd.log'}", "-vconsole:off", "--no-chdir",
               *extra]
        with open(self.dir / "northd.stderr", "wb") as err:
            self.northd = subprocess.Popen(cmd, cwd=self.dir, stdout=subprocess.DEVNULL,
                                           stderr=err)
        return self.northd.pid

    def appctl(self, *args: str) -> str:
        p = subprocess.run(["ovn-appctl", "-t", self.ctl, *args], capture_output=True,
                           text=True, timeout=60)
        if p.returncode != 0:
            raise SystemExit(f"ovn-appctl {' '.join(args)}: {p.stderr.strip()}")
        return p.stdout

    def engine_runs(self) -> int:
        """The `northd` node's recompute + compute counts."""
        stats = parse_show_stats(self.appctl("inc-engine/show-stats"))
        node = stats.get("northd", {})
        return node.get("recompute", 0) + node.get("compute", 0)

    def check_alive(self) -> None:
        if self.northd is not None and self.northd.poll() is not None:
            log = (self.dir / "northd.log").read_text(errors="replace")[-2000:] \
                if (self.dir / "northd.log").exists() else ""
            err = (self.dir / "northd.stderr").read_text(errors="replace")[-2000:]
            raise SystemExit(f"northd exited ({self.northd.returncode}):\n{log}\n{err}")

    def stop(self) -> None:
        if self.northd is not None:
            stop_process(self.northd)
            self.northd = None
        self.sb.stop()
        self.nb.stop()


def parse_show_stats(text: str) -> dict[str, dict[str, int]]:
    """`inc-engine/show-stats` output ("Node: NAME" then "- STAT: N" lines) by node."""
    out: dict[str, dict[str, int]] = {}
    node: dict[str, int] | None = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Node:"):
            node = out.setdefault(line.split(":", 1)[1].strip(), {})
        elif line.startswith("-") and node is not None and ":" in line:
            name, _, value = line[1:].partition(":")
            try:
                node[name.strip()] = int(value.split()[0])
            except (ValueError, IndexError):
                pass
    return out


def nbctl(db: str, *args: str) -> str:
    p = subprocess.run(["ovn-nbctl", f"--db={db}", "--timeout=600", *args],
                       capture_output=True, text=True, timeout=620)
    if p.returncode != 0:
        raise SystemExit(f"ovn-nbctl {' '.join(args)}: {p.stderr.strip()}")
    return p.stdout


def preload(db: str, nsw: int, nport: int, batch: int = 50) -> None:
    """`nsw` switches of `nport` VIFs each (MAC and IP), `batch` switches a transaction."""
    with Client(db) as c:
        for start in range(0, nsw, batch):
            ops: list[Any] = ["OVN_Northbound"]
            for s in range(start, min(nsw, start + batch)):
                ports = []
                for p in range(nport):
                    ops.append({"op": "insert", "table": "Logical_Switch_Port",
                                "uuid-name": f"p{s}x{p}",
                                "row": {"name": f"lsp-{s}-{p}",
                                        "addresses": port_address(s, p)}})
                    ports.append(["named-uuid", f"p{s}x{p}"])
                ops.append({"op": "insert", "table": "Logical_Switch",
                            "row": {"name": f"ls{s}", "ports": ["set", ports]}})
            reply = c.call("transact", ops)
            check_ops(reply)


def port_address(s: int, p: int) -> str:
    return (f"0a:00:{s // 256 % 256:02x}:{s % 256:02x}:{p // 256 % 256:02x}:{p % 256:02x} "
            f"10.{s % 256}.{p // 250}.{p % 250 + 2}")


def check_ops(reply: Any) -> None:
    for r in reply:
        if isinstance(r, dict) and "error" in r:
            raise SystemExit(f"NB transaction failed: {r}")


def set_nb_option(db: str, key: str, value: str) -> None:
    nbctl(db, "set", "NB_Global", ".", f'options:{key}="{value}"')


# -- the watcher and the writer ---------------------------------------------------------


class Watcher:
    """A Southbound IDL that timestamps the first arrival of each Port_Binding."""

    def __init__(self, sb: str) -> None:
        self.idl = Idl(sb, "OVN_Southbound", tables={"Port_Binding": ["logical_port"]})
        self.arrived: dict[str, float] = {}
        self.changed = asyncio.Event()

    async def start(self) -> None:
        self.idl.on_change(self._on_change)
        await self.idl.start(timeout=60)
        now = time.monotonic()
        for row in self.idl["Port_Binding"].rows.values():
            self.arrived.setdefault(row.logical_port, now)

    def _on_change(self, cs: Changeset[IdlRow]) -> None:
        now = time.monotonic()
        for table, changes in cs:
            if table != "Port_Binding":
                continue
            for ch in changes.values():
                if ch.new is not None:
                    self.arrived.setdefault(str(ch.new.get("logical_port")), now)
        self.changed.set()

    async def wait_all(self, names: Callable[[], set[str]], timeout: float,
                       alive: Callable[[], None]) -> bool:
        deadline = time.monotonic() + timeout
        while not names() <= self.arrived.keys():
            alive()
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), min(left, 1.0))
            except TimeoutError:
                pass
        return True

    async def stop(self) -> None:
        await self.idl.close()


class Writer:
    """Single-port NB transactions, one in flight, on a raw connection."""

    def __init__(self, nb: str, nsw: int) -> None:
        self.nb = nb
        self.nsw = nsw
        self.conn: ClientConnection | None = None
        self.sent: dict[str, float] = {}

    async def start(self) -> None:
        self.conn = await connect(self.nb, lambda: ClientConnection("nb-writer"), 30)

    async def add_port(self, k: int, prefix: str) -> None:
        assert self.conn is not None
        name = f"{prefix}-{k}"
        sw = k % self.nsw
        ops = ["OVN_Northbound",
               {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "n",
                "row": {"name": name, "addresses": port_address(sw, 1000 + k)}},
               {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", f"ls{sw}"]],
                "mutations": [["ports", "insert", ["set", [["named-uuid", "n"]]]]]}]
        self.sent[name] = time.monotonic()
        check_ops(await self.conn.send_request("transact", ops))

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


# -- the two experiments -----------------------------------------------------------------


@dataclass
class Sizes:
    switches: int
    ports: int
    rate: float
    seconds: float
    burst: int
    burst_switches: int
    paced_switches: int
    paced_gap_ms: float
    initial_timeout: float
    drain_timeout: float


@dataclass
class Sample:
    figures: dict[str, float] = field(default_factory=dict)


async def _ready_plane(root: Path, tag: str, v: Variant, args: argparse.Namespace,
                       nsw: int, nport: int, sz: Sizes) -> tuple[Plane, Watcher]:
    plane = Plane(root / tag, args.servers)
    plane.start_servers()
    preload(plane.nb.unix, nsw, nport)
    if v.backoff_ms is not None:
        set_nb_option(plane.nb.unix, "northd-backoff-interval-ms", str(v.backoff_ms))
    watcher = Watcher(plane.sb.unix)
    await watcher.start()
    plane.start_northd(v)
    expected = {f"lsp-{s}-{p}" for s in range(nsw) for p in range(nport)}
    if not await watcher.wait_all(lambda: expected, sz.initial_timeout, plane.check_alive):
        raise SystemExit(f"{v.label}: SB did not get the preloaded ports in "
                         f"{sz.initial_timeout:.0f} s")
    return plane, watcher


async def churn_once(root: Path, tag: str, v: Variant, args: argparse.Namespace,
                     sz: Sizes) -> dict[str, float]:
    plane, watcher = await _ready_plane(root, tag, v, args, sz.switches, sz.ports, sz)
    writer = Writer(plane.nb.unix, sz.switches)
    try:
        await writer.start()
        assert plane.northd is not None
        pid = plane.northd.pid
        # SB holding every port is not the end of the start: northd still takes in the
        # echo of its first commit (23.03 recomputes on it). Churn is measured on a
        # settled northd; what the start costs is the cold-start bench's to say.
        settle = await settled(pid, sz.initial_timeout, plane.check_alive)
        cpu0 = cpu_seconds(pid)
        t0 = time.monotonic()
        n = int(sz.rate * sz.seconds)
        for k in range(n):
            delay = t0 + k / sz.rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await writer.add_port(k, "churn")
        t_sent = time.monotonic()
        done = await watcher.wait_all(lambda: set(writer.sent), sz.drain_timeout,
                                      plane.check_alive)
        t_end = time.monotonic()
        cpu = cpu_seconds(pid) - cpu0
        lat = [watcher.arrived[p] - t for p, t in writer.sent.items() if p in watcher.arrived]
        return {"cpu_s": cpu, "cpu_pct": 100 * cpu / (t_end - t0),
                "p50_ms": 1e3 * percentile(lat, 0.50), "p99_ms": 1e3 * percentile(lat, 0.99),
                "max_ms": 1e3 * max(lat, default=float("nan")),
                "missing": float(len(writer.sent) - len(lat)) if not done else 0.0,
                "drain_s": t_end - t_sent, "write_s": t_sent - t0, "settle_s": settle}
    finally:
        writer.close()
        await watcher.stop()
        plane.stop()


async def burst_once(root: Path, tag: str, v: Variant, args: argparse.Namespace,
                     sz: Sizes, paced: bool = False) -> dict[str, float]:
    nsw = sz.paced_switches if paced else sz.burst_switches
    gap = sz.paced_gap_ms / 1e3 if paced else 0.0
    plane, watcher = await _ready_plane(root, tag, v, args, nsw, sz.ports, sz)
    writer = Writer(plane.nb.unix, nsw)
    try:
        await writer.start()
        await asyncio.sleep(1.0)
        plane.appctl("inc-engine/clear-stats")
        assert plane.northd is not None
        pid = plane.northd.pid
        cpu0 = cpu_seconds(pid)
        t0 = time.monotonic()
        for k in range(sz.burst):
            await writer.add_port(k, "burst")
            if gap:
                await asyncio.sleep(gap)
        t_sent = time.monotonic()
        last = f"burst-{sz.burst - 1}"
        done = await watcher.wait_all(lambda: set(writer.sent), sz.drain_timeout,
                                      plane.check_alive)
        t_end = watcher.arrived.get(last, time.monotonic()) if done else time.monotonic()
        # what northd spends after the last port is in SB belongs to the burst too
        await asyncio.sleep(0.5)
        cpu = cpu_seconds(pid) - cpu0
        runs = plane.engine_runs()
        return {"total_s": t_end - t0, "write_s": t_sent - t0, "cpu_s": cpu,
                "runs": float(runs), "ms_per_run": 1e3 * cpu / max(runs, 1),
                "missing": 0.0 if done else float(len(writer.sent) - len(
                    writer.sent.keys() & watcher.arrived.keys()))}
    finally:
        writer.close()
        await watcher.stop()
        plane.stop()


# -- driver --------------------------------------------------------------------------------


CHURN = [Variant("ovn-northd 23.03 (backoff: none)", "real"),
         Variant("pyovsdb northd, backoff 0 ms", "ours", backoff_ms=0),
         Variant("pyovsdb northd, backoff 200 ms", "ours", backoff_ms=200)]
BURST = [Variant("ovn-northd 23.03", "real"),
         Variant("pyovsdb northd, seq delay 0 ms", "ours", seq_delay_ms=0),
         Variant("pyovsdb northd, seq delay 5 ms", "ours", seq_delay_ms=5)]


def run_variants(name: str, variants: list[Variant], reps: int, root: Path,
                 args: argparse.Namespace, sz: Sizes,
                 once: Callable[..., Any]) -> dict[str, dict[str, float]]:
    samples: dict[str, list[dict[str, float]]] = {v.label: [] for v in variants}
    for r in range(reps):
        for i, v in enumerate(variants):
            print(f"[{name}] rep {r + 1}/{reps}: {v.label}", file=sys.stderr, flush=True)
            res = asyncio.run(once(root, f"{name}-{r}-{i}", v, args, sz))
            print(f"    {json.dumps({k: round(x, 4) for k, x in res.items()})}",
                  file=sys.stderr, flush=True)
            samples[v.label].append(res)
    return {label: {k: statistics.median(s[k] for s in ss) for k in ss[0]}
            for label, ss in samples.items() if ss}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--only", default="", help="churn, burst, paced (comma-separated)")
    ap.add_argument("--servers", choices=("real", "ours"), default="real",
                    help="which ovsdb server serves NB and SB")
    ap.add_argument("--northd", choices=("both", "ours", "real"), default="both",
                    help="run only our northd's or only the real one's variants")
    ap.add_argument("--switches", type=int)
    ap.add_argument("--ports", type=int)
    ap.add_argument("--rate", type=float, help="churn transactions per second")
    ap.add_argument("--seconds", type=float, help="churn duration")
    ap.add_argument("--burst", type=int, help="burst transactions")
    ap.add_argument("--burst-switches", type=int)
    ap.add_argument("--paced-gap-ms", type=float, default=2.0,
                    help="the paced burst's pause after each transaction's reply")
    args = ap.parse_args()
    compile_bytecode()  # (our daemons start as an installed package's do)
    need = ["ovn-nbctl", "ovn-appctl"] + (["ovsdb-server", "ovsdb-tool"]
                                          if args.servers == "real" else [])
    if args.northd != "ours":
        need.append("ovn-northd")
    missing = [b for b in need if shutil.which(b) is None]
    if missing:
        print(f"bench: not installed: {', '.join(missing)} (Debian: ovn-central)",
              file=sys.stderr)
        return 1
    q = args.quick
    sz = Sizes(switches=args.switches or (50 if q else 1000),
               ports=args.ports or 10,
               rate=args.rate or 10.0,
               seconds=args.seconds or (3.0 if q else 30.0),
               burst=args.burst or (100 if q else 1000),
               burst_switches=args.burst_switches or (20 if q else 100),
               paced_switches=10, paced_gap_ms=args.paced_gap_ms,
               initial_timeout=600.0, drain_timeout=120.0 if q else 600.0)
    only = set(filter(None, args.only.split(",")))

    def pick(vs: list[Variant]) -> list[Variant]:
        return [v for v in vs if args.northd == "both" or v.northd == args.northd]

    with tempfile.TemporaryDirectory(prefix="pyovsdb-northd-bench-") as tmp:
        root = Path(tmp)
        if not only or "churn" in only:
            res = run_variants("churn", pick(CHURN), args.reps, root, args, sz, churn_once)
            print(f"\nchurn: {sz.switches} LS x {sz.ports} LSP preloaded, "
                  f"{int(sz.rate * sz.seconds)} single-port txns at {sz.rate:g}/s; "
                  f"median of {args.reps}\n")
            print("| northd | CPU s | CPU % | latency P50 ms | P99 ms | max ms | drain s |")
            print("|---|---|---|---|---|---|---|")
            for label, f in res.items():
                miss = f" ({f['missing']:.0f} missing)" if f["missing"] else ""
                print(f"| {label} | {f['cpu_s']:.2f} | {f['cpu_pct']:.0f} | "
                      f"{f['p50_ms']:.0f} | {f['p99_ms']:.0f} | {f['max_ms']:.0f} | "
                      f"{f['drain_s']:.2f}{miss} |")
        for shape in ("burst", "paced"):
            if only and shape not in only:
                continue
            paced = shape == "paced"

            async def once(root: Path, tag: str, v: Variant, a: argparse.Namespace,
                           s: Sizes, paced: bool = paced) -> dict[str, float]:
                return await burst_once(root, tag, v, a, s, paced)
            res = run_variants(shape, pick(BURST), args.reps, root, args, sz, once)
            nsw = sz.paced_switches if paced else sz.burst_switches
            how = f"with {sz.paced_gap_ms:g} ms after each reply" if paced \
                else "back-to-back"
            print(f"\n{shape}: {sz.burst} single-port txns, one in flight, {how}, on "
                  f"{nsw} LS x {sz.ports} LSP; median of {args.reps}\n")
            print("| northd | until SB has the last, s | sending, s | CPU s | engine runs "
                  "| CPU ms per run |")
            print("|---|---|---|---|---|---|")
            for label, f in res.items():
                miss = f" ({f['missing']:.0f} missing)" if f["missing"] else ""
                print(f"| {label} | {f['total_s']:.2f}{miss} | {f['write_s']:.2f} | "
                      f"{f['cpu_s']:.2f} | {f['runs']:.0f} | {f['ms_per_run']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
