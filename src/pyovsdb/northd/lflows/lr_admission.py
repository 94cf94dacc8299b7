"""Admission, neighbor lookup and learning, packet length checks and delivery of the
logical router (`lr_in_admission`, `lr_in_lookup_neighbor`, `lr_in_learn_neighbor`
(in `lr_neighbor`), `lr_in_chk_pkt_len`, `lr_in_larger_pkts`, `lr_out_delivery`), as
ovn-northd 23.03 writes them.

Rules kept here (23.03's `build_adm_ctrl_flows_for_lrouter(_port)`,
`build_gateway_mtu_flow`, `build_check_pkt_len_flows_for_lrouter`/`_for_lrp`,
`build_icmperr_pkt_big_flows`, `build_egress_delivery_flows_for_lrouter_port`):
- A router drops VLAN-tagged frames and broadcast/multicast sources, and by default
  everything. An enabled router port admits multicast and frames to its MAC, saving
  its MAC in `xreg0[0..47]`; a distributed gateway port admits its MAC only on the
  gateway chassis, unless its peer switch has a vtep port. A chassisredirect port
  admits nothing and delivers nothing; a disabled port neither.
- `options:gateway_mtu` on a router port (a positive integer) checks every packet it
  admits or sends out against the MTU plus the L2 header (18 bytes when a localnet port
  of its peer switch has a VLAN tag requested, else 14); `gateway_mtu_bypass` is a
  match whose packets skip the check, at priority 55 instead of 50. A packet too big to
  leave by such a port gets an ICMP "fragmentation needed" (IPv4, if the port it came
  from has an IPv4 address) or "packet too big" (IPv6) from the port it came in by,
  with the Copp `icmp4-error`/`icmp6-error` meters. (The same errors for packets too
  big that came in by the gateway port itself are `lr_in_ip_input`'s, in
  `lr_ip_input_nat`.)
- The router ports that the packet-length flows walk are the NB `ports` column's, in
  UUID order (as the C IDL keeps a set), found by name.
- Delivery outputs to each enabled router port (with `mcast_relay`, IP multicast
  leaves with the port's MAC as source); every such port asks for the default drop, so
  a router without one has none.
- Flows of the router come from the router, flows of a port from the port; drops use
  `ctx.drop_action`.
"""

from __future__ import annotations

from ...idl.row import IdlRow
from ..build.datapaths import Datapath, smap_bool, smap_int
from ..build.ports import Port
from . import lr_neighbor
from .context import CoppProto, LflowContext
from .stages import Stage
from .table import LflowTable

ADMISSION = Stage.LR_IN_ADMISSION
CHK_PKT_LEN = Stage.LR_IN_CHK_PKT_LEN
LARGER_PKTS = Stage.LR_IN_LARGER_PKTS
DELIVERY = Stage.LR_OUT_DELIVERY
INPORT_ETH_ADDR = "xreg0[0..47]"  # REG_INPORT_ETH_ADDR
PKT_LARGER = "reg9[1]"  # REGBIT_PKT_LARGER
EGRESS_LOOPBACK = "reg9[0]"  # REGBIT_EGRESS_LOOPBACK
ETH_HEADER_LEN = 14
VLAN_ETH_HEADER_LEN = 18


def gateway_mtu(port: Port) -> int:
    return smap_int(port.options, "gateway_mtu")


def _l2_header_size(ctx: LflowContext, port: Port) -> int:
    peer = ctx.ports.peer_of(port)
    if peer is not None and peer.is_lsp:
        for localnet in ctx.ports.localnet_ports.get(peer.dp.key, []):
            if localnet.nb.tag_request is not None:
                return VLAN_ETH_HEADER_LEN
    return ETH_HEADER_LEN


def add_gateway_mtu_flow(ctx: LflowContext, out: LflowTable, port: Port, stage: Stage,
                         match: str, actions: str, hint: IdlRow) -> None:
    """23.03's `build_gateway_mtu_flow`: `match` at priority 50, checking the packet
    length first if `port` has a gateway MTU, and then `match` narrowed to
    `gateway_mtu_bypass` at 55 without the check."""
    dp = port.dp
    mtu = gateway_mtu(port)
    check = ""
    if mtu > 0:
        check = f"{PKT_LARGER} = check_pkt_larger({mtu + _l2_header_size(ctx, port)}); "
    out.add(dp, stage, 50, match, check + actions, hint=hint)
    bypass = port.options.get("gateway_mtu_bypass")
    if mtu > 0 and bypass is not None:
        out.add(dp, stage, 55, f"{match} && ({bypass})", actions, hint=hint)


def build(ctx: LflowContext, out: LflowTable) -> None:
    """Every flow of this area's stages."""
    for dp in ctx.routers():
        with out.owned_by(("dp", dp.key)):
            out.add(dp, ADMISSION, 100, "vlan.present || eth.src[40]", ctx.drop_action)
            out.add(dp, ADMISSION, 0, "1", ctx.drop_action)
            lr_neighbor.build_router(ctx, dp, out)
            _pkt_len(ctx, dp, out)
    for dp in ctx.routers():
        for port in ctx.ports_of(dp):
            if port.is_lrp:
                with out.owned_by(("port", port.name)):
                    _admission(ctx, port, out)
                    lr_neighbor.build_port(ctx, port, out)
                    _delivery(ctx, port, out)


def _centralized(ctx: LflowContext, port: Port) -> bool:
    """`consider_l3dgw_port_is_centralized`: a distributed gateway port whose peer
    switch has no vtep port."""
    if port.cr_port is None:
        return False
    peer = ctx.ports.peer_of(port)
    return peer is None or peer.dp.key not in ctx.ports.vtep_switches


def _admission(ctx: LflowContext, port: Port, out: LflowTable) -> None:
    if not port.enabled or port.networks is None:
        return
    mac = port.networks.ea_s
    save = f"{INPORT_ETH_ADDR} = {mac}; next;"
    add_gateway_mtu_flow(ctx, out, port, ADMISSION,
                         f"eth.mcast && inport == {port.json_key}", save, port.nb)
    match = f"eth.dst == {mac} && inport == {port.json_key}"
    if _centralized(ctx, port):
        match += f" && {lr_neighbor.on_gateway(port)}"
    add_gateway_mtu_flow(ctx, out, port, ADMISSION, match, save, port.nb)


def _router_ports(ctx: LflowContext, dp: Datapath) -> list[Port | None]:
    """The ports the NB `ports` column names, in its order (None for a name with no
    port or with a switch port)."""
    rows = sorted((r for r in dp.nb.ports if isinstance(r, IdlRow)), key=lambda r: r.uuid)
    found: list[Port | None] = []
    for row in rows:
        port = ctx.ports.ports.get(row.name)
        found.append(port if port is not None and port.is_lrp else None)
    return found


def _pkt_len(ctx: LflowContext, dp: Datapath, out: LflowTable) -> None:
    out.add(dp, CHK_PKT_LEN, 0, "1", "next;")
    out.add(dp, LARGER_PKTS, 0, "1", "next;")
    ports = _router_ports(ctx, dp)
    for port in ports:
        if port is None:
            continue
        mtu = gateway_mtu(port)
        if mtu <= 0:
            continue
        add_gateway_mtu_flow(ctx, out, port, CHK_PKT_LEN, f"outport == {port.json_key}",
                             "next;", port.nb)
        # The ports of the gateway port's own router (another router's if an NB port
        # row is shared and went to it).
        siblings = ports if port.dp.key == dp.key else _router_ports(ctx, port.dp)
        for other in siblings:
            if other is not None and other is not port:
                _icmp_too_big(ctx, out, other, mtu, port)


def _icmp_too_big(ctx: LflowContext, out: LflowTable, port: Port, mtu: int,
                  outport: Port) -> None:
    """`build_icmperr_pkt_big_flows` in `lr_in_larger_pkts`: the ICMP errors for
    packets that came in by `port` and are too big for `outport`."""
    networks = port.networks
    if networks is None:
        return
    dp = port.dp
    via = f"outport == {outport.json_key} && "
    admission = Stage.LR_IN_ADMISSION.table
    common = f"{EGRESS_LOOPBACK} = 1; {PKT_LARGER} = 0; eth.dst = {networks.ea_s}; "
    if networks.ipv4:
        out.add(dp, LARGER_PKTS, 150,
                f"inport == {port.json_key} && {via}ip4 && {PKT_LARGER} && "
                f"{EGRESS_LOOPBACK} == 0",
                f"icmp4_error {{{common}ip4.dst = ip4.src; "
                f"ip4.src = {networks.ipv4[0].addr_s}; ip.ttl = 255; "
                "icmp4.type = 3; /* Destination Unreachable. */ "
                "icmp4.code = 4; /* Frag Needed and DF was Set. */ "
                f"icmp4.frag_mtu = {mtu}; next(pipeline=ingress, table={admission}); }};",
                hint=port.nb, meter=ctx.copp_meter(dp, CoppProto.ICMP4_ERR))
    if networks.ipv6:
        out.add(dp, LARGER_PKTS, 150,
                f"inport == {port.json_key} && {via}ip6 && {PKT_LARGER} && "
                f"{EGRESS_LOOPBACK} == 0",
                f"icmp6_error {{{common}ip6.dst = ip6.src; "
                f"ip6.src = {networks.ipv6[0].addr_s}; ip.ttl = 255; "
                "icmp6.type = 2; /* Packet Too Big. */ icmp6.code = 0; "
                f"icmp6.frag_mtu = {mtu}; next(pipeline=ingress, table={admission}); }};",
                hint=port.nb, meter=ctx.copp_meter(dp, CoppProto.ICMP6_ERR))


def _delivery(ctx: LflowContext, port: Port, out: LflowTable) -> None:
    if not port.enabled or port.networks is None:
        return
    dp = port.dp
    if smap_bool(dp.nb.options, "mcast_relay"):
        out.add(dp, DELIVERY, 110, f"(ip4.mcast || ip6.mcast) && outport == {port.json_key}",
                f"eth.src = {port.networks.ea_s}; output;")
    out.add(dp, DELIVERY, 100, f"outport == {port.json_key}", "output;")
    out.add(dp, DELIVERY, 0, "1", ctx.drop_action)
