"""Admission to and exit from a logical switch: ingress port security
(`ls_in_check_port_sec`, `ls_in_apply_port_sec`), FDB lookup and learning
(`ls_in_lookup_fdb`, `ls_in_put_fdb`), the external-port guard
(`ls_in_external_port`), where unknown destinations go (`ls_in_l2_unknown`, and the
priority-0 `get_fdb` flow of `ls_in_l2_lkup`), and egress port security
(`ls_out_check_port_sec`, `ls_out_apply_port_sec`).

Rules kept here (OVN 23.03):
- Port security itself is generic: one `check_in_port_sec()`/`check_out_port_sec()`
  flow per switch, which ovn-controller evaluates from `Port_Binding.port_security`.
  A port gets flows of its own only where it leaves that path: disabled (everything it
  sends is marked for drop, nothing unknown is delivered to it), a vtep port (skips
  the ingress pipeline up to the hairpin stage), or a QoS queue (`set_queue` first;
  a localnet port also sets it on the way out). External ports get none of these.
- The queue id is the `qdisc_queue_id` this same run writes to the port's binding
  (23.03 reads `op->sb->options` after updating them), so it is allocated again here
  exactly as the Port_Binding builder allocates it, over the ports in build order.
- A port learns MACs into the FDB only when it has "unknown" among its addresses, no
  (parsable) port security, and is a VIF, or a localnet port with
  `options:localnet_learn_fdb=true`. Being disabled does not stop it.
- A switch floods unknown destinations to `_MC_unknown` only if an enabled, non-external
  port of it has "unknown" (the ports `_MC_unknown` holds); otherwise they are dropped.
- On a chassis that does not bind an external port, ARP/ND for the router ports'
  addresses and traffic to their MACs coming in through a localnet port from that
  external port's MACs are dropped, one set of flows per localnet port.
- Drops use `ctx.drop_action`, as 23.03 uses `debug_drop_action()`.
"""

from __future__ import annotations

import ipaddress

from ..build.datapaths import Datapath, smap_bool
from ..build.ports import Port
from ..build.ports_addresses import Addresses, Ipv6Net, lsp_addresses
from ..build.ports_switch import SwitchPortState
from .context import LflowContext
from .stages import Stage
from .table import LflowTable

PORT_SEC_DROP = "reg0[15]"  # REGBIT_PORT_SEC_DROP
FROM_RAMP = "reg0[14]"  # REGBIT_FROM_RAMP
LKUP_FDB = "reg0[11]"  # REGBIT_LKUP_FDB
MC_UNKNOWN = "_MC_unknown"


def build(ctx: LflowContext, out: LflowTable) -> None:
    """Every flow of this area's stages."""
    queues = queue_ids(ctx)
    for dp in ctx.switches():
        with out.owned_by(("dp", dp.key)):
            _datapath_flows(ctx, out, dp, [p for p in ctx.all_ports_of(dp) if p.is_lsp])
        for port in (p for p in ctx.ports_of(dp) if p.is_lsp):
            with out.owned_by(("port", port.name)):
                _port_sec(ctx, out, port, queues.get(port.name, 0))
                _learn_fdb(out, port)
                _external_port(ctx, out, port)


def n_port_security(port: Port) -> int:
    """How many of the port's `port_security` entries parse (23.03's `n_ps_addrs`)."""
    return sum(1 for entry in port.nb.port_security if lsp_addresses(entry) is not None)


def queue_ids(ctx: LflowContext) -> dict[str, int]:
    """The `qdisc_queue_id` each switch port's binding gets in this run (by name; ports
    without one left out), allocated as the Port_Binding builder allocates them."""
    # Only ports with QoS settings get a queue (23.03 frees the others' in the same
    # run): without one among the ports built, there is nothing to allocate.
    if not any(_has_qos(p) for dp in ctx.switches() for p in ctx.all_ports_of(dp)):
        return {}
    state = SwitchPortState.start(ctx.sb, ctx.ports)
    out: dict[str, int] = {}
    for port in ctx.ports.ports.values():
        if port.is_lsp and port.type != "router":
            queue = state.queue_id(port)
            if queue:
                out[port.name] = queue
    return out


def _has_qos(port: Port) -> bool:
    options = port.options
    return "qos_max_rate" in options or "qos_min_rate" in options or "qos_burst" in options


def floods_unknown(ports: list[Port]) -> bool:
    """23.03's `od->has_unknown`: an enabled, non-external port with "unknown"."""
    return any(p.has_unknown and p.type != "external" and p.enabled for p in ports)


def _datapath_flows(ctx: LflowContext, out: LflowTable, dp: Datapath,
                    ports: list[Port]) -> None:
    drop = ctx.drop_action
    if not smap_bool(dp.nb.other_config, "vlan-passthru"):
        out.add(dp, Stage.LS_IN_CHECK_PORT_SEC, 100, "vlan.present", drop)
    out.add(dp, Stage.LS_IN_CHECK_PORT_SEC, 100, "eth.src[40]", drop)
    out.add(dp, Stage.LS_IN_CHECK_PORT_SEC, 50, "1",
            f"{PORT_SEC_DROP} = check_in_port_sec(); next;")
    out.add(dp, Stage.LS_IN_APPLY_PORT_SEC, 50, f"{PORT_SEC_DROP} == 1", drop)
    out.add(dp, Stage.LS_IN_APPLY_PORT_SEC, 0, "1", "next;")

    out.add(dp, Stage.LS_IN_LOOKUP_FDB, 0, "1", "next;")
    out.add(dp, Stage.LS_IN_PUT_FDB, 0, "1", "next;")

    out.add(dp, Stage.LS_IN_EXTERNAL_PORT, 0, "1", "next;")

    out.add(dp, Stage.LS_OUT_CHECK_PORT_SEC, 100, "eth.mcast", f"{PORT_SEC_DROP} = 0; next;")
    out.add(dp, Stage.LS_OUT_CHECK_PORT_SEC, 0, "1",
            f"{PORT_SEC_DROP} = check_out_port_sec(); next;")
    out.add(dp, Stage.LS_OUT_APPLY_PORT_SEC, 50, f"{PORT_SEC_DROP} == 1", drop)
    out.add(dp, Stage.LS_OUT_APPLY_PORT_SEC, 0, "1", "output;")

    out.add(dp, Stage.LS_IN_L2_LKUP, 0, "1", "outport = get_fdb(eth.dst); next;")
    unknown = f'outport = "{MC_UNKNOWN}"; output;' if floods_unknown(ports) else drop
    out.add(dp, Stage.LS_IN_L2_UNKNOWN, 50, 'outport == "none"', unknown)
    out.add(dp, Stage.LS_IN_L2_UNKNOWN, 0, "1", "output;")


def _port_sec(ctx: LflowContext, out: LflowTable, port: Port, queue: int) -> None:
    if port.type == "external":
        return
    dp, key = port.dp, port.json_key
    inport = f"inport == {key}"
    if not port.enabled:
        out.add(dp, Stage.LS_IN_CHECK_PORT_SEC, 100, inport, f"{PORT_SEC_DROP} = 1; next;",
                hint=port.nb, io_port=port.name)
        out.add(dp, Stage.LS_IN_L2_UNKNOWN, 50, f"outport == {key}", ctx.drop_action,
                hint=port.nb, io_port=port.name)
        return
    set_queue = f"set_queue({queue}); " if queue else ""
    if port.type == "vtep":
        actions = (f"{set_queue}{FROM_RAMP} = 1; "
                   f"next(pipeline=ingress, table={Stage.LS_IN_HAIRPIN.table});")
        out.add(dp, Stage.LS_IN_CHECK_PORT_SEC, 70, inport, actions,
                hint=port.nb, io_port=port.name)
    elif queue:
        out.add(dp, Stage.LS_IN_CHECK_PORT_SEC, 70, inport,
                f"{set_queue}{PORT_SEC_DROP} = check_in_port_sec(); next;",
                hint=port.nb, io_port=port.name)
        if port.type == "localnet":
            out.add(dp, Stage.LS_OUT_APPLY_PORT_SEC, 100, f"outport == {key}",
                    f"{set_queue}output;", hint=port.nb, io_port=port.name)


def _learn_fdb(out: LflowTable, port: Port) -> None:
    learns = port.type == "" or (
        port.type == "localnet" and smap_bool(port.options, "localnet_learn_fdb"))
    if not (port.has_unknown and learns) or n_port_security(port):
        return
    inport = f"inport == {port.json_key}"
    out.add(port.dp, Stage.LS_IN_LOOKUP_FDB, 100, inport,
            f"{LKUP_FDB} = lookup_fdb(inport, eth.src); next;",
            hint=port.nb, io_port=port.name)
    out.add(port.dp, Stage.LS_IN_PUT_FDB, 100, f"{inport} && {LKUP_FDB} == 0",
            "put_fdb(inport, eth.src); next;", hint=port.nb, io_port=port.name)


def solicited_node(net: Ipv6Net) -> str:
    """The solicited-node multicast address of an IPv6 address (`sn_addr_s`)."""
    low = int(net.addr) & 0xFFFFFF
    return str(ipaddress.IPv6Address((0xFF02 << 112) | (0x1FF << 24) | low))


def _external_port(ctx: LflowContext, out: LflowTable, port: Port) -> None:
    if port.type != "external":
        return
    dp = port.dp
    router_ports = ctx.ports.router_ports.get(dp.key, [])
    drop = ctx.drop_action
    for localnet in ctx.ports.localnet_ports.get(dp.key, []):
        for own in port.lsp_addrs:
            head = f"inport == {localnet.json_key} && eth.src == {own.ea_s}"
            resident = f"!is_chassis_resident({port.json_key})"
            for rp in router_ports:
                for addrs in rp.lsp_addrs:
                    for match in _router_matches(head, resident, addrs):
                        out.add(dp, Stage.LS_IN_EXTERNAL_PORT, 100, match, drop,
                                hint=port.nb, io_port=localnet.name)


def _router_matches(head: str, resident: str, addrs: Addresses) -> list[str]:
    matches = [f"{head} && {resident} && arp.tpa == {v4.addr_s} && arp.op == 1"
               for v4 in addrs.ipv4]
    matches += [f"{head} && {resident} && nd_ns && ip6.dst == "
                f"{{{v6.addr_s}, {solicited_node(v6)}}} && nd.target == {v6.addr_s}"
                for v6 in addrs.ipv6]
    matches.append(f"{head} && eth.dst == {addrs.ea_s} && {resident}")
    return matches
