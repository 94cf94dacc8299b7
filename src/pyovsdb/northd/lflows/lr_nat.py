"""NAT on logical routers, and the per-router defaults of the NAT, defrag and
load-balancing stages, as ovn-northd 23.03 writes them (`build_lrouter_nat_defrag_and_lb`,
`build_lrouter_force_snat_flows` and `build_lrouter_force_snat_flows_op`).

Stages owned: lr_in_unsnat, lr_in_defrag, lr_in_dnat, lr_in_ecmp_stateful,
lr_out_chk_dnat_local, lr_out_undnat, lr_out_post_undnat, lr_out_snat,
lr_out_post_snat, lr_out_egr_loop: every router's defaults and the flows of its NAT
rules. The flows of each load balancer in those stages are `lr_lb`'s. Of the NAT
rules' flows 23.03 writes in the same loop in other stages, the admission of
distributed rules is written here too (no other area builds it); those of
`lr_in_ip_input`, `lr_in_arp_resolve` and `lr_in_gw_redirect` are their areas'.

Rules kept here:
- Every router passes everything by default (priority 0), and never sends the
  IPv6 NS that ovn-controller makes through conntrack (`lr_out_snat`, 120).
- A router with load-balancer VIPs of its own passes established NATed connections
  (and related ones, if the chassis can commit them: `ct_lb_related`), keeping their
  skip/force SNAT marks; the marks are in `ct_mark` or, on chassis without
  `ct_no_masked_label`, `ct_label`.
- A gateway router with NAT rules or VIPs un-DNATs every IP reply and commits new
  connections of the reply direction.
- NAT rules count only on a gateway router or a router with distributed gateway
  ports; their flows are built rule by rule in the NB column's order (UUID order).
- With any NAT row (valid or not) a NATed connection is marked as local to SNAT in
  the common zone.
- `dnat_force_snat_ip` and `lb_force_snat_ip` act on gateway routers only;
  `lb_force_snat_ip=router_ip` there SNATs to the first IPv4 (and first non
  link-local IPv6) address of each connected port instead.
- A distributed rule's external MAC is admitted on the gateway port where its logical
  port is, with the port's own packet-length check (`lr_admission`'s helper).
- Owners: the router's NAT (`nat_owner`) for its flows (the defaults built with
  them), each rule's external IP (`nat_ip_owner`) for the rule's own, the router
  port for its `router_ip` flows.
"""

from __future__ import annotations

from ..build.datapaths import Datapath
from ..build.ports import Port
from . import lr_nat_rules
from .context import LflowContext, ref_rows
from .lr_admission import add_gateway_mtu_flow
from .lr_nat_rules import DST_NAT_IP_LOCAL, NatRule, nat_rules
from .router_facts import RouterFacts, router_facts, router_vips
from .stages import Stage
from .table import LflowTable, nat_ip_owner, nat_owner

INPORT_ETH_ADDR = "xreg0[0..47]"

DEFAULTS: tuple[tuple[Stage, str], ...] = (
    (Stage.LR_IN_DEFRAG, "next;"),
    (Stage.LR_IN_UNSNAT, "next;"),
    (Stage.LR_OUT_CHK_DNAT_LOCAL, f"{DST_NAT_IP_LOCAL} = 0; next;"),
    (Stage.LR_OUT_SNAT, "next;"),
    (Stage.LR_IN_DNAT, "next;"),
    (Stage.LR_OUT_UNDNAT, "next;"),
    (Stage.LR_OUT_POST_UNDNAT, "next;"),
    (Stage.LR_OUT_POST_SNAT, "next;"),
    (Stage.LR_OUT_EGR_LOOP, "next;"),
    (Stage.LR_IN_ECMP_STATEFUL, "next;"),
)


def build(ctx: LflowContext, out: LflowTable) -> None:
    """Every flow of this area's stages."""
    for dp in ctx.routers():
        with out.owned_by(nat_owner(dp)):
            build_nat(ctx, out, dp)
    for dp in ctx.routers():
        if router_facts(ctx, dp).lb_force_snat_router_ip:
            for port in ctx.ports_of(dp):
                if port.is_lrp and port.peer is not None:
                    with out.owned_by(("port", port.name)):
                        _force_snat_router_ip(out, port)


def build_nat(ctx: LflowContext, out: LflowTable, dp: Datapath) -> None:
    """What router `dp`'s NAT rules derive here: every flow of its own (the defaults
    and the load-balancing ones with them); the caller owns them as `nat_owner`."""
    facts = router_facts(ctx, dp)
    for stage, actions in DEFAULTS:
        out.add(dp, stage, 0, "1", actions)
    _lb_defaults(ctx, out, dp, facts)
    nat_rows = ref_rows(dp.nb.nat)
    if facts.is_gw_router and (nat_rows or router_vips(ctx, dp).has_lb_vip):
        out.add(dp, Stage.LR_OUT_UNDNAT, 100, "nd || nd_rs || nd_ra", "next;")
        out.add(dp, Stage.LR_OUT_UNDNAT, 50, "ip", "flags.loopback = 1; ct_dnat;")
        out.add(dp, Stage.LR_OUT_POST_UNDNAT, 50, "ip && ct.new", "ct_commit { } ; next; ")
    out.add(dp, Stage.LR_OUT_SNAT, 120, "nd_ns", "next;")
    if not facts.is_gw_router and not facts.l3dgw_ports:
        return
    _rules(ctx, out, dp, facts)
    if nat_rows:
        natted = "ct_mark" if ctx.features.ct_no_masked_label else "ct_label"
        out.add(dp, Stage.LR_OUT_CHK_DNAT_LOCAL, 50, f"ip && {natted}.natted == 1",
                f"{DST_NAT_IP_LOCAL} = 1; next;", hint=dp.nb)
    if facts.is_gw_router:
        for addrs, context in ((facts.dnat_force_snat, "dnat"), (facts.lb_force_snat, "lb")):
            if addrs is None:
                continue
            for v, nets in (("4", addrs.ipv4), ("6", addrs.ipv6)):
                if nets:
                    _force_snat(out, dp, v, nets[0].addr_s, context)


def _lb_defaults(ctx: LflowContext, out: LflowTable, dp: Datapath,
                 facts: RouterFacts) -> None:
    if not router_vips(ctx, dp).has_lb_vip:
        return
    reg = "ct_mark" if ctx.features.ct_no_masked_label else "ct_label"
    if ctx.features.ct_lb_related:
        related = "ct.rel && !ct.est && !ct.new"
        out.add(dp, Stage.LR_IN_DNAT, 70, f"{related} && {reg}.skip_snat == 1",
                "flags.skip_snat_for_lb = 1; ct_commit_nat;")
        out.add(dp, Stage.LR_IN_DNAT, 70, f"{related} && {reg}.force_snat == 1",
                "flags.force_snat_for_lb = 1; ct_commit_nat;")
        out.add(dp, Stage.LR_IN_DNAT, 50, related, "ct_commit_nat;")
    est = f"ct.est && !ct.rel && !ct.new && {reg}.natted"
    out.add(dp, Stage.LR_IN_DNAT, 70, f"{est} && {reg}.skip_snat == 1",
            "flags.skip_snat_for_lb = 1; next;")
    out.add(dp, Stage.LR_IN_DNAT, 70, f"{est} && {reg}.force_snat == 1",
            "flags.force_snat_for_lb = 1; next;")
    out.add(dp, Stage.LR_IN_DNAT, 50, est, "next;")


def _rules(ctx: LflowContext, out: LflowTable, dp: Datapath, facts: RouterFacts) -> None:
    for rule in nat_rules(ctx, dp):
        with out.owned_by(nat_ip_owner(dp, rule.external_ip)):
            _rule(ctx, out, dp, facts, rule)


def _rule(ctx: LflowContext, out: LflowTable, dp: Datapath, facts: RouterFacts,
          rule: NatRule) -> None:
    lr_nat_rules.unsnat(out, dp, facts, rule)
    lr_nat_rules.dnat(out, dp, facts, rule)
    if facts.is_gw_router:
        lr_nat_rules.snat(out, dp, facts, rule)
        return
    lr_nat_rules.dnat_local(out, dp, rule)
    lr_nat_rules.undnat(out, dp, rule)
    lr_nat_rules.snat(out, dp, facts, rule)
    if rule.distributed:
        _admission(ctx, out, rule)
    lr_nat_rules.egr_loop(out, dp, rule)


def _admission(ctx: LflowContext, out: LflowTable, rule: NatRule) -> None:
    """The admission part of `build_lrouter_ingress_flow`."""
    gw = rule.gw_port
    assert gw is not None and gw.networks is not None
    match = (f"eth.dst == {rule.mac} && inport == {gw.json_key} && "
             f'is_chassis_resident("{rule.logical_port}")')
    add_gateway_mtu_flow(ctx, out, gw, Stage.LR_IN_ADMISSION, match,
                         f"{INPORT_ETH_ADDR} = {gw.networks.ea_s}; next;", rule.nb)


def _force_snat(out: LflowTable, dp: Datapath, v: str, ip: str, context: str) -> None:
    """Connections DNATed (or load balanced) on a gateway router leave with `ip` as
    their source, and replies to it are un-SNATed."""
    out.add(dp, Stage.LR_IN_UNSNAT, 110, f"ip{v} && ip{v}.dst == {ip}", "ct_snat;")
    out.add(dp, Stage.LR_OUT_SNAT, 100, f"flags.force_snat_for_{context} == 1 && ip{v}",
            f"ct_snat({ip});")


def _force_snat_router_ip(out: LflowTable, port: Port) -> None:
    """`lb_force_snat_ip=router_ip`: load-balanced traffic leaves a port with the
    port's own address as its source."""
    nets = port.networks
    if nets is None:
        return
    # The link-local address is always the last IPv6 one: only others count.
    for v, addrs in (("4", nets.ipv4), ("6", nets.ipv6[:-1])):
        if not addrs:
            continue
        ip = addrs[0].addr_s
        out.add(port.dp, Stage.LR_IN_UNSNAT, 110,
                f"inport == {port.json_key} && ip{v}.dst == {ip}", "ct_snat;")
        out.add(port.dp, Stage.LR_OUT_SNAT, 110,
                f"flags.force_snat_for_lb == 1 && ip{v} && outport == {port.json_key}",
                f"ct_snat({ip});")
