"""Daemon housekeeping with the real daemons' conventions (lib/daemon-unix.c): default
directories, locked pidfiles, `--detach`, `--monitor` and `--no-chdir`.

Rules kept here:
- Default directories come from OVS_RUNDIR, OVS_LOGDIR and OVS_DBDIR (an empty one
  counts as unset, as lib/dirs.c reads them), else the packaged locations, so scripts
  written for the real daemons find our files.
- A pidfile holds the pid and a newline and is fcntl-write-locked (the whole file) by
  the serving process for its whole life: `ovs-appctl -t NAME` and the real tools
  believe a pidfile only if the process named in it holds that lock. It is made by
  locking `FILE.tmp`, checking FILE, writing and renaming, so two daemons racing for
  one pidfile cannot both win. A pidfile locked by a live process is an error
  ("FILE: already running as pid N, aborting"); an unlocked (stale) one is deleted;
  with `--overwrite-pidfile` neither check is made. The pidfile is never opened again
  by its owner (closing any descriptor of a locked file drops the lock); it is removed
  on exit if it is still ours.
- `--detach`: the parent returns only when the daemon reports that it is serving (exit
  0) or has failed (then with the daemon's exit status; the daemon printed its error on
  the still-shared stderr). The daemon starts a new session; only once it is ready does
  it change to "/" (unless `--no-chdir`), point its standard streams at /dev/null and
  turn its console log off, so that relative database names given on the command line
  still open and startup errors still reach the terminal.
- `--monitor`: a supervisor process forks the daemon and restarts it when it dies of
  one of the error signals (see monitor.py); the pidfile and control socket are the
  daemon's, not the supervisor's.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import struct
import sys
from dataclasses import dataclass, field

from . import vlog

log = logging.getLogger("daemon_unix")

def rundir() -> str:
    return os.environ.get("OVS_RUNDIR") or "/var/run/openvswitch"


def logdir() -> str:
    return os.environ.get("OVS_LOGDIR") or "/var/log/openvswitch"


def dbdir() -> str:
    return os.environ.get("OVS_DBDIR") or "/etc/openvswitch"


class Fatal(Exception):
    """A startup failure: the caller logs it (emer) and prints `program: message`."""


# -- pidfiles --------------------------------------------------------------------------

_FLOCK = "hhqqi"  # struct flock on Linux: type, whence, start, len, pid
_FLOCK_SIZE = 32


def _flock(kind: int) -> bytes:
    return struct.pack(_FLOCK, kind, os.SEEK_SET, 0, 0, 0).ljust(_FLOCK_SIZE, b"\0")


def lock_whole_file(fd: int) -> None:
    """F_SETLK a write lock on the whole file; OSError (EAGAIN/EACCES) if held."""
    fcntl.fcntl(fd, fcntl.F_SETLK, _flock(fcntl.F_WRLCK))


def lock_holder(fd: int) -> int:
    """The pid holding a write-conflicting lock on the file, 0 if none."""
    out = fcntl.fcntl(fd, fcntl.F_GETLK, _flock(fcntl.F_WRLCK))
    kind, _, _, _, pid = struct.unpack(_FLOCK, out[:struct.calcsize(_FLOCK)])
    return 0 if kind == fcntl.F_UNLCK else pid


def read_pidfile(path: str, delete_if_stale: bool = False) -> int:
    """The pid of the live process that holds `path` locked; 0 if there is no such
    file (or, with `delete_if_stale`, it was stale and is now deleted); -errno if it
    cannot be told (ESRCH: stale)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ENOENT and delete_if_stale:
            return 0
        return -(e.errno or errno.EIO)
    try:
        try:
            holder = lock_holder(fd)
        except OSError as e:
            return -(e.errno or errno.EIO)
        if holder == 0:
            if not delete_if_stale:
                return -errno.ESRCH
            try:
                lock_whole_file(fd)
            except OSError as e:
                return -(e.errno or errno.EIO)
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except OSError:
                same = False
            if not same:
                return -errno.EALREADY
            try:
                os.unlink(path)
            except OSError as e:
                return -(e.errno or errno.EIO)
            log.debug("%s: deleted stale pidfile", path)
            return 0
        line = os.pread(fd, 128, 0).split(b"\n")[0]
        try:
            pid = int(line)
        except ValueError:
            return -errno.ESRCH
        return holder if pid == holder else -errno.ESRCH
    finally:
        os.close(fd)


@dataclass
class Pidfile:
    """A pidfile this process made and holds locked."""

    path: str
    fd: int
    ino: tuple[int, int] = field(default=(0, 0))

    @classmethod
    def make(cls, path: str, overwrite: bool) -> Pidfile:
        pid = os.getpid()
        tmp = f"{path}.tmp{pid}" if overwrite else f"{path}.tmp"
        try:
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise Fatal(f"{tmp}: create failed ({e.strerror})") from None
        try:
            try:
                lock_whole_file(fd)
            except OSError as e:
                raise Fatal(f"{tmp}: fcntl(F_SETLK) failed ({e.strerror})") from None
            if not overwrite:
                other = read_pidfile(path, delete_if_stale=True)
                if other > 0:
                    _unlink_quietly(tmp)
                    raise Fatal(f"{path}: already running as pid {other}, aborting")
                if other < 0:
                    _unlink_quietly(tmp)
                    raise Fatal(f"{path}: pidfile check failed "
                                f"({os.strerror(-other)}), aborting")
            os.ftruncate(fd, 0)
            os.write(fd, f"{pid}\n".encode())
            try:
                os.rename(tmp, path)
            except OSError as e:
                _unlink_quietly(tmp)
                raise Fatal(f'failed to rename "{tmp}" to "{path}" ({e.strerror})') from None
        except BaseException:
            os.close(fd)
            raise
        st = os.fstat(fd)
        return cls(path, fd, (st.st_dev, st.st_ino))

    def remove(self) -> None:
        """Unlink the pidfile if the name still refers to ours, then drop the lock."""
        try:
            st = os.stat(self.path)
            if (st.st_dev, st.st_ino) == self.ino:
                os.unlink(self.path)
        except OSError:
            pass
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


# -- --user ---------------------------------------------------------------------------


def become_user(spec: str, pidfile: str | None, log_file: str | None) -> None:
    """`--user=USER[:GROUP]`: switch to that user and group for good (root only), after
    handing it the log file. Errors name the pidfile as the real ones do."""
    import grp
    import pwd

    where = pidfile or "(null)"
    if os.geteuid() != 0 or os.getuid() != 0:
        raise Fatal(f"{where}: only root can use --user option")
    user, _, group = (x.strip() for x in spec.partition(":"))
    try:
        pw = pwd.getpwnam(user) if user else pwd.getpwuid(os.getuid())
    except KeyError:
        raise Fatal(f"{where}: user {user} not found, aborting.") from None
    uid, gid = pw.pw_uid, pw.pw_gid
    if group:
        try:
            gr = grp.getgrnam(group)
        except KeyError:
            raise Fatal(f"{where}: group {group} not found, aborting.") from None
        if gr.gr_gid != gid and pw.pw_name not in gr.gr_mem:
            raise Fatal(f"{where}: Invalid --user option {spec} (user {pw.pw_name} is not "
                        f"in group {group}), aborting.")
        gid = gr.gr_gid
    try:
        if log_file:
            os.chown(log_file, uid, gid)
        os.setgid(gid)
        os.initgroups(pw.pw_name, gid)
        os.setuid(uid)
    except OSError as e:
        raise Fatal(f"{where}: fail to switch user to {pw.pw_name}, aborting "
                    f"({e.strerror})") from None


# -- detaching -------------------------------------------------------------------------


def fork_and_wait_for_startup() -> tuple[int, int]:
    """Fork. The parent waits for the child's startup byte and returns (-1, child
    pid); if the child exits with an error first, the parent exits with the same
    status; if it dies otherwise, (-1, -pid). The child returns (write fd, 0)."""
    rfd, wfd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        return wfd, 0
    os.close(wfd)
    try:
        data = os.read(rfd, 1)
    finally:
        os.close(rfd)
    if data:
        return -1, pid
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status):
        os._exit(os.WEXITSTATUS(status))
    log.error("fork child died before signaling startup (%s)",
                                           status_message(status))
    return -1, -pid


def notify_startup(fd: int) -> None:
    if fd >= 0:
        try:
            os.write(fd, b"\0")
        finally:
            os.close(fd)


def status_message(status: int) -> str:
    """A wait status in the real daemons' words: "exit status 3", "killed
    (Segmentation fault)", with ", core dumped" when there is a core."""
    import signal

    if os.WIFEXITED(status):
        text = f"exit status {os.WEXITSTATUS(status)}"
    elif os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        text = f"killed ({signal.strsignal(sig) or f'signal {sig}'})"
    elif os.WIFSTOPPED(status):
        sig = os.WSTOPSIG(status)
        text = f"stopped ({signal.strsignal(sig) or f'signal {sig}'})"
    else:
        text = f"terminated abnormally ({status:x})"
    if os.WCOREDUMP(status):
        text += ", core dumped"
    return text


def close_standard_fds() -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    vlog.current().console_off()


class Daemon:
    """`start()` before opening anything the daemon serves, `complete()` once it is
    serving; between the two, this process is the daemon (the parent and, with
    `--monitor`, the supervisor stay behind in `start()`)."""

    def __init__(self, *, detach: bool = False, monitor: bool = False,
                 pidfile: str | None = None, overwrite_pidfile: bool = False,
                 chdir: bool = True) -> None:
        self.detach = detach
        self.monitor = monitor
        self.pidfile_path = pidfile
        self.overwrite_pidfile = overwrite_pidfile
        self.chdir = chdir
        self.pidfile: Pidfile | None = None
        self._notify_fd = -1
        self._completed = False

    def start(self) -> None:
        if self.detach:
            fd, pid = fork_and_wait_for_startup()
            if pid != 0:
                if pid < 0:
                    raise Fatal("could not detach from foreground session")
                os._exit(0)
            self._notify_fd = fd
            os.setsid()
        if self.monitor:
            from .monitor import supervise

            self._notify_fd = supervise(self._notify_fd, self.detach)
        if self.pidfile_path is not None:
            self.pidfile = Pidfile.make(self.pidfile_path, self.overwrite_pidfile)

    def complete(self) -> None:
        if self._completed:
            return
        self._completed = True
        notify_startup(self._notify_fd)
        self._notify_fd = -1
        if self.detach:
            if self.chdir:
                os.chdir("/")
            close_standard_fds()

    def cleanup(self) -> None:
        if self.pidfile is not None:
            self.pidfile.remove()
            self.pidfile = None
