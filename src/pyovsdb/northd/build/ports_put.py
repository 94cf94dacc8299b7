"""A port's desired rows put again from the builders a build uses, for the handlers
that change ports in place: a router port's binding, a datapath's fixed multicast
groups; and a new port placed among the ports where a build lists it.

Rules kept here:
- Each function writes what a build would write for the same core data, and names
  each desired row it changed in the delta (`PortsDelta.touch`); a row left as it
  was is not named.
"""

from __future__ import annotations

from ..desired import DesiredDb, DesiredTable, Ref
from .datapaths import DatapathsData
from .datapaths_incremental import FIXED_GROUP_NAMES
from .delta import PortsDelta
from .mcast_groups import MULTICAST_COLUMNS, router_groups, switch_groups
from .ports import Port, PortsData
from .ports_router import router_port_binding


def insert_in_build_order(ports: PortsData, port: Port) -> None:
    """A new port among the ports where a build puts it: its datapath's ports by NB
    name and UUID, a chassisredirect port right after its router port."""
    ports.ports[port.name] = port
    members = ports.by_datapath.setdefault(port.dp.key, [])
    members.append(port)
    members.sort(key=lambda p: (p.nb.value("name"), p.nb.uuid, p.is_cr))


def put_router_binding(port: Port, ports: PortsData, table: DesiredTable,
                        delta: PortsDelta) -> None:
    table.put(port.name, logical_port=port.name, datapath=Ref("Datapath_Binding", port.dp.key),
              tunnel_key=port.tunnel_key, up=[False], mirror_rules=[],
              **router_port_binding(port, ports))
    delta.touch("sb", "Port_Binding", port.name)


def put_fixed_groups(key: str, ports: PortsData, datapaths: DatapathsData,
                sb_desired: DesiredDb, delta: PortsDelta) -> None:
    table = sb_desired.tables.get("Multicast_Group")
    if table is None:
        table = sb_desired.add(DesiredTable("Multicast_Group", MULTICAST_COLUMNS))
    groups = switch_groups(key, ports) if key in datapaths.switches \
        else router_groups(key, ports)
    fixed = {(key, name) for name in FIXED_GROUP_NAMES}
    for gkey in sorted(fixed):
        entry = groups.get(gkey)
        if entry is None:
            if table.rows.pop(gkey, None) is not None:
                delta.touch("sb", "Multicast_Group", gkey)
            continue
        tunnel_key, members = entry
        want = {"datapath": Ref("Datapath_Binding", key), "name": gkey[1],
                "tunnel_key": tunnel_key,
                "ports": [Ref("Port_Binding", p) for p in sorted(members)]}
        if table.rows.get(gkey) != want:
            table.rows[gkey] = want
            delta.touch("sb", "Multicast_Group", gkey)
