"""The transaction engine: executes the operations of one `transact` against a database
and yields either results plus a changeset, an error, or "blocked" (an unsatisfied wait).

Rules kept here:
- Atomic: the database is never touched. Operations work on a private overlay of the
  rows they change; a failure anywhere discards the overlay, so nothing is half-applied.
- Results follow the real server: one result per operation; at the first failing
  operation its error object takes its place and the remaining operations get `null`;
  an error found when the transaction is checked for commit (references, indexes,
  maxRows) is appended after the last operation's result.
- Commit checks, in the real server's order: referential integrity of strong references,
  garbage collection of unreferenced rows of non-root tables, maxRows, removal of weak
  references to rows that do not exist (then the columns' minimum sizes), uniqueness of
  indexes. An index violation names the two rows in the real server's order (the
  greater first, comparing all columns in its hash order of the table's columns).
  Within one row, references are checked (dangling strong ones, weak ones leaving a
  column too small) column by column in that same hash order, and in a map all keys
  before all values, so of several such problems in one row the one the real server
  meets first is reported.
- Of several problems in one JSON object of the request (extra members of an operation,
  bad members of a row), the one reported is the first in the real server's hash order
  of that object (`hashorder`), since that is the order it meets them in.
- A client's permissions (`rbac.Access`, passed as the lock test): a read-only client's
  writes fail with "not allowed" after the operation parsed; RBAC denials are the
  operation's own error, raised before it changes anything.
- A `where` that pins every column of a table index (or `_uuid`) looks its row up
  instead of scanning the table, when the transaction has not yet changed a committed
  row of that table; the rows and their order are those a scan would give.
- Pure: no clock, no I/O, no randomness. The caller passes `now` (for `wait` timeouts)
  and the time the transaction first started waiting, and decides what to do with a
  Blocked outcome; new row UUIDs and versions come from the database's sources.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

from .changeset import Changeset, RowChange, default_data
from .condition import Condition, parse_where
from .database import Database, Table
from .datum import UUID_ZERO, SymbolTable, datum_to_string, is_uuid_string
from .errors import OvsdbError, syntax_error
from .hashorder import first_in_shash_order, shash_order, table_columns_order
from .mutation import parse_mutations
from .parser import KINDS, kind_ok
from .rbac import READ_ONLY_REASON, Access, Rbac
from .row import Row
from .schema import ColumnSchema, TableSchema


class Outcome:
    __slots__ = ()


class Committed(Outcome):
    """Success. `changeset` may be empty (nothing to store or send)."""

    __slots__ = ("changeset", "durable", "results")

    def __init__(self, results: list[Any], changeset: Changeset, durable: bool) -> None:
        self.results = results
        self.changeset = changeset
        self.durable = durable


class Failed(Outcome):
    __slots__ = ("error", "results")

    def __init__(self, results: list[Any], error: OvsdbError) -> None:
        self.results = results
        self.error = error


class Blocked(Outcome):
    """A `wait` does not hold yet; retry when the database changes or at `deadline`."""

    __slots__ = ("deadline",)

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline


class _Blocked(Exception):
    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline


class TxnRow:
    """A row as this transaction sees it: `old` committed (None if inserted here),
    `new` current (None if deleted here). `new.data` is private to the transaction."""

    __slots__ = ("new", "old")

    def __init__(self, old: Row | None, new: Row | None) -> None:
        self.old = old
        self.new = new


_WRITE_OPS = frozenset(("insert", "update", "mutate", "delete", "commit"))
_MISSING = object()
_INF = float("inf")
_VALID_IDS: set[Any] = set()  # strings already checked to be <id>s


_MISSING = object()


class _OpParser:
    """Reads an operation's members in the real server's order, so that the first
    problem it reports is the one the real server reports."""

    __slots__ = ("failed", "i", "n", "n_used", "op")

    def __init__(self, op: dict[str, Any], i: int, n: int) -> None:
        self.op = op
        self.i = i
        self.n = n
        self.n_used = 0
        self.failed: OvsdbError | None = None

    def error(self, details: str) -> OvsdbError:
        err = syntax_error(
            self.op, f"Parsing ovsdb operation {self.i + 1} of {self.n} failed: {details}"
        )
        if self.failed is None:
            self.failed = err
        return err

    def get(self, name: str, kind: str, optional: bool = False) -> Any:
        value = self.op.get(name, _MISSING)  # (not a KeyError: most optional ones are)
        if value is _MISSING:
            if optional:
                return None
            raise self.error(f"Required '{name}' member is missing.")
        self.n_used += 1
        t = type(value)
        if kind == "id":
            if t is str and value in _VALID_IDS:
                return value
            if t is not str or not kind_ok(value, kind):
                raise self.error(f"Type mismatch for member '{name}'.")
            if len(_VALID_IDS) < 65536:
                _VALID_IDS.add(value)
        elif t not in KINDS[kind] or (kind == "integer" and not kind_ok(value, kind)):
            raise self.error(f"Type mismatch for member '{name}'.")
        return value

    def finish(self, allowed: frozenset[str]) -> None:
        """The parser's own error, if any, wins over whatever the operation raised: the
        first member problem, else members that should not be there."""
        if self.failed is not None:
            raise self.failed
        if len(self.op) == self.n_used:
            return
        extra = [m for m in self.op if m not in allowed]
        if len(extra) > 1:  # name the one the real server meets first
            first = first_in_shash_order(self.op, extra)
            extra.remove(first)
            extra.insert(0, first)
        if len(extra) == 1:
            raise self.error(f"Member '{extra[0]}' is present but not allowed here.")
        if extra:
            n = len(extra) - 1
            others = "other member" if n == 1 else "other members"
            raise self.error(
                f"Member '{extra[0]}' and {n} {others} are present but not allowed here."
            )


_ALLOWED = {
    "insert": frozenset(("op", "table", "uuid", "uuid-name", "row")),
    "select": frozenset(("op", "table", "where", "columns", "sort")),
    "update": frozenset(("op", "table", "where", "row")),
    "mutate": frozenset(("op", "table", "where", "mutations")),
    "delete": frozenset(("op", "table", "where")),
    "wait": frozenset(("op", "timeout", "where", "columns", "until", "rows", "table")),
    "commit": frozenset(("op", "durable")),
    "abort": frozenset(("op",)),
    "comment": frozenset(("op", "comment")),
    "assert": frozenset(("op", "lock")),
}


class Transaction:
    """One execution attempt of a `transact` request."""

    def __init__(
        self,
        db: Database,
        ops: list[Any],
        *,
        now: float = 0.0,
        started: float | None = None,
        owns_lock: Callable[[str], bool] | None = None,
        read_only_reason: str | None = None,
    ) -> None:
        self.db = db
        self.ops = ops
        self.now = now
        self.started = now if started is None else started
        self.owns_lock = owns_lock
        # Why writes are refused, e.g. "on table in reserved database _Server".
        self.read_only_reason = read_only_reason
        access = owns_lock if isinstance(owns_lock, Access) else None
        if access is not None and access.read_only:
            self.read_only_reason = READ_ONLY_REASON  # the real server says this first
        self.rbac = Rbac.for_access(db, access, self._current)
        self.rows: dict[str, dict[str, TxnRow]] = {}
        self.symtab = SymbolTable(db.new_uuid)
        self.durable = False
        self.comments: list[str] = []
        self.timeout: float | None = None  # smallest wait timeout, ms

    # -- execution ---------------------------------------------------------------------

    def execute(self) -> Committed | Failed | Blocked:
        ops = self.ops
        results: list[Any] = []
        n = len(ops)
        for i, op in enumerate(ops):
            try:
                results.append(self._execute_op(op, i, n))
            except _Blocked as b:
                return Blocked(b.deadline)
            except OvsdbError as e:
                results.append(e.to_json())
                results.extend([None] * (n - i - 1))
                return Failed(results, e)
        try:
            changeset = self.precommit()
        except OvsdbError as e:
            results.append(e.to_json())
            return Failed(results, e)
        if self.comments:
            changeset.comment = "\n".join(self.comments)
        return Committed(results, changeset, self.durable)

    def _execute_op(self, op: Any, i: int, n: int) -> Any:
        if type(op) is not dict:
            raise OvsdbError(
                "syntax error", f"Parsing ovsdb operation {i + 1} of {n} failed: Object expected."
            )
        parser = _OpParser(op, i, n)
        name = parser.get("op", "id")
        handler = _HANDLERS.get(name)
        if handler is None:
            raise parser.error(f'No operation "{name}"')
        try:
            result = handler(self, parser)
        except OvsdbError:
            parser.finish(_ALLOWED[name])
            raise
        parser.finish(_ALLOWED[name])
        if name in _WRITE_OPS and self.read_only_reason is not None:
            raise OvsdbError("not allowed", f"{name} operation not allowed {self.read_only_reason}")
        return result

    # -- helpers -----------------------------------------------------------------------

    def _table(self, parser: _OpParser) -> Table:
        tname = parser.get("table", "id")
        table = self.db.tables.get(tname)
        if table is None:
            raise parser.error(f"No table named {tname}.")
        return table

    def _txn_rows(self, tname: str) -> dict[str, TxnRow]:
        trs = self.rows.get(tname)
        if trs is None:
            trs = self.rows[tname] = {}
        return trs

    def _current(self, table: Table, uuid: str) -> Row | None:
        trs = self.rows.get(table.name)
        if trs is not None:
            tr = trs.get(uuid)
            if tr is not None:
                return tr.new
        return table.rows.get(uuid)

    def _query(self, table: Table, cond: Condition) -> Iterator[Row]:
        """Rows visible to this transaction that satisfy `cond`."""
        if cond.always_false:
            return
        match = cond.matches
        trs = self.rows.get(table.name)
        if cond.uuids is not None:
            for u in cond.uuids:
                row = self._current(table, u)
                if row is not None and match(row):
                    yield row
            return
        # An index may pin the one committed row that can match, if this transaction
        # changed no committed row of the table: then that row stands for the scan.
        hit = None
        if cond.pinned and not (trs and any(tr.old is not None for tr in trs.values())):
            hit = _index_lookup(table, cond.pinned)
        if not trs:
            for row in (list(table.rows.values()) if hit is None
                        else [table.rows[u] for u in hit]):
                if match(row):
                    yield row
            return
        for uuid, row in (list(table.rows.items()) if hit is None
                          else [(u, table.rows[u]) for u in hit]):
            tr = trs.get(uuid)
            if tr is not None:
                if tr.new is None:
                    continue
                row = tr.new
            if match(row):
                yield row
        for tr in list(trs.values()):
            if tr.old is None and tr.new is not None and match(tr.new):
                yield tr.new

    def _writable(self, table: Table, row: Row) -> Row:
        """The transaction's private copy of `row`, made on first write."""
        trs = self._txn_rows(table.name)
        tr = trs.get(row.uuid)
        if tr is None:
            new = Row(row.uuid, dict(row.data), row.version)
            tr = trs[row.uuid] = TxnRow(row, new)
        assert tr.new is not None
        return tr.new

    def _parse_row(self, ts: TableSchema, json: dict[str, Any]) -> dict[str, Any]:
        """Column values of an insert row; `_uuid`/`_version` are checked, then ignored."""
        out = self._row_values(ts, json)
        out.pop("_uuid", None)
        out.pop("_version", None)
        return out

    def _row_values(self, ts: TableSchema, json: dict[str, Any],
                    into: dict[str, Any] | None = None) -> dict[str, Any]:
        """Every member of a row object parsed with its column's type, `_uuid` and
        `_version` included. Of several bad members, the one reported is the first in
        the real server's order (see `_row_error`)."""
        out: dict[str, Any] = {} if into is None else into
        symtab = self.symtab
        cols = ts.all_columns
        try:
            for cname, vjson in json.items():
                col = cols.get(cname)
                if col is None:
                    raise OvsdbError("unknown column",
                                     f"No column {cname} in table {ts.name}.", json)
                out[cname] = col.type.codec.from_json(vjson, symtab)
        except OvsdbError as e:
            raise self._row_error(ts, json, e) from None
        return out

    def _row_error(self, ts: TableSchema, json: dict[str, Any], error: OvsdbError
                   ) -> OvsdbError:
        """The error of the first bad member of row object `json` in the real server's
        iteration order (a hash order), given `error`, the first one in text order."""
        if len(json) < 2:
            return error
        for cname in shash_order(json):
            col = ts.all_columns.get(cname)
            if col is None:
                return OvsdbError("unknown column", f"No column {cname} in table {ts.name}.",
                                  json)
            try:
                col.type.codec.from_json(json[cname], self.symtab)
            except OvsdbError as e:
                return e
        return error

    @staticmethod
    def _column_set(ts: TableSchema, json: Any) -> list[str]:
        """`columns` of select/wait: distinct names; all columns when absent."""
        if json is None:
            return list(ts.all_columns)
        out: list[str] = []
        for c in json:
            if type(c) is not str or c in out:
                raise syntax_error(json, "array of distinct column names expected")
            if c not in ts.all_columns:
                raise syntax_error(json, f"{c} is not a valid column name")
            out.append(c)
        return out

    # -- operations --------------------------------------------------------------------

    def _op_insert(self, p: _OpParser) -> Any:
        table = self._table(p)
        given = p.get("uuid", "string", optional=True)
        uuid_name = p.get("uuid-name", "id", optional=True)
        row_json = p.get("row", "object")
        ts = table.schema
        uuid: str | None = None
        if given is not None:
            if not is_uuid_string(given):
                raise syntax_error(given, "bad uuid")
            uuid = given.lower()
            if uuid in table.rows or uuid in self.rows.get(table.name, ()):
                raise OvsdbError(
                    "duplicate uuid",
                    "This UUID would duplicate a UUID already present within the table or "
                    "deleted within the same transaction.",
                    given,
                )
        if uuid_name is not None:
            symbol = self.symtab.get(uuid_name)
            if symbol is not None and symbol.created:
                raise OvsdbError(
                    "duplicate uuid-name",
                    'This "uuid-name" appeared on an earlier "insert" operation.',
                    uuid_name,
                )
            if symbol is None:
                symbol = self.symtab.lookup(uuid_name)
            if uuid is not None:
                symbol.uuid = uuid
            else:
                uuid = symbol.uuid
            symbol.created = True
        if uuid is None:
            uuid = self.db.new_uuid()
        data = ts.defaults()
        data.update(self._parse_row(ts, row_json))
        # Single-element values, defaults included, must satisfy their constraints.
        for col in ts.single_checked:
            codec = col.type.codec
            v = data[col.name]
            if codec.is_scalar or len(v) == 1:
                codec.check_constraints(v)
        if self.rbac is not None and not self.rbac.may_insert(table, data):
            raise self.rbac.denied("insert", table.name)
        self._txn_rows(table.name)[uuid] = TxnRow(None, Row(uuid, data, self.db.new_version()))
        return {"uuid": ["uuid", uuid]}

    def _op_select(self, p: _OpParser) -> Any:
        table = self._table(p)
        where = p.get("where", "array")
        columns_json = p.get("columns", "array", optional=True)
        sort_json = p.get("sort", "array", optional=True)
        ts = table.schema
        cond = parse_where(ts, where, self.symtab)
        columns = self._column_set(ts, columns_json)
        sort = self._column_set(ts, sort_json) if sort_json is not None else None
        rows: list[Row] = list(self._query(table, cond))
        if sort:
            keys = [(c, ts.all_columns[c].type.codec.sort_key) for c in sort]
            rows.sort(key=lambda r: tuple(k(r.get(c)) for c, k in keys))
        codecs = [(c, ts.all_columns[c].type.codec) for c in columns]
        out = []
        if columns_json is not None and "_uuid" not in columns:
            # The real server returns distinct rows when _uuid is not selected.
            seen: set[tuple[Any, ...]] = set()
            for row in rows:
                key = tuple(row.get(c) for c, _ in codecs)
                if key in seen:
                    continue
                seen.add(key)
                out.append({c: codec.to_json(v) for (c, codec), v in zip(codecs, key,
                                                                          strict=True)})
            return {"rows": out}
        for row in rows:
            out.append({c: codec.to_json(row.get(c)) for c, codec in codecs})
        return {"rows": out}

    def _op_update(self, p: _OpParser) -> Any:
        table = self._table(p)
        where = p.get("where", "array")
        row_json = p.get("row", "object")
        ts = table.schema
        values = self._row_values(ts, row_json)
        immutable = [c for c in values if not ts.all_columns[c].mutable]
        if immutable:
            cname = first_in_shash_order(row_json, immutable)
            raise OvsdbError(
                "constraint violation",
                f"Cannot update immutable column {cname} in table {ts.name}.",
                p.op,
            )
        cond = parse_where(ts, where, self.symtab)
        rows = list(self._query(table, cond))
        if self.rbac is not None and not self.rbac.may_modify(table, values, rows):
            raise self.rbac.denied("update", table.name)
        count = 0
        for row in rows:
            self._writable(table, row).data.update(values)
            count += 1
        return {"count": count}

    def _op_mutate(self, p: _OpParser) -> Any:
        table = self._table(p)
        where = p.get("where", "array")
        mutations_json = p.get("mutations", "array")
        ts = table.schema
        mutations = parse_mutations(ts, mutations_json, self.symtab)
        cond = parse_where(ts, where, self.symtab)
        rows = list(self._query(table, cond))
        if self.rbac is not None and not self.rbac.may_modify(
                table, [m.column.name for m in mutations], rows):
            raise self.rbac.denied("mutate", table.name)
        count = 0
        for row in rows:
            new_values: dict[str, Any] = {}
            data = row.data
            for m in mutations:
                cname = m.column.name
                new_values[cname] = m.apply(new_values.get(cname, data[cname]))
            self._writable(table, row).data.update(new_values)
            count += 1
        return {"count": count}

    def _op_delete(self, p: _OpParser) -> Any:
        where = p.get("where", "array")
        table = self._table(p)
        cond = parse_where(table.schema, where, self.symtab)
        rows = list(self._query(table, cond))
        if self.rbac is not None and not self.rbac.may_delete(table, rows):
            raise self.rbac.denied("delete", table.name)
        count = 0
        for row in rows:
            self._delete_row(table, row)
            count += 1
        return {"count": count}

    def _delete_row(self, table: Table, row: Row) -> None:
        trs = self._txn_rows(table.name)
        tr = trs.get(row.uuid)
        if tr is None:
            trs[row.uuid] = TxnRow(row, None)
        else:
            tr.new = None

    def _op_wait(self, p: _OpParser) -> Any:
        timeout_json = p.get("timeout", "integer", optional=True)
        where = p.get("where", "array")
        columns_json = p.get("columns", "array", optional=True)
        until = p.get("until", "string")
        rows_json = p.get("rows", "array")
        table = self._table(p)
        ts = table.schema
        cond = parse_where(ts, where, self.symtab)
        columns = self._column_set(ts, columns_json)
        timeout: float | None = None
        if timeout_json is not None:
            timeout = int(timeout_json)
            if timeout < 0:
                raise syntax_error(timeout_json, "timeout must be nonnegative")
            if self.timeout is None or timeout < self.timeout:
                self.timeout = timeout
        if until not in ("==", "!="):
            raise syntax_error(until, '"until" must be "==" or "!="')
        defaults = default_data(ts)
        expected: set[tuple[Any, ...]] = set()
        for rj in rows_json:
            if type(rj) is not dict:
                raise syntax_error(rj, "row must be JSON object")
            values = dict(defaults)
            values["_uuid"] = UUID_ZERO
            values["_version"] = UUID_ZERO
            self._row_values(ts, rj, values)
            expected.add(tuple(values[c] for c in columns))
        actual = {tuple(row.get(c) for c in columns) for row in self._query(table, cond)}
        if (actual == expected) == (until == "=="):
            return {}
        elapsed = int(self.now - self.started)
        if timeout is not None and elapsed >= timeout:
            if elapsed == 0:
                raise OvsdbError("timed out", '"where" clause test failed')
            raise OvsdbError("timed out", f'"wait" timed out after {elapsed} ms')
        raise _Blocked(None if self.timeout is None else self.started + self.timeout)

    def _op_commit(self, p: _OpParser) -> Any:
        if p.get("durable", "boolean"):
            self.durable = True
        return {}

    def _op_abort(self, p: _OpParser) -> Any:
        p.finish(_ALLOWED["abort"])
        raise OvsdbError("aborted", "aborted by request")

    def _op_comment(self, p: _OpParser) -> Any:
        self.comments.append(p.get("comment", "string"))
        return {}

    def _op_assert(self, p: _OpParser) -> Any:
        lock = p.get("lock", "id")
        if self.owns_lock is None or not self.owns_lock(lock):
            raise OvsdbError("not owner", f"Asserted lock {lock} not held.")
        return {}

    # -- commit checks -----------------------------------------------------------------

    def precommit(self) -> Changeset:
        """Check the rows this transaction wrote, as a commit would, and return the
        changeset; raises OvsdbError if a check fails. Checks that cannot apply to the
        tables touched (no references, no indexes, no row limit) are skipped."""
        deleted = self._drop_unchanged()
        tables = self.db.schema.tables
        touched = refs = max_rows = weak = indexes = False
        for t, trs in self.rows.items():
            if trs:
                ts = tables[t]
                touched = True
                refs = refs or bool(ts.strong_ref_columns) or not ts.is_root
                max_rows = max_rows or ts.max_rows != _INF
                weak = weak or bool(ts.weak_ref_columns)
                indexes = indexes or bool(ts.indexes)
        if not touched:
            return Changeset({})
        if deleted or refs:
            new_refs: list[tuple[str, str, str, str, str]] = []
            deltas = self._strong_ref_deltas(new_refs)
            self._check_strong_refs(deltas, new_refs)
            self._collect_garbage(deltas)
        if max_rows:
            self._check_max_rows()
        if deleted or weak:
            self._assess_weak_refs()
        if indexes:
            self._check_indexes()
        return self._changeset()

    def _drop_unchanged(self) -> bool:
        """Forget rows written back unchanged; returns whether any row is deleted."""
        deleted = False
        for trs in self.rows.values():
            drop = None
            for u, tr in trs.items():
                new = tr.new
                if new is None:
                    if tr.old is None:
                        drop = [*(drop or ()), u]
                    else:
                        deleted = True
                elif tr.old is not None and new.data == tr.old.data:
                    drop = [*(drop or ()), u]
            if drop:
                for u in drop:
                    del trs[u]
        return deleted

    def _strong_ref_deltas(
        self, new_refs: list[tuple[str, str, str, str, str]] | None = None
    ) -> dict[tuple[str, str], int]:
        """Change in strong reference count per target row, from the rows changed here.
        A row's references to itself do not count, as in the real server. With `new_refs`,
        also collects (table, column, row, ref table, target) for every reference in a
        changed column, which must all name existing rows."""
        deltas: dict[tuple[str, str], int] = {}
        schema = self.db.schema
        for tname, trs in self.rows.items():
            cols = _strong_ref_columns(schema.tables[tname])
            if not cols:
                continue
            for uuid, tr in trs.items():
                old, new = tr.old, tr.new
                for col in cols:
                    cname = col.name
                    ov = old.data[cname] if old is not None else None
                    nv = new.data[cname] if new is not None else None
                    if (not ov and not nv) or (old is not None and new is not None and ov == nv):
                        continue
                    codec = col.type.codec
                    if ov:
                        for k in _strong_refs(codec, ov):
                            if k[1] != uuid:
                                deltas[k] = deltas.get(k, 0) - 1
                    if nv:
                        for k in _strong_refs(codec, nv):
                            if k[1] != uuid:
                                deltas[k] = deltas.get(k, 0) + 1
                                if new_refs is not None:
                                    new_refs.append((tname, cname, uuid, k[0], k[1]))
        return deltas

    def _exists(self, table: Table, uuid: str) -> bool:
        """Committed (even if deleted here) or inserted here: what a reference may name
        without being dangling."""
        if uuid in table.rows:
            return True
        trs = self.rows.get(table.name)
        return trs is not None and uuid in trs

    def _check_strong_refs(
        self, deltas: dict[tuple[str, str], int], new_refs: list[tuple[str, str, str, str, str]]
    ) -> None:
        tables = self.db.tables
        for tname, cname, uuid, rt, target in new_refs:
            if not self._exists(tables[rt], target):
                raise OvsdbError(
                    "referential integrity violation",
                    f"Table {tname} column {cname} row {uuid} references "
                    f"nonexistent row {target} in table {rt}.",
                )
        # Rows deleted here must no longer be referenced.
        for tname, trs in self.rows.items():
            table = tables[tname]
            for uuid, tr in trs.items():
                if tr.new is None and tr.old is not None:
                    count = table.n_refs.get(uuid, 0) + deltas.get((tname, uuid), 0)
                    if count > 0:
                        raise OvsdbError(
                            "referential integrity violation",
                            f"cannot delete {tname} row {uuid} because of {count} remaining "
                            "reference(s)",
                        )

    def _collect_garbage(self, deltas: dict[tuple[str, str], int]) -> None:
        """Delete rows of non-root tables that nothing references any more, repeatedly,
        since each deletion drops the references the deleted row held."""
        tables = self.db.tables
        while True:
            garbage: list[tuple[Table, Row]] = []
            seen: set[tuple[str, str]] = set()
            for tname, trs in self.rows.items():
                table = tables[tname]
                if table.schema.is_root:
                    continue
                for uuid, tr in trs.items():
                    if tr.new is not None and \
                            table.n_refs.get(uuid, 0) + deltas.get((tname, uuid), 0) <= 0:
                        garbage.append((table, tr.new))
                        seen.add((tname, uuid))
            for (rt, target), delta in deltas.items():
                table = tables[rt]
                if delta >= 0 or table.schema.is_root or (rt, target) in seen:
                    continue
                if table.n_refs.get(target, 0) + delta <= 0:
                    row = self._current(table, target)
                    if row is not None:
                        garbage.append((table, row))
            if not garbage:
                return
            for table, row in garbage:
                self._delete_row(table, row)
            deltas.clear()
            deltas.update(self._strong_ref_deltas())

    def _check_max_rows(self) -> None:
        tables = self.db.tables
        for tname, trs in self.rows.items():
            table = tables[tname]
            max_rows = table.schema.max_rows
            if max_rows == float("inf"):
                continue
            n = len(table.rows)
            for tr in trs.values():
                if tr.old is None and tr.new is not None:
                    n += 1
                elif tr.old is not None and tr.new is None:
                    n -= 1
            if n > max_rows:
                raise OvsdbError(
                    "constraint violation",
                    f'transaction causes "{tname}" table to contain {n} rows, greater than '
                    f"the schema-defined limit of {max_rows} row(s)",
                )

    def _assess_weak_refs(self) -> None:
        """Remove weak references to rows that do not exist after this transaction (rows
        deleted here, or never existing), then check the columns' minimum sizes."""
        tables = self.db.tables
        schema = self.db.schema
        candidates: dict[tuple[str, str], Row] = {}
        for tname, trs in list(self.rows.items()):
            table = tables[tname]
            has_weak = bool(schema.tables[tname].weak_ref_columns)
            if not has_weak and not table.weak_refs_in:
                continue  # (nothing here refers weakly, nor is referred to so)
            for uuid, tr in trs.items():
                if tr.new is not None:
                    if has_weak:
                        candidates[(tname, uuid)] = tr.new
                elif tr.old is not None:
                    for st, su in table.weak_refs_in.get(uuid, {}):
                        row = self._current(tables[st], su)
                        if row is not None:
                            candidates[(st, su)] = row
        for (tname, uuid), row in candidates.items():
            table = tables[tname]
            changes: dict[str, Any] = {}
            committed = table.rows.get(uuid)
            for col in _weak_ref_columns(table.schema):
                value = row.data[col.name]
                if not value:
                    continue
                codec = col.type.codec
                if committed is not None and not codec.is_map and not codec.is_scalar \
                        and self._weak_set_intact(codec, value, committed.data[col.name]):
                    continue
                kept, removed = self._live_weak_refs(codec, value)
                if not removed:
                    continue
                if len(kept) < col.type.min:
                    inserted = uuid not in table.rows
                    if inserted and all(r == UUID_ZERO for r in removed):
                        raise OvsdbError(
                            "constraint violation",
                            f'Weak reference column "{col.name}" in "{tname}" row {uuid} '
                            "(inserted within this transaction) contained all-zeros UUID "
                            "(probably as the default value for this column) but deleting "
                            "this value caused a constraint volation because this column is "
                            "not allowed to be empty.",
                        )
                    note = "(inserted within this transaction) " if inserted else ""
                    raise OvsdbError(
                        "constraint violation",
                        f"Deletion of {len(removed)} weak reference(s) to deleted (or "
                        f'never-existing) rows from column "{col.name}" in "{tname}" row '
                        f"{uuid} {note}caused this column to become empty, but constraints "
                        "on this column disallow an empty column.",
                    )
                changes[col.name] = kept
            if changes:
                self._writable(table, row).data.update(changes)

    def _weak_set_intact(self, codec: Any, value: tuple[Any, ...],
                         committed: tuple[Any, ...]) -> bool:
        """Whether every weak reference of a set column is known alive without looking
        each up: those it held when committed pointed at rows that existed then, so
        only the new ones and those whose rows this transaction touched can be dead."""
        target = self.db.tables[codec.key.ref_table]
        members = set(value)
        suspects = members.difference(committed)
        trs = self.rows.get(target.name)
        if trs:
            suspects.update(members.intersection(trs))
        return all(self._current(target, u) is not None for u in suspects)

    def _live_weak_refs(self, codec: Any, value: Any) -> tuple[Any, list[str]]:
        """(value without dead weak refs, the dead refs removed)."""
        tables = self.db.tables
        key, val = codec.key, codec.value
        removed: list[str] = []

        def alive(base: Any, u: str) -> bool:
            if self._current(tables[base.ref_table], u) is not None:
                return True
            removed.append(u)
            return False

        kw = key.is_weak_ref
        vw = val is not None and val.is_weak_ref
        if codec.is_scalar:
            return ((), removed) if not alive(key, value) else (value, removed)
        if codec.is_map:
            kept = tuple(
                (k, v)
                for k, v in value
                if (not kw or alive(key, k)) and (not vw or alive(val, v))
            )
        else:
            kept = tuple(a for a in value if alive(key, a))
        return kept, removed

    def _check_indexes(self) -> None:
        tables = self.db.tables
        for tname, trs in self.rows.items():
            table = tables[tname]
            if not table.schema.indexes:
                continue
            for i, cols in enumerate(table.schema.indexes):
                seen: dict[tuple[Any, ...], TxnRow] = {}
                committed = table.indexes[i]
                for uuid, tr in trs.items():
                    if tr.new is None:
                        continue
                    key = table.index_key(i, tr.new.data)
                    other = seen.get(key)
                    if other is not None:
                        self._index_error(table, cols, key, tr, other)
                    seen[key] = tr
                    holder = committed.get(key)
                    if holder is not None and holder != uuid and holder not in trs:
                        row = table.rows[holder]
                        self._index_error(table, cols, key, tr, TxnRow(row, row))

    def _index_error(
        self, table: Table, cols: tuple[str, ...], key: tuple[Any, ...], a: TxnRow, b: TxnRow
    ) -> None:
        ts = table.schema
        if self._row_order_key(ts, a) < self._row_order_key(ts, b):
            a, b = b, a
        codecs = [ts.columns[c].type.codec for c in cols]
        values = _english_join(
            [datum_to_string(codec, v) for codec, v in zip(codecs, key, strict=True)]
        )
        quoted = _english_join([f'"{c}"' for c in cols])
        what = f"columns {quoted}" if len(cols) > 1 else f"column {quoted}"

        def describe(tr: TxnRow) -> str:
            old, new = tr.old, tr.new
            assert new is not None
            uuid = new.uuid
            if old is None:
                return f"with UUID {uuid}, was inserted by this transaction."
            if new is old or new.data == old.data:
                return (f"with UUID {uuid}, existed in the database before this "
                        "transaction and was not modified by the transaction.")
            old_key = table.index_key(table.schema.indexes.index(cols), old.data)
            if old_key == key:
                return (f"with UUID {uuid}, existed in the database before this transaction, "
                        "which modified some of the row's columns but not any columns in "
                        "this index.")
            old_values = _english_join(
                [datum_to_string(codec, v) for codec, v in zip(codecs, old_key, strict=True)]
            )
            return (f"with UUID {uuid}, had the following index values before the "
                    f"transaction: {old_values}.")

        raise OvsdbError(
            "constraint violation",
            f'Transaction causes multiple rows in "{ts.name}" table to have identical values '
            f"({values}) for index on {what}.  First row, {describe(a)}  Second row, "
            f"{describe(b)}",
        )

    @staticmethod
    def _row_order_key(ts: TableSchema, tr: TxnRow) -> tuple[Any, ...]:
        """The real server names the greater row first, comparing every column (`_uuid`
        and `_version` too) in its hash order of the table's columns. At that point a
        modified row still has its old `_version`; an inserted one has a fresh one."""
        new = tr.new
        assert new is not None
        key = []
        for cname in table_columns_order(ts):
            if cname == "_uuid":
                key.append(new.uuid)
            elif cname == "_version":
                key.append(new.version)
            else:
                key.append(ts.columns[cname].type.codec.sort_key(new.data[cname]))
        return tuple(key)

    def _changeset(self) -> Changeset:
        tables: dict[str, dict[str, RowChange]] = {}
        new_version = self.db.new_version
        for tname, trs in self.rows.items():
            out: dict[str, RowChange] = {}
            for uuid, tr in trs.items():
                old, new = tr.old, tr.new
                if new is None:
                    if old is not None:
                        out[uuid] = RowChange(uuid, old, None)
                    continue
                if old is not None:
                    if new.data == old.data:
                        continue
                    new = Row(uuid, new.data, new_version())  # a fresh _version
                out[uuid] = RowChange(uuid, old, new)
            if out:
                tables[tname] = out
        return Changeset(tables)


def _index_lookup(table: Table, pinned: dict[str, Any]) -> list[str] | None:
    """The committed row (none or one) whose indexed columns hold the `pinned` values,
    by the first of the table's indexes they cover; None if they cover none."""
    for i, columns in enumerate(table.schema.indexes):
        if all(c in pinned for c in columns):
            uuid = table.indexes[i].get(tuple(pinned[c] for c in columns))
            return [] if uuid is None else [uuid]
    return None


@functools.lru_cache(maxsize=512)
def _strong_ref_columns(ts: TableSchema) -> tuple[ColumnSchema, ...]:
    """The columns holding strong references, in the real server's column hash order:
    it checks a row's columns in that order, so of several dangling references in one
    row it names the first column that order meets."""
    order = {c: i for i, c in enumerate(table_columns_order(ts))}
    return tuple(sorted(ts.strong_ref_columns, key=lambda c: order[c.name]))


@functools.lru_cache(maxsize=512)
def _weak_ref_columns(ts: TableSchema) -> tuple[ColumnSchema, ...]:
    """As `_strong_ref_columns`, for the weak references the commit cleans up."""
    order = {c: i for i, c in enumerate(table_columns_order(ts))}
    return tuple(sorted(ts.weak_ref_columns, key=lambda c: order[c.name]))


def _strong_refs(codec: Any, value: Any) -> Iterator[tuple[str, str]]:
    """(ref table, uuid) of the strong references in `value`, in the real server's order:
    of a map, all the keys (sorted) before all the values."""
    if not codec.is_map:
        yield from codec.iter_refs(value, True)
        return
    key, val = codec.key, codec.value
    if key.ref_table is not None and key.ref_type == "strong":
        for k, _ in value:
            yield key.ref_table, k
    if val.ref_table is not None and val.ref_type == "strong":
        for _, v in value:
            yield val.ref_table, v


_HANDLERS: dict[str, Callable[[Transaction, _OpParser], Any]] = {
    "insert": Transaction._op_insert,
    "select": Transaction._op_select,
    "update": Transaction._op_update,
    "mutate": Transaction._op_mutate,
    "delete": Transaction._op_delete,
    "wait": Transaction._op_wait,
    "commit": Transaction._op_commit,
    "abort": Transaction._op_abort,
    "comment": Transaction._op_comment,
    "assert": Transaction._op_assert,
}


def _english_join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    if len(items) == 2:
        return f"{items[0]} and {items[1]}"
    return ", ".join(items[:-1]) + f", and {items[-1]}"



def execute(
    db: Database,
    ops: list[Any],
    *,
    now: float = 0.0,
    started: float | None = None,
    owns_lock: Callable[[str], bool] | None = None,
    read_only_reason: str | None = None,
) -> Committed | Failed | Blocked:
    """Execute `ops` (the transact params after the database name) against `db`."""
    return Transaction(
        db, ops, now=now, started=started, owns_lock=owns_lock,
        read_only_reason=read_only_reason,
    ).execute()
