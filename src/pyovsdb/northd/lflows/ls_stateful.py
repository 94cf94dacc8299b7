"""The per-switch flows of the load balancing and conntrack stages: `ls_in/out_pre_lb`,
`ls_in/out_pre_stateful`, `ls_in_lb` (its default), `ls_in_lb_aff_check/learn`
(defaults), the hairpin stages and `ls_in/out_stateful` (23.03's `build_pre_lb`,
`build_pre_stateful`, `build_stateful`, `build_lb_hairpin`, `build_vtep_hairpin`,
`build_interconn_mcast_snoop_flows` and the switch half of
`build_lb_affinity_default_flows`); the per load balancer flows are `ls_lb`'s.

Rules kept here:
- Conntrack is entered where a load balancer needs it: a switch with a VIP
  (`has_lb_vip`, its own load balancers and groups only) sends all IP through
  `ct_lb_mark` and hairpins; other switches get only the pass-through flows.
- Router ports never go through conntrack (their zones do not see the other side of
  a routed connection); localnet ports skip it unless the switch balances load. A
  router-type port's skips are its own (owner `("port", name)`): a switch of many
  routers gaining one builds that one's alone (`rebuild_focused`); they read the
  switch's `has_stateful_acl`, which changed builds the switch whole.
  Leaving conntrack in egress clears it (`ct_clear`) unless a stateful ACL needs it.
- `ct_lb_mark`/`ct_mark.blocked` when every chassis supports `ct_no_masked_label`,
  else `ct_lb`/`ct_label.blocked`.
- A controller meter comes from the switch's NB `copp` only when it names a meter NB
  defines (`LflowContext.copp_meter`).
"""

from __future__ import annotations

from ..build.datapaths import Datapath, smap_bool
from ..build.ports import Port
from .context import CoppProto, LflowContext
from .stages import Stage
from .table import LflowTable

REGBIT_CONNTRACK_DEFRAG = "reg0[0]"
REGBIT_CONNTRACK_COMMIT = "reg0[1]"
REGBIT_CONNTRACK_NAT = "reg0[2]"
REGBIT_HAIRPIN = "reg0[6]"
REGBIT_HAIRPIN_REPLY = "reg0[12]"
REGBIT_ACL_LABEL = "reg0[13]"
REGBIT_FROM_RAMP = "reg0[14]"
REGBIT_ACL_STATELESS = "reg0[16]"
REG_LABEL = "reg3"

IN_OUT = ((Stage.LS_IN_PRE_LB, Stage.LS_OUT_PRE_LB),
          (Stage.LS_IN_PRE_STATEFUL, Stage.LS_OUT_PRE_STATEFUL),
          (Stage.LS_IN_STATEFUL, Stage.LS_OUT_STATEFUL))


def ct_lb_action(ctx: LflowContext) -> str:
    return "ct_lb_mark" if ctx.features.ct_no_masked_label else "ct_lb"


def build_switch(ctx: LflowContext, dp: Datapath, out: LflowTable) -> None:
    """Every flow of these stages one switch asks for, in 23.03's order."""
    _pre_lb(ctx, dp, out)
    _pre_stateful(ctx, dp, out)
    _stateful(ctx, dp, out)
    _lb_hairpin(ctx, dp, out)
    _vtep_hairpin(ctx, dp, out)


def build_affinity_defaults(dp: Datapath, out: LflowTable) -> None:
    out.add(dp, Stage.LS_IN_LB_AFF_CHECK, 0, "1", "next;")
    out.add(dp, Stage.LS_IN_LB_AFF_LEARN, 0, "1", "next;")


def _both(dp: Datapath, out: LflowTable, pair: tuple[Stage, Stage], priority: int,
          match: str | tuple[str, str], actions: str) -> None:
    in_match, out_match = (match, match) if isinstance(match, str) else match
    out.add(dp, pair[0], priority, in_match, actions)
    out.add(dp, pair[1], priority, out_match, actions)


def _skip_conntrack(ctx: LflowContext, dp: Datapath, port: Port, out: LflowTable) -> None:
    """`skip_port_from_conntrack` for the pre-LB stages."""
    egress = "next;" if ctx.switch(dp).has_stateful_acl else "ct_clear; next;"
    out.add(dp, Stage.LS_IN_PRE_LB, 110, f"ip && inport == {port.json_key}", "next;",
            hint=port.nb, io_port=port.name)
    out.add(dp, Stage.LS_OUT_PRE_LB, 110, f"ip && outport == {port.json_key}", egress,
            hint=port.nb, io_port=port.name)


def _interconn_mcast_snoop(ctx: LflowContext, dp: Datapath, out: LflowTable) -> None:
    other = dp.nb.other_config
    if not smap_bool(other, "mcast_snoop") or "interconn-ts" not in other:
        return
    meter = ctx.copp_meter(dp, CoppProto.IGMP)
    for port in ctx.all_ports_of(dp):
        if port.is_lsp and port.type == "remote":
            for what in ("igmp", "(mldv1 || mldv2)"):
                out.add(dp, Stage.LS_OUT_PRE_LB, 120, f"inport == {port.json_key} && {what}",
                        "clone { igmp; }; next;", meter=meter)


def _pre_lb(ctx: LflowContext, dp: Datapath, out: LflowTable) -> None:
    pair = IN_OUT[0]
    _interconn_mcast_snoop(ctx, dp, out)
    _both(dp, out, pair, 110, "eth.mcast", "next;")
    _both(dp, out, pair, 110, "nd || nd_rs || nd_ra || mldv1 || mldv2", "next;")
    _both(dp, out, pair, 110, ("eth.dst == $svc_monitor_mac", "eth.src == $svc_monitor_mac"),
          "next;")
    _both(dp, out, pair, 0, "1", "next;")
    focus = ctx.focus
    for port in ctx.ports.router_ports.get(dp.key, []):
        if focus is None or port.name in focus:
            with out.owned_by(("port", port.name)):
                _skip_conntrack(ctx, dp, port, out)
    has_lb_vip = ctx.switch(dp).has_lb_vip
    if not has_lb_vip:
        for port in ctx.ports.localnet_ports.get(dp.key, []):
            _skip_conntrack(ctx, dp, port, out)
    _both(dp, out, pair, 110, f"{REGBIT_ACL_STATELESS} == 1", "next;")
    if has_lb_vip:
        _both(dp, out, pair, 100, "ip", f"{REGBIT_CONNTRACK_NAT} = 1; next;")


def _pre_stateful(ctx: LflowContext, dp: Datapath, out: LflowTable) -> None:
    pair = IN_OUT[1]
    _both(dp, out, pair, 0, "1", "next;")
    _both(dp, out, pair, 110, f"{REGBIT_CONNTRACK_NAT} == 1", f"{ct_lb_action(ctx)};")
    _both(dp, out, pair, 100, f"{REGBIT_CONNTRACK_DEFRAG} == 1", "ct_next;")


def _stateful(ctx: LflowContext, dp: Datapath, out: LflowTable) -> None:
    pair = IN_OUT[2]
    blocked = "ct_mark.blocked" if ctx.features.ct_no_masked_label else "ct_label.blocked"
    out.add(dp, Stage.LS_IN_LB, 0, "1", "next;")
    _both(dp, out, pair, 0, "1", "next;")
    commit = f"{REGBIT_CONNTRACK_COMMIT} == 1 && {REGBIT_ACL_LABEL}"
    _both(dp, out, pair, 100, f"{commit} == 1",
          f"ct_commit {{ {blocked} = 0; ct_label.label = {REG_LABEL}; }}; next;")
    _both(dp, out, pair, 100, f"{commit} == 0", f"ct_commit {{ {blocked} = 0; }}; next;")


def _lb_hairpin(ctx: LflowContext, dp: Datapath, out: LflowTable) -> None:
    out.add(dp, Stage.LS_IN_PRE_HAIRPIN, 0, "1", "next;")
    out.add(dp, Stage.LS_IN_NAT_HAIRPIN, 0, "1", "next;")
    out.add(dp, Stage.LS_IN_HAIRPIN, 0, "1", "next;")
    if not ctx.switch(dp).has_lb_vip:
        return
    hint = dp.nb
    out.add(dp, Stage.LS_IN_PRE_HAIRPIN, 100, "ip && ct.trk",
            f"{REGBIT_HAIRPIN} = chk_lb_hairpin(); "
            f"{REGBIT_HAIRPIN_REPLY} = chk_lb_hairpin_reply(); next;", hint=hint)
    out.add(dp, Stage.LS_IN_NAT_HAIRPIN, 100,
            f"ip && ct.new && ct.trk && {REGBIT_HAIRPIN} == 1", "ct_snat_to_vip; next;",
            hint=hint)
    out.add(dp, Stage.LS_IN_NAT_HAIRPIN, 100,
            f"ip && ct.est && ct.trk && {REGBIT_HAIRPIN} == 1", "ct_snat;", hint=hint)
    out.add(dp, Stage.LS_IN_NAT_HAIRPIN, 90, f"ip && {REGBIT_HAIRPIN_REPLY} == 1",
            "ct_snat;", hint=hint)
    out.add(dp, Stage.LS_IN_HAIRPIN, 1,
            f"({REGBIT_HAIRPIN} == 1 || {REGBIT_HAIRPIN_REPLY} == 1)",
            "eth.dst <-> eth.src; outport = inport; flags.loopback = 1; output;")


def _vtep_hairpin(ctx: LflowContext, dp: Datapath, out: LflowTable) -> None:
    """Traffic from a VTEP (ramp) switch goes straight to L2 lookup, except what a
    distributed gateway port resident here must answer first (ARP/ND hairpin)."""
    if dp.key not in ctx.ports.vtep_switches:
        return
    out.add(dp, Stage.LS_IN_HAIRPIN, 1000, f"{REGBIT_FROM_RAMP} == 1",
            f"next(pipeline=ingress, table={Stage.LS_IN_L2_LKUP.table});")
    for port in ctx.ports.router_ports.get(dp.key, []):
        peer = ctx.ports.peer_of(port)
        cr = ctx.ports.ports.get(peer.cr_port) if peer is not None and peer.cr_port else None
        if cr is not None:
            out.add(dp, Stage.LS_IN_HAIRPIN, 2000,
                    f"{REGBIT_FROM_RAMP} == 1 && is_chassis_resident({cr.json_key})",
                    "next;")
