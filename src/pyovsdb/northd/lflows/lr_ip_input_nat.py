"""The `lr_in_ip_input` flows a router's NAT rules and `gateway_mtu` options ask for,
and the ARP reply every router address, NAT address and VIP shares, as ovn-northd
23.03 writes them (`build_lrouter_arp_flow`, `build_lrouter_arp_nd_for_datapath`,
`build_lrouter_nat_arp_nd_flow`, `build_lrouter_port_nat_arp_nd_flow`, the IP input
parts of `build_lrouter_ingress_flow` and `build_check_pkt_len_flows_for_lrp`).

Rules kept here:
- Every router answers ARP/ND for the external IP of each NAT rule that has one
  address (90, any inport), SNAT rules once per unique SNAT IP (its first rule); on a
  distributed gateway port the answer is given only where it belongs (92: on the chassis
  of the rule's logical port with its external MAC, if it is distributed, else on the
  gateway chassis) and dropped elsewhere (91). With several distributed gateway ports a
  rule belongs to its `gateway_port`, or else to the port whose networks hold its IP.
- The flows of NAT rules 23.03 applies (`lrouter_check_nat_entry`, checked once for
  every router area by `lr_nat_rules.check_rule`), on gateway routers and routers with
  distributed gateway ports only: SNAT traffic from the gateway port's own external IP
  goes on (120), and a distributed rule's packets too big for the gateway port's
  `gateway_mtu` get an ICMP error from the rule's own addresses (160).
- A router port with `gateway_mtu` answers packets that are too big on it with an
  ICMP error from its first address of the family (150), through admission again.
- NAT addresses and MACs are written as NB has them where 23.03 prints the NB strings
  (external IP in the 120/160 matches, external MAC), parsed and reprinted elsewhere;
  an external MAC counts if it starts with one (`eth_addr_from_string`).
"""

from __future__ import annotations

from ...idl.row import IdlRow
from ..build.datapaths import Datapath, smap_int
from ..build.ports import Port
from ..build.ports_addresses import parse_mac
from ..build.ports_router import is_nat_gateway_port
from .context import CoppProto, LflowContext
from .lr_ip_input_v6 import INPORT_ETH_ADDR, IP_INPUT, nd_flow, sn_addr
from .lr_nat_rules import NatRule, nat_rules
from .router_facts import Nat, router_facts
from .table import LflowTable, nat_ip_owner

PKT_LARGER = "reg9[1]"  # REGBIT_PKT_LARGER
EGRESS_LOOPBACK = "reg9[0]"  # REGBIT_EGRESS_LOOPBACK
ADMISSION_TABLE = 0


def arp_flow(ctx: LflowContext, out: LflowTable, dp: Datapath, port: Port | None,
             ip: str, mac: str, extra: str, drop: bool, priority: int,
             hint: IdlRow | None) -> None:
    """A reply to ARP requests for `ip` (`build_lrouter_arp_flow`)."""
    match = f"inport == {port.json_key} && " if port is not None else ""
    match += f"arp.op == 1 && arp.tpa == {ip}"
    if extra:
        match += " && " + extra
    if drop:
        actions = ctx.drop_action
    else:
        actions = (f"eth.dst = eth.src; eth.src = {mac}; arp.op = 2; /* ARP reply */ "
                   f"arp.tha = arp.sha; arp.sha = {mac}; arp.tpa <-> arp.spa; "
                   "outport = inport; flags.loopback = 1; output;")
    out.add(dp, IP_INPUT, priority, match, actions, hint=hint)


def _nat_reply(ctx: LflowContext, out: LflowTable, dp: Datapath, port: Port | None,
               nat: Nat, mac: str, extra: str, drop: bool, priority: int) -> None:
    if nat.is_v6:
        addr = nat.external.ipv6[0]
        nd_flow(ctx, out, dp, port, "nd_na", addr.addr_s, sn_addr(addr.addr), mac, extra,
                drop, priority, nat.nb)
    else:
        arp_flow(ctx, out, dp, port, nat.external.ipv4[0].addr_s, mac, extra, drop,
                 priority, nat.nb)


def _replying_nats(ctx: LflowContext, dp: Datapath) -> list[tuple[Nat, str]]:
    """The rules ARP/ND is answered for, with their external IP as NB writes it: the
    non-SNAT ones, then the first of each unique SNAT IP's (those of the IPs built)."""
    facts = router_facts(ctx, dp)
    nats = [n for n in facts.nats if n.type != "snat"]
    nats += [entries[0] for entries in facts.snat_ips.values() if entries]
    return [(n, ip) for n in nats if ctx.nat_ip_built(dp.key, ip := str(n.nb.external_ip))]


def build_dp_nat(ctx: LflowContext, dp: Datapath, out: LflowTable) -> None:
    """The per-router replies for NAT external IPs (90)."""
    for nat, ip in _replying_nats(ctx, dp):
        with out.owned_by(nat_ip_owner(dp, ip)):
            _nat_reply(ctx, out, dp, None, nat, INPORT_ETH_ADDR, "", False, 90)


def build_port_nat(ctx: LflowContext, port: Port, out: LflowTable) -> None:
    """The replies for NAT external IPs on distributed gateway port `port` (92, 91)."""
    assert port.cr_port is not None
    cr = ctx.ports.ports[port.cr_port]
    for nat, ip in _replying_nats(ctx, port.dp):
        if not is_nat_gateway_port(nat.nb, port, len(router_facts(ctx, port.dp).l3dgw_ports)):
            continue
        if nat.external_mac and parse_mac(nat.external_mac) is not None \
                and nat.logical_port:
            mac, resident = nat.external_mac, f'is_chassis_resident("{nat.logical_port}")'
        else:
            mac, resident = INPORT_ETH_ADDR, f"is_chassis_resident({cr.json_key})"
        with out.owned_by(nat_ip_owner(port.dp, ip)):
            _nat_reply(ctx, out, port.dp, port, nat, mac, resident, False, 92)
            _nat_reply(ctx, out, port.dp, port, nat, mac, "", True, 91)


def build_dp_nat_ingress(ctx: LflowContext, dp: Datapath, out: LflowTable) -> None:
    """The flows of the NAT rules 23.03 applies (120, 160), checked as the NAT stages
    check them (`lr_nat_rules.nat_rules`)."""
    facts = router_facts(ctx, dp)
    if not facts.is_gw_router and not facts.l3dgw_ports:
        return
    for rule in nat_rules(ctx, dp):
        if rule.gw_port is None:
            continue  # on a gateway router: nothing here
        with out.owned_by(nat_ip_owner(dp, rule.external_ip)):
            _ingress(ctx, out, dp, rule)


def _ingress(ctx: LflowContext, out: LflowTable, dp: Datapath, rule: NatRule) -> None:
    """One rule's SNAT pass from the gateway port's own IP (120) and too-big errors
    (160)."""
    assert rule.gw_port is not None
    row = rule.nb
    gw, ext, v = rule.gw_port, rule.external_ip, rule.v
    if rule.type == "snat":
        out.add(dp, IP_INPUT, 120, f"inport == {gw.json_key} && ip{v}.src == {ext}",
                "next;", hint=row)
    mtu = smap_int(gw.options, "gateway_mtu")
    if not rule.distributed or not mtu:
        return
    if rule.is_v6:
        error = (f"icmp6_error {{{EGRESS_LOOPBACK} = 1; {PKT_LARGER} = 0; "
                 f"eth.dst = eth.src; eth.src = {rule.external_mac}; ip6.dst = ip6.src; "
                 f"ip6.src = {ext}; ip.ttl = 254; icmp6.type = 2; /* Packet Too Big. */ "
                 f"icmp6.code = 0; icmp6.frag_mtu = {mtu}; ")
        meter = ctx.copp_meter(dp, CoppProto.ICMP6_ERR)
    else:
        error = (f"icmp4_error {{{EGRESS_LOOPBACK} = 1; {PKT_LARGER} = 0; "
                 f"eth.dst = eth.src; eth.src = {rule.external_mac}; ip4.dst = ip4.src; "
                 f"ip4.src = {ext}; ip.ttl = 254; icmp4.type = 3; /* Destination "
                 "Unreachable. */ icmp4.code = 4; /* Frag Needed and DF was Set. */ "
                 f"icmp4.frag_mtu = {mtu}; ")
        meter = ctx.copp_meter(dp, CoppProto.ICMP4_ERR)
    out.add(dp, IP_INPUT, 160,
            f"inport == {gw.json_key} && {PKT_LARGER} && {EGRESS_LOOPBACK} == 0 && "
            f"ip{v} && ip{v}.dst == {ext}",
            error + f"outport = {gw.json_key}; flags.loopback = 1; output; }};",
            hint=row, meter=meter)


def build_port_pkt_big(ctx: LflowContext, port: Port, out: LflowTable) -> None:
    """The ICMP errors for packets too big for router port `port`'s `gateway_mtu`
    (150)."""
    mtu = smap_int(port.options, "gateway_mtu")
    if mtu <= 0:
        return
    assert port.networks is not None
    dp = port.dp
    ea = port.networks.ea_s
    head = f"inport == {port.json_key} && "
    tail = f" && {PKT_LARGER} && {EGRESS_LOOPBACK} == 0"
    regs = f"{EGRESS_LOOPBACK} = 1; {PKT_LARGER} = 0; eth.dst = {ea}; "
    nxt = f"next(pipeline=ingress, table={ADMISSION_TABLE}); }};"
    if port.networks.ipv4:
        out.add(dp, IP_INPUT, 150, head + "ip4" + tail,
                f"icmp4_error {{{regs}ip4.dst = ip4.src; "
                f"ip4.src = {port.networks.ipv4[0].addr_s}; ip.ttl = 255; icmp4.type = 3; "
                "/* Destination Unreachable. */ icmp4.code = 4; /* Frag Needed and DF "
                f"was Set. */ icmp4.frag_mtu = {mtu}; " + nxt,
                hint=port.nb, meter=ctx.copp_meter(dp, CoppProto.ICMP4_ERR))
    if port.networks.ipv6:
        out.add(dp, IP_INPUT, 150, head + "ip6" + tail,
                f"icmp6_error {{{regs}ip6.dst = ip6.src; "
                f"ip6.src = {port.networks.ipv6[0].addr_s}; ip.ttl = 255; icmp6.type = 2; "
                f"/* Packet Too Big. */ icmp6.code = 0; icmp6.frag_mtu = {mtu}; " + nxt,
                hint=port.nb, meter=ctx.copp_meter(dp, CoppProto.ICMP6_ERR))
