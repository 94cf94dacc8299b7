"""Static routes of a logical router as 23.03's `parsed_routes_add` reads them, their
route tables and ECMP groups, and the address lookups routing shares with router
policies (`find_lrp_member_ip`, `find_static_route_outport`).

Rules kept here:
- Addresses are parsed as 23.03 parses them: a prefix or next hop with
  `ip46_parse_cidr` (IPv4 first, "IP", "IP/len" or "IP/mask" with a CIDR mask, then
  IPv6), a router port's member address with `inet_pton` (IPv4 if the text has a
  dot). A route whose next hop is not one host address, whose families differ, or
  that no router port reaches is left out; "discard" needs no port.
- A route left out for its next hop, its prefix or their families, or for want of
  an output port or a path (`find_static_route_outport`), is reported with 23.03's
  warning (`diagnostics`); a discard route's port lookup warns of nothing.
- A route with a BFD session to its next hop is left out when that session is down
  after this run's status exchange (23.03 turns "admin_down" into "down" first, so
  only a session ovn-controller reported up or initializing keeps its route).
- Route table ids are handed out from 1 in the order 23.03 meets the names: the
  router ports' `options:route_table` (the NB `ports` column's order, UUIDs), then
  the valid routes' `route_table` (the `static_routes` column's order).
- Routes sharing (prefix as written, plen, src/dst, route table) form an ECMP group;
  a group is numbered when its second route appears, members in route order.
- A chassisredirect port and a switch port have no networks here (23.03 gives them
  none): a route or policy naming one finds no address on it.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Collection, Hashable, Mapping
from dataclasses import dataclass, field

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..build.datapaths import Datapath, smap_bool
from ..build.ports import Port, PortsData
from ..build.ports_addresses import (
    Addresses,
    MemberIndex,
    find_lrp_member_ip,
    format_ipv6,
    ip46_parse_cidr,
)
from ..diagnostics import (
    ROUTE_BAD_NEXTHOP,
    ROUTE_BAD_OUT_PORT,
    ROUTE_BAD_PREFIX,
    ROUTE_FAMILY,
    ROUTE_NEXTHOP_MASK,
    ROUTE_NO_PATH,
    report,
)
from .context import LflowContext, ref_rows

ROUTE_ORIGIN_CONNECTED = "connected"
# Texts (route prefixes and next hops) whose parse is kept (`parse_cidr`).
PARSED_AT_MOST = 1 << 16


@dataclass(frozen=True, slots=True)
class Prefix:
    """An address (IPv4 as its 32 bits) with a prefix length, as parsed."""

    v4: bool
    addr: int
    plen: int

    @property
    def network_s(self) -> str:
        """`build_route_prefix_s`: the address with the host bits cleared."""
        return _network_s(self.v4, self.addr, self.plen)

    @property
    def normalized(self) -> str:
        """`normalize_v46_prefix`: the network, with "/plen" unless a host."""
        full = 32 if self.v4 else 128
        return self.network_s if self.plen == full else f"{self.network_s}/{self.plen}"


@functools.lru_cache(maxsize=PARSED_AT_MOST)
def _network_s(v4: bool, addr: int, plen: int) -> str:
    bits = 32 if v4 else 128
    mask = ((1 << bits) - 1) ^ ((1 << (bits - plen)) - 1)
    if v4:
        return str(ipaddress.IPv4Address(addr & mask))
    return format_ipv6(ipaddress.IPv6Address(addr & mask))


@functools.lru_cache(maxsize=PARSED_AT_MOST)
def parse_cidr(text: str) -> Prefix | None:
    """`ip46_parse_cidr`: IPv4 first, then IPv6 (each text parsed once while it is
    among the last `PARSED_AT_MOST`: routes are parsed again in every build of their
    router)."""
    found = ip46_parse_cidr(text)
    return None if found is None else Prefix(*found)


def port_networks(port: Port | None) -> Addresses | None:
    """A router port's networks; none for any other port (see the module rules)."""
    return port.networks if port is not None and port.is_lrp else None


def router_lrps(dp: Datapath) -> list[IdlRow]:
    """The router's NB ports in the `ports` column's order (UUIDs)."""
    return ref_rows(dp.nb.ports)


def opt_str(value: object) -> str | None:
    """An optional string column's value (a list of zero or one strings)."""
    if isinstance(value, list):
        return str(value[0]) if value else None
    return str(value) if value is not None else None


class PortLookup:
    """The address lookups of one build, with a router's ports in NB order kept."""

    def __init__(self, ports: PortsData) -> None:
        self.ports = ports
        self._order: dict[str, list[Port | None]] = {}
        self._index: dict[str, MemberIndex[Port | None]] = {}  # (`first_reaching`)

    def member_ip(self, port: Port | None, ip_s: str) -> str | None:
        """`find_lrp_member_ip` on a router port (see `port_networks`)."""
        return find_lrp_member_ip(port_networks(port), ip_s)

    def nb_order(self, dp: Datapath) -> list[Port | None]:
        """The port of each of the router's NB ports, in the `ports` column's order
        (None where a port by that name was not built)."""
        order = self._order.get(dp.key)
        if order is None:
            order = self._order[dp.key] = [self.ports.ports.get(r.name)
                                           for r in router_lrps(dp)]
        return order

    def first_reaching(self, dp: Datapath, ip_s: str) -> tuple[Port, str] | None:
        """The first router port (NB order) on a network that holds `ip_s`."""
        index = self._index.get(dp.key)
        if index is None:
            index = self._index[dp.key] = MemberIndex(
                [(port, port_networks(port)) for port in self.nb_order(dp)])
        found = index.first(ip_s)
        if found is None:
            return None
        port, addr = found
        assert port is not None
        return port, addr

    def static_route_outport(self, dp: Datapath, route: IdlRow, v4: bool, *,
                             warn: bool = True) -> tuple[Port, str] | None:
        """`find_static_route_outport`: the port a route leaves by and its address;
        with `warn`, its warnings when there is none."""
        nexthop: str = route.nexthop
        output = opt_str(route.output_port)
        found: tuple[Port, str] | None = None
        if output is None:
            found = self.first_reaching(dp, nexthop) if nexthop else None
        else:
            port = self.ports.ports.get(output)
            if port is None:
                if warn:
                    report(ROUTE_BAD_OUT_PORT, output, route.ip_prefix)
                return None
            addr = self.member_ip(port, nexthop) if nexthop else None
            nets = port_networks(port)
            if addr is None and nets is not None:
                if v4 and nets.ipv4:
                    addr = nets.ipv4[0].addr_s
                elif not v4 and nets.ipv6:
                    addr = nets.ipv6[0].addr_s
            found = (port, addr) if addr is not None else None
        if found is None and warn:
            report(ROUTE_NO_PATH, route.ip_prefix, nexthop)
        return found


def port_lookup(ctx: LflowContext) -> PortLookup:
    """The build's `PortLookup` (kept in the context)."""
    found = ctx.cache.get("lr_routes.lookup")
    if not isinstance(found, PortLookup):
        found = ctx.cache["lr_routes.lookup"] = PortLookup(ctx.ports)
    return found


def bfd_status(nb_bfd: IdlRow, sb: Mapping[str, ReplicaTable]) -> str:
    """The NB status of a BFD session once this run's exchange with SB is done
    (`build_bfd_table`)."""
    status = opt_str(nb_bfd.status) or "admin_down"
    table = sb.get("BFD")
    session = None
    for row in sorted(table.rows.values(), key=lambda r: r.uuid) if table else ():
        if row.logical_port == nb_bfd.logical_port and row.dst_ip == nb_bfd.dst_ip:
            session = row
            break
    if session is not None and session.status != status and \
            "admin_down" not in (status, session.status):
        status = str(session.status)
    return status


def bfd_ports(ctx: LflowContext) -> frozenset[str]:
    """The ports 23.03 marks `has_bfd`: named by an NB session, unless a stale SB
    session (one no NB session matches) names them too."""
    nb = ctx.nb_rows("BFD")
    named = {str(r.logical_port) for r in nb}
    keys = {(r.logical_port, r.dst_ip) for r in nb}
    table = ctx.sb.get("BFD")
    stale = {str(r.logical_port) for r in (table.rows.values() if table else ())
             if (r.logical_port, r.dst_ip) not in keys}
    return frozenset(named - stale)


@dataclass(frozen=True, slots=True)
class ParsedRoute:
    nb: IdlRow
    prefix: Prefix
    is_src: bool
    table_id: int
    ecmp_symmetric_reply: bool
    is_discard: bool
    out: tuple[Port, str] | None  # the port it leaves by and the address there

    @property
    def key(self) -> tuple[bool, int, int, bool, int]:
        p = self.prefix
        return p.v4, p.addr, p.plen, self.is_src, self.table_id

    @property
    def origin_connected(self) -> bool:
        return bool(self.nb.options.get("origin", "") == ROUTE_ORIGIN_CONNECTED)


@dataclass(slots=True)
class EcmpGroup:
    id: int
    routes: list[ParsedRoute] = field(default_factory=list)

    @property
    def first(self) -> ParsedRoute:
        return self.routes[0]


@dataclass(slots=True)
class RouterRoutes:
    """A router's route tables (name -> id, from 1) and its valid static routes."""

    tables: dict[str, int] = field(default_factory=dict)
    routes: list[ParsedRoute] = field(default_factory=list)

    def table_id(self, name: str | None) -> int:
        if not name:
            return 0
        rtb = self.tables.get(name)
        if rtb is None:
            rtb = self.tables[name] = len(self.tables) + 1
        return rtb

    def grouped(self) -> tuple[list[EcmpGroup], list[ParsedRoute]]:
        """The ECMP groups (by id) and the routes alone in their key (route order)."""
        groups: dict[tuple[bool, int, int, bool, int], EcmpGroup] = {}
        unique: dict[tuple[bool, int, int, bool, int], ParsedRoute] = {}
        for route in self.routes:
            group = groups.get(route.key)
            if group is not None:
                group.routes.append(route)
                continue
            alone = unique.pop(route.key, None)
            if alone is None:
                unique[route.key] = route
            else:
                groups[route.key] = EcmpGroup(len(groups) + 1, [alone, route])
        return list(groups.values()), list(unique.values())


def _bfd_down(route: IdlRow, sb: Mapping[str, ReplicaTable]) -> bool:
    bfd = route.bfd
    if not isinstance(bfd, IdlRow) or bfd.dst_ip != route.nexthop:
        return False
    status = bfd_status(bfd, sb)
    return status in ("admin_down", "down")


def parse_routes(ctx: LflowContext, dp: Datapath, only: Collection[str] | None = None
                 ) -> RouterRoutes:
    """The router's route tables and valid static routes (see the module rules), with
    23.03's warnings about the routes it leaves out; with `only`, the routes of those
    UUIDs alone, each as it would be parsed among the others as long as none of them
    is in a route table (`route_key`: its table id is 0, and the others' do not move)."""
    out = RouterRoutes()
    lookup = port_lookup(ctx)
    if only is None:
        for lrp in router_lrps(dp):
            out.table_id(lrp.options.get("route_table"))
    for row in ref_rows(ctx.current(dp).static_routes):
        if only is not None and row.uuid not in only:
            continue
        nexthop: str = row.nexthop
        discard = nexthop == "discard"
        hop = parse_cidr(nexthop) if nexthop and not discard else None
        if nexthop and not discard:
            if hop is None:
                report(ROUTE_BAD_NEXTHOP, nexthop, row.uuid)
                continue
            if hop.plen != (32 if hop.v4 else 128):
                report(ROUTE_NEXTHOP_MASK, nexthop, row.uuid)
                continue
        prefix = parse_cidr(row.ip_prefix)
        if prefix is None:
            report(ROUTE_BAD_PREFIX, row.ip_prefix, row.uuid)
            continue
        if hop is not None and hop.v4 != prefix.v4:
            report(ROUTE_FAMILY, row.ip_prefix, nexthop, row.uuid)
            continue
        # A discard route needs no port; its port is looked up all the same (an ECMP
        # group's member flows use it), without warnings.
        found = lookup.static_route_outport(dp, row, prefix.v4, warn=not discard)
        if not discard and found is None:
            continue
        if _bfd_down(row, ctx.sb):
            continue
        out.routes.append(ParsedRoute(
            nb=row, prefix=prefix, is_src=opt_str(row.policy) == "src-ip",
            table_id=out.table_id(row.route_table),
            ecmp_symmetric_reply=smap_bool(row.options, "ecmp_symmetric_reply"),
            is_discard=discard, out=found))
    return out


def route_key(row: IdlRow) -> Hashable:
    """What a route shares with the routes of its ECMP group, as written (the prefix
    parsed, source or destination, the route table's name); None where its prefix does
    not parse."""
    prefix = parse_cidr(row.ip_prefix)
    if prefix is None:
        return None
    return prefix.v4, prefix.addr, prefix.plen, opt_str(row.policy) == "src-ip", \
        opt_str(row.route_table) or ""
