"""Monitors: a client's standing query on tables, turned into update notifications.

Rules kept here:
- Three wire versions share one model: `monitor` (update, RFC 7047 "old"/"new" rows),
  `monitor_cond` (update2: "initial"/"insert"/"modify"/"delete"), and
  `monitor_cond_since` (update3: update2 plus the id of the transaction).
- A row change is seen through the monitor's condition: a row that starts matching is an
  insert, one that stops matching a delete, one that matches before and after a modify,
  and the rest is invisible. A modify is sent only if a tracked column changed (a
  monitored one, or one the condition reads: then the modify may be empty, as the real
  server sends it).
- `select` flags belong to columns (those of the request that named them); a row
  carries the columns that select the change's kind (see `MonitorTable`).
- update2 "initial"/"insert" rows leave out default values; "modify" carries per-column
  diffs (`datum.Codec.diff`); "delete" is null.
- Requests are validated as the real server does, in its order, and where it iterates a
  JSON object (tables, members) the first error is the one it meets first in its hash
  order (`ovsdb.hashorder`). Of several requests on one table with a `where`, the
  condition kept is the one the real server's table lookup finds.
- `monitor_cond_change` replaces the condition (the last request of a table's array
  wins); on a `monitor` (v1) it is accepted unparsed and has no effect, as on the real
  server. As there, a table's condition is two: the one the client last saw the rows of
  (`old_condition`) and the one it asked for last (`condition`). A change sets the new
  one table by table, in the real server's hash order, and only once every table is
  set sends the rows that enter or leave and makes the old one the new. A change that
  fails part way keeps the new conditions of the tables set before the error, sends
  nothing for them, and from then on a row change is seen with the old condition on
  its old row and the new one on its new row, until the next change that succeeds.
- The columns a condition reads stay tracked for the monitor's life, also once the
  condition no longer reads them (the real server adds them to its monitor and never
  removes them): a change in one of them is a modify, empty if none is monitored.
- Rendering is shared: per-row JSON for a column set is cached on the immutable Row; the
  rendering of a change is cached in the caller's `shared` dict by the identities of
  its old and new rows, and a table's row updates by the identity of the changeset's
  table, what the table monitor watches and which rows its conditions select, so N
  monitors alike cost one rendering, not N, and get the same dict (which the session
  encodes once). The caller keeps the changesets alive while the dict lives (the
  identities are not reused meanwhile).
- A monitor whose session cannot write (its client is not reading) holds its changes
  back instead, merged per row (`hold`), and its session renders them once, as one
  update, when it can write again: what is held grows with the rows that changed, not
  with the transactions.
- This module knows nothing about sessions or sockets; it returns JSON values.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..ovsdb.changeset import Changeset, RowChange, merge_into
from ..ovsdb.condition import MonitorCondition, parse_monitor_where
from ..ovsdb.database import Database
from ..ovsdb.errors import OvsdbError, syntax_error
from ..ovsdb.hashorder import shash_find_index, shash_order
from ..ovsdb.row import Row
from ..ovsdb.schema import DatabaseSchema, TableSchema

V1, V2, V3 = 1, 2, 3
_SELECT_KEYS = ("initial", "insert", "delete", "modify")


_INITIAL, _INSERT, _DELETE, _MODIFY = range(4)


class MonitorTable:
    """What one monitor watches in one table.

    Each column has its own `select` flags (those of the request that named it); the
    table's are the union of its requests' flags, even of a request with no columns. A
    change kind is reported for the table if the table selects it, and the row then
    carries only the columns that select it, as the real server does (so a row may carry
    no column at all). A modify is reported when any tracked column changed: the
    monitored ones, and those the condition reads.
    """

    __slots__ = (
        "_render_key",
        "by_kind",
        "columns",
        "condition",
        "delete",
        "initial",
        "insert",
        "modify",
        "name",
        "old_condition",
        "schema",
        "tracked",
    )

    def __init__(
        self,
        ts: TableSchema,
        columns: tuple[str, ...],
        selects: tuple[tuple[bool, bool, bool, bool], ...],
        condition: MonitorCondition | None,
        table_select: tuple[bool, bool, bool, bool] | None = None,
        reads: Iterable[str] = (),
    ) -> None:
        self._render_key: _RenderKey | None = None
        self.schema = ts
        self.name = ts.name
        self.columns = columns
        all_cols = ts.all_columns
        # Per change kind: the (column, codec) pairs that select it.
        self.by_kind = tuple(
            tuple((c, all_cols[c].type.codec) for c, sel in zip(columns, selects, strict=True)
                  if sel[k])
            for k in range(4)
        )
        if table_select is None:  # the union of the columns' flags
            table_select = tuple(any(sel[k] for sel in selects) for k in range(4))  # type: ignore[assignment]
        assert table_select is not None
        self.initial, self.insert, self.delete, self.modify = table_select
        self.tracked = columns
        self._track(reads)
        self.propose(condition)
        self.old_condition = self.condition

    def propose(self, condition: MonitorCondition | None) -> None:
        """Make `condition` the new one (seen on new rows) and track the columns it
        reads, also if it selects every row (then it is kept as None)."""
        if condition is not None:
            self._track(_reads(condition))
            if condition.is_true:
                condition = None
        self.condition = condition

    def _track(self, columns: Iterable[str]) -> None:
        extra = [c for c in columns if c not in self.tracked]
        if extra:
            self.tracked = self.tracked + tuple(dict.fromkeys(extra))

    def render_key(self) -> _RenderKey:
        """What a change's rendering depends on here, besides the condition: the
        columns per change kind, the tracked ones, the kinds selected (hashed once)."""
        key = self._render_key
        if key is None or key.tracked is not self.tracked:
            key = self._render_key = _RenderKey(
                (self.by_kind, self.tracked, self.insert, self.delete, self.modify),
                self.tracked)
        return key

    def matches(self, row: Row) -> bool:
        cond = self.condition
        return cond is None or cond.matches(row)

    # -- row rendering (cached on the row) ---------------------------------------------

    def row_v2(self, row: Row, kind: int = _INITIAL) -> dict[str, Any]:
        """Non-default columns of `row` that select `kind` (update2 "initial"/"insert")."""
        codecs = self.by_kind[kind]
        return _cached(row, (codecs, 2), lambda: {
            c: codec.to_json(v)
            for c, codec in codecs
            if (v := row.get(c)) != codec.default or c == "_uuid"
        })

    def row_v1(self, row: Row, kind: int = _INITIAL) -> dict[str, Any]:
        """Columns of `row` that select `kind` (update "new"/"old")."""
        codecs = self.by_kind[kind]
        return _cached(row, (codecs, 1), lambda: {
            c: codec.to_json(row.get(c)) for c, codec in codecs
        })

    def changed(self, ch: RowChange, shared: dict[Any, Any]) -> list[str]:
        """Tracked columns that differ between ch.old and ch.new."""
        key = (id(ch.old), id(ch.new), self.tracked, "changed")
        hit = shared.get(key)
        if hit is None:
            o, n = ch.old.data, ch.new.data  # type: ignore[union-attr]
            hit = [c for c in self.tracked if c in o and o[c] != n[c]]
            if "_version" in self.tracked:
                hit.append("_version")
            shared[key] = hit
        return hit

    def modify_v2(self, ch: RowChange, shared: dict[Any, Any]) -> dict[str, Any] | None:
        codecs = self.by_kind[_MODIFY]
        key = (id(ch.old), id(ch.new), self.tracked, codecs, 2)
        if key in shared:
            return shared[key]
        changed = self.changed(ch, shared)
        if not changed:
            shared[key] = None
            return None
        o, n = ch.old, ch.new
        assert o is not None and n is not None
        out: dict[str, Any] = {}
        for c, codec in codecs:
            if c in changed:
                out[c] = codec.to_json(codec.diff(o.get(c), n.get(c)))
        shared[key] = out
        return out

    def modify_v1(self, ch: RowChange, shared: dict[Any, Any]) -> dict[str, Any] | None:
        codecs = self.by_kind[_MODIFY]
        key = (id(ch.old), id(ch.new), self.tracked, codecs, 1)
        if key in shared:
            return shared[key]
        changed = self.changed(ch, shared)
        if not changed:
            shared[key] = None
            return None
        o, n = ch.old, ch.new
        assert o is not None and n is not None
        old = {c: codec.to_json(o.get(c)) for c, codec in codecs if c in changed}
        out = {"old": old, "new": self.row_v1(n, _MODIFY)}
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
            return hit
    out = cache[key] = render()
    return out


def parse_monitor_requests(
    schema: DatabaseSchema, json: Any, version: int
) -> dict[str, MonitorTable]:
    """Parse `<monitor-requests>` / `<monitor-cond-requests>` (an object, checked by the
    caller) with the real server's error wording and choices."""
    tables: dict[str, MonitorTable] = {}
    # The real server parses the tables in its hash order: the first error is that one's.
    for tname in shash_order(json):
        reqs = json[tname]
        ts = schema.tables.get(tname)
        if ts is None:
            raise OvsdbError("syntax error", f"no table named {tname}")
        if type(reqs) is not list:
            reqs = [reqs]
        columns: list[str] = []
        selects: list[tuple[bool, bool, bool, bool]] = []
        conditions: list[MonitorCondition | None] = []
        table_select = [False, False, False, False]
        for req in reqs:
            cols, cols_json, sel, cond = _parse_request(ts, req, version)
            table_select = [a or b for a, b in zip(table_select, sel, strict=True)]
            for c in cols:
                if c in columns:
                    raise syntax_error(cols_json, f"column {c} mentioned more than once")
                columns.append(c)
                selects.append(sel)
            conditions.append(cond)
        # Each request adds its condition (absent: true) to an shash under the table's
        # name; the one the real server then finds is the head of that bucket chain.
        # Every one of them has its columns tracked.
        condition = conditions[shash_find_index(len(conditions))] if conditions else None
        reads = [c for cond in conditions if cond is not None for c in _reads(cond)]
        if version == V1:
            condition, reads = None, []
        tables[tname] = MonitorTable(ts, tuple(columns), tuple(selects), condition,
                                     tuple(table_select), reads)  # type: ignore[arg-type]
    return tables


def _parse_request(
    ts: TableSchema, req: Any, version: int
) -> tuple[list[str], Any, tuple[bool, bool, bool, bool], MonitorCondition | None]:
    where = f"Parsing table {ts.name} failed: "
    if type(req) is not dict:
        raise OvsdbError("syntax error", f"{where}Object expected.")
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
    _check_members(req, allowed, where)
    select = (True, True, True, True)
    if sel_json is not None:
        swhere = f"Parsing table {ts.name} select failed: "
        vals = []
        for key in _SELECT_KEYS:
            v = sel_json.get(key, True)
            if type(v) is not bool:
                raise syntax_error(sel_json, f"{swhere}Type mismatch for member '{key}'.")
            vals.append(v)
        _check_members(sel_json, _SELECT_KEYS, swhere)
        select = tuple(vals)  # type: ignore[assignment]
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
    cond = None
    if where_json is not None:
        cond = parse_monitor_where(ts, where_json)
    return cols, cols_json, select, cond


def _reads(cond: MonitorCondition) -> list[str]:
    """The columns `cond`'s clauses read."""
    return [c.column for c in cond.clauses if c.column is not None]


def _check_members(obj: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    """Members of `obj` not in `allowed`: an error naming the first in the real server's
    order, with the count of the others (lib/ovsdb-parser.c wording)."""
    extra = [k for k in shash_order(obj) if k not in allowed]
    if not extra:
        return
    if len(extra) == 1:
        raise syntax_error(obj, f"{where}Member '{extra[0]}' is present but not allowed here.")
    n = len(extra) - 1
    others = "other member" if n == 1 else "other members"
    raise syntax_error(
        obj, f"{where}Member '{extra[0]}' and {n} {others} are present but not allowed here.")


class _RenderKey:
    """A table monitor's rendering configuration as a dict key, its hash made once."""

    __slots__ = ("hash", "key", "tracked")

    def __init__(self, key: tuple[Any, ...], tracked: tuple[str, ...]) -> None:
        self.key = key
        self.hash = hash(key)
        self.tracked = tracked

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _RenderKey) and (self is other or self.key == other.key)


def _rows(mt: MonitorTable, changes: dict[str, RowChange], v1: bool,
          outcome: tuple[tuple[bool, bool], ...] | None, shared: dict[Any, Any]
          ) -> dict[str, Any]:
    """The row updates of `changes` for table monitor `mt`, `outcome` telling which
    old and new rows its conditions select (None: all)."""
    rows: dict[str, Any] = {}
    for i, (uuid, ch) in enumerate(changes.items()):
        old, new = ch.old, ch.new
        if outcome is not None:
            keep_old, keep_new = outcome[i]
            old = old if keep_old else None
            new = new if keep_new else None
        if old is None:
            if new is None or not mt.insert:
                continue
            rows[uuid] = ({"new": mt.row_v1(new, _INSERT)} if v1
                          else {"insert": mt.row_v2(new, _INSERT)})
        elif new is None:
            if not mt.delete:
                continue
            rows[uuid] = {"old": mt.row_v1(old, _DELETE)} if v1 else {"delete": None}
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
    return rows


def default_columns(ts: TableSchema) -> list[str]:
    """All columns and `_version`, but not `_uuid` (the row's key), as the real server."""
    return [*ts.columns, "_version"]


class Monitor:
    """One monitor of one session on one database."""

    __slots__ = ("db_name", "held", "id", "pending", "sink", "tables", "version")

    def __init__(
        self, mon_id: Any, db_name: str, version: int, tables: dict[str, MonitorTable], sink: Any
    ) -> None:
        self.id = mon_id
        self.db_name = db_name
        self.version = version
        self.tables = tables
        self.sink = sink  # receives (monitor, txn_id, updates) notifications
        # The changes held back while its session cannot write (`hold`); None when
        # changes are sent as they come.
        self.held: dict[str, dict[str, RowChange]] | None = None
        # The changesets committed in the current output batch that concern it, to be
        # rendered as one update at the batch's end (`HostedDb.render_pending`).
        self.pending: list[Changeset] = []

    # -- held changes ------------------------------------------------------------------

    def hold(self, cs: Changeset) -> None:
        """Merge `cs` into the held changes (of the tables this monitor watches): per
        row the first old and the last new, so an insert then modify is an insert of
        the last row, a modify then delete a delete, a modify then modify one modify,
        and a row inserted then deleted is forgotten. Memory grows with the rows that
        changed, not with the number of transactions."""
        assert self.held is not None
        merge_into(self.held, cs, self.tables)

    def take_held(self, keep_holding: bool) -> Changeset | None:
        """The held changes as one changeset (None if nothing is held); holding goes
        on, from nothing, if `keep_holding`."""
        held = self.held
        self.held = {} if keep_holding else None
        if not held:
            return None
        return Changeset({t: rows for t, rows in held.items() if rows})

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
                    out[row.uuid] = {"new": mt.row_v1(row, _INITIAL)}
        else:
            for row in rows:
                if cond is None or cond.matches(row):
                    out[row.uuid] = {"initial": mt.row_v2(row, _INITIAL)}
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
            cond, old_cond = mt.condition, mt.old_condition
            # Which rows (old and new) the conditions select, None if all: the rows'
            # updates depend only on that and on what the table monitors, so monitors
            # alike share them (one dict, rendered once, encoded once per message).
            outcome = None if cond is None and old_cond is None else tuple(
                ((old_cond is None or ch.old is None or old_cond.matches(ch.old)),
                 (cond is None or ch.new is None or cond.matches(ch.new)))
                for ch in changes.values())
            key = (id(changes), v1, mt.render_key(), outcome)
            rows = shared.get(key)
            if rows is None:
                rows = shared[key] = _rows(mt, changes, v1, outcome, shared)
            if rows:
                out[tname] = rows
        return out or None

    def change_condition(
        self, db: Database, json: Any
    ) -> dict[str, Any] | None:
        """Apply `monitor_cond_change` conditions; return the updates that bring the
        client from the old conditions' rows to the new ones'. Within a table's array
        the last request wins. An error leaves the tables set before it half changed
        (module docstring). A `monitor` (v1) monitor accepts the request without parsing
        its conditions and keeps reporting every row, as the real server does."""
        if type(json) is not dict:
            raise OvsdbError("syntax error", "monitor-cond-change-requests must be object")
        for tname in shash_order(json):
            reqs = json[tname]
            if tname not in db.schema.tables:
                raise OvsdbError("syntax error", f"no table named {tname}")
            mt = self.tables.get(tname)
            if mt is None:
                raise OvsdbError("syntax error", f"no table named {tname} in monitor session")
            if type(reqs) is not list:
                raise OvsdbError("syntax error", f"table {tname} no monitor-cond-change JSON array")
            for req in reqs:
                cond = _parse_change_request(mt.schema, req, self.version != V1)
                if self.version != V1:
                    mt.propose(cond)
        out: dict[str, Any] = {}
        for tname, mt in self.tables.items():
            old_cond, cond = mt.old_condition, mt.condition
            if old_cond is cond:
                continue
            mt.old_condition = cond
            rows: dict[str, Any] = {}
            for row in db.tables[tname].rows.values():
                was = old_cond is None or old_cond.matches(row)
                now = cond is None or cond.matches(row)
                if was == now:
                    continue
                if now:
                    if mt.insert:
                        rows[row.uuid] = {"insert": mt.row_v2(row, _INSERT)}
                elif mt.delete:
                    rows[row.uuid] = {"delete": None}
            if rows:
                out[tname] = rows
        return out or None


def _parse_change_request(
    ts: TableSchema, req: Any, conditional: bool = True
) -> MonitorCondition | None:
    """One `<monitor-cond-update-request>`: its condition (a request without "where"
    selects every row; the real server crashes on it, see docs/compat.md). Without
    `conditional` (a v1 monitor) the condition is not parsed."""
    where = f"Parsing table {ts.name} failed: "
    if type(req) is not dict:
        raise OvsdbError("syntax error", f"{where}Object expected.")
    cols = req.get("columns")
    if cols is not None and type(cols) is not list:
        raise syntax_error(req, f"{where}Type mismatch for member 'columns'.")
    where_json = req.get("where")
    if where_json is not None and type(where_json) is not list:
        raise syntax_error(req, f"{where}Type mismatch for member 'where'.")
    _check_members(req, ("columns", "where"), where)
    if cols is not None:
        raise syntax_error(req, "changing columns is unsupported")
    if where_json is None or not conditional:
        return None
    return parse_monitor_where(ts, where_json)
