"""Multicast_Group rows: the fixed groups of each datapath, as OVN 23.03 builds them
(`build_mcast_groups`, and `_MC_unknown` in `build_lswitch_ip_unicast_lookup`).

Rules kept here:
- `_MC_flood` (32768): every enabled switch port. `_MC_flood_l2` (32772): the same
  without router-type ports. `_MC_unknown` (32769): enabled switch ports, other than
  external ones, with "unknown" among their addresses.
- `_MC_mrouter_flood` (32770): switch ports whose switch relays multicast (a router
  port peer with `mcast_relay`) and whose peer router relays, plus ports with
  `options:mcast_flood_reports=true`. `_MC_static` (32771): switch ports and enabled
  router ports with `options:mcast_flood=true`.
- A router port that is a distributed gateway port is stored as its `cr-` port.
- A group without ports is not written; ports are listed by name.
- IGMP groups (`build_igmp_groups`): each SB IGMP_Group with a chassis and a current
  datapath adds its switch ports (less those that flood multicast anyway or whose
  router relays) to the group named by its address on that datapath, with the
  switch's localnet ports; "mrouters" entries go to `_MC_mrouter_flood` instead. A
  router with `mcast_relay` gets the groups of its switches (IPv4, and IPv6 of routable
  scope) with its own port (or `cr-` port) as member. A group keeps the tunnel key its
  SB row has; new groups get keys from 32774 on (the hint starts at 32773), in
  datapath order, then by address (23.03: hash order).
- Stale SB IGMP_Group rows (no chassis, no datapath, or a datapath that is gone) are
  deleted, as 23.03 does, though the table is ovn-controller's.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..desired import DesiredDb, DesiredTable, Ref
from .alloc import IP_MCAST_KEY_MAX, IP_MCAST_KEY_MIN, TunnelKeys
from .datapaths import DatapathsData, smap_bool
from .ports import Port, PortsData

MC_FLOOD = ("_MC_flood", 32768)
MC_UNKNOWN = ("_MC_unknown", 32769)
MC_MROUTER_FLOOD = ("_MC_mrouter_flood", 32770)
MC_STATIC = ("_MC_static", 32771)
MC_FLOOD_L2 = ("_MC_flood_l2", 32772)

MULTICAST_COLUMNS = ("datapath", "name", "tunnel_key", "ports")


Groups = dict[tuple[str, str], tuple[int, set[str]]]


def build_mcast_groups(datapaths: DatapathsData, ports: PortsData, sb: DesiredDb,
                       sb_tables: Mapping[str, ReplicaTable] | None = None) -> DesiredTable:
    groups: Groups = {}

    def add(group: tuple[str, int], port: Port) -> None:
        if port.cr_port is not None:
            port = ports.ports.get(port.cr_port, port)
        entry = groups.setdefault((port.dp.key, group[0]), (group[1], set()))
        entry[1].add(port.name)

    relay_switches = {key for key in ports.router_ports if _relay_switch(key, ports)}
    for port in ports.ports.values():
        if port.is_lrp:
            if port.enabled and smap_bool(port.options, "mcast_flood", False):
                add(MC_STATIC, port)
        elif port.is_lsp:
            _switch_port_groups(port, ports, port.dp.key in relay_switches, add)
    if sb_tables is not None:
        stale = build_igmp_groups(datapaths, ports, sb_tables, groups)
        if stale:
            sb.table("IGMP_Group", (), owned=False).delete.update(stale)
    table = sb.add(DesiredTable("Multicast_Group", MULTICAST_COLUMNS))
    for (dp_key, name), (tunnel_key, members) in sorted(groups.items()):
        if datapaths.get(dp_key) is None:
            continue
        table.put((dp_key, name), datapath=Ref("Datapath_Binding", dp_key), name=name,
                  tunnel_key=tunnel_key,
                  ports=[Ref("Port_Binding", p) for p in sorted(members)])
    return table


def _relay_switch(key: str, ports: PortsData) -> bool:
    """Whether a switch relays multicast: a router port peer with `mcast_relay`."""
    for rp in ports.router_ports.get(key, []):
        peer = ports.peer_of(rp)
        if peer is not None and smap_bool(peer.dp.nb.options, "mcast_relay", False):
            return True
    return False


def _switch_port_groups(port: Port, ports: PortsData, relay: bool,
                        add: Callable[[tuple[str, int], Port], None]) -> None:
    """The fixed groups a switch port is in (`relay`: its switch relays)."""
    if not port.enabled:
        return
    options = port.options
    add(MC_FLOOD, port)
    if port.type != "router":
        add(MC_FLOOD_L2, port)
    peer = ports.peer_of(port)
    if relay and peer is not None and smap_bool(peer.dp.nb.options, "mcast_relay", False):
        add(MC_MROUTER_FLOOD, port)
    if smap_bool(options, "mcast_flood_reports", False):
        add(MC_MROUTER_FLOOD, port)
    if smap_bool(options, "mcast_flood", False):
        add(MC_STATIC, port)
    if port.has_unknown and port.type != "external":
        add(MC_UNKNOWN, port)


def switch_groups(key: str, ports: PortsData) -> Groups:
    """The fixed groups of one switch from its ports, as `build_mcast_groups` makes
    them (a switch's groups hold only its own ports)."""
    groups: Groups = {}

    def add(group: tuple[str, int], port: Port) -> None:
        entry = groups.setdefault((key, group[0]), (group[1], set()))
        entry[1].add(port.name)

    relay = _relay_switch(key, ports)
    for port in ports.of_datapath(key):
        if port.is_lsp:
            _switch_port_groups(port, ports, relay, add)
    return groups


def router_groups(key: str, ports: PortsData) -> Groups:
    """The fixed groups of one router from its ports, as `build_mcast_groups` makes
    them: its ports that flood multicast (`mcast_flood`), each by its chassisredirect
    port where it has one."""
    groups: Groups = {}
    for port in ports.of_datapath(key):
        if port.is_lrp and port.enabled and smap_bool(port.options, "mcast_flood", False):
            member = ports.ports.get(port.cr_port, port) if port.cr_port is not None else port
            entry = groups.setdefault((key, MC_STATIC[0]), (MC_STATIC[1], set()))
            entry[1].add(member.name)
    return groups


def relays(port: Port | None) -> bool:
    return port is not None and port.dp.is_router and smap_bool(
        port.dp.nb.options, "mcast_relay", False)


def _igmp_address(text: str) -> int | None:
    """The group address as an IPv6 integer (IPv4 mapped), 0 for "mrouters"."""
    if text == "mrouters":
        return 0
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv4Address):
        return (0xFFFF << 32) | int(ip)
    return int(ip)


def _routable(address: int) -> bool:
    """IPv4 (mapped), or IPv6 multicast of a scope routers relay (RFC 4291 2.7)."""
    if address >> 32 == 0xFFFF:
        return True
    top = address >> 112
    return top >> 8 == 0xFF and (top & 0x0F) not in (0x0, 0x1, 0x2, 0x3, 0xF)


def build_igmp_groups(datapaths: DatapathsData, ports: PortsData,
                      sb: Mapping[str, ReplicaTable], groups: Groups,
                      held: Mapping[tuple[str, str], int] | None = None) -> set[str]:
    """Add the IGMP groups to `groups` (see the module rules); the UUIDs of the stale
    SB IGMP_Group rows. `held`: the tunnel keys the SB groups hold, by (datapath key,
    name), of the datapaths the caller writes (None: read from SB Multicast_Group)."""
    # (datapath key, address) -> [name, members]
    igmp: dict[tuple[str, int], tuple[str, set[str]]] = {}
    by_dp: dict[str, list[int]] = {}

    def group(dp_key: str, address: int, name: str) -> set[str]:
        entry = igmp.get((dp_key, address))
        if entry is None:
            entry = igmp[(dp_key, address)] = (name, set())
            by_dp.setdefault(dp_key, []).append(address)
        return entry[1]

    table = sb.get("IGMP_Group")
    rows = sorted(table.rows.values(), key=lambda r: r.uuid) if table is not None else []
    stale: set[str] = set()
    if not rows:
        return stale  # (SB Multicast_Group is read only where there are IGMP groups)
    for row in rows:
        dp_row = row.datapath
        if row.chassis is None or not isinstance(dp_row, IdlRow):
            stale.add(row.uuid)
            continue
        ids = dp_row.external_ids
        dp_key = str(ids.get("logical-switch") or ids.get("logical-router") or "")
        if datapaths.get(dp_key) is None:
            stale.add(row.uuid)
            continue
        address = _igmp_address(row.address)
        if address is None:
            continue
        members = []
        for pb in row.ports:
            port = ports.ports.get(pb.logical_port) if isinstance(pb, IdlRow) else None
            if port is None or not port.is_lsp:
                continue
            if smap_bool(port.options, "mcast_flood", False):
                continue
            if relays(ports.peer_of(port)):
                continue
            members.append(port.name)
        if members:
            group(dp_key, address, row.address).update(members)
    for dp in datapaths.switches.values():
        addresses = list(by_dp.get(dp.key, []))
        if not addresses:
            continue
        for lsp in ports.router_ports.get(dp.key, []):
            rp = ports.peer_of(lsp)
            if rp is None or not relays(rp) or smap_bool(rp.options, "mcast_flood", False):
                continue
            member = rp.cr_port if rp.cr_port is not None else rp.name
            for address in addresses:
                name = igmp[(dp.key, address)][0]
                if address == 0 or not _routable(address):
                    continue
                group(rp.dp.key, address, name).add(member)
    order = {dp.key: i for i, dp in enumerate(datapaths.all())}
    existing: dict[tuple[str, str], int] = dict(held or {})
    mc_table = sb.get("Multicast_Group") if held is None else None
    for row in mc_table.rows.values() if mc_table is not None else ():
        dp = row.datapath
        if isinstance(dp, IdlRow):
            ids = dp.external_ids
            key = ids.get("logical-switch") or ids.get("logical-router")
            if key:
                existing.setdefault((str(key), row.name), row.tunnel_key)
    spaces: dict[str, TunnelKeys] = {}
    keys: dict[tuple[str, int], int] = {}
    for (dp_key, address), (name, _) in igmp.items():
        if address == 0:
            continue
        space = spaces.setdefault(dp_key, TunnelKeys(IP_MCAST_KEY_MIN, IP_MCAST_KEY_MAX,
                                                     hint=IP_MCAST_KEY_MIN))
        kept = existing.get((dp_key, name))
        if kept is not None:
            space.add(kept)
            keys[(dp_key, address)] = kept
    for (dp_key, address) in sorted(igmp, key=lambda k: (order.get(k[0], 0), k[1])):
        name, in_group = igmp[(dp_key, address)]
        if address == 0:
            entry = groups.setdefault((dp_key, MC_MROUTER_FLOOD[0]),
                                      (MC_MROUTER_FLOOD[1], set()))
            entry[1].update(in_group)
            continue
        key = keys.get((dp_key, address))
        if key is None:
            space = spaces.setdefault(dp_key, TunnelKeys(
                IP_MCAST_KEY_MIN, IP_MCAST_KEY_MAX, hint=IP_MCAST_KEY_MIN))
            new = space.allocate()
            if new is None:
                continue
            key = new
        entry = groups.setdefault((dp_key, name), (key, set()))
        entry[1].update(in_group)
        entry[1].update(p.name for p in ports.localnet_ports.get(dp_key, []))
    return stale
