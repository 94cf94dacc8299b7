"""What `pyovsdb server --metrics=ptcp:PORT[:IP]` exposes: what operators read today
from `ovs-appctl` (`memory/show`, `cluster/status`, `ovsdb-server/list-dbs`) and
what no command shows (transactions and their latency).

Rules kept here:
- Transactions are counted when answered (`transaction`): per database and result
  (`ok`; `error` when an operation failed; `canceled`), their latency from the request's
  arrival to the answer (a clustered database's includes its way through Raft).
- Everything else is read from the server at the scrape (`_collect`): sessions,
  monitors and the bytes waiting to be sent, each database's rows and file size, and
  for a clustered database its role, term, commit and applied index, the elections
  this member started and the snapshots it stored.
- Names start with `ovsdb_server_`; a database is the `db` label.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..raft import core as rc
from ..util.metrics import LATENCY_BUCKETS, Registry

if TYPE_CHECKING:
    from .server import Server

ROLES = (rc.FOLLOWER, rc.CANDIDATE, rc.LEADER)


class ServerMetrics:
    """The registry of one server and the hooks that feed it."""

    def __init__(self, server: Server) -> None:
        self.server = server
        r = self.registry = Registry()
        self.txns = r.counter("ovsdb_server_transactions", "Transactions answered.",
                              ("db", "result"))
        self.latency = r.histogram(
            "ovsdb_server_transaction_duration_seconds",
            "Time from a transaction's arrival to its answer.", LATENCY_BUCKETS, ("db",))
        self.sessions = r.gauge("ovsdb_server_sessions", "Client connections open.")
        self.monitors = r.gauge("ovsdb_server_monitors", "Monitors of all sessions.",
                                ("db",))
        self.backlog = r.gauge("ovsdb_server_backlog_bytes",
                               "Bytes waiting to be sent to clients.")
        self.rows = r.gauge("ovsdb_server_db_rows", "Rows of a database.", ("db",))
        self.file = r.gauge("ovsdb_server_db_file_bytes", "Size of a database's file.",
                            ("db",))
        self.compactions = r.counter("ovsdb_server_compactions",
                                     "Compactions (snapshots of a clustered database) "
                                     "since the start.", ("db",))
        self.role = r.gauge("ovsdb_server_raft_role",
                            "1 for the Raft role this member has, else 0.", ("db", "role"))
        self.term = r.gauge("ovsdb_server_raft_term", "Raft term.", ("db",))
        self.commit = r.gauge("ovsdb_server_raft_commit_index", "Raft commit index.",
                              ("db",))
        self.applied = r.gauge("ovsdb_server_raft_applied_index",
                               "Raft index applied to the database.", ("db",))
        self.elections = r.counter("ovsdb_server_raft_elections",
                                   "Elections this member started.", ("db",))
        r.collector(self._collect)

    def transaction(self, db: str, results: Any, seconds: float) -> None:
        """A transaction answered: its results (None: canceled, as when a clustered
        database closes under it), and its latency."""
        if results is None:
            result = "canceled"
        elif isinstance(results, list) and any(
                type(r) is dict and "error" in r for r in results):
            result = "error"
        else:
            result = "ok"
        self.txns.inc(1, db, result)
        self.latency.observe(seconds, db)

    def _collect(self) -> None:
        server = self.server
        sessions = [s for s in server.sessions if not s.closed]
        self.sessions.set(len(sessions))
        self.backlog.set(sum(s.backlog() for s in sessions))
        self.monitors.clear()
        by_db: dict[str, int] = {}
        for s in sessions:
            for mon in s.monitors.values():
                by_db[mon.db_name] = by_db.get(mon.db_name, 0) + 1
        for name in server.dbs:
            self.monitors.set(by_db.get(name, 0), name)
        self.rows.clear()
        self.file.clear()
        for name, hosted in server.dbs.items():
            self.rows.set(sum(len(t.rows) for t in hosted.db.tables.values()), name)
            storage = hosted.storage
            if storage is not None:
                self.file.set(storage.size, name)
                self.compactions.set_total(storage.compactions, name)
        self.role.clear()
        for name, cluster in server.clusters.items():
            core = cluster.core
            for role in ROLES:
                self.role.set(1 if core.role == role else 0, name, role)
            self.term.set(core.term, name)
            self.commit.set(core.commit_index, name)
            self.applied.set(core.last_applied, name)
            self.elections.set_total(core.elections, name)
            self.compactions.set_total(cluster.snapshots, name)
            try:
                self.file.set(os.stat(cluster.path).st_size, name)
            except OSError:
                pass
