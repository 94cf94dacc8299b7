"""SB HA_Chassis_Group and HA_Chassis rows: the gateway chassis of distributed gateway
ports and the NB HA chassis groups that ports use, as OVN 23.03 syncs them
(`sync_ha_chassis_group_for_sbpb`, `copy_gw_chassis_from_nbrp_to_sbpb`,
`cleanup_sb_ha_chassis_groups`).

Rules kept here:
- A group exists in SB only while a port uses it: a chassisredirect port's router port
  through its NB group (named as in NB) or its `gateway_chassis` (a group named after
  the router port, the NB group winning when both are set), or an external switch
  port through its NB group. Every other SB group is deleted.
- Each member is an HA_Chassis with the chassis (by name; empty while no such chassis
  is registered), the priority, and `external_ids:chassis-name`. Gateway chassis
  without a chassis name are left out.
- `ref_chassis` (the chassis that bound ports behind the group's routers) is not
  computed yet.
"""

from __future__ import annotations

from ...idl.row import IdlRow
from ..desired import DesiredDb, DesiredTable, Ref
from .ports import PortsData

GROUP_COLUMNS = ("name", "ha_chassis")
CHASSIS_COLUMNS = ("chassis", "priority", "external_ids")


def build_ha_chassis_groups(ports: PortsData, sb: DesiredDb) -> DesiredTable:
    members: dict[str, list[tuple[str, int]]] = {}
    for port in ports.ports.values():
        nb = port.nb
        if port.is_cr:
            group = nb.ha_chassis_group
            if isinstance(group, IdlRow):
                members[group.name] = _nb_group(group)
            elif nb.gateway_chassis:
                members[nb.name] = [
                    (gc.chassis_name, gc.priority)
                    for gc in sorted(nb.gateway_chassis, key=lambda g: g.uuid)
                    if isinstance(gc, IdlRow) and gc.chassis_name]
        elif port.is_lsp and nb.type == "external":
            group = nb.ha_chassis_group
            if isinstance(group, IdlRow):
                members[group.name] = _nb_group(group)
    groups = sb.add(DesiredTable("HA_Chassis_Group", GROUP_COLUMNS))
    chassis = sb.add(DesiredTable("HA_Chassis", CHASSIS_COLUMNS))
    for name in sorted(members):
        refs = []
        for chassis_name, priority in members[name]:
            key = (name, chassis_name)
            chassis.put(key, chassis=Ref("Chassis", chassis_name), priority=priority,
                        external_ids={"chassis-name": chassis_name})
            refs.append(Ref("HA_Chassis", key))
        groups.put(name, name=name, ha_chassis=refs)
    return groups


def _nb_group(group: IdlRow) -> list[tuple[str, int]]:
    return [(hc.chassis_name, hc.priority)
            for hc in sorted(group.ha_chassis, key=lambda h: h.uuid)
            if isinstance(hc, IdlRow)]
