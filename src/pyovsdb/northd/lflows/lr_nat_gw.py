"""The flows a router's NAT rules add outside the NAT stages, on a router with
distributed gateway ports: admission (with the gateway MTU check) of distributed
rules, `lr_in_arp_resolve` for the external IPs, `lr_in_gw_redirect` for distributed
rules (ovn-northd 23.03's `build_lrouter_ingress_flow` and the ARP-resolve and
redirect parts of `build_lrouter_nat_defrag_and_lb`'s NAT loop). The rules' flows in
`lr_in_ip_input` (`build_lrouter_ingress_flow`'s SNAT source and
`build_lrouter_ingress_nat_check_pkt_len`) are `lr_ip_input_nat`'s.

Rules kept here:
- ARP resolution is written once per external IP (the first rule that names it, in
  the router's rule order): a packet from the gateway port back to it for that IP is
  dropped (it failed to be NATed), one from elsewhere gets the external MAC of a
  distributed rule or the gateway port's MAC.
- With `redirect-type=bridged` on any of the router's ports, a distributed rule's
  traffic out of the first gateway port resolves its next hop itself.
- A distributed rule's traffic whose logical port is a virtual port not yet claimed
  is dropped rather than redirected (it would reach the gateway from the wrong MAC).
- A distributed rule's admission checks the packet length as the gateway port's own
  admission does (`gateway_mtu`, `gateway_mtu_bypass`: `lr_admission`'s helper).
"""

from __future__ import annotations

from ..nodes.datapaths import Datapath
from ..nodes.ports import Port
from .context import LflowContext
from .lr_admission import add_gateway_mtu_flow
from .lr_nat_rules import NatRule
from .stages import Stage
from .table import LflowTable

INPORT_ETH_ADDR = "xreg0[0..47]"


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
    """The admission part of `build_lrouter_ingress_flow`: a distributed rule's
    external MAC is the gateway port's on the chassis of the rule's logical port."""
    gw = rule.gw_port
    assert gw is not None and gw.networks is not None
    if not rule.distributed:
        return
    match = (f"eth.dst == {rule.mac} && inport == {gw.json_key} && "
             f'is_chassis_resident("{rule.logical_port}")')
    add_gateway_mtu_flow(ctx, out, gw, Stage.LR_IN_ADMISSION, match,
                         f"{INPORT_ETH_ADDR} = {gw.networks.ea_s}; next;", rule.nb)


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
