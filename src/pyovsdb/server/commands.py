"""The `ovs-appctl` commands of the OVSDB server, with the real server's names, argument
counts, output and error texts.

Rules kept here:
- Each command only translates between text and the server's methods; the behaviour
  lives in `server.Server`, `cluster.ClusteredDb` and `failure_test`.
- Errors are the real server's: `add-db` names the file as given (`ovsdb error:
  db2.db: already open`, `ovsdb error: NAME: duplicate database name`); `compact` of a
  clustered database is a Raft snapshot on any member, leader included, and reports
  the real server's Raft errors (`ovsdb error: not storing a duplicate snapshot`).
- `reconnect` and `disable-monitor-cond` drop every client connection and log each as
  the real server does (module ovsdb_jsonrpc_server); after `disable-monitor-cond`,
  `monitor_cond` and `monitor_cond_since` are unknown methods for the rest of the
  process, so clients fall back to `monitor`.
- `memory-trim-on-compaction` (on by default, as in the real server) returns freed
  memory to the system after each compaction, on request or automatic (glibc's
  malloc_trim; without it, the real reply "memory trimming is not supported").
- The `cluster/*` commands exist once a clustered database has been opened, as in the
  real server.
- There is no `time/warp` or `time/stop`: the real server has them only in test builds
  with dummy devices.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..ovsdb.errors import OvsdbError
from ..util import memtrim
from .appctl import CommandError, UnixctlServer, register_vlog
from .replication import excluded_text, parse_excluded
from .server_db import SERVER_DB

if TYPE_CHECKING:
    from .server import Server

log = logging.getLogger("ovsdb_server")
jsonrpc_log = logging.getLogger("ovsdb_jsonrpc_server")


def register(server: Server, path: str) -> UnixctlServer:
    uc = UnixctlServer(path, f"ovsdb-server (pyovsdb) {__version__}")
    commands = _Commands(server)
    uc.register("exit", "", 0, 0, commands.exit)
    uc.register("memory/show", "", 0, 0, commands.memory)
    uc.register("ovsdb-server/compact", "", 0, 1, commands.compact)
    uc.register("ovsdb-server/memory-trim-on-compaction", "on|off", 1, 1,
                commands.memory_trim_on_compaction)
    uc.register("ovsdb-server/list-dbs", "", 0, 0, commands.list_dbs)
    uc.register("ovsdb-server/add-db", "DB", 1, 1, commands.add_db)
    uc.register("ovsdb-server/remove-db", "DB", 1, 1, commands.remove_db)
    uc.register("ovsdb-server/add-remote", "REMOTE", 1, 1, commands.add_remote)
    uc.register("ovsdb-server/set-active-ovsdb-server", "", 1, 1, commands.set_active)
    uc.register("ovsdb-server/get-active-ovsdb-server", "", 0, 0,
                lambda args: server.sync_from or "")
    uc.register("ovsdb-server/connect-active-ovsdb-server", "", 0, 0,
                lambda args: server.connect_active() or "")
    uc.register("ovsdb-server/disconnect-active-ovsdb-server", "", 0, 0,
                commands.disconnect_active)
    uc.register("ovsdb-server/set-active-ovsdb-server-probe-interval", "", 1, 1,
                commands.set_probe_interval)
    uc.register("ovsdb-server/set-sync-exclude-tables", "", 1, 1, commands.set_exclude)
    uc.register("ovsdb-server/get-sync-exclude-tables", "", 0, 0,
                lambda args: excluded_text(parse_excluded(server.sync_exclude)))
    uc.register("ovsdb-server/sync-status", "", 0, 0, lambda args: server.sync_status())
    uc.register("ovsdb-server/remove-remote", "REMOTE", 1, 1, commands.remove_remote)
    uc.register("ovsdb-server/list-remotes", "", 0, 0, commands.list_remotes)
    uc.register("ovsdb-server/reconnect", "", 0, 0, commands.reconnect)
    uc.register("ovsdb-server/disable-monitor-cond", "", 0, 0,
                commands.disable_monitor_cond)
    uc.register("ovsdb-server/get-db-storage-status", "DB", 1, 1, commands.storage_status)
    uc.extensions["commands"] = commands
    if server.clusters:
        _register_cluster(uc, commands)
    register_vlog(uc)
    return uc


def cluster_opened(server: Server) -> None:
    """A clustered database is open: the `cluster/*` commands exist from now on, as in
    the real server (its Raft module registers them when it opens its first file)."""
    uc = server.unixctl
    if uc is not None and "cluster/status" not in uc.commands:
        _register_cluster(uc, uc.extensions["commands"])


def _register_cluster(uc: UnixctlServer, commands: _Commands) -> None:
    uc.register("cluster/cid", "DB", 1, 1, commands.cluster_cid)
    uc.register("cluster/sid", "DB", 1, 1, commands.cluster_sid)
    uc.register("cluster/status", "DB", 1, 1, commands.cluster_status)
    uc.register("cluster/leave", "DB", 1, 1, commands.cluster_leave)
    uc.register("cluster/kick", "DB SERVER", 2, 2, commands.cluster_kick)
    uc.register("cluster/failure-test", "FAILURE SCENARIO", 1, 1, commands.failure_test)
    uc.register("cluster/change-election-timer", "DB TIME", 2, 2,
                commands.cluster_change_election_timer)


class _Commands:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.trim_logged = False

    def memory_trim_on_compaction(self, args: list[str]) -> str:
        if not memtrim.supported():
            raise CommandError("memory trimming is not supported")
        if args[0] not in ("on", "off"):
            raise CommandError("invalid argument")
        server = self.server
        old, server.trim_memory = server.trim_memory, args[0] == "on"
        if not self.trim_logged or old != server.trim_memory:
            self.trim_logged = True
            log.info("memory trimming after compaction %s.",
                     "enabled" if server.trim_memory else "disabled")
        return ""

    def exit(self, args: list[str]) -> str:
        self.server.request_exit(0)
        return ""

    def memory(self, args: list[str]) -> str:
        return self.server.memory_report()

    def list_dbs(self, args: list[str]) -> str:
        return "".join(f"{n}\n" for n in sorted(self.server.db_names()))

    def compact(self, args: list[str]) -> str:
        server = self.server
        if args:
            if args[0].startswith("_"):
                raise CommandError("cannot compact built-in databases")
            hosted = server.dbs.get(args[0])
            if hosted is None:
                raise CommandError("no database by that name")
            targets = [hosted]
        else:
            targets = [h for n, h in server.dbs.items() if not n.startswith("_")]
        errors = []
        for hosted in targets:
            log.info("compacting %s database by user request", hosted.name)
            if hosted.cluster is not None:
                # A Raft snapshot, leader or follower; the reply names the problem in
                # the real server's words ("ovsdb error: not storing a duplicate
                # snapshot").
                problem = hosted.cluster.compact()
                if problem:
                    errors.append(problem)
                else:
                    server.after_compaction()
                continue
            try:
                server.compact(hosted)
            except OvsdbError as e:
                errors.append(str(e))
            except OSError as e:
                errors.append(f"I/O error: {e.filename or hosted.name}: compaction failed "
                              f"({e.strerror})")
        if errors:
            raise CommandError("\n".join(errors))
        return ""

    def add_db(self, args: list[str]) -> str:
        """Standalone or clustered, errors naming the file as given (`ovsdb error:
        db2: already open`, `ovsdb error: NAME: duplicate database name`)."""
        try:
            c = self.server.open_db(args[0])
        except OvsdbError as e:
            raise CommandError(str(e)) from None
        if c is not None:
            task = asyncio.get_running_loop().create_task(c.start())
            task.add_done_callback(_log_task_error)
        return ""

    def remove_db(self, args: list[str]) -> str:
        name = args[0]
        if name == SERVER_DB:
            raise CommandError("Cannot remove reserved database.")
        if name not in self.server.dbs:
            raise CommandError("Failed to find the database.")
        self.server.remove_db(name, "removing {} database by user request")
        return ""

    def storage_status(self, args: list[str]) -> str:
        if args[0] not in self.server.dbs:
            raise CommandError("Failed to find the database.")
        return "status: ok\n"

    def add_remote(self, args: list[str]) -> str:
        self.server.listeners.check(args[0])
        task = asyncio.get_running_loop().create_task(self.server.listeners.add(args[0]))
        task.add_done_callback(_log_task_error)
        return ""

    # -- active-backup replication (server.replication) --------------------------------

    def set_active(self, args: list[str]) -> str:
        self.server.sync_from = args[0]
        return ""

    def disconnect_active(self, args: list[str]) -> str:
        self.server.disconnect_active()
        return ""

    def set_probe_interval(self, args: list[str]) -> str:
        try:
            ms = int(args[0], 10)
        except ValueError:
            return "Invalid probe interval, integer value expected"
        self.server.replication_probe_ms = ms
        if self.server.backup and self.server.replication is not None:
            self.server.replication.set_probe_interval(ms)
        return ""

    def set_exclude(self, args: list[str]) -> str:
        try:
            parse_excluded(args[0])
        except ValueError as e:
            return str(e)
        self.server.sync_exclude = args[0]
        if self.server.backup:
            self.server.connect_active()  # (replication started again without them)
        return ""

    def remove_remote(self, args: list[str]) -> str:
        self.server.listeners.remove(args[0])
        return ""

    def list_remotes(self, args: list[str]) -> str:
        return "".join(f"{r}\n" for r in self.server.listeners.names())

    def reconnect(self, args: list[str]) -> str:
        self._reconnect_all("user ran ovsdb-server/reconnect")
        return ""

    def _reconnect_all(self, why: str) -> None:
        """Every client connection is dropped (db-change-aware or not), each logged as
        the real server logs it."""
        for s in list(self.server.sessions):
            if not s.closed:
                jsonrpc_log.info("%s: disconnecting (%s)", s.name, why)
            s.close()

    def disable_monitor_cond(self, args: list[str]) -> str:
        """From now on `monitor_cond` and `monitor_cond_since` are unknown methods, so
        clients fall back to `monitor`; every client is reconnected to notice. As in
        the real server this holds for the rest of the process's life."""
        from . import methods

        for name in ("monitor_cond", "monitor_cond_since"):
            methods.HANDLERS.pop(name, None)
        self._reconnect_all("user ran ovsdb-server/disable-monitor-cond")
        return ""

    def _cluster(self, name: str) -> Any:
        c = self.server.clusters.get(name)
        if c is None or c.closed:
            raise CommandError("unknown cluster")
        return c

    def cluster_cid(self, args: list[str]) -> str:
        c = self._cluster(args[0])
        if c.core.cid is None:
            raise CommandError("cluster id not yet known")
        return c.core.cid + "\n"

    def cluster_sid(self, args: list[str]) -> str:
        return self._cluster(args[0]).core.sid + "\n"

    def cluster_status(self, args: list[str]) -> str:
        return self._cluster(args[0]).status_text()

    def cluster_leave(self, args: list[str]) -> str:
        return self._leave(self._cluster(args[0]))

    @staticmethod
    def _leave(c: Any) -> str:
        core = c.core
        if core.leaving:
            raise CommandError("already in progress leaving cluster")
        if core.joining:
            raise CommandError("can't leave while join in progress")
        if core.failed:
            raise CommandError("can't leave after failure")
        core.leave()
        c.process()
        return ""

    def cluster_kick(self, args: list[str]) -> str:
        """The server named by address (best) or by a prefix of its id, as the real
        `raft_lookup_server_best_match` picks it; unlike it, a name that matches
        nobody never picks the only server."""
        from ..raft.core import RaftError

        c = self._cluster(args[0])
        core = c.core
        target = args[1]
        best: list[str] = []
        best_score = 0
        for sid, s in core.servers.items():
            score = (1 << 31 if s.address == target
                     else len(target) if target and sid.startswith(target.lower()) else 0)
            if score > best_score:
                best, best_score = [sid], score
            elif score == best_score and score:
                best.append(sid)
        if len(best) != 1:
            raise CommandError("unknown server")
        sid = best[0]
        if sid == core.sid:
            return self._leave(c)
        if core.is_leader:
            core.kick(sid)
            c.process()
            return "started removal\n"
        if core.leader_sid is None or core.leader_sid not in c.net.connected_peers():
            raise CommandError("failed to send removal request")
        try:
            core.kick(sid)
        except RaftError:
            raise CommandError("failed to send removal request") from None
        c.process()
        return "sent removal request to leader\n"

    def failure_test(self, args: list[str]) -> str:
        from . import failure_test

        try:
            return failure_test.engage(args[0])
        except ValueError as e:
            raise CommandError(str(e)) from None

    def cluster_change_election_timer(self, args: list[str]) -> str:
        from ..raft.core import RaftError

        c = self._cluster(args[0])
        try:
            ms = int(args[1])
        except ValueError:
            raise CommandError("election timer must be between 100 and 600000, in msec."
                               ) from None
        try:
            text = c.core.change_election_timer(ms)
        except RaftError as e:
            raise CommandError(str(e)) from None
        c.process()
        return text



def _log_task_error(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("%s", task.exception())
