"""The operations of a plan (`sync.plan`) recorded in an IDL transaction.

Rules kept here:
- `apply` is the only function of the sync that touches an IDL object, and it only
  records writes in a transaction (no I/O).
- A large set column that changes in a few elements is written as a mutation of those
  (`_set_moved`), the rest as written values.
- An insert's references to rows the same plan inserts (`Insert.pending`) become those
  rows' handles; an insert with none is written as planned, its values not walked.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from ..idl.row import IdlRow
from ..idl.txn import NewRow, Transaction
from .sync import Insert, Op, Pending, Update

_NONE = object()

# A set column of at least this many elements whose change moves fewer than half of
# them is written as the elements added and taken away (`_set_moved`).
MUTATE_AT_LEAST = 16


def _set_moved(row: IdlRow, column: str, value: Any) -> tuple[list[Any], list[Any]] | None:
    """Of a set column (not a map) with many elements that `value` changes in few:
    the elements added and taken away, written as mutations, so a datapath group of a
    thousand switches that gains one sends one UUID, not a thousand (and a concurrent
    writer of other elements does not conflict). None: write the value whole."""
    codec = row.table.codecs[column]
    if codec.is_scalar or codec.is_map or not isinstance(value, (list, tuple)):
        return None
    current = row.value(column)
    if not isinstance(current, tuple) or len(current) < MUTATE_AT_LEAST:
        return None
    try:
        now = set(value)
    except TypeError:
        return None
    was = set(current)
    added = list(dict.fromkeys(v for v in value if v not in was))
    removed = sorted(was - now)
    if (len(added) + len(removed)) * 2 >= len(current):
        return None
    return added, removed


def apply(ops: list[Op], txn: Transaction) -> dict[tuple[str, Hashable], NewRow]:
    """Record `ops` in `txn`; the handles of the inserted rows by (table, key)."""
    handles: dict[tuple[str, Hashable], NewRow] = {}

    def value(v: Any) -> Any:
        t = v.__class__
        if t is str or t is int:  # (most columns: nothing to resolve)
            return v
        if isinstance(v, Pending):
            return handles[(v.table, v.key)]
        if isinstance(v, (list, tuple)):
            for x in v:
                if isinstance(x, Pending):
                    return [handles[(x.table, x.key)] if isinstance(x, Pending) else x
                            for x in v]
        elif isinstance(v, dict):
            for x in v.values():
                if isinstance(x, Pending):
                    return {k: handles[(x.table, x.key)] if isinstance(x, Pending) else x
                            for k, x in v.items()}
        return v

    for op in ops:
        if isinstance(op, Insert):
            values = {c: value(v) for c, v in op.values.items()} if op.pending else \
                dict(op.values)
            clash = values.pop("table", _NONE)  # a column named like insert's argument
            new = handles[(op.table, op.key)] = txn.insert(op.table, **values)
            if clash is not _NONE:
                new.values["table"] = clash
        elif isinstance(op, Update):
            whole: dict[str, Any] = {}
            for c, v in op.values.items():
                moved = _set_moved(op.row, c, v)
                if moved is None:
                    whole[c] = value(v)
                    continue
                added, removed = moved
                if removed:
                    txn.remove(op.row, c, *removed)
                if added:
                    txn.add(op.row, c, *(value(x) for x in added))
            if whole:
                txn.update(op.row, **whole)
        else:
            txn.delete(op.row)
    return handles
