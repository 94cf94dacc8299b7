"""Logical_DP_Group: sets of datapaths that SB rows (load balancers now, logical flows
later) refer to instead of listing datapaths one by one.

Rules kept here:
- A group is keyed by the sorted tuple of its datapaths' keys (NB UUIDs): the same set
  is one row, whoever asks for it. 23.03 keeps one row per user (a load balancer's and
  a flow's group over the same datapaths are two rows); compared by their datapaths the
  contents are the same.
- The table is owned: a group nobody asks for is deleted (the SB schema also collects
  unreferenced groups, the table not being a root).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..desired import DesiredDb, DesiredTable, Ref

TABLE = "Logical_DP_Group"


def dp_group_table(sb: DesiredDb) -> DesiredTable:
    """The run's Logical_DP_Group table, created on first use."""
    return sb.table(TABLE, ("datapaths",))


def dp_group_key(datapath_keys: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(datapath_keys)))


def dp_group_ref(sb: DesiredDb, datapath_keys: Iterable[str]) -> Ref:
    """A reference to the group of `datapath_keys`, the group desired if new."""
    return group_ref(sb, dp_group_key(datapath_keys))


def group_ref(sb: DesiredDb, key: tuple[str, ...]) -> Ref:
    """`dp_group_ref` of a group's key (`dp_group_key`)."""
    table = dp_group_table(sb)
    if key not in table.rows:
        table.put(key, datapaths=[Ref("Datapath_Binding", k) for k in key])
    return Ref(TABLE, key)
