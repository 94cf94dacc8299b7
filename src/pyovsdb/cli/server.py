"""`pyovsdb server`: a drop-in for `ovsdb-server` command lines.

Takes ovsdb-server's options (--remote, --unixctl, --pidfile[=FILE], --log-file[=FILE],
--detach, --no-chdir, -v...) and database files, serves until `exit` on the control
socket or SIGTERM/SIGINT, and cleans up its pidfile and sockets.

Two limits of our own bound what one client can cost: --max-backlog (unsent output) and
--max-message-size (one received message; the real server has no such limit, so the
default is large). The soft limit on open files is raised to the hard limit at startup,
so that thousands of clients can connect where the default soft limit is 1024.
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import signal
import sys

from .. import __version__
from ..jsonrpc.stream import DEFAULT_MAX_SIZE
from ..ovsdb.errors import OvsdbError
from ..util import daemon, gctune, vlog
from . import options as opt

USAGE = """\
pyovsdb server: Open vSwitch compatible database server
usage: pyovsdb server [OPTIONS] [DATABASE...]
where each DATABASE is a database file in ovsdb format.
The default DATABASE, if none is given, is
  {dbdir}/conf.db

JSON-RPC options (may be specified any number of times):
  --remote=REMOTE         connect or listen to REMOTE
                          (punix:PATH, ptcp:PORT[:IP], db:DB,TABLE,COLUMN)

Daemon options:
  --detach                run in background as daemon
  --monitor               accepted for compatibility
  --no-chdir              do not chdir to '/'
  --pidfile[=FILE]        create pidfile (default: {rundir}/ovsdb-server.pid)
  --overwrite-pidfile     with --pidfile, start even if already running
  --unixctl=SOCKET        override default control socket name

Logging options:
  -vSPEC, --verbose=SPEC   set logging levels
  -v, --verbose            set maximum verbosity level
  --log-file[=FILE]        enable logging to specified FILE
                           (default: {logdir}/ovsdb-server.log)

Other options:
  --no-raft-commit-sync   clustered: followers learn commits only at the next
                          heartbeat (the behaviour before OVS 2.12, for comparison)
  --max-backlog=BYTES     close clients whose unsent output exceeds BYTES
  --max-message-size=BYTES  close clients that send a message larger than BYTES
                          (default: {max_message})
  -h, --help              display this help message
  -V, --version           display version information
"""

LONG = {
    **opt.DAEMON_LONG,
    "remote": opt.REQUIRED,
    "run": opt.REQUIRED,
    "max-backlog": opt.REQUIRED,
    "max-message-size": opt.REQUIRED,
    "no-raft-commit-sync": opt.NONE,
    "disable-file-column-diff": opt.NONE,
    "private-key": opt.REQUIRED,
    "certificate": opt.REQUIRED,
    "ca-cert": opt.REQUIRED,
    "bootstrap-ca-cert": opt.REQUIRED,
    "peer-ca-cert": opt.REQUIRED,
    "ssl-protocols": opt.REQUIRED,
    "ssl-ciphers": opt.REQUIRED,
}

log = logging.getLogger("ovsdb_server")


def main(argv: list[str]) -> int:
    try:
        parsed = opt.parse(argv, LONG, opt.DAEMON_SHORT)
    except opt.UsageError as e:
        print(f"pyovsdb server: {e}", file=sys.stderr)
        return 1
    if parsed.has("help"):
        print(USAGE.format(dbdir=daemon.dbdir(), rundir=daemon.rundir(),
                           logdir=daemon.logdir(), max_message=DEFAULT_MAX_SIZE), end="")
        return 0
    if parsed.has("version"):
        print(f"pyovsdb server {__version__}")
        return 0
    logs = vlog.current()
    try:
        for spec in parsed.all("verbose"):
            logs.set_spec(spec or "")
    except ValueError as e:
        print(f"pyovsdb server: {e}", file=sys.stderr)
        return 1
    dbs = [os.path.abspath(p) for p in parsed.args] or [os.path.join(daemon.dbdir(),
                                                                     "conf.db")]
    remotes = parsed.all("remote")
    pidfile = _default_path(parsed, "pidfile", daemon.rundir(), "ovsdb-server.pid")
    log_file = _default_path(parsed, "log-file", daemon.logdir(), "ovsdb-server.log")
    unixctl = parsed.get("unixctl")
    if unixctl is not None and "/" in unixctl:
        unixctl = os.path.abspath(unixctl)
    limits = {}
    for name, default in (("max-backlog", 512 * 1024 * 1024),
                          ("max-message-size", DEFAULT_MAX_SIZE)):
        try:
            limits[name] = int(parsed.get(name, default))
        except ValueError:
            limits[name] = 0
        if limits[name] <= 0:
            print(f"pyovsdb server: --{name} requires a positive integer", file=sys.stderr)
            return 1
    max_backlog = limits["max-backlog"]
    for r in remotes:
        if r.startswith(("pssl:", "ssl:")):
            print(f"pyovsdb server: {r}: SSL remotes are not supported", file=sys.stderr)
            return 1
    if pidfile is not None and not parsed.has("overwrite-pidfile"):
        try:
            daemon.check_pidfile(pidfile)
        except SystemExit as e:
            print(f"pyovsdb server: {e}", file=sys.stderr)
            return 1
    detacher = None
    if parsed.has("detach"):
        detacher = daemon.Detacher(chdir=not parsed.has("no-chdir"))
        detacher.detach()
    logs.start(log_file, console=True)
    gctune.tune()
    _raise_open_files_limit()
    try:
        import uvloop  # type: ignore[import-not-found]

        runner = uvloop.run
    except ImportError:
        runner = asyncio.run
    try:
        return runner(_serve(dbs, remotes, unixctl, pidfile, max_backlog,
                             limits["max-message-size"], detacher,
                             not parsed.has("no-raft-commit-sync")))
    except (OvsdbError, OSError) as e:
        text = e.details if isinstance(e, OvsdbError) and e.details else str(e)
        msg = f"pyovsdb server: {text}\n"
        if detacher is not None:
            detacher.failed(msg)
        else:
            sys.stderr.write(msg)
        return 1


def _raise_open_files_limit() -> None:
    """Each client is a file descriptor; the usual soft limit (1024) is far below what
    the kernel allows a process (the hard limit)."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = hard if hard != resource.RLIM_INFINITY else 1 << 20
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (OSError, ValueError) as e:
        log.warning("cannot raise the limit on open files: %s", e)


def _default_path(parsed: opt.Parsed, name: str, directory: str, base: str) -> str | None:
    if not parsed.has(name):
        return None
    value = parsed.get(name)
    return os.path.abspath(value) if value else os.path.join(directory, base)


async def _serve(dbs: list[str], remotes: list[str], unixctl: str | None,
                 pidfile: str | None, max_backlog: int, max_message: int,
                 detacher: daemon.Detacher | None, raft_sync_commit: bool = True) -> int:
    from ..server.server import Server

    server = Server(max_backlog=max_backlog, max_message=max_message,
                    raft_sync_commit=raft_sync_commit)
    try:
        for path in dbs:
            await server.add_db(path)
        gctune.freeze()
        for r in remotes:
            await server.listeners.add(r)
        if unixctl is None:
            unixctl = os.path.join(daemon.rundir(), f"ovsdb-server.{os.getpid()}.ctl")
        elif "/" not in unixctl:
            unixctl = os.path.join(daemon.rundir(), unixctl)
        if unixctl != "none":
            await server.start_unixctl(unixctl)
        if pidfile is not None:
            daemon.write_pidfile(pidfile)
    except BaseException:
        server.close()
        raise
    loop = asyncio.get_running_loop()
    stop = loop.create_future()
    server.exiting = stop
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
    log.info("pyovsdb server %s: serving %s on %s", __version__,
             ", ".join(n for n in server.db_names()), ", ".join(server.listeners.bound()))
    if detacher is not None:
        detacher.ready()
    try:
        await stop
    finally:
        server.close()
        daemon.remove_pidfile(pidfile)
    return server.exit_status
