"""A router port made a distributed gateway port, or no longer one, in place: its
first gateway chassis or an NB HA chassis group set (`ovn-nbctl
lrp-set-gateway-chassis` on a router interface, or Neutron's gateway port given its
group), or its last one taken away; and a gateway port given another group.

Rules kept here:
- The plain case of `gateways_incremental`: its router is no gateway router and has
  no other distributed gateway port (`plain_gateway`, `plain_gateway_going`; load
  balancers it may have); the update changed `GATEWAY_COLUMNS` alone. Anything else
  is refused (None) and the caller recomputes.
- Made a gateway port: its chassisredirect port is added after it in build order and
  takes the key a build gives it: the next free one of the router's key space, every
  other port of the router holding its key in its binding (else refused); no SB
  binding may be named as the chassisredirect port.
- No longer one: its chassisredirect port, binding and group go (refused while SB
  holds MAC bindings learned on the chassisredirect port, which a build deletes).
- Then the port's binding (`chassis-redirect-port`), its chassisredirect port's and
  group, the switch port peering it (its `nat_addresses`), the fixed multicast groups
  of the router and that switch are put again, and the flows of the router and its
  neighbours are built again (`PortsDelta.flows`); the switch is `rewired`, so the
  groups' `ref_chassis` follow (`sync_from_sb` finds the routers behind them again).
- Staying a gateway port, with another group (an NB group set, swapped or dropped
  beside its gateway chassis, or gateway chassis set or dropped beside its NB group;
  `gateways_regrouped`): the chassisredirect binding names the group
  `ha_chassis.port_group` reads now, and the groups it named and names are put again
  as their users read them, or go with their last user (`groups_used`). No flow
  reads a group.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...idl.tracking import changed_columns
from ...ovsdb.changeset import RowChange
from ..desired import DesiredDb
from .alloc import PORT_KEY_MAX, PORT_KEY_MAX_VXLAN, PORT_KEY_MIN, TunnelKeys
from .datapaths import Datapath, DatapathsData, smap_int
from .delta import PortsDelta
from .gateways_incremental import (
    add_redirect,
    is_gateway,
    plain_gateway,
    plain_gateway_going,
    put_redirect_group,
    redirect_groups,
    redirect_name,
    remove_redirect,
)
from .ha_groups_incremental import groups_used
from .inputs import rows_where
from .ports import PB_BY_NAME, Port, PortsData
from .ports_incremental import put_bindings
from .ports_put import insert_in_build_order, put_fixed_groups, put_router_binding

# What makes a router port a distributed gateway port (`is_gateway`).
GATEWAY_COLUMNS = frozenset(("gateway_chassis", "ha_chassis_group"))


def gateway_toggled(rc: RowChange[IdlRow]) -> bool:
    """Whether a router port update made it a gateway port or no longer one, alone."""
    return rc.old is not None and rc.new is not None \
        and set(changed_columns(rc)) <= GATEWAY_COLUMNS \
        and is_gateway(rc.old) != is_gateway(rc.new)


def gateways_toggled(changes: Mapping[str, RowChange[IdlRow]], nb: Mapping[str, ReplicaTable],
                     sb: Mapping[str, ReplicaTable], datapaths: DatapathsData,
                     ports: PortsData, names: Counter[str], sb_desired: DesiredDb
                     ) -> PortsDelta | None:
    """The updates `changes` (each `gateway_toggled`) applied in place, or None,
    nothing touched (see the rules)."""
    found: list[tuple[Port, IdlRow]] = []
    nb_groups = nb.get("HA_Chassis_Group")
    for uuid, rc in changes.items():
        new = rc.new
        assert new is not None
        port = ports.ports.get(new.name)
        if port is None or not port.is_lrp or port.nb.uuid != uuid:
            return None
        router = datapaths.routers.get(port.dp.key)
        if router is None:
            return None
        if is_gateway(new):
            if port.cr_port is not None or not plain_gateway(new, router, ports, names,
                                                             sb_desired) \
                    or _bound(sb, redirect_name(port.name)):
                return None
        elif port.cr_port is None or not plain_gateway_going(
                port, router.nb, ports, nb_groups.rows if nb_groups is not None else None) \
                or _learned(sb, port.cr_port):
            return None
        found.append((port, new))
    if len({port.dp.key for port, _ in found}) != len(found):
        return None  # (two ports of one router: a build's order decides)
    tnl: dict[str, int] = {}  # (the chassisredirect ports' keys, found before any change)
    for port, new in found:
        if is_gateway(new):
            found_key = _next_key(port.dp.key, datapaths, ports)
            if found_key is None:
                return None
            tnl[port.name] = found_key
    delta = PortsDelta()
    table = sb_desired.tables["Port_Binding"]
    for port, new in found:
        port.nb, port.options = new, new.options
        if is_gateway(new):
            cr = add_redirect(port, ports)
            cr.tunnel_key = tnl[port.name]
            insert_in_build_order(ports, cr)
            ports.unbound.add(cr.name)
            put_router_binding(cr, ports, table, delta)
            for group_table, row_key in put_redirect_group(cr, sb_desired):
                delta.touch("sb", group_table, row_key)
        else:
            remove_redirect(port, ports, sb_desired, delta)
            port.cr_port = None
        put_router_binding(port, ports, table, delta)
        peer = ports.peer_of(port)
        keys = {port.dp.key}
        if peer is not None and peer.is_lsp:
            put_bindings(sb, ports, [peer], sb_desired, delta)
            keys.add(peer.dp.key)
            # (the groups' `ref_chassis` follow the routers behind each gateway port:
            # `sync_from_sb` finds them again, as for a gateway port paired anew)
            delta.rewired.add(peer.dp.key)
        for key in sorted(keys):
            put_fixed_groups(key, ports, datapaths, sb_desired, delta)
    delta.flows = ports.next_to({port.dp.key for port, _ in found})
    return delta


def gateway_regrouped(rc: RowChange[IdlRow]) -> bool:
    """Whether a router port update changed its gateway chassis or NB HA chassis group
    alone, a gateway port before and after."""
    return rc.old is not None and rc.new is not None \
        and set(changed_columns(rc)) <= GATEWAY_COLUMNS \
        and is_gateway(rc.old) and is_gateway(rc.new)


def gateways_regrouped(changes: Mapping[str, RowChange[IdlRow]], ports: PortsData,
                       names: Counter[str], sb_desired: DesiredDb) -> PortsDelta | None:
    """The updates `changes` (each `gateway_regrouped`) applied in place, or None,
    nothing touched (see the rules)."""
    found: list[tuple[Port, Port, IdlRow]] = []
    for uuid, rc in changes.items():
        new = rc.new
        assert new is not None
        port = ports.ports.get(new.name)
        cr = ports.ports.get(port.cr_port or "") if port is not None else None
        group = new.ha_chassis_group
        if port is None or cr is None or not port.is_lrp or port.nb.uuid != uuid \
                or (isinstance(group, IdlRow) and names[str(group.name)] != 0):
            return None
        found.append((port, cr, new))
    delta = PortsDelta()
    table = sb_desired.tables["Port_Binding"]
    used: set[str] = set()
    for port, cr, new in found:
        used |= redirect_groups(table, cr.name)
        port.nb = cr.nb = new
        port.options = cr.options = new.options
        put_router_binding(cr, ports, table, delta)
        used |= redirect_groups(table, cr.name)
        peer = ports.peer_of(port)
        if peer is not None and peer.is_lsp:
            delta.rewired.add(peer.dp.key)  # (the groups' `ref_chassis`, as above)
    groups_used(used, ports, sb_desired, delta)
    return delta


def redirect_pinned(dp: Datapath, datapaths: DatapathsData, ports: PortsData,
                    sb: Mapping[str, ReplicaTable], sb_desired: DesiredDb,
                    delta: PortsDelta) -> bool:
    """Router `dp` (its row as it is now) made a gateway router, or no longer one: its
    port with gateway chassis (at most one, with no HA chassis group) loses its
    chassisredirect port (a gateway router has none: 23.03 warns of a bad
    configuration and treats the port as a plain one), or gains one, as
    `gateways_toggled` does for the port; False, nothing touched, where it cannot
    (the caller puts the router's bindings and its peers' again)."""
    mine = [p for p in ports.by_datapath.get(dp.key, []) if p.is_lrp and is_gateway(p.nb)]
    if not mine:
        return True
    if len(mine) > 1 or mine[0].nb.ha_chassis_group is not None:
        return False
    port, pinned = mine[0], "chassis" in dp.nb.options
    if pinned and port.cr_port is not None:
        if ports.l3dgw_ports.get(dp.key) != [port] or _learned(sb, port.cr_port):
            return False
        remove_redirect(port, ports, sb_desired, delta)
        port.cr_port = None
    elif not pinned and port.cr_port is None:
        cr_name, groups = redirect_name(port.name), sb_desired.tables.get("HA_Chassis_Group")
        tnl = _next_key(dp.key, datapaths, ports)
        if tnl is None or cr_name in ports.ports or _bound(sb, cr_name) \
                or (groups is not None and port.name in groups.rows):
            return False
        cr = add_redirect(port, ports)
        cr.tunnel_key = tnl
        insert_in_build_order(ports, cr)
        ports.unbound.add(cr.name)
        for table, row_key in put_redirect_group(cr, sb_desired):
            delta.touch("sb", table, row_key)
    else:
        return True
    peer = ports.peer_of(port)
    for key in sorted({dp.key} | ({peer.dp.key} if peer is not None and peer.is_lsp
                                 else set())):
        put_fixed_groups(key, ports, datapaths, sb_desired, delta)
        if key != dp.key:
            delta.rewired.add(key)  # (the groups' `ref_chassis` follow, as above)
    return True


def _next_key(key: str, datapaths: DatapathsData, ports: PortsData) -> int | None:
    """The key a build gives a new port of router `key`, every port of it holding its
    key in its binding and requesting none; None otherwise, or with no key left."""
    hi = PORT_KEY_MAX_VXLAN if datapaths.vxlan_mode else PORT_KEY_MAX
    space = TunnelKeys(PORT_KEY_MIN, hi, hint_follows_adds=True)
    for p in ports.by_datapath.get(key, []):
        pb = p.sb
        if pb is None or pb.tunnel_key != p.tunnel_key \
                or smap_int(p.options, "requested-tnl-key") or not space.add(p.tunnel_key):
            return None
    return space.allocate()


def _bound(sb: Mapping[str, ReplicaTable], name: str) -> bool:
    table = sb.get("Port_Binding")
    return table is not None and any(
        r.logical_port == name for r in rows_where(table, PB_BY_NAME, {name}))


def _learned(sb: Mapping[str, ReplicaTable], name: str) -> bool:
    table = sb.get("MAC_Binding")
    return table is not None and any(r.logical_port == name for r in table.rows.values())
