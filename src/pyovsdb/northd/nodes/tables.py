"""The replicas' tables as engine leaves, and how a northd node reads them.

Rules kept here:
- One leaf per replicated table, named as OVN names it: `NB_<table>` / `SB_<table>` in
  lower case (`SB_logical_DP_group` as OVN spells it). Its data is the replica's table,
  its change the table's row changes of this run.
- A node reads tables only through the `Group`s it declares: `declared()` turns the
  group the engine passes into the mapping builders read, and reading a table of the
  schema that the node did not declare raises `UndeclaredTable` (a bug in the wiring,
  never a silent None). A table the schema lacks reads as absent, as builders expect.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from ...engine import Change, Handled, Input, Leaf
from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...ovsdb.changeset import RowChange

TableChanges = dict[str, RowChange[IdlRow]]
TableLeaf = Leaf[ReplicaTable, TableChanges]
TableChange = Change[ReplicaTable, TableChanges]
TableHandler = Callable[[TableChange], Handled]

_SPELLING = {"Logical_DP_Group": "logical_DP_group"}


def leaf_name(db: str, table: str) -> str:
    """OVN's name of the leaf node of `table` in database `db` ("NB" or "SB")."""
    return f"{db}_{_SPELLING.get(table, table.lower())}"


class UndeclaredTable(LookupError):
    """A node read a table of the schema it did not declare as an input (not a
    KeyError, which `Mapping.get` would turn into an absent table)."""


class Tables(Mapping[str, ReplicaTable]):
    """The tables a node declared, by table name; the rest of the schema refused."""

    def __init__(self, declared: Mapping[str, ReplicaTable], schema: Iterable[str],
                 node: str) -> None:
        self._declared = declared
        self._schema = frozenset(schema)
        self._node = node

    def __getitem__(self, name: str) -> ReplicaTable:
        table = self._declared.get(name)
        if table is None:
            if name in self._schema:
                raise UndeclaredTable(f"node {self._node} reads {name}, not its input")
            raise KeyError(name)
        return table

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name: object) -> bool:
        if name in self._declared:
            return True
        if name in self._schema:
            raise UndeclaredTable(f"node {self._node} asks for {name}, not its input")
        return False

    def __iter__(self) -> Iterator[str]:
        return iter(self._declared)

    def __len__(self) -> int:
        return len(self._declared)


def declared(group: Mapping[str, ReplicaTable], schema: Iterable[str], node: str) -> Tables:
    """The group `node.run()` got, as builders read it (see `Tables`); `schema`: every
    table of the database."""
    return Tables(group, schema, node)


def table_inputs(leaves: Mapping[str, TableLeaf], tables: Iterable[str],
                 handlers: Mapping[str, TableHandler | None] | None = None
                 ) -> dict[str, Input[ReplicaTable, TableChanges]]:
    """Inputs for the `tables` the replica has, keyed by table name, with handlers."""
    handlers = handlers or {}
    return {t: Input(leaves[t], handlers.get(t)) for t in tables if t in leaves}


def only(change: TableChange, ok: Callable[[RowChange[IdlRow]], bool]) -> Handled:
    """HANDLED_UNCHANGED if every row change of `change` is `ok`, else UNHANDLED."""
    delta = change.delta
    if delta is None:
        return Handled.UNHANDLED
    for rc in delta.values():
        if not ok(rc):
            return Handled.UNHANDLED
    return Handled.HANDLED_UNCHANGED


def either(first: Handled, then: Handled) -> Handled:
    """Two handled parts of one change: UNHANDLED if either is, else UPDATED if either
    is."""
    if Handled.UNHANDLED in (first, then):
        return Handled.UNHANDLED
    if Handled.HANDLED_UPDATED in (first, then):
        return Handled.HANDLED_UPDATED
    return Handled.HANDLED_UNCHANGED


def followed(handler: TableHandler, then: Callable[[], object]) -> TableHandler:
    """`handler`, with `then` called after it where it handled the change."""
    @functools.wraps(handler)
    def call(change: TableChange) -> Handled:
        handled = handler(change)
        if handled is not Handled.UNHANDLED:
            then()
        return handled
    return call
