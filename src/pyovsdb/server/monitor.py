"""Monitors: a client's standing query on tables, turned into update notifications.

Rules kept here:
- Three wire versions share one model: `monitor` (update, RFC 7047 "old"/"new" rows),
  `monitor_cond` (update2: "initial"/"insert"/"modify"/"delete"), and
  `monitor_cond_since` (update3: update2 plus the id of the transaction).
- A row change is seen through the monitor's condition: a row that starts matching is an
  insert, one that stops matching a delete, one that matches before and after a modify,
  and the rest is invisible. A modify is sent only if a monitored column changed.
- update2 "initial"/"insert" rows leave out default values; "modify" carries per-column
  diffs (`datum.Codec.diff`); "delete" is null.
- Rendering is shared: per-row JSON for a column set is cached on the immutable Row, and
  the rendering of a change is cached per changeset, so N monitors with the same columns
  cost one rendering, not N.
- This module knows nothing about sessions or sockets; it returns JSON values.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..ovsdb.changeset import Changeset, RowChange
from ..ovsdb.condition import Condition, parse_where
from ..ovsdb.database import Database
from ..ovsdb.errors import OvsdbError, syntax_error
from ..ovsdb.row import Row
from ..ovsdb.schema import DatabaseSchema, TableSchema

V1, V2, V3 = 1, 2, 3
_SELECT_KEYS = ("initial", "insert", "delete", "modify")


class MonitorTable:
    """What one monitor watches in one table."""

    __slots__ = (
        "codecs",
        "columns",
        "condition",
        "delete",
        "initial",
        "insert",
        "modify",
        "name",
        "schema",
    )

    def __init__(
        self,
        ts: TableSchema,
        columns: tuple[str, ...],
        select: tuple[bool, bool, bool, bool],
        condition: Condition | None,
    ) -> None:
        self.schema = ts
        self.name = ts.name
        self.columns = columns
        self.codecs = tuple((c, ts.all_columns[c].type.codec) for c in columns)
        self.initial, self.insert, self.delete, self.modify = select
        self.condition = condition

    def matches(self, row: Row) -> bool:
        cond = self.condition
        return cond is None or cond.matches(row)

    # -- row rendering (cached on the row) ---------------------------------------------

    def row_v2(self, row: Row) -> dict[str, Any]:
        """Non-default monitored columns of `row` (update2 "initial"/"insert")."""
        return _cached(row, (self.columns, 2), lambda: {
            c: codec.to_json(v)
            for c, codec in self.codecs
            if (v := row.get(c)) != codec.default or c == "_uuid"
        })

    def row_v1(self, row: Row) -> dict[str, Any]:
        """All monitored columns of `row` (update "new"/"old")."""
        return _cached(row, (self.columns, 1), lambda: {
            c: codec.to_json(row.get(c)) for c, codec in self.codecs
        })

    def changed(self, ch: RowChange, shared: dict[Any, Any]) -> list[str]:
        """Monitored columns that differ between ch.old and ch.new."""
        key = (id(ch), self.columns, "changed")
        hit = shared.get(key)
        if hit is None:
            o, n = ch.old.data, ch.new.data  # type: ignore[union-attr]
            hit = [c for c in self.columns if c in o and o[c] != n[c]]
            if "_version" in self.columns:
                hit.append("_version")
            shared[key] = hit
        return hit

    def modify_v2(self, ch: RowChange, shared: dict[Any, Any]) -> dict[str, Any] | None:
        key = (id(ch), self.columns, 2)
        if key in shared:
            return shared[key]
        changed = self.changed(ch, shared)
        if not changed:
            shared[key] = None
            return None
        o, n = ch.old, ch.new
        assert o is not None and n is not None
        all_cols = self.schema.all_columns
        out: dict[str, Any] = {}
        for c in changed:
            codec = all_cols[c].type.codec
            out[c] = codec.to_json(codec.diff(o.get(c), n.get(c)))
        shared[key] = out
        return out

    def modify_v1(self, ch: RowChange, shared: dict[Any, Any]) -> dict[str, Any] | None:
        key = (id(ch), self.columns, 1)
        if key in shared:
            return shared[key]
        changed = self.changed(ch, shared)
        if not changed:
            shared[key] = None
            return None
        o, n = ch.old, ch.new
        assert o is not None and n is not None
        all_cols = self.schema.all_columns
        old = {c: all_cols[c].type.codec.to_json(o.get(c)) for c in changed}
        out = {"old": old, "new": self.row_v1(n)}
        shared[key] = out
        return out


def _cached(row: Row, key: Any, render: Any) -> dict[str, Any]:
    """The rendering of `row` under `key`, made once: rows never change."""
    cache = row.cache
    if cache is None:
        cache = row.cache = {}
    else:
        hit = cache.get(key)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
    out = cache[key] = render()
    return out  # type: ignore[no-any-return]


def parse_monitor_requests(
    schema: DatabaseSchema, json: Any, version: int
) -> dict[str, MonitorTable]:
    """Parse `<monitor-requests>` / `<monitor-cond-requests>` with the real server's
    error wording."""
    if type(json) is not dict:
        raise syntax_error(json, "monitor-requests must be object")
    tables: dict[str, MonitorTable] = {}
    for tname, reqs in json.items():
        ts = schema.tables.get(tname)
        if ts is None:
            raise OvsdbError("syntax error", f"no table named {tname}")
        if type(reqs) is not list:
            reqs = [reqs]
        columns: list[str] = []
        select = [False, False, False, False]
        condition: Condition | None = None
        for req in reqs:
            cols, cols_json, sel, cond = _parse_request(ts, req, version)
            for c in cols:
                if c in columns:
                    raise syntax_error(cols_json, f"column {c} mentioned more than once")
                columns.append(c)
            select = [a or b for a, b in zip(select, sel, strict=True)]
            if cond is not None:
                condition = cond
        tables[tname] = MonitorTable(ts, tuple(columns), tuple(select), condition)  # type: ignore[arg-type]
    return tables


def _parse_request(
    ts: TableSchema, req: Any, version: int
) -> tuple[list[str], Any, tuple[bool, bool, bool, bool], Condition | None]:
    where = f"Parsing table {ts.name} failed: "
    if type(req) is not dict:
        raise syntax_error(req, f"{where}Object expected.")
    allowed = ("columns", "select", "where") if version >= V2 else ("columns", "select")
    cols_json = req.get("columns")
    if cols_json is not None and type(cols_json) is not list:
        raise syntax_error(req, f"{where}Type mismatch for member 'columns'.")
    sel_json = req.get("select")
    if sel_json is not None and type(sel_json) is not dict:
        raise syntax_error(req, f"{where}Type mismatch for member 'select'.")
    where_json = req.get("where") if version >= V2 else None
    if where_json is not None and type(where_json) is not list:
        raise syntax_error(req, f"{where}Type mismatch for member 'where'.")
    for key in req:
        if key not in allowed:
            raise syntax_error(req, f"{where}Member '{key}' is present but not allowed here.")
    if cols_json is None:
        cols = default_columns(ts)
    else:
        cols = []
        for c in cols_json:
            if type(c) is not str:
                raise syntax_error(cols_json, "array of column names expected")
            if c not in ts.all_columns:
                raise syntax_error(cols_json, f"{c} is not a valid column name")
            if c in cols:
                raise syntax_error(cols_json, f"column {c} mentioned more than once")
            cols.append(c)
    select = (True, True, True, True)
    if sel_json is not None:
        swhere = f"Parsing table {ts.name} select failed: "
        vals = []
        for key in _SELECT_KEYS:
            v = sel_json.get(key, True)
            if type(v) is not bool:
                raise syntax_error(sel_json, f"{swhere}Type mismatch for member '{key}'.")
            vals.append(v)
        for key in sel_json:
            if key not in _SELECT_KEYS:
                raise syntax_error(sel_json,
                                   f"{swhere}Member '{key}' is present but not allowed here.")
        select = tuple(vals)  # type: ignore[assignment]
    cond = None
    if where_json is not None:
        cond = parse_where(ts, where_json)
        if cond.is_true:
            cond = None
    return cols, cols_json, select, cond


def default_columns(ts: TableSchema) -> list[str]:
    """All columns and `_version`, but not `_uuid` (the row's key), as the real server."""
    return [*ts.columns, "_version"]


class Monitor:
    """One monitor of one session on one database."""

    __slots__ = ("db_name", "id", "sink", "tables", "version")

    def __init__(
        self, mon_id: Any, db_name: str, version: int, tables: dict[str, MonitorTable], sink: Any
    ) -> None:
        self.id = mon_id
        self.db_name = db_name
        self.version = version
        self.tables = tables
        self.sink = sink  # receives (monitor, txn_id, updates) notifications

    # -- initial contents ---------------------------------------------------------------

    def initial(self, db: Database) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for tname, mt in self.tables.items():
            if not mt.initial:
                continue
            rows = self.rows_for(db, mt, db.tables[tname].rows.values())
            if rows:
                out[tname] = rows
        return out

    def rows_for(self, db: Database, mt: MonitorTable, rows: Iterable[Row]) -> dict[str, Any]:
        cond = mt.condition
        out: dict[str, Any] = {}
        if self.version == V1:
            for row in rows:
                if cond is None or cond.matches(row):
                    out[row.uuid] = {"new": mt.row_v1(row)}
        else:
            for row in rows:
                if cond is None or cond.matches(row):
                    out[row.uuid] = {"initial": mt.row_v2(row)}
        return out

    # -- changes ---------------------------------------------------------------------

    def updates(self, cs: Changeset, shared: dict[Any, Any]) -> dict[str, Any] | None:
        """The table-updates this monitor sends for `cs`, or None if nothing."""
        out: dict[str, Any] = {}
        v1 = self.version == V1
        for tname, changes in cs.tables.items():
            mt = self.tables.get(tname)
            if mt is None:
                continue
            cond = mt.condition
            rows: dict[str, Any] = {}
            for uuid, ch in changes.items():
                old, new = ch.old, ch.new
                if cond is not None:
                    om = old is not None and cond.matches(old)
                    nm = new is not None and cond.matches(new)
                    if not om:
                        old = None
                    if not nm:
                        new = None
                if old is None:
                    if new is None or not mt.insert:
                        continue
                    rows[uuid] = {"new": mt.row_v1(new)} if v1 else {"insert": mt.row_v2(new)}
                elif new is None:
                    if not mt.delete:
                        continue
                    rows[uuid] = {"old": mt.row_v1(old)} if v1 else {"delete": None}
                else:
                    if not mt.modify:
                        continue
                    if old is not ch.old or new is not ch.new:
                        ch = RowChange(uuid, old, new)
                    if v1:
                        r = mt.modify_v1(ch, shared)
                        if r is not None:
                            rows[uuid] = r
                    else:
                        r2 = mt.modify_v2(ch, shared)
                        if r2 is not None:
                            rows[uuid] = {"modify": r2}
            if rows:
                out[tname] = rows
        return out or None

    def change_condition(
        self, db: Database, json: Any
    ) -> dict[str, Any] | None:
        """Apply `monitor_cond_change` conditions; return the updates that bring the
        client from the old condition's rows to the new one's."""
        if type(json) is not dict:
            raise syntax_error(json, "monitor-cond-change-requests must be object")
        new_conds: dict[str, Condition | None] = {}
        for tname, reqs in json.items():
            mt = self.tables.get(tname)
            if mt is None:
                raise OvsdbError("syntax error", f"no table named {tname}")
            if type(reqs) is not list:
                reqs = [reqs]
            cond: Condition | None = None
            for req in reqs:
                if type(req) is not dict:
                    raise syntax_error(req, f"Parsing table {tname} failed: Object expected.")
                if "columns" in req:
                    raise syntax_error(req, "changing columns is unsupported")
                if "where" in req:
                    cond = parse_where(mt.schema, req["where"])
                    if cond.is_true:
                        cond = None
            new_conds[tname] = cond
        out: dict[str, Any] = {}
        v1 = self.version == V1
        for tname, cond in new_conds.items():
            mt = self.tables[tname]
            old_cond = mt.condition
            mt.condition = cond
            rows: dict[str, Any] = {}
            for row in db.tables[tname].rows.values():
                was = old_cond is None or old_cond.matches(row)
                now = cond is None or cond.matches(row)
                if was == now:
                    continue
                if now:
                    rows[row.uuid] = {"new": mt.row_v1(row)} if v1 else {"insert": mt.row_v2(row)}
                else:
                    rows[row.uuid] = {"old": mt.row_v1(row)} if v1 else {"delete": None}
            if rows:
                out[tname] = rows
        return out or None


def merge_changesets(changesets: Iterable[Changeset]) -> Changeset:
    """Compose consecutive changesets into one (first old, last new per row)."""
    merged: dict[str, dict[str, RowChange]] = {}
    for cs in changesets:
        for tname, changes in cs.tables.items():
            t = merged.setdefault(tname, {})
            for uuid, ch in changes.items():
                prev = t.get(uuid)
                if prev is None:
                    t[uuid] = ch
                else:
                    t[uuid] = RowChange(uuid, prev.old, ch.new)
    for tname in list(merged):
        t = merged[tname]
        for uuid in [u for u, ch in t.items() if ch.old is None and ch.new is None]:
            del t[uuid]
        if not t:
            del merged[tname]
    return Changeset(merged)
