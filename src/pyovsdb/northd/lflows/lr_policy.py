"""Logical router policies: the `lr_in_policy` and `lr_in_policy_ecmp` flows of every
router, as ovn-northd 23.03 writes them (`build_ingress_policy_flows_for_lrouter`,
`build_routing_policy_flow`, `build_ecmp_routing_policy_flows`).

Rules kept here:
- Every router passes what no policy matches (priority 0), lets what no ECMP policy
  chose through `lr_in_policy_ecmp` (150) and drops the rest there (0).
- Policies are read in the NB `policies` column's order (UUIDs); each policy with
  several next hops takes the next ECMP group id from 1, whether or not its flows
  could be written.
- A policy's match is the NB text as it is; its priority the NB priority. "allow"
  and "reroute" set `pkt.mark` first when `options:pkt_mark` is a whole number other
  than 0 (read as `ovn_smap_get_uint` reads it).
- A reroute's next hop must be on a network of one of the router's ports (the first
  in the `ports` column's order that has it); otherwise the policy writes nothing.
  Several next hops must be of one family; a next hop that no port reaches ends the
  policy's flows there (the member flows written before it stay, as in 23.03).
- A one-next-hop reroute reads `nexthops`, or the older `nexthop` column if that set
  is empty; the set's members are taken in sorted order.
- Each policy's flows are its own (`table.policy_owner`): they read the policy, the
  router's ports and its rank among the ECMP policies alone, so some policies can be
  built again without the others (`build_policies(only=...)`).
"""

from __future__ import annotations

from collections.abc import Collection

from ...idl.row import IdlRow
from ..build.datapaths import Datapath, smap_uint
from .context import LflowContext, ref_rows
from .lr_routes import port_lookup
from .stages import Stage
from .table import LflowTable, policy_owner

POLICY = Stage.LR_IN_POLICY
POLICY_ECMP = Stage.LR_IN_POLICY_ECMP
ECMP_GROUP = "reg8[0..15]"
ECMP_MEMBER = "reg8[16..31]"


def _mark(rule: IdlRow) -> str:
    mark = smap_uint(rule.options, "pkt_mark")
    return f"pkt.mark = {mark}; " if mark else ""


def _reroute_to(ctx: LflowContext, dp: Datapath, nexthop: str) -> str | None:
    """The actions that send a packet to `nexthop` (without the ECMP group reset), or
    None if no router port reaches it."""
    found = port_lookup(ctx).first_reaching(dp, nexthop)
    if found is None:
        return None
    port, addr = found
    assert port.networks is not None
    v4 = "." in nexthop
    return (f"{'reg0' if v4 else 'xxreg0'} = {nexthop}; "
            f"{'reg1' if v4 else 'xxreg1'} = {addr}; "
            f"eth.src = {port.networks.ea_s}; outport = {port.json_key}; "
            "flags.loopback = 1; ")


def _nexthops(rule: IdlRow) -> list[str]:
    return sorted(str(n) for n in rule.nexthops)


def policy_ecmp(rule: IdlRow) -> bool:
    """Whether the policy takes the next ECMP group id (a reroute to several hops)."""
    return bool(rule.action == "reroute" and len(rule.nexthops) > 1)


def policy_nexthops(rule: IdlRow) -> list[str]:
    """The next hops a reroute policy may send to (none for another action)."""
    if rule.action != "reroute":
        return []
    hops = _nexthops(rule)
    return hops if hops else [str(rule.nexthop)] if rule.nexthop else []


def _policy_flow(ctx: LflowContext, out: LflowTable, dp: Datapath, rule: IdlRow) -> None:
    action = rule.action
    if action == "reroute":
        hops = policy_nexthops(rule)
        if not hops:
            return
        to = _reroute_to(ctx, dp, hops[0])
        if to is None:
            return
        actions = f"{_mark(rule)}{to}{ECMP_GROUP} = 0; next;"
    elif action == "drop":
        actions = ctx.drop_action
    elif action == "allow":
        actions = f"{_mark(rule)}{ECMP_GROUP} = 0; next;"
    else:
        actions = ""
    out.add(dp, POLICY, rule.priority, rule.match, actions, hint=rule)


def _ecmp_policy_flows(ctx: LflowContext, out: LflowTable, dp: Datapath, rule: IdlRow,
                       group: int) -> None:
    hops = _nexthops(rule)
    if len({"." in h for h in hops}) > 1:
        return
    for member, nexthop in enumerate(hops, 1):
        to = _reroute_to(ctx, dp, nexthop)
        if to is None:
            return
        out.add(dp, POLICY_ECMP, 100,
                f"{ECMP_GROUP} == {group} && {ECMP_MEMBER} == {member}",
                f"{_mark(rule)}{to}next;", hint=rule)
    members = ", ".join(str(i) for i in range(1, len(hops) + 1))
    out.add(dp, POLICY, rule.priority, rule.match,
            f"{ECMP_GROUP} = {group}; {ECMP_MEMBER} = select({members});", hint=rule)


def build_policies(ctx: LflowContext, out: LflowTable, dp: Datapath,
                   only: Collection[str] | None = None) -> None:
    """The policy stages of one router (the caller names the owner of the stages' own
    flows; each policy's are its own); with `only`, the flows of the policies of those
    UUIDs alone."""
    if only is None:
        out.add(dp, POLICY, 0, "1", f"{ECMP_GROUP} = 0; next;")
        out.add(dp, POLICY_ECMP, 150, f"{ECMP_GROUP} == 0", "next;")
        out.add(dp, POLICY_ECMP, 0, "1", ctx.drop_action)
    rules = ref_rows(ctx.current(dp).policies)
    # (the ECMP group ids are counted only where a policy built takes one)
    counted = only is None or any(policy_ecmp(r) for r in rules if r.uuid in only)
    group = 1
    for rule in rules:
        chosen = only is None or rule.uuid in only
        if not chosen and not counted:
            continue
        ecmp = policy_ecmp(rule)
        if chosen:
            with out.owned_by(policy_owner(dp.key, rule.uuid)):
                if ecmp:
                    _ecmp_policy_flows(ctx, out, dp, rule, group)
                else:
                    _policy_flow(ctx, out, dp, rule)
        group += ecmp
