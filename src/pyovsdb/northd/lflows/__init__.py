"""Logical flows: the switch and router pipelines ovn-northd 23.03 writes to the SB
`Logical_Flow` table, built as data by pure builders, one module per pipeline area.

Rules kept here:
- `build_lflows` calls every area's `build(ctx, out)` in a fixed order and returns the
  `LflowTable`; `rebuild` does the same for a few datapaths and splices the result
  in. Nothing here writes to a database.
- An area module owns the stages its docstring names and builds every flow of them
  (for every datapath, port, load balancer or group that asks for one), each request
  on behalf of its owner (`LflowTable.owned_by`), so flows can later be rebuilt per
  owner.
- A builder reads only its `LflowContext`; it never reads another area's flows.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping

from ..build.datapaths import Datapath
from ..build.lb import LoadBalancer
from ..build.ports import Port
from . import (
    lr_admission,
    lr_arp,
    lr_arp_resolve,
    lr_ip_input,
    lr_lb,
    lr_nat,
    lr_routing,
    ls_acl,
    ls_arp_nd,
    ls_dhcp_dns,
    ls_l2,
    ls_lb,
    ls_port_sec,
)
from .context import LflowContext
from .lr_policy import build_policies
from .rules_moved import policies_reaching, routes_reaching
from .table import (
    GLOBAL,
    FlowKey,
    LflowTable,
    Owner,
    nat_ip_owner,
    nat_owner,
    nat_port_owner,
    pair_owner,
    policy_owner,
    route_owner,
    routes_owner,
    rport_ip_owner,
)

Builder = Callable[[LflowContext, LflowTable], None]

# Every area, in the order 23.03 builds them for a datapath.
AREAS: tuple[tuple[str, Builder], ...] = (
    ("ls_acl.py", ls_acl.build),
    ("ls_lb.py", ls_lb.build),
    ("ls_port_sec.py", ls_port_sec.build),
    ("ls_arp_nd.py", ls_arp_nd.build),
    ("ls_dhcp_dns.py", ls_dhcp_dns.build),
    ("ls_l2.py", ls_l2.build),
    ("lr_admission.py", lr_admission.build),
    ("lr_ip_input.py", lr_ip_input.build),
    ("lr_routing.py", lr_routing.build),
    ("lr_arp.py", lr_arp.build),
    ("lr_nat.py", lr_nat.build),
    ("lr_lb.py", lr_lb.build),
)

# The area that builds routers' policies (`rebuild_policies` builds them alone).
POLICY_SOURCE = "lr_routing.py"

# The areas with flows of load balancers' own (`rebuild_lbs`), in the same order.
LbBuilder = Callable[[LflowContext, LflowTable, Iterable[LoadBalancer],
                      Mapping[str, frozenset[str]]], None]
LB_AREAS: tuple[tuple[str, LbBuilder], ...] = (
    ("ls_lb.py", ls_lb.build_lbs), ("lr_lb.py", lr_lb.build_lbs))


# The areas where a switch's router-type port asks for what its router's NAT rules
# decide (their external IPs, distributed NAT MACs), as owner `("rport", name)`, each
# building them for one port: `ls_l2` (`ls_rport_arp` and the unicast lookup). A NAT
# rule changed rebuilds those requests of its router's switch ports alone
# (`rebuild_router_lookups`).
PortBuilder = Callable[[LflowContext, Port, LflowTable], None]
ROUTER_NAT_AREAS: tuple[tuple[str, PortBuilder], ...] = (("ls_l2.py", ls_l2.build_rport),)


# The areas with flows a router's NAT rules derive (owner `table.nat_owner`; what one
# rule derives alone, its external IP's `table.nat_ip_owner`), each building them for
# one router (`rebuild_router_nat`; with `LflowContext.nat_ips`, those of some external
# IPs' rules alone beside the router's), in the same order.
RouterBuilder = Callable[[LflowContext, LflowTable, Datapath], None]
NAT_AREAS: tuple[tuple[str, RouterBuilder], ...] = (
    ("lr_ip_input.py", lr_ip_input.build_nat), ("lr_arp.py", lr_arp.build_nat),
    ("lr_nat.py", lr_nat.build_nat))


# The areas with flows of routers' static routes (owner `table.routes_owner`; a route's
# own, `table.route_owner`), each building them for one router or some of its routes
# (`rebuild_routes`), in the same order.
RouteBuilder = Callable[[LflowContext, LflowTable, Datapath, Collection[str] | None], None]
ROUTE_AREAS: tuple[tuple[str, RouteBuilder], ...] = (
    ("lr_routing.py", lr_routing.build_routes), ("lr_arp.py", lr_arp.build_routes))


def build_lflows(ctx: LflowContext, only: frozenset[str] | None = None,
                 owners: frozenset[Owner] | None = None) -> LflowTable:
    """Every flow (with `only`: the flows on those datapaths, which `ctx` must be
    narrowed to; with `owners` too: those they ask for alone)."""
    out = LflowTable(only=only, owners=owners)
    for source, build in AREAS:
        out.source = source
        build(ctx, out)
    return out


def rebuild(table: LflowTable, ctx: LflowContext, datapaths: frozenset[str]) -> set[FlowKey]:
    """The flows of `datapaths` built again and put in `table` in place of theirs; the
    flows that changed. Equal to a full build as long as every area builds a
    datapath's flows from the datapaths `ctx.switches()`/`ctx.routers()` list and
    reaches the others only through ports and peers (a test checks it, datapath by
    datapath)."""
    return table.replace(datapaths, build_lflows(ctx.narrowed(datapaths), only=datapaths))


def rebuild_owned(table: LflowTable, ctx: LflowContext, datapaths: frozenset[str],
                  ports: frozenset[str]) -> set[FlowKey]:
    """The flows the ports `ports` ask for on `datapaths` (datapaths other than their
    own: a VIF's address on the routers of its switch) built again and put in place
    of what those ports asked for there; the flows that changed. Equal to a full build
    as long as a port's requests on another datapath depend on that port and on
    datapath facts alone (the property tests hold it to one)."""
    new = build_lflows(ctx.walking(ports), only=datapaths)
    owners = {("port", n) for n in ports}  # (and what they ask for about each router)
    return table.replace_owned(datapaths, frozenset(
        owners | _extending(table, new, datapaths, owners)), new)


def rebuild_pairs(table: LflowTable, ctx: LflowContext, routers: frozenset[str],
                  ports: frozenset[str], about: frozenset[str]) -> set[FlowKey]:
    """What the router-type switch ports `ports` ask for on their routers `routers`
    about the router ports `about` of their switches (`table.pair_owner`) built again,
    and what they asked for about router ports no longer on their switches taken
    away; the flows that changed. Equal to `rebuild_owned` of those ports as long as
    nothing else they ask for changed: their switches gained the router ports
    `about` or lost some, and nothing else of theirs moved (the caller's test)."""
    new = build_lflows(ctx.walking(ports).about_ports(about), only=routers)
    owners: set[Owner] = {pair_owner(n, q) for n in ports for q in about}
    theirs = {("port", n) for n in ports}
    for key in routers:
        for owner in table.owners_under(key, theirs):
            port = ctx.ports.ports.get(owner[1])  # type: ignore[index]
            lrp = ctx.ports.ports.get(owner[2])  # type: ignore[index]
            peer = ctx.ports.peer_of(lrp) if lrp is not None else None
            if port is None or peer is None or peer.dp.key != port.dp.key:
                owners.add(owner)  # (about a router port gone from its switch)
    return table.replace_owned(routers, frozenset(owners), new)


def rebuild_vifs(table: LflowTable, ctx: LflowContext, datapaths: frozenset[str],
                 ports: frozenset[str]) -> set[FlowKey]:
    """The flows the VIFs `ports` ask for on their own switches `datapaths` built again
    and put in place of theirs there, the switches' own flows kept; the flows that
    changed. Equal to `rebuild_focused` as long as the switches' own flows read
    nothing of those VIFs (the caller's test, `nodes/lflow_ports.read_by_switch`)."""
    owners = frozenset(("port", n) for n in ports)
    new = build_lflows(ctx.focused(datapaths, ports), only=datapaths, owners=owners)
    return table.replace_owned(datapaths, owners, new)


def rebuild_focused(table: LflowTable, ctx: LflowContext, datapaths: frozenset[str],
                    ports: frozenset[str]) -> set[FlowKey]:
    """The flows the ports `ports` ask for on their own datapaths `datapaths`, and the
    datapaths' own flows (those no port, ACL or load balancer asks for), built again
    and put in place of theirs there; the flows that changed. Equal to a full build
    as long as a port's own requests depend on that port, its peer's router and
    datapath facts alone (the property tests hold it to one): a router port joining a
    switch moves those of its switch port and the switch's own."""
    new = build_lflows(ctx.focused(datapaths, ports), only=datapaths)
    rports = {("rport", n) for n in ports}  # (and what they ask for per NAT IP)
    owners: set[Owner] = {GLOBAL, *(("dp", key) for key in datapaths),
                          *(("port", n) for n in ports), *rports,
                          *_extending(table, new, datapaths, rports)}
    return table.replace_owned(datapaths, frozenset(owners), new)


def _extending(table: LflowTable, new: LflowTable, datapaths: Iterable[str],
               owners: Collection[Owner]) -> set[Owner]:
    """The owners on `datapaths` that extend `owners` (`LflowTable.owners_under`), in
    `table` as it is and in its rebuild `new`: those a rebuild of `owners` replaces
    too."""
    out: set[Owner] = set()
    for key in datapaths if owners else ():
        out |= table.owners_under(key, owners) | new.owners_under(key, owners)
    return out


def rebuild_router_lookups(table: LflowTable, ctx: LflowContext, datapaths: frozenset[str],
                           ports: frozenset[str],
                           ips: Mapping[str, frozenset[str]] | None = None) -> set[FlowKey]:
    """What the router-type switch ports `ports` ask for on their switches `datapaths`
    that their routers' NAT rules decide (`ROUTER_NAT_AREAS`, owner `("rport", name)`)
    built again and put in place of theirs; the flows that changed. With `ips` (by
    router), of a port whose router is named there, its own requests and those of the
    NAT IPs named (`rport_ip_owner`) alone. Equal to a full build as long as those
    requests depend on the port, its router and datapath facts alone: what changes a
    router's NAT rules, and nothing of its switches, moves only these requests of the
    switch ports paired with its ports."""
    scoped = ctx.nat_scoped(ips or {})
    new = LflowTable(only=datapaths)
    for source, build in ROUTER_NAT_AREAS:
        new.source = source
        for name in sorted(ports):
            with new.owned_by(("rport", name)):
                build(scoped, ctx.ports.ports[name], new)
    owners: set[Owner] = {("rport", n) for n in ports}
    whole: set[Owner] = set()
    for n in ports:
        peer = ctx.ports.peer_of(ctx.ports.ports[n])
        only = scoped.nat_ips.get(peer.dp.key) if peer is not None else None
        if only is None:
            whole.add(("rport", n))
        else:
            owners.update(rport_ip_owner(n, ip) for ip in only)
    owners |= _extending(table, new, datapaths, whole)
    return table.replace_owned(datapaths, frozenset(owners), new)


def rebuild_router_nat(table: LflowTable, ctx: LflowContext, routers: frozenset[str],
                       ips: Mapping[str, frozenset[str]] | None = None) -> set[FlowKey]:
    """What the NAT rules of `routers` derive on them (`NAT_AREAS`, owner
    `nat_owner`) built again and put in place of theirs, the rest of their flows kept;
    the flows that changed. With `ips`, of a router named there only what its rules
    together derive and what the rules of those external IPs derive each
    (`nat_ip_owner`): a rule's own flows read no other rule's. Equal to a full build as
    long as no other flow of a router reads its NAT rules (a load balancer's reads the
    router's external IPs: the caller builds a router whole when a VIP of its is among
    the IPs changed), and these read nothing a NAT change leaves stale (the router's
    ports and facts, built again whole when they change)."""
    narrowed = ctx.narrowed(routers).nat_scoped(ips or {})
    new = LflowTable(only=routers)
    for source, build in NAT_AREAS:
        new.source = source
        for dp in narrowed.routers():
            with new.owned_by(nat_owner(dp)):
                build(narrowed, new, dp)
    owners: set[Owner] = set()
    for dp in narrowed.routers():
        mine = nat_owner(dp)
        owners.add(mine)
        only = narrowed.nat_ips.get(dp.key)
        if only is None:
            owners |= _extending(table, new, (dp.key,), {mine})
        else:
            owners.update(nat_ip_owner(dp, ip) for ip in only)
            owners.update(nat_port_owner(dp.key, p.name) for p in narrowed.ports_of(dp)
                          if p.is_lrp)
    return table.replace_owned(routers, frozenset(owners), new)


# The areas with what a router's NAT rules derive on one of its ports alone (owner
# `table.nat_port_owner`), each building them for one port (`rebuild_port_nat`), in
# the same order.
PORT_NAT_AREAS: tuple[tuple[str, PortBuilder], ...] = (
    ("lr_ip_input.py", lr_ip_input.build_port_nat),
    ("lr_arp.py", lr_arp_resolve.build_port_nat))


def rebuild_port_nat(table: LflowTable, ctx: LflowContext, routers: frozenset[str],
                     lrps: frozenset[str]) -> set[FlowKey]:
    """What the NAT rules of `routers` derive on their router ports `lrps` alone (those
    gained, and those lost: theirs go) built again; the flows that changed. Equal to
    `rebuild_router_nat` as long as the routers' other NAT flows read those ports
    through their facts alone, which a plain port leaves as they were (a router with
    distributed gateway ports reads every port's `redirect-type`: the caller builds
    its NAT whole)."""
    new = LflowTable(only=routers)
    owners: set[Owner] = set()
    gained = [port for name in sorted(lrps) if (port := ctx.ports.ports.get(name)) is not None
              and port.is_lrp and port.dp.key in routers]
    for source, build in PORT_NAT_AREAS:
        new.source = source
        for port in gained:
            with new.owned_by(nat_port_owner(port.dp.key, port.name)):
                build(ctx, port, new)
    for key in routers:
        owners.update(nat_port_owner(key, name) for name in lrps)
    return table.replace_owned(routers, frozenset(owners), new)


def rebuild_policies(table: LflowTable, ctx: LflowContext, routers: frozenset[str],
                     only: Mapping[str, frozenset[str]] | None = None) -> set[FlowKey]:
    """The policy flows of `routers` built again and put in place of theirs; with
    `only`, of a router named there those of the policies of those UUIDs alone (a
    policy gone takes its flows along); the flows that changed. Equal to a full build
    as long as a router's policy flows depend on its policies and its ports alone (a
    change of its ports rebuilds the policies whose next hops it moves), and the
    policies named alone leave every other policy's ECMP group id as it was (the
    caller's test, `nodes/lflow_rules`)."""
    new = LflowTable(only=routers)
    new.source = POLICY_SOURCE
    whole = [key for key in routers if only is None or key not in only]
    for key in sorted(routers):
        with new.owned_by(("policy", key)):
            build_policies(ctx, new, ctx.datapaths.routers[key],
                           None if only is None else only.get(key))
    mine: set[Owner] = {("policy", key) for key in whole}
    owners = mine | _extending(table, new, whole, mine)
    for key, chosen in (only or {}).items():
        owners.update(policy_owner(key, uuid) for uuid in chosen)
    return table.replace_owned(routers, frozenset(owners), new)


def rebuild_routes(table: LflowTable, ctx: LflowContext, routers: frozenset[str],
                   only: Mapping[str, frozenset[str]] | None = None) -> set[FlowKey]:
    """The flows of the static routes of `routers` built again and put in place of
    theirs, on the routers themselves and wherever their output ports put them (before
    and after); with `only`, of a router named there those of the routes of those
    UUIDs alone (a route gone takes its flows along); the flows that changed. Equal to
    a full build as long as no other flow reads a router's routes and its routes' flows
    read its ports and its facts alone (a change of those rebuilds the routes it moves,
    `rebuild_router_ports`), and the routes named alone are in no route table and share
    their key with no other route, before or after (the caller's test,
    `rules_moved.routes_alone`)."""
    whole = {key for key in routers if only is None or key not in only}
    mine: set[Owner] = {routes_owner(key) for key in whole}
    owners = set(mine)
    for key, chosen in (only or {}).items():
        owners.update(route_owner(key, uuid) for uuid in chosen)
    new = LflowTable()
    for source, build in ROUTE_AREAS:
        new.source = source
        for key in sorted(routers):
            dp = ctx.datapaths.routers.get(key)
            if dp is not None:  # (of a router gone, its flows go)
                with new.owned_by(routes_owner(key)):
                    build(ctx, new, dp, None if key in whole else only[key])  # type: ignore[index]
    landing = set(routers) | new.by_dp.keys()
    for dp_key, owned in table.owned_on.items():  # (where they were)
        if dp_key in landing or dp_key in ctx.datapaths.switches:
            continue
        if any(o in owned for o in owners) or table.owners_under(dp_key, mine):
            landing.add(dp_key)
    owners |= _extending(table, new, landing, mine)
    return table.replace_owned(landing, frozenset(owners), new)


def rebuild_router_ports(table: LflowTable, ctx: LflowContext, routers: frozenset[str],
                         lrps: frozenset[str], beside: frozenset[str]) -> set[FlowKey]:
    """The routers `routers` gained or lost the router ports `lrps`: those ports'
    requests and the routers' own flows (`rebuild_focused`), the routes and policies
    whose next hops those ports move (`rules_moved`; of any router, for routes) and NAT
    flows built again, and the requests there of the switch ports `beside`
    (those the ports brought or took along, `rebuild_owned`); the flows that changed.
    Equal to a full build as long as the routers' other ports' requests read no other
    port of theirs and their other flows read the ports through their facts alone,
    which such a port leaves as they were (`nodes.lflow_ports.plain_lrp`)."""
    changed = rebuild_focused(table, ctx, routers, lrps)
    # (and the routes of other routers whose output ports were or are theirs)
    routed = {owner[1] for key in routers for owner in table.owned_on.get(key, ())
              if isinstance(owner, tuple) and owner[0] == "routes"}
    routed.update(dp.key for dp in lr_routing.routing_into(ctx.narrowed(routers)))
    reached = {key: routes_reaching(table, ctx, dp, lrps) for key in routers | routed
               if (dp := ctx.datapaths.routers.get(key)) is not None}
    changed |= rebuild_routes(table, ctx, frozenset(routers | routed),
                              {key: only for key, only in reached.items() if only is not None})
    moved = {key: policies_reaching(table, ctx, ctx.datapaths.routers[key], lrps)
             for key in routers}
    changed |= rebuild_policies(table, ctx, routers, moved)
    gateways = frozenset(key for key in routers if ctx.ports.l3dgw_ports.get(key))
    changed |= rebuild_router_nat(table, ctx, gateways)
    changed |= rebuild_port_nat(table, ctx, routers - gateways, lrps)
    if beside:
        changed |= rebuild_owned(table, ctx, routers, beside)
    return changed


def rebuild_lbs(table: LflowTable, ctx: LflowContext, owners: frozenset[Owner],
                only: Mapping[str, frozenset[str] | None], datapaths: frozenset[str]
                ) -> set[FlowKey]:
    """The flows of the load balancers `only` names built again (of each, those of the
    VIPs named, or every one: None), on `datapaths` (those they are on, before and
    after), and put in place of what their `owners` asked for there (`lb_owners`);
    the flows that changed. Equal to a full build as long as a load balancer's own
    flows depend on it, its VIP and datapath facts alone, and the datapaths where what
    other flows read of it changed (`lb_reads.lb_rebuilds`) are built again whole."""
    new = LflowTable(only=datapaths)
    lbs = [lb for key, lb in ctx.lbs.lbs.items() if key in only]
    vips = {key: chosen for key, chosen in only.items() if chosen is not None}
    for source, build in LB_AREAS:
        new.source = source
        build(ctx, new, lbs, vips)
    return table.replace_owned(datapaths, owners, new)


__all__ = [
    "AREAS",
    "LflowContext",
    "LflowTable",
    "build_lflows",
    "rebuild",
    "rebuild_focused",
    "rebuild_lbs",
    "rebuild_owned",
    "rebuild_pairs",
    "rebuild_policies",
    "rebuild_router_lookups",
    "rebuild_router_nat",
    "rebuild_router_ports",
    "rebuild_routes",
]
