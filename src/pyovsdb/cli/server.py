"""`pyovsdb server`: a drop-in for `ovsdb-server` command lines.

Rules kept here:
- It is `ovsdb-server` to the tools around it: process name (/proc/PID/comm), the
  `ovsdb-server: ` prefix of its fatal errors, default file names
  ($OVS_RUNDIR/ovsdb-server.pid, $OVS_RUNDIR/ovsdb-server.PID.ctl,
  $OVS_LOGDIR/ovsdb-server.log, $OVS_DBDIR/conf.db; a relative --pidfile or --unixctl
  is in $OVS_RUNDIR, a relative --log-file or database in the working directory) and
  its log lines: "opened log file PATH" first, "ovsdb-server (pyovsdb VERSION) 3.1.7"
  once serving (not with --run), memory use after 10 s and whenever the peak grew by
  half, "terminating with signal N (NAME)" on SIGTERM, SIGINT or SIGHUP, after which
  it dies of that signal as the real server does (pidfile and sockets removed first).
- Its version text (`--version`, `ovs-appctl version`, the log) ends with the OVS
  release it reproduces, as the real one's does: scripts compare that last word.
- Startup follows ovsdb-server.c: options in order (`-v` applies from where it
  stands; a `--log-file` that cannot be opened gets the real warning, "failed to open
  PATH for logging: REASON", and then, if PATH was given, exit status 1, else the
  server runs without a log file), then detach,
  monitor and the locked pidfile, then databases, remotes, control socket, `--run`
  command, and only then is the daemon ready (the `--detach` parent returns). Each
  failure is one line `ovsdb-server: ...` with the real wording and exit status 1.
  A remote that cannot listen is not a failure: it is logged and retried
  (server/listeners.py), as the real server does. A `db:` remote naming a database,
  table or column that does not exist is: `ovsdb-server: "db:...": no database named
  DB` (all such remotes, one line each, then a blank line; not logged), status 1.
- `--run=COMMAND`: `/bin/sh -c COMMAND` once serving; the server exits when it ends,
  with status 0 if it succeeded, else 1 after "COMMAND: child exited, exit status N"
  (or "killed (SIGNAL)").
- `--monitor`: restarts after a crash (util/monitor.py) with the remotes and
  databases as last changed at run time (util/restart_config.py).
- Every accepted option does something: `pssl:` and `ssl:` remotes use the PKI
  options (`server/pki.py`: files, or `db:` columns as ovn-ctl passes them);
  `--disable-file-column-diff` is refused (records are always written as column diffs);
  `--no-self-confinement` is a no-op, as in the real ovsdb-server, whose own code never
  reads it.
- Control commands the real server has and `ovn-ctl` uses are added when the command
  table lacks them: `vlog/list-pattern`. Replication (`--sync-from`, the
  `*-active-ovsdb-server` commands, `sync-status`) is `server/replication.py`'s.
- Two limits of our own bound what one client can cost: --max-backlog (unsent output;
  held monitor updates, bounded by the rows that changed, do not count)
  and --max-message-size (one received message; the real server has no such limit, so
  the default is large). The soft limit on open files is raised to the hard limit at
  startup, so that thousands of clients can connect where the default is 1024.
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import signal
import sys
import time
from typing import Any

from .. import __version__
from ..jsonrpc.stream import DEFAULT_MAX_SIZE
from ..ovsdb.errors import OvsdbError
from ..server.pki import PKI_OPTIONS
from ..util import daemon, gctune, procname, vlog
from ..util.metrics_http import MetricsServer, option_problem, start_endpoint
from ..util.restart_config import RestartConfig
from . import daemon_main as dm
from . import options as opt

PROGRAM = "ovsdb-server"
# The release whose behaviour we reproduce. It ends our version text as the OVS version
# ends the real one's, because scripts read it there: ovs-lib's stop_daemon stops a
# daemon gracefully (`ovs-appctl exit`) only if the last word of `version` is >= 2.5.90.
OVS_COMPAT_VERSION = "3.1.7"
VERSION_TEXT = f"{PROGRAM} (pyovsdb {__version__}) {OVS_COMPAT_VERSION}"

USAGE = """\
{prog}: Open vSwitch compatible database server (pyovsdb)
usage: {prog} [OPTIONS] [DATABASE...]
where each DATABASE is a database file in ovsdb format.
The default DATABASE, if none is given, is
{dbdir}/conf.db.

JSON-RPC options (may be specified any number of times):
  --remote=REMOTE         connect or listen to REMOTE
                          (punix:PATH, ptcp:PORT[:IP], pssl:PORT[:IP],
                          unix:PATH, tcp:IP:PORT, ssl:IP:PORT,
                          db:DB,TABLE,COLUMN)

PKI configuration (required to use SSL):
  -p, --private-key=FILE  -c, --certificate=FILE  -C, --ca-cert=FILE
  --bootstrap-ca-cert=FILE  --peer-ca-cert=FILE
  --ssl-protocols=PROTOS  --ssl-ciphers=CIPHERS

Syncing options:
  --sync-from=SERVER      sync DATABASE from active SERVER and start in
                          backup mode (except with --active)
  --sync-exclude-tables=DB:TABLE,...
                          exclude the TABLE in DB from syncing
  --active                with --sync-from, start in active mode

{daemon_usage}
Other options:
  --run COMMAND           run COMMAND as subprocess then exit
  --unixctl=SOCKET        override default control socket name
  --no-dbs                do not open the default database when none is given
  --no-raft-commit-sync   clustered: followers learn commits only at the next
                          heartbeat (the behaviour before OVS 2.12, for comparison)
  --max-backlog=BYTES     close clients whose unsent replies and notifications
                          exceed BYTES (monitor updates for a client that is not
                          reading are held and merged, not counted)
  --max-message-size=BYTES  close clients that send a message larger than BYTES
                          (default: {max_message})
  --update-delay-ms=MS    send a client's monitor updates no sooner than MS ms
                          after its previous ones (merged per row meanwhile), and
                          at once after an idle gap (default 0: as they come)
  --metrics=ptcp:PORT[:IP]  serve metrics (transactions and their latency, sessions,
                          monitors, backlogs, Raft state, database sizes) over HTTP
                          at /metrics, for Prometheus
  -h, --help              display this help message
  -V, --version           display version information
"""

SSL_OPTIONS = ("private-key", "certificate", "ca-cert", "bootstrap-ca-cert", "peer-ca-cert",
               "ssl-protocols", "ssl-ciphers")
LONG = {
    **opt.DAEMON_LONG,
    "remote": opt.REQUIRED,
    "run": opt.REQUIRED,
    "no-dbs": opt.NONE,
    "record": opt.OPTIONAL,
    "replay": opt.OPTIONAL,
    "sync-from": opt.REQUIRED,
    "sync-exclude-tables": opt.REQUIRED,
    "active": opt.NONE,
    "max-backlog": opt.REQUIRED,
    "max-message-size": opt.REQUIRED,
    "no-raft-commit-sync": opt.NONE,
    "metrics": opt.REQUIRED,
    "update-delay-ms": opt.REQUIRED,
    "disable-file-column-diff": opt.NONE,
    **{name: opt.REQUIRED for name in SSL_OPTIONS},
}
SHORT = {**opt.DAEMON_SHORT, "p": ("private-key", opt.REQUIRED),
         "c": ("certificate", opt.REQUIRED), "C": ("ca-cert", opt.REQUIRED)}

log = logging.getLogger("ovsdb_server")
FATAL_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _fatal(message: str, module: str = "ovsdb_server") -> int:
    return dm.fatal(PROGRAM, module, message)


def main(argv: list[str]) -> int:
    try:
        parsed = opt.parse(argv, LONG, SHORT)
    except opt.UsageError as e:
        print(f"{PROGRAM}: {e}", file=sys.stderr)
        return 1
    if parsed.has("help"):
        places = {"prog": PROGRAM, "rundir": daemon.rundir(), "logdir": daemon.logdir()}
        print(USAGE.format(daemon_usage=opt.DAEMON_USAGE.format(**places), **places,
                           dbdir=daemon.dbdir(), max_message=DEFAULT_MAX_SIZE), end="")
        return 0
    if parsed.has("version"):
        print(VERSION_TEXT)
        return 0
    procname.set_name(PROGRAM)
    logs = vlog.current()
    logs.program = PROGRAM
    rc = dm.logging_options(PROGRAM, daemon.logdir(), parsed, logs)
    if rc:
        return rc
    for name in ("record", "replay"):
        if parsed.has(name):
            print(f"{PROGRAM}: --{name} is not supported (stream replay files record the "
                  "real server's internal I/O, which pyovsdb does not have)",
                  file=sys.stderr)
            return 1
    if parsed.has("disable-file-column-diff"):
        print(f"{PROGRAM}: --disable-file-column-diff is not supported (database records "
              "are always written as column diffs)", file=sys.stderr)
        return 1
    remotes = parsed.all("remote")
    limits = {}
    for name, default in (("max-backlog", 512 * 1024 * 1024),
                          ("max-message-size", DEFAULT_MAX_SIZE)):
        try:
            limits[name] = int(parsed.get(name, default))
        except ValueError:
            limits[name] = 0
        if limits[name] <= 0:
            print(f"{PROGRAM}: --{name} requires a positive integer", file=sys.stderr)
            return 1
    try:
        update_delay_ms = float(parsed.get("update-delay-ms", 0))
    except ValueError:
        update_delay_ms = -1.0
    if not 0 <= update_delay_ms <= 60_000:
        print(f"{PROGRAM}: --update-delay-ms takes milliseconds from 0 to 60000",
              file=sys.stderr)
        return 1
    metrics = parsed.get("metrics")
    problem = option_problem(metrics)
    if problem is not None:
        print(f"{PROGRAM}: {problem}", file=sys.stderr)
        return 1
    dbs = list(parsed.args)
    if not dbs and not parsed.has("no-dbs"):
        dbs = [os.path.join(daemon.dbdir(), "conf.db")]
    pidfile = _default_path(parsed, "pidfile", daemon.rundir(), f"{PROGRAM}.pid")
    unixctl = parsed.get("unixctl")
    if unixctl is not None and unixctl != "none":
        unixctl = os.path.join(daemon.rundir(), unixctl)  # an absolute path stays as is
    try:
        if parsed.has("user"):
            daemon.become_user(parsed.get("user"), pidfile, logs.log_file)
        config = RestartConfig.create(remotes, dbs)
        d = daemon.Daemon(detach=parsed.has("detach"), monitor=parsed.has("monitor"),
                          pidfile=pidfile, overwrite_pidfile=parsed.has("overwrite-pidfile"),
                          chdir=not parsed.has("no-chdir"))
        d.start()
    except daemon.Fatal as e:
        return _fatal(str(e), "daemon_unix")
    config.load()
    gctune.tune()
    _raise_open_files_limit()
    try:
        import uvloop  # type: ignore[import-not-found]

        runner = uvloop.run
    except ImportError:
        runner = asyncio.run
    run = _Run(d, config, unixctl, parsed.get("run"), limits["max-backlog"],
               limits["max-message-size"], not parsed.has("no-raft-commit-sync"), metrics,
               update_delay_ms)
    run.pki = {name: str(parsed.get(name)) for name in PKI_OPTIONS if parsed.has(name)}
    run.sync = (parsed.get("sync-from"), parsed.get("sync-exclude-tables") or "",
                parsed.has("active"))
    status = dm.run_to_end(PROGRAM, "ovsdb_server", d, runner, run.serve())
    dm.die_of(run.signal)
    return status



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
    """A relative name is in `directory` (the run directory), as the real daemons
    resolve --pidfile and --unixctl, not in the working directory."""
    if not parsed.has(name):
        return None
    return os.path.join(directory, parsed.get(name) or base)


class _Run:
    """One daemon's life inside the event loop."""

    def __init__(self, d: daemon.Daemon, config: RestartConfig, unixctl: str | None,
                 command: str | None, max_backlog: int, max_message: int,
                 raft_sync_commit: bool, metrics: str | None = None,
                 update_delay_ms: float = 0.0) -> None:
        self.daemon = d
        self.config = config
        self.unixctl = unixctl
        self.command = command
        self.max_backlog = max_backlog
        self.max_message = max_message
        self.raft_sync_commit = raft_sync_commit
        self.metrics = metrics  # `--metrics` target
        self.update_delay_ms = update_delay_ms
        self.signal: int | None = None
        self.pki: dict[str, str] = {}  # the PKI options as given (`server.pki`)
        # --sync-from, --sync-exclude-tables, --active (`server.replication`)
        self.sync: tuple[str | None, str, bool] = (None, "", False)
        self.server: Any = None
        self._waiter: asyncio.Task[None] | None = None

    async def serve(self) -> int:
        from ..server.server import Server

        server = self.server = Server(max_backlog=self.max_backlog,
                                      max_message=self.max_message,
                                      raft_sync_commit=self.raft_sync_commit,
                                      update_delay_ms=self.update_delay_ms)
        server.pki.options = self.pki
        proc = None
        try:
            for name in self.config.db_filenames:
                try:
                    if name.startswith("relay:"):
                        server.add_relay(name)
                        continue
                    await server.add_db(name)
                except OvsdbError as e:
                    text = f"{e.tag}: {e.details}" if e.details else e.tag
                    raise daemon.Fatal(text.replace(os.path.abspath(name), name)) from None
            gctune.freeze()
            problems = server.listeners.db_problems(self.config.remotes)
            if problems:
                # ovs_fatal, as the real server: stderr only (each problem ends with a
                # newline, then the message does), nothing in the log.
                server.close()
                sys.stderr.write(f"{PROGRAM}: " + "".join(f"{p}\n" for p in problems)
                                 + "\n")
                return 1
            server.sync_from, server.sync_exclude, active = self.sync
            if server.sync_from and not active:
                server.connect_active()
            for r in self.config.remotes:
                # One that cannot listen yet is logged and retried, as in the real
                # server: startup goes on. One we cannot serve at all is refused.
                try:
                    await server.listeners.add(r)
                except OvsdbError as e:
                    raise daemon.Fatal(e.details or e.tag) from None
            await self._start_unixctl(server)
            endpoint = await self._start_metrics(server)
            if self.command is not None:
                logging.getLogger("process").debug("starting subprocess: /bin/sh -c %s",
                                                   self.command)
                try:
                    proc = await asyncio.create_subprocess_exec("/bin/sh", "-c",
                                                                self.command)
                except OSError as e:
                    raise daemon.Fatal(f"{self.command}: process failed to start "
                                       f"({e.strerror})") from None
        except BaseException:
            server.close()
            raise
        loop = asyncio.get_running_loop()
        stop = loop.create_future()
        server.exiting = stop
        for sig in FATAL_SIGNALS:
            loop.add_signal_handler(sig, self._on_signal, sig, stop)
        self.daemon.complete()
        if proc is None:
            log.info("%s", VERSION_TEXT)
        else:
            self._waiter = loop.create_task(self._wait_command(proc, stop))
        memory = _MemoryReporter(server)
        try:
            await stop
        finally:
            memory.stop()
            if endpoint is not None:
                endpoint.close()
            server.close()
            if proc is not None and proc.returncode is None:
                proc.kill()
                await proc.wait()
        if self.signal is None and proc is not None and proc.returncode:
            rc = proc.returncode
            status = -rc if rc < 0 else rc << 8
            sys.stderr.write(f"{PROGRAM}: {self.command}: child exited, "
                             f"{daemon.status_message(status)}\n")
            return 1
        return int(server.exit_status)

    async def _start_metrics(self, server: Any) -> MetricsServer | None:
        if self.metrics is None:
            return None
        from ..server.metrics import ServerMetrics

        server.metrics = ServerMetrics(server)
        return await start_endpoint(server.metrics.registry, self.metrics)

    def _on_signal(self, sig: int, stop: asyncio.Future[None]) -> None:
        if self.signal is None:
            self.signal = sig
            logging.getLogger("fatal_signal").warning(
                "terminating with signal %d (%s)", sig, signal.strsignal(sig))
        if not stop.done():
            stop.set_result(None)

    async def _wait_command(self, proc: Any, stop: asyncio.Future[None]) -> None:
        await proc.wait()
        if not stop.done():
            stop.set_result(None)

    async def _start_unixctl(self, server: Any) -> None:
        path = self.unixctl
        if path == "none":
            return
        if path is None:
            path = os.path.join(daemon.rundir(), f"{PROGRAM}.{os.getpid()}.ctl")
        try:
            await server.start_unixctl(path)
        except OSError as e:
            raise daemon.Fatal(f"{path}: could not initialize control socket "
                               f"({e.strerror})") from None
        self._keep_config(server)
        uc = server.unixctl
        uc.commands["version"].handler = lambda args: VERSION_TEXT
        if "vlog/list-pattern" not in uc.commands:
            uc.register("vlog/list-pattern", "", 0, 0,
                        lambda args: vlog.current().list_patterns())

    def _keep_config(self, server: Any) -> None:
        """After each successful run-time change of remotes or databases, rewrite the
        configuration a `--monitor` restart starts from."""
        cfg = self.config

        def dbs(_args: list[str]) -> None:
            paths = []
            for name, hosted in server.dbs.items():
                storage = getattr(hosted, "storage", None)
                if not name.startswith("_") and storage is not None:
                    paths.append(storage.path)
            paths += [c.path for c in server.clusters.values()]
            known = [p for p in cfg.db_filenames if os.path.abspath(p) in paths]
            known_abs = {os.path.abspath(p) for p in known}
            cfg.set_dbs(known + [p for p in dict.fromkeys(paths) if p not in known_abs])

        hooks = {
            "ovsdb-server/add-remote": lambda args: cfg.add_remote(args[0]),
            "ovsdb-server/remove-remote": lambda args: cfg.remove_remote(args[0]),
            "ovsdb-server/add-db": dbs,
            "ovsdb-server/remove-db": dbs,
        }
        for name, after in hooks.items():
            cmd = server.unixctl.commands.get(name)
            if cmd is not None:
                cmd.handler = _then(cmd.handler, after)


def _then(handler: Any, after: Any) -> Any:
    def run(args: list[str]) -> str:
        out = handler(args)  # a CommandError leaves the configuration as it was
        after(args)
        return str(out)

    return run


class _MemoryReporter:
    """lib/memory.c's reports: the peak resident set size 10 s after start, then
    whenever it has grown by half since the last report, each followed by the
    server's memory counters."""

    INTERVAL = 10.0

    def __init__(self, server: Any) -> None:
        self.server = server
        self.last_kb = 0
        self.last_time = 0.0
        self.start = vlog.current().boot
        loop = asyncio.get_running_loop()
        delay = max(0.0, self.start + self.INTERVAL - time.time())
        self.timer: asyncio.TimerHandle | None = loop.call_later(delay, self._check)

    def _check(self) -> None:
        log_m = logging.getLogger("memory")
        now = time.time()
        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if not self.last_kb:
            log_m.info("%d kB peak resident set size after %.1f seconds", kb,
                       now - self.start)
        elif kb >= self.last_kb * 1.5:
            log_m.info("peak resident set size grew %.0f%% in last %.1f seconds, from "
                       "%d kB to %d kB", (kb - self.last_kb) * 100.0 / self.last_kb,
                       now - self.last_time, self.last_kb, kb)
        else:
            kb = 0
        if kb:
            self.last_kb, self.last_time = kb, now
            log_m.info("%s", self.server.memory_report().strip())
        self.timer = asyncio.get_running_loop().call_later(self.INTERVAL, self._check)

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
