"""Rebuilding the logical flows of one datapath alone gives the flows a full build
gives (`lflows.rebuild`), so the `lflow` node can update a switch (and the routers
it is connected to) without building every flow again.

The NB and SB come from the incremental property test's world (its starting
topologies, then random steps of every kind), settled by northd's graph; then for
every datapath, a full build with that datapath rebuilt must equal a full build: the
same flows on the same datapaths, with the same hints and tags. An area that built a
datapath's flows from anything but the datapaths the context lists (e.g. looping over
every switch to build a router's flows) fails here. So do a router's NAT flows
rebuilt alone (`rebuild_router_nat`), its routes (`rebuild_routes`), its plain ports
with its own flows (`rebuild_router_ports`) and a switch's router-type ports' lookups
rebuilt alone (`rebuild_router_lookups`) that are not what a full build owns as theirs.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nbgen import BASES, Step, steps
from test_incremental_property import TOUR, World, batches

from pyovsdb.northd.lflows import (
    LflowTable,
    build_lflows,
    rebuild,
    rebuild_router_lookups,
    rebuild_router_nat,
    rebuild_router_ports,
    rebuild_routes,
)
from pyovsdb.northd.lflows.stages import Stage
from pyovsdb.northd.lflows.table import FlowKey
from pyovsdb.northd.nodes.lflow import lflow_context
from pyovsdb.northd.nodes.lflow_ports import plain_lrp


def _flows(table: LflowTable) -> dict[FlowKey, tuple[tuple[str, ...], Any, Any]]:
    return {k: (tuple(sorted(f.datapaths)), f.hint, f.io_port)
            for k, f in table.flows.items()}


def check_rebuilds(world: World) -> int:
    """Every datapath rebuilt alone against a full build; the number checked."""
    engine = world.driver.engine
    assert engine is not None
    northd = engine.node_data("northd")
    ctx = lflow_context(world.nb.tables, world.sb.tables, northd)
    full = _flows(build_lflows(ctx))
    dps = [dp.key for dp in northd.core.datapaths.all()]
    routers = northd.core.datapaths.routers
    for key in dps:
        table = build_lflows(ctx)
        rebuild(table, ctx, frozenset({key}))
        _same(full, _flows(table), f"rebuilding {key} alone")
        if key in routers:
            table = build_lflows(ctx)
            rebuild_router_nat(table, ctx, frozenset({key}))
            _same(full, _flows(table), f"rebuilding the NAT flows of {key} alone")
            table = build_lflows(ctx)
            rebuild_routes(table, ctx, frozenset({key}))
            _same(full, _flows(table), f"rebuilding the routes of {key} alone")
            plain = frozenset(p.name for p in northd.core.ports.of_datapath(key)
                              if plain_lrp(p))
            table = build_lflows(ctx)
            rebuild_router_ports(table, ctx, frozenset({key}), plain, frozenset())
            _same(full, _flows(table), f"rebuilding the plain ports of {key} alone")
        rports = frozenset(p.name for p in northd.core.ports.of_datapath(key)
                           if p.is_lsp and p.type == "router")
        if rports:
            table = build_lflows(ctx)
            rebuild_router_lookups(table, ctx, frozenset({key}), rports)
            _same(full, _flows(table), f"rebuilding the router lookups on {key} alone")
    return len(dps)


def _same(full: dict[FlowKey, Any], got: dict[FlowKey, Any], what: str) -> None:
    if got != full:
        lost = sorted(str(k) for k in full.keys() - got.keys())[:5]
        gained = sorted(str(k) for k in got.keys() - full.keys())[:5]
        moved = [str(k) for k in full.keys() & got.keys() if full[k] != got[k]][:5]
        raise AssertionError(f"{what} differs: lost {lost}, gained {gained}, "
                             f"changed {moved}")


def play(seq: list[Step], base: tuple[Step, ...]) -> World:
    from test_incremental_property import Batch

    world = World(base)
    for group in batches(seq):
        world.play(Batch(steps=list(group)))
    return world


@settings(max_examples=25, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(sorted(BASES)), steps(max_size=12))
def test_rebuilding_one_datapath_equals_a_full_build(base: str, seq: list[Step]) -> None:
    check_rebuilds(play(seq, BASES[base]))


def test_rebuild_after_the_tour() -> None:
    """The tour of every step kind, stopped before its deletions of whole datapaths,
    leaves switches, routers, gateways, ACLs, LBs and port groups to rebuild."""
    cut = next(i for i, s in enumerate(TOUR) if s.kind == "acl-del")
    world = play(TOUR[:cut], ())
    assert check_rebuilds(world) >= 3


def test_a_rebuild_that_loses_a_flow_is_seen() -> None:
    """The check is not vacuous: a rebuild whose result misses one flow differs."""
    world = play([], BASES["plain"])
    northd = world.driver.engine.node_data("northd")  # type: ignore[union-attr]
    ctx = lflow_context(world.nb.tables, world.sb.tables, northd)
    table = build_lflows(ctx)
    dp = next(iter(northd.core.datapaths.switches))
    part = build_lflows(ctx.narrowed(frozenset({dp})), only=frozenset({dp}))
    key = next(k for k in part.flows if k.stage is Stage.LS_IN_L2_LKUP)
    del part.flows[key]
    del part.by_dp[dp][key]
    table.replace({dp}, part)
    assert _flows(table) != _flows(build_lflows(ctx))


def test_rebuild_of_a_routed_topology() -> None:
    """Switches with VIFs behind a router with a gateway port, NAT and a load balancer,
    and a gateway router: a port's flows land on its switch and on the routers (a VIF's
    address resolved by the router), so each datapath rebuilt alone must find them."""
    from pyovsdb.northd.testing import Nb

    world = World(())
    transact = world.nb.transact

    def push(ops: list[dict[str, Any]]) -> Any:
        cs = transact(ops)
        world.northd.nb_changed(cs)
        return cs

    world.nb.transact = push  # type: ignore[method-assign]
    nb = Nb(world.nb)
    for i in (0, 1):
        nb.ls_add(f"sw{i}")
        for j in (1, 2):
            nb.lsp_add(f"sw{i}", f"vm{i}{j}",
                       addresses=[f"00:00:00:00:0{i}:0{j} 10.0.{i}.{j + 10} fd0{i}::{j}"])
    nb.lr_add("lr0")
    nb.connect("sw0", "lr0", "lr0-sw0", "00:00:00:00:ff:01", "10.0.0.1/24", "fd00::1/64")
    nb.connect("sw1", "lr0", "lr0-sw1", "00:00:00:00:ff:02", "10.0.1.1/24")
    nb.ls_add("join")
    nb.connect("join", "lr0", "lr0-join", "00:00:00:00:ff:03", "100.64.0.1/16")
    nb.lr_add("gr0", options={"chassis": "hv1", "dynamic_neigh_routers": "true"})
    nb.connect("join", "gr0", "gr0-join", "00:00:00:00:ff:04", "100.64.0.2/16")
    world.settle()
    assert check_rebuilds(world) == 5
