"""IP multicast on logical switches: the per-switch multicast settings the destination
lookup reads, and the `ls_in_l2_lkup` flows of the IGMP/MLD groups chassis learnt
(priority 90), as ovn-northd 23.03 writes them (`build_lswitch_ip_mcast_igmp_mld`).

Rules kept here:
- A switch relays (`flood_relay`) when one of its router-type ports reached a router
  port whose router has `options:mcast_relay=true`; it floods statically
  (`flood_static`) when an enabled port of it has `options:mcast_flood=true`. Both
  hold whether or not snooping is on.
- The groups are the ones the Multicast_Group builder makes from SB `IGMP_Group`
  (`build.mcast_groups.build_igmp_groups`): only a switch's own groups get flows (a
  relaying router's copies get none), and not the "mrouters" entries. Snooping need
  not be on for a learnt group to get its flow.
- Skipped: IPv4 groups in 224.0.0.0/24, the IPv6 all-hosts, all-routers and
  all-site-routers groups. At most `other_config:mcast_table_size` (2048) flows per
  switch and family; beyond that 23.03 keeps the first its hash table yields, here
  the first in address order.
- A group's match and actions keep 23.03's text exactly, trailing blanks included.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ..build.datapaths import Datapath, smap_bool, smap_ullong
from ..build.ip_mcast import DEFAULT_MAX_ENTRIES
from ..build.mcast_groups import MC_MROUTER_FLOOD, Groups, build_igmp_groups
from .context import LflowContext
from .stages import Stage
from .table import LflowTable

# RFC 4291 2.7.1: groups every host or router is in anyway.
_IPV6_RESERVED = frozenset(ipaddress.IPv6Address(a) for a in ("ff02::1", "ff02::2", "ff05::2"))
_IPV4_LOCAL = ipaddress.IPv4Network("224.0.0.0/24")


@dataclass(frozen=True, slots=True)
class McastSwitchInfo:
    """23.03's `mcast_switch_info`, the parts flows read."""

    enabled: bool
    flood_unregistered: bool
    flood_relay: bool
    flood_static: bool
    table_size: int


def switch_info(ctx: LflowContext, dp: Datapath) -> McastSwitchInfo:
    config = dp.nb.other_config
    relay = False
    for lsp in ctx.ports.router_ports.get(dp.key, []):
        peer = ctx.ports.peer_of(lsp)
        if peer is not None and smap_bool(peer.dp.nb.options, "mcast_relay"):
            relay = True
    static = False
    for port in ctx.all_ports_of(dp):
        enabled = port.nb.value("enabled")
        if port.is_lsp and (not enabled or enabled[0]) and \
                smap_bool(port.options, "mcast_flood"):
            static = True
    return McastSwitchInfo(
        enabled=smap_bool(config, "mcast_snoop"),
        flood_unregistered=smap_bool(config, "mcast_flood_unregistered"),
        flood_relay=relay, flood_static=static,
        table_size=smap_ullong(config, "mcast_table_size", DEFAULT_MAX_ENTRIES))


def _family(name: str) -> int | None:
    """4 or 6 for a group address that gets a flow; None for one that does not."""
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if isinstance(ip, ipaddress.IPv4Address):
        return None if ip in _IPV4_LOCAL else 4
    return None if ip in _IPV6_RESERVED else 6


def build_igmp(ctx: LflowContext, out: LflowTable) -> None:
    """The flow of every IGMP/MLD group learnt on a switch."""
    groups: Groups = {}
    build_igmp_groups(ctx.datapaths, ctx.ports, ctx.sb, groups)
    infos: dict[str, McastSwitchInfo] = {}
    active: dict[tuple[str, int], int] = {}
    for (dp_key, name) in groups:
        dp = ctx.datapaths.switches.get(dp_key)
        if dp is None or name == MC_MROUTER_FLOOD[0]:
            continue
        family = _family(name)
        if family is None:
            continue
        info = infos.get(dp_key)
        if info is None:
            info = infos[dp_key] = switch_info(ctx, dp)
        count = active.get((dp_key, family), 0)
        if count == info.table_size:
            continue
        active[(dp_key, family)] = count + 1
        match = f"eth.mcast && ip{family} && ip{family}.dst == {name} "
        actions = ""
        if info.flood_relay:
            actions += 'clone { outport = "_MC_mrouter_flood"; output; };'
        if info.flood_static:
            actions += 'clone { outport ="_MC_static"; output; };'
        actions += f'outport = "{name}"; output; '
        with out.owned_by(("igmp", dp_key, name)):
            out.add(dp, Stage.LS_IN_L2_LKUP, 90, match, actions)
