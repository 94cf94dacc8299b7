"""Failover: kill the active northd and time how long the standby takes to carry on,
our northd (hot standby) beside ovn-northd 23.03 (Debian; a cold standby).

    python bench/northd_failover_bench.py --switches 1000 [--ports 10] [--repeat 3]
                                          [--json FILE] [--only ours,23.03]
    python bench/northd_failover_bench.py --nodes 100 [--repeat 3] [--json FILE]

Topology: with `--switches N` the grid of `bench/northd_change_bench.py` (N switches of
PORTS VIFs each, router `lr0` on the first ten and a gateway port); with `--nodes N`
the N-node ovn-kubernetes-like cluster of `tests/northd/k8sgen.py`.

Each northd kind has its own plane: NB and SB on the real ovsdb-server (unix sockets,
a temporary directory), the topology preloaded, then northd A started and settled
(status active, `ovn-nbctl --wait=sb sync` returned), then northd B started as the
standby (status standby; ours also until `inc-engine/show-stats northd standby`
counts a run, then one more `--wait=sb sync`; both then 1 s more). All planes are up
at once; the measurements take turns: repetition 1 on every plane, then 2, ...

One repetition on a plane is two failovers:

1. Kill and change: the active is SIGKILLed (t0) and at once `ovn-nbctl --wait=sb
   --print-wait-time lsp-add` adds a port. Figures: the time from t0 until that
   `ovn-nbctl` returns (`wait_sb_s`), until an `ovsdb-client monitor` of SB
   Port_Binding prints the new port (`sb_reflects_s`), the `ovn-northd completion`
   it printed, and the SB rows (inserted, deleted or modified; SB_Global apart) that an
   `ovsdb-client monitor ... ALL` saw from t0 until 3 s after the port appeared: the
   takeover's transaction and the port's together.
   The killed northd is started again as the new standby (and caught up as above).
2. Takeover alone: the active is SIGKILLed (t0) with no NB change. Figures: the time
   from t0 until the standby's `status` says active (`active_s`; 23.03 answers the
   control socket only between runs), until `ovn-nbctl --wait=sb sync` issued right
   then returns (`takeover_sync_s`, the new active's first run done), and the SB rows
   changed from t0 until 3 s after it turned active (and 1 s after that sync; the
   sync's own SB_Global write is why SB_Global is counted apart, and its modifications
   that changed more than `nb_cfg` counted too). For ours, the log's
   "Hot standby taking over without a recompute: N rows to check" line.
   The killed northd is started again as the new standby, for the next repetition.

Also, per takeover: the engine recomputes of the `northd` and `lflow` nodes across it
(`inc-engine/show-stats NODE recompute` before the kill and after), the standby's CPU
seconds over its life as standby (start to takeover: the cost of staying hot; and
from 1 s after it caught up, idle) and its peak RSS (VmHWM) then, and the killed
active's peak RSS. Medians over repetitions in a markdown table (23.03 / ours /
ours÷23.03); `--json FILE` keeps every raw number; with `--keep-logs DIR` the logs are
copied to DIR/<topology>/<kind>/ before the temporary directory goes. Only
processes this script started are stopped, by pid.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from northd_bench import cpu_seconds, preload
from northd_change_bench import COMPLETION, grid_routers
from northd_k8s_bench import load_cluster
from pyovsdb.testing import (
    NB_SCHEMA,
    SB_SCHEMA,
    ServerProcess,
    compile_bytecode,
    create_db,
    stop_process,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "northd"))
import k8sgen  # the cluster lives beside the corpus it generates

NORTHDS: dict[str, list[str]] = {
    "23.03": ["ovn-northd"],
    "ours": [sys.executable, "-m", "pyovsdb", "northd"],
}
# The SB tables northd writes (SB_Global counted apart).
SB_TABLES = ("Logical_Flow", "Logical_DP_Group", "Datapath_Binding", "Port_Binding",
             "Multicast_Group", "MAC_Binding", "Address_Set", "Port_Group", "Load_Balancer",
             "SB_Global", "HA_Chassis_Group", "IP_Multicast", "Meter", "Meter_Band", "DNS",
             "RBAC_Role", "RBAC_Permission", "Service_Monitor", "BFD", "FDB",
             "Static_MAC_Binding", "Chassis_Template_Var")
# What a monitor's JSON row says a change is (a modification prints "old", then "new").
CHANGED = ("insert", "delete", "new")
TAKEOVER_LINE = re.compile(r"Hot standby taking over without a recompute: (\d+) rows to check")
# Our takeover's and both northds' lock and recompute lines, kept in the results.
LOG_LINES = re.compile(r"Hot standby|lock acquired|lock lost|recompute|Recompute",
                       re.IGNORECASE)
WINDOW_S = 3.0  # how long after the change (or the takeover) SB rows are counted
CTL_TIMEOUT = 600.0  # for anything a 23.03 recompute at scale may hold up


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def vm_hwm_mb(pid: int) -> float:
    """Peak RSS of process `pid`, MB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Monitor:
    """`ovsdb-client --format=json monitor SB OVN_Southbound ARGS...`, its stdout read
    by a thread that keeps every line with the monotonic time it arrived (and the time
    the first line holding `needle` did)."""

    def __init__(self, sb: str, args: list[str], err: Path, needle: str | None = None
                 ) -> None:
        self.needle = needle
        self.lines: list[tuple[float, str]] = []
        self.seen = threading.Event()
        self.seen_at: float | None = None
        with open(err, "ab") as e:
            self.proc = subprocess.Popen(
                ["ovsdb-client", "--format=json", "monitor", sb, "OVN_Southbound", *args],
                stdout=subprocess.PIPE, stderr=e, text=True, bufsize=1)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            now = time.monotonic()
            self.lines.append((now, line))
            if self.needle is not None and self.seen_at is None and self.needle in line:
                self.seen_at = now
                self.seen.set()

    def wait_initial(self, timeout: float = 300, quiet_s: float = 0.5) -> None:
        """Until the initial dump printed: a first line, then `quiet_s` of none (SB is
        idle: nothing else comes)."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                raise SystemExit(f"ovsdb-client monitor exited ({self.proc.returncode})")
            if self.lines and time.monotonic() - self.lines[-1][0] >= quiet_s:
                return
            time.sleep(0.05)
        raise SystemExit(f"ovsdb-client monitor: no initial dump in {timeout:.0f} s")

    def changes(self, start: float, end: float) -> tuple[dict[str, int], int]:
        """Rows inserted, deleted or modified per table, in the updates that arrived
        between `start` and `end`; and of those, the SB_Global modifications that
        changed more than `nb_cfg` (`ovn-nbctl --wait` changes only that)."""
        out: dict[str, int] = {}
        sb_global_more = 0
        for at, line in list(self.lines):
            if not start <= at <= end or not line.strip():
                continue
            update = json.loads(line)
            table = update.get("caption", "?")
            rows = update.get("data", [])
            n = sum(1 for row in rows if row[1] in CHANGED)
            if n:
                out[table] = out.get(table, 0) + n
            if table == "SB_Global":
                heads = update.get("headings", [])
                for row in rows:  # (an "old" row holds the columns that changed)
                    changed = {heads[i] for i, v in enumerate(row) if i >= 2 and
                               v is not None} - {"_version", "nb_cfg"}
                    if row[1] == "old" and changed:
                        sb_global_more += 1
        return out, sb_global_more

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        self.thread.join(timeout=30)


class Instance:
    """One northd process: its control socket, log, and life as a standby."""

    def __init__(self, plane: Plane, n: int) -> None:
        d = plane.dir
        self.name = f"northd{n}"
        self.ctl = str(d / f"{self.name}.ctl")
        self.log = d / f"{self.name}.log"
        cmd = [*plane.binary, f"--ovnnb-db={plane.nb.unix}", f"--ovnsb-db={plane.sb.unix}",
               f"--unixctl={self.ctl}", f"--pidfile={d / (self.name + '.pid')}",
               f"--log-file={self.log}", "-vconsole:off", "--no-chdir"]
        with open(d / f"{self.name}.stderr", "wb") as err:
            self.proc = subprocess.Popen(cmd, cwd=d, stdout=subprocess.DEVNULL, stderr=err)
        self.started = time.monotonic()
        self.caught_up_s: float | None = None
        self.cpu_caught_up: float | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            tail = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise SystemExit(f"{self.name} exited ({self.proc.returncode}):\n{tail}")

    def appctl(self, *args: str, check: bool = True) -> str | None:
        p = subprocess.run(["ovn-appctl", "-t", self.ctl, *args], capture_output=True,
                           text=True, timeout=CTL_TIMEOUT)
        if p.returncode != 0:
            if check:
                raise SystemExit(f"ovn-appctl -t {self.ctl} {' '.join(args)}: "
                                 f"{p.stderr.strip()}")
            return None
        return p.stdout

    def status(self) -> str | None:
        """"active", "standby", "paused", or None while the control socket is not up."""
        out = self.appctl("status", check=False)
        m = re.search(r"Status:\s*(\w+)", out or "")
        return m.group(1) if m else None

    def wait_status(self, want: str, timeout: float = CTL_TIMEOUT, every: float = 0.1
                    ) -> float:
        """Until `status` says `want`; the monotonic time it did."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            self.check_alive()
            if self.status() == want:
                return time.monotonic()
            time.sleep(every)
        raise SystemExit(f"{self.name}: status not {want} in {timeout:.0f} s "
                         f"(last: {self.status()})")

    def counter(self, node: str, stat: str) -> int | None:
        out = self.appctl("inc-engine/show-stats", node, stat, check=False)
        try:
            return int((out or "").strip())
        except ValueError:
            return None

    def recomputes(self) -> dict[str, int | None]:
        return {node: self.counter(node, "recompute") for node in ("northd", "lflow")}

    def log_size(self) -> int:
        return self.log.stat().st_size if self.log.exists() else 0

    def log_since(self, offset: int) -> str:
        if not self.log.exists():
            return ""
        with open(self.log, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")


class Plane:
    """NB and SB servers and the two northds of one kind."""

    def __init__(self, label: str, root: Path) -> None:
        self.label = label
        self.binary = NORTHDS[label]
        self.dir = root / label.replace(".", "")
        self.dir.mkdir(parents=True)
        self.nb = ServerProcess("real", self.dir, [create_db("real", self.dir / "nb.db",
                                                             NB_SCHEMA)], name="nb")
        self.sb = ServerProcess("real", self.dir, [create_db("real", self.dir / "sb.db",
                                                             SB_SCHEMA)], name="sb")
        self.instances: list[Instance] = []
        self.monitors: list[Monitor] = []
        self.active: Instance | None = None
        self.standby: Instance | None = None
        self.result: dict[str, Any] = {"reps": [], "standby_lives": []}

    # -- setting up ------------------------------------------------------------------

    def start(self, args: argparse.Namespace) -> None:
        self.nb.start()
        self.sb.start()
        self.nbctl("init")
        t0 = time.monotonic()
        if args.nodes:
            load_cluster(self.nb.unix, args.nodes, False)
        else:
            preload(self.nb.unix, args.switches, args.ports)
            for cmd in grid_routers(args.switches):
                self.nbctl(*cmd)
        self.result["load_s"] = time.monotonic() - t0
        t0 = time.monotonic()
        self.active = self.spawn()
        self.active.wait_status("active")
        self.nbctl("--wait=sb", "sync", timeout=1800)
        self.result["cold_start_s"] = time.monotonic() - t0
        progress(f"{self.label}: loaded in {self.result['load_s']:.1f} s, active settled "
                 f"in {self.result['cold_start_s']:.1f} s")
        self.standby = self.new_standby()

    def spawn(self) -> Instance:
        inst = Instance(self, len(self.instances))
        self.instances.append(inst)
        return inst

    def new_standby(self) -> Instance:
        """A northd started while another holds the lock, waited for until it is on
        standby and caught up."""
        inst = self.spawn()
        inst.wait_status("standby")
        if self.label == "ours":
            t0 = time.monotonic()
            while (inst.counter("northd", "standby") or 0) < 1:
                inst.check_alive()
                if time.monotonic() - t0 > CTL_TIMEOUT:
                    raise SystemExit(f"{self.label} {inst.name}: no standby run in "
                                     f"{CTL_TIMEOUT:.0f} s")
                time.sleep(0.2)
            self.nbctl("--wait=sb", "sync", timeout=CTL_TIMEOUT)
        inst.caught_up_s = time.monotonic() - inst.started
        time.sleep(1)
        inst.cpu_caught_up = cpu_seconds(inst.pid)
        progress(f"{self.label}: {inst.name} on standby, caught up in "
                 f"{inst.caught_up_s:.1f} s ({inst.cpu_caught_up:.1f} s CPU)")
        return inst

    def nbctl(self, *args: str, timeout: float = 120) -> str:
        p = subprocess.run(["ovn-nbctl", f"--db={self.nb.unix}", f"--timeout={int(timeout)}",
                            *args], capture_output=True, text=True, timeout=timeout + 20)
        if p.returncode != 0:
            raise SystemExit(f"{self.label}: ovn-nbctl {' '.join(args)[:200]}: "
                             f"{p.stderr.strip()}")
        return p.stdout

    def monitor(self, args: list[str], needle: str | None = None) -> Monitor:
        m = Monitor(self.sb.unix, args, self.dir / "monitor.stderr", needle)
        self.monitors.append(m)
        return m

    def stop_monitor(self, m: Monitor) -> None:
        m.stop()
        self.monitors.remove(m)

    # -- one takeover ----------------------------------------------------------------

    def _before_kill(self) -> dict[str, Any]:
        """What is read of the pair right before the active is killed."""
        assert self.active is not None and self.standby is not None
        sb = self.standby
        cpu = cpu_seconds(sb.pid)
        life = {"instance": sb.name, "life_s": time.monotonic() - sb.started,
                "caught_up_s": sb.caught_up_s, "cpu_s": cpu,
                "cpu_after_caught_up_s": cpu - (sb.cpu_caught_up or 0.0),
                "rss_mb": vm_hwm_mb(sb.pid)}
        self.result["standby_lives"].append(life)
        return {"standby_life": life, "active_rss_mb": vm_hwm_mb(self.active.pid),
                "recomputes_before": sb.recomputes(), "log_offset": sb.log_size()}

    def _after(self, before: dict[str, Any], out: dict[str, Any]) -> None:
        """What is read of the new active once the window closed; the roles swap."""
        assert self.active is not None and self.standby is not None
        new = self.standby
        out["status_after"] = new.status()
        after = new.recomputes()
        out["recomputes"] = {k: None if v is None or before["recomputes_before"][k] is None
                             else v - before["recomputes_before"][k]
                             for k, v in after.items()}
        text = new.log_since(before["log_offset"])
        out["log"] = [line for line in text.splitlines() if LOG_LINES.search(line)][:20]
        m = TAKEOVER_LINE.search(text)
        out["rows_to_check"] = int(m.group(1)) if m else None
        out["standby_life"] = before["standby_life"]
        out["active_rss_mb"] = before["active_rss_mb"]
        self.active, self.standby = new, None

    def _kill_active(self) -> float:
        assert self.active is not None
        t0 = time.monotonic()
        self.active.proc.kill()
        return t0

    def _reap(self) -> None:
        assert self.active is not None
        self.active.proc.wait(timeout=30)

    @staticmethod
    def _split(changes: tuple[dict[str, int], int]) -> dict[str, Any]:
        rows, sb_global_more = changes
        return {"rows": sum(n for t, n in rows.items() if t in SB_TABLES and t != "SB_Global"),
                "sb_global": rows.get("SB_Global", 0),
                "sb_global_beyond_nb_cfg": sb_global_more,
                "other_tables": sum(n for t, n in rows.items() if t not in SB_TABLES),
                "by_table": rows}

    def failover_with_change(self, rep: int, change: list[str], port: str) -> dict[str, Any]:
        pb = self.monitor(["Port_Binding", "logical_port"], needle=f'"{port}"')
        every = self.monitor(["ALL"])
        try:
            pb.wait_initial()
            every.wait_initial()
            before = self._before_kill()
            t0 = self._kill_active()
            text = self.nbctl("--wait=sb", "--print-wait-time", *change, timeout=60)
            t_wait = time.monotonic()
            self._reap()
            if not pb.seen.wait(timeout=60):
                raise SystemExit(f"{self.label}: SB never showed {port}")
            assert pb.seen_at is not None
            end = pb.seen_at + WINDOW_S
            time.sleep(max(0.0, end - time.monotonic()))
            rows = every.changes(t0, end)
        finally:
            self.stop_monitor(pb)
            self.stop_monitor(every)
        m = COMPLETION.search(text)
        out: dict[str, Any] = {
            "wait_sb_s": t_wait - t0, "sb_reflects_s": pb.seen_at - t0,
            "completion_ms": float(m.group(1)) if m else None, **self._split(rows)}
        self._after(before, out)
        self.standby = self.new_standby()
        return out

    def failover_alone(self) -> dict[str, Any]:
        every = self.monitor(["ALL"])
        try:
            every.wait_initial()
            before = self._before_kill()
            assert self.standby is not None
            new = self.standby
            t0 = self._kill_active()
            self._reap()
            t_active = new.wait_status("active", every=0.05)
            self.nbctl("--wait=sb", "sync", timeout=CTL_TIMEOUT)
            t_sync = time.monotonic()
            if self.label == "ours":
                deadline = time.monotonic() + 30
                while "Hot standby" not in new.log_since(before["log_offset"]) \
                        and time.monotonic() < deadline:
                    time.sleep(0.1)
            end = max(t_active + WINDOW_S, t_sync + 1.0)
            time.sleep(max(0.0, end - time.monotonic()))
            rows = every.changes(t0, end)
        finally:
            self.stop_monitor(every)
        out: dict[str, Any] = {"active_s": t_active - t0, "takeover_sync_s": t_sync - t0,
                               **self._split(rows)}
        self._after(before, out)
        self.standby = self.new_standby()
        return out

    def repetition(self, rep: int, change: list[str], port: str) -> None:
        with_change = self.failover_with_change(rep, change, port)
        progress(f"{self.label} rep {rep}: kill + change: --wait=sb "
                 f"{with_change['wait_sb_s']:.2f} s, SB shows the port "
                 f"{with_change['sb_reflects_s']:.2f} s, {with_change['rows']} rows "
                 f"(+{with_change['sb_global']} SB_Global), recomputes "
                 f"{with_change['recomputes']}, rows to check {with_change['rows_to_check']}")
        alone = self.failover_alone()
        progress(f"{self.label} rep {rep}: takeover alone: active {alone['active_s']:.2f} s, "
                 f"sync {alone['takeover_sync_s']:.2f} s, {alone['rows']} rows "
                 f"(+{alone['sb_global']} SB_Global), recomputes {alone['recomputes']}, "
                 f"rows to check {alone['rows_to_check']}")
        self.result["reps"].append({"rep": rep, "with_change": with_change, "alone": alone})

    # -- the end ---------------------------------------------------------------------

    def stop(self, keep: Path | None) -> None:
        for m in list(self.monitors):
            try:
                m.stop()
            except Exception as e:  # (stop the rest whatever happens to one)
                progress(f"{self.label}: monitor stop: {e}")
        self.monitors.clear()
        peaks = []
        for inst in self.instances:
            if inst.proc.poll() is None:
                try:
                    peaks.append({"instance": inst.name, "rss_mb": vm_hwm_mb(inst.pid)})
                except OSError:
                    pass
            stop_process(inst.proc)
        self.result["survivors_rss_mb"] = peaks
        self.sb.stop()
        self.nb.stop()
        if keep is None:
            return
        shutil.rmtree(keep, ignore_errors=True)  # (what an earlier run left)
        keep.mkdir(parents=True)
        for f in self.dir.iterdir():
            if f.suffix in (".log", ".stderr"):
                shutil.copy(f, keep / f.name)


def change_for(args: argparse.Namespace, rep: int) -> tuple[list[str], str]:
    """The NB change made right after the kill in repetition `rep`, and its port."""
    port = f"failover{rep}"
    if args.nodes:
        host = 100 + rep % 150
        sw, addr = k8sgen.node(1), f"{k8sgen.node_mac(1, host)} {k8sgen.node_ip(1, host)}"
    else:
        s = args.switches // 2
        sw = f"ls{s}"
        addr = f"0a:fe:00:00:{rep // 256 % 256:02x}:{rep % 256:02x} " \
               f"10.{s % 256}.200.{rep % 250 + 2}"
    return ["lsp-add", sw, port, "--", "lsp-set-addresses", port, addr], port


# -- the report ----------------------------------------------------------------------

def _med(xs: list[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return statistics.median(vals) if vals else None


METRICS: list[tuple[str, str, str, str]] = [
    # (row title, which failover, field, format)
    ("kill + lsp-add: `ovn-nbctl --wait=sb` returns, s", "with_change", "wait_sb_s", ".2f"),
    ("kill + lsp-add: SB Port_Binding shows the port, s", "with_change", "sb_reflects_s",
     ".2f"),
    ("kill + lsp-add: `ovn-northd completion` printed, ms", "with_change", "completion_ms",
     ".0f"),
    ("kill + lsp-add: SB rows changed (t0 to port + 3 s; SB_Global apart)", "with_change",
     "rows", ".0f"),
    ("kill + lsp-add: SB_Global row changes", "with_change", "sb_global", ".0f"),
    ("kill + lsp-add: of those, changing more than nb_cfg", "with_change",
     "sb_global_beyond_nb_cfg", ".0f"),
    ("kill + lsp-add: `northd` node recomputes", "with_change", "recomputes.northd", ".0f"),
    ("kill + lsp-add: `lflow` node recomputes", "with_change", "recomputes.lflow", ".0f"),
    ("takeover alone: status active, s", "alone", "active_s", ".2f"),
    ("takeover alone: `--wait=sb sync` then returns (takeover_sync_s), s", "alone",
     "takeover_sync_s", ".2f"),
    ("takeover alone: SB rows changed (SB_Global apart)", "alone", "rows", ".0f"),
    ("takeover alone: SB_Global row changes (the sync's included)", "alone", "sb_global",
     ".0f"),
    ("takeover alone: of those, changing more than nb_cfg", "alone",
     "sb_global_beyond_nb_cfg", ".0f"),
    ("takeover alone: `northd` node recomputes", "alone", "recomputes.northd", ".0f"),
    ("takeover alone: `lflow` node recomputes", "alone", "recomputes.lflow", ".0f"),
    ("takeover alone: rows to check (ours' log)", "alone", "rows_to_check", ".0f"),
    ("standby: caught up after its start, s", "standby", "caught_up_s", ".1f"),
    ("standby: CPU over its life as standby, s", "standby", "cpu_s", ".2f"),
    ("standby: CPU from caught up + 1 s until takeover, s", "standby",
     "cpu_after_caught_up_s", ".2f"),
    ("standby: peak RSS when it takes over, MB", "standby", "rss_mb", ".0f"),
    ("active: peak RSS when killed, MB", "active", "active_rss_mb", ".0f"),
]


def values(result: dict[str, Any], where: str, field: str) -> list[float | None]:
    if where == "standby":
        return [life[field] for life in result["standby_lives"]]
    out: list[float | None] = []
    for rep in result["reps"]:
        for kind in (("with_change", "alone") if where == "active" else (where,)):
            v: Any = rep[kind]
            for part in field.split("."):
                v = v.get(part) if isinstance(v, dict) else None
            out.append(v)
    return out


def report(planes: list[Plane], args: argparse.Namespace) -> None:
    where = f"the {args.nodes}-node ovn-kubernetes-like cluster" if args.nodes else \
        f"{args.switches} switches x {args.ports} ports, router lr0 (10 ports and a gateway port)"
    by = {p.label: p.result for p in planes}
    labels = [lab for lab in ("23.03", "ours") if lab in by]
    print(f"\nFailover on {where}; NB and SB on the real ovsdb-server; median of "
          f"{args.repeat} repetitions (standby and active rows: of every takeover)\n")
    head = "| metric | " + " | ".join(labels) + (" | ours÷23.03 |" if len(labels) == 2 else " |")
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for title, kind, field, fmt in METRICS:
        meds = [_med(values(by[lab], kind, field)) for lab in labels]
        cells = ["-" if m is None else format(m, fmt) for m in meds]
        if len(labels) == 2:
            a, b = meds[0], meds[1]
            cells.append("-" if a is None or b is None or a == 0 else f"{b / a:.2f}")
        print(f"| {title} | " + " | ".join(cells) + " |")
    print()
    for lab in labels:
        r = by[lab]
        print(f"{lab}: loaded in {r['load_s']:.1f} s; first active settled in "
              f"{r['cold_start_s']:.1f} s")
        for rep in r["reps"]:
            for kind in ("with_change", "alone"):
                tables = ", ".join(f"{t} {n}" for t, n in sorted(rep[kind]["by_table"].items()))
                print(f"  rep {rep['rep']} {kind}: SB rows by table: {tables or 'none'}")
    sys.stdout.flush()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--switches", type=int, default=1000)
    ap.add_argument("--ports", type=int, default=10)
    ap.add_argument("--nodes", type=int, default=0,
                    help="the ovn-kubernetes-like cluster of this many nodes instead of "
                         "the grid (tests/northd/k8sgen.py)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="", help="northd kinds, comma-separated: ours,23.03")
    ap.add_argument("--json", help="write every raw number here")
    ap.add_argument("--keep-logs", type=Path, help="copy the logs under this directory")
    args = ap.parse_args()
    compile_bytecode()  # (our daemons start as an installed package's do)
    labels = [w.strip() for w in args.only.split(",")] if args.only else list(NORTHDS)
    unknown = set(labels) - set(NORTHDS)
    if unknown:
        ap.error(f"unknown northd kinds: {', '.join(sorted(unknown))}")
    topology = f"k8s{args.nodes}" if args.nodes else f"grid{args.switches}x{args.ports}"
    with tempfile.TemporaryDirectory(prefix="northd-failover-") as tmp:
        planes: list[Plane] = []
        try:
            for label in labels:
                planes.append(Plane(label, Path(tmp)))
                planes[-1].start(args)
            for rep in range(args.repeat):
                change, port = change_for(args, rep)
                for p in planes:
                    p.repetition(rep, change, port)
                progress(f"repetition {rep} done")
        finally:
            for p in planes:
                p.stop(None if args.keep_logs is None else args.keep_logs / topology / p.label)
    report(planes, args)
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"topology": "ovn-kubernetes" if args.nodes else "grid",
             "nodes": args.nodes, "switches": args.switches, "ports": args.ports,
             "repeat": args.repeat, "window_s": WINDOW_S,
             "northds": {p.label: p.result for p in planes}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
