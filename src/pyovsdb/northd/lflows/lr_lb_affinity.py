"""Load balancer affinity on routers: the `lr_in_lb_aff_check`, `lr_in_dnat` (priority
150) and `lr_in_lb_aff_learn` flows of a VIP whose load balancer has
`options:affinity_timeout` (23.03's `build_lb_affinity_lr_flows`).

Rules kept here:
- A new connection to the VIP looks up the backend it was given before
  (`chk_lb_aff`); one that found it goes to that backend at once, one that did not
  learns the backend `ct_lb_mark` picks (`commit_lb_aff`) for `timeout` seconds.
- The VIP is kept in the next-hop register (`reg0`/`xxreg0`) and its port in
  `reg9[16..31]`, where the router pipeline has room for them; the family is the
  parsed address's (a template VIP's unset address counts as IPv6, as in 23.03).
- The chosen backend's `ct_lb_mark` (always `ct_lb_mark`, whatever the chassis
  features) carries the flow type's flag: set first, and passed to the action too
  (`; force_snat`), for routers forcing SNAT and for `skip_snat` load balancers.
- The flows are asked for on the routers given, per router, on behalf of the load
  balancer; nothing is asked for when there are none.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..build.datapaths import Datapath, smap_uint
from ..build.lb import LoadBalancer
from .ls_lb import AFFINITY_MAX, SwitchVip, affinity_rules
from .stages import Stage
from .table import LflowTable

REG_NEXT_HOP_IPV4 = "reg0"
REG_NEXT_HOP_IPV6 = "xxreg0"
REG_ORIG_TP_DPORT_ROUTER = "reg9[16..31]"
REG_LB_AFF_BACKEND_IP4 = "reg4"
REG_LB_L3_AFF_BACKEND_IP6 = "xxreg1"
REG_LB_AFF_MATCH_PORT = "reg8[0..15]"
REGBIT_KNOWN_LB_SESSION = "reg9[6]"


def lb_affinity_timeout(lb: LoadBalancer) -> int:
    """`options:affinity_timeout` as 23.03 reads it (`smap_get_uint`, at most 65535)."""
    return min(smap_uint(lb.nb.options, "affinity_timeout"), AFFINITY_MAX)


def build_affinity_flows(lb: LoadBalancer, vip: SwitchVip, new_match: str,
                         flag: str | None, routers: Sequence[Datapath], timeout: int,
                         out: LflowTable) -> None:
    """One VIP's affinity flows on `routers`; `flag` is "skip_snat", "force_snat" or
    None (no flag)."""
    if not routers or not timeout:
        return
    v6 = not vip.v4_address
    ip = "ip6" if v6 else "ip4"
    reg_vip = REG_NEXT_HOP_IPV6 if v6 else REG_NEXT_HOP_IPV4
    reg_backend = REG_LB_L3_AFF_BACKEND_IP6 if v6 else REG_LB_AFF_BACKEND_IP4
    proto = lb.proto

    check = f"{reg_vip} = {ip}.dst; "
    if vip.port_str:
        check += f"{REG_ORIG_TP_DPORT_ROUTER} = {proto}.dst; "
    check += f"{REGBIT_KNOWN_LB_SESSION} = chk_lb_aff(); next;"
    out.add_group(routers, Stage.LR_IN_LB_AFF_CHECK, 100, new_match, check, hint=lb.nb)

    action = f"{reg_vip} = {vip.ip}; "
    if flag is not None:
        action += f"flags.{flag}_for_lb = 1; "
    action += "ct_lb_mark(backends="
    ct_flag = f"; {flag}" if flag is not None else ""
    for rule in affinity_rules(vip, proto, reg_vip, reg_backend, REG_ORIG_TP_DPORT_ROUTER,
                               timeout):
        out.add_group(routers, Stage.LR_IN_LB_AFF_LEARN, 100, rule.learn, rule.commit,
                      hint=lb.nb)
        out.add_group(routers, Stage.LR_IN_DNAT, 150, rule.known,
                      f"{action}{rule.backend}{ct_flag});", hint=lb.nb)
