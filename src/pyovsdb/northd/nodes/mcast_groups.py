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
- Groups learnt through IGMP (SB IGMP_Group, relayed by routers) are not built yet.
"""

from __future__ import annotations

from ..desired import DesiredDb, DesiredTable, Ref
from .datapaths import DatapathsData, smap_bool
from .ports import Port, PortsData

MC_FLOOD = ("_MC_flood", 32768)
MC_UNKNOWN = ("_MC_unknown", 32769)
MC_MROUTER_FLOOD = ("_MC_mrouter_flood", 32770)
MC_STATIC = ("_MC_static", 32771)
MC_FLOOD_L2 = ("_MC_flood_l2", 32772)

MULTICAST_COLUMNS = ("datapath", "name", "tunnel_key", "ports")


def _enabled(port: Port) -> bool:
    enabled = port.nb.enabled
    return enabled is None or bool(enabled)


def build_mcast_groups(datapaths: DatapathsData, ports: PortsData,
                       sb: DesiredDb) -> DesiredTable:
    groups: dict[tuple[str, str], tuple[int, set[str]]] = {}

    def add(group: tuple[str, int], port: Port) -> None:
        if port.cr_port is not None:
            port = ports.ports.get(port.cr_port, port)
        entry = groups.setdefault((port.dp.key, group[0]), (group[1], set()))
        entry[1].add(port.name)

    relay_switches: set[str] = set()
    for key, rports in ports.router_ports.items():
        for rp in rports:
            peer = ports.peer_of(rp)
            if peer is not None and smap_bool(peer.dp.nb.options, "mcast_relay", False):
                relay_switches.add(key)
    for port in ports.ports.values():
        if port.is_lrp:
            if _enabled(port) and smap_bool(port.nb.options, "mcast_flood", False):
                add(MC_STATIC, port)
        elif port.is_lsp and _enabled(port):
            lsp = port.nb
            add(MC_FLOOD, port)
            if lsp.type != "router":
                add(MC_FLOOD_L2, port)
            peer = ports.peer_of(port)
            if port.dp.key in relay_switches and peer is not None and \
                    smap_bool(peer.dp.nb.options, "mcast_relay", False):
                add(MC_MROUTER_FLOOD, port)
            if smap_bool(lsp.options, "mcast_flood_reports", False):
                add(MC_MROUTER_FLOOD, port)
            if smap_bool(lsp.options, "mcast_flood", False):
                add(MC_STATIC, port)
            if port.has_unknown and lsp.type != "external":
                add(MC_UNKNOWN, port)
    table = sb.add(DesiredTable("Multicast_Group", MULTICAST_COLUMNS))
    for (dp_key, name), (tunnel_key, members) in sorted(groups.items()):
        if datapaths.get(dp_key) is None:
            continue
        table.put((dp_key, name), datapath=Ref("Datapath_Binding", dp_key), name=name,
                  tunnel_key=tunnel_key,
                  ports=[Ref("Port_Binding", p) for p in sorted(members)])
    return table
