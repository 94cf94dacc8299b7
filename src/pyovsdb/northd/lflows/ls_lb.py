"""Load balancers on logical switches: the flows of `ls_in_pre_lb`, `ls_in_pre_stateful`,
`ls_in_lb_aff_check`, `ls_in_lb`, `ls_in_lb_aff_learn` each load balancer asks for
(23.03's `build_lswitch_flows_for_lb`: empty-backend events, `build_lb_rules_pre_stateful`,
`build_lb_rules`, `build_lb_affinity_ls_flows`), the health-check ARP/ND responders of
`ls_in_arp_rsp` (`build_lswitch_arp_nd_service_monitor`), and, through `ls_stateful`,
every per-switch flow of the load balancing, hairpin and stateful stages.

Rules kept here:
- A VIP is what 23.03 parsed (a VIP with one bad backend is no VIP); a template load
  balancer's VIPs and backends are `^variable` text, split on ':' as 23.03 splits them,
  its family from `options:address-family`. Where 23.03 tests a template VIP's
  address (affinity, ARP responders), the unset address counts as IPv6, as in 23.03.
- The backends of a VIP's `ct_lb_mark` are NB's text as it is, except under a health
  check: then only the backends with a usable monitor whose SB status is online or
  not yet known (an `online` monitor of a port whose binding is down is offline, as
  23.03 writes it in the same run).
- No backends: `reject` (toward the egress QoS stage) with `options:reject=true`, else
  the drop action; with `options:event=true` (or NB_Global `controller_event`) and no
  `reject`, also a `trigger_event` in `ls_in_pre_lb`. Rejects and events take the
  switch's copp meter, so those flows are asked for per switch.
- A load balancer's flows are on every switch it applies to (`lb.switches`); they are
  asked for once per switch, on behalf of the load balancer, and fold into one row
  with a datapath group. The health-check responders are on the backend port's switch,
  whether or not the load balancer is on any switch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ...idl.row import IdlRow
from ..build.datapaths import Datapath, smap_bool, smap_uint
from ..build.lb import LoadBalancer, parse_address, parse_endpoint
from ..build.service_monitor import lsp_enabled
from .context import CoppProto, LflowContext
from .ls_stateful import (
    REGBIT_CONNTRACK_COMMIT,
    REGBIT_CONNTRACK_NAT,
    build_affinity_defaults,
    build_switch,
    ct_lb_action,
)
from .stages import Stage
from .table import LflowTable

REG_ORIG_DIP_IPV4 = "reg1"
REG_ORIG_DIP_IPV6 = "xxreg1"
REG_ORIG_TP_DPORT = "reg2[0..15]"
REG_LB_AFF_BACKEND_IP4 = "reg4"
REG_LB_L2_AFF_BACKEND_IP6 = "xxreg0"
REG_LB_AFF_MATCH_PORT = "reg8[0..15]"
REGBIT_KNOWN_LB_SESSION = "reg9[6]"
AFFINITY_MAX = 65535
# The health checks' SB Service_Monitor rows by (IP, port, protocol, logical port).
Monitors = dict[tuple[str, int, str, str], IdlRow]


@dataclass(frozen=True, slots=True)
class Backend:
    ip: str
    port_str: str | None
    port: int  # 0 for a template backend, whatever its port text


@dataclass(frozen=True, slots=True)
class SwitchVip:
    """One VIP as 23.03's `ovn_lb_vip` has it."""

    key: str  # NB's key
    backend_ips: str  # NB's value
    ip: str
    port_str: str | None
    ipv4: bool  # the family (template: options:address-family)
    v4_address: bool  # whether the parsed address is IPv4 (false for a template)
    backends: tuple[Backend, ...]
    health_check: IdlRow | None

    @property
    def ip_match(self) -> str:
        return "ip4" if self.ipv4 else "ip6"


def _explicit_vips(lb: LoadBalancer) -> list[SwitchVip]:
    out = []
    for v in lb.vips:
        port_str = str(v.vip.port) if v.vip.port else None
        backends = tuple(Backend(b.ip_str, str(b.port) if b.port else None, b.port)
                         for b in v.backends)
        ipv4 = v.vip.family == 4
        out.append(SwitchVip(v.key, v.backends_str, v.vip.ip_str, port_str, ipv4, ipv4,
                             backends, v.health_check))
    return out


def _atoms(text: str) -> list[str]:
    return [a for a in text.split(":") if a]  # strtok: empty atoms skipped


def _template_vip(key: str, value: str, ipv4: bool) -> SwitchVip | None:
    """`ovn_lb_vip_init_template`: "^vip[:^port|:port]", backends templates or, if one
    is not, all explicit."""
    atoms = _atoms(key)
    if not atoms or len(atoms) > 2:
        return None
    port_str = atoms[1] if len(atoms) == 2 else None
    backends: list[Backend] = []
    ok = True
    for token in (t for t in value.split(",") if t):
        parts = _atoms(token)
        if not parts or len(parts) > 2:
            ok = False
            continue
        backends.append(Backend(parts[0], parts[1] if len(parts) == 2 else None, 0))
    if not ok:
        backends = []
        for token in (t for t in value.split(",") if t):
            be = parse_endpoint(token)
            if be is None or (be.family == 4) != ipv4 or bool(port_str) != bool(be.port):
                return None
            backends.append(Backend(be.ip_str, str(be.port) if be.port else None, be.port))
    return SwitchVip(key, value, atoms[0], port_str, ipv4, False, tuple(backends), None)


def switch_vips(lb: LoadBalancer) -> list[SwitchVip]:
    if not lb.template:
        return _explicit_vips(lb)
    ipv4 = lb.nb.options.get("address-family", "ipv4") == "ipv4"
    out = []
    for key, value in sorted(lb.nb.vips.items()):
        vip = _template_vip(key, value, ipv4)
        if vip is not None:
            out.append(vip)
    return out


def selection_fields(lb: LoadBalancer) -> str:
    proto = lb.protocol or None
    fields = sorted(str(f) for f in (lb.nb.selection_fields or ()))
    out = []
    for f in fields:
        if f in ("tp_src", "tp_dst") and proto:
            out.append(f"{proto}_{f[3:]}")
        else:
            out.append(f)
    return ",".join(out)


# -- health checks ---------------------------------------------------------------------

def lb_monitors(ctx: LflowContext) -> Monitors:
    table = ctx.sb.get("Service_Monitor")
    out: dict[tuple[str, int, str, str], IdlRow] = {}
    for row in sorted(table.rows.values(), key=lambda r: r.uuid) if table else ():
        out.setdefault((row.ip, int(row.port), row.protocol, row.logical_port), row)
    return out


@dataclass(frozen=True, slots=True)
class MonitorTarget:
    """A backend's `ip_port_mappings` entry: its logical port and monitor source IP."""

    port: str
    src_ip: str


def monitor_target(ctx: LflowContext, lb: LoadBalancer, vip: SwitchVip,
                   be: Backend) -> MonitorTarget | None:
    mapped = lb.nb.ip_port_mappings.get(be.ip if vip.v4_address else f"[{be.ip}]")
    if mapped is None or ":" not in mapped:
        return None
    name, src = mapped.split(":", 1)
    port = ctx.ports.ports.get(name)
    src_ip = parse_address(src)
    if port is None or not port.is_lsp or src_ip is None:
        return None
    return MonitorTarget(name, str(src_ip))


def active_backends(ctx: LflowContext, lb: LoadBalancer, vip: SwitchVip,
                     monitors: dict[tuple[str, int, str, str], IdlRow]) -> list[Backend]:
    protocol = lb.protocol or "tcp"
    out = []
    for be in vip.backends:
        target = monitor_target(ctx, lb, vip, be)
        if target is None:
            continue
        port = ctx.ports.ports[target.port]
        if not lsp_enabled(port.nb):
            continue
        row = monitors.get((be.ip, be.port, protocol, target.port))
        status = row.status if row is not None else None
        # The binding as the SB has it now (a claim does not rebuild the ports).
        pb = ctx.bindings().get(port.name)
        up = pb is not None and pb.up is True
        if status == "online" and not up:
            status = "offline"
        if status and status != "online":
            continue
        out.append(be)
    return out


# -- actions ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class VipAction:
    actions: str
    reject: bool


def vip_action(ctx: LflowContext, lb: LoadBalancer, vip: SwitchVip,
               monitors: dict[tuple[str, int, str, str], IdlRow]) -> VipAction:
    """`build_lb_vip_actions` for a switch, `reg0[1] = 0; ` included."""
    ct_lb = ct_lb_action(ctx)
    reject_opt = smap_bool(lb.nb.options, "reject")
    if vip.health_check is not None:
        active = active_backends(ctx, lb, vip, monitors)
        backends = ",".join(f"[{b.ip}]:{b.port}" if not vip.v4_address else f"{b.ip}:{b.port}"
                            for b in active)
        n_backends = len(active)
    else:
        backends, n_backends = vip.backend_ips, len(vip.backends)
    if not n_backends and reject_opt:
        return VipAction("reg0 = 0; reject { outport <-> inport; "
                         f"next(pipeline=egress,table={Stage.LS_OUT_QOS_MARK.table});}};",
                         True)
    if not n_backends:
        return VipAction(ctx.drop_action, False)
    fields = selection_fields(lb)
    hashed = f'; hash_fields="{fields}"' if fields else ""
    return VipAction(f"{REGBIT_CONNTRACK_COMMIT} = 0; {ct_lb}(backends={backends}{hashed});",
                     False)


# -- flows -----------------------------------------------------------------------------

def event_flow(ctx: LflowContext, lb: LoadBalancer, vip: SwitchVip,
               dps: Sequence[Datapath], stage: Stage, out: LflowTable) -> None:
    """`build_empty_lb_event_flow`: ask ovn-controller to report a VIP without backends
    (in `ls_in_pre_lb` on switches, `lr_in_dnat` on routers)."""
    enabled = smap_bool(lb.nb.options, "event") or smap_bool(ctx.nb_options,
                                                               "controller_event")
    if not enabled or vip.backends or smap_bool(lb.nb.options, "reject"):
        return
    match = f"{vip.ip_match}.dst == {vip.ip} && {lb.proto}"
    shown = vip.ip
    if vip.port_str:
        match += f" && {lb.proto}.dst == {vip.port_str}"
        shown = f"{vip.ip}:{vip.port_str}" if vip.ipv4 else f"[{vip.ip}]:{vip.port_str}"
    actions = (f'trigger_event(event = "empty_lb_backends", vip = "{shown}", '
               f'protocol = "{lb.proto}", load_balancer = "{lb.key}");')
    for dp in dps:
        out.add(dp, stage, 130, match, actions, hint=lb.nb,
                meter=ctx.copp_meter(dp, CoppProto.EVENT_ELB))


def _pre_stateful_flow(ctx: LflowContext, lb: LoadBalancer, vip: SwitchVip,
                       dps: Sequence[Datapath], out: LflowTable) -> None:
    """Keep the VIP and port for the hairpin stages, then let conntrack de-NAT."""
    reg = REG_ORIG_DIP_IPV4 if vip.ipv4 else REG_ORIG_DIP_IPV6
    actions = f"{reg} = {vip.ip}; "
    match = f"{REGBIT_CONNTRACK_NAT} == 1 && {vip.ip_match}.dst == {vip.ip}"
    if vip.port_str:
        actions += f"{REG_ORIG_TP_DPORT} = {vip.port_str}; "
        match += f" && {lb.proto}.dst == {vip.port_str}"
    actions += f"{ct_lb_action(ctx)};"
    out.add_group(dps, Stage.LS_IN_PRE_STATEFUL, 120, match, actions, hint=lb.nb)


def _affinity_flows(lb: LoadBalancer, vip: SwitchVip, timeout: int,
                    dps: Sequence[Datapath], out: LflowTable) -> None:
    """`build_lb_affinity_ls_flows`: a new connection to the VIP looks up the backend
    it chose before; one that found none learns the backend `ct_lb_mark` picks."""
    v6 = not vip.v4_address
    ip = "ip6" if v6 else "ip4"
    reg_vip = REG_ORIG_DIP_IPV6 if v6 else REG_ORIG_DIP_IPV4
    reg_backend = REG_LB_L2_AFF_BACKEND_IP6 if v6 else REG_LB_AFF_BACKEND_IP4
    check = f"ct.new && {ip} && {reg_vip} == {vip.ip}"
    if vip.port_str:
        check += f" && {REG_ORIG_TP_DPORT} == {vip.port_str}"
    out.add_group(dps, Stage.LS_IN_LB_AFF_CHECK, 100, check,
                  f"{REGBIT_KNOWN_LB_SESSION} = chk_lb_aff(); next;", hint=lb.nb)

    action = f"{REGBIT_CONNTRACK_COMMIT} = 0; {reg_vip} = {vip.ip}; "
    if vip.port_str:
        action += f"{REG_ORIG_TP_DPORT} = {vip.port_str}; "
    for rule in affinity_rules(vip, lb.proto, reg_vip, reg_backend, REG_ORIG_TP_DPORT, timeout):
        out.add_group(dps, Stage.LS_IN_LB_AFF_LEARN, 100, rule.learn, rule.commit,
                      hint=lb.nb)
        out.add_group(dps, Stage.LS_IN_LB, 150, rule.known,
                      f"{action}ct_lb_mark(backends={rule.backend});", hint=lb.nb)


@dataclass(frozen=True, slots=True)
class AffinityRule:
    """One backend of a VIP with affinity: the learn flow's match and action, the
    known-session match, the backend as `ct_lb_mark` names it."""

    backend: str
    learn: str
    commit: str
    known: str


def affinity_rules(vip: SwitchVip, proto: str, reg_vip: str, reg_backend: str,
                   reg_dport: str, timeout: int) -> list[AffinityRule]:
    """The per-backend part of `build_lb_affinity_ls_flows` and `_lr_flows` (the same
    but for the registers a switch and a router keep the VIP and port in)."""
    v6 = not vip.v4_address
    ip = "ip6" if v6 else "ip4"
    if vip.port_str:
        learned_vip = f"[{vip.ip}]:{vip.port_str}" if v6 else f"{vip.ip}:{vip.port_str}"
        learn_match = (f"{REGBIT_KNOWN_LB_SESSION} == 0 && ct.new && {ip} && "
                       f"{reg_vip} == {vip.ip} && {reg_dport} == {vip.port_str} && "
                       f"{ip}.dst == ")
    else:
        learned_vip = vip.ip
        learn_match = (f"{REGBIT_KNOWN_LB_SESSION} == 0 && ct.new && {ip} && "
                       f"{reg_vip} == {vip.ip} && {ip}.dst == ")
    known_match = f"{REGBIT_KNOWN_LB_SESSION} == 1 && ct.new && {ip} && {reg_backend} == "
    out = []
    for be in vip.backends:
        if be.port:
            backend = f"[{be.ip}]:{be.port}" if v6 else f"{be.ip}:{be.port}"
            learn = f"{learn_match}{be.ip} && {proto}.dst == {be.port}"
            known = f"{known_match}{be.ip} && {REG_LB_AFF_MATCH_PORT} == {be.port}"
        else:
            backend, learn, known = be.ip, learn_match + be.ip, known_match + be.ip
        commit = f'commit_lb_aff(vip = "{learned_vip}", backend = "{backend}"'
        if vip.port_str:
            commit += f", proto = {proto}"
        commit += f", timeout = {timeout}); /* drop */"
        out.append(AffinityRule(backend, learn, commit, known))
    return out


def _lb_rule(ctx: LflowContext, lb: LoadBalancer, vip: SwitchVip, dps: Sequence[Datapath],
             monitors: Monitors, out: LflowTable) -> None:
    act = vip_action(ctx, lb, vip, monitors)
    match = f"ct.new && {vip.ip_match}.dst == {vip.ip}"
    priority = 110
    if vip.port_str:
        match += f" && {lb.proto}.dst == {vip.port_str}"
        priority = 120
    timeout = min(smap_uint(lb.nb.options, "affinity_timeout"), AFFINITY_MAX)
    if timeout:
        _affinity_flows(lb, vip, timeout, dps, out)
    for dp in dps:
        meter = ctx.copp_meter(dp, CoppProto.REJECT) if act.reject else None
        out.add(dp, Stage.LS_IN_LB, priority, match, act.actions, hint=lb.nb, meter=meter)


def _service_monitor_responders(ctx: LflowContext, lb: LoadBalancer,
                                vips: Sequence[SwitchVip], out: LflowTable) -> None:
    """Answer ARP/ND for a health check's source IP on the backend's switch, so the
    backend's replies reach the monitor MAC."""
    if lb.template:
        return
    mac = ctx.svc_monitor_mac
    for vip in vips:
        if vip.health_check is None:
            continue
        for be in vip.backends:
            target = monitor_target(ctx, lb, vip, be)
            if target is None:
                continue
            src = target.src_ip
            if vip.v4_address:
                match = f"arp.tpa == {src} && arp.op == 1"
                actions = (f"eth.dst = eth.src; eth.src = {mac}; arp.op = 2; /* ARP reply */ "
                           f"arp.tha = arp.sha; arp.sha = {mac}; arp.tpa = arp.spa; "
                           f"arp.spa = {src}; outport = inport; flags.loopback = 1; output;")
            else:
                match = f"nd_ns && nd.target == {src}"
                actions = (f"nd_na {{ eth.dst = eth.src; eth.src = {mac}; ip6.src = {src}; "
                           f"nd.target = {src}; nd.tll = {mac}; outport = inport; "
                           f"flags.loopback = 1; output; }};")
            out.add(ctx.ports.ports[target.port].dp, Stage.LS_IN_ARP_RSP, 110, match,
                    actions, hint=lb.nb)


def build(ctx: LflowContext, out: LflowTable) -> None:
    """Every flow of this area's stages."""
    switches = ctx.switches()
    for dp in switches:
        with out.owned_by(("dp", dp.key)):
            build_switch(ctx, dp, out)
            build_affinity_defaults(dp, out)
    if ctx.builds_rules:
        build_lbs(ctx, out, ctx.lbs.lbs.values())


def build_lbs(ctx: LflowContext, out: LflowTable, lbs: Iterable[LoadBalancer],
              only: Mapping[str, frozenset[str]] | None = None) -> None:
    """The flows the load balancers `lbs` ask for: each VIP's on behalf of
    `("lb", key, vip key)`, the rest on behalf of `("lb", key)`. `only`: of the load
    balancers it names, the flows of those VIPs alone."""
    switches = ctx.switches()
    for lb in lbs:
        vips = switch_vips(lb)
        chosen = only.get(lb.key) if only is not None else None
        if chosen is None:
            with out.owned_by(("lb", lb.key)):
                _service_monitor_responders(ctx, lb, vips, out)
        else:
            vips = [v for v in vips if v.key in chosen]
        dps = [dp for dp in switches if dp.key in lb.switches]
        if not dps:
            continue
        monitors = lb_monitors(ctx) if any(v.health_check for v in vips) else {}
        for vip in vips:
            with out.owned_by(("lb", lb.key, vip.key)):
                event_flow(ctx, lb, vip, dps, Stage.LS_IN_PRE_LB, out)
                _pre_stateful_flow(ctx, lb, vip, dps, out)
                _lb_rule(ctx, lb, vip, dps, monitors, out)
