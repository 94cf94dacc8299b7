"""The `_Server` database: one `Database` row per hosted database, itself included.

Rules kept here:
- Clients may read and monitor `_Server` but never write it; only the server changes it,
  through ordinary transactions, so monitors see ordinary updates.
- A database that is (re)added gets a fresh row (a new `_uuid`: clients use it as a
  generation number); a removed one loses its row.
- `schema` is the database's schema as compact JSON with sorted keys, as the real
  server writes it; for standalone databases `leader` and `connected` are always true
  and `cid`, `sid` and `index` are empty.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.resources import files
from typing import Any

import orjson

from ..ovsdb.changeset import Changeset, RowChange
from ..ovsdb.database import Database
from ..ovsdb.row import Row
from ..ovsdb.schema import DatabaseSchema
from ..ovsdb.transaction import Committed, Failed, execute
from ..util.uuidgen import new_uuid, sequential_uuid
from .hosted import HostedDb

SERVER_DB = "_Server"


def server_schema() -> DatabaseSchema:
    data = files("pyovsdb.schemas").joinpath("_server.ovsschema").read_bytes()
    return DatabaseSchema.from_json(orjson.loads(data), allow_reserved=True)


class ServerDatabase:
    def __init__(self, clock: Callable[[], float]) -> None:
        self.hosted = HostedDb(
            Database(server_schema(), uuids=new_uuid, versions=sequential_uuid),
            model="standalone",
            read_only_reason=f"on table in reserved database {SERVER_DB}",
            max_history=0,
            clock=clock,
        )
        self.rows: dict[str, str] = {}  # db name -> row uuid
        # db name -> (cid, sid, schema) last written for a clustered row
        self._cluster_fixed: dict[str, tuple[Any, ...]] = {}
        self.set_row(self.hosted)

    def set_row(self, hosted: HostedDb, *, fresh: bool = False,
                leader: bool = True, connected: bool = True,
                extra: dict[str, Any] | None = None) -> None:
        """Create or update the row of `hosted`; `fresh` replaces it with a new row."""
        schema = hosted.db.schema
        row: dict[str, Any] = {
            "name": hosted.name,
            "model": hosted.model,
            "connected": connected,
            "leader": leader,
            "schema": orjson.dumps(schema.json or schema.to_json(),
                                   option=orjson.OPT_SORT_KEYS).decode(),
        }
        if extra:
            row.update(extra)
        uuid = self.rows.get(hosted.name)
        if uuid is not None and fresh:
            self.remove_row(hosted.name)
            uuid = None
        if uuid is None:
            res = self._txn([{"op": "insert", "table": "Database", "row": row}])
            self.rows[hosted.name] = res[0]["uuid"][1]
        else:
            self._txn([{"op": "update", "table": "Database",
                        "where": [["_uuid", "==", ["uuid", uuid]]], "row": row}])

    def set_cluster_row(self, cluster: Any, *, connected: bool, leader: bool) -> None:
        """The row of a clustered database: `schema` stays empty until the member has
        joined and loaded a snapshot; `index` is the last entry applied here.

        `index` changes with every entry applied, so the common case (only `index`,
        `connected` or `leader` changed) builds the new row directly instead of
        running a transaction; monitors still see an ordinary modification."""
        hosted = cluster.hosted
        core = cluster.core
        uuid = self.rows.get(cluster.name)
        fixed = (core.cid, core.sid, hosted.db.schema if hosted is not None else None)
        index = (cluster.applied_index,) if hosted is not None else ()
        if uuid is not None and self._cluster_fixed.get(cluster.name) == fixed:
            sdb = self.hosted.db
            old = sdb.tables["Database"].rows.get(uuid)
            if old is not None:
                data = dict(old.data)
                data["connected"], data["leader"], data["index"] = connected, leader, index
                if data != old.data:
                    new = Row(uuid, data, sdb.new_version())
                    cs = Changeset({"Database": {uuid: RowChange(uuid, old, new)}})
                    self.hosted.commit(cs)
                return
        self._cluster_fixed[cluster.name] = fixed
        row: dict[str, Any] = {
            "name": cluster.name,
            "model": "clustered",
            "connected": connected,
            "leader": leader,
            "cid": ["set", [["uuid", core.cid]]] if core.cid else ["set", []],
            "sid": ["uuid", core.sid],
            "index": cluster.applied_index if hosted is not None else ["set", []],
        }
        if hosted is not None:
            schema = hosted.db.schema
            row["schema"] = orjson.dumps(schema.json or schema.to_json(),
                                         option=orjson.OPT_SORT_KEYS).decode()
        else:
            row["schema"] = ["set", []]
        if uuid is None:
            res = self._txn([{"op": "insert", "table": "Database", "row": row}])
            self.rows[cluster.name] = res[0]["uuid"][1]
        else:
            self._txn([{"op": "update", "table": "Database",
                        "where": [["_uuid", "==", ["uuid", uuid]]], "row": row}])

    def remove_row(self, name: str) -> None:
        self._cluster_fixed.pop(name, None)
        uuid = self.rows.pop(name, None)
        if uuid is not None:
            self._txn([{"op": "delete", "table": "Database",
                        "where": [["_uuid", "==", ["uuid", uuid]]]}])

    def _txn(self, ops: list[Any]) -> list[Any]:
        outcome = execute(self.hosted.db, ops)
        if not isinstance(outcome, Committed):
            why = outcome.results if isinstance(outcome, Failed) else "a wait blocked"
            raise RuntimeError(f"_Server update failed: {why}")
        if outcome.changeset:
            self.hosted.commit(outcome.changeset)
        return outcome.results
