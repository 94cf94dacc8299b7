"""Load balancers on logical routers: the flows each load balancer asks for in
`lr_in_defrag`, `lr_in_unsnat`, `lr_in_dnat`, `lr_out_undnat` and `lr_out_snat`
(23.03's `build_lrouter_defrag_flows_for_lb`, `build_lrouter_flows_for_lb` and
`build_lrouter_nat_flows_for_lb`), the affinity stages through `lr_lb_affinity`, and
the routers' own `lr_in_lb_aff_check`/`lr_in_lb_aff_learn` defaults.

Rules kept here:
- A VIP is what the switch pipeline parses (`ls_lb.switch_vips`: explicit VIPs as 23.03
  parsed them, template VIPs as `^variable` text); a router reads the same VIPs.
- One VIP's `ct_lb_mark` (or `ct_lb` without the chassis feature) comes in three kinds
  (23.03's flow types): plain, `flags.skip_snat_for_lb = 1; ` first for a load
  balancer with `options:skip_snat`, `flags.force_snat_for_lb = 1; ` first on a router
  with `lb_force_snat_ip` (addresses, or `router_ip` on a gateway router). With the
  `ct_lb_related` feature the flag is also passed to the action (`; skip_snat)`).
- No backends (none left online under a health check): `reject` toward `lr_out_snat`
  with `options:reject=true`, else the drop action; a reject takes the router's copp
  meter, so it is asked for per router. A VIP with no backends configured and no
  `reject`, under `options:event=true` or NB_Global's `controller_event`, also has
  ovn-controller report it (`trigger_event`, with the router's event-elb meter).
- A router without distributed gateway ports (a gateway router or a plain one) gets
  the VIP's `lr_in_dnat` flow as it is; a router with one gets it only where the
  gateway port's chassisredirect port is resident (a reject is not so limited), plus an
  `lr_out_undnat` flow for replies from the backends leaving by that port. With several
  gateway ports (which 23.03 warns it does not support) that is the one first in the
  NB `ports` column, i.e. of the lowest UUID, as 23.03's `l3dgw_ports[0]`.
- A VIP that is also a NAT `external_ip` of the router skips `lr_in_unsnat`.
- A flow is asked for on every router the load balancer applies to (`lb.routers`), per
  router, on behalf of the load balancer; identical ones fold into a datapath group.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from ..build.datapaths import Datapath, smap_bool
from ..build.lb import LoadBalancer
from .context import CoppProto, LflowContext
from .lr_lb_affinity import build_affinity_flows, lb_affinity_timeout
from .ls_lb import (
    Monitors,
    SwitchVip,
    active_backends,
    event_flow,
    lb_monitors,
    selection_fields,
    switch_vips,
)
from .ls_stateful import ct_lb_action
from .router_facts import RouterFacts, router_facts
from .stages import Stage
from .table import LflowTable


class FlowType(Enum):
    """Which SNAT a load-balanced connection gets on its way out (23.03's
    `lrouter_nat_lb_flow_type`)."""

    NORMAL = "normal"
    SKIP_SNAT = "skip_snat"
    FORCE_SNAT = "force_snat"


FLAG_OF = {FlowType.SKIP_SNAT: "flags.skip_snat_for_lb = 1; ",
           FlowType.FORCE_SNAT: "flags.force_snat_for_lb = 1; "}


@dataclass(frozen=True, slots=True)
class RouterVipActions:
    """The `lr_in_dnat` actions of one VIP, per flow type."""

    by_type: dict[FlowType, str]
    reject: bool
    has_backends: bool  # the VIP's own backends (23.03's `n_backends`), health aside


def vip_actions(ctx: LflowContext, lb: LoadBalancer, vip: SwitchVip,
                monitors: Monitors) -> RouterVipActions:
    """`build_lb_vip_actions` for a router: the three actions of one VIP."""
    if vip.health_check is not None:
        active = active_backends(ctx, lb, vip, monitors)
        backends = ",".join(f"{b.ip}:{b.port}" if vip.v4_address else f"[{b.ip}]:{b.port}"
                            for b in active)
        n_backends = len(active)
    else:
        backends, n_backends = vip.backend_ips, len(vip.backends)
    reject = not n_backends and smap_bool(lb.nb.options, "reject")
    if reject:
        body = ("reg0 = 0; reject { outport <-> inport; "
                f"next(pipeline=egress,table={Stage.LR_OUT_SNAT.table});}};")
    elif not n_backends:
        body = ctx.drop_action
    else:
        fields = selection_fields(lb)
        hashed = f'; hash_fields="{fields}"' if fields else ""
        body = f"{ct_lb_action(ctx)}(backends={backends}{hashed}"
    is_lb = bool(n_backends)
    enclose = ");" if is_lb else ""
    by_type = {FlowType.NORMAL: body + enclose}
    for kind, flag in FLAG_OF.items():
        tail = f"; {kind.value});" if is_lb and ctx.features.ct_lb_related else enclose
        by_type[kind] = flag + body + tail
    return RouterVipActions(by_type, reject, bool(vip.backends))


def flow_type(lb: LoadBalancer, facts: RouterFacts) -> FlowType:
    if smap_bool(lb.nb.options, "skip_snat"):
        return FlowType.SKIP_SNAT
    if lb_force_snat(facts):
        return FlowType.FORCE_SNAT
    return FlowType.NORMAL


def lb_force_snat(facts: RouterFacts) -> bool:
    """`lb_force_snat_ip` set to addresses that parse, or to `router_ip` on a gateway
    router."""
    addrs = facts.lb_force_snat
    has_addrs = addrs is not None and bool(addrs.ipv4 or addrs.ipv6)
    return has_addrs or facts.lb_force_snat_router_ip


@dataclass(frozen=True, slots=True)
class VipMatches:
    new: str  # a new connection to the VIP (`lr_in_dnat`, affinity check)
    undnat: str  # a reply from one of its backends, before the port part
    unsnat: str  # a packet to the VIP (`lr_in_unsnat`)


def vip_matches(lb: LoadBalancer, vip: SwitchVip) -> VipMatches:
    ip, proto = vip.ip_match, lb.proto
    new = f"ct.new && !ct.rel && {ip} && {ip}.dst == {vip.ip}"
    unsnat = f"{ip} && {ip}.dst == {vip.ip} && {proto}"
    if vip.port_str:
        new += f" && {proto} && {proto}.dst == {vip.port_str}"
        unsnat += f" && {proto}.dst == {vip.port_str}"
    terms = []
    for be in vip.backends:
        term = f"({ip}.src == {be.ip}"
        term += f" && {proto}.src == {be.port_str})" if be.port_str else ")"
        terms.append(term)
    return VipMatches(new, f"{ip} && (" + " || ".join(terms), unsnat)


# -- flows -----------------------------------------------------------------------------

def _defrag_flow(lb: LoadBalancer, vip: SwitchVip, routers: Sequence[Datapath],
                 out: LflowTable) -> None:
    """Send traffic to a VIP through conntrack first, to defragment it and to match
    established connections."""
    match = f"ip && {vip.ip_match}.dst == {vip.ip}"
    out.add_group(routers, Stage.LR_IN_DEFRAG, 100, match, "ct_dnat;", hint=lb.nb)


def _distributed_flows(ctx: LflowContext, lb: LoadBalancer, facts: RouterFacts,
                       dp: Datapath, kind: FlowType, actions: RouterVipActions,
                       matches: VipMatches, priority: int, out: LflowTable) -> None:
    """A router with a distributed gateway port load-balances on the gateway chassis."""
    dgp = min(facts.l3dgw_ports, key=lambda p: p.nb.uuid)
    cr = ctx.ports.ports[dgp.cr_port] if dgp.cr_port is not None else None
    cr_key = cr.json_key if cr is not None else '""'
    meter = ctx.copp_meter(dp, CoppProto.REJECT) if actions.reject else None
    match = matches.new
    if actions.has_backends or not smap_bool(lb.nb.options, "reject"):
        match += f" && is_chassis_resident({cr_key})"
    out.add(dp, Stage.LR_IN_DNAT, priority, match, actions.by_type[kind], hint=lb.nb,
            meter=meter)
    if not actions.has_backends:
        return
    if kind is FlowType.NORMAL:
        undnat = "ct_dnat;" if facts.is_gw_router else "ct_dnat_in_czone;"
    else:
        undnat = FLAG_OF[kind] + "next;"
    out.add(dp, Stage.LR_OUT_UNDNAT, 120,
            f"{matches.undnat}) && outport == {dgp.json_key} && "
            f"is_chassis_resident({cr_key})", undnat, hint=lb.nb)


def _vip_flows(ctx: LflowContext, lb: LoadBalancer, vip: SwitchVip,
               routers: Sequence[Datapath], monitors: Monitors, out: LflowTable) -> None:
    """`build_lrouter_nat_flows_for_lb`: one VIP on every router of the load balancer."""
    actions = vip_actions(ctx, lb, vip, monitors)
    matches = vip_matches(lb, vip)
    priority = 120 if vip.port_str else 110
    timeout = lb_affinity_timeout(lb)
    centralized: dict[FlowType, list[Datapath]] = {k: [] for k in FlowType}
    affinity: dict[FlowType, list[Datapath]] = {FlowType.FORCE_SNAT: [], FlowType.NORMAL: []}
    for dp in routers:
        facts = router_facts(ctx, dp)
        kind = flow_type(lb, facts)
        if facts.l3dgw_ports:
            _distributed_flows(ctx, lb, facts, dp, kind, actions, matches, priority, out)
        else:
            centralized[kind].append(dp)
        if timeout:
            forced = lb_force_snat(facts)
            affinity[FlowType.FORCE_SNAT if forced else FlowType.NORMAL].append(dp)
        if vip.ip in facts.external_ips:
            out.add(dp, Stage.LR_IN_UNSNAT, 120, matches.unsnat, "next;", hint=lb.nb)
    for kind, dps in centralized.items():
        if not actions.reject:  # (no meter: one flow on them all)
            out.add_group(dps, Stage.LR_IN_DNAT, priority, matches.new,
                          actions.by_type[kind], hint=lb.nb)
            continue
        for dp in dps:
            out.add(dp, Stage.LR_IN_DNAT, priority, matches.new, actions.by_type[kind],
                    hint=lb.nb, meter=ctx.copp_meter(dp, CoppProto.REJECT))
    if timeout:
        build_affinity_flows(lb, vip, matches.new, FlowType.FORCE_SNAT.value,
                             affinity[FlowType.FORCE_SNAT], timeout, out)
        skip = FlowType.SKIP_SNAT.value if smap_bool(lb.nb.options, "skip_snat") else None
        build_affinity_flows(lb, vip, matches.new, skip, affinity[FlowType.NORMAL],
                             timeout, out)


def build_lb(ctx: LflowContext, lb: LoadBalancer, routers: Sequence[Datapath],
             out: LflowTable, chosen: frozenset[str] | None = None) -> None:
    """Every router flow of one load balancer, on the routers it applies to: each VIP's
    on behalf of `("lb", key, vip key)`, the rest on behalf of `("lb", key)`;
    `chosen`: the flows of those VIPs alone."""
    vips = switch_vips(lb)
    if chosen is not None:
        vips = [v for v in vips if v.key in chosen]
    monitors = lb_monitors(ctx) if any(v.health_check for v in vips) else {}
    for vip in vips:
        with out.owned_by(("lb", lb.key, vip.key)):
            _defrag_flow(lb, vip, routers, out)
            _vip_flows(ctx, lb, vip, routers, monitors, out)
            event_flow(ctx, lb, vip, routers, Stage.LR_IN_DNAT, out)
    if chosen is None and smap_bool(lb.nb.options, "skip_snat"):
        with out.owned_by(("lb", lb.key)):
            for dp in routers:
                out.add(dp, Stage.LR_OUT_SNAT, 120, "flags.skip_snat_for_lb == 1 && ip",
                        "next;")


def build(ctx: LflowContext, out: LflowTable) -> None:
    """Every flow of this area's stages."""
    routers = ctx.routers()
    for dp in routers:
        with out.owned_by(("dp", dp.key)):
            out.add(dp, Stage.LR_IN_LB_AFF_CHECK, 0, "1", "next;")
            out.add(dp, Stage.LR_IN_LB_AFF_LEARN, 0, "1", "next;")
    if ctx.builds_rules:
        build_lbs(ctx, out, ctx.lbs.lbs.values())


def build_lbs(ctx: LflowContext, out: LflowTable, lbs: Iterable[LoadBalancer],
              only: Mapping[str, frozenset[str]] | None = None) -> None:
    """The flows the load balancers `lbs` ask for (`build_lb`); `only`: of the load
    balancers it names, the flows of those VIPs alone."""
    routers = ctx.routers()
    for lb in lbs:
        dps = [dp for dp in routers if dp.key in lb.routers]
        if dps:
            build_lb(ctx, lb, dps, out, only.get(lb.key) if only is not None else None)
