"""The in-memory database: committed rows per table, with the derived state that makes
transactions cheap to check.

Rules kept here:
- Rows change only through `apply(changeset)`; nothing else mutates a table, so the
  derived state below can never drift from the rows.
- Derived state, kept up to date by `apply`:
  * per schema index, a map from the indexed values to the row holding them;
  * per row, the number of strong references to it (`n_refs`, absent means zero);
  * per row, the rows that weakly reference it (`weak_refs_in`), so deleting it can
    find the references that must vanish without scanning the database.
- The database knows nothing of files, sockets, clocks or randomness; `changes_seqno`
  counts the changesets applied, for whoever wants to know that something changed.
  The UUIDs of new rows and their `_version`s come from the two sources its owner
  passes (`ids`); left out, they are seeded streams, so a database built without them
  behaves the same on every run (the server always passes its fast random ones).
"""

from __future__ import annotations

from typing import Any

from .changeset import Changeset
from .ids import SeededUuids, UuidSource
from .row import Row
from .schema import DatabaseSchema, TableSchema


class Table:
    __slots__ = ("indexes", "n_refs", "name", "rows", "schema", "weak_refs_in")

    def __init__(self, schema: TableSchema) -> None:
        self.schema = schema
        self.name = schema.name
        self.rows: dict[str, Row] = {}
        self.indexes: list[dict[tuple[Any, ...], str]] = [{} for _ in schema.indexes]
        self.n_refs: dict[str, int] = {}
        # target uuid -> {(src table, src uuid): number of weak refs}
        self.weak_refs_in: dict[str, dict[tuple[str, str], int]] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def index_key(self, i: int, data: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(data[c] for c in self.schema.indexes[i])


class Database:
    __slots__ = ("changes_seqno", "n_rows_total", "name", "new_uuid", "new_version", "schema",
                 "tables")

    def __init__(
        self,
        schema: DatabaseSchema,
        *,
        uuids: UuidSource | None = None,
        versions: UuidSource | None = None,
    ) -> None:
        self.schema = schema
        # Called for every inserted row (and named-uuid symbol) / every new row version.
        self.new_uuid: UuidSource = uuids if uuids is not None else SeededUuids(0)
        self.new_version: UuidSource = versions if versions is not None else SeededUuids(1)
        self.name = schema.name
        self.tables: dict[str, Table] = {n: Table(ts) for n, ts in schema.tables.items()}
        self.changes_seqno = 0
        self.n_rows_total = 0

    def n_rows(self) -> int:
        return self.n_rows_total

    def apply(self, cs: Changeset) -> None:
        """Make a checked changeset the committed state."""
        tables = self.tables
        for tname, changes in cs.tables.items():
            table = tables[tname]
            rows = table.rows
            ts = table.schema
            has_indexes = bool(ts.indexes)
            ref_cols = ts.ref_columns
            for uuid, ch in changes.items():
                old, new = ch.old, ch.new
                if has_indexes:
                    for i, idx in enumerate(table.indexes):
                        if old is not None:
                            k = table.index_key(i, old.data)
                            if idx.get(k) == uuid:
                                del idx[k]
                        if new is not None:
                            idx[table.index_key(i, new.data)] = uuid
                if ref_cols:
                    self._update_refs(tname, uuid, ref_cols, old, new)
                if new is None:
                    if rows.pop(uuid, None) is not None:
                        self.n_rows_total -= 1
                    table.n_refs.pop(uuid, None)
                else:
                    if old is None:
                        self.n_rows_total += 1
                    rows[uuid] = new
        self.changes_seqno += 1

    def _update_refs(
        self, tname: str, uuid: str, ref_cols: list[Any], old: Row | None, new: Row | None
    ) -> None:
        tables = self.tables
        src = (tname, uuid)
        for col in ref_cols:
            codec = col.type.codec
            ov = old.data[col.name] if old is not None else None
            nv = new.data[col.name] if new is not None else None
            if (not ov and not nv) or (old is not None and new is not None and ov == nv):
                continue
            if ov and nv and not codec.is_map and not codec.is_scalar:
                # A set changed: only the elements that left or came count (a port
                # group of a thousand ports gaining one is one reference, not 2,000).
                kept = set(ov).intersection(nv)
                ov = tuple(a for a in ov if a not in kept)
                nv = tuple(a for a in nv if a not in kept)
            if ov:
                for rt, target in codec.iter_refs(ov, True):
                    if target == uuid:
                        continue  # self-references do not count
                    nr = tables[rt].n_refs
                    c = nr.get(target, 0) - 1
                    if c > 0:
                        nr[target] = c
                    else:
                        nr.pop(target, None)
                for rt, target in codec.iter_refs(ov, False):
                    wr = tables[rt].weak_refs_in
                    srcs = wr.get(target)
                    if srcs is not None:
                        c = srcs.get(src, 0) - 1
                        if c > 0:
                            srcs[src] = c
                        else:
                            srcs.pop(src, None)
                            if not srcs:
                                del wr[target]
            if nv:
                for rt, target in codec.iter_refs(nv, True):
                    if target == uuid:
                        continue
                    nr = tables[rt].n_refs
                    nr[target] = nr.get(target, 0) + 1
                for rt, target in codec.iter_refs(nv, False):
                    srcs = tables[rt].weak_refs_in.setdefault(target, {})
                    srcs[src] = srcs.get(src, 0) + 1
