"""Native DHCP and DNS on logical switches: the stages ls_in_dhcp_options,
ls_in_dhcp_response, ls_in_dns_lookup and ls_in_dns_response.

Rules kept here (23.03's `build_lswitch_dhcp_options_and_response`,
`build_dhcpv4_options_flows`, `build_dhcpv6_options_flows`,
`build_lswitch_dns_lookup_and_response` and the defaults of
`build_lswitch_dhcp_and_dns_defaults`):
- Every switch passes all four stages by default (priority 0).
- A switch port answers DHCP if it is enabled, not of type router and has a
  `dhcpv4_options` or `dhcpv6_options` row. Each of its address entries (its own and
  the dynamic ones) offers the first of its addresses of a family that the row's
  cidr admits, no more (see `ls_dhcp_actions`); the flows name the port as inport.
- An external port answers only on a switch with localnet ports and only with an HA
  chassis group: its flows take each localnet port as inport and hold only where the
  port is resident (`is_chassis_resident`), so one chassis answers.
- The flows that ask ovn-controller for work (put_dhcp_opts, put_dhcpv6_opts,
  dns_lookup) carry the controller meter the switch's `copp` row names for the
  protocol, if an NB Meter of that name exists; the response flows carry none.
- DNS flows exist on a switch with a `dns_records` row whose records are not empty.
- Flows of a port are owned by the port, those of a switch by the switch; the DHCP
  flows' stage hint is the DHCP_Options row.
"""

from __future__ import annotations

from ...idl.row import IdlRow
from ..build.datapaths import Datapath
from ..build.ports import Port
from ..build.ports_addresses import Addresses
from .context import CoppProto, LflowContext
from .ls_dhcp_actions import DHCP_RESULT, dhcpv4_actions, dhcpv6_actions
from .stages import Stage
from .table import LflowTable

# What `REGBIT_DNS_LOOKUP_RESULT` names: the result of dns_lookup.
DNS_RESULT = "reg0[4]"

DHCPV4_MATCH = "ip4.src == 0.0.0.0 && ip4.dst == 255.255.255.255 && udp.src == 68 && " \
               "udp.dst == 67"
DHCPV6_MATCH = "ip6.dst == ff02::1:2 && udp.src == 546 && udp.dst == 547"


def build(ctx: LflowContext, out: LflowTable) -> None:
    """Every flow of the DHCP and DNS stages."""
    for dp in ctx.switches():
        with out.owned_by(("dp", dp.key)):
            _build_dns(ctx, dp, out)
            for stage in (Stage.LS_IN_DHCP_OPTIONS, Stage.LS_IN_DHCP_RESPONSE,
                          Stage.LS_IN_DNS_LOOKUP, Stage.LS_IN_DNS_RESPONSE):
                out.add(dp, stage, 0, "1", "next;")
        for port in ctx.ports_of(dp):
            if port.is_lsp:
                with out.owned_by(("port", port.name)):
                    _build_dhcp(ctx, port, out)


def has_dns_records(nb: IdlRow) -> bool:
    """`ls_has_dns_records`: a DNS row with records."""
    return any(isinstance(d, IdlRow) and d.records for d in nb.dns_records)


def _build_dns(ctx: LflowContext, dp: Datapath, out: LflowTable) -> None:
    if not has_dns_records(dp.nb):
        return
    out.add(dp, Stage.LS_IN_DNS_LOOKUP, 100, "udp.dst == 53",
            f"{DNS_RESULT} = dns_lookup(); next;",
            meter=ctx.copp_meter(dp, CoppProto.DNS))
    match = f"udp.dst == 53 && {DNS_RESULT}"
    for ip in ("ip4", "ip6"):
        out.add(dp, Stage.LS_IN_DNS_RESPONSE, 100, match,
                f"eth.dst <-> eth.src; {ip}.src <-> {ip}.dst; udp.dst = udp.src; "
                "udp.src = 53; outport = inport; flags.loopback = 1; output;")


def _options_row(port: Port, column: str) -> IdlRow | None:
    row = getattr(port.nb, column)
    return row if isinstance(row, IdlRow) else None


def _build_dhcp(ctx: LflowContext, port: Port,
                out: LflowTable) -> None:
    enabled = port.nb.enabled
    if enabled is False or port.type == "router":
        return
    v4 = _options_row(port, "dhcpv4_options")
    v6 = _options_row(port, "dhcpv6_options")
    if v4 is None and v6 is None:
        return
    inports = [port]
    resident = ""
    if port.type == "external":
        inports = ctx.ports.localnet_ports.get(port.dp.key, [])
        if not inports or port.nb.ha_chassis_group is None:
            return
        resident = f" && is_chassis_resident({port.json_key})"
    for addrs in port.lsp_addrs:
        for inport in inports:
            if v4 is not None:
                _dhcpv4_flows(port, v4, addrs, inport, resident, ctx, out)
            if v6 is not None:
                _dhcpv6_flows(port, v6, addrs, inport, resident, ctx, out)


def _dhcpv4_flows(port: Port, row: IdlRow, addrs: Addresses,
                  inport: Port, resident: str, ctx: LflowContext,
                  out: LflowTable) -> None:
    hostname = port.options.get("hostname")
    for net in addrs.ipv4:
        actions = dhcpv4_actions(row.cidr, row.options, net.addr, hostname)
        if actions is None:
            continue
        dp = port.dp
        head = f"inport == {inport.json_key} && eth.src == {addrs.ea_s} && "
        meter = ctx.copp_meter(dp, CoppProto.DHCPV4_OPTS)
        for match in (DHCPV4_MATCH,
                      f"{actions.renew_match} && udp.src == 68 && udp.dst == 67"):
            out.add(dp, Stage.LS_IN_DHCP_OPTIONS, 100, head + match + resident,
                    actions.options, hint=row, io_port=inport.name, meter=meter)
        out.add(dp, Stage.LS_IN_DHCP_RESPONSE, 100,
                f"{head}ip4 && udp.src == 68 && udp.dst == 67 && {DHCP_RESULT}{resident}",
                actions.response, hint=row, io_port=inport.name)
        return


def _dhcpv6_flows(port: Port, row: IdlRow, addrs: Addresses,
                  inport: Port, resident: str, ctx: LflowContext,
                  out: LflowTable) -> None:
    for net in addrs.ipv6:
        actions = dhcpv6_actions(row.cidr, row.options, net.addr)
        if actions is None:
            continue
        dp = port.dp
        match = f"inport == {inport.json_key} && eth.src == {addrs.ea_s} && " \
                f"{DHCPV6_MATCH}{resident}"
        out.add(dp, Stage.LS_IN_DHCP_OPTIONS, 100, match, actions.options, hint=row,
                io_port=inport.name, meter=ctx.copp_meter(dp, CoppProto.DHCPV6_OPTS))
        out.add(dp, Stage.LS_IN_DHCP_RESPONSE, 100, f"{match} && {DHCP_RESULT}",
                actions.response, hint=row, io_port=inport.name)
        return
