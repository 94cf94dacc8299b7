"""A router's policies and static routes are built again one by one where that equals
building them all (`nodes/lflow_rules`, `lflows/rules_moved`): a rule added, deleted or
updated builds its own flows alone, and so does a rule whose next hop a router port
gained or lost moves. A policy that takes or gives up an ECMP group id (a reroute to
several next hops) builds the router's policies whole, since the ECMP policies after
it in UUID order renumber; a route that shares its key with another (an ECMP group)
or is in a route table builds the router's routes whole. Each change runs with the
self-check on (the result equals a recompute's), and the rules built are recorded."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any

import pytest
from test_engine_contract import World

from pyovsdb.northd import lflows
from pyovsdb.northd.nodes import lflow
from pyovsdb.northd.testing import LocalDb, Nb

# Fixed UUIDs: the new ECMP policy sorts before the one there, whose group id moves.
FIRST = "00000000-0000-4000-8000-000000000001"
LAST = "ffffffff-0000-4000-8000-000000000001"


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Collection[str] | None]]:
    """What each policy build asked for: the UUIDs of some policies, or None (all)."""
    asked: list[Collection[str] | None] = []
    real = lflows.build_policies

    def recording(ctx: Any, out: Any, dp: Any, only: Collection[str] | None = None) -> None:
        asked.append(None if only is None else set(only))
        real(ctx, out, dp, only)

    monkeypatch.setattr(lflows, "build_policies", recording)
    yield asked


def _attach(nb: Nb, column: str, table: str, uuid: str, row: dict[str, Any]) -> None:
    """A row of `table` with UUID `uuid`, listed in lr0's `column`."""
    nb.db.transact([
        {"op": "insert", "table": table, "uuid": uuid, "row": nb.db.json_row(table, row)},
        {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "lr0"]],
         "mutations": [[column, "insert", ["uuid", uuid]]]}])


def _detach(nb: Nb, column: str, table: str, uuid: str) -> None:
    """The row `uuid` of `table` taken from lr0's `column`, and deleted."""
    nb.db.transact([
        {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "lr0"]],
         "mutations": [[column, "delete", ["uuid", uuid]]]},
        {"op": "delete", "table": table, "where": [["_uuid", "==", ["uuid", uuid]]]}])


def _policy(nb: Nb, uuid: str, priority: int, match: str, **cols: Any) -> None:
    _attach(nb, "policies", "Logical_Router_Policy", uuid,
            {"priority": priority, "match": match, **cols})


def _drop(nb: Nb, uuid: str) -> None:
    _detach(nb, "policies", "Logical_Router_Policy", uuid)


def _update(nb: Nb, table: str, uuid: str, row: dict[str, Any]) -> None:
    nb.db.transact([{"op": "update", "table": table, "where": [["_uuid", "==", ["uuid", uuid]]],
                     "row": row}])


def _unplug(nb: Nb, lrp: str, ls: str) -> None:
    """Router port `lrp` taken from lr0, and its peer from switch `ls` (both stay)."""
    nb.db.transact([
        {"op": "mutate", "table": table, "where": [["name", "==", name]],
         "mutations": [["ports", "delete", ["uuid", nb.uuid(port_table, port)]]]}
        for table, name, port_table, port in (
            ("Logical_Router", "lr0", "Logical_Router_Port", lrp),
            ("Logical_Switch", ls, "Logical_Switch_Port", f"{ls}-{lrp}"))])


def _actions(sb: LocalDb, match: str) -> set[str]:
    return {r.actions for r in sb.tables["Logical_Flow"].rows.values()
            if r.match == match or r.match.startswith(match)}


@pytest.fixture
def world(nb: Nb, sb: LocalDb) -> World:
    """lr0 with a port on 10.5.0.0/24 besides its own, an allow policy, a reroute to a
    next hop there, and an ECMP reroute whose UUID sorts last."""
    w = World(nb, sb)
    with w.change():
        nb.ls_add("sw5")
        nb.connect("sw5", "lr0", "lrp5", "00:00:00:00:ff:05", "10.5.0.1/24")
        _policy(nb, "11111111-0000-4000-8000-000000000001", 100, "ip4.src == 10.0.0.11",
                action="allow")
        _policy(nb, "22222222-0000-4000-8000-000000000001", 100, "ip4.src == 10.0.0.12",
                action="reroute", nexthops=["10.5.0.9"])
        _policy(nb, LAST, 90, "ip4.src == 10.0.0.13", action="reroute",
                nexthops=["10.0.0.50", "10.0.0.51"])
    w.settled()
    return w


def test_a_policy_added_updated_or_deleted_builds_alone(
        nb: Nb, sb: LocalDb, world: World, built: list[Collection[str] | None]) -> None:
    new = "33333333-0000-4000-8000-000000000001"
    with world.change():
        _policy(nb, new, 200, "ip4.src == 10.0.0.14", action="drop")
    world.northd.settle()
    assert built == [{new}]
    assert _actions(sb, "ip4.src == 10.0.0.14")
    built.clear()
    with world.change():
        _update(nb, "Logical_Router_Policy", new, {"match": "ip4.src == 10.0.0.15"})
    world.northd.settle()
    assert built == [{new}]
    assert not _actions(sb, "ip4.src == 10.0.0.14") and _actions(sb, "ip4.src == 10.0.0.15")
    built.clear()
    with world.change():
        _drop(nb, new)
    world.northd.settle()
    assert built == [{new}]
    assert not _actions(sb, "ip4.src == 10.0.0.15")


def test_an_ecmp_policy_added_or_made_builds_the_router_whole(
        nb: Nb, sb: LocalDb, world: World, built: list[Collection[str] | None]) -> None:
    assert _actions(sb, "ip4.src == 10.0.0.13") == {
        "reg8[0..15] = 1; reg8[16..31] = select(1, 2);"}
    with world.change():
        _policy(nb, FIRST, 80, "ip4.src == 10.0.0.16", action="reroute",
                nexthops=["10.0.0.60", "10.0.0.61"])
    world.northd.settle()
    assert built == [None]
    # (the one there renumbered: the new one sorts first)
    assert _actions(sb, "ip4.src == 10.0.0.13") == {
        "reg8[0..15] = 2; reg8[16..31] = select(1, 2);"}
    built.clear()
    with world.change():  # (a single next hop no more: it takes an ECMP group id)
        _update(nb, "Logical_Router_Policy", "22222222-0000-4000-8000-000000000001",
                {"nexthops": ["set", ["10.5.0.9", "10.5.0.10"]]})
    world.northd.settle()
    assert built == [None]
    assert _actions(sb, "ip4.src == 10.0.0.13") == {
        "reg8[0..15] = 3; reg8[16..31] = select(1, 2);"}


def test_a_port_gained_or_lost_builds_the_policies_it_moves(
        nb: Nb, sb: LocalDb, world: World, built: list[Collection[str] | None]) -> None:
    reroute = "22222222-0000-4000-8000-000000000001"
    assert {a for a in _actions(sb, "ip4.src == 10.0.0.12") if 'outport = "lrp5"' in a}
    with world.change():  # (lrp5 goes: the reroute through it has no way out)
        _unplug(nb, "lrp5", "sw5")
    world.northd.settle()
    assert built == [{reroute}]
    assert not _actions(sb, "ip4.src == 10.0.0.12")
    built.clear()
    with world.change():  # (a port on the next hop's network: the reroute is back)
        nb.ls_add("sw6")
        nb.connect("sw6", "lr0", "lrp6", "00:00:00:00:ff:06", "10.5.0.2/24")
    world.northd.settle()
    assert built == [{reroute}]
    assert {a for a in _actions(sb, "ip4.src == 10.0.0.12") if 'outport = "lrp6"' in a}


# -- static routes ---------------------------------------------------------------------

@pytest.fixture
def routes_built(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """What each routes build asked for: per router, the UUIDs of some routes, or None
    (all)."""
    asked: list[dict[str, Any]] = []
    real = lflows.rebuild_routes

    def recording(table: Any, ctx: Any, routers: frozenset[str],
                  only: Mapping[str, frozenset[str]] | None = None) -> Any:
        asked.append({key: (only or {}).get(key) for key in routers})
        return real(table, ctx, routers, only)

    monkeypatch.setattr(lflows, "rebuild_routes", recording)
    monkeypatch.setattr(lflow, "rebuild_routes", recording)
    yield asked


def _route(nb: Nb, uuid: str, prefix: str, nexthop: str, **cols: Any) -> None:
    _attach(nb, "static_routes", "Logical_Router_Static_Route", uuid,
            {"ip_prefix": prefix, "nexthop": nexthop, **cols})


def _unroute(nb: Nb, uuid: str) -> None:
    _detach(nb, "static_routes", "Logical_Router_Static_Route", uuid)


R1 = "44444444-0000-4000-8000-000000000001"
R2 = "55555555-0000-4000-8000-000000000001"


def _route_r1(nb: Nb, w: World) -> None:
    """Route R1 (192.168.1.0/24 via 10.5.0.7) added to lr0, settled."""
    with w.change():
        _route(nb, R1, "192.168.1.0/24", "10.5.0.7")
    w.northd.settle()


def test_a_route_added_updated_or_deleted_builds_alone(
        nb: Nb, sb: LocalDb, world: World, routes_built: list[dict[str, Any]]) -> None:
    lr0 = nb.uuid("Logical_Router", "lr0")
    _route_r1(nb, world)
    assert routes_built == [{lr0: {R1}}]
    assert _actions(sb, "reg7 == 0 && ip4.dst == 192.168.1.0/24")
    routes_built.clear()
    with world.change():
        _update(nb, "Logical_Router_Static_Route", R1, {"ip_prefix": "192.168.2.0/24"})
    world.northd.settle()
    assert routes_built == [{lr0: {R1}}]
    assert not _actions(sb, "reg7 == 0 && ip4.dst == 192.168.1.0/24")
    assert _actions(sb, "reg7 == 0 && ip4.dst == 192.168.2.0/24")
    routes_built.clear()
    with world.change():
        _unroute(nb, R1)
    world.northd.settle()
    assert routes_built == [{lr0: {R1}}]
    assert not _actions(sb, "reg7 == 0 && ip4.dst == 192.168.2.0/24")


def test_a_route_sharing_its_key_or_in_a_route_table_builds_the_router_whole(
        nb: Nb, sb: LocalDb, world: World, routes_built: list[dict[str, Any]]) -> None:
    lr0 = nb.uuid("Logical_Router", "lr0")
    _route_r1(nb, world)
    routes_built.clear()
    with world.change():  # (the two make an ECMP group)
        _route(nb, R2, "192.168.1.0/24", "10.5.0.8")
    world.northd.settle()
    assert routes_built == [{lr0: None}]
    assert _actions(sb, "reg7 == 0 && ip4.dst == 192.168.1.0/24") == {
        "ip.ttl--; flags.loopback = 1; reg8[0..15] = 1; reg8[16..31] = select(1, 2);"}
    routes_built.clear()
    with world.change():  # (the group goes: the one left is alone again)
        _unroute(nb, R2)
    world.northd.settle()
    assert routes_built == [{lr0: None}]
    assert {a for a in _actions(sb, "reg7 == 0 && ip4.dst == 192.168.1.0/24")
            if "reg0 = 10.5.0.7" in a}
    routes_built.clear()
    with world.change():
        _route(nb, R2, "192.168.3.0/24", "10.5.0.8", route_table="blue")
    world.northd.settle()
    assert routes_built == [{lr0: None}]


def test_a_port_gained_or_lost_builds_the_routes_it_moves(
        nb: Nb, sb: LocalDb, world: World, routes_built: list[dict[str, Any]]) -> None:
    lr0 = nb.uuid("Logical_Router", "lr0")
    with world.change():
        _route(nb, R1, "192.168.1.0/24", "10.6.0.7")  # (no port reaches it yet)
        _route(nb, R2, "192.168.2.0/24", "10.0.0.7")
    world.northd.settle()
    assert not _actions(sb, "reg7 == 0 && ip4.dst == 192.168.1.0/24")
    routes_built.clear()
    with world.change():
        nb.ls_add("sw6")
        nb.connect("sw6", "lr0", "lrp6", "00:00:00:00:ff:06", "10.6.0.1/24")
    world.northd.settle()
    assert {lr0: {R1}} in routes_built and all(b.get(lr0) is not None for b in routes_built)
    assert {a for a in _actions(sb, "reg7 == 0 && ip4.dst == 192.168.1.0/24")
            if 'outport = "lrp6"' in a}
    routes_built.clear()
    with world.change():
        _unplug(nb, "lrp6", "sw6")
    world.northd.settle()
    assert {lr0: {R1}} in routes_built and all(b.get(lr0) is not None for b in routes_built)
    assert not _actions(sb, "reg7 == 0 && ip4.dst == 192.168.1.0/24")
    assert _actions(sb, "reg7 == 0 && ip4.dst == 192.168.2.0/24")


def test_a_port_and_a_route_through_it_in_one_change(
        nb: Nb, sb: LocalDb, world: World) -> None:
    """(An ovn-kubernetes node add: the port's handler builds the routes the port
    moves, the route's handler the new route through another port; neither counts as
    the other's.)"""
    with world.change():
        nb.ls_add("sw7")
        nb.connect("sw7", "lr0", "lrp7", "00:00:00:00:ff:07", "10.7.0.1/24")
        _route(nb, R1, "10.7.0.0/24", "10.0.0.9", policy="src-ip")
        _policy(nb, FIRST, 1004, "ip4.src == 10.7.0.0/24", action="reroute",
                nexthops=["10.0.0.9"])
    world.northd.settle()
    assert {a for a in _actions(sb, "ip4.src == 10.7.0.0/24") if 'outport = "lrp0"' in a
            and a.startswith("ip.ttl--")}
    assert {a for a in _actions(sb, "ip4.src == 10.7.0.0/24") if 'outport = "lrp0"' in a
            and a.startswith("reg0")}
