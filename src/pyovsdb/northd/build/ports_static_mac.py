"""SB Static_MAC_Binding rows from NB Static_MAC_Binding (OVN 23.03,
`build_static_mac_binding_table`).

Rules kept here:
- Rows are named by (logical_port, ip). An SB row stays while an NB row of the same
  name exists, and goes otherwise.
- An NB row whose port is a router port gets an SB row on that port's datapath, with
  its mac and override_dynamic_mac; the datapath is written when the row is created
  only. An SB row whose NB row names no router port is left as it is.
- In place (`static_macs_changed`): the names an NB or SB row change touches are
  decided again alone, from the NB rows of the port named (an index by port) and the
  SB rows of that name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..desired import DesiredDb, DesiredTable, Ref
from .delta import PortsDelta
from .ports import PortsData

COLUMNS = ("logical_port", "ip", "mac", "override_dynamic_mac", "datapath")


def _existing(row: IdlRow) -> dict[str, Any]:
    return {"logical_port": row.logical_port, "ip": row.ip, "mac": row.mac,
            "override_dynamic_mac": row.override_dynamic_mac,
            "datapath": [row.datapath.uuid] if row.datapath is not None else []}


def _put(table: DesiredTable, nb_rows: Iterable[IdlRow], ports: PortsData,
         existing: Mapping[tuple[str, str], dict[str, Any]]) -> None:
    for row in sorted(nb_rows, key=lambda r: r.uuid):
        key = (row.logical_port, row.ip)
        if key in table.rows:
            continue
        port = ports.ports.get(row.logical_port)
        if port is not None and not port.is_lsp:
            table.put(key, logical_port=row.logical_port, ip=row.ip, mac=row.mac,
                      override_dynamic_mac=row.override_dynamic_mac,
                      datapath=Ref("Datapath_Binding", port.dp.key))
        elif key in existing:
            table.put(key, **existing[key])


def build_static_mac_bindings(nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable],
                              ports: PortsData, desired: DesiredDb) -> DesiredTable:
    table = desired.add(DesiredTable("Static_MAC_Binding", COLUMNS, fill=("datapath",)))
    existing: dict[tuple[str, str], dict[str, Any]] = {}
    sb_table = sb.get("Static_MAC_Binding")
    for row in sorted(sb_table.rows.values() if sb_table is not None else (),
                      key=lambda r: r.uuid):
        existing.setdefault((row.logical_port, row.ip), _existing(row))
    nb_table = nb.get("Static_MAC_Binding")
    _put(table, nb_table.rows.values() if nb_table is not None else (), ports, existing)
    return table


def static_macs_changed(nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable],
                        ports: PortsData, desired: DesiredDb,
                        keys: set[tuple[str, str]]) -> PortsDelta:
    """The desired rows of the names `keys` ((logical_port, ip)) decided again; the
    keys whose rows changed."""
    table = desired.tables["Static_MAC_Binding"]
    nb_table, sb_table = nb.get("Static_MAC_Binding"), sb.get("Static_MAC_Binding")
    lps = {lp for lp, _ in keys}
    existing: dict[tuple[str, str], dict[str, Any]] = {}
    for row in sorted((r for r in (sb_table.rows.values() if sb_table is not None else ())
                       if (r.logical_port, r.ip) in keys), key=lambda r: r.uuid):
        existing.setdefault((row.logical_port, row.ip), _existing(row))
    nb_rows = [] if nb_table is None else [
        r for r in _by_port(nb_table, lps) if (r.logical_port, r.ip) in keys]
    old = {k: table.rows.pop(k) for k in keys if k in table.rows}
    _put(table, nb_rows, ports, existing)
    delta = PortsDelta()
    for key in keys:
        if table.rows.get(key) != old.get(key):
            delta.touch("sb", "Static_MAC_Binding", key)
    return delta


def named_keys(nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable],
               lps: set[str]) -> set[tuple[str, str]]:
    """The (logical_port, ip) of the NB and SB static MAC bindings naming `lps`."""
    return {(r.logical_port, r.ip) for table in (nb.get("Static_MAC_Binding"),
                                                 sb.get("Static_MAC_Binding"))
            if table is not None for r in _by_port(table, lps) if r.logical_port in lps}


def _by_port(table: ReplicaTable, lps: set[str]) -> Iterable[IdlRow]:
    index = table.indexes.get("logical_port")
    if index is None or index.columns != ("logical_port",):
        return table.rows.values()
    return [row for lp in lps for row in index.entries.get((lp,), {}).values()]
