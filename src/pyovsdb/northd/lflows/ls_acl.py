"""ACLs and QoS on logical switches: the `ls_in_pre_acl`, `ls_in_acl_hint`, `ls_in_acl`,
`ls_in_acl_after_lb`, `ls_out_pre_acl`, `ls_out_acl_hint` and `ls_out_acl` stages here
(23.03's `build_pre_acls`, `build_acl_hints`, `build_acls`), one ACL's flows in
`ls_acl_rules`, and the four QoS stages in `ls_qos`.

Rules kept here:
- A switch is stateful when it has an allow-related ACL (its own or a port group's) or
  a load balancer VIP: then even plain allow ACLs commit to conntrack, drop ACLs mark
  established connections blocked, and the 65532 flows let replies and related traffic
  through. Only a stateful ACL sends packets to conntrack for defragmentation
  (`pre_acl`); a load balancer alone does that in `pre_lb`.
- Port-group ACLs are applied to every switch with a port in the group, after the
  switch's own (each in UUID order).
- A switch without ACLs and without load balancers passes every ACL stage at priority
  65535; with ACLs, priority 0 is the default verdict (`options:default_acl_drop`).
- The ct blocked bit is `ct_mark.blocked` when every chassis supports it
  (`ct_no_masked_label`), else `ct_label.blocked`; related traffic is NATed by
  `ct_commit_nat` only where chassis support `ct_lb_related`.
- Per-switch flows are owned by the switch, an ACL's by the ACL, a port's (conntrack
  bypass, DHCP replies) by the port.
"""

from __future__ import annotations

from ...idl.row import IdlRow
from ..build.datapaths import Datapath, smap_bool
from ..build.ports_addresses import lla, parse_mac
from .context import CoppProto, LflowContext, ref_rows
from .ls_acl_rules import (
    CT_COMMIT,
    CT_DEFRAG,
    HINT_ALLOW,
    HINT_ALLOW_NEW,
    HINT_ALLOW_REL,
    HINT_BLOCK,
    HINT_DROP,
    TOP_PRIORITY,
    AclSettings,
    build_acl,
    build_stateless_filter,
)
from .ls_qos import build_qos
from .stages import Stage
from .table import LflowTable

IN_OUT_PRE_ACL = (Stage.LS_IN_PRE_ACL, Stage.LS_OUT_PRE_ACL)
IN_OUT_ACL = (Stage.LS_IN_ACL, Stage.LS_OUT_ACL)
# IPv6 control traffic that conntrack does not track well: never sent to it.
IPV6_CT_OMIT = "nd || nd_ra || nd_rs || mldv1 || mldv2"
# The same, and DHCPv6 replies, kept out of conntrack in pre_acl.
NO_CT_PRE_ACL = "nd || nd_rs || nd_ra || mldv1 || mldv2 || " \
    "(udp && udp.src == 546 && udp.dst == 547)"


def settings(ctx: LflowContext) -> AclSettings:
    meters: dict[str, IdlRow] = {}
    for meter in ctx.nb_rows("Meter"):
        meters.setdefault(meter.name, meter)
    return AclSettings(
        ct_blocked="ct_mark.blocked" if ctx.features.ct_no_masked_label
        else "ct_label.blocked",
        inv_match=smap_bool(ctx.nb_options, "use_ct_inv_match", True),
        drop=ctx.drop_action, implicit_drop=ctx.implicit_drop_action, meters=meters)


def build(ctx: LflowContext, out: LflowTable) -> None:
    """Every flow of this area's stages."""
    s = settings(ctx)
    for dp in ctx.switches():
        with out.owned_by(("dp", dp.key)):
            _pre_acls(ctx, out, dp)
            _acl_hints(ctx, out, dp, s)
            _acls(ctx, out, dp, s)
            build_qos(out, dp)


def build_acl_flows(ctx: LflowContext, out: LflowTable, dps: list[Datapath],
                    acls: set[str]) -> None:
    """The flows of the ACLs `acls` (UUIDs) alone, on the switches `dps` that have
    them, each owned by its ACL, as `build` makes them: for a rebuild of those ACLs
    where the switches' ACL facts (`has_acls`, `has_stateful_acl`) stay the same."""
    s = settings(ctx)
    for dp in dps:
        facts = ctx.switch(dp)
        stateful = facts.has_stateful_acl or facts.has_lb_vip
        reject_meter = ctx.copp_meter(dp, CoppProto.REJECT)
        for acl in facts.acls:
            if acl.uuid not in acls:
                continue
            with out.owned_by(("acl", acl.uuid)):
                if acl.action == "allow-stateless" and stateful:
                    build_stateless_filter(out, dp, acl)
                build_acl(out, dp, acl, stateful=stateful, s=s, reject_meter=reject_meter)


def _stateless_filters(ctx: LflowContext, out: LflowTable, dp: Datapath) -> None:
    if not ctx.builds_rules:
        return
    for acl in ctx.switch(dp).acls:
        if acl.action == "allow-stateless":
            with out.owned_by(("acl", acl.uuid)):
                build_stateless_filter(out, dp, acl)


def _pre_acls(ctx: LflowContext, out: LflowTable, dp: Datapath) -> None:
    facts = ctx.switch(dp)
    for stage in IN_OUT_PRE_ACL:
        out.add(dp, stage, 0, "1", "next;")
    out.add(dp, Stage.LS_IN_PRE_ACL, 110, "eth.dst == $svc_monitor_mac", "next;")
    out.add(dp, Stage.LS_OUT_PRE_ACL, 110, "eth.src == $svc_monitor_mac", "next;")
    if facts.has_stateful_acl:
        # Router and localnet ports bypass conntrack: their zone cannot know the
        # connections of the other side.
        bypass = ctx.ports.router_ports.get(dp.key, []) + \
            ctx.ports.localnet_ports.get(dp.key, [])
        for port in bypass:
            with out.owned_by(("port", port.name)):
                out.add(dp, Stage.LS_IN_PRE_ACL, 110, f"ip && inport == {port.json_key}",
                        "next;", io_port=port.name, hint=port.nb)
                out.add(dp, Stage.LS_OUT_PRE_ACL, 110, f"ip && outport == {port.json_key}",
                        "next;", io_port=port.name, hint=port.nb)
        _stateless_filters(ctx, out, dp)
        for stage in IN_OUT_PRE_ACL:
            out.add(dp, stage, 110, NO_CT_PRE_ACL, "next;")
            out.add(dp, stage, 110, "eth.mcast", "next;")
            out.add(dp, stage, 100, "ip", f"{CT_DEFRAG} = 1; next;")
    elif facts.has_lb_vip:
        # Load-balanced switches send IP to conntrack in pre_lb; stateless ACLs opt out.
        _stateless_filters(ctx, out, dp)


def _acl_hints(ctx: LflowContext, out: LflowTable, dp: Datapath, s: AclSettings) -> None:
    facts = ctx.switch(dp)
    blocked = s.ct_blocked
    hints = (
        (7, "ct.new && !ct.est", (HINT_ALLOW_NEW, HINT_DROP)),
        (6, f"!ct.new && ct.est && !ct.rpl && {blocked} == 1", (HINT_ALLOW_NEW, HINT_DROP)),
        (5, "!ct.trk", (HINT_ALLOW, HINT_DROP)),
        (4, f"!ct.new && ct.est && !ct.rpl && {blocked} == 0", (HINT_ALLOW, HINT_BLOCK)),
        (3, "!ct.est", (HINT_DROP,)),
        (2, f"ct.est && {blocked} == 1", (HINT_DROP,)),
        (1, f"ct.est && {blocked} == 0", (HINT_BLOCK,)),
    )
    for stage in (Stage.LS_IN_ACL_HINT, Stage.LS_OUT_ACL_HINT):
        if not facts.has_acls and not facts.has_lb_vip:
            out.add(dp, stage, 65535, "1", "next;")
        else:
            out.add(dp, stage, 0, "1", "next;")
        if not facts.has_stateful_acl and not facts.has_lb_vip:
            continue
        for prio, match, bits in hints:
            out.add(dp, stage, prio, match, "".join(f"{b} = 1; " for b in bits) + "next;")


def _acls(ctx: LflowContext, out: LflowTable, dp: Datapath, s: AclSettings) -> None:
    facts = ctx.switch(dp)
    stateful = facts.has_stateful_acl or facts.has_lb_vip
    default_drop = smap_bool(ctx.nb_options, "default_acl_drop")
    default = s.drop if default_drop else "next;"
    blocked = s.ct_blocked
    if not facts.has_acls:
        prio = 0 if facts.has_lb_vip else 65535
        for stage in IN_OUT_ACL:
            out.add(dp, stage, prio, "1", "next;")
        out.add(dp, Stage.LS_IN_ACL_AFTER_LB, 0, "1", "next;")
    else:
        for stage in (*IN_OUT_ACL, Stage.LS_IN_ACL_AFTER_LB):
            out.add(dp, stage, 0, "1", default)

    if stateful:
        commit = s.drop if default_drop else f"{CT_COMMIT} = 1; next;"
        for stage in IN_OUT_ACL:
            out.add(dp, stage, 1, f"ip && ct.est && {blocked} == 1",
                    f"{CT_COMMIT} = 1; next;")
            out.add(dp, stage, 1, "ip && !ct.est", commit)
        inv = "ct.inv || " if s.inv_match else ""
        reply = f"ct.est && !ct.rel && !ct.new{s.not_inv} && ct.rpl && {blocked} == 0"
        related = f"!ct.est && ct.rel && !ct.new{s.not_inv} && {blocked} == 0"
        nat = "ct_commit_nat;" if ctx.features.ct_lb_related else "next;"
        for stage in IN_OUT_ACL:
            out.add(dp, stage, TOP_PRIORITY, f"{inv}(ct.est && ct.rpl && {blocked} == 1)",
                    s.drop)
        out.add(dp, Stage.LS_IN_ACL, TOP_PRIORITY, reply,
                f"{HINT_DROP} = 0; {HINT_BLOCK} = 0; {HINT_ALLOW_REL} = 1; next;")
        out.add(dp, Stage.LS_OUT_ACL, TOP_PRIORITY, reply, "next;")
        out.add(dp, Stage.LS_IN_ACL, TOP_PRIORITY, related, f"{HINT_ALLOW_REL} = 1; {nat}")
        out.add(dp, Stage.LS_OUT_ACL, TOP_PRIORITY, related, nat)
        out.add(dp, Stage.LS_IN_ACL_AFTER_LB, TOP_PRIORITY, f"{HINT_ALLOW_REL} == 1",
                "next;")

    for stage in (*IN_OUT_ACL, Stage.LS_IN_ACL_AFTER_LB):
        out.add(dp, stage, TOP_PRIORITY, IPV6_CT_OMIT, "next;")

    reject_meter = ctx.copp_meter(dp, CoppProto.REJECT)
    for acl in facts.acls if ctx.builds_rules else ():
        with out.owned_by(("acl", acl.uuid)):
            build_acl(out, dp, acl, stateful=stateful, s=s, reject_meter=reject_meter)

    _server_replies(out, dp, stateful, None if ctx.focus is None else
                    [p.nb for p in ctx.ports_of(dp) if p.is_lsp])

    if facts.has_acls or facts.has_lb_vip:
        out.add(dp, Stage.LS_IN_ACL, 34000, "eth.dst == $svc_monitor_mac", "next;")
        out.add(dp, Stage.LS_OUT_ACL, 34000, "eth.src == $svc_monitor_mac", "next;")


def _server_replies(out: LflowTable, dp: Datapath, stateful: bool,
                    focus: list[IdlRow] | None) -> None:
    """Let the DHCP and DNS replies ovn-controller makes past the egress ACLs (of the
    switch's ports, or in a focused rebuild those `focus`: each port's own)."""
    actions = "ct_commit; next;" if stateful else "next;"
    for lsp in ref_rows(dp.nb.ports) if focus is None else focus:
        if lsp.type == "external":
            continue
        with out.owned_by(("port", lsp.name)):
            v4 = lsp.dhcpv4_options
            if isinstance(v4, IdlRow):
                opts = v4.options
                server_id, server_mac = opts.get("server_id"), opts.get("server_mac")
                if server_id is not None and server_mac is not None and "lease_time" in opts:
                    out.add(dp, Stage.LS_OUT_ACL, 34000,
                            f'outport == "{lsp.name}" && eth.src == {server_mac} && '
                            f"ip4.src == {server_id} && udp && udp.src == 67 && "
                            "udp.dst == 68", actions, io_port=lsp.name, hint=v4)
            v6 = lsp.dhcpv6_options
            if isinstance(v6, IdlRow):
                server = v6.options.get("server_id")
                mac = parse_mac(server) if server is not None else None
                if server is not None and mac is not None:
                    out.add(dp, Stage.LS_OUT_ACL, 34000,
                            f'outport == "{lsp.name}" && eth.src == {server} && '
                            f"ip6.src == {lla(mac)} && udp && udp.src == 547 && "
                            "udp.dst == 546", actions, io_port=lsp.name, hint=v6)
    if any(r.records for r in ref_rows(dp.nb.dns_records)):
        out.add(dp, Stage.LS_OUT_ACL, 34000, "udp.src == 53", actions)
