"""The IPv6 half of a router port's `lr_in_ip_input` flows, and the ND reply every
router address, NAT address and load-balancer VIP shares, as ovn-northd 23.03 writes
them (`build_lrouter_nd_flow`, `build_dhcpv6_reply_flows_for_lrouter_port`,
`build_ipv6_input_flows_for_lrouter_port`).

Rules kept here:
- Every IPv6 address of a port counts, the link-local one its MAC gives included
  (it is last), except for the TTL-expired reply, which names the source network and
  so skips link-local networks (those in fe80::/64, as `in6_is_lla` tests).
- A chassisredirect port gets none of these flows: nothing enters a router on it.
- DHCPv6 replies to any of the port's addresses are punted on every router port,
  whether or not it asks for prefix delegation.
- A distributed gateway port answers ND only on the gateway chassis
  (`is_chassis_resident` of its chassisredirect port), and its TTL-expired reply swaps
  the addresses instead of naming the port's own.
- Port-unreachable replies (TCP reset, SCTP abort, ICMPv6) are written only on a router
  that is neither a gateway router nor one with a distributed gateway port.
- ND answers carry the Copp `nd-na` meter; ICMPv6 errors `icmp6-error`, TCP resets and
  SCTP aborts `tcp-reset`. A drop never has a meter.
"""

from __future__ import annotations

import ipaddress

from ...idl.row import IdlRow
from ..build.datapaths import Datapath
from ..build.ports import Port
from ..build.ports_addresses import Ipv6Net, format_ipv6
from .context import CoppProto, LflowContext
from .router_facts import router_facts
from .stages import Stage
from .table import LflowTable

IP_INPUT = Stage.LR_IN_IP_INPUT
INPORT_ETH_ADDR = "xreg0[0..47]"  # REG_INPORT_ETH_ADDR: the inport's MAC


def sn_addr(addr: ipaddress.IPv6Address) -> str:
    """The solicited-node multicast address of `addr` (`in6_addr_solicited_node`)."""
    low = int(addr) & 0xFFFFFF
    return format_ipv6(ipaddress.IPv6Address((0xFF02 << 112) | (1 << 32) | (0xFF << 24)
                                             | low))


def network_s(net: Ipv6Net) -> str:
    return format_ipv6(net.network.network_address)


def is_lla(net: Ipv6Net) -> bool:
    """`in6_is_lla` of the network: its first 64 bits are fe80:0:0:0 (fe80:0:0:1::/64
    is no link-local network here, though fe80::/10 holds it)."""
    return int(net.network.network_address) >> 64 == 0xFE80 << 48


def v6_list(nets: tuple[Ipv6Net, ...]) -> str:
    """`op_put_v6_networks`: one address bare, several in braces."""
    if len(nets) == 1:
        return nets[0].addr_s
    return "{" + ", ".join(n.addr_s for n in nets) + "}"


def nd_flow(ctx: LflowContext, out: LflowTable, dp: Datapath, port: Port | None,
            action: str, ip: str, sn_ip: str | None, mac: str, extra: str,
            drop: bool, priority: int, hint: IdlRow | None) -> None:
    """A reply to neighbor solicitations for `ip` (`build_lrouter_nd_flow`); `extra`
    is appended to the match, `sn_ip` restricts it to the two destinations."""
    match = f"inport == {port.json_key} && " if port is not None else ""
    if sn_ip is not None:
        match += f"ip6.dst == {{{ip}, {sn_ip}}} && "
    match += f"nd_ns && nd.target == {ip}"
    if extra:
        match += " && " + extra
    if drop:
        out.add(dp, IP_INPUT, priority, match, ctx.drop_action, hint=hint)
        return
    actions = (f"{action} {{ eth.src = {mac}; ip6.src = nd.target; nd.tll = {mac}; "
               "outport = inport; flags.loopback = 1; output; };")
    out.add(dp, IP_INPUT, priority, match, actions, hint=hint,
            meter=ctx.copp_meter(dp, CoppProto.ND_NA))


def build_dhcpv6_reply(port: Port, out: LflowTable) -> None:
    assert port.networks is not None
    for net in port.networks.ipv6:
        out.add(port.dp, IP_INPUT, 100,
                f"ip6.dst == {net.addr_s} && udp.src == 547 && udp.dst == 546",
                "reg0 = 0; handle_dhcpv6_reply;")


def _unreachable(ctx: LflowContext, out: LflowTable, port: Port, net: Ipv6Net) -> None:
    dp = port.dp
    tcp_reset = ctx.copp_meter(dp, CoppProto.TCP_RESET)
    icmp_err = ctx.copp_meter(dp, CoppProto.ICMP6_ERR)
    base = f"ip6 && ip6.dst == {net.addr_s} && !ip.later_frag"
    swap = "eth.dst <-> eth.src; ip6.dst <-> ip6.src;"
    out.add(dp, IP_INPUT, 80, base + " && tcp", f"tcp_reset {{{swap} next; }};",
            hint=port.nb, meter=tcp_reset)
    out.add(dp, IP_INPUT, 80, base + " && sctp", f"sctp_abort {{{swap} next; }};",
            hint=port.nb, meter=tcp_reset)
    icmp = f"icmp6 {{{swap} ip.ttl = 255; icmp6.type = 1; "
    out.add(dp, IP_INPUT, 80, base + " && udp", icmp + "icmp6.code = 4; next; };",
            hint=port.nb, meter=icmp_err)
    out.add(dp, IP_INPUT, 70, base, icmp + "icmp6.code = 3; next; };",
            hint=port.nb, meter=icmp_err)


def build_port_v6(ctx: LflowContext, port: Port, out: LflowTable) -> None:
    """The IPv6 flows of router port `port` (not a chassisredirect port)."""
    assert port.networks is not None
    dp = port.dp
    nets = port.networks.ipv6
    if nets:
        out.add(dp, IP_INPUT, 90, f"ip6.dst == {v6_list(nets)} && icmp6.type == 128 && "
                "icmp6.code == 0",
                "ip6.dst <-> ip6.src; ip.ttl = 255; icmp6.type = 129; "
                "flags.loopback = 1; next; ", hint=port.nb)
    cr = ctx.ports.ports.get(port.cr_port) if port.cr_port is not None else None
    resident = f"is_chassis_resident({cr.json_key})" if cr is not None else ""
    for net in nets:
        nd_flow(ctx, out, dp, port, "nd_na_router", net.addr_s, sn_addr(net.addr),
                INPORT_ETH_ADDR, resident, False, 90, port.nb)
    facts = router_facts(ctx, dp)
    if not facts.is_gw_router and not facts.l3dgw_ports:
        for net in nets:
            _unreachable(ctx, out, port, net)
    meter = ctx.copp_meter(dp, CoppProto.ICMP6_ERR)
    for net in nets:
        if is_lla(net):
            continue
        swap = "ip6.dst <-> ip6.src" if port.cr_port is not None \
            else f"ip6.dst = ip6.src; ip6.src = {net.addr_s}"
        out.add(dp, IP_INPUT, 31,
                f"inport == {port.json_key} && ip6 && ip6.src == {network_s(net)}/"
                f"{net.plen} && ip.ttl == {{0, 1}} && !ip.later_frag",
                f"icmp6 {{eth.dst <-> eth.src; {swap} ; ip.ttl = 254; icmp6.type = 3; "
                "/* Time exceeded */ icmp6.code = 0; /* TTL exceeded in transit */ "
                f"outport = {port.json_key}; flags.loopback = 1; output; }};",
                hint=port.nb, meter=meter)
