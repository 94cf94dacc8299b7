"""Which of a router's policies and static routes a change of its ports moves: those a
router port gained or lost may send elsewhere, built again alone
(`lflows.rebuild_router_ports`); and whether some routes can be built alone at all.

Rules kept here:
- A reroute policy's flows read the router's ports only through its next hops: each is
  sent by the first port (NB order) on a network that holds it. A port gained moves
  the policies with a next hop on one of its networks; a port lost, those that sent by
  it (their flows name it as their `outport`). No other policy's flows change.
- A static route reads the ports the same way (by its next hop, or the port it names
  as its output port), so the same routes move; and its route table's id and its ECMP
  group read the other routes. Routes can be built alone only where none of them is
  in a route table and none shares its key (`lr_routes.route_key`) with another route,
  in any version of it (before or after the change): then none is in an ECMP group,
  and no other route's table id or group moves (`routes_alone`). A port gained or
  lost with a route table of its own moves every route of its router.
- Reads the flow table as it is (before the rebuild) and the context as the run left
  it; pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Hashable, Iterable, Mapping

from ...idl.row import IdlRow
from ..build.datapaths import Datapath
from ..build.ports import Port, quoted
from ..build.ports_addresses import MemberIndex
from .context import LflowContext, ref_rows
from .lr_policy import policy_nexthops
from .lr_routes import opt_str, route_key
from .table import LflowTable, Owner, routes_owner


def policies_reaching(table: LflowTable, ctx: LflowContext, dp: Datapath,
                      names: Collection[str]) -> frozenset[str]:
    """The UUIDs of router `dp`'s policies whose flows the router ports `names` (gained
    or lost) may move (see the module rules)."""
    gained = _gained(_ports(ctx, dp, names))
    out: set[str] = set()
    if gained is not None:
        for rule in ref_rows(ctx.current(dp).policies):
            if any(gained.first(hop) is not None for hop in policy_nexthops(rule)):
                out.add(rule.uuid)
    out.update(_sending(table, dp, ("policy", dp.key), names))
    return frozenset(out)


def routes_reaching(table: LflowTable, ctx: LflowContext, dp: Datapath,
                    names: Collection[str]) -> frozenset[str] | None:
    """The UUIDs of router `dp`'s static routes whose flows the router ports `names`
    (gained or lost, of `dp` or of another router) may move; None where its routes are
    to be built whole (see the module rules)."""
    ports = _ports(ctx, dp, names)
    if any(port.options.get("route_table") for port in ports):
        return None
    gained = _gained(ports)
    rows = ref_rows(ctx.current(dp).static_routes)
    out: set[str] = set()
    for row in rows:
        output = opt_str(row.output_port)
        if output is not None:
            if output in names:
                out.add(row.uuid)
        elif gained is not None and row.nexthop and gained.first(row.nexthop) is not None:
            out.add(row.uuid)
    own = table.owned_on.get(dp.key, {})
    tabled = tuple(f"inport == {quoted(name)}" for name in names)
    if any(t in key.match for key in own.get(routes_owner(dp.key), ()) for t in tabled):
        return None  # (a port lost had a route table)
    out.update(_sending(table, dp, routes_owner(dp.key), names))
    by_uuid = {row.uuid: row for row in rows}
    chosen = {uuid: [by_uuid[uuid]] for uuid in out if uuid in by_uuid}
    return frozenset(out) if routes_alone(rows, chosen) else None


def routes_alone(routes: Iterable[IdlRow], chosen: Mapping[str, Collection[IdlRow]]
                 ) -> bool:
    """Whether the routes `chosen` (by UUID, each in every version a change saw of it)
    of a router whose routes are now `routes` can be built alone (see the module
    rules)."""
    others: Counter[Hashable] = Counter(route_key(row) for row in routes
                                        if row.uuid not in chosen)
    seen: set[Hashable] = set()
    for versions in chosen.values():
        keys: set[Hashable] = set()
        for row in versions:
            if opt_str(row.route_table):
                return False
            key = route_key(row)
            if key is not None:
                if others[key]:
                    return False
                keys.add(key)
        if keys & seen:
            return False
        seen |= keys
    return True


def _sending(table: LflowTable, dp: Datapath, whole: Owner, names: Collection[str]
             ) -> set[str]:
    """The UUIDs of the rules (owners extending `whole`) whose flows on `dp` send by one
    of the ports `names` (their `outport`)."""
    own = table.owned_on.get(dp.key, {})
    sends = tuple(f"outport = {quoted(name)};" for name in names)
    return {str(owner[2]) for owner in table.owners_under(dp.key, (whole,))  # type: ignore[index]
            if any(s in key.actions for key in own.get(owner, ()) for s in sends)}


def _ports(ctx: LflowContext, dp: Datapath, names: Collection[str]) -> list[Port]:
    """Those of the router ports `names` that router `dp` has now (gained)."""
    return [port for name in names if (port := ctx.ports.ports.get(name)) is not None
            and port.dp.key == dp.key and port.networks is not None]


def _gained(ports: list[Port]) -> MemberIndex[Port] | None:
    """The networks of the ports a router gained (`_ports`), to look next hops up in
    (None: it gained none)."""
    return MemberIndex([(port, port.networks) for port in ports]) if ports else None
