"""SB Static_MAC_Binding rows from NB Static_MAC_Binding (OVN 23.03,
`build_static_mac_binding_table`).

Rules kept here:
- Rows are named by (logical_port, ip). An SB row stays while an NB row of the same
  name exists, and goes otherwise.
- An NB row whose port is a router port gets an SB row on that port's datapath, with
  its mac and override_dynamic_mac; the datapath is written when the row is created
  only. An SB row whose NB row names no router port is left as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...idl.replica import ReplicaTable
from ..desired import DesiredDb, DesiredTable, Ref
from .ports import PortsData

COLUMNS = ("logical_port", "ip", "mac", "override_dynamic_mac", "datapath")


def build_static_mac_bindings(nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable],
                              ports: PortsData, desired: DesiredDb) -> DesiredTable:
    table = desired.add(DesiredTable("Static_MAC_Binding", COLUMNS, fill=("datapath",)))
    existing: dict[tuple[str, str], dict[str, Any]] = {}
    sb_table = sb.get("Static_MAC_Binding")
    for row in sorted(sb_table.rows.values() if sb_table is not None else (),
                      key=lambda r: r.uuid):
        existing.setdefault((row.logical_port, row.ip), {
            "logical_port": row.logical_port, "ip": row.ip, "mac": row.mac,
            "override_dynamic_mac": row.override_dynamic_mac,
            "datapath": [row.datapath.uuid] if row.datapath is not None else []})
    nb_table = nb.get("Static_MAC_Binding")
    for row in sorted(nb_table.rows.values() if nb_table is not None else (),
                      key=lambda r: r.uuid):
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
    return table
