"""The core's ports, datapaths and SB bindings looked up for a change, by the handlers
that apply port and datapath changes in place.

Rules kept here:
- Reads only, but `refresh_datapaths`, which gives datapaths their NB rows as they are
  now (and their ports the new datapath objects), all or none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import replace

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from .datapaths import Datapath
from .inputs import rows_where
from .ports import PB_BY_NAME, PortsData


def port_names(nb: Mapping[str, ReplicaTable]) -> Counter[str]:
    """How many NB switch and router ports carry each name."""
    names: Counter[str] = Counter()
    for table, col in (("Logical_Switch_Port", "name"), ("Logical_Router_Port", "name")):
        rows = nb.get(table)
        if rows is not None:
            names.update(r.value(col) for r in rows.rows.values())
    return names


def bindings_of(sb: Mapping[str, ReplicaTable], names: set[str]) -> dict[str, list[IdlRow]]:
    """The SB Port_Binding rows of the ports `names`, by name (a name may have several)."""
    table = sb.get("Port_Binding")
    out: dict[str, list[IdlRow]] = {}
    if table is None:
        return out
    column = table.col_index["logical_port"]
    for row in rows_where(table, PB_BY_NAME, names):
        name = row.value_at(column)
        if name in names:
            out.setdefault(name, []).append(row)
    return out


def refresh_datapaths(keys: Collection[str], by_key: dict[str, Datapath],
                      rows: Mapping[str, IdlRow], ports: PortsData) -> bool:
    """The datapaths `keys` with their NB rows (and names) as they are now; their ports
    follow. False (nothing changed) if one of them has no row."""
    if any(rows.get(key) is None for key in keys):
        return False
    for key in keys:
        dp = replace(by_key[key], nb=rows[key], name=rows[key].name)
        by_key[key] = dp
        for p in ports.by_datapath.get(key, []):
            p.dp = dp
    return True
