"""Routing in the logical router: `lr_in_ip_routing_pre`, `lr_in_ip_routing` and
`lr_in_ip_routing_ecmp` (connected routes, static routes, ECMP groups, multicast
relay), with the policy stages of `lr_policy`, as ovn-northd 23.03 writes them
(`build_ip_routing_pre_flows_for_lrouter`, `build_ip_routing_flows_for_lrouter_port`,
`build_static_route_flows_for_lrouter`, `build_mcast_lookup_flows_for_lrouter`,
`build_ingress_policy_flows_for_lrouter`).

Rules kept here:
- Longest prefix first: a route's priority is 3 * plen, plus 2 for a connected route
  (a router port's network, or a static route with `options:origin=connected`) and 1
  for another static route; a source-IP route gets no bonus. A static dst-ip route
  matches the route table register (`reg7`, 0 for the main table) too, and any route
  does that is in a named table. A route to an IPv6 link-local network is bound to
  the port it leaves by (`inport ==`).
- Every router port routes its own networks; a switch port of type router also gives
  its router a /32 route to each routable NAT or load balancer address
  (`options:add_route`, `routable` LBs) of the distributed gateway ports of the other
  routers on its switch. A port with a BFD session gets a second flow for BFD
  packets (one priority up, without the TTL decrement).
- A static route to a port of another router is written on that router, as 23.03
  does (a partial rebuild of that router parses the other router's routes for it:
  `routing_into`); a discard route drops. A route or ECMP member whose port is not
  found writes nothing; an ECMP group still selects among all its members.
- `options:ecmp_symmetric_reply` counts on gateway routers only, once per ECMP group
  and output port: it adds the conntrack flows that send replies back by the path the
  request came (`lr_in_defrag`, `lr_in_ecmp_stateful`, `lr_in_ip_routing`,
  `lr_in_policy`, `lr_in_arp_resolve`), with the reply port in `ct_mark` when
  every chassis supports it (`ct_no_masked_label`), else in `ct_label`.
- Multicast relay (`options:mcast_relay`): each IGMP/MLD group the router relays
  for its switches goes to its multicast group with the TTL decremented. A relaying
  router with an enabled flooding port (`options:mcast_flood`) also clones
  registered and unregistered multicast, and IGMP/MLD not from its own MACs, to
  `_MC_static`; one without drops unregistered IP multicast. Every router drops
  router solicitations and advertisements here.
- Per-router flows are the router's (owner `("dp", key)`), but for its static routes'
  (`table.routes_owner`, wherever their output ports put them: `build_routes` builds
  them alone; a route in no ECMP group owns its own, `table.route_owner`) and its
  policies' (`("policy", key)`); a router port's connected routes are the port's, and
  so are the routes a router-type switch port adds.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection

from ...idl.row import IdlRow
from ..build.datapaths import Datapath, smap_bool
from ..build.mcast_groups import Groups, build_igmp_groups
from ..build.ports import Port
from ..build.ports_addresses import format_ipv6
from ..diagnostics import muted
from .context import LflowContext
from .lr_arp_resolve import routable_addresses, routes_asked
from .lr_policy import ECMP_GROUP, ECMP_MEMBER, build_policies
from .lr_routes import (
    EcmpGroup,
    ParsedRoute,
    bfd_ports,
    opt_str,
    parse_routes,
    router_lrps,
)
from .stages import Stage
from .table import LflowTable, pair_owner, route_owner, routes_owner

ROUTING_PRE = Stage.LR_IN_IP_ROUTING_PRE
ROUTING = Stage.LR_IN_IP_ROUTING
ROUTING_ECMP = Stage.LR_IN_IP_ROUTING_ECMP
PRIO_MULTIPLIER = 3
PRIO_STATIC = 1
PRIO_CONNECTED = 2
ROUTE_TABLE = "reg7"
KNOWN_ECMP_NH = "reg9[5]"
BFD_MATCH = " && udp.dst == 3784"
MC_STATIC = "_MC_static"


def route_match(inport: Port | None, table_id: int, network_s: str, plen: int,
                is_src: bool, v4: bool, ofs: int) -> tuple[str, int]:
    """`build_route_match`: the match of a route and its priority."""
    if is_src:
        ofs = 0
    priority = plen * PRIO_MULTIPLIER + ofs
    match = f"inport == {inport.json_key} && " if inport is not None else ""
    if table_id or ofs == PRIO_STATIC:
        match += f"{ROUTE_TABLE} == {table_id} && "
    direction = "src" if is_src else "dst"
    match += f"ip{'4' if v4 else '6'}.{direction} == {network_s}/{plen}"
    return match, priority


def _is_lla(network_s: str) -> bool:
    try:
        value = int(ipaddress.IPv6Address(network_s))
    except ValueError:
        return False
    return value >> 64 == 0xFE80 << 48


class Routes:
    """The flows of the routing stages of one build (what every route adds)."""

    def __init__(self, ctx: LflowContext, out: LflowTable) -> None:
        self.ctx = ctx
        self.out = out
        self.bfd = bfd_ports(ctx)

    def add_route(self, dp: Datapath, port: Port | None, lrp_addr: str | None,
                  network_s: str, plen: int, *, gateway: str | None = None,
                  is_src: bool = False, table_id: int = 0,
                  hint: IdlRow | None = None, discard: bool = False,
                  ofs: int = PRIO_CONNECTED) -> None:
        """`add_route`: one route's flow (and its BFD twin)."""
        v4 = "." in network_s
        inport = port if not v4 and _is_lla(network_s) else None
        match, priority = route_match(inport, table_id, network_s, plen, is_src, v4, ofs)
        common = ""
        if discard or port is None:
            actions = self.ctx.drop_action
        else:
            assert port.networks is not None
            common = (f"{ECMP_GROUP} = 0; {'reg0' if v4 else 'xxreg0'} = "
                      f"{gateway if gateway else ('ip4.dst' if v4 else 'ip6.dst')}; "
                      f"{'reg1' if v4 else 'xxreg1'} = {lrp_addr}; "
                      f"eth.src = {port.networks.ea_s}; outport = {port.json_key}; "
                      "flags.loopback = 1; next;")
            actions = "ip.ttl--; " + common
        self.out.add(dp, ROUTING, priority, match, actions, hint=hint)
        if port is not None and port.name in self.bfd:
            self.out.add(port.dp, ROUTING, priority + 1, match + BFD_MATCH, common,
                         hint=hint)

    # -- a router's own flows --------------------------------------------------------

    def router(self, dp: Datapath, groups: Groups) -> None:
        out, drop = self.out, self.ctx.drop_action
        out.add(dp, ROUTING_PRE, 0, "1", f"{ROUTE_TABLE} = 0; next;")
        out.add(dp, ROUTING_ECMP, 0, "1", drop)
        out.add(dp, ROUTING, 0, "1", drop)
        out.add(dp, ROUTING_ECMP, 150, f"{ECMP_GROUP} == 0", "next;")
        if self.ctx.builds_rules:
            with out.owned_by(routes_owner(dp.key)):  # (`rebuild_routes` builds them alone)
                self.static_routes(dp)
        self.mcast(dp, groups)
        if self.ctx.builds_rules:
            with out.owned_by(("policy", dp.key)):  # (`rebuild_policies` builds them alone)
                build_policies(self.ctx, out, dp)

    def static_routes(self, dp: Datapath, only: Collection[str] | None = None) -> None:
        """The router's static routes (with `only`, those of these UUIDs alone: the
        caller's test says none of them is in a route table or an ECMP group)."""
        parsed = parse_routes(self.ctx, dp, only)
        for lrp in router_lrps(dp) if only is None else ():
            rtb = parsed.tables.get(lrp.options.get("route_table", ""), 0)
            if rtb:
                self.out.add(dp, ROUTING_PRE, 100, f'inport == "{lrp.name}"',
                             f"{ROUTE_TABLE} = {rtb}; next;")
        groups, unique = parsed.grouped()
        for group in groups:
            self.ecmp_group(dp, group)
        for route in unique:
            with self.out.owned_by(route_owner(dp.key, route.nb.uuid)):
                self.static_route(dp, route)

    def static_route(self, dp: Datapath, route: ParsedRoute) -> None:
        prefix = route.prefix
        ofs = PRIO_CONNECTED if route.origin_connected else PRIO_STATIC
        if route.is_discard:
            self.add_route(dp, None, None, prefix.network_s, prefix.plen, discard=True,
                           gateway=route.nb.nexthop, is_src=route.is_src,
                           table_id=route.table_id, hint=route.nb, ofs=ofs)
            return
        if route.out is None:
            return
        port, addr = route.out
        self.add_route(port.dp, port, addr, prefix.network_s, prefix.plen,
                       gateway=route.nb.nexthop, is_src=route.is_src,
                       table_id=route.table_id, hint=route.nb, ofs=ofs)

    def ecmp_group(self, dp: Datapath, group: EcmpGroup) -> None:
        """`build_ecmp_route_flow`: the group's selection and one flow per member."""
        first = group.first
        prefix = first.prefix
        v4 = prefix.v4
        ofs = PRIO_CONNECTED if first.origin_connected else PRIO_STATIC
        match, priority = route_match(None, first.table_id, prefix.network_s, prefix.plen,
                                      first.is_src, v4, ofs)
        members = ", ".join(str(i) for i in range(1, len(group.routes) + 1))
        self.out.add(dp, ROUTING, priority, match,
                     f"ip.ttl--; flags.loopback = 1; {ECMP_GROUP} = {group.id}; "
                     f"{ECMP_MEMBER} = select({members});")
        symmetric = "chassis" in dp.nb.options
        seen: set[str] = set()
        for member, route in enumerate(group.routes, 1):
            if route.out is None:
                continue
            port, addr = route.out
            assert port.networks is not None
            if symmetric and route.ecmp_symmetric_reply and port.name not in seen:
                seen.add(port.name)
                self.symmetric_reply(dp, route, port, addr, match)
            self.out.add(dp, ROUTING_ECMP, 100,
                         f"{ECMP_GROUP} == {group.id} && {ECMP_MEMBER} == {member}",
                         f"{'reg0' if v4 else 'xxreg0'} = {route.nb.nexthop}; "
                         f"{'reg1' if v4 else 'xxreg1'} = {addr}; "
                         f"eth.src = {port.networks.ea_s}; outport = {port.json_key}; "
                         "next;", hint=route.nb)

    def symmetric_reply(self, dp: Datapath, route: ParsedRoute, port: Port, addr: str,
                        match: str) -> None:
        """`add_ecmp_symmetric_reply_flows`."""
        out, hint = self.out, route.nb
        assert port.networks is not None
        v4 = route.prefix.v4
        reply_port = ("ct_mark.ecmp_reply_port" if self.ctx.features.ct_no_masked_label
                      else "ct_label.ecmp_reply_port")
        base = (f"inport == {port.json_key} && ip{'4' if v4 else '6'}."
                f"{'dst' if route.is_src else 'src'} == {route.prefix.normalized}")
        out.add(dp, Stage.LR_IN_DEFRAG, 100, base,
                f"{KNOWN_ECMP_NH} = chk_ecmp_nh_mac(); ct_next;", hint=hint)
        out.add(dp, Stage.LR_IN_DEFRAG, 100, match,
                f"{KNOWN_ECMP_NH} = chk_ecmp_nh(); ct_next;", hint=hint)
        for state in ("(ct.new && !ct.est)", "(!ct.rpl && ct.est)"):
            for proto in ("tcp", "udp", "sctp"):
                extra = f" && {KNOWN_ECMP_NH} == 0" if state.startswith("(!") else ""
                out.add(dp, Stage.LR_IN_ECMP_STATEFUL, 100,
                        f"{base} && {state} && {proto}{extra}",
                        f"ct_commit {{ ct_label.ecmp_reply_eth = eth.src;  {reply_port} = "
                        f"{port.tunnel_key};}}; commit_ecmp_nh(ipv6 = "
                        f"{'false' if v4 else 'true'}, proto = {proto}); next;", hint=hint)
        reply = f"ct.rpl && {KNOWN_ECMP_NH} == 1 && {reply_port} == {port.tunnel_key}"
        out.add(dp, ROUTING, 10300, f"{reply} && {match}",
                f"ip.ttl--; flags.loopback = 1; eth.src = {port.networks.ea_s}; "
                f"{'' if v4 else 'xx'}reg1 = {addr}; outport = {port.json_key}; next;",
                hint=hint)
        out.add(dp, Stage.LR_IN_POLICY, 65535, reply, "next;", hint=hint)
        out.add(dp, Stage.LR_IN_ARP_RESOLVE, 200, reply,
                "push(xxreg1); xxreg1 = ct_label; eth.dst = xxreg1[32..79]; "
                "pop(xxreg1); next;", hint=hint)

    def mcast(self, dp: Datapath, groups: Groups) -> None:
        """`build_mcast_lookup_flows_for_lrouter`."""
        out, drop = self.out, self.ctx.drop_action
        out.add(dp, ROUTING, 10550, "nd_rs || nd_ra", drop)
        if not smap_bool(dp.nb.options, "mcast_relay"):
            return
        lrps = [p for p in self.ctx.all_ports_of(dp) if p.is_lrp]
        static = any(p.enabled and smap_bool(p.options, "mcast_flood") for p in lrps)
        clone = f'clone {{ outport = "{MC_STATIC}"; ip.ttl--; next; }};' if static else ""
        for (key, name) in sorted(groups):
            if key != dp.key:
                continue
            family = "4" if _is_ipv4_group(name) else "6"
            out.add(dp, ROUTING, 10500, f"ip{family} && ip{family}.dst == {name} ",
                    f'{clone}outport = "{name}"; ip.ttl--; next;')
        if not static:
            out.add(dp, ROUTING, 10450, "ip4.mcast || ip6.mcast", drop)
            return
        for port in lrps:
            assert port.networks is not None
            mac = port.networks.ea_s
            out.add(dp, ROUTING, 10550, f"eth.src == {mac} && igmp", drop)
            out.add(dp, ROUTING, 10550, f"eth.src == {mac} && (mldv1 || mldv2)", drop)
        flood = f'clone {{ outport = "{MC_STATIC}"; next; }};'
        out.add(dp, ROUTING, 10460, "igmp", flood)
        out.add(dp, ROUTING, 10460, "mldv1 || mldv2", flood)
        out.add(dp, ROUTING, 10450, "ip4.mcast || ip6.mcast", clone)

    # -- a port's flows --------------------------------------------------------------

    def connected(self, port: Port) -> None:
        """A router port's routes to its own networks."""
        nets = port.networks
        assert nets is not None
        for n4 in nets.ipv4:
            self.add_route(port.dp, port, n4.addr_s, str(n4.network.network_address),
                           n4.plen, hint=port.nb)
        for n6 in nets.ipv6:
            self.add_route(port.dp, port, n6.addr_s, format_ipv6(n6.network.network_address),
                           n6.plen, hint=port.nb)

    def peer_routables(self, lsp: Port) -> None:
        """A router-type switch port: routes on its router to the routable addresses
        of the other routers' distributed gateway ports on the switch."""
        ports = self.ctx.ports
        peer = ports.ports.get(lsp.options.get("router-port", ""))
        if peer is None or not peer.is_lrp or peer.networks is None or \
                not peer.networks.ipv4:
            return
        if not routes_asked(self.ctx):
            return  # (no router port has routables)
        src = peer.networks.ipv4[0].addr_s
        for other in ports.router_ports.get(lsp.dp.key, []):
            rp = ports.ports.get(other.options.get("router-port", ""))
            if rp is None or not rp.is_lrp or rp is peer or not self.ctx.asks_about(rp.name):
                continue
            with self.out.owned_by(pair_owner(lsp.name, rp.name)):
                for parsed in routable_addresses(self.ctx, rp):
                    for n4 in parsed.ipv4:
                        self.add_route(peer.dp, peer, src, str(n4.network.network_address),
                                       n4.plen, hint=peer.nb)


def _is_ipv4_group(name: str) -> bool:
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        return False
    return isinstance(ip, ipaddress.IPv4Address) or ip.ipv4_mapped is not None


def routing_into(ctx: LflowContext) -> list[Datapath]:
    """In a partial rebuild, the routers outside it with a static route whose output
    port is a port of a router inside it."""
    scope = ctx.scope
    routers = ctx.datapaths.routers
    if scope is None or not any(key in routers for key in scope):
        return []  # (a route's output port is a router's)
    table = ctx.nb.get("Logical_Router_Static_Route")
    index = table.indexes.get("output_port") if table is not None else None
    if index is not None and index.columns == ("output_port",) and not any(
            index.find(p.name) for key in scope if key in routers
            for p in ctx.ports.of_datapath(key)):
        return []  # (no route names a port of theirs: no router walked)
    ports = ctx.ports.ports
    found: list[Datapath] = []
    for dp in ctx.datapaths.routers.values():
        if dp.key in scope:
            continue
        for route in ctx.current(dp).static_routes or ():
            name = opt_str(route.output_port)
            port = ports.get(name) if name is not None else None
            if port is not None and port.dp.key in scope:
                found.append(dp)
                break
    return found


def build_routes(ctx: LflowContext, out: LflowTable, dp: Datapath,
                 only: Collection[str] | None = None) -> None:
    """What router `dp`'s static routes ask for (the caller owns them as
    `routes_owner`; a route alone in its key owns its own, `route_owner`), on it and
    on the routers of their output ports; with `only`, what those routes ask for
    alone."""
    Routes(ctx, out).static_routes(dp, only)


def build(ctx: LflowContext, out: LflowTable) -> None:
    """Every flow of this area's stages."""
    routes = Routes(ctx, out)
    routers = ctx.routers()
    groups: Groups = {}
    if any(smap_bool(dp.nb.options, "mcast_relay") for dp in routers):
        build_igmp_groups(ctx.datapaths, ctx.ports, ctx.sb, groups)
    for dp in routers:
        with out.owned_by(("dp", dp.key)):
            routes.router(dp, groups)
    # A partial rebuild also takes the routes other routers have through a port of
    # a router it builds (their flows land there); what parsing them reports was
    # reported when those routers were built.
    for dp in routing_into(ctx) if ctx.builds_rules else ():
        with out.owned_by(routes_owner(dp.key)), muted():
            routes.static_routes(dp)
    for port in ctx.scoped_ports():
        if port.is_lrp and port.networks is not None:
            with out.owned_by(("port", port.name)):
                routes.connected(port)
        elif port.is_lsp and port.type == "router":
            with out.owned_by(("port", port.name)):
                routes.peer_routables(port)
