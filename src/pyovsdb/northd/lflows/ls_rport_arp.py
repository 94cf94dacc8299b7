"""ARP and ND requests for a router's addresses, in the destination lookup of the
switches attached to it (`ls_in_l2_lkup`, priorities 80 and 75), as ovn-northd 23.03
writes them (`build_lswitch_rport_arp_req_flows` and
`build_lswitch_rport_arp_req_self_orig_flow`).

Rules kept here:
- Per switch port of type router whose router port is enabled: a request (not from a
  VXLAN tunnel) for an address the router owns goes to that port (80): the router's
  load-balancer VIPs inside one of the port's networks (the link-local one included),
  the external IPs of its non-SNAT NAT rules that are no VIP (written as NB has them,
  wherever they are), and the port's own addresses.
- If the switch has ports other than router ports the request is also flooded to
  `_MC_flood_l2`, and requests the router itself sends (its port's MAC, or an
  `external_mac` of a non-SNAT NAT rule) are flooded as usual (75); the MACs are
  listed in the order 23.03's string set yields them.
- A NAT rule counts only if its external IP is one address; the VIPs are those of the
  router's own load balancers and its groups'.
- A NAT external IP's request is that IP's (`rport_ip_owner`), built again alone when
  the router's rules of that IP change (`LflowContext.nat_ips`); the rest is the
  port's.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ...idl.row import IdlRow, cached
from ...ovsdb.hashorder import shash_order
from ..build.datapaths import Datapath
from ..build.ports import Port
from ..build.ports_addresses import Addresses, lsp_addresses
from .context import LflowContext
from .stages import Stage
from .table import LflowTable, rport_ip_owner

L2 = Stage.LS_IN_L2_LKUP
NOT_VXLAN = "flags[1] == 0"


def _nat_family(external_ip: str) -> int | None:
    """4 or 6 if `external_ip` is one address (`nat_entry_is_valid`), else None."""
    parsed = lsp_addresses("00:00:00:00:00:00 " + external_ip)  # IPs after a MAC
    if parsed is None or len(parsed.ipv4) + len(parsed.ipv6) != 1:
        return None
    return 4 if parsed.ipv4 else 6


def _family_of(nat: IdlRow) -> int | None:
    return _nat_family(str(nat.external_ip))


@dataclass(frozen=True, slots=True)
class _RouterAddresses:
    """What a router's switch ports all ask for of it (once per router and build)."""

    vips: tuple[set[str], set[str]]  # its VIPs, IPv4 and IPv6
    # The external IPs of its valid NAT rules other than SNAT that are no VIP, with
    # their family, in rule (UUID) order; and the external MACs of all those rules.
    nat_ips: dict[str, int]
    macs: list[str]


def _router_addresses(ctx: LflowContext, router: Datapath) -> _RouterAddresses:
    vips = _router_vips(ctx, router.key)
    rows = [r for r in router.nb.nat if isinstance(r, IdlRow)] \
        if isinstance(router.nb.nat, list) else []
    nat_ips: dict[str, int] = {}
    macs: list[str] = []
    for nat in sorted(rows, key=lambda r: r.uuid):
        family = cached(nat, "ls_rport_arp.family", _family_of)  # (a row's, once)
        if family is None or nat.type == "snat":
            continue
        ext = str(nat.external_ip)
        if ext not in vips[0 if family == 4 else 1]:
            nat_ips.setdefault(ext, family)
        if nat.external_mac:
            macs.append(str(nat.external_mac))
    return _RouterAddresses(vips, nat_ips, macs)


def _router_vips(ctx: LflowContext, router_key: str) -> tuple[set[str], set[str]]:
    v4: set[str] = set()
    v6: set[str] = set()
    for lb in ctx.lbs.lbs.values():
        if router_key in lb.routers:
            for vip in lb.vips:
                (v4 if vip.vip.family == 4 else v6).add(vip.vip.ip_str)
    return v4, v6


def _reachable(networks: Addresses, ip: str) -> bool:
    addr = ipaddress.ip_address(ip)
    nets = networks.ipv4 if addr.version == 4 else networks.ipv6
    return any(addr in n.network for n in nets)


def _lrp_enabled(lrp: Port) -> bool:
    enabled = lrp.nb.value("enabled")
    return not enabled or bool(enabled[0])


def build_port(ctx: LflowContext, port: Port, out: LflowTable) -> None:
    """The flows of switch port `port` (of type router) for its router port's
    addresses."""
    peer = ctx.ports.peer_of(port)
    if peer is None or not peer.is_lrp or peer.networks is None or not _lrp_enabled(peer):
        return
    dp = port.dp
    flood = len(ctx.ports.router_ports.get(dp.key, [])) != len(dp.nb.ports)
    if flood:
        actions = (f"clone {{outport = {port.json_key}; output; }}; "
                   'outport = "_MC_flood_l2"; output;')
    else:
        actions = f"outport = {port.json_key}; output;"

    def request(ip: str, family: int) -> None:
        what = f"arp.op == 1 && arp.tpa == {ip}" if family == 4 \
            else f"nd_ns && nd.target == {ip}"
        out.add(dp, L2, 80, f"{NOT_VXLAN} && {what}", actions, hint=port.nb)

    networks = peer.networks
    cache: dict[str, _RouterAddresses] = ctx.cache.setdefault("ls_rport_arp", {})
    found = cache.get(peer.dp.key)
    if found is None:  # (once per router and build: its switch ports all ask)
        found = cache[peer.dp.key] = _router_addresses(ctx, peer.dp)
    vips = found.vips
    for family, ips in ((4, vips[0]), (6, vips[1])):
        for ip in sorted(ips):
            if _reachable(networks, ip):
                request(ip, family)
    only = ctx.nat_ips.get(peer.dp.key)
    nat_ips = found.nat_ips if only is None else \
        {ip: found.nat_ips[ip] for ip in sorted(only) if ip in found.nat_ips}
    for ext, family in nat_ips.items():
        with out.owned_by(rport_ip_owner(port.name, ext)):
            request(ext, family)
    for net4 in networks.ipv4:
        request(net4.addr_s, 4)
    for net6 in networks.ipv6:
        request(net6.addr_s, 6)
    if flood:
        macs = [networks.ea_s, *found.macs]
        ordered = shash_order(dict.fromkeys(macs))
        out.add(dp, L2, 75, f"eth.src == {{{', '.join(ordered)}}} && "
                "(arp.op == 1 || rarp.op == 3 || nd_ns)", 'outport = "_MC_flood_l2"; output;')
