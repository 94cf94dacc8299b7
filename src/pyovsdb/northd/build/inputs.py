"""What northd's pure builders read: the NB and SB replicas, table by table.

Rules kept here:
- Builders get tables, never an IDL or a connection: the daemon passes its IDLs'
  replica tables, tests pass those of `northd.testing.LocalDb`.
- Tables are read-only to builders; iteration order is theirs to fix by sorting.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow


@dataclass(frozen=True, slots=True)
class BuildInput:
    """The NB and SB tables of one engine run."""

    nb: Mapping[str, ReplicaTable]
    sb: Mapping[str, ReplicaTable]


def singleton(table: ReplicaTable | None) -> IdlRow | None:
    """The row of a one-row table (NB_Global, SB_Global): 23.03 takes the first the
    IDL has; of duplicates, the lowest UUID here, so every reader takes the same one."""
    if table is None or not table.rows:
        return None
    return min(table.rows.values(), key=lambda r: r.uuid)


def rows_where(table: ReplicaTable, column: str, values: Iterable[Hashable]
               ) -> Iterable[IdlRow]:
    """The rows of `table` whose `column` (as stored) is one of `values`: all of them
    if the table has no index of that column (the caller checks each row)."""
    index = table.indexes.get(column)
    if index is None or index.columns != (column,):
        return table.rows.values()
    return [row for v in values for row in index.entries.get((v,), {}).values()]
