"""IDL transactions: changes written against the replica, turned into one `transact`.

Rules kept here:
- Writes are recorded, not applied: the replica changes only when the server's update
  for the committed transaction arrives (before its reply), so after a successful
  commit the replica already shows the transaction's effects.
- A write of a column's current value produces no operation when the column is
  write-only (monitored without alerts) or write-changed-only; other columns are
  written anyway, keeping the transaction's atomicity (`ovsdb-idl`'s rule). A
  transaction with nothing to send is not sent and reports UNCHANGED.
- `verify(row, column)` adds a `wait` that fails, making the result TRY_AGAIN, if the
  column changed on the server since it was read.
- Partial set/map mutations (`add`, `remove`, `set_key`, `del_key`) become `mutate`
  operations, so concurrent writers of other elements do not conflict.
- Rows of non-root tables are not deleted explicitly: the server collects them once
  nothing references them, as the real IDL relies on.
- An IDL that wants a lock asserts it first in every transaction it sends.
- Increments are a `mutate` then a `select` of the new value; their results are read
  by position, so every operation's position is fixed before they are counted.
- Values written are converted to the canonical form only to compare them with the
  current ones and to encode them; checking their types is left to the server.
- A write to a row that the server deleted meanwhile makes the result TRY_AGAIN.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from uuid import UUID

from ..ovsdb.datum import is_uuid_string
from .replica import PLAIN_ATOMS
from .row import IdlRow

if TYPE_CHECKING:
    from .idl import Idl

_names = itertools.count(1)


class Status(enum.Enum):
    UNCHANGED = "unchanged"
    SUCCESS = "success"
    TRY_AGAIN = "try again"
    NOT_LOCKED = "not locked"
    ERROR = "error"


class TxnError(Exception):
    def __init__(self, result: Result) -> None:
        super().__init__(f"transaction failed: {result.status.value}: {result.error}")
        self.result = result


class Result:
    """How a commit ended: SUCCESS, UNCHANGED (nothing to send), TRY_AGAIN (a verified
    column changed, a written row was deleted meanwhile, or the connection was lost:
    the outcome is unknown), NOT_LOCKED, or ERROR with the
    server's error (`error`) and every operation's result (`results`)."""

    def __init__(self, status: Status, *, error: Any = None, results: list[Any] | None = None,
                 uuids: dict[str, str] | None = None,
                 increments: dict[int, int] | None = None) -> None:
        self.status = status
        self.error = error
        self.results = results or []
        self.uuids = uuids or {}
        self.increments = increments or {}

    @property
    def ok(self) -> bool:
        return self.status in (Status.SUCCESS, Status.UNCHANGED)

    def uuid_of(self, ref: NewRow) -> UUID | None:
        u = self.uuids.get(ref.name)
        return UUID(u) if u is not None else None

    def __repr__(self) -> str:
        return f"Result({self.status.value}, error={self.error!r})"


class NewRow:
    """A row inserted by a transaction; usable as a reference in the same transaction."""

    __slots__ = ("fixed_uuid", "name", "table", "values")

    def __init__(self, table: str, values: dict[str, Any], fixed_uuid: str | None) -> None:
        self.table = table
        self.name = f"row{next(_names)}"
        self.values = values
        self.fixed_uuid = fixed_uuid

    def __repr__(self) -> str:
        return f"<new {self.table} {self.name}>"


RowRef = IdlRow | NewRow | UUID | str


class Transaction:
    """Changes to commit together: `insert` (returns a `NewRow` usable as a reference
    in the same transaction), `update`, `delete`, partial mutations, `verify`,
    `increment`, `comment`; then `await commit()`. Build one per attempt: after
    TRY_AGAIN, build it again from the replica (`Idl.run` does)."""

    def __init__(self, idl: Idl) -> None:
        self.idl = idl
        self.inserts: list[NewRow] = []
        self.updates: dict[tuple[str, str], dict[str, Any]] = {}
        self.mutations: dict[tuple[str, str], list[list[Any]]] = {}
        self.deletes: dict[tuple[str, str], IdlRow] = {}
        self.verifies: dict[tuple[str, str], tuple[IdlRow, set[str]]] = {}
        self.increments: list[tuple[str, str, str]] = []
        self.comments: list[str] = []
        self.extra_ops: list[dict[str, Any]] = []
        self.committed = False
        self.result: Result | None = None
        self.request_bytes = 0  # size of the transact request sent, 0 if none was

    # -- building --------------------------------------------------------------------

    def insert(self, table: str, *, uuid: UUID | str | None = None, **values: Any) -> NewRow:
        self._table(table)
        fixed = str(uuid) if uuid is not None else None
        if fixed is not None and not is_uuid_string(fixed):
            raise ValueError(f"{uuid!r} is not a UUID")
        row = NewRow(table, values, fixed)
        self.inserts.append(row)
        return row

    def update(self, row: IdlRow | NewRow, **values: Any) -> None:
        """Write columns (Python values, as rows give them, or canonical ones)."""
        if isinstance(row, NewRow):
            row.values.update(values)
            return
        codecs = row.table.codecs
        for c in values:
            if c not in codecs:
                raise KeyError(f"table {row.table.name} has no replicated column {c}")
        key = (row.table.name, row.uuid)
        current = self.updates.get(key)
        if current is None:
            self.updates[key] = values
        else:
            current.update(values)

    def delete(self, row: IdlRow) -> None:
        self.deletes[(row.table.name, row.uuid)] = row

    def verify(self, row: IdlRow, *columns: str) -> None:
        entry = self.verifies.setdefault((row.table.name, row.uuid), (row, set()))
        entry[1].update(columns)

    def add(self, row: IdlRow, column: str, *elements: Any) -> None:
        """Insert elements into a set column without rewriting it."""
        self._mutate(row, column, "insert", elements)

    def remove(self, row: IdlRow, column: str, *elements: Any) -> None:
        self._mutate(row, column, "delete", elements)

    def set_key(self, row: IdlRow, column: str, key: Any, value: Any) -> None:
        """Set one map key: delete the old pair, insert the new one, in one operation."""
        codec = row.table.codecs[column]
        self.mutations.setdefault((row.table.name, row.uuid), []).extend([
            [column, "delete", ["set", [_atom(codec.key_type, key)]]],
            [column, "insert", ["map", [[_atom(codec.key_type, key),
                                         _atom(codec.value_type, value)]]]],
        ])

    def del_key(self, row: IdlRow, column: str, *keys: Any) -> None:
        codec = row.table.codecs[column]
        self.mutations.setdefault((row.table.name, row.uuid), []).append(
            [column, "delete", ["set", [_atom(codec.key_type, k) for k in keys]]])

    def increment(self, row: IdlRow, column: str) -> int:
        """Add 1 on the server; the new value is in the result's `increments`."""
        self.increments.append((row.table.name, row.uuid, column))
        return len(self.increments) - 1

    def comment(self, text: str) -> None:
        self.comments.append(text)

    def add_op(self, op: dict[str, Any]) -> None:
        """A raw operation, sent as is after the generated ones."""
        self.extra_ops.append(op)

    # -- encoding ----------------------------------------------------------------------

    def _table(self, name: str) -> Any:
        table = self.idl.replica.tables.get(name)
        if table is None:
            raise KeyError(f"table {name} is not replicated")
        return table

    def _mutate(self, row: IdlRow, column: str, mutator: str, elements: Any) -> None:
        codec = row.table.codecs[column]
        if codec.is_map:
            arg: Any = ["map", [[_atom(codec.key_type, k), _atom(codec.value_type, v)]
                                for e in elements for k, v in dict(e).items()]]
        else:
            arg = ["set", [_atom(codec.key_type, e) for e in elements]]
        self.mutations.setdefault((row.table.name, row.uuid), []).append([column, mutator, arg])

    def encode(self, table: Any, column: str, value: Any) -> Any:
        """A Python value (as `IdlRow` returns them, or canonical) to its JSON datum."""
        return _encoder(table.codecs[column])(value)

    def canonical(self, table: Any, column: str, value: Any) -> Any:
        """The stored form a write would produce, to compare with the current value
        (never equal if it names a row inserted by this transaction)."""
        try:
            return table.converters[column](value)
        except (TypeError, ValueError, AttributeError):
            return _NEVER_EQUAL

    def ops(self) -> tuple[list[dict[str, Any]], list[int]]:
        """The operations to send (empty if nothing would change) and the positions of
        the increment selects."""
        idl = self.idl
        ops: list[dict[str, Any]] = []
        for (tname, uuid), (vrow, cols) in self.verifies.items():
            ops.append({"op": "wait", "table": tname, "timeout": 0,
                        "where": [["_uuid", "==", ["uuid", uuid]]],
                        "columns": sorted(cols), "until": "==",
                        "rows": [{c: vrow.table.codecs[c].to_json(vrow.value(c))
                                  for c in sorted(cols)}]})
        changing = bool(self.extra_ops)
        # Per table, each column's encoder, looked up once per column, not per value.
        encoders: dict[str, dict[str, Callable[[Any], Any]]] = {}
        for new in self.inserts:
            enc = encoders.get(new.table)
            if enc is None:
                codecs = self._table(new.table).codecs
                enc = encoders[new.table] = {c: _encoder(codec) for c, codec in codecs.items()}
            op: dict[str, Any] = {"op": "insert", "table": new.table, "uuid-name": new.name,
                                  "row": {c: enc[c](v) for c, v in new.values.items()}}
            if new.fixed_uuid is not None:
                op["uuid"] = new.fixed_uuid
            ops.append(op)
            changing = True
        skips: dict[tuple[str, str], bool] = {}
        for (tname, uuid), values in self.updates.items():
            if (tname, uuid) in self.deletes:
                continue
            table = self._table(tname)
            converters, codecs, positions = table.converters, table.codecs, table.col_index
            current = table.rows.get(uuid)
            values_now = current._values if current is not None else None
            row: dict[str, Any] = {}
            any_change = False
            for c, v in values.items():
                try:
                    new_value = converters[c](v)
                except (TypeError, ValueError, AttributeError):
                    row[c] = self.encode(table, c, v)  # a named row, or bad: the server says
                    any_change = True
                    continue
                i = positions.get(c)
                if values_now is not None and i is not None and values_now[i] == new_value:
                    skip = skips.get((tname, c))
                    if skip is None:
                        skip = skips[(tname, c)] = idl.skips_unchanged(tname, c)
                    if skip:
                        continue
                else:
                    any_change = True
                row[c] = codecs[c].to_json(new_value)
            if row:
                ops.append({"op": "update", "table": tname,
                            "where": [["_uuid", "==", ["uuid", uuid]]], "row": row})
                changing = changing or any_change
        for (tname, uuid), muts in self.mutations.items():
            if (tname, uuid) in self.deletes:
                continue
            ops.append({"op": "mutate", "table": tname,
                        "where": [["_uuid", "==", ["uuid", uuid]]], "mutations": muts})
            changing = True
        for (tname, uuid), row_obj in self.deletes.items():
            if not row_obj.table.schema.is_root:
                continue  # left to garbage collection, as the real IDL does
            ops.append({"op": "delete", "table": tname,
                        "where": [["_uuid", "==", ["uuid", uuid]]]})
            changing = True
        if not changing and not self.increments:
            return [], []
        if idl.lock_name is not None:
            ops.insert(0, {"op": "assert", "lock": idl.lock_name})
        selects = []
        for tname, uuid, column in self.increments:
            where = [["_uuid", "==", ["uuid", uuid]]]
            ops.append({"op": "mutate", "table": tname, "where": where,
                        "mutations": [[column, "+=", 1]]})
            selects.append(len(ops))
            ops.append({"op": "select", "table": tname, "where": where, "columns": [column]})
        ops.extend(self.extra_ops)
        for text in self.comments:
            ops.append({"op": "comment", "comment": text})
        return ops, selects

    def forget_changes(self) -> None:
        """Drop the changes recorded, once sent: a committed transaction answers from
        its result alone (`inserted`), and cannot be sent again."""
        self.inserts, self.updates, self.mutations, self.deletes = [], {}, {}, {}
        self.verifies, self.increments, self.comments, self.extra_ops = {}, [], [], []

    async def commit(self) -> Result:
        """Send the transaction and wait until it committed (or failed): on success the
        replica already shows its effects."""
        if self.committed:
            raise RuntimeError("transaction already committed")
        self.committed = True
        self.result = await self.idl.commit_txn(self)
        return self.result

    def inserted(self, new: NewRow) -> IdlRow | None:
        """After a successful commit: the replica's row for `new` (None if the replica
        does not hold it, e.g. filtered out by a condition)."""
        if self.result is None:
            raise RuntimeError("transaction not committed")
        u = self.result.uuids.get(new.name) or new.fixed_uuid
        table = self.idl.replica.tables.get(new.table)
        return table.rows.get(u) if table is not None and u else None

    async def commit_or_raise(self) -> Result:
        result = await self.commit()
        if not result.ok:
            raise TxnError(result)
        return result


class _NeverEqual:
    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = None  # type: ignore[assignment]


_NEVER_EQUAL = _NeverEqual()


def _atom(atype: str | None, value: Any) -> Any:
    if atype == "uuid":
        if isinstance(value, NewRow):
            # A fixed uuid is referred to as such: servers do not bind the row's
            # uuid-name to it.
            if value.fixed_uuid is not None:
                return ["uuid", value.fixed_uuid]
            return ["named-uuid", value.name]
        if isinstance(value, IdlRow):
            return ["uuid", value.uuid]
        return ["uuid", str(value)]
    if atype == "real" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


# Column type (key type, value type, map, scalar) -> its encoder (`_encoder`).
_ENCODERS: dict[tuple[str | None, str | None, bool, bool], Callable[[Any], Any]] = {}


def _encoder(codec: Any) -> Callable[[Any], Any]:
    """The function that writes a column's Python value (as `IdlRow` returns them, or
    canonical) as its JSON datum: one per column type, its branches taken once."""
    kt, vt = codec.key_type, codec.value_type
    key = (kt, vt, codec.is_map, codec.is_scalar)
    found = _ENCODERS.get(key)
    if found is None:
        found = _ENCODERS[key] = _make_encoder(kt, vt, codec.is_map, codec.is_scalar)
    return found


def _make_encoder(kt: str | None, vt: str | None, is_map: bool, is_scalar: bool
                  ) -> Callable[[Any], Any]:
    if is_map:
        if kt in PLAIN_ATOMS and vt in PLAIN_ATOMS:
            def plain_map(value: Any) -> Any:
                pairs = value.items() if isinstance(value, dict) else value
                return ["map", [[k, v] for k, v in pairs]]
            return plain_map

        def any_map(value: Any) -> Any:
            pairs = value.items() if isinstance(value, dict) else value
            return ["map", [[_atom(kt, k), _atom(vt, v)] for k, v in pairs]]
        return any_map
    if is_scalar:
        if kt in PLAIN_ATOMS:
            return _as_is

        def scalar(value: Any) -> Any:
            return _atom(kt, value)
        return scalar

    def any_set(value: Any) -> Any:
        if value is None:
            return ["set", []]
        if isinstance(value, (list, tuple, set, frozenset)):
            return ["set", [_atom(kt, v) for v in value]]
        return _atom(kt, value)
    return any_set


def _as_is(value: Any) -> Any:
    return value

