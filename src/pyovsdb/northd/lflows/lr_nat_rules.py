"""The NAT rules of a router as its flows use them, and each rule's flows in the NAT
stages: `lr_in_unsnat`, `lr_in_dnat`, `lr_out_chk_dnat_local`, `lr_out_undnat`,
`lr_out_snat` and `lr_out_egr_loop` (ovn-northd 23.03's `lrouter_check_nat_entry`,
`build_lrouter_in_unsnat_flow`, `build_lrouter_in_dnat_flow`,
`build_lrouter_out_is_dnat_local`, `build_lrouter_out_undnat_flow`,
`build_lrouter_out_snat_flow`, `lrouter_nat_add_ext_ip_match`).

Rules kept here:
- A rule is checked as 23.03 checks it, and a rule that fails is skipped whole: not
  both `allowed_ext_ips` and `exempted_ext_ips`; `external_ip` one host address (IPv4
  tried first; the rule is IPv6 when that fails); `logical_ip` of the same family, a
  network for snat and a host for the DNAT types; a distributed rule's
  `external_mac` must scan as a MAC.
- A rule's gateway port: its `gateway_port` if that is a distributed gateway port of
  this router; else the router's only one; else, of several, the first (in NB UUID
  order, the order of the router's `ports` column) with a network holding the
  external IP; none found fails the rule. A gateway router has none.
- A rule is distributed (done on the chassis of its `logical_port`, not the gateway
  chassis) if it is a dnat_and_snat with `logical_port` and `external_mac` on a router
  with a distributed gateway port; centralized rules there match
  `is_chassis_resident` of the gateway port's chassisredirect port.
- Flows print the NB strings as NB holds them (`external_ip`, `logical_ip`, the
  `logical_port` unquoted as 23.03 writes it); only the MAC a distributed rule writes
  in eth.src is printed back as parsed.
- Stateless NAT is a dnat_and_snat with `options:stateless=true`: it rewrites
  addresses instead of using conntrack.
- The SNAT priority grows with the logical network's prefix length (+128 on a
  distributed router), so the longest prefix wins; exempted external IPs get a
  `next;` flow 2 above their rule.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from ...idl.row import IdlRow
from ..build.datapaths import Datapath, smap_bool
from ..build.ports import Port
from ..build.ports_addresses import (
    ALL4,
    ALL6,
    find_lrp_member_ip,
    format_mac,
    ip_parse_masked,
    ipv6_parse_masked,
    parse_mac,
    v4_cidr_bits,
    v6_cidr_bits,
)
from .context import LflowContext, ref_rows
from .router_facts import RouterFacts, router_facts
from .stages import Stage
from .table import LflowTable

DST_NAT_IP_LOCAL = "reg9[4]"
EGRESS_LOOPBACK = "reg9[0]"
N_LOG_REGS = 10



@dataclass(frozen=True, slots=True)
class NatRule:
    """One NAT row that passed 23.03's checks, with what its flows need."""

    nb: IdlRow
    type: str  # "snat", "dnat" or "dnat_and_snat"
    external_ip: str  # as NB has it
    logical_ip: str
    is_v6: bool
    cidr_bits: int  # prefix length of logical_ip
    distributed: bool
    mac: str  # a distributed rule's external MAC, printed as parsed
    gw_port: Port | None  # None on a gateway router
    cr_key: str | None  # the gateway port's chassisredirect port, quoted
    stateless: bool
    port_range: str
    allowed: str | None  # Address_Set names
    exempted: str | None

    @property
    def v(self) -> str:
        return "6" if self.is_v6 else "4"

    @property
    def has_snat(self) -> bool:
        return self.type in ("snat", "dnat_and_snat")

    @property
    def has_dnat(self) -> bool:
        return self.type in ("dnat", "dnat_and_snat")

    @property
    def logical_port(self) -> str:
        return str(self.nb.logical_port or "")

    @property
    def external_mac(self) -> str:
        return str(self.nb.external_mac or "")

    @property
    def range_suffix(self) -> str:
        return f",{self.port_range}" if self.port_range else ""

    def resident(self) -> str:
        """Where this rule's flows apply on a distributed router."""
        if self.distributed:
            return f'is_chassis_resident("{self.logical_port}")'
        assert self.cr_key is not None
        return f"is_chassis_resident({self.cr_key})"


def _set_name(value: object) -> str | None:
    return str(value.name) if isinstance(value, IdlRow) else None


def check_rule(ctx: LflowContext, dp: Datapath, row: IdlRow,
               dgps: list[Port]) -> NatRule | None:
    """The rule as 23.03's `lrouter_check_nat_entry` accepts it, or None."""
    allowed = _set_name(row.allowed_ext_ips)
    exempted = _set_name(row.exempted_ext_ips)
    if row.allowed_ext_ips is not None and row.exempted_ext_ips is not None:
        return None
    external = str(row.external_ip)
    parsed = ip_parse_masked(external)
    is_v6 = isinstance(parsed, str) or parsed[1] != ALL4
    if is_v6:
        parsed = ipv6_parse_masked(external)
        if isinstance(parsed, str) or parsed[1] != ALL6:
            return None
    valid, gw_port = _gateway_port(ctx, dp, row, external, dgps)
    if not valid:
        return None
    logical = str(row.logical_ip)
    parsed = ipv6_parse_masked(logical) if is_v6 else ip_parse_masked(logical)
    if isinstance(parsed, str) or (row.type != "snat" and parsed[1] != (ALL6 if is_v6
                                                                        else ALL4)):
        return None
    bits = v6_cidr_bits(parsed[1]) if is_v6 else v4_cidr_bits(parsed[1])
    distributed = False
    mac = "ff:ff:ff:ff:ff:ff"
    if dgps and row.type == "dnat_and_snat" and row.logical_port and row.external_mac:
        value = parse_mac(str(row.external_mac))
        if value is None:
            return None
        distributed = True
        mac = format_mac(value)
    cr = ctx.ports.ports.get(gw_port.cr_port or "") if gw_port is not None else None
    return NatRule(
        nb=row, type=str(row.type), external_ip=external, logical_ip=logical,
        is_v6=is_v6, cidr_bits=bits, distributed=distributed, mac=mac,
        gw_port=gw_port, cr_key=cr.json_key if cr is not None else None,
        stateless=row.type == "dnat_and_snat" and smap_bool(row.options, "stateless"),
        port_range=str(row.external_port_range or ""), allowed=allowed,
        exempted=exempted)


def nat_rules(ctx: LflowContext, dp: Datapath) -> list[NatRule]:
    """The router's NAT rules that pass `check_rule`, in the `nat` column's order (NB
    UUIDs), its distributed gateway ports in NB order: checked once per build. In a
    rebuild of some external IPs' rules (`LflowContext.nat_ips`), those alone (a
    rule's check reads no other rule)."""
    only = ctx.nat_ips.get(dp.key)
    key = dp.key if only is None else (dp.key, only)
    cache: dict[Hashable, list[NatRule]] = ctx.cache.setdefault("lr_nat_rules", {})
    rules = cache.get(key)
    if rules is None:
        dgps = router_facts(ctx, dp).l3dgw_ports
        rows = ref_rows(dp.nb.nat)
        if only is not None:
            rows = [row for row in rows if str(row.external_ip) in only]
        rules = cache[key] = [rule for rule in (check_rule(ctx, dp, row, dgps)
                                                for row in rows) if rule is not None]
    return rules


def _gateway_port(ctx: LflowContext, dp: Datapath, row: IdlRow, external: str,
                  dgps: list[Port]) -> tuple[bool, Port | None]:
    """Whether the rule has a valid gateway port, and that port (None on a router
    without distributed gateway ports)."""
    ref = row.gateway_port
    if ref is None:
        if len(dgps) <= 1:
            return True, dgps[0] if dgps else None
        found = next((p for p in dgps
                      if find_lrp_member_ip(p.networks, external) is not None), None)
        return found is not None, found
    port = ctx.ports.ports.get(str(ref.name)) if isinstance(ref, IdlRow) else None
    if port is None or port.dp.key != dp.key or not port.is_lrp or port.cr_port is None:
        return False, None
    return True, port


# --- the per-rule flows of the NAT stages -------------------------------------------

def _ext_ip_match(out: LflowTable, dp: Datapath, rule: NatRule, match: str,
                  is_src: bool, gw_router: bool) -> str:
    """The match with the rule's allowed external IPs, or the same match after adding
    the flow that lets its exempted ones pass."""
    side = "src" if is_src else "dst"
    if rule.allowed is not None:
        return f"{match} && ip{rule.v}.{side} == ${rule.allowed}"
    if rule.exempted is not None:
        if is_src:
            stage, priority = Stage.LR_IN_DNAT, 102
        else:
            stage, priority = Stage.LR_OUT_SNAT, rule.cidr_bits + 3
            if not gw_router:
                priority += 128
        out.add(dp, stage, priority, f"{match} && ip{rule.v}.{side} == ${rule.exempted}",
                "next;", hint=rule.nb)
    return match


def unsnat(out: LflowTable, dp: Datapath, facts: RouterFacts, rule: NatRule) -> None:
    if not rule.has_snat:
        return
    v, ext = rule.v, rule.external_ip
    if facts.is_gw_router:
        out.add(dp, Stage.LR_IN_UNSNAT, 90, f"ip && ip{v}.dst == {ext}",
                "next;" if rule.stateless else "ct_snat;", hint=rule.nb)
        return
    assert rule.gw_port is not None
    where = f"ip && ip{v}.dst == {ext} && inport == {rule.gw_port.json_key}"
    resident = "" if rule.distributed else " && " + rule.resident()
    out.add(dp, Stage.LR_IN_UNSNAT, 100, f"{where} && flags.loopback == 0{resident}",
            "next;" if rule.stateless else "ct_snat_in_czone;", hint=rule.nb)
    if not rule.stateless:
        out.add(dp, Stage.LR_IN_UNSNAT, 100,
                f"{where} && flags.loopback == 1 && flags.use_snat_zone == 1{resident}",
                "ct_snat;", hint=rule.nb)


def dnat(out: LflowTable, dp: Datapath, facts: RouterFacts, rule: NatRule) -> None:
    if not rule.has_dnat:
        return
    v, ext, logical = rule.v, rule.external_ip, rule.logical_ip
    gw_router = facts.is_gw_router
    match = f"ip && ip{v}.dst == {ext}"
    if not gw_router:
        assert rule.gw_port is not None
        match += f" && inport == {rule.gw_port.json_key}"
        if not rule.distributed:
            match += " && " + rule.resident()
    match = _ext_ip_match(out, dp, rule, match, True, gw_router)
    if gw_router:
        actions = "flags.force_snat_for_dnat = 1; " if facts.dnat_force_snat else ""
        if rule.stateless:
            actions += f"flags.loopback = 1; ip{v}.dst={logical}; next;"
        else:
            actions += f"flags.loopback = 1; ct_dnat({logical}{rule.range_suffix});"
    elif rule.stateless:
        actions = f"ip{v}.dst={logical}; next;"
    else:
        actions = f"ct_dnat_in_czone({logical}{rule.range_suffix});"
    out.add(dp, Stage.LR_IN_DNAT, 100, match, actions, hint=rule.nb)


def dnat_local(out: LflowTable, dp: Datapath, rule: NatRule) -> None:
    """Marks, on a distributed router, traffic to the rule's external IP where the
    rule is done, so SNAT later uses the common zone."""
    out.add(dp, Stage.LR_OUT_CHK_DNAT_LOCAL, 50,
            f"ip && ip{rule.v}.dst == {rule.external_ip} && {rule.resident()}",
            f"{DST_NAT_IP_LOCAL} = 1; next;", hint=rule.nb)


def undnat(out: LflowTable, dp: Datapath, rule: NatRule) -> None:
    """Replies of DNATed connections on a distributed router."""
    if not rule.has_dnat:
        return
    assert rule.gw_port is not None
    match = f"ip && ip{rule.v}.src == {rule.logical_ip} && outport == {rule.gw_port.json_key}"
    if not rule.distributed:
        match += " && " + rule.resident()
    actions = f"eth.src = {rule.mac}; " if rule.distributed else ""
    actions += "next;" if rule.stateless else "ct_dnat_in_czone;"
    out.add(dp, Stage.LR_OUT_UNDNAT, 100, match, actions, hint=rule.nb)


def snat(out: LflowTable, dp: Datapath, facts: RouterFacts, rule: NatRule) -> None:
    if not rule.has_snat:
        return
    v, ext = rule.v, rule.external_ip
    if facts.is_gw_router:
        match = _ext_ip_match(out, dp, rule, f"ip && ip{v}.src == {rule.logical_ip}",
                              False, True)
        if rule.stateless:
            actions = f"ip{v}.src={ext}; next;"
        else:
            match += " && (!ct.trk || !ct.rpl)"
            actions = f"ct_snat({ext}{rule.range_suffix});"
        out.add(dp, Stage.LR_OUT_SNAT, rule.cidr_bits + 1, match, actions, hint=rule.nb)
        return
    assert rule.gw_port is not None
    priority = rule.cidr_bits + 1 + 128
    match = (f"ip && ip{v}.src == {rule.logical_ip} && outport == "
             f"{rule.gw_port.json_key} && {rule.resident()}")
    match = _ext_ip_match(out, dp, rule, match, False, False)
    eth = f"eth.src = {rule.mac}; " if rule.distributed else ""
    if rule.stateless:
        actions = f"{eth}ip{v}.src={ext}; next;"
    else:
        actions = f"{eth}ct_snat_in_czone({ext}{rule.range_suffix});"
    out.add(dp, Stage.LR_OUT_SNAT, priority, match, actions, hint=rule.nb)
    if not rule.stateless:
        out.add(dp, Stage.LR_OUT_SNAT, priority + 1,
                f"{match} && {DST_NAT_IP_LOCAL} == 1",
                f"{eth}{DST_NAT_IP_LOCAL} = 0; ct_snat({ext}{rule.range_suffix});",
                hint=rule.nb)


EGR_LOOP_ACTIONS = (
    "clone { ct_clear; inport = outport; outport = \"\"; eth.dst <-> eth.src; "
    f"flags = 0; flags.loopback = 1; flags.use_snat_zone = {DST_NAT_IP_LOCAL}; "
    + "".join(f"reg{i} = 0; " for i in range(N_LOG_REGS))
    + f"{EGRESS_LOOPBACK} = 1; next(pipeline=ingress, table="
    f"{Stage.LR_IN_ADMISSION.table}); }};")


def egr_loop(out: LflowTable, dp: Datapath, rule: NatRule) -> None:
    """Packets leaving a distributed gateway port for the rule's external IP come back
    in through that port, to be NATed."""
    assert rule.gw_port is not None
    out.add(dp, Stage.LR_OUT_EGR_LOOP, 100,
            f"ip{rule.v}.dst == {rule.external_ip} && outport == "
            f"{rule.gw_port.json_key} && {rule.resident()}", EGR_LOOP_ACTIONS, hint=rule.nb)
