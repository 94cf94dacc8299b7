"""Desired database state: what northd wants the SB tables it owns (and the few NB
columns it writes back, such as `Logical_Switch_Port.up`) to hold.

Rules kept here:
- Builders (the `northd` node's pure functions) describe SB rows as plain data: one
  `DesiredTable` per SB table, rows keyed by a stable, hashable key that names the row
  without its SB UUID (a datapath by its NB row's UUID, a port binding by its
  `logical_port`, a multicast group by (datapath key, name), ...).
- Values are Python values as the IDL writes them (str, int, bool, list for sets,
  dict for maps); a reference to another desired row is a `Ref` to its table and key,
  resolved to a UUID only by `sync`.
- A table lists the columns northd manages (`columns`); other columns of the SB rows
  (written by ovn-controller, e.g. `Port_Binding.chassis`) are never compared or written.
- `owned` says whether SB rows without a desired row are deleted (True for the tables
  northd owns outright) or left alone (False: northd only updates the rows it names).
- NB write-backs use the same types with `owned=False`, rows keyed by NB row UUID.
- Nothing here knows of IDLs, sockets or clocks.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Ref:
    """A reference to the desired row `key` of SB table `table`."""

    table: str
    key: Hashable


@dataclass(slots=True)
class DesiredTable:
    """The rows northd wants in one SB table, by key."""

    name: str
    columns: tuple[str, ...]
    owned: bool = True
    rows: dict[Hashable, dict[str, Any]] = field(default_factory=dict)
    fill: tuple[str, ...] = ()
    replace: set[Hashable] = field(default_factory=set)
    delete: set[str] = field(default_factory=set)

    def put(self, key: Hashable, **values: Any) -> None:
        """Set the desired row `key`; every managed column left out is its default."""
        unknown = set(values) - set(self.columns)
        if unknown:
            raise KeyError(f"{self.name}: columns not managed: {sorted(unknown)}")
        self.rows[key] = values

    def set(self, key: Hashable, **values: Any) -> None:
        """Set some columns of the desired row `key`, keeping the others it has."""
        unknown = set(values) - set(self.columns)
        if unknown:
            raise KeyError(f"{self.name}: columns not managed: {sorted(unknown)}")
        self.rows.setdefault(key, {}).update(values)

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self.rows)


@dataclass(slots=True)
class DesiredDb:
    """Every desired table of one database for one engine run, by table name."""

    tables: dict[str, DesiredTable] = field(default_factory=dict)

    def add(self, table: DesiredTable) -> DesiredTable:
        if table.name in self.tables:
            raise KeyError(f"desired table {table.name} built twice")
        self.tables[table.name] = table
        return table

    def __getitem__(self, name: str) -> DesiredTable:
        return self.tables[name]

    def table(self, name: str, columns: tuple[str, ...], *, owned: bool = True) -> DesiredTable:
        """The table `name`, created on first use (for tables several builders share,
        such as the NB write-backs); later uses may add managed columns."""
        table = self.tables.get(name)
        if table is None:
            return self.add(DesiredTable(name, columns, owned=owned))
        if table.owned != owned:
            raise KeyError(f"desired table {name} both owned and not")
        table.columns = tuple(dict.fromkeys((*table.columns, *columns)))
        return table
