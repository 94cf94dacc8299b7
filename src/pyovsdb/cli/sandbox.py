"""`pyovsdb sandbox`: a local OVN control plane in one command: Northbound and
Southbound databases (each standalone, or a 3-member Raft cluster with `--clustered`)
with the OVN schemas shipped in the package, northd between them, and on request
simulated chassis (`--chassis=N`, see `pyovsdb.sim_chassis`) that register, claim
ports and echo `nb_cfg`, so `ovn-nbctl --wait=hv` works without Open vSwitch.

Rules kept here:
- Everything lives in one directory (default `./sandbox`): database files, unix
  sockets, pidfiles, control sockets, logs. Existing databases are reused (standalone
  and clustered ones have different file names, so both can live there).
- Servers listen on unix sockets in that directory and on 127.0.0.1 (6641 for NB and
  6642 for SB, like ovn-central; free ports if those are taken; the other members of a
  cluster and Raft itself on free loopback ports).
- northd is ours (`pyovsdb northd`) unless asked otherwise; `--northd=ovn-northd` runs
  the real one with the same options, `--northd=none` none.
- Children run in their own process group, so a Ctrl-C reaches only the sandbox, which
  then stops exactly the processes it started, by pid, last started first.
- Ready means usable: the sandbox says so (and writes `--ready-file`) only once northd
  has written `SB_Global` and the simulated chassis are registered.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from ..jsonrpc.client import Client
from ..storage import standalone
from ..testing import stop_process
from . import options as opt

USAGE = """\
usage: pyovsdb sandbox [--dir=DIR] [--nb-port=PORT] [--sb-port=PORT] [--clustered]
                       [--chassis=N] [--northd=ours|ovn-northd|none]
Runs OVN Northbound and Southbound database servers, northd and N simulated chassis
locally until interrupted.
  --clustered     NB and SB each a 3-member Raft cluster
  --chassis=N     N simulated chassis (sim-ch1...) claiming the switches' VIF ports
  --northd=KIND   ours (pyovsdb northd, default), ovn-northd (the real one), none
"""

LONG = {"dir": opt.REQUIRED, "nb-port": opt.REQUIRED, "sb-port": opt.REQUIRED,
        "help": opt.NONE, "ready-file": opt.REQUIRED, "clustered": opt.NONE,
        "chassis": opt.REQUIRED, "northd": opt.REQUIRED}

DB_NAMES = {"nb": ("ovn-nb.ovsschema", "OVN_Northbound", 6641),
            "sb": ("ovn-sb.ovsschema", "OVN_Southbound", 6642)}
STARTUP = 60.0


class SandboxError(Exception):
    """Startup failed; the message says which part and where its log is."""


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _pick_port(preferred: int) -> int:
    if preferred and _port_free(preferred):
        return preferred
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@dataclass
class Child:
    name: str
    proc: subprocess.Popen[bytes]
    log: str


class Sandbox:
    def __init__(self, directory: str) -> None:
        self.dir = directory
        self.children: list[Child] = []

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def spawn(self, name: str, cmd: list[str], log: str) -> Child:
        with open(self.path(f"{name}.stderr"), "wb") as err:  # the child keeps its copy
            proc = subprocess.Popen(cmd, cwd=self.dir, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=err, process_group=0)
        child = Child(name, proc, log)
        self.children.append(child)
        return child

    def stop(self) -> None:
        for child in reversed(self.children):
            stop_process(child.proc)
        self.children.clear()

    def wait_for(self, child: Child, what: str, ready: Any) -> None:
        deadline = time.monotonic() + STARTUP
        while not ready():
            if child.proc.poll() is not None:
                raise SandboxError(f"{child.name} exited during startup (see {child.log})")
            if time.monotonic() > deadline:
                raise SandboxError(f"{child.name}: no {what} after {STARTUP:.0f} s "
                                   f"(see {child.log})")
            time.sleep(0.05)

    # -- databases ----------------------------------------------------------------------

    def server(self, name: str, db_file: str, tcp_port: int) -> tuple[str, str]:
        sock = self.path(f"{name}.sock")
        if os.path.exists(sock):
            os.unlink(sock)
        cmd = [sys.executable, "-m", "pyovsdb", "server", f"--remote=punix:{sock}",
               f"--remote=ptcp:{tcp_port}:127.0.0.1",
               f"--unixctl={self.path(name + '.ctl')}",
               f"--pidfile={self.path(name + '.pid')}",
               f"--log-file={self.path(name + '.log')}", "-vconsole:off", "--no-chdir",
               db_file]
        self.spawn(name, cmd, self.path(f"{name}.log"))
        return f"unix:{sock}", f"tcp:127.0.0.1:{tcp_port}"

    def standalone(self, name: str, port: int) -> tuple[str, str]:
        schema_file, _, _ = DB_NAMES[name]
        path = self.path(f"{name}.db")
        if not os.path.exists(path):
            import orjson

            schema = files("pyovsdb.schemas").joinpath(schema_file).read_bytes()
            standalone.create(path, orjson.loads(schema))
        return self.server(name, path, _pick_port(port))

    def clustered(self, name: str, port: int) -> tuple[str, str]:
        schema_file, db_name, _ = DB_NAMES[name]
        paths = [self.path(f"{name}{i}.db") for i in (1, 2, 3)]
        if not all(os.path.exists(p) for p in paths):
            for p in paths:
                if os.path.exists(p):
                    os.unlink(p)
            raft = [f"tcp:127.0.0.1:{_pick_port(0)}" for _ in paths]
            schema = str(files("pyovsdb.schemas").joinpath(schema_file))
            tool = [sys.executable, "-m", "pyovsdb", "tool"]
            _check([*tool, "create-cluster", paths[0], schema, raft[0]])
            for p, addr in zip(paths[1:], raft[1:], strict=True):
                _check([*tool, "join-cluster", p, db_name, addr, raft[0]])
        unix, tcp = [], []
        for i, p in enumerate(paths, 1):
            u, t = self.server(f"{name}{i}", p, _pick_port(port if i == 1 else 0))
            unix.append(u)
            tcp.append(t)
        return ",".join(unix), ",".join(tcp)

    def wait_servers(self, clusters: dict[str, str] | None = None) -> None:
        """Until every server listens and, for each clustered database (name: its
        remotes), a member says it is the leader: before that, leader-only clients
        such as ovn-nbctl give up."""
        for child in self.children:
            sock = self.path(f"{child.name}.sock")
            self.wait_for(child, "socket", lambda sock=sock: _connectable(sock))
        for db_name, remotes in (clusters or {}).items():
            self.wait_for(self.children[0], f"{db_name} leader",
                          lambda r=remotes, d=db_name: _has_leader(r, d))

    # -- northd and chassis -------------------------------------------------------------

    def northd(self, kind: str, nb: str, sb: str) -> Child | None:
        if kind == "none":
            return None
        base = [sys.executable, "-m", "pyovsdb", "northd"] if kind == "ours" \
            else ["ovn-northd"]
        cmd = [*base, f"--ovnnb-db={nb}", f"--ovnsb-db={sb}",
               f"--unixctl={self.path('northd.ctl')}",
               f"--pidfile={self.path('northd.pid')}",
               f"--log-file={self.path('northd.log')}", "-vconsole:off", "--no-chdir"]
        child = self.spawn("northd", cmd, self.path("northd.log"))
        self.wait_for(child, "SB_Global row", lambda: _has_sb_global(sb))
        return child

    def chassis(self, n: int, sb: str) -> Child | None:
        if n <= 0:
            return None
        pidfile = self.path("chassis.pid")
        if os.path.exists(pidfile):
            os.unlink(pidfile)
        cmd = [sys.executable, "-m", "pyovsdb.sim_chassis", f"--ovnsb-db={sb}",
               f"--chassis={n}", f"--pidfile={pidfile}",
               f"--log-file={self.path('chassis.log')}"]
        child = self.spawn("chassis", cmd, self.path("chassis.log"))
        self.wait_for(child, "registration", lambda: os.path.exists(pidfile))
        return child


def _check(cmd: list[str]) -> None:
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise SandboxError(f"{' '.join(cmd[3:5])} failed: {p.stderr.strip()}")


def _connectable(sock: str) -> bool:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(sock)
        return True
    except OSError:
        return False
    finally:
        s.close()


def _has_leader(remotes: str, db_name: str) -> bool:
    for remote in remotes.split(","):
        try:
            with Client(remote, timeout=5) as c:
                reply = c.call("transact", ["_Server", {
                    "op": "select", "table": "Database",
                    "where": [["name", "==", db_name]], "columns": ["leader"]}])
        except Exception:  # not up yet: try the next
            continue
        rows = reply[0].get("rows", []) if isinstance(reply, list) and reply else []
        if any(r.get("leader") is True for r in rows):
            return True
    return False


def _has_sb_global(remotes: str) -> bool:
    for remote in remotes.split(","):
        try:
            with Client(remote, timeout=5) as c:
                reply = c.call("transact", ["OVN_Southbound", {
                    "op": "select", "table": "SB_Global", "where": [],
                    "columns": ["_uuid"]}])
        except Exception:  # not up yet, or not a member that answers: try the next
            continue
        if isinstance(reply, list) and reply and reply[0].get("rows"):
            return True
    return False


def ours_available() -> bool:
    """Whether `pyovsdb northd` is a command of this build."""
    from .main import _commands

    try:
        return "northd" in _commands()
    except Exception:  # a command module that does not import: not usable either
        return False


def _northd_kind(asked: str | None) -> tuple[str, str]:
    """The northd to run and a note for the user when it is not the one asked for."""
    ours = ours_available()
    if asked is None:
        if ours:
            return "ours", ""
        if shutil.which("ovn-northd"):
            return "ovn-northd", "(pyovsdb northd is not in this build: using ovn-northd)"
        return "none", "(no northd available: databases only)"
    if asked not in ("ours", "ovn-northd", "none"):
        raise opt.UsageError(f"--northd: unknown kind '{asked}' (ours, ovn-northd, none)")
    if asked == "ours" and not ours:
        raise opt.UsageError("--northd=ours: pyovsdb northd is not in this build")
    return asked, ""


def main(argv: list[str]) -> int:
    try:
        parsed = opt.parse(argv, LONG, {"h": ("help", opt.NONE)})
        if parsed.has("help"):
            print(USAGE, end="")
            return 0
        kind, note = _northd_kind(parsed.get("northd"))
        n_chassis = int(parsed.get("chassis", "0"))
        ports = {"nb": int(parsed.get("nb-port", 6641)), "sb": int(parsed.get("sb-port", 6642))}
    except (opt.UsageError, ValueError) as e:
        print(f"pyovsdb sandbox: {e}", file=sys.stderr)
        return 1
    if n_chassis and kind == "none":
        print("pyovsdb sandbox: note: chassis without northd have no ports to claim",
              file=sys.stderr)
    directory = os.path.abspath(parsed.get("dir", "sandbox"))
    os.makedirs(directory, exist_ok=True)
    clustered = parsed.has("clustered")
    box = Sandbox(directory)
    # Ctrl-C stops the sandbox even when started where SIGINT is ignored (a shell's
    # background job)
    old_term = signal.signal(signal.SIGTERM, _interrupt)
    old_int = signal.signal(signal.SIGINT, _interrupt)
    try:
        endpoints = {}
        for name in ("nb", "sb"):
            start = box.clustered if clustered else box.standalone
            endpoints[name] = start(name, ports[name])
        box.wait_servers({DB_NAMES[n][1]: endpoints[n][0] for n in endpoints}
                         if clustered else None)
        nb_unix, nb_tcp = endpoints["nb"]
        sb_unix, sb_tcp = endpoints["sb"]
        box.northd(kind, nb_unix, sb_unix)
        box.chassis(n_chassis, sb_unix)
        _banner(directory, clustered, kind, note, n_chassis, nb_unix, nb_tcp, sb_unix, sb_tcp)
        ready = parsed.get("ready-file")
        if ready:
            with open(ready + ".tmp", "w") as f:
                f.write(f"{nb_unix} {nb_tcp} {sb_unix} {sb_tcp}\n")
            os.replace(ready + ".tmp", ready)
        while all(c.proc.poll() is None for c in box.children):
            time.sleep(0.2)
        failed = [c for c in box.children if c.proc.poll() is not None]
        print(f"pyovsdb sandbox: {', '.join(c.name for c in failed)} exited (see "
              f"{', '.join(c.log for c in failed)})", file=sys.stderr)
        return 1
    except SandboxError as e:
        print(f"pyovsdb sandbox: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        # stopping is not interrupted by a second Ctrl-C or SIGTERM: no child is left
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        box.stop()
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)


def _banner(directory: str, clustered: bool, kind: str, note: str, n_chassis: int,
            nb_unix: str, nb_tcp: str, sb_unix: str, sb_tcp: str) -> None:
    shape = "3-member clusters" if clustered else "standalone"
    northd = {"ours": "pyovsdb northd", "ovn-northd": "ovn-northd", "none": "none"}[kind]
    lines = [f"pyovsdb sandbox running in {directory}",
             f"  Northbound ({shape}): {nb_unix}  {nb_tcp}",
             f"  Southbound ({shape}): {sb_unix}  {sb_tcp}",
             f"  northd: {northd} {note}".rstrip()]
    if n_chassis:
        names = "sim-ch1" if n_chassis == 1 else f"sim-ch1..sim-ch{n_chassis}"
        lines.append(f"  chassis: {n_chassis} simulated ({names}), log {directory}/chassis.log")
    lines += ["", "Try:",
              f"  export OVN_NB_DB={nb_unix}",
              f"  export OVN_SB_DB={sb_unix}",
              "  ovn-nbctl ls-add sw0",
              "  ovn-nbctl --wait=hv lsp-add sw0 p1",
              "  ovn-nbctl show; ovn-sbctl show",
              f"  ovsdb-client dump {nb_unix.split(',')[0]} OVN_Northbound",
              f"  pyovsdb client dump {nb_unix.split(',')[0]} OVN_Northbound"]
    ctl = "nb1.ctl" if clustered else "nb.ctl"
    lines.append(f"  ovs-appctl -t {directory}/{ctl} memory/show")
    if clustered:
        lines.append(f"  ovs-appctl -t {directory}/nb1.ctl cluster/status OVN_Northbound")
    if kind != "none":
        lines.append(f"  ovn-appctl -t {directory}/northd.ctl status")
    lines += ["", "Press Ctrl-C to stop."]
    print("\n".join(lines), flush=True)
