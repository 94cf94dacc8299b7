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

from ...idl.row import IdlRow
from ...ovsdb.hashorder import shash_order
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


def _router_nats(router: IdlRow) -> list[tuple[IdlRow, int]]:
    """The router's valid NAT rules other than SNAT, with their family, in UUID order."""
    out = []
    rows = [r for r in router.nat if isinstance(r, IdlRow)] \
        if isinstance(router.nat, list) else []
    for nat in sorted(rows, key=lambda r: r.uuid):
        family = _nat_family(str(nat.external_ip))
        if family is not None and nat.type != "snat":
            out.append((nat, family))
    return out


# A router's VIPs (IPv4, IPv6) and its valid non-SNAT NAT rules with their family.
RouterAddresses = tuple[tuple[set[str], set[str]], list[tuple[IdlRow, int]]]


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
    cache: dict[str, RouterAddresses] = ctx.cache.setdefault("ls_rport_arp", {})
    found = cache.get(peer.dp.key)
    if found is None:  # (once per router and build: its switch ports all ask)
        found = cache[peer.dp.key] = (_router_vips(ctx, peer.dp.key),
                                      _router_nats(peer.dp.nb))
    vips, nats = found
    for family, ips in ((4, vips[0]), (6, vips[1])):
        for ip in sorted(ips):
            if _reachable(networks, ip):
                request(ip, family)
    router = peer.dp.key
    for nat, family in nats:
        ext = str(nat.external_ip)
        if ext not in vips[0 if family == 4 else 1] and ctx.nat_ip_built(router, ext):
            with out.owned_by(rport_ip_owner(port.name, ext)):
                request(ext, family)
    for net4 in networks.ipv4:
        request(net4.addr_s, 4)
    for net6 in networks.ipv6:
        request(net6.addr_s, 6)
    if flood:
        macs = [networks.ea_s]
        macs += [str(nat.external_mac) for nat, _ in nats if nat.external_mac]
        ordered = shash_order(dict.fromkeys(macs))
        out.add(dp, L2, 75, f"eth.src == {{{', '.join(ordered)}}} && "
                "(arp.op == 1 || rarp.op == 3 || nd_ns)", 'outport = "_MC_flood_l2"; output;')
