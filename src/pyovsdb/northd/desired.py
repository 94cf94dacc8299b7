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
- A `keep` column left out of a desired row keeps what the SB row holds (23.03 sets
  such a column only when it has a value for it, e.g. `IP_Multicast.eth_src`).
- NB write-backs use the same types with `owned=False`, rows keyed by NB row UUID.
- Overlays (`overlay`, `set_column`, `patch_singleton`) copy what they change: the
  desired tables a node built are never modified by the nodes that lay over them.
- Nothing here knows of IDLs, sockets or clocks.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


class Ref:
    """A reference to the desired row `key` of SB table `table` (a value: equal by
    both, never changed; written out rather than a frozen dataclass, whose setters
    cost most of the time a datapath group's thousand members take to make)."""

    __slots__ = ("key", "table")

    def __init__(self, table: str, key: Hashable) -> None:
        self.table = table
        self.key = key

    def __eq__(self, other: object) -> bool:
        return other.__class__ is Ref and self.table == other.table \
            and self.key == other.key

    def __hash__(self) -> int:
        return hash((self.table, self.key))

    def __repr__(self) -> str:
        return f"Ref(table={self.table!r}, key={self.key!r})"


@dataclass(slots=True)
class DesiredTable:
    """The rows northd wants in one SB table, by key."""

    name: str
    columns: tuple[str, ...]
    owned: bool = True
    rows: dict[Hashable, dict[str, Any]] = field(default_factory=dict)
    fill: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    replace: set[Hashable] = field(default_factory=set)
    delete: set[str] = field(default_factory=set)
    _managed: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._managed = frozenset(self.columns)

    def manage(self, columns: tuple[str, ...]) -> None:
        """`columns` managed too, after those managed already."""
        self.columns = tuple(dict.fromkeys((*self.columns, *columns)))
        self._managed = frozenset(self.columns)

    def put(self, key: Hashable, **values: Any) -> None:
        """Set the desired row `key`; every managed column left out is its default."""
        if not self._managed.issuperset(values):
            unknown = set(values) - self._managed
            raise KeyError(f"{self.name}: columns not managed: {sorted(unknown)}")
        self.rows[key] = values

    def set(self, key: Hashable, **values: Any) -> None:
        """Set some columns of the desired row `key`, keeping the others it has."""
        unknown = set(values) - self._managed
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
        table.manage(columns)
        return table


def overlay(db: DesiredDb, scope: set[str] | None = None) -> DesiredDb:
    """A copy of `db` (its tables in `scope`, if given) whose table map can be changed
    without touching `db`."""
    return DesiredDb({name: t for name, t in db.tables.items()
                      if scope is None or name in scope})


def singleton_key(table: DesiredTable) -> Any:
    """The key of a singleton's desired row: `()`, or the row's UUID once re-keyed."""
    return next(iter(table.rows), None)


def set_column(db: DesiredDb, table: str, column: str, values: Mapping[Hashable, Any],
               keys: Collection[Hashable] | None = None) -> None:
    """Set `column` of the not-owned rows `values` names (by key) in a copy of `table`
    (with `keys`: a copy of those rows alone, for a plan of those keys)."""
    old = db.tables.get(table)
    rows: dict[Hashable, dict[str, Any]] = {}
    if old is not None:
        rows = dict(old.rows) if keys is None else \
            {k: old.rows[k] for k in keys if k in old.rows}
    columns = (column,) if old is None else tuple(dict.fromkeys((*old.columns, column)))
    for key in values if keys is None else (k for k in keys if k in values):
        rows[key] = {**rows.get(key, {}), column: values[key]}
    db.tables[table] = DesiredTable(table, columns, False, rows,
                                    () if old is None else old.fill)


def patch_singleton(db: DesiredDb, table: str, **values: Any) -> None:
    """Set columns of the singleton row of `table`, copying what it changes."""
    old = db.tables.get(table)
    key = singleton_key(old) if old is not None else None
    if old is None or key is None:
        return
    new = DesiredTable(old.name, old.columns, old.owned, dict(old.rows), old.fill)
    new.rows[key] = {**old.rows[key], **{k: v for k, v in values.items() if k in old.columns}}
    db.tables[table] = new


def single(value: Any) -> Any:
    """An optional value as the IDL reads it (None or the value) from a desired one
    (a list of at most one, or the value)."""
    if isinstance(value, list | tuple):
        return value[0] if value else None
    return value
