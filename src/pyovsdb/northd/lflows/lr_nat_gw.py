"""The flows a router's NAT rules add outside the NAT stages, on a router with
distributed gateway ports: admission and the gateway MTU check of distributed rules,
`lr_in_ip_input` for SNAT sources and too-big packets, `lr_in_arp_resolve` for the
external IPs, `lr_in_gw_redirect` for distributed rules (ovn-northd 23.03's
`build_lrouter_ingress_flow`, `build_lrouter_ingress_nat_check_pkt_len` and the
ARP-resolve and redirect parts of `build_lrouter_nat_defrag_and_lb`'s NAT loop).

Rules kept here:
- ARP resolution is written once per external IP (the first rule that names it, in
  the router's rule order): a packet from the gateway port back to it for that IP is
  dropped (it failed to be NATed), one from elsewhere gets the external MAC of a
  distributed rule or the gateway port's MAC.
- With `redirect-type=bridged` on any of the router's ports, a distributed rule's
  traffic out of the first gateway port resolves its next hop itself.
- A distributed rule's traffic whose logical port is a virtual port not yet claimed
  is dropped rather than redirected (it would reach the gateway from the wrong MAC).
- `gateway_mtu` on the gateway port adds `check_pkt_larger` (MTU plus the Ethernet
  header, 4 more if the peer switch has a VLAN-tagged localnet port) to the
  admission of distributed rules, a `gateway_mtu_bypass` flow 5 above, and an ICMP
  "too big" reply from the rule's external address, metered by the router's Copp.
"""

from __future__ import annotations

from ..nodes.datapaths import Datapath, smap_int
from ..nodes.ports import Port
from .context import CoppProto, LflowContext
from .lr_nat_rules import EGRESS_LOOPBACK, NatRule
from .stages import Stage
from .table import LflowTable

PKT_LARGER = "reg9[1]"
INPORT_ETH_ADDR = "xreg0[0..47]"
ETH_HEADER_LEN = 14
VLAN_ETH_HEADER_LEN = 18


def l2_header_size(ctx: LflowContext, port: Port) -> int:
    """`build_gateway_get_l2_hdr_size`: room for a VLAN tag if a localnet port of the
    peer switch asks for one."""
    peer = ctx.ports.peer_of(port)
    if peer is not None and peer.dp.is_switch:
        for localnet in ctx.ports.localnet_ports.get(peer.dp.key, []):
            if localnet.nb.tag_request is not None:
                return VLAN_ETH_HEADER_LEN
    return ETH_HEADER_LEN


def gateway_mtu_flows(ctx: LflowContext, out: LflowTable, port: Port, stage: Stage,
                      prio_low: int, prio_high: int, match: str, actions: str,
                      rule: NatRule) -> None:
    """`build_gateway_mtu_flow` for a rule's flow on `port`."""
    mtu = smap_int(port.options, "gateway_mtu", 0)
    check = ""
    if mtu > 0:
        check = f"{PKT_LARGER} = check_pkt_larger({mtu + l2_header_size(ctx, port)}); "
    out.add(port.dp, stage, prio_low, match, check + actions, hint=rule.nb)
    bypass = port.options.get("gateway_mtu_bypass")
    if mtu > 0 and bypass is not None:
        out.add(port.dp, stage, prio_high, f"{match} && ({bypass})", actions,
                hint=rule.nb)


def arp_resolve(out: LflowTable, dp: Datapath, rule: NatRule, first_dgp: Port,
                redirect_bridged: bool, drop: str) -> None:
    gw = rule.gw_port
    assert gw is not None and gw.networks is not None
    v, ext = rule.v, rule.external_ip
    out.add(dp, Stage.LR_IN_ARP_RESOLVE, 150,
            f"inport == {gw.json_key} && outport == {gw.json_key} && ip{v}.dst == {ext}",
            drop, hint=rule.nb)
    next_hop = "xxreg0" if rule.is_v6 else "reg0"
    mac = rule.external_mac if rule.distributed else gw.networks.ea_s
    out.add(dp, Stage.LR_IN_ARP_RESOLVE, 100,
            f"outport == {gw.json_key} && {next_hop} == {ext}",
            f"eth.dst = {mac}; next;", hint=rule.nb)
    if redirect_bridged and rule.distributed:
        get = "get_nd(outport, xxreg0)" if rule.is_v6 else "get_arp(outport, reg0)"
        out.add(dp, Stage.LR_IN_ARP_RESOLVE, 90,
                f"outport == {first_dgp.json_key} && ip{v}.src == {rule.logical_ip} "
                f'&& is_chassis_resident("{rule.logical_port}")',
                f"{get}; next;", hint=rule.nb)


def ingress(ctx: LflowContext, out: LflowTable, dp: Datapath, rule: NatRule) -> None:
    """`build_lrouter_ingress_flow`, on a router with a distributed gateway port."""
    gw = rule.gw_port
    assert gw is not None and gw.networks is not None
    if rule.type == "snat":
        out.add(dp, Stage.LR_IN_IP_INPUT, 120,
                f"inport == {gw.json_key} && ip{rule.v}.src == {rule.external_ip}",
                "next;", hint=rule.nb)
    if not rule.distributed:
        return
    match = (f"eth.dst == {rule.mac} && inport == {gw.json_key} && "
             f'is_chassis_resident("{rule.logical_port}")')
    gateway_mtu_flows(ctx, out, gw, Stage.LR_IN_ADMISSION, 50, 55, match,
                      f"{INPORT_ETH_ADDR} = {gw.networks.ea_s}; next;", rule)
    mtu = smap_int(gw.options, "gateway_mtu", 0)
    if mtu:
        _too_big(ctx, out, dp, rule, gw, mtu)


def _too_big(ctx: LflowContext, out: LflowTable, dp: Datapath, rule: NatRule, gw: Port,
             mtu: int) -> None:
    """`build_lrouter_ingress_nat_check_pkt_len`."""
    v, ext = rule.v, rule.external_ip
    match = (f"inport == {gw.json_key} && {PKT_LARGER} && {EGRESS_LOOPBACK} == 0 && "
             f"ip{v} && ip{v}.dst == {ext}")
    if rule.is_v6:
        kind = ("icmp6_error", "icmp6.type = 2; /* Packet Too Big. */ icmp6.code = 0; "
                f"icmp6.frag_mtu = {mtu}; ", CoppProto.ICMP6_ERR)
    else:
        kind = ("icmp4_error", "icmp4.type = 3; /* Destination Unreachable. */ "
                "icmp4.code = 4; /* Frag Needed and DF was Set. */ "
                f"icmp4.frag_mtu = {mtu}; ", CoppProto.ICMP4_ERR)
    error, icmp, proto = kind
    actions = (f"{error} {{{EGRESS_LOOPBACK} = 1; {PKT_LARGER} = 0; eth.dst = eth.src; "
               f"eth.src = {rule.external_mac}; ip{v}.dst = ip{v}.src; ip{v}.src = {ext}; "
               f"ip.ttl = 254; {icmp}outport = {gw.json_key}; flags.loopback = 1; "
               "output; };")
    out.add(dp, Stage.LR_IN_IP_INPUT, 160, match, actions, hint=rule.nb,
            meter=ctx.copp_meter(dp, proto))


def gw_redirect(ctx: LflowContext, out: LflowTable, dp: Datapath, rule: NatRule) -> None:
    """A distributed rule's traffic leaves from its logical port's chassis, with the
    rule's external MAC and IP as the source of ARP requests the next stage makes."""
    gw = rule.gw_port
    assert gw is not None
    match = f"ip{rule.v}.src == {rule.logical_ip} && outport == {gw.json_key}"
    lport = ctx.ports.ports.get(rule.logical_port)
    if lport is not None and lport.is_lsp and lport.type == "virtual":
        out.add(dp, Stage.LR_IN_GW_REDIRECT, 80, match, ctx.drop_action, hint=rule.nb)
    src = "xxreg1" if rule.is_v6 else "reg1"
    out.add(dp, Stage.LR_IN_GW_REDIRECT, 100,
            f'{match} && is_chassis_resident("{rule.logical_port}")',
            f"eth.src = {rule.external_mac}; {src} = {rule.external_ip}; next;",
            hint=rule.nb)
