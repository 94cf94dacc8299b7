"""A distributed gateway port added or deleted in place: a router port with gateway
chassis, added to a router (new or not) or deleted from one (staying or not), with its
chassisredirect port and its SB HA chassis group, as `ports.build_ports` and
`ha_chassis.build_ha_chassis_groups` make them in a build.

Rules kept here:
- Only the plain case: the router port's gateway is its `gateway_chassis` (no NB HA
  chassis group); its router is no gateway router (there a build makes no
  chassisredirect port) and has no other distributed gateway port; no port or binding
  is named as the chassisredirect port would be, and no other group is named as its
  group would be. Anything else is refused (`plain_gateway` false) and the caller
  recomputes. Load balancers may be on the router: their data reads no gateway port,
  their flows there are the router's, built again whole, and the VIPs the switch
  port peering it advertises are put with its `nat_addresses` (below).
- A router port renamed is deleted and added in one change (`going`: its old name).
  NAT rules may be there, or come or go with it (Neutron's router-gateway-set and
  -clear: the port, its SNAT rule and default route in one transaction): what reads
  them is the chassisredirect binding (put with the rules as they are now), the
  `nat_addresses` of the switch port peering it (likewise), and the router's flows,
  built again whole.
- Deleted, the same plain case as it was (`plain_gateway_going`): its chassisredirect
  port, binding and group go with it.
- The chassisredirect port follows its router port in build order and takes the next
  tunnel key after it (the caller allocates in that order).
- Its group has the ports' gateway chassis as `ha_chassis_group.port_group` reads
  them; `ref_chassis` is `sync_from_sb`'s.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Hashable, Mapping

from ...idl.row import IdlRow
from ..desired import DesiredDb, DesiredTable
from .datapaths import Datapath
from .delta import PortsDelta
from .ha_chassis import CHASSIS_COLUMNS, GROUP_COLUMNS, port_group, put_group
from .ha_groups_incremental import groups_used
from .ports import Port, PortKind, PortsData


def is_gateway(row: IdlRow) -> bool:
    """Whether a router port is a distributed gateway port: it has gateway chassis or
    an NB HA chassis group (23.03 makes a chassisredirect port for either)."""
    return bool(row.value("gateway_chassis")) or bool(row.value("ha_chassis_group"))


def redirect_name(lrp_name: str) -> str:
    return "cr-" + lrp_name


def plain_gateway(row: IdlRow, router: Datapath, ports: PortsData, names: Counter[str],
                  sb_desired: DesiredDb, going: Collection[str] = ()) -> bool:
    """Whether the new router port `row` of `router` is a distributed gateway port
    this module adds (see the rules), where the router ports named `going` are
    deleted in the same change (one renamed is both)."""
    lr = router.nb
    if "chassis" in lr.options \
            or any(p.name not in going for p in ports.l3dgw_ports.get(router.key, ())) \
            or sum(1 for r in lr.ports if isinstance(r, IdlRow) and is_gateway(r)) != 1:
        return False
    cr = redirect_name(str(row.name))
    if names[cr] != 0 or cr in ports.ports:
        return False
    group = row.ha_chassis_group
    if isinstance(group, IdlRow):  # (shared by the ports using it; no port named so)
        return names[str(group.name)] == 0
    groups = sb_desired.tables.get("HA_Chassis_Group")
    return not row.value("ha_chassis_group") \
        and (groups is None or row.name not in groups.rows)


def add_redirect(lrp: Port, ports: PortsData) -> Port:
    """The chassisredirect port of the distributed gateway port `lrp` (its tunnel key
    still to be given), registered with it."""
    cr = Port(redirect_name(lrp.name), lrp.dp, PortKind.REDIRECT, lrp.nb,
              networks=lrp.networks, l3dgw_port=lrp.name)
    lrp.cr_port = cr.name
    gateways = ports.l3dgw_ports.setdefault(lrp.dp.key, [])
    gateways.append(lrp)
    gateways.sort(key=lambda p: p.nb.uuid)
    return cr


def put_redirect_group(cr: Port, sb_desired: DesiredDb) -> list[tuple[str, Hashable]]:
    """The SB group of the chassisredirect port `cr` put in the desired tables; the
    (table, key) of each row put."""
    found = port_group(cr)
    if found is None:
        return []
    groups = sb_desired.tables.get("HA_Chassis_Group")
    if groups is None:
        groups = sb_desired.add(DesiredTable("HA_Chassis_Group", GROUP_COLUMNS))
    chassis = sb_desired.tables.get("HA_Chassis")
    if chassis is None:
        chassis = sb_desired.add(DesiredTable("HA_Chassis", CHASSIS_COLUMNS))
    name, members = found
    keys = put_group(groups, chassis, name, members)
    return [("HA_Chassis_Group", name), *(("HA_Chassis", key) for key in keys)]


def plain_gateway_going(lrp: Port, router: IdlRow | None, ports: PortsData,
                        nb_groups: Mapping[str, IdlRow] | None) -> bool:
    """Whether the distributed gateway port `lrp` going (from `router` as it is now;
    None: the router goes too) is one this module deletes (see the rules)."""
    nb = lrp.nb
    if ports.l3dgw_ports.get(lrp.dp.key) != [lrp] \
            or (nb_groups is not None and any(g.name == nb.name for g in nb_groups.values())):
        return False
    return router is None or "chassis" not in router.options


def redirect_groups(bindings: DesiredTable, cr_name: str) -> set[str]:
    """The SB groups the desired binding of chassisredirect port `cr_name` names."""
    binding = bindings.rows.get(cr_name)
    return {ref.key for ref in binding["ha_chassis_group"]} if binding is not None else set()


def remove_redirect(lrp: Port, ports: PortsData, sb_desired: DesiredDb, delta: PortsDelta
                    ) -> None:
    """The chassisredirect port of the distributed gateway port `lrp` (going) out of
    the core data with its binding, and its group: one named after the router port
    goes; an NB group is put again as its other users read it, or goes with the last
    (`groups_used`). Every desired row changed is in `delta`."""
    cr = ports.ports.pop(lrp.cr_port or "")
    used = redirect_groups(sb_desired.tables["Port_Binding"], cr.name)
    ports.bound(cr.name)
    ports.by_datapath[cr.dp.key].remove(cr)
    gateways = ports.l3dgw_ports.get(lrp.dp.key, [])
    if lrp in gateways:
        gateways.remove(lrp)
        if not gateways:
            del ports.l3dgw_ports[lrp.dp.key]
    gone: list[tuple[str, Hashable]] = [("Port_Binding", cr.name)]
    if used and used != {lrp.name}:  # (an NB group's, named as in NB)
        groups_used(used, ports, sb_desired, delta)
    else:
        # (the group is named after the router port, whose gateway chassis may be gone
        # from the replica with it: its members are found among the desired rows)
        gone.append(("HA_Chassis_Group", lrp.name))
        members = sb_desired.tables.get("HA_Chassis")
        if members is not None:
            gone += [("HA_Chassis", key) for key in members.rows
                     if isinstance(key, tuple) and key[0] == lrp.name]
    for table, key in gone:
        desired = sb_desired.tables.get(table)
        if desired is not None:
            desired.rows.pop(key, None)
        delta.touch("sb", table, key)
