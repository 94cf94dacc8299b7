"""A router that gains or loses a plain router port (no distributed gateway, no router
peer) is not built again whole: the port's requests, the router's own flows and routes
are, the policies whose next hops the port moves and the NAT flows of the port alone
(`rebuild_port_nat`), with the requests there of the switch ports the port brings or
takes along (`lflows.rebuild_router_ports`); a switch of router ports alone that gains
or loses one keeps its other ports' requests (`nodes.lflow_ports.ports_kept_alike`).
Each change runs with the self-check on (the result equals a recompute's), and the
flows that must move are looked at: a route and a policy whose next hop only the new
port reaches, the new switch's VIF resolved on the router, and another router's route
through the port."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from test_engine_contract import World

from pyovsdb.northd import lflows
from pyovsdb.northd.nodes import lflow
from pyovsdb.northd.testing import LocalDb, Nb


def _key(nb: Nb, table: str, name: str) -> str:
    return nb.uuid(table, name)


def _flows(sb: LocalDb, datapath: str) -> set[tuple[str, str]]:
    """(match, actions) of the flows on one datapath (by NB UUID), alone or in a group."""
    dps = {r.uuid for r in sb.tables["Datapath_Binding"].rows.values()
           if datapath in (r.external_ids.get("logical-router"),
                           r.external_ids.get("logical-switch"))}
    out: set[tuple[str, str]] = set()
    for row in sb.tables["Logical_Flow"].rows.values():
        on = row.logical_datapath
        group = row.logical_dp_group
        members = {d.uuid for d in group.datapaths} if group is not None else set()
        if (on is not None and on.uuid in dps) or members & dps:
            out.add((row.match, row.actions))
    return out


def _with(flows: set[tuple[str, str]], *parts: str) -> set[tuple[str, str]]:
    return {f for f in flows if all(p in f[0] + f[1] for p in parts)}


def _rebuilt(built: list[frozenset[str]], key: str) -> bool:
    return any(key in dps for dps in built)


@pytest.fixture
def owned_whole(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[str]]:
    """The ports whose requests on other datapaths each run built again whole."""
    names: set[str] = set()
    real = lflow.rebuild_owned

    def recording(table: Any, ctx: Any, datapaths: frozenset[str],
                  ports: frozenset[str]) -> Any:
        names.update(ports)
        return real(table, ctx, datapaths, ports)

    monkeypatch.setattr(lflow, "rebuild_owned", recording)
    yield names


@pytest.fixture
def nat_whole(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[str]]:
    """The routers whose NAT flows each run built again whole."""
    keys: set[str] = set()
    real = lflows.rebuild_router_nat

    def recording(table: Any, ctx: Any, routers: frozenset[str], ips: Any = None) -> Any:
        keys.update(routers)
        return real(table, ctx, routers, ips)

    monkeypatch.setattr(lflows, "rebuild_router_nat", recording)
    yield keys


@pytest.fixture
def world(nb: Nb, sb: LocalDb) -> World:
    """The contract's topology, with a static route and a reroute policy on lr0 whose
    next hops no port of it reaches yet, and a second router lr1 with a route out of a
    port lr0 will gain."""
    w = World(nb, sb)
    with w.change():
        nb.add_child("Logical_Router", "lr0", "static_routes",
                     "Logical_Router_Static_Route", ip_prefix="192.168.5.0/24",
                     nexthop="10.5.0.254")
        nb.add_child("Logical_Router", "lr0", "policies", "Logical_Router_Policy",
                     priority=100, match="ip4.src == 10.0.0.11", action="reroute",
                     nexthops=["10.5.0.9"])
        nb.lr_add("lr1")
        nb.add_child("Logical_Router", "lr1", "static_routes",
                     "Logical_Router_Static_Route", ip_prefix="192.168.6.0/24",
                     nexthop="10.5.0.253", output_port="lrp5")
    w.settled()
    return w


def _gain(nb: Nb, w: World) -> None:
    """lrp5 on lr0, paired with a new switch sw5 with a VIF."""
    with w.change():
        nb.ls_add("sw5")
        nb.connect("sw5", "lr0", "lrp5", "00:00:00:00:ff:05", "10.5.0.1/24")
        nb.lsp_add("sw5", "vm5", addresses=["00:00:00:00:05:05 10.5.0.10"])
    w.northd.settle()


def _join(nb: Nb, w: World) -> str:
    """A join switch of lr0 and lr1 (router ports alone), settled; its key."""
    with w.change():
        nb.ls_add("join")
        nb.connect("join", "lr0", "lr0-join", "00:00:00:00:ff:10", "100.64.0.1/16")
        nb.connect("join", "lr1", "lr1-join", "00:00:00:00:ff:11", "100.64.0.2/16")
    w.settled()
    return _key(nb, "Logical_Switch", "join")


def _gr2_joins(nb: Nb, w: World) -> None:
    """A gateway router gr2 made and joined to the join switch."""
    with w.change():
        nb.lr_add("gr2", options={"chassis": "ch0"})
        nb.connect("join", "gr2", "gr2-join", "00:00:00:00:ff:12", "100.64.0.3/16")
    w.northd.settle()


def test_a_router_gaining_a_port_is_not_built_whole(
        nb: Nb, sb: LocalDb, world: World, whole_rebuilds: list[frozenset[str]],
        nat_whole: set[str]) -> None:
    lr0, lr1 = _key(nb, "Logical_Router", "lr0"), _key(nb, "Logical_Router", "lr1")
    assert not _with(_flows(sb, lr0), 'outport = "lrp5"')
    _gain(nb, world)
    assert not _rebuilt(whole_rebuilds, lr0) and not _rebuilt(whole_rebuilds, lr1)
    assert lr0 not in nat_whole
    on = _flows(sb, lr0)
    assert ("ip4.dst == {10.5.0.1}", "drop;") in on  # (lrp5's own, `nat_port_owner`)
    assert _with(on, "ip4.dst == 192.168.5.0/24", "reg0 = 10.5.0.254", 'outport = "lrp5"')
    assert _with(on, "ip4.src == 10.0.0.11", "reg0 = 10.5.0.9", 'outport = "lrp5"')
    assert _with(on, 'outport == "lrp5" && reg0 == 10.5.0.10', "eth.dst = 00:00:00:00:05:05")
    # (lr1's route through lrp5 is written on lr0, lrp5's router)
    assert _with(on, "ip4.dst == 192.168.6.0/24", 'outport = "lrp5"')


def test_a_router_losing_a_port_is_not_built_whole(
        nb: Nb, sb: LocalDb, world: World, whole_rebuilds: list[frozenset[str]]) -> None:
    lr0 = _key(nb, "Logical_Router", "lr0")
    _gain(nb, world)
    whole_rebuilds.clear()
    with world.change():  # (the port alone: its switch and the VIF stay)
        nb.db.transact([
            {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "lr0"]],
             "mutations": [["ports", "delete", ["uuid", _key(nb, "Logical_Router_Port",
                                                            "lrp5")]]]},
            {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw5"]],
             "mutations": [["ports", "delete", ["uuid", _key(nb, "Logical_Switch_Port",
                                                            "sw5-lrp5")]]]}])
    world.northd.settle()
    assert not _rebuilt(whole_rebuilds, lr0)
    on = _flows(sb, lr0)
    assert not _with(on, "lrp5")
    assert not _with(on, "10.5.0.10")


def test_a_switch_of_router_ports_gaining_one_is_not_built_whole(
        nb: Nb, sb: LocalDb, world: World, whole_rebuilds: list[frozenset[str]],
        owned_whole: set[str]) -> None:
    """A join switch (router ports alone) that a new gateway router joins, and leaves.
    The routers already there resolve the new router's address: that alone is built
    again on them (`rebuild_pairs`), not all they resolve there."""
    join = _join(nb, world)
    whole_rebuilds.clear()
    owned_whole.clear()  # (lr0 and lr1 joined in one change: theirs were new then)
    _gr2_joins(nb, world)
    assert not _rebuilt(whole_rebuilds, join)
    assert _with(_flows(sb, join), "arp.tpa == 100.64.0.3", 'outport = "join-gr2-join"')
    lr0 = _key(nb, "Logical_Router", "lr0")
    assert _with(_flows(sb, lr0), 'outport == "lr0-join" && reg0 == 100.64.0.3')
    assert not owned_whole & {"join-lr0-join", "join-lr1-join"}
    whole_rebuilds.clear()
    with world.change():
        nb.db.transact([{"op": "delete", "table": "Logical_Router",
                         "where": [["name", "==", "gr2"]]},
                        {"op": "mutate", "table": "Logical_Switch",
                         "where": [["name", "==", "join"]],
                         "mutations": [["ports", "delete", ["uuid", _key(
                             nb, "Logical_Switch_Port", "join-gr2-join")]]]}])
    world.northd.settle()
    assert not _rebuilt(whole_rebuilds, join)
    assert not _with(_flows(sb, join), "100.64.0.3")
    assert not _with(_flows(sb, lr0), "100.64.0.3")
    assert not owned_whole & {"join-lr0-join", "join-lr1-join"}


def test_a_switch_of_router_ports_builds_a_new_one_s_conntrack_skips_alone(
        nb: Nb, sb: LocalDb, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A router-type port's conntrack skips (`ls_in/out_pre_lb`, 110) are its own: a
    join switch gaining a router asks for the new port's alone, not again for each
    port already there; a stateful ACL on the switch (its `has_stateful_acl`, read by
    every port's egress skip) moves them all, and taken away moves them back."""
    join = _join(nb, world)
    asked: list[str] = []
    real = lflows.build_lflows

    def recording(ctx: Any, only: Any = None, owners: Any = None) -> Any:
        out = real(ctx, only, owners)
        asked.extend(key.match for key in out.flows)
        return out

    monkeypatch.setattr(lflows, "build_lflows", recording)
    _gr2_joins(nb, world)
    assert 'ip && inport == "join-gr2-join"' in asked
    assert 'ip && inport == "join-lr0-join"' not in asked
    skips = _with(_flows(sb, join), "ip && outport == ")
    assert {a for _, a in skips} == {"ct_clear; next;"} and len(skips) == 3
    with world.change():
        nb.add_child("Logical_Switch", "join", "acls", "ACL", direction="to-lport",
                     priority=1000, match="ip4", action="allow-related")
    world.settled()
    skips = _with(_flows(sb, join), "ip && outport == ")
    assert {a for _, a in skips} == {"next;"} and len(skips) == 3
    with world.change():
        nb.set("Logical_Switch", "join", acls=[])
    world.settled()
    assert {a for _, a in _with(_flows(sb, join), "ip && outport == ")} == {"ct_clear; next;"}
