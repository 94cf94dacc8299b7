"""The router's IP input stage (`lr_in_ip_input`, all of it), as ovn-northd 23.03
writes it: what the router answers itself (ICMP echo, ARP and ND for its addresses,
its NAT external IPs and load-balancer VIPs, BFD, DHCPv6 replies), the ICMP errors it
sends (TTL expired, port unreachable, packet too big), and the traffic it drops.

Rules kept here (23.03's `build_misc_local_traffic_drop_flows_for_lrouter`,
`build_lrouter_ipv4_ip_input`, `build_lrouter_bfd_flows`,
`build_lrouter_drop_own_dest`; the IPv6 and NAT halves are in `lr_ip_input_v6` and
`lr_ip_input_nat`):
- Per router: the fixed drops and passes (bad sources, ARP/ND not answered, reserved
  and other multicast, broadcast, TTL expiry), with multicast passed when the router
  relays it (`mcast_relay`) and IGMP/MLD with TTL 1 passed when one of its enabled
  ports floods multicast statically (`mcast_flood`).
- Per router port but its chassisredirect port: the source and echo flows over all
  its IPv4 networks, per network the TTL-expired reply (a distributed gateway port
  swaps addresses rather than naming its own) and the ARP reply; the ARP reply is
  limited to the gateway chassis on a distributed gateway port whose peer switch has
  a localnet port, and on other ports of such a router only with
  `reside-on-redirect-chassis` and a single distributed gateway port.
- The router's reachable VIPs are answered in one ARP and one ND flow per port, on
  the address sets `$_rtr_lb_<tunnel key>_ip4/6`.
- Traffic to the router's own addresses is dropped (60) unless the address is a SNAT
  IP or a VIP (those are dropped later, if unSNAT did not apply), and not at all when
  the router SNATs load-balanced traffic to its port IPs (`lb_force_snat_ip=router_ip`).
- A port with an NB BFD session (`logical_port`) passes BFD from its addresses and
  hands BFD to them to `handle_bfd_msg` (the Copp `bfd` meter).
- Order: per router first (23.03's walk by datapath), then per port.
- Drops use `ctx.drop_action` (23.03's `debug_drop_action()`).
- What the router's NAT rules derive (the NAT replies and rules' flows, the drops of
  its own addresses, which read its SNAT IPs) is the router's NAT's (`nat_owner`),
  built again alone by `build_nat` when its rules change; of that, what is a port's
  alone is `nat_port_owner`'s.
"""

from __future__ import annotations

from ..build.datapaths import Datapath, smap_bool
from ..build.ports import Port
from ..build.ports_addresses import Ipv4Net
from . import lr_ip_input_nat as nat
from . import lr_ip_input_v6 as v6
from .context import CoppProto, LflowContext
from .lr_ip_input_v6 import INPORT_ETH_ADDR, IP_INPUT
from .router_facts import router_facts, router_vips
from .table import LflowTable, nat_owner, nat_port_owner

EGRESS_LOOPBACK = "reg9[0]"  # REGBIT_EGRESS_LOOPBACK
BFD_PORT = 3784


def build(ctx: LflowContext, out: LflowTable) -> None:
    """Every flow of this area's stages."""
    bfd_ports = {str(row.logical_port) for row in ctx.nb_rows("BFD")}
    for dp in ctx.routers():
        router_ports = [p for p in ctx.ports_of(dp) if p.is_lrp]
        with out.owned_by(("dp", dp.key)):
            for port in router_ports:
                with out.owned_by(("port", port.name)):
                    nat.build_port_pkt_big(ctx, port, out)
            _misc(ctx, dp, [p for p in ctx.all_ports_of(dp) if p.is_lrp], out)
            with out.owned_by(nat_owner(dp)):
                nat.build_dp_nat(ctx, dp, out)
                nat.build_dp_nat_ingress(ctx, dp, out)
    for dp in ctx.routers():
        for port in ctx.ports_of(dp):
            if not port.is_lrp:
                continue
            with out.owned_by(("port", port.name)):
                v6.build_dhcpv6_reply(port, out)
                v6.build_port_v6(ctx, port, out)
                _port_v4(ctx, port, port.name in bfd_ports, out)


def _misc(ctx: LflowContext, dp: Datapath, ports: list[Port], out: LflowTable) -> None:
    drop = ctx.drop_action
    if any(p.enabled and smap_bool(p.options, "mcast_flood") for p in ports):
        out.add(dp, IP_INPUT, 120, "igmp && ip.ttl == 1", "next;")
        out.add(dp, IP_INPUT, 120, "(mldv1 || mldv2) && ip.ttl == 1", "next;")
    out.add(dp, IP_INPUT, 100,
            "ip4.src_mcast ||ip4.src == 255.255.255.255 || ip4.src == 127.0.0.0/8 || "
            "ip4.dst == 127.0.0.0/8 || ip4.src == 0.0.0.0/8 || ip4.dst == 0.0.0.0/8", drop)
    out.add(dp, IP_INPUT, 85, "arp || nd", drop)
    out.add(dp, IP_INPUT, 84, "nd_rs || nd_ra", "next;")
    out.add(dp, IP_INPUT, 83, "ip6.mcast_rsvd", drop)
    relay = smap_bool(dp.nb.options, "mcast_relay")
    out.add(dp, IP_INPUT, 82, "ip4.mcast || ip6.mcast", "next;" if relay else drop)
    out.add(dp, IP_INPUT, 50, "eth.bcast", drop)
    out.add(dp, IP_INPUT, 32, "ip.ttl == {0, 1} && !ip.later_frag && "
            "(ip4.mcast || ip6.mcast)", drop)
    out.add(dp, IP_INPUT, 30, "ip.ttl == {0, 1}", drop)
    out.add(dp, IP_INPUT, 0, "1", "next;")


def _bcast_s(net: Ipv4Net) -> str:
    return str(net.network.broadcast_address)


def _v4_list(nets: tuple[Ipv4Net, ...], bcast: bool) -> str:
    """`op_put_v4_networks`: one address bare, else braces (with broadcasts)."""
    if not bcast and len(nets) == 1:
        return nets[0].addr_s
    words: list[str] = []
    for n in nets:
        words.append(n.addr_s)
        if bcast:
            words.append(_bcast_s(n))
    return "{" + ", ".join(words) + "}"


def _bfd(ctx: LflowContext, port: Port, out: LflowTable) -> None:
    assert port.networks is not None
    dp = port.dp
    meter = ctx.copp_meter(dp, CoppProto.BFD)
    lists = []
    if port.networks.ipv4:
        lists.append(("ip4", _v4_list(port.networks.ipv4, False)))
    if port.networks.ipv6:
        lists.append(("ip6", v6.v6_list(port.networks.ipv6)))
    for family, ips in lists:
        out.add(dp, IP_INPUT, 110, f"{family}.src == {ips} && udp.dst == {BFD_PORT}",
                "next; ", hint=port.nb)
        out.add(dp, IP_INPUT, 110, f"{family}.dst == {ips} && udp.dst == {BFD_PORT}",
                "handle_bfd_msg(); ", hint=port.nb, meter=meter)


def _arp_resident(ctx: LflowContext, port: Port) -> str:
    """The chassis check of the ARP replies for the port's own addresses."""
    dgps = router_facts(ctx, port.dp).l3dgw_ports
    peer = ctx.ports.peer_of(port)
    if not dgps or peer is None or not ctx.ports.localnet_ports.get(peer.dp.key):
        return ""
    if port.cr_port is not None:
        key = ctx.ports.ports[port.cr_port].json_key
    elif smap_bool(port.options, "reside-on-redirect-chassis") and len(dgps) == 1 \
            and dgps[0].cr_port is not None:
        key = ctx.ports.ports[dgps[0].cr_port].json_key
    else:
        return ""
    return f" && is_chassis_resident({key})"


def _unreachable(ctx: LflowContext, port: Port, net: Ipv4Net, out: LflowTable) -> None:
    dp = port.dp
    icmp_err = ctx.copp_meter(dp, CoppProto.ICMP4_ERR)
    tcp_reset = ctx.copp_meter(dp, CoppProto.TCP_RESET)
    base = f"ip4 && ip4.dst == {net.addr_s} && !ip.later_frag"
    swap = "eth.dst <-> eth.src; ip4.dst <-> ip4.src;"
    icmp = f"icmp4 {{{swap} ip.ttl = 255; icmp4.type = 3; "
    out.add(dp, IP_INPUT, 80, base + " && udp", icmp + "icmp4.code = 3; next; };",
            hint=port.nb, meter=icmp_err)
    out.add(dp, IP_INPUT, 80, base + " && tcp", f"tcp_reset {{{swap} next; }};",
            hint=port.nb, meter=tcp_reset)
    out.add(dp, IP_INPUT, 80, base + " && sctp", f"sctp_abort {{{swap} next; }};",
            hint=port.nb, meter=tcp_reset)
    out.add(dp, IP_INPUT, 70, base, icmp + "icmp4.code = 2; next; };",
            hint=port.nb, meter=icmp_err)


def _drop_own_dest(ctx: LflowContext, port: Port, out: LflowTable) -> None:
    """Traffic to the port's addresses that are neither SNAT IPs nor VIPs (60)."""
    assert port.networks is not None
    facts, lb_ips = router_facts(ctx, port.dp), router_vips(ctx, port.dp)
    for family, nets, vips in (("ip4", port.networks.ipv4, lb_ips.v4),
                               ("ip6", port.networks.ipv6, lb_ips.v6)):
        ips = [n.addr_s for n in nets
               if n.addr_s not in facts.snat_ips and n.addr_s not in vips]
        if ips:
            out.add(port.dp, IP_INPUT, 60, f"{family}.dst == {{{', '.join(ips)}}}",
                    ctx.drop_action, hint=port.nb)


def _port_v4(ctx: LflowContext, port: Port, has_bfd: bool, out: LflowTable) -> None:
    """The IPv4 flows (and BFD, the VIP replies, the drops) of router port `port`."""
    networks = port.networks
    assert networks is not None
    dp = port.dp
    nets = networks.ipv4
    if nets:
        out.add(dp, IP_INPUT, 100, f"ip4.src == {_v4_list(nets, True)} && "
                f"{EGRESS_LOOPBACK} == 0", ctx.drop_action, hint=port.nb)
        out.add(dp, IP_INPUT, 90, f"ip4.dst == {_v4_list(nets, False)} && "
                "icmp4.type == 8 && icmp4.code == 0",
                "ip4.dst <-> ip4.src; ip.ttl = 255; icmp4.type = 0; flags.loopback = 1; "
                "next; ", hint=port.nb)
    if has_bfd:
        _bfd(ctx, port, out)
    meter = ctx.copp_meter(dp, CoppProto.ICMP4_ERR)
    for net in nets:
        swap = "ip4.dst <-> ip4.src" if port.cr_port is not None \
            else f"ip4.dst = ip4.src; ip4.src = {net.addr_s}"
        out.add(dp, IP_INPUT, 31, f"inport == {port.json_key} && ip4 && "
                "ip.ttl == {0, 1} && !ip.later_frag",
                "icmp4 {eth.dst <-> eth.src; icmp4.type = 11; /* Time exceeded */ "
                f"icmp4.code = 0; /* TTL exceeded in transit */ {swap} ; ip.ttl = 254; "
                f"outport = {port.json_key}; flags.loopback = 1; output; }};",
                hint=port.nb, meter=meter)
    resident = _arp_resident(ctx, port)
    for net in nets:
        nat.arp_flow(ctx, out, dp, port, net.addr_s, INPORT_ETH_ADDR,
                     f"arp.spa == {net.network.network_address}/{net.plen}{resident}",
                     False, 90, port.nb)
    cr = ctx.ports.ports[port.cr_port] if port.cr_port is not None else None
    vip_resident = f"is_chassis_resident({cr.json_key})" if cr is not None else ""
    reach_v4, reach_v6 = ctx.lbs.reachable.get(dp.key, (frozenset(), frozenset()))
    if reach_v4:
        nat.arp_flow(ctx, out, dp, port, f"$_rtr_lb_{dp.tunnel_key}_ip4", INPORT_ETH_ADDR,
                     vip_resident, False, 90, None)
    if reach_v6:
        v6.nd_flow(ctx, out, dp, port, "nd_na", f"$_rtr_lb_{dp.tunnel_key}_ip6", None,
                   INPORT_ETH_ADDR, vip_resident, False, 90, None)
    facts = router_facts(ctx, dp)
    if not facts.is_gw_router and not facts.l3dgw_ports:
        for net in nets:
            _unreachable(ctx, port, net, out)
    with out.owned_by(nat_port_owner(port.dp.key, port.name)):
        build_port_nat(ctx, port, out)


def build_port_nat(ctx: LflowContext, port: Port, out: LflowTable) -> None:
    """What the router's NAT rules (and VIPs) derive on router port `port` (the caller
    owns them as `nat_port_owner`)."""
    if not router_facts(ctx, port.dp).lb_force_snat_router_ip:
        _drop_own_dest(ctx, port, out)
    if port.cr_port is not None:
        nat.build_port_nat(ctx, port, out)


def build_nat(ctx: LflowContext, out: LflowTable, dp: Datapath) -> None:
    """What router `dp`'s NAT rules derive here (the caller owns them as
    `nat_owner`): the replies for its NAT addresses, its rules' own flows, and per
    router port the drops of its addresses and the gateway's NAT replies."""
    nat.build_dp_nat(ctx, dp, out)
    nat.build_dp_nat_ingress(ctx, dp, out)
    for port in ctx.ports_of(dp):
        if port.is_lrp:
            with out.owned_by(nat_port_owner(port.dp.key, port.name)):
                build_port_nat(ctx, port, out)
