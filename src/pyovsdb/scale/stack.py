"""A control plane for the scale harness: Northbound and Southbound servers, northd and
the simulated chassis, ours or the real C ones, each process sampled.

Rules kept here:
- A stack is named by what runs it: `c` (ovsdb-server and ovn-northd 23.03), `ours`
  (`pyovsdb server` and `pyovsdb northd`), `ours-servers` (ours with the real
  ovn-northd) or `ours-northd` (the real servers with our northd). `c-newest` is
  ovsdb-server with the newest upstream ovn-northd and its schemas, built from source
  (`bench/build_upstream_ovn.sh` prints the directory to give as `upstream`);
  `ours-servers-newest` is our servers with that northd and its schemas. The
  simulated chassis are ours in every stack (one program, `scale.chassis`).
- `clustered`: each database is a 3-member Raft cluster of the stack's servers
  (`testing_cluster`, as ovn-heater's `clustered_db`, with its 16 s election timer).
  northd and the driver are given
  every member and follow the leader; simulated chassis connect to one member each,
  spread over the three (`scale.chassis`); the topology is written through the first
  member (a follower forwards it).
- Every process is our child, started in the stack's own directory with explicit
  remotes, pidfile, control socket and log file, on unix sockets or loopback TCP, and
  stopped by its pid (SIGTERM, then SIGKILL) whatever happened.
- Each process is sampled every `interval` seconds from /proc: CPU seconds (user and
  system) and resident memory, for the plots; its peak resident memory is the
  kernel's high-water mark, read last.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..testing import NB_SCHEMA, SB_SCHEMA, ServerProcess, cpu_seconds, create_db, stop_process
from ..testing_cluster import Cluster
from .report import parse_engine_stats

DB_NAMES = {"nb": "OVN_Northbound", "sb": "OVN_Southbound"}
# ovn-heater's raft_election_to (16 s): a loaded machine must not hold elections for
# heartbeats that come late
ELECTION_TIMER_MS = 16000
STACKS = {"c": ("real", "real"), "ours": ("ours", "ours"),
          "ours-servers": ("ours", "real"), "ours-northd": ("real", "ours"),
          "c-newest": ("real", "newest"), "ours-servers-newest": ("ours", "newest")}


def proc_sample(pid: int) -> tuple[float, float, float] | None:
    """(CPU seconds, resident MiB, peak resident MiB) of `pid`, None if it is gone."""
    try:
        cpu = cpu_seconds(pid)
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    mem = {k: int(v.split()[0]) / 1024 for k, _, v in
           (line.partition(":") for line in status.splitlines()) if k in ("VmRSS", "VmHWM")}
    return cpu, mem.get("VmRSS", 0.0), mem.get("VmHWM", 0.0)


@dataclass
class Series:
    """One process's samples: (seconds since the start, CPU seconds, resident MiB)."""

    role: str
    pid: int
    samples: list[tuple[float, float, float]] = field(default_factory=list)
    peak_mib: float = 0.0

    @property
    def cpu_s(self) -> float:
        return self.samples[-1][1] - self.samples[0][1] if len(self.samples) > 1 else 0.0


class Stack:
    def __init__(self, name: str, workdir: Path, *, transport: str = "unix",
                 chassis_args: list[str] | None = None, update_delay_ms: float = 0.0,
                 upstream: Path | None = None, clustered: bool = False) -> None:
        if name not in STACKS:
            raise ValueError(f"unknown stack {name!r} (expected one of {', '.join(STACKS)})")
        if STACKS[name][1] == "newest" and upstream is None:
            raise ValueError(f"stack {name} needs the directory of an upstream OVN build")
        self.upstream = upstream
        self.name = name
        self.servers_kind, self.northd_kind = STACKS[name]
        self.dir = workdir / name
        self.dir.mkdir(parents=True)
        self.transport = transport
        self.chassis_args = chassis_args or []
        # our servers' --update-delay-ms (the real server has no such option)
        self.update_delay_ms = update_delay_ms
        self.nb: ServerProcess | None = None
        self.sb: ServerProcess | None = None
        self.clustered = clustered
        self.clusters: dict[str, Cluster] = {}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.series: dict[str, Series] = {}
        self._t0 = time.monotonic()
        self._sampler: asyncio.Task[None] | None = None

    # -- starting ---------------------------------------------------------------------

    def _server_extra(self) -> list[str]:
        return ([f"--update-delay-ms={self.update_delay_ms}"]
                if self.update_delay_ms and self.servers_kind == "ours" else [])

    def start_servers(self) -> None:
        if self.clustered:
            self._start_clusters()
            return
        for name, schema in (("nb", self.schema("nb")), ("sb", self.schema("sb"))):
            db = create_db(self.servers_kind, self.dir / f"{name}.db", schema)
            extra = self._server_extra()
            try:
                srv = ServerProcess(self.servers_kind, self.dir, [db], name=name,
                                    tcp=self.transport == "tcp", extra=extra).start()
            except AssertionError as e:  # (the test helper's way to fail)
                raise RuntimeError(f"{self.name}: {e}") from e
            setattr(self, name, srv)
            assert srv.proc is not None
            self.series[f"{name} server"] = Series(f"{name} server", srv.proc.pid)

    def _start_clusters(self) -> None:
        for name in ("nb", "sb"):
            d = self.dir / name
            d.mkdir()
            c = self.clusters[name] = Cluster(d, self.schema(name), DB_NAMES[name],
                                              [self.servers_kind] * 3,
                                              extra=self._server_extra())
            c.create(election_timer=ELECTION_TIMER_MS)
            c.start()
            try:
                c.wait_formed(60)
            except AssertionError as e:
                raise RuntimeError(f"{self.name}: the {name} cluster did not form") from e
            for m in c.members:
                assert m.proc.proc is not None
                role = f"{name} server {m.index}"
                self.series[role] = Series(role, m.proc.proc.pid)

    def schema(self, name: str) -> str:
        """The schema file of database `name` (nb, sb): 23.03's, or the upstream
        build's for a stack of the newest northd."""
        if self.northd_kind == "newest":
            assert self.upstream is not None
            return str(self.upstream / f"ovn-{name}.ovsschema")
        return NB_SCHEMA if name == "nb" else SB_SCHEMA

    def remote(self, name: str, member: int | None = None) -> str:
        """Database `name`'s remote: of its server, or of its cluster's members (all of
        them, or the `member`-th)."""
        if self.clustered:
            members = self.clusters[name].members
            picked = members if member is None else [members[member]]
            return ",".join(m.tcp if self.transport == "tcp" else m.unix for m in picked)
        srv = self.nb if name == "nb" else self.sb
        assert srv is not None
        return srv.tcp if self.transport == "tcp" else srv.unix

    def start_northd(self, timeout: float = 30) -> None:
        if self.northd_kind == "ours":
            cmd = [sys.executable, "-m", "pyovsdb", "northd"]
        elif self.northd_kind == "newest":
            assert self.upstream is not None
            cmd = [str(self.upstream / "northd" / "ovn-northd")]
        else:
            cmd = ["ovn-northd"]
        log = self.dir / "northd.log"
        cmd += [f"--ovnnb-db={self.remote('nb')}", f"--ovnsb-db={self.remote('sb')}",
                f"--pidfile={self.dir / 'northd.pid'}", f"--log-file={log}",
                f"--unixctl={self.dir / 'northd.ctl'}", "-vconsole:off", "--no-chdir"]
        self._spawn("northd", cmd)
        self._wait("northd", lambda: log.exists() and "OVN internal version" in log.read_text(),
                    timeout)

    def start_chassis(self, nodes: int, timeout: float = 600) -> None:
        pidfile = self.dir / "chassis.pid"
        cmd = [sys.executable, "-m", "pyovsdb.scale.chassis",
               f"--ovnsb-db={self.remote('sb')}", f"--nodes=0-{nodes - 1}",
               f"--pidfile={pidfile}", f"--stats={self.dir / 'chassis-stats.json'}",
               f"--log-file={self.dir / 'chassis.log'}", *self.chassis_args]
        self._spawn("chassis", cmd)
        self._wait("chassis", pidfile.exists, timeout)

    def commands(self) -> dict[str, list[str]]:
        """The command line of every process this stack started, by role."""
        out = {f"{name} server": srv.command()
               for name, srv in (("nb", self.nb), ("sb", self.sb)) if srv is not None}
        for name, c in self.clusters.items():
            out.update({f"{name} server {m.index}": m.proc.command() for m in c.members})
        for role, p in self.procs.items():
            assert isinstance(p.args, list)  # (`_spawn` starts every one from a list)
            out[role] = [str(a) for a in p.args]
        return out

    def _spawn(self, role: str, cmd: list[str]) -> None:
        err = open(self.dir / f"{role}.stderr", "wb")  # noqa: SIM115 (closed by the child's end)
        try:
            p = subprocess.Popen(cmd, cwd=self.dir, stdout=subprocess.DEVNULL, stderr=err)
        finally:
            err.close()
        self.procs[role] = p
        self.series[role] = Series(role, p.pid)

    def _wait(self, role: str, ready: Any, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        p = self.procs[role]
        while not ready():
            if p.poll() is not None:
                err = (self.dir / f"{role}.stderr").read_text()
                raise RuntimeError(f"{self.name}: {role} exited: {err.strip()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: {role} not ready in {timeout} s")
            time.sleep(0.05)

    # -- sampling ---------------------------------------------------------------------

    def sample(self) -> None:
        now = time.monotonic() - self._t0
        for s in self.series.values():
            got = proc_sample(s.pid)
            if got is not None:
                s.samples.append((now, got[0], got[1]))
                s.peak_mib = max(s.peak_mib, got[2])

    async def sample_every(self, interval: float) -> None:
        while True:
            self.sample()
            await asyncio.sleep(interval)

    def start_sampling(self, interval: float = 0.5) -> None:
        self._sampler = asyncio.get_running_loop().create_task(self.sample_every(interval))

    async def stop_sampling(self) -> None:
        if self._sampler is not None:
            self._sampler.cancel()
            try:
                await self._sampler
            except asyncio.CancelledError:
                pass
            self._sampler = None
        self.sample()

    # -- stopping ---------------------------------------------------------------------

    def chassis_stats(self) -> list[dict[str, Any]]:
        path = self.dir / "chassis-stats.json"
        return list(json.loads(path.read_text())) if path.exists() else []

    def northd_engine_stats(self) -> dict[str, dict[str, int]]:
        """northd's `inc-engine/show-stats`, per node (asked with the real
        `ovn-appctl`, of either northd); empty if it does not answer."""
        p = subprocess.run(["ovn-appctl", "-t", str(self.dir / "northd.ctl"),
                            "inc-engine/show-stats"], capture_output=True, text=True,
                           timeout=30)
        return parse_engine_stats(p.stdout) if p.returncode == 0 else {}

    def db_sizes(self) -> dict[str, int]:
        """Each database file's size (a cluster's first member's)."""
        files = {name: (Path(self.clusters[name].members[0].db) if self.clustered
                        else self.dir / f"{name}.db") for name in ("nb", "sb")}
        return {name: f.stat().st_size for name, f in files.items() if f.exists()}

    def stop(self) -> None:
        for role in ("chassis", "northd"):
            p = self.procs.get(role)
            if p is not None:
                stop_process(p)
        for srv in (self.sb, self.nb):
            if srv is not None:
                srv.stop()
        for c in self.clusters.values():
            c.close()
