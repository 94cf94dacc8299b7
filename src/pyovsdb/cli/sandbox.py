"""`pyovsdb sandbox`: a local OVN control plane in one command: Northbound and
Southbound databases (each standalone, or a 3-member Raft cluster with `--clustered`)
with the OVN schemas shipped in the package, northd between them, and on request
simulated chassis (`--chassis=N`, see `pyovsdb.sim_chassis`) that register, claim
ports and echo `nb_cfg`, so `ovn-nbctl --wait=hv` works without Open vSwitch.

Rules kept here:
- Everything lives in one directory (default `./sandbox`): database files, unix
  sockets, pidfiles, control sockets, logs. Existing databases are reused (standalone
  and clustered ones have different file names, so both can live there). A directory
  that cannot be made or written to is one line of error, status 1.
- A directory whose pidfiles name processes still running (a sandbox killed without a
  chance to stop them, or still running elsewhere) is refused at start, naming them
  and their pids; nothing is started and nothing is signalled.
- Servers listen on unix sockets in that directory and on 127.0.0.1 (6641 for NB and
  6642 for SB, like ovn-central; free ports if those are taken; the other members of a
  cluster and Raft itself on free loopback ports). A port given with `--nb-port` or
  `--sb-port` must be free: one in use is an error naming the process that holds it.
- Bad option values (a port that is no number in 0..65535, a negative `--chassis`) are
  one line of error, status 2, as argparse gives; no traceback reaches the user.
- northd is ours (`pyovsdb northd`) unless asked otherwise; `--northd=ovn-northd` runs
  the real one with the same options, `--northd=none` none.
- Children run in their own process group, so a Ctrl-C reaches only the sandbox, which
  then stops exactly the processes it started, by pid, last started first; so does
  SIGTERM, and SIGHUP (the terminal closed). Should the sandbox die without stopping
  them (SIGKILL), the kernel sends each child SIGTERM (Linux's parent-death signal),
  so none outlives it holding ports. A child that exits during startup is reported
  with the last line it printed.
- Ready means usable: the sandbox says so (and writes `--ready-file`) only once northd
  has written `SB_Global` and the simulated chassis are registered.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from ..jsonrpc.client import Client
from ..storage import standalone
from ..testing import stop_process
from ..util import daemon
from ..util.unixsock import connect_unix
from . import options as opt

USAGE = """\
usage: pyovsdb sandbox [--dir=DIR] [--nb-port=PORT] [--sb-port=PORT] [--clustered]
                       [--chassis=N] [--northd=ours|ovn-northd|none]
Runs OVN Northbound and Southbound database servers, northd and N simulated chassis
locally until interrupted (Ctrl-C, SIGTERM or SIGHUP stop everything it started).

Everything goes in DIR (default ./sandbox, made if missing): the database files,
sockets, pidfiles, control sockets and logs. The databases persist across runs: a
second start in the same DIR serves them again, contents included (standalone and
clustered databases are separate files there); remove DIR to start afresh. A DIR
still in use by a running sandbox is refused.

  --dir=DIR       where everything goes (default ./sandbox)
  --nb-port=PORT  the Northbound TCP port on 127.0.0.1 (default 6641, or a free one
                  if that is taken; a port given here must be free; 0: any)
  --sb-port=PORT  the same for the Southbound (default 6642)
  --clustered     NB and SB each a 3-member Raft cluster
  --chassis=N     N simulated chassis (sim-ch1...) claiming the switches' VIF ports
  --northd=KIND   ours (pyovsdb northd, default), ovn-northd (the real one), none
  --ready-file=F  write the four remotes to F once everything is ready
"""

LONG = {"dir": opt.REQUIRED, "nb-port": opt.REQUIRED, "sb-port": opt.REQUIRED,
        "help": opt.NONE, "ready-file": opt.REQUIRED, "clustered": opt.NONE,
        "chassis": opt.REQUIRED, "northd": opt.REQUIRED}

DB_NAMES = {"nb": ("ovn-nb.ovsschema", "OVN_Northbound", 6641),
            "sb": ("ovn-sb.ovsschema", "OVN_Southbound", 6642)}
STARTUP = 60.0
PR_SET_PDEATHSIG = 1
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class SandboxError(Exception):
    """Startup failed; the message says which part and where its log is."""


class BadValue(Exception):
    """An option value that is not what the option takes (status 2)."""


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


def _die_with_parent() -> None:
    """Run in a child before it executes: the kernel sends it SIGTERM when the sandbox
    dies, however it dies (Linux; elsewhere nothing)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def _port_holder(port: int) -> str:
    """Who listens on TCP `port` (" by pid N (NAME)"), when /proc says; else ""."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{f[9]}]")
    for proc in Path("/proc").iterdir() if inodes else ():
        if not proc.name.isdigit():
            continue
        try:
            fds = list((proc / "fd").iterdir())
            if any(os.readlink(fd) in inodes for fd in fds):
                name = (proc / "comm").read_text().strip()
                return f" by pid {proc.name} ({name})"
        except OSError:
            continue
    return ""


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except (OSError, UnicodeDecodeError):
        return ""


def leftovers(directory: str) -> list[tuple[str, int]]:
    """(name, pid) of the processes a pidfile in `directory` names that still run: the
    daemons' locked pidfiles (as `ovs-appctl` believes them), and the simulated
    chassis' pidfile if that process still names it."""
    out = []
    for path in sorted(Path(directory).glob("*.pid")):
        if path.stem == "chassis":
            try:
                pid = int(path.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
            alive = str(path) in _cmdline(pid)
        else:
            pid = daemon.read_pidfile(str(path))
            alive = pid > 0
        if alive:
            out.append((path.stem, pid))
    return out


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
                                    stdout=subprocess.DEVNULL, stderr=err, process_group=0,
                                    preexec_fn=_die_with_parent)
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
                said = self.last_words(child)
                raise SandboxError(f"{child.name} exited during startup{said} "
                                   f"(see {child.log})")
            if time.monotonic() > deadline:
                raise SandboxError(f"{child.name}: no {what} after {STARTUP:.0f} s "
                                   f"(see {child.log})")
            time.sleep(0.05)

    def last_words(self, child: Child) -> str:
        """": LINE", the last line the child printed on stderr, if any."""
        try:
            lines = Path(self.path(f"{child.name}.stderr")).read_text(
                errors="replace").strip().splitlines()
        except OSError:
            return ""
        return f": {lines[-1].strip()}" if lines else ""

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
    try:
        connect_unix(sock).close()
        return True
    except OSError:
        return False


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


def _count(parsed: opt.Parsed, name: str, default: int, lo: int, hi: int | None,
           what: str) -> int:
    text = parsed.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise BadValue(f"--{name}={text}: {what}") from None
    if value < lo or (hi is not None and value > hi):
        raise BadValue(f"--{name}={text}: {what}")
    return value


def _prepare_dir(given: str) -> str:
    """The sandbox directory, made if missing; SandboxError if it cannot be used."""
    directory = os.path.abspath(given)
    try:
        os.makedirs(directory, exist_ok=True)
    except FileExistsError:
        raise SandboxError(f"--dir={given}: not a directory") from None
    except OSError as e:
        raise SandboxError(f"--dir={given}: cannot create it ({e.strerror})") from None
    if not os.path.isdir(directory):
        raise SandboxError(f"--dir={given}: not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".write-test-", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise SandboxError(f"--dir={given}: not writable ({e.strerror})") from None
    return directory


def _check_leftovers(directory: str) -> None:
    left = leftovers(directory)
    if left:
        who = ", ".join(f"{name} (pid {pid})" for name, pid in left)
        pids = " ".join(str(pid) for _, pid in left)
        them = "them" if len(left) > 1 else "it"
        raise SandboxError(f"{directory} is in use: {who} from an earlier sandbox still "
                           f"running; stop {them} (kill {pids}) or use another --dir")


def _check_ports(parsed: opt.Parsed, ports: dict[str, int]) -> None:
    """A port named on the command line must be free (a default one may be replaced)."""
    for name, port in ports.items():
        if parsed.has(f"{name}-port") and port and not _port_free(port):
            raise SandboxError(f"--{name}-port={port}: port in use{_port_holder(port)}")


def _say(text: str) -> None:
    """A line on stderr; after a hangup there may be nowhere to write it."""
    try:
        print(text, file=sys.stderr, flush=True)
    except OSError:
        pass


def main(argv: list[str]) -> int:
    try:
        parsed = opt.parse(argv, LONG, {"h": ("help", opt.NONE)})
        if parsed.has("help"):
            print(USAGE, end="")
            return 0
        kind, note = _northd_kind(parsed.get("northd"))
        n_chassis = _count(parsed, "chassis", 0, 0, None, "the number of simulated "
                           "chassis must be 0 or more")
        ports = {name: _count(parsed, f"{name}-port", DB_NAMES[name][2], 0, 65535,
                              "not a TCP port number (0 to 65535)") for name in ("nb", "sb")}
    except (opt.UsageError, BadValue) as e:
        _say(f"pyovsdb sandbox: {e}")
        return 2
    try:
        directory = _prepare_dir(parsed.get("dir", "sandbox"))
        _check_leftovers(directory)
        _check_ports(parsed, ports)
    except SandboxError as e:
        _say(f"pyovsdb sandbox: {e}")
        return 1
    if n_chassis and kind == "none":
        _say("pyovsdb sandbox: note: chassis without northd have no ports to claim")
    clustered = parsed.has("clustered")
    box = Sandbox(directory)
    # Ctrl-C, SIGTERM and a hangup stop the sandbox, even when started where SIGINT is
    # ignored (a shell's background job).
    old = {sig: signal.signal(sig, _interrupt) for sig in STOP_SIGNALS}
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
        _say(f"pyovsdb sandbox: {', '.join(c.name for c in failed)} exited (see "
             f"{', '.join(c.log for c in failed)})")
        return 1
    except SandboxError as e:
        _say(f"pyovsdb sandbox: {e}")
        return 1
    except OSError as e:  # the terminal went away while printing, a file not written
        _say(f"pyovsdb sandbox: {e}")
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        # stopping is not interrupted by a second signal: no child is left
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        box.stop()
        for sig, handler in old.items():
            signal.signal(sig, handler)


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
