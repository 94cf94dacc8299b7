"""The end of the logical router's ingress pipeline, and its IPv6 router
advertisements, as ovn-northd 23.03 writes them: next-hop resolution
(`lr_in_arp_resolve`, in `lr_arp_resolve`), gateway redirection (`lr_in_gw_redirect`),
ARP and ND requests for unresolved next hops (`lr_in_arp_request`), and the router
solicitation responder (`lr_in_nd_ra_options`, `lr_in_nd_ra_response`, in `lr_nd_ra`).

Rules kept here (23.03's `build_gateway_redirect_flows_for_lrouter`,
`build_arp_request_flows_for_lrouter`, the gateway-redirect flows of
`build_lrouter_nat_defrag_and_lb`):
- Gateway redirect: a packet leaving by a distributed gateway port goes to its
  chassisredirect port (50), except when the port faces a switch with VTEP ports
  (such traffic stays distributed). A stateless dnat_and_snat with allowed external
  IPs redirects only their traffic (75) and drops the rest bound for its external IP
  (70, once per gateway port); with exempted ones, their traffic is dropped (75).
  A distributed NAT's own traffic leaves from its chassis with the NAT's MAC and IP as
  source (100), and, when its logical port is virtual, is dropped where that port is
  not (80: unclaimed, it would be centralized). Everything else passes (0).
- ARP request: an unresolved next hop (`eth.dst` still zero) gets an ARP request
  (IPv4) or a neighbor solicitation (IPv6), with the router's Copp `arp-resolve` and
  `nd-ns-resolve` meters (100). A static route's IPv6 next hop (a host address)
  gets its own solicitation to the solicited-node address (200), matched as the route
  writes it. Resolved packets go out (0).
- Order: per router first (in the build's router order), then per port in 23.03's
  port hash table order, so flows several owners ask for keep 23.03's first hint.
  Flows a router's rows ask for are the router's (`("dp", key)`; its static routes'
  solicitations its routes', `routes_owner`, built again alone by `build_routes`), a
  port's flows its own, whichever router's pipeline they are in; what its NAT rules
  derive (the gateway redirects with them, the resolution of its NAT addresses, the
  drops of its SNAT IPs) its NAT's (`nat_owner`; a rule's own, those of its external
  IP: `nat_ip_owner`), built again alone by `build_nat`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection

from ..build.datapaths import Datapath, smap_bool
from ..build.ports_addresses import format_ipv6, format_mac, ipv6_parse_cidr
from . import lr_arp_resolve, lr_nd_ra
from .context import CoppProto, LflowContext, ref_rows
from .lr_nat_rules import nat_rules
from .ls_arp_nd import solicited_node, walk_order
from .router_facts import router_facts
from .stages import Stage
from .table import (
    LflowTable,
    nat_ip_owner,
    nat_owner,
    nat_port_owner,
    route_owner,
    routes_owner,
)

GW_REDIRECT = Stage.LR_IN_GW_REDIRECT
ARP_REQUEST = Stage.LR_IN_ARP_REQUEST


def build(ctx: LflowContext, out: LflowTable) -> None:
    """Every flow of this area's stages."""
    for dp in ctx.routers():
        with out.owned_by(("dp", dp.key)):
            lr_nd_ra.build_router(dp, out)
            lr_arp_resolve.build_router(ctx, dp, out)
            with out.owned_by(nat_owner(dp)):
                _gw_redirect(ctx, dp, out)
            _arp_request(ctx, dp, out)
            with out.owned_by(nat_owner(dp)):
                lr_arp_resolve.build_nat(ctx, dp, out)
                _gw_redirect_nat(ctx, dp, out)
    for port in walk_order(ctx):
        with out.owned_by(("port", port.name)):
            lr_nd_ra.build_port(ctx, port, out)
            lr_arp_resolve.build_port(ctx, port, out)


def build_nat(ctx: LflowContext, out: LflowTable, dp: Datapath) -> None:
    """What router `dp`'s NAT rules derive here (the caller owns them as
    `nat_owner`): its gateway redirects (with its stateless rules'), its NAT
    addresses' resolution, its distributed rules' redirects, and per router port the
    drops of its SNAT IPs and VIPs."""
    _gw_redirect(ctx, dp, out)
    lr_arp_resolve.build_nat(ctx, dp, out)
    _gw_redirect_nat(ctx, dp, out)
    for port in ctx.ports_of(dp):
        if port.is_lrp:
            with out.owned_by(nat_port_owner(port.dp.key, port.name)):
                lr_arp_resolve.build_port_nat(ctx, port, out)


def _gw_redirect(ctx: LflowContext, dp: Datapath, out: LflowTable) -> None:
    nats = [n for n in router_facts(ctx, dp).nats
            if n.type == "dnat_and_snat" and smap_bool(n.nb.options, "stateless")
            and (n.nb.allowed_ext_ips is not None or n.nb.exempted_ext_ips is not None)]
    for gw in lr_arp_resolve.l3dgw_ports(ctx, dp):
        peer = ctx.ports.peer_of(gw)
        if peer is not None and peer.dp.key in ctx.ports.vtep_switches:
            continue
        cr = ctx.ports.ports.get(gw.cr_port) if gw.cr_port is not None else None
        if cr is None:
            continue
        match = f"outport == {gw.json_key}"
        actions = f"outport = {cr.json_key}; next;"
        out.add(dp, GW_REDIRECT, 50, match, actions, hint=gw.nb)
        default_drop = True
        for nat in nats:
            allowed = nat.nb.allowed_ext_ips
            addr_set = allowed if allowed is not None else nat.nb.exempted_ext_ips
            ip = "ip6" if nat.is_v6 else "ip4"
            ext_match = f"{match} && {ip}.src == ${addr_set.name}"
            if allowed is not None:
                out.add(dp, GW_REDIRECT, 75, ext_match, actions, hint=gw.nb)
                if default_drop:
                    out.add(dp, GW_REDIRECT, 70, f"ip && {ip}.dst == {nat.nb.external_ip}",
                            ctx.drop_action)
                    default_drop = False
            else:
                out.add(dp, GW_REDIRECT, 75, ext_match, ctx.drop_action, hint=gw.nb)
    out.add(dp, GW_REDIRECT, 0, "1", "next;")


def _gw_redirect_nat(ctx: LflowContext, dp: Datapath, out: LflowTable) -> None:
    """The distributed NATs' flows (23.03 writes them in its NAT loop)."""
    facts = router_facts(ctx, dp)
    if not facts.is_gw_router and not facts.l3dgw_ports:
        return
    for nat in nat_rules(ctx, dp):
        if not nat.distributed or nat.gw_port is None:
            continue
        row = nat.nb
        ip = "ip6" if nat.is_v6 else "ip4"
        match = f"{ip}.src == {row.logical_ip} && outport == {nat.gw_port.json_key}"
        port = ctx.ports.ports.get(str(row.logical_port))
        reg = "xxreg1" if nat.is_v6 else "reg1"
        with out.owned_by(nat_ip_owner(dp, nat.external_ip)):
            if port is not None and port.is_lsp and port.type == "virtual":
                out.add(dp, GW_REDIRECT, 80, match, ctx.drop_action, hint=row)
            out.add(dp, GW_REDIRECT, 100,
                    f'{match} && is_chassis_resident("{row.logical_port}")',
                    f"eth.src = {row.external_mac}; {reg} = {row.external_ip}; next;",
                    hint=row)


def _host_ipv6(text: str) -> ipaddress.IPv6Address | None:
    """`ipv6_parse_cidr` of a next hop, if it is one IPv6 host address."""
    found = ipv6_parse_cidr(text)
    if isinstance(found, str) or found[1] != 128:
        return None
    return ipaddress.IPv6Address(found[0])


def _multicast_mac(addr: ipaddress.IPv6Address) -> str:
    """`ipv6_multicast_to_ethernet`: 33:33 and the low 32 bits."""
    return format_mac((0x3333 << 32) | (int(addr) & 0xFFFFFFFF))


def build_routes(ctx: LflowContext, out: LflowTable, dp: Datapath,
                 only: Collection[str] | None = None) -> None:
    """What router `dp`'s static routes ask for here (each its own, `route_owner`): a
    solicitation for each IPv6 host next hop; with `only`, for those routes alone."""
    ns_meter = ctx.copp_meter(dp, CoppProto.ND_NS_RESOLVE)
    for route in ref_rows(ctx.current(dp).static_routes):
        if only is not None and route.uuid not in only:
            continue
        nexthop = str(route.nexthop)
        gw = _host_ipv6(nexthop)
        if gw is None:
            continue
        sn = solicited_node(gw)
        with out.owned_by(route_owner(dp.key, route.uuid)):
            out.add(dp, ARP_REQUEST, 200,
                    f"eth.dst == 00:00:00:00:00:00 && ip6 && xxreg0 == {nexthop}",
                    f"nd_ns {{ eth.dst = {_multicast_mac(sn)}; ip6.dst = "
                    f"{format_ipv6(sn)}; nd.target = {nexthop}; output; }};", hint=route,
                    meter=ns_meter)


def _arp_request(ctx: LflowContext, dp: Datapath, out: LflowTable) -> None:
    ns_meter = ctx.copp_meter(dp, CoppProto.ND_NS_RESOLVE)
    if ctx.builds_rules:
        with out.owned_by(routes_owner(dp.key)):
            build_routes(ctx, out, dp)
    out.add(dp, ARP_REQUEST, 100, "eth.dst == 00:00:00:00:00:00 && ip4",
            "arp { eth.dst = ff:ff:ff:ff:ff:ff; arp.spa = reg1; arp.tpa = reg0; "
            "arp.op = 1; output; };", meter=ctx.copp_meter(dp, CoppProto.ARP_RESOLVE))
    out.add(dp, ARP_REQUEST, 100, "eth.dst == 00:00:00:00:00:00 && ip6",
            "nd_ns { nd.target = xxreg0; output; };", meter=ns_meter)
    out.add(dp, ARP_REQUEST, 0, "1", "output;")
