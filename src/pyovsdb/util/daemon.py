"""Daemon housekeeping with the real tools' conventions: default directories, pidfiles,
`--detach` with readiness reporting, and `--no-chdir`.

Rules kept here:
- Default directories come from OVS_RUNDIR, OVS_LOGDIR and OVS_DBDIR, else the
  packaged locations, so scripts written for the real daemons find our files.
- A pidfile holds the pid and a newline, is written only once the daemon is ready and
  removed on clean exit; an existing pidfile of a live process is an error.
- `--detach`: the parent returns only when the child reports that it is serving (exit
  0) or has failed (the child's error on stderr, exit 1). The child starts a new
  session, drops the terminal and, unless `--no-chdir`, changes to "/".
"""

from __future__ import annotations

import os
import sys


def rundir() -> str:
    return os.environ.get("OVS_RUNDIR", "/var/run/openvswitch")


def logdir() -> str:
    return os.environ.get("OVS_LOGDIR", "/var/log/openvswitch")


def dbdir() -> str:
    return os.environ.get("OVS_DBDIR", "/etc/openvswitch")


def check_pidfile(path: str) -> None:
    try:
        with open(path) as f:
            pid = int(f.read().strip() or "0")
    except (OSError, ValueError):
        return
    if pid > 0 and pid != os.getpid():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        except PermissionError:
            pass
        raise SystemExit(f"{path}: already running as pid {pid}, aborting")


def write_pidfile(path: str) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(f"{os.getpid()}\n")
    os.rename(tmp, path)


def remove_pidfile(path: str | None) -> None:
    if not path:
        return
    try:
        with open(path) as f:
            if f.read().strip() != str(os.getpid()):
                return
        os.unlink(path)
    except OSError:
        pass


class Detacher:
    """Forks; the parent waits on a pipe for the child's `ready()` or `failed()`."""

    def __init__(self, chdir: bool) -> None:
        self.chdir = chdir
        self.wfd = -1

    def detach(self) -> None:
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid > 0:
            os.close(wfd)
            data = b""
            while True:
                chunk = os.read(rfd, 65536)
                if not chunk:
                    break
                data += chunk
            if data.startswith(b"ok"):
                os._exit(0)
            sys.stderr.write(data.decode(errors="replace") or "daemon exited during startup\n")
            os._exit(1)
        os.close(rfd)
        self.wfd = wfd
        os.setsid()
        if self.chdir:
            os.chdir("/")

    def ready(self) -> None:
        if self.wfd >= 0:
            os.write(self.wfd, b"ok")
            os.close(self.wfd)
            self.wfd = -1
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.close(devnull)

    def failed(self, message: str) -> None:
        if self.wfd >= 0:
            os.write(self.wfd, message.encode())
            os.close(self.wfd)
            self.wfd = -1
