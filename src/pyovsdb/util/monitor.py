"""`--monitor`: a supervisor process that restarts the daemon when it crashes, as
lib/daemon-unix.c's monitor_daemon does.

Rules kept here:
- The supervisor forks the daemon and waits for it. A daemon that dies of SIGABRT,
  SIGALRM, SIGBUS, SIGFPE, SIGILL, SIGPIPE, SIGSEGV, SIGXCPU or SIGXFSZ has crashed and
  is forked again ("N crashes: pid P died, killed (Segmentation fault), restarting",
  daemon_unix, err); restarts are at least 10 s apart (a warning says it waits). Any
  other end (an exit, SIGTERM, SIGKILL) ends the supervisor too, with status 0 ("pid P
  died, exit status 0, exiting", info).
- A crash that dumped core turns further core dumps off.
- The supervisor's log lines carry the subprogram name "monitor" and so does its
  process name; a restarted daemon's carry the program name. The supervisor closes the
  log file while it waits (so a rotated file is let go) and opens it again to log.
- What the daemon must keep across a restart (databases and remotes added at run time)
  is the caller's business: the fork starts from the state the supervisor had, so the
  caller keeps it in a file that both share (see restart_config.py).
"""

from __future__ import annotations

import logging
import os
import resource
import signal
import time

from . import procname, vlog
from .daemon import (
    Fatal,
    close_standard_fds,
    fork_and_wait_for_startup,
    notify_startup,
    status_message,
)

log = logging.getLogger("daemon_unix")

CRASH_SIGNALS = frozenset((signal.SIGABRT, signal.SIGALRM, signal.SIGBUS, signal.SIGFPE,
                           signal.SIGILL, signal.SIGPIPE, signal.SIGSEGV, signal.SIGXCPU,
                           signal.SIGXFSZ))
RESTART_INTERVAL = 10.0


def should_restart(status: int) -> bool:
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) in CRASH_SIGNALS


def supervise(parent_fd: int, detach: bool) -> int:
    """Fork the daemon; return in it (with the descriptor its readiness goes to). The
    supervisor never returns: it exits when the daemon ends for good."""
    fd, pid = fork_and_wait_for_startup()
    if pid == 0:
        return fd
    if pid < 0:
        raise Fatal("could not initiate process monitoring")
    logs = vlog.current()
    logs.subprogram = "monitor"
    procname.set_name("monitor")
    # The daemon is ready: so is the whole, for whoever waits on us.
    notify_startup(parent_fd)
    if detach:
        close_standard_fds()
    fd = _loop(pid, logs)
    # In a restarted daemon.
    logs.subprogram = logs.program
    procname.set_name(logs.program)
    return fd


def _loop(pid: int, logs: vlog.Vlog) -> int:
    crashes = 0
    last_restart = float("-inf")
    ready = True
    status = 0
    while True:
        if ready:
            saved = logs.suspend_file()
            while True:
                try:
                    _, status = os.waitpid(pid, 0)
                    break
                except InterruptedError:
                    continue
            if saved is not None:
                logs.open_log_file(*saved)
        if not should_restart(status):
            log.info("pid %d died, %s, exiting", pid, status_message(status))
            os._exit(0)
        crashes += 1
        what = f"{crashes} crashes: pid {pid} died, {status_message(status)}"
        if os.WCOREDUMP(status):
            try:
                resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            except (OSError, ValueError) as e:
                log.warning("failed to disable core dumps: %s", e)
        now = time.monotonic()
        if now < last_restart + RESTART_INTERVAL:
            log.warning("%s, waiting until 10 seconds since last restart", what)
            time.sleep(last_restart + RESTART_INTERVAL - now)
        last_restart = time.monotonic()
        log.error("%s, restarting", what)
        fd, new_pid = fork_and_wait_for_startup()
        if new_pid == 0:
            return fd
        ready = new_pid > 0
        pid = abs(new_pid)
