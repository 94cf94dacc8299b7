"""`pyovsdb server` as a daemon, side by side with the real ovsdb-server: the same
command lines and environment (OVS_RUNDIR, OVS_LOGDIR, OVS_DBDIR in tmp_path) must
give the same files, locks, process names, texts and log lines, so that `ovs-appctl -t
ovsdb-server`, ovs-ctl/ovn-ctl and operators' scripts work on either."""

from __future__ import annotations

import errno
import fcntl
import os
import re
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from interop_helpers import client, wait_until

from procs import NB_SCHEMA, VSWITCH_SCHEMA, create_db, require, run

pytestmark = pytest.mark.interop

KINDS = ["ours", "real"]
FILE_LINE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\|\d{5}\|[a-z_]+(\([a-z-]+\))?"
                       r"\|(EMER|ERR|WARN|INFO|DBG)\|.*")
CONSOLE_LINE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\|\d{5}\|[a-z_]+\|[A-Z]+\|.*")


@pytest.fixture(autouse=True)
def _tools() -> None:
    require("ovs-appctl", "ovsdb-client", "ovsdb-tool")  # `kind` requires ovsdb-server


def server_cmd(kind: str) -> list[str]:
    return [sys.executable, "-m", "pyovsdb", "server"] if kind == "ours" else ["ovsdb-server"]


class Dirs:
    """OVS_RUNDIR, OVS_LOGDIR and OVS_DBDIR of one test, and the daemons it started."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.run, self.log, self.db = base / "run", base / "log", base / "etc"
        for d in (self.run, self.log, self.db):
            d.mkdir()
        self.env = {**os.environ, "OVS_RUNDIR": str(self.run), "OVS_LOGDIR": str(self.log),
                    "OVS_DBDIR": str(self.db)}
        self.pids: list[int] = []

    @property
    def pidfile(self) -> Path:
        return self.run / "ovsdb-server.pid"

    @property
    def logfile(self) -> Path:
        return self.log / "ovsdb-server.log"

    def appctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """`ovs-appctl -t ovsdb-server`: by name, through the pidfile in OVS_RUNDIR."""
        return run(["ovs-appctl", "--timeout=20", "-t", "ovsdb-server", *args], env=self.env,
                   check=check)

    def track(self, pid: int) -> int:
        self.pids.append(pid)
        return pid

    def kill_all(self) -> None:
        """SIGKILL what this test started and left running: the pids it saw, and any
        process whose command line names this test's directory (a daemon forked by a
        supervisor after the test last looked)."""
        pids = set(self.pids)
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and str(self.base) in _cmdline(int(entry.name)):
                pids.add(int(entry.name))
        pids -= {os.getpid()}
        for pid in pids:
            if alive(pid) and str(self.base) in _cmdline(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def dirs(tmp_path: Path) -> Iterator[Dirs]:
    d = Dirs(tmp_path)
    try:
        yield d
    finally:
        d.kill_all()


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def alive(pid: int) -> bool:
    """Running (a zombie left for an init that does not reap counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def comm(pid: int) -> str:
    return Path(f"/proc/{pid}/comm").read_text().strip()


def lock_holder(path: Path) -> int:
    """The pid holding an fcntl write lock on the whole file (0: none), and proof that
    we cannot take it ourselves."""
    with open(path, "r+b") as f:
        fmt = "hhqqi"
        req = struct.pack(fmt, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0).ljust(32, b"\0")
        res = fcntl.fcntl(f.fileno(), fcntl.F_GETLK, req)
        kind, _, _, _, pid = struct.unpack(fmt, res[:struct.calcsize(fmt)])
        if kind == fcntl.F_UNLCK:
            return 0
        with pytest.raises(OSError) as e:
            fcntl.lockf(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert e.value.errno in (errno.EAGAIN, errno.EACCES)
        return int(pid)


def read_pid(path: Path) -> int:
    text = path.read_text()
    assert re.fullmatch(r"\d+\n", text), repr(text)
    return int(text)


def log_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_detached_daemon_by_name(kind: str, dirs: Dirs) -> None:
    """What ovs-ctl does: no database and no control socket named, `--detach
    --pidfile --log-file`. Defaults land in OVS_DBDIR/RUNDIR/LOGDIR, the daemon holds
    its pidfile locked, is called ovsdb-server, answers `ovs-appctl -t ovsdb-server`
    and leaves the caller's terminal alone once detached."""
    create_db(kind, dirs.db / "conf.db", VSWITCH_SCHEMA)
    sock = dirs.base / "db.sock"
    p = run([*server_cmd(kind), "--detach", "--pidfile", "--log-file", f"--remote=punix:{sock}"],
            env=dirs.env, timeout=30)
    pid = dirs.track(read_pid(dirs.pidfile))
    # The parent returned (and closed our pipes): only lines from before it detached
    # reached the console, in the console format.
    assert p.stderr.splitlines() == [f"{p.stderr[:20]}|00001|vlog|INFO|opened log file "
                                     f"{dirs.logfile}"]
    assert CONSOLE_LINE.fullmatch(p.stderr.splitlines()[0])
    assert lock_holder(dirs.pidfile) == pid
    assert comm(pid) == "ovsdb-server"
    assert os.readlink(f"/proc/{pid}/cwd") == "/"
    assert (dirs.run / f"ovsdb-server.{pid}.ctl").exists()
    assert client("list-dbs", f"unix:{sock}").stdout == "Open_vSwitch\n_Server\n"

    out = dirs.appctl("version").stdout
    assert re.fullmatch(r"ovsdb-server \(.+\) \d+\.\d+\.\d+\n", out), out
    assert {"exit", "vlog/set", "vlog/list", "ovsdb-server/add-remote"} <= {
        line.split()[0] for line in dirs.appctl("list-commands").stdout.splitlines()[1:]}
    # Detached: the console is off everywhere; -v changes show in vlog/list's layout.
    dirs.appctl("vlog/set", "ovsdb_server:file:dbg")
    listing = dirs.appctl("vlog/list").stdout.splitlines()
    assert listing[:2] == ["                 console    syslog    file",
                           "                 -------    ------    ------"]
    assert "ovsdb_server       OFF       INFO        DBG" in listing
    assert all(line.split()[1] == "OFF" for line in listing[2:])

    # The version line comes once the daemon is ready, maybe after the parent returned.
    assert wait_until(lambda: len(log_lines(dirs.logfile)) >= 2)
    lines = log_lines(dirs.logfile)
    assert lines[0].endswith(f"|00001|vlog|INFO|opened log file {dirs.logfile}")
    assert re.search(r"\|00002\|ovsdb_server\|INFO\|ovsdb-server \(.+\) \d", lines[1]), lines
    assert all(FILE_LINE.fullmatch(line) for line in lines), lines

    # -t takes a name (found through its pidfile) or a socket, not a pidfile's path.
    p = run(["ovs-appctl", "-t", str(dirs.pidfile), "version"], env=dirs.env, check=False)
    assert p.returncode != 0 and "cannot connect" in p.stderr

    dirs.appctl("exit")
    assert wait_until(lambda: not alive(pid), 10)
    assert not dirs.pidfile.exists()
    assert not (dirs.run / f"ovsdb-server.{pid}.ctl").exists()
    p = dirs.appctl("version", check=False)
    assert p.returncode != 0
    assert p.stderr.endswith(f'cannot read pidfile "{dirs.pidfile}" (No such file or '
                             'directory)\n')


def test_pidfile_of_a_running_server(kind: str, dirs: Dirs) -> None:
    """A second server on a locked pidfile is refused with the real text; SIGTERM
    removes the pidfile, logs why, and the server dies of the signal."""
    db = create_db(kind, dirs.base / "nb.db", NB_SCHEMA)
    sock = dirs.base / "nb.sock"
    first = subprocess.Popen([*server_cmd(kind), "--pidfile", f"--log-file={dirs.logfile}",
                              f"--remote=punix:{sock}", "-vconsole:off", db],
                             env=dirs.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dirs.track(first.pid)
    try:
        assert wait_until(lambda: client("list-dbs", f"unix:{sock}", check=False).returncode
                          == 0, 20)
        assert read_pid(dirs.pidfile) == first.pid == lock_holder(dirs.pidfile)
        second = run([*server_cmd(kind), "--pidfile", "--remote=punix:" + str(sock) + "2",
                      "-vconsole:off", db], env=dirs.env, check=False)
        assert (second.returncode, second.stderr) == (
            1, f"ovsdb-server: {dirs.pidfile}: already running as pid {first.pid}, aborting\n")
        assert lock_holder(dirs.pidfile) == first.pid
        # --overwrite-pidfile: no check, the pidfile is replaced (and removed on exit).
        third = run([*server_cmd(kind), "--pidfile", "--overwrite-pidfile", "--unixctl=none",
                     f"--remote=punix:{sock}3", "-vconsole:off", f"--run=cat {dirs.pidfile}",
                     create_db(kind, dirs.base / "other.db", NB_SCHEMA)], env=dirs.env)
        assert third.stdout not in ("", f"{first.pid}\n") and third.stdout.endswith("\n")
        assert not dirs.pidfile.exists()
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=20) == -signal.SIGTERM
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert not dirs.pidfile.exists()
    assert log_lines(dirs.logfile)[-1].endswith(
        "|fatal_signal|WARN|terminating with signal 15 (Terminated)")


def test_stale_pidfile_and_verbose_options(kind: str, dirs: Dirs) -> None:
    """An unlocked pidfile is stale and replaced; `-vPATTERN:file:...` sets the file
    format and `-vdaemon_unix:file:dbg` brings that module's debug lines, and only
    its, to the file and not to the console."""
    db = create_db(kind, dirs.base / "nb.db", NB_SCHEMA)
    sock = dirs.base / "nb.sock"
    dirs.pidfile.write_text("999999\n")
    p = run([*server_cmd(kind), "-vPATTERN:file:%c|%p|%m", "-vdaemon_unix:file:dbg",
             f"--log-file={dirs.logfile}", "--pidfile", "--unixctl=none",
             f"--remote=punix:{sock}",
             f"--run=cat {dirs.pidfile}; ovsdb-client list-dbs unix:{sock}", db],
            env=dirs.env)
    pid_line, _, dbs = p.stdout.partition("\n")
    assert pid_line != "999999" and dbs.endswith("OVN_Northbound\n_Server\n")
    lines = log_lines(dirs.logfile)
    assert lines[:2] == [f"vlog|INFO|opened log file {dirs.logfile}",
                         f"daemon_unix|DBG|{dirs.pidfile}: deleted stale pidfile"]
    assert [line for line in lines if "|DBG|" in line and not line.startswith("daemon_unix|")
            ] == []
    # --run makes the server a command-line tool: no version line.
    assert not [line for line in lines if "ovsdb-server (" in line]
    assert "DBG" not in p.stderr
    assert not dirs.pidfile.exists()


@pytest.mark.parametrize("command,status,text", [
    ("exit 3", 1, "ovsdb-server: exit 3: child exited, exit status 3\n"),
    ("kill -TERM $$", 1, "ovsdb-server: kill -TERM $$: child exited, killed (Terminated)\n"),
    ("ovsdb-client list-dbs unix:{sock}", 0, ""),
])
def test_run_command(kind: str, dirs: Dirs, command: str, status: int, text: str) -> None:
    """`--run`: the server serves while COMMAND runs, then exits with its verdict."""
    db = create_db(kind, dirs.base / "nb.db", NB_SCHEMA)
    sock = dirs.base / "nb.sock"
    p = run([*server_cmd(kind), f"--remote=punix:{sock}", "-vconsole:off",
             f"--run={command.format(sock=sock)}", db], env=dirs.env, check=False)
    assert (p.returncode, p.stderr) == (status, text)
    if status == 0:
        assert p.stdout == "OVN_Northbound\n_Server\n"
    assert list(dirs.run.iterdir()) == []  # control socket removed


def test_startup_errors_name_the_path(kind: str, dirs: Dirs) -> None:
    """Missing default directories and files: one `ovsdb-server: ...` line each, with
    the real wording; the default log file that cannot be opened is a warning only, a
    log file named on the command line is fatal after that warning (silently with the
    console off)."""
    gone = dirs.base / "gone"
    env = {**dirs.env, "OVS_RUNDIR": str(gone / "run"), "OVS_LOGDIR": str(gone / "log")}
    db = create_db(kind, dirs.base / "nb.db", NB_SCHEMA)
    sock = dirs.base / "nb.sock"
    cmd = server_cmd(kind)

    def last_line(*args: str) -> str:
        # In the temp dir: the real server makes a lock file beside a relative db name.
        p = run([*cmd, *args], env=env, check=False, cwd=dirs.base)
        assert p.returncode == 1, p
        return p.stderr.splitlines()[-1]

    assert re.fullmatch(rf"ovsdb-server: {gone}/run/ovsdb-server\.\d+\.ctl: could not "
                        r"initialize control socket \(No such file or directory\)",
                        last_line("-vconsole:off", db))
    assert last_line("--pidfile", "-vconsole:off", db) == (
        f"ovsdb-server: {gone}/run/ovsdb-server.pid.tmp: create failed (No such file or "
        "directory)")
    assert last_line("--unixctl=none", "-vconsole:off", "missing.db") == (
        "ovsdb-server: I/O error: missing.db: open failed (No such file or directory)")
    # Detached, the daemon's failure still reaches the caller, with its status.
    for how in (["--detach"], ["--detach", "--monitor"]):
        assert last_line(*how, "--unixctl=none", "-vconsole:off", "missing.db") == (
            "ovsdb-server: I/O error: missing.db: open failed (No such file or directory)")
    assert last_line("-vbogus", db) == (
        'ovsdb-server: processing "bogus": no destination, level, or module "bogus"')
    p = run([*cmd, "--log-file", "--unixctl=none", f"--remote=punix:{sock}",
             f"--run=ovsdb-client list-dbs unix:{sock}", db], env=env, check=False)
    assert (p.returncode, p.stdout) == (0, "OVN_Northbound\n_Server\n")
    assert p.stderr.splitlines()[0].endswith(
        f"|00001|vlog|WARN|failed to open {gone}/log/ovsdb-server.log for logging: No such "
        "file or directory")
    p = run([*cmd, f"--log-file={gone}/x.log", "--unixctl=none", f"--remote=punix:{sock}",
             db], env=env, check=False, timeout=15)
    assert p.returncode == 1 and re.fullmatch(
        rf"\S+\|00001\|vlog\|WARN\|failed to open {gone}/x.log for logging: No such file or "
        r"directory\n", p.stderr), p.stderr
    p = run([*cmd, "-vconsole:off", f"--log-file={gone}/x.log", "--unixctl=none", db],
            env=env, check=False, timeout=15)
    assert (p.returncode, p.stderr) == (1, "")


def test_syslog_target(kind: str, dirs: Dirs) -> None:
    """`--syslog-target`: RFC 5424 lines over UDP, as the real daemons send them."""
    db = create_db(kind, dirs.base / "nb.db", NB_SCHEMA)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        s.settimeout(10)
        port = s.getsockname()[1]
        proc = subprocess.Popen([*server_cmd(kind), f"--syslog-target=127.0.0.1:{port}",
                                 "-vconsole:off", f"--log-file={dirs.logfile}",
                                 "--unixctl=none", "--run=true", db], env=dirs.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dirs.track(proc.pid)
        try:
            got = [s.recv(65536), s.recv(65536)]
            assert proc.wait(timeout=20) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    host = re.escape(socket.gethostname())
    head = rf"1 \d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{{3}}Z {host} ovsdb-server {proc.pid} vlog - "
    assert re.fullmatch(("<132>" + head + "\ufeff--syslog-target flag is deprecated, use "
                         "--syslog-method instead").encode(), got[0]), got
    assert re.fullmatch(("<133>" + head + f"\ufeffopened log file {dirs.logfile}").encode(),
                        got[1]), got


def test_monitor_restarts_crashed_daemon(kind: str, dirs: Dirs) -> None:
    """`--monitor`: a daemon killed by SIGSEGV is restarted with the remotes and
    databases added and removed at run time; one killed by SIGKILL is not, and the
    supervisor ends. The pidfile is the serving daemon's, locked by it."""
    db = create_db(kind, dirs.base / "conf.db", VSWITCH_SCHEMA)
    nb = create_db(kind, dirs.base / "nb.db", NB_SCHEMA)
    first, extra = dirs.base / "first.sock", dirs.base / "extra.sock"

    def no_cores() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    subprocess.run([*server_cmd(kind), "--detach", "--monitor", "--pidfile", "--log-file",
                    "--no-chdir", f"--remote=punix:{first}", "-vconsole:off", db],
                   env=dirs.env, check=True, timeout=30, preexec_fn=no_cores,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid1 = dirs.track(read_pid(dirs.pidfile))
    monitor = dirs.track(ppid(pid1))
    assert wait_until(lambda: comm(monitor) == "monitor") and comm(pid1) == "ovsdb-server"
    assert lock_holder(dirs.pidfile) == pid1
    dirs.appctl("ovsdb-server/add-remote", f"punix:{extra}")
    dirs.appctl("ovsdb-server/add-db", nb)
    dirs.appctl("ovsdb-server/remove-remote", f"punix:{first}")
    assert wait_until(lambda: client("list-dbs", f"unix:{extra}", check=False).returncode == 0)

    os.kill(pid1, signal.SIGSEGV)

    def restarted() -> bool:
        try:
            pid = read_pid(dirs.pidfile)
        except (OSError, AssertionError):
            return False
        return pid != pid1 and (dirs.run / f"ovsdb-server.{pid}.ctl").exists()

    assert wait_until(restarted, 20)
    pid2 = dirs.track(read_pid(dirs.pidfile))
    assert lock_holder(dirs.pidfile) == pid2 and ppid(pid2) == monitor
    assert dirs.appctl("ovsdb-server/list-remotes").stdout == f"punix:{extra}\n"
    assert dirs.appctl("ovsdb-server/list-dbs").stdout == (
        "OVN_Northbound\nOpen_vSwitch\n_Server\n")
    assert client("list-dbs", f"unix:{extra}").stdout == "OVN_Northbound\nOpen_vSwitch\n_Server\n"
    assert not first.exists() or client("list-dbs", f"unix:{first}", check=False).returncode
    assert any(line.endswith(f"|daemon_unix(monitor)|ERR|1 crashes: pid {pid1} died, killed "
                             "(Segmentation fault), restarting")
               for line in log_lines(dirs.logfile))

    os.kill(pid2, signal.SIGKILL)
    assert wait_until(lambda: not alive(monitor), 20)
    assert any(line.endswith(f"|daemon_unix(monitor)|INFO|pid {pid2} died, killed (Killed), "
                             "exiting") for line in log_lines(dirs.logfile))


def _ovn_ctl() -> str:
    path = shutil.which("ovn-ctl") or "/usr/share/ovn/scripts/ovn-ctl"
    if not os.path.exists(path):
        require("ovn-ctl")
    return path


def _as_ovsdb_server_on_path(kind: str, dirs: Dirs, env: dict[str, str]) -> None:
    """Ours under the real name, first on PATH (the entry point linked as
    `ovsdb-server`, else a wrapper script)."""
    if kind != "ours":
        return
    bindir = dirs.base / "bin"
    bindir.mkdir()
    entry = Path(sys.executable).parent / "pyovsdb"
    if entry.exists():
        (bindir / "ovsdb-server").symlink_to(entry)
    else:
        (bindir / "ovsdb-server").write_text(
            f'#!/bin/sh\nexec {sys.executable} -m pyovsdb server "$@"\n')
        (bindir / "ovsdb-server").chmod(0o755)
    env["PATH"] = f"{bindir}:{env['PATH']}"


def test_ovs_ctl_start_status_stop(kind: str, dirs: Dirs) -> None:
    """The real `ovs-ctl --no-ovs-vswitchd` (what starts conf.db's server on every
    hypervisor): it creates conf.db, starts `ovsdb-server` by name with --monitor,
    initializes it with ovs-vsctl, adds the manager remote with `ovs-appctl -t
    ovsdb-server`, reports it running and stops it gracefully."""
    require("ovs-vsctl")
    ovs_ctl = shutil.which("ovs-ctl") or "/usr/share/openvswitch/scripts/ovs-ctl"
    if not os.path.exists(ovs_ctl):
        require("ovs-ctl")
    (dirs.db / "openvswitch").mkdir()
    env = {**dirs.env, "OVS_SYSCONFDIR": str(dirs.db)}
    _as_ovsdb_server_on_path(kind, dirs, env)
    base = [ovs_ctl, "--no-ovs-vswitchd"]
    run([*base, "--system-id=random", "start"], env=env, timeout=60)
    pid = dirs.track(read_pid(dirs.pidfile))
    dirs.track(ppid(pid))
    assert lock_holder(dirs.pidfile) == pid
    assert "db:Open_vSwitch,Open_vSwitch,manager_options" in dirs.appctl(
        "ovsdb-server/list-remotes").stdout
    sock = f"unix:{dirs.run / 'db.sock'}"
    assert run(["ovs-vsctl", f"--db={sock}", "get", "Open_vSwitch", ".",
                "external_ids:system-id"]).stdout.strip()
    status = run([*base, "status"], env=env, check=False).stdout
    assert f"ovsdb-server is running with pid {pid}" in status
    stop = run([*base, "stop"], env=env, timeout=60)
    assert f"Exiting ovsdb-server ({pid})" in stop.stdout, stop.stdout
    assert wait_until(lambda: not alive(pid), 20)
    assert not dirs.pidfile.exists()


def test_ovn_ctl_start_status_stop(kind: str, dirs: Dirs) -> None:
    """The real `ovn-ctl` runs `ovsdb-server` by name from PATH (ours: the entry
    point linked under that name): start (--detach --monitor, SSL options from the
    database), status (pidfile, process name, sync-status) and a graceful stop
    (`ovs-appctl exit`, chosen from the version's last word)."""
    require("ovn-nbctl")
    ovn_ctl = _ovn_ctl()
    env = {**dirs.env, "OVN_RUNDIR": str(dirs.run), "OVN_LOGDIR": str(dirs.log),
           "OVN_DBDIR": str(dirs.db), "OVN_ETCDIR": str(dirs.db)}
    _as_ovsdb_server_on_path(kind, dirs, env)
    run([ovn_ctl, "start_nb_ovsdb"], env=env, timeout=60)
    pidfile = dirs.run / "ovnnb_db.pid"
    pid = dirs.track(read_pid(pidfile))
    monitor = dirs.track(ppid(pid))
    assert wait_until(lambda: comm(monitor) == "monitor") and comm(pid) == "ovsdb-server"
    assert lock_holder(pidfile) == pid
    sock = f"unix:{dirs.run / 'ovnnb_db.sock'}"
    run(["ovn-nbctl", f"--db={sock}", "ls-add", "sw0"])
    assert run(["ovn-nbctl", f"--db={sock}", "ls-list"]).stdout.endswith("(sw0)\n")
    assert run([ovn_ctl, "status_ovnnb"], env=env).stdout == "running/active\n"
    stop = run([ovn_ctl, "stop_nb_ovsdb"], env=env, timeout=60)
    assert f"Exiting ovnnb_db ({pid})" in stop.stdout, stop.stdout
    assert wait_until(lambda: not alive(pid) and not alive(monitor), 20)
    assert not pidfile.exists()
    assert run([ovn_ctl, "status_ovnnb"], env=env).stdout == "not-running\n"


def test_relative_pidfile_and_control_socket_are_in_rundir(kind: str, dirs: Dirs) -> None:
    """`--pidfile=NAME` and `--unixctl=DIR/NAME` are relative to OVS_RUNDIR (not to the
    working directory), as the real daemons resolve them; `--log-file=NAME` is in the
    working directory, and logged under that name."""
    db = create_db(kind, dirs.base / "nb.db", NB_SCHEMA)
    (dirs.run / "sub").mkdir()
    cwd = dirs.base / "cwd"
    (cwd / "sub").mkdir(parents=True)
    p = subprocess.run([*server_cmd(kind), "--pidfile=p.pid", "--unixctl=sub/x.ctl",
                        "-vconsole:off", "--log-file=rel.log",
                        f"--run=test -S {dirs.run}/sub/x.ctl && cat "
                        f"{dirs.run}/p.pid && ls {cwd} {cwd}/sub", db],
                       env=dirs.env, cwd=cwd, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    pid, listing = p.stdout.split("\n", 1)
    assert int(pid) > 0 and listing == f"{cwd}:\nrel.log\nsub\n\n{cwd}/sub:\n"
    assert log_lines(cwd / "rel.log")[0].endswith("|00001|vlog|INFO|opened log file rel.log")


@pytest.mark.skipif(os.geteuid() != 0, reason="--user needs root")
def test_user_option(kind: str, dirs: Dirs) -> None:
    """`--user=USER[:GROUP]` (root only): the daemon and its --run command run as that
    user; a bad user or group is refused with the real text."""
    base = [*server_cmd(kind), "--no-dbs", "--unixctl=none", "-vconsole:off"]
    p = run([*base, "--user=nobody", "--run=id -un; id -u"], env=dirs.env)
    assert p.stdout.split("\n")[0] == "nobody"
    for spec, text in [
        ("nosuchuser", "user nosuchuser not found, aborting."),
        ("nobody:nosuchgroup", "group nosuchgroup not found, aborting."),
        ("nobody:root", "Invalid --user option nobody:root (user nobody is not in group "
                        "root), aborting."),
    ]:
        p = run([*base, f"--user={spec}", "--run=true"], env=dirs.env, check=False)
        assert (p.returncode, p.stderr) == (1, f"ovsdb-server: (null): {text}\n")


def test_syslog_method(kind: str, dirs: Dirs) -> None:
    """`--syslog-method=unix:PATH`: the priority and the syslog pattern's line, per
    message that the syslog levels let through (`-vprocess:syslog:dbg`)."""
    db = create_db(kind, dirs.base / "nb.db", NB_SCHEMA)
    path = dirs.base / "syslog.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.bind(str(path))
        s.settimeout(10)
        run([*server_cmd(kind), f"--syslog-method=unix:{path}", "-vconsole:off",
             "-vprocess:syslog:dbg", f"--log-file={dirs.logfile}", "--unixctl=none",
             "--run=true", db], env=dirs.env)
        got = [s.recv(65536), s.recv(65536)]
    assert got == [f"<29>ovs|00001|vlog|INFO|opened log file {dirs.logfile}".encode(),
                   b"<31>ovs|00002|process|DBG|starting subprocess: /bin/sh -c true"]


def test_memory_report_after_ten_seconds(tmp_path: Path) -> None:
    """lib/memory.c's first report, 10 s after start: the peak RSS, then the server's
    counters; both servers run at once so the test waits 10 s only once."""
    require("ovsdb-server")
    procs, logs = [], []
    try:
        for kind in KINDS:
            d = tmp_path / kind
            d.mkdir()
            db = create_db(kind, d / "nb.db", NB_SCHEMA)
            logs.append(d / "db.log")
            procs.append(subprocess.Popen(
                [*server_cmd(kind), f"--log-file={logs[-1]}", "-vconsole:off",
                 f"--remote=punix:{d / 'db.sock'}", f"--unixctl={d / 'db.ctl'}", db],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

        def reported(log: Path) -> list[str]:
            return [line for line in log_lines(log) if "|memory|" in line]

        assert wait_until(lambda: all(len(reported(log)) >= 2 for log in logs), 30)
        for log in logs:
            first, counters = reported(log)[:2]
            assert re.search(r"\|memory\|INFO\|\d+ kB peak resident set size after "
                             r"1\d\.\d seconds$", first), first
            assert re.search(r"\|memory\|INFO\|([a-z-]+:\d+ )*[a-z-]+:\d+$", counters), counters
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_ovn_appctl_by_name_and_by_socket(kind: str, dirs: Dirs) -> None:
    """OVN's scripts reach the NB and SB servers with `ovn-appctl`: by a name looked up
    in OVN_RUNDIR (NAME.pid, then NAME.PID.ctl), and by the socket path ovn-ctl gives
    with --unixctl."""
    require("ovn-appctl")
    env = {**dirs.env, "OVN_RUNDIR": str(dirs.run)}
    db = create_db(kind, dirs.base / "nb.db", NB_SCHEMA)
    sock = dirs.base / "nb.sock"
    run([*server_cmd(kind), "--detach", "--no-chdir", "-vconsole:off", "--pidfile",
         f"--remote=punix:{sock}", db], env=env, timeout=30)
    pid = dirs.track(read_pid(dirs.pidfile))

    def appctl(target: str, *args: str) -> str:
        return run(["ovn-appctl", "--timeout=20", "-t", target, *args], env=env).stdout

    assert appctl("ovsdb-server", "ovsdb-server/list-dbs") == "OVN_Northbound\n_Server\n"
    assert appctl(str(dirs.run / f"ovsdb-server.{pid}.ctl"),
                  "ovsdb-server/list-remotes") == f"punix:{sock}\n"
    appctl("ovsdb-server", "exit")
    assert wait_until(lambda: not alive(pid), timeout=20)
    assert not dirs.pidfile.exists()

    # ovn-ctl's way: a fixed control socket name, reached by its path.
    ctl = dirs.run / "ovnnb_db.ctl"
    run([*server_cmd(kind), "--detach", "--no-chdir", "-vconsole:off",
         f"--pidfile={dirs.run}/ovnnb_db.pid", f"--unixctl={ctl}", f"--remote=punix:{sock}",
         db], env=env, timeout=30)
    pid = dirs.track(read_pid(dirs.run / "ovnnb_db.pid"))
    assert appctl(str(ctl), "ovsdb-server/list-dbs") == "OVN_Northbound\n_Server\n"
    appctl(str(ctl), "exit")
    assert wait_until(lambda: not alive(pid), timeout=20)
