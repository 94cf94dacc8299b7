"""Destination lookup of the logical switch (`ls_in_l2_lkup`, all but the priority-0
`get_fdb` default), and the Forwarding_Group flows (`ls_in_arp_rsp` and
`ls_in_l2_lkup`), as ovn-northd 23.03 writes them.

Rules kept here (23.03's `build_lswitch_destination_lookup_bmcast`,
`build_lswitch_ip_unicast_lookup`, `build_fwd_group_lflows`):
- Every switch punts service-monitor replies (priority 110, the Copp `svc-monitor`
  meter) and floods Ethernet multicast to `_MC_flood` (70). With `mcast_snoop` it also
  punts IGMP/MLD (100, the `igmp` meter), floods link-local groups (85) and, unless
  `mcast_flood_unregistered`, sends unregistered IP multicast to the relaying routers
  and the static flood ports, or drops it (80); see `ls_mcast`.
- Unicast (50), per address of each non-external switch port, in the NB column's
  order: a leading MAC (scanned as `ovs_scan` does, so "MAC dynamic" and trailing
  junk still count), the MAC IPAM gave a dynamic address, or the peer router port's
  MAC for "router"; any other address (but "unknown") is reported, as 23.03 logs it.
  A disabled port's flows drop instead of delivering. The router
  port's MAC is matched only on the gateway chassis when the router has a distributed
  gateway port and the switch a localnet port; a distributed gateway peer also adds
  its router's distributed NAT MACs, each resident with its logical port.
- ARP/ND requests for a router port's addresses go to that port (`ls_rport_arp`).
- Forwarding groups are read in UUID order with 23.03's own loop, which shares one
  match and one actions buffer between groups and reuses the group index for the
  child ports: what it writes for a second group is reproduced, not corrected.
- Drops use `ctx.drop_action` where 23.03 uses `debug_drop_action()`.
"""

from __future__ import annotations

from ...idl.row import IdlRow
from ..build.datapaths import Datapath, smap_bool
from ..build.ports import Port
from ..build.ports_addresses import format_mac, is_dynamic, parse_mac
from ..diagnostics import ADDRESSES_COLUMN, report
from . import ls_mcast, ls_rport_arp
from .context import CoppProto, LflowContext, ref_rows
from .stages import Stage
from .table import LflowTable, Owner

L2 = Stage.LS_IN_L2_LKUP
# A forwarding group's flow: owner, stage, priority, match, actions, stage-hint row.
FwdFlow = tuple[Owner, Stage, int, str, str, IdlRow]
SVC_CHECK_MATCH = "eth.dst == $svc_monitor_mac && (tcp || icmp || icmp6)"

def build(ctx: LflowContext, out: LflowTable) -> None:
    """Every flow of this area's stages."""
    for dp in ctx.switches():
        for fwd_owner, stage, priority, match, actions, hint in _fwd_group_flows(dp):
            with out.owned_by(fwd_owner):
                out.add(dp, stage, priority, match, actions, hint=hint)
        with out.owned_by(("dp", dp.key)):
            _bmcast(ctx, dp, out)
    for dp in ctx.switches():
        for port in ctx.ports_of(dp):
            if port.is_lsp and port.type != "external":
                # (a router-type port's lookups follow its router's NAT rules: an
                # owner of their own, rebuilt alone when those change)
                if port.type == "router":
                    with out.owned_by(("rport", port.name)):
                        build_rport(ctx, port, out)
                else:
                    with out.owned_by(("port", port.name)):
                        _unicast(ctx, port, out)
    ls_mcast.build_igmp(ctx, out)


def build_rport(ctx: LflowContext, port: Port, out: LflowTable) -> None:
    """What router-type switch port `port` asks for here (the caller owns them as
    `("rport", name)`): the requests for its router's addresses and its lookup."""
    ls_rport_arp.build_port(ctx, port, out)
    _unicast(ctx, port, out)


def _fwd_group_flows(dp: Datapath) -> list[FwdFlow]:
    """The flows 23.03's forwarding-group loop writes for `dp`, in its order."""
    groups = ref_rows(dp.nb.forwarding_groups)
    flows: list[FwdFlow] = []
    match = actions = ""
    i = 0
    while i < len(groups):
        fwd = groups[i]
        children = sorted(str(c) for c in fwd.child_port)
        if not children:
            i += 1
            continue
        owner = ("fwd_group", fwd.uuid)
        vip, vmac = str(fwd.vip), str(fwd.vmac)
        match += f"arp.tpa == {vip} && arp.op == 1"
        actions += (f"eth.dst = eth.src; eth.src = {vmac}; arp.op = 2; /* ARP reply */ "
                    f"arp.tha = arp.sha; arp.sha = {vmac}; arp.tpa = arp.spa; "
                    f"arp.spa = {vip}; outport = inport; flags.loopback = 1; output;")
        flows.append((owner, Stage.LS_IN_ARP_RSP, 50, match, actions, fwd))
        match = f"eth.dst == {vmac}"
        ports = ",".join(f'"{c}"' for c in children)
        liveness = 'liveness="true",' if fwd.liveness else ""
        actions = f"fwd_group({liveness}childports={ports});"
        flows.append((owner, L2, 50, match, actions, fwd))
        i = len(children)  # the child loop's index, then the group loop's increment
    return flows


def _bmcast(ctx: LflowContext, dp: Datapath, out: LflowTable) -> None:
    out.add(dp, L2, 110, SVC_CHECK_MATCH, "handle_svc_check(inport);",
            meter=ctx.copp_meter(dp, CoppProto.SVC_MONITOR))
    info = ls_mcast.switch_info(ctx, dp)
    if info.enabled:
        igmp_meter = ctx.copp_meter(dp, CoppProto.IGMP)
        out.add(dp, L2, 100, "igmp", "igmp;", meter=igmp_meter)
        out.add(dp, L2, 100, "mldv1 || mldv2", "igmp;", meter=igmp_meter)
        out.add(dp, L2, 85, "ip4.mcast && ip4.dst == 224.0.0.0/24",
                'outport = "_MC_flood_l2"; output;')
        out.add(dp, L2, 85, "ip6.mcast_flood", 'outport = "_MC_flood"; output;')
        if not info.flood_unregistered:
            actions = ""
            if info.flood_relay:
                actions += 'clone { outport = "_MC_mrouter_flood"; output; }; '
            if info.flood_static:
                actions += 'outport ="_MC_static"; output;'
            if not info.flood_relay and not info.flood_static:
                actions += ctx.drop_action
            out.add(dp, L2, 80, "ip4.mcast || ip6.mcast", actions)
    out.add(dp, L2, 70, "eth.mcast", 'outport = "_MC_flood"; output;')


def _dynamic_mac(ctx: LflowContext, port: Port) -> int | None:
    """The MAC of the port's dynamic address after IPAM (what `dynamic_addresses`
    holds once this run wrote it): the addresses past the static ones, less the peer
    router port's networks a "router" address brought."""
    peer = ctx.ports.peer_of(port)
    networks = peer.networks if peer is not None else None
    for addrs in port.lsp_addrs[port.n_static_addrs:]:
        if addrs is not networks:
            return addrs.mac
    return None


def _unicast(ctx: LflowContext, port: Port, out: LflowTable) -> None:
    dp = port.dp
    action = f"outport = {port.json_key}; output;" if port.enabled \
        else ctx.drop_action
    for address in port.nb.addresses:
        mac = parse_mac(address)
        if mac is not None:
            out.add(dp, L2, 50, f"eth.dst == {format_mac(mac)}", action, hint=port.nb)
        elif address == "unknown":
            continue
        elif is_dynamic(address):
            mac = _dynamic_mac(ctx, port)
            if mac is not None:
                out.add(dp, L2, 50, f"eth.dst == {format_mac(mac)}", action,
                        hint=port.nb)
        elif address == "router":
            _router_address(ctx, port, action, out)
        else:
            report(ADDRESSES_COLUMN, port.name, address)


def _router_address(ctx: LflowContext, port: Port, action: str, out: LflowTable) -> None:
    dp = port.dp
    peer = ctx.ports.peer_of(port)
    if peer is None or not peer.is_lrp:
        return
    mac = parse_mac(str(peer.nb.mac))
    if mac is None:
        return
    match = f"eth.dst == {format_mac(mac)}"
    gateways = ctx.ports.l3dgw_ports.get(peer.dp.key, [])
    if gateways and ctx.ports.localnet_ports.get(dp.key):
        resident: str | None = None
        if peer.cr_port is not None:
            resident = peer.cr_port
        elif len(gateways) == 1 and smap_bool(peer.options, "reside-on-redirect-chassis"):
            resident = gateways[0].cr_port
        cr = ctx.ports.ports.get(resident) if resident is not None else None
        if cr is not None:
            match += f" && is_chassis_resident({cr.json_key})"
    out.add(dp, L2, 50, match, action, hint=port.nb)
    if peer.cr_port is None:
        return
    for nat in ref_rows(peer.dp.nb.nat):
        if nat.type != "dnat_and_snat" or not nat.logical_port or not nat.external_mac:
            continue
        ext = parse_mac(str(nat.external_mac))
        if ext is not None:
            out.add(dp, L2, 50, f"eth.dst == {format_mac(ext)} && "
                    f'is_chassis_resident("{nat.logical_port}")', action, hint=port.nb)
