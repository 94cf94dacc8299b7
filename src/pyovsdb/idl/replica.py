"""The client's replica of a database: the rows a monitor delivers, kept up to date from
update notifications, with every batch of changes recorded as a changeset.

Rules kept here:
- Pure: no sockets, no clock. Input is the JSON of monitor replies and notifications
  (update for v1, update2/update3 for v2/v3), row by row as the framer hands it over
  (`Batch`), or whole; output is a `Changeset` per batch, whose rows are the replica's
  own immutable rows, so tracking changes copies nothing.
- A batch (one reply or notification) is atomic: its rows are converted as they
  arrive, against the replica as it was before the batch, and applied together by
  `commit`. Readers never see half a batch.
- Only registered tables and columns are held; a row's unmonitored columns are absent.
- Values from the server are trusted: they are converted to the canonical forms of
  `ovsdb.datum` without re-validating constraints, which is the expensive part of
  parsing and the server already did it.
- Memory: a row's values are one tuple (`row.IdlRow`); map keys, short strings,
  uuids, one-atom sets and map pairs that repeat are stored once (interned), since a
  replica repeats the same few values (enum strings, external_ids keys, references)
  across rows.
- Secondary indexes, on one or more columns, are kept consistent with every batch.
- A full resync (a monitor reply that replaces everything) is recorded as the
  difference between the old and the new contents, so tracked changes after a
  reconnection are exactly what changed while the client was away; rows that did not
  change keep their identity.
- A "modify" for a row the replica does not hold means the replica is out of step with
  the server: the batch is marked `inconsistent` (its owner resyncs from scratch).
"""

from __future__ import annotations

import sys
import uuid as uuidlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..ovsdb.changeset import Changeset, RowChange
from ..ovsdb.datum import Codec, is_uuid_string
from ..ovsdb.schema import DatabaseSchema, TableSchema
from ..ovsdb.types import BOOLEAN, INTEGER, REAL, STRING, UUID
from .row import IdlRow, row_class

Parser = Callable[[Any], Any]

_intern = sys.intern
SHORT = 16  # strings up to this length are interned: enums, keys, small values


# -- from the wire --------------------------------------------------------------------------


def _atom_parser(atype: str) -> Parser | None:
    """None where the JSON value is already the atom (integers, booleans)."""
    if atype == UUID:
        return lambda j: _intern(j[1])
    if atype == REAL:
        return float
    if atype == STRING:
        return lambda s: _intern(s) if len(s) <= SHORT else s
    return None


def wire_parser(codec: Codec) -> Parser:
    """A converter from the server's JSON for a column (a value, or a diff of one) to
    its canonical datum, interning what repeats."""
    kp = _atom_parser(codec.key_type)
    if codec.is_scalar:
        return kp if kp is not None else _identity
    if codec.is_map:
        return _map_parser(codec)
    ones: dict[Any, tuple[Any, ...]] = {}

    def parse_set(j: Any) -> Any:
        if type(j) is list:
            if j[0] == "set":
                elems = j[1]
                if not elems:
                    return ()
                if kp is not None:
                    elems = [kp(e) for e in elems]
                if len(elems) > 1:
                    return tuple(sorted(elems))
                j = elems[0]
            else:
                j = kp(j)  # type: ignore[misc]  # a bare ["uuid", ...]
        elif kp is not None:
            j = kp(j)
        one = ones.get(j)
        if one is None:
            one = (j,)
            if len(ones) < MAX_SHARED:
                ones[j] = one
        return one

    return parse_set


MAX_SHARED = 4096  # distinct one-element sets, or pairs per map key, kept for sharing


def _map_parser(codec: Codec) -> Parser:
    kt, vt = codec.key_type, codec.value_type
    kp = None if kt == STRING else _atom_parser(kt)  # string keys are looked up raw
    vp = None if vt == STRING else _atom_parser(vt)  # type: ignore[arg-type]
    # Per key: a dict value -> shared pair while the key has few distinct values
    # (enum-like), else the key itself (values too varied to share: only the key is).
    keys: dict[Any, dict[Any, tuple[Any, Any]] | Any] = {}

    def new_pair(k: Any, v: Any) -> tuple[Any, Any]:
        if type(k) is str:
            k = _intern(k)
        shared = keys.get(k)
        if shared is None:
            if len(keys) >= MAX_SHARED:
                return (k, v)
            shared = keys[k] = {}
        if type(shared) is not dict:
            return (shared, v)
        if len(shared) >= MAX_SHARED:
            keys[k] = k
            return (k, v)
        pair = shared[v] = (k, v)
        return pair

    def parse_map(j: Any) -> Any:
        items = j[1]
        if not items:
            return ()
        out: list[tuple[Any, Any]] = []
        append = out.append
        for k, v in items:
            if kp is not None:
                k = kp(k)
            if vp is not None:
                v = vp(v)
            shared = keys.get(k)
            if shared is None:
                append(new_pair(k, v))
            elif type(shared) is dict:
                pair = shared.get(v)
                append(pair if pair is not None else new_pair(k, v))
            else:
                append((shared, v))
        if len(out) > 1:
            out.sort()
        return tuple(out)

    return parse_map


def _identity(j: Any) -> Any:
    return j


# -- from Python values -------------------------------------------------------------------

PLAIN_ATOMS = (STRING, INTEGER, BOOLEAN)  # atom types whose Python value is the atom


def _atom_converter(atype: str) -> Callable[[Any], Any]:
    """Python value -> canonical atom, for writes and index lookups."""
    if atype == UUID:
        def uuid_atom(v: Any) -> str:
            if isinstance(v, IdlRow):
                return v.uuid
            if isinstance(v, uuidlib.UUID):
                return str(v)
            if is_uuid_string(v):
                return str(v).lower()
            raise TypeError(f"{v!r} is not a row or UUID")
        return uuid_atom
    if atype == REAL:
        def real_atom(v: Any) -> float:
            if type(v) in (int, float):
                return float(v)
            raise TypeError(f"{v!r} is not a real")
        return real_atom
    expected = {INTEGER: int, BOOLEAN: bool, STRING: str}[atype]

    def atom(v: Any) -> Any:
        if type(v) is expected or (expected is int and isinstance(v, int)):
            return v
        raise TypeError(f"{v!r} is not a {atype}")
    return atom


def python_converter(codec: Codec) -> Callable[[Any], Any]:
    """Python value (as rows give them, or canonical) -> canonical datum. Sets take any
    iterable of atoms, a single atom, or None (empty); maps a dict or pairs."""
    kc = _atom_converter(codec.key_type)
    if codec.is_scalar:
        if codec.key_type in (STRING, INTEGER):
            t = str if codec.key_type == STRING else int

            def fast(v: Any) -> Any:
                return v if type(v) is t else kc(v)
            return fast
        return kc
    plain_key = codec.key_type in PLAIN_ATOMS
    if codec.is_map:
        vc = _atom_converter(codec.value_type)  # type: ignore[arg-type]
        if plain_key and codec.value_type in PLAIN_ATOMS:
            # Nothing to convert: the atoms are the Python values (their types are
            # the server's to check, as for every write).
            def plain_map(v: Any) -> Any:
                d = v if type(v) is dict else dict(v.items() if isinstance(v, Mapping) else v)
                return tuple(sorted(d.items()))
            return plain_map

        def to_map(v: Any) -> Any:
            items = v.items() if isinstance(v, Mapping) else v
            d = {kc(k): vc(x) for k, x in items}
            return tuple(sorted(d.items()))
        return to_map
    if plain_key:
        def plain_set(v: Any) -> Any:
            if v is None:
                return ()
            if isinstance(v, (list, tuple, set, frozenset)):
                return tuple(v) if len(v) == 1 else tuple(sorted(set(v)))
            return (v,)
        return plain_set

    def to_set(v: Any) -> Any:
        if v is None:
            return ()
        if isinstance(v, (list, tuple, set, frozenset)):
            if len(v) == 1:
                return (kc(next(iter(v))),)
            return tuple(sorted({kc(a) for a in v}))
        return (kc(v),)
    return to_set


# -- indexes --------------------------------------------------------------------------------


class Index:
    """Rows by the values of one or more columns (not unique: a key maps to rows)."""

    __slots__ = ("columns", "converters", "entries", "positions")

    def __init__(self, columns: tuple[str, ...], positions: tuple[int, ...],
                 converters: tuple[Callable[[Any], Any], ...] = ()) -> None:
        self.columns = columns
        self.positions = positions
        self.converters = converters
        self.entries: dict[tuple[Any, ...], dict[str, IdlRow]] = {}

    def key(self, row: IdlRow) -> tuple[Any, ...]:
        values = row._values
        return tuple([values[i] for i in self.positions])

    def add(self, row: IdlRow) -> None:
        k = self.key(row)
        rows = self.entries.get(k)
        if rows is None:
            self.entries[k] = {row.uuid: row}
        else:
            rows[row.uuid] = row

    def remove(self, row: IdlRow) -> None:
        k = self.key(row)
        rows = self.entries.get(k)
        if rows is not None:
            rows.pop(row.uuid, None)
            if not rows:
                del self.entries[k]

    def find(self, *values: Any) -> list[IdlRow]:
        """Rows whose indexed columns hold `values` (Python values as rows give them,
        e.g. "sw0", a row or UUID, a list for a set, or canonical datums)."""
        if len(values) != len(self.columns):
            raise TypeError(f"index on {self.columns} takes {len(self.columns)} values")
        if self.converters:
            values = tuple(conv(v) for conv, v in zip(self.converters, values, strict=True))
        return list(self.entries.get(values, {}).values())

    def find_one(self, *values: Any) -> IdlRow | None:
        rows = self.find(*values)
        return rows[0] if rows else None

    def clear(self) -> None:
        self.entries.clear()


# -- tables ---------------------------------------------------------------------------------


class ReplicaTable:
    def __init__(self, schema: TableSchema, columns: Iterable[str] | None,
                 on_demand: Iterable[str] = ()) -> None:
        self.schema = schema
        self.name = schema.name
        cols = list(schema.columns) if columns is None else list(dict.fromkeys(columns))
        for c in [*cols, *on_demand]:
            if c not in schema.columns:
                raise KeyError(f"table {self.name} has no column {c}")
        self.columns = cols
        # A row's values are a tuple in this order (see `row.IdlRow`).
        self.col_index = {c: i for i, c in enumerate(cols)}
        self.on_demand = frozenset(on_demand)
        every = [*cols, *(c for c in on_demand if c not in cols)]
        self.codecs = {c: schema.columns[c].type.codec for c in every}
        self.parsers = {c: wire_parser(self.codecs[c]) for c in cols}
        # Position and parser of each replicated column, in one lookup.
        self._slots = {c: (i, self.parsers[c]) for i, c in enumerate(cols)}
        self._diffing = tuple(self.codecs[c].max != 1 for c in cols)
        self._codec_list = tuple(self.codecs[c] for c in cols)
        # On-demand columns are parsed when fetched.
        self.demand_parsers = {c: wire_parser(self.codecs[c]) for c in on_demand}
        self.converters = {c: python_converter(self.codecs[c]) for c in every}
        self.defaults = {c: self.codecs[c].default for c in cols}
        self.default_values = tuple(self.defaults.values())
        self.rows: dict[str, IdlRow] = {}
        self.indexes: dict[str, Index] = {}
        # Values of on-demand columns fetched so far, by row uuid.
        self.fetched: dict[str, dict[str, Any]] = {}
        self.replica: Replica | None = None
        self.row_class = row_class(self)

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Any:
        return iter(list(self.rows.values()))

    def get(self, uuid: Any) -> IdlRow | None:
        return self.rows.get(str(uuid))

    def add_index(self, name: str, *columns: str) -> Index:
        for c in columns:
            if c not in self.col_index:
                raise KeyError(f"column {c} of {self.name} is not replicated")
        idx = Index(tuple(columns), tuple(self.col_index[c] for c in columns),
                    tuple(self.converters[c] for c in columns))
        for row in self.rows.values():
            idx.add(row)
        self.indexes[name] = idx
        return idx

    def index(self, name: str) -> Index:
        return self.indexes[name]

    def canonical(self, column: str, value: Any) -> Any:
        return self.converters[column](value)

    # -- building rows from the wire ---------------------------------------------------

    def row_from_json(self, uuid: str, json: dict[str, Any]) -> IdlRow:
        values = list(self.default_values)
        slots = self._slots
        version = ""
        for c, v in json.items():
            slot = slots.get(c)
            if slot is not None:
                values[slot[0]] = slot[1](v)
            elif c == "_version":
                version = v[1]
        return self.row_class(uuid, tuple(values), version, self)

    def modified(self, old: IdlRow, diff: dict[str, Any]) -> IdlRow:
        """update2 "modify": per-column diffs."""
        values = list(old._values)
        slots = self._slots
        version = old.version
        for c, v in diff.items():
            slot = slots.get(c)
            if slot is None:
                if c == "_version":
                    version = v[1]
                continue
            i, parse = slot
            if self._diffing[i]:
                values[i] = self._codec_list[i].apply_diff(values[i], parse(v))
            else:
                values[i] = parse(v)
        return self.row_class(old.uuid, tuple(values), version, self)

    def replaced(self, old: IdlRow, new_json: dict[str, Any]) -> IdlRow:
        """update (v1) "new": the row's columns in full."""
        values = list(old._values)
        slots = self._slots
        version = old.version
        for c, v in new_json.items():
            slot = slots.get(c)
            if slot is not None:
                values[slot[0]] = slot[1](v)
            elif c == "_version":
                version = v[1]
        return self.row_class(old.uuid, tuple(values), version, self)

    # -- keeping rows and indexes ------------------------------------------------------

    def put(self, row: IdlRow, old: IdlRow | None) -> None:
        if old is not None:
            for idx in self.indexes.values():
                idx.remove(old)
        self.rows[row.uuid] = row
        for idx in self.indexes.values():
            idx.add(row)

    def drop(self, uuid: str) -> IdlRow | None:
        old = self.rows.pop(uuid, None)
        if old is not None:
            for idx in self.indexes.values():
                idx.remove(old)
        self.fetched.pop(uuid, None)
        return old


# -- the replica and its batches ------------------------------------------------------------


class Replica:
    def __init__(self, schema: DatabaseSchema,
                 tables: dict[str, Iterable[str] | None] | None = None,
                 on_demand: dict[str, Iterable[str]] | None = None) -> None:
        self.schema = schema
        wanted = tables if tables is not None else {t: None for t in schema.tables}
        on_demand = on_demand or {}
        self.tables: dict[str, ReplicaTable] = {}
        for tname, cols in wanted.items():
            ts = schema.tables.get(tname)
            if ts is None:
                raise KeyError(f"database {schema.name} has no table {tname}")
            t = self.tables[tname] = ReplicaTable(ts, cols, on_demand.get(tname, ()))
            t.replica = self

    def __getitem__(self, name: str) -> ReplicaTable:
        return self.tables[name]

    def n_rows(self) -> int:
        return sum(len(t.rows) for t in self.tables.values())

    def batch(self, version: int = 2, *, replace: bool = False, index: int | None = None,
              on_header: Callable[[Batch, list[Any]], bool] | None = None) -> Batch:
        return Batch(self, version, replace=replace, index=index, on_header=on_header)

    # -- whole messages ----------------------------------------------------------------

    def apply_update2(self, updates: dict[str, Any]) -> Changeset[IdlRow]:
        """Apply table-updates2 (update2/update3, monitor_cond replies)."""
        b = self.batch(2)
        b.add_all(updates)
        return b.commit()

    def apply_update1(self, updates: dict[str, Any]) -> Changeset[IdlRow]:
        """Apply table-updates of the original `monitor` (rows with "old"/"new")."""
        b = self.batch(1)
        b.add_all(updates)
        return b.commit()

    def replace_all(self, initial: dict[str, Any], version: int) -> Changeset[IdlRow]:
        """Replace the whole contents with a monitor reply; the changeset records only
        what differs from before."""
        b = self.batch(version, replace=True)
        b.add_all(initial)
        return b.commit()

    def clear(self) -> Changeset[IdlRow]:
        out: dict[str, dict[str, RowChange[IdlRow]]] = {}
        for tname, table in self.tables.items():
            if table.rows:
                out[tname] = {u: RowChange(u, r, None) for u, r in table.rows.items()}
            table.rows = {}
            table.fetched.clear()
            for idx in table.indexes.values():
                idx.clear()
        return Changeset(out)


class Batch:
    """The row updates of one message (see the module rules). Also a `RowSink` for the
    framer: `index` says where the table-updates sit in the message's array, and
    `on_header` may veto streaming (or learn, say, monitor_cond_since's "found")."""

    __slots__ = ("_new_rows", "changes", "inconsistent", "index", "on_header", "replace",
                 "replica", "version")

    def __init__(self, replica: Replica, version: int = 2, *, replace: bool = False,
                 index: int | None = None,
                 on_header: Callable[[Batch, list[Any]], bool] | None = None) -> None:
        self.replica = replica
        self.version = version
        self.replace = replace
        self.index = index
        self.on_header = on_header
        self.changes: dict[str, dict[str, RowChange[IdlRow]]] = {}
        self._new_rows: dict[str, dict[str, IdlRow]] = {}
        self.inconsistent: str | None = None

    def start(self, header: list[Any]) -> bool:
        return self.on_header(self, header) if self.on_header is not None else True

    def add_all(self, updates: dict[str, Any]) -> None:
        for tname, rows in updates.items():
            self.add_rows(tname, rows)

    def add_rows(self, tname: str, rows: dict[str, Any]) -> None:
        """Several rows of one table (the framer hands them over by the hundred)."""
        table = self.replica.tables.get(tname)
        if table is None:
            return
        if self.replace and self.version == 2 and not table.rows:
            # An initial load: nothing to compare with, every row is new.
            new_rows = self._new_rows.get(tname)
            if new_rows is None:
                new_rows = self._new_rows[tname] = {}
            build = table.row_from_json
            for uuid, upd in rows.items():
                body = upd.get("initial")
                if body is None:
                    body = upd.get("insert")
                    if body is None:
                        continue  # "delete": not in a full reply
                new_rows[uuid] = build(uuid, body)
            return
        row = self.row
        for uuid, upd in rows.items():
            row(tname, uuid, upd)

    def row(self, tname: str, uuid: str, upd: Any) -> None:
        table = self.replica.tables.get(tname)
        if table is None:
            return
        if self.version == 1:
            new_json = upd.get("new")
            kind = "delete" if new_json is None else "new"
            body = new_json
        else:
            ((kind, body),) = upd.items()
        if self.replace:
            if kind == "delete":
                return
            fresh = table.row_from_json(uuid, body)
            current = table.rows.get(uuid)
            if current is not None and current._values == fresh._values:
                fresh = current  # unchanged: keep the row (and its identity)
            rows = self._new_rows.get(tname)
            if rows is None:
                rows = self._new_rows[tname] = {}
            rows[uuid] = fresh
            return
        changes = self.changes.get(tname)
        if changes is None:
            changes = self.changes[tname] = {}
        prev = changes.get(uuid)
        old = prev.old if prev is not None else table.rows.get(uuid)
        base = prev.new if prev is not None else old
        new: IdlRow | None
        if kind == "delete":
            if base is None:
                return
            new = None
        elif kind == "modify":
            if base is None:
                self.inconsistent = f"modify of {tname} row {uuid}, which is not replicated"
                return
            new = table.modified(base, body)
        elif kind == "new":  # v1: full values of the row's columns
            new = (table.replaced(base, body) if base is not None
                   else table.row_from_json(uuid, body))
        else:  # "initial", "insert"
            new = table.row_from_json(uuid, body)
        if old is None and new is None:
            changes.pop(uuid, None)
        else:
            changes[uuid] = RowChange(uuid, old, new)

    def commit(self) -> Changeset[IdlRow]:
        """Apply the batch to the replica; the changeset of what it changed."""
        if self.replace:
            return self._commit_replace()
        out: dict[str, dict[str, RowChange[IdlRow]]] = {}
        tables = self.replica.tables
        for tname, changes in self.changes.items():
            if not changes:
                continue
            table = tables[tname]
            indexes = table.indexes.values()
            rows = table.rows
            for uuid, ch in changes.items():
                cur = rows.get(uuid)
                new = ch.new
                for idx in indexes:
                    if cur is not None:
                        idx.remove(cur)
                    if new is not None:
                        idx.add(new)
                if new is None:
                    rows.pop(uuid, None)
                    table.fetched.pop(uuid, None)
                else:
                    rows[uuid] = new
            out[tname] = changes
        return Changeset(out)

    def _commit_replace(self) -> Changeset[IdlRow]:
        out: dict[str, dict[str, RowChange[IdlRow]]] = {}
        for tname, table in self.replica.tables.items():
            new_rows = self._new_rows.pop(tname, None) or {}
            old_rows = table.rows
            changes: dict[str, RowChange[IdlRow]] = {}
            if old_rows:
                for uuid, new in new_rows.items():
                    old = old_rows.get(uuid)
                    if old is not new:
                        changes[uuid] = RowChange(uuid, old, new)
                for uuid, old in old_rows.items():
                    if uuid not in new_rows:
                        changes[uuid] = RowChange(uuid, old, None)
                        table.fetched.pop(uuid, None)
            else:
                changes = {uuid: RowChange(uuid, None, new) for uuid, new in new_rows.items()}
            table.rows = new_rows
            if table.indexes:
                if len(changes) * 2 > len(new_rows):
                    for idx in table.indexes.values():
                        idx.clear()
                        for row in new_rows.values():
                            idx.add(row)
                else:
                    for ch in changes.values():
                        for idx in table.indexes.values():
                            if ch.old is not None:
                                idx.remove(ch.old)
                            if ch.new is not None:
                                idx.add(ch.new)
            if changes:
                out[tname] = changes
        return Changeset(out)
