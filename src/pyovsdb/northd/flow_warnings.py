"""What ovn-northd 23.03 logs about bad NB data while it builds logical flows: static
routes whose prefix or next hop does not parse or leads nowhere, and switch port
addresses that are neither a MAC, "unknown", "router" nor dynamic.

Rules kept here:
- `report_flow_warnings` walks the same rows, in the same order and with the same
  parsers, as the flow builders (`lflows.lr_routes.parse_routes`,
  `build_lswitch_ip_unicast_lookup`'s address loop), and reports through
  `diagnostics.report`; it builds nothing. The daemon calls it when the `lflow` node
  recomputed, which is when 23.03 runs those checks.
- The checks are 23.03's `parsed_routes_add` and `find_static_route_outport`: a next
  hop ("discard" and empty excepted) must be one host address, the prefix must parse
  and be of the next hop's family, an `output_port` must name a port, and some router
  port (or the output port) must reach the next hop.
"""

from __future__ import annotations

from ..idl.row import IdlRow
from .diagnostics import (
    ADDRESSES_COLUMN,
    ROUTE_BAD_NEXTHOP,
    ROUTE_BAD_OUT_PORT,
    ROUTE_BAD_PREFIX,
    ROUTE_FAMILY,
    ROUTE_NEXTHOP_MASK,
    ROUTE_NO_PATH,
    report,
)
from .lflows.context import ref_rows
from .lflows.lr_routes import PortLookup, parse_cidr
from .nodes.datapaths import Datapath, DatapathsData
from .nodes.ports import PortsData
from .nodes.ports_addresses import is_dynamic, parse_lsp_address


def report_flow_warnings(datapaths: DatapathsData, ports: PortsData) -> None:
    lookup = PortLookup(ports)
    for dp in datapaths.routers.values():
        for route in ref_rows(dp.nb.static_routes):
            _check_route(dp, route, ports, lookup)
    for port in ports.ports.values():
        if not port.is_lsp or port.type == "external":
            continue
        for address in port.nb.addresses:
            # (no MAC leads it: parse_lsp_address is the cached ETH_ADDR_SCAN_FMT scan)
            if parse_lsp_address(address)[0] is None and \
                    address not in ("unknown", "router") and not is_dynamic(address):
                report(ADDRESSES_COLUMN, port.name, address)


def _check_route(dp: Datapath, route: IdlRow, ports: PortsData, lookup: PortLookup) -> None:
    nexthop: str = route.nexthop
    prefix_s: str = route.ip_prefix
    discard = nexthop == "discard"
    hop = None
    if nexthop and not discard:
        hop = parse_cidr(nexthop)
        if hop is None:
            report(ROUTE_BAD_NEXTHOP, nexthop, route.uuid)
            return
        if hop.plen != (32 if hop.v4 else 128):
            report(ROUTE_NEXTHOP_MASK, nexthop, route.uuid)
            return
    prefix = parse_cidr(prefix_s)
    if prefix is None:
        report(ROUTE_BAD_PREFIX, prefix_s, route.uuid)
        return
    if hop is not None and hop.v4 != prefix.v4:
        report(ROUTE_FAMILY, prefix_s, nexthop, route.uuid)
        return
    if discard:
        return
    output = route.output_port
    name = (output[0] if output else None) if isinstance(output, list) else output
    if name is not None and str(name) not in ports.ports:
        report(ROUTE_BAD_OUT_PORT, name, prefix_s)
        return
    if lookup.static_route_outport(dp, route, prefix.v4) is None:
        report(ROUTE_NO_PATH, prefix_s, nexthop)
