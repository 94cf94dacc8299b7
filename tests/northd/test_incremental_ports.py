"""Ordinary switch ports added, deleted and updated without recomputing `northd`: the
engine's stats say so, and after every step the incremental desired state equals a
graph built from scratch on the same databases, which also wants to write nothing.
A handler broken on purpose (its multicast groups or tunnel keys left alone) is caught.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from pyovsdb.idl.row import IdlRow
from pyovsdb.northd.build import port_keys, ports_incremental
from pyovsdb.northd.diagnostics import collecting
from pyovsdb.northd.driver import Driver
from pyovsdb.northd.testing import LocalDb, LocalNorthd, Nb, TransactError, add_chassis
from pyovsdb.ovsdb.changeset import Changeset


class Loop(LocalNorthd):
    """The daemon's run/commit cycle over LocalDbs (`LocalNorthd`), 10 ms per run."""

    def __init__(self, nb: Nb, sb: LocalDb) -> None:
        super().__init__(nb.db, sb, Driver(clock=lambda: 0.0, incremental_ports=True),
                         step_ms=10)

    def run(self) -> int:
        step = self.run_once()
        assert not step.out.canceled
        return len(step.sb_ops) + len(step.nb_ops)

    def change(self, cs: Changeset[IdlRow]) -> None:
        self.nb_changed(cs)
        self.settle()


def _plain(v: Any) -> Any:
    if isinstance(v, IdlRow):
        return v.uuid
    if isinstance(v, dict):
        return {repr(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list | tuple | set | frozenset):
        return sorted((_plain(x) for x in v), key=repr)
    return v


def _desired(driver: Driver) -> dict[str, Any]:
    assert driver.engine is not None
    data = driver.engine.node_data("northd")
    out: dict[str, Any] = {}
    for db, desired in (("sb", data.sb), ("nb", data.nb)):
        for name, table in desired.tables.items():
            if table.owned or table.rows:
                out[f"{db}.{name}"] = (sorted(table.columns), _plain(table.rows))
    return out


def check_equals_recompute(loop: Loop) -> None:
    fresh, out = loop.fresh()
    assert [str(op) for op in out.sb_ops] == []
    assert [str(op) for op in out.nb_ops] == []
    inc, new = _desired(loop.driver), _desired(fresh)
    for name in sorted(set(inc) | set(new)):
        assert inc.get(name) == new.get(name), name


def _lsp_add(nb: Nb, ls: str, name: str, **row: Any) -> Changeset[IdlRow]:
    return nb.db.transact([
        {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "p",
         "row": {"name": name, **{k: nb.db.json_row("Logical_Switch_Port", {k: v})[k]
                                  for k, v in row.items()}}},
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", ls]],
         "mutations": [["ports", "insert", ["set", [["named-uuid", "p"]]]]]}])


def _lsp_del(nb: Nb, name: str) -> Changeset[IdlRow]:
    uuid = nb.uuid("Logical_Switch_Port", name)
    return nb.db.transact([
        {"op": "mutate", "table": "Logical_Switch",
         "where": [["ports", "includes", ["uuid", uuid]]],
         "mutations": [["ports", "delete", ["set", [["uuid", uuid]]]]]}])


def _lsp_set(nb: Nb, name: str, **cols: Any) -> Changeset[IdlRow]:
    uuid = nb.uuid("Logical_Switch_Port", name)
    return nb.db.update("Logical_Switch_Port", uuid, **cols)


def _topology(nb: Nb, sb: LocalDb) -> Loop:
    nb.db.insert("NB_Global", options={"mac_prefix": "0a:00:00",
                                       "svc_monitor_mac": "0a:00:00:00:00:fe"})
    add_chassis(sb, "ch0", "192.0.2.1")
    nb.ls_add("sw0")
    nb.ls_add("sw1", other_config={"vlan-passthru": "true"})
    nb.ls_add("sw2", other_config={"subnet": "10.2.0.0/24"})  # IPAM, nothing dynamic
    nb.lr_add("lr0")
    nb.connect("sw0", "lr0", "lrp0", "00:00:00:00:ff:01", "10.0.0.1/24")
    nb.lsp_add("sw1", "ln1", type="localnet", options={"network_name": "phys"})
    loop = Loop(nb, sb)
    loop.settle()
    return loop


def test_a_run_hands_its_operations_over(nb: Nb, sb: LocalDb) -> None:
    """What a run writes is the caller's alone: the engine keeps no copy until its
    next run (a first run's is the whole SB)."""
    nb.ls_add("sw0")
    loop = Loop(nb, sb)
    step = loop.run_once()
    assert len(step.out.sb_ops) > 10
    engine = loop.driver.engine
    assert engine is not None
    for node in ("sync_to_sb", "northd_output"):
        assert engine.node_data(node).sb_ops == []


def test_vif_add_delete_update_do_not_recompute_northd(nb: Nb, sb: LocalDb) -> None:
    loop = _topology(nb, sb)
    recomputes, computes = loop.stat("northd", "recompute"), loop.stat("northd", "compute")
    steps: list[Callable[[], Changeset[IdlRow]]] = [
        lambda: _lsp_add(nb, "sw0", "vm1", addresses=["00:00:00:00:00:01 10.0.0.11"]),
        lambda: _lsp_add(nb, "sw0", "vm2", addresses=["unknown"]),
        lambda: _lsp_add(nb, "sw1", "vm3", addresses=["00:00:00:00:00:03"],
                         options={"requested-chassis": "ch0"}),
        lambda: _lsp_set(nb, "vm1", addresses=["00:00:00:00:00:01 10.0.0.12"]),
        # a static port on a switch with IPAM that no port asks for addresses
        lambda: _lsp_add(nb, "sw2", "vm4", addresses=["00:00:00:00:00:04 10.2.0.4"]),
        lambda: _lsp_set(nb, "vm2", enabled=[False]),
        lambda: _lsp_set(nb, "vm3", port_security=["00:00:00:00:00:03"],
                         external_ids={"neutron:port_name": "three"}),
        lambda: _lsp_del(nb, "vm2"),
    ]
    for step in steps:
        before = loop.stat("northd", "compute")
        loop.change(step())
        assert loop.stat("northd", "compute") > before
        assert loop.stat("northd", "recompute") == recomputes
        check_equals_recompute(loop)
    assert loop.stat("northd", "compute") >= computes + len(steps)
    pbs = {r.logical_port: r for r in sb.tables["Port_Binding"].rows.values()}
    assert "vm2" not in pbs and pbs["vm1"].mac == ["00:00:00:00:00:01 10.0.0.12"]
    assert pbs["vm3"].options.get("vlan-passthru") == "true"
    assert pbs["vm3"].external_ids.get("name") == "three"
    assert pbs["vm3"].requested_chassis is not None


def test_a_parent_of_a_virtual_port_coming_or_going(nb: Nb, sb: LocalDb) -> None:
    """A virtual port's flows name the parents its switch has: a VIF that is one of
    them coming or going moves them (the switch is built again, not the VIF alone)."""
    loop = _topology(nb, sb)
    loop.change(_lsp_add(nb, "sw0", "a", addresses=["00:00:00:00:00:0a 10.0.0.10"]))
    loop.change(_lsp_add(nb, "sw0", "vp", type="virtual",
                         options={"virtual-ip": "10.0.0.50", "virtual-parents": "a,b"}))

    def binds() -> set[str]:
        return {r.match.split('"')[1] for r in sb.tables["Logical_Flow"].rows.values()
                if "bind_vport" in r.actions}

    assert binds() == {"a"}
    for step, want in ((lambda: _lsp_add(nb, "sw0", "b", addresses=["00:00:00:00:00:0b"]),
                        {"a", "b"}), (lambda: _lsp_del(nb, "a"), {"b"})):
        loop.change(step())
        check_equals_recompute(loop)
        assert binds() == want


def test_dynamic_addresses_in_place(nb: Nb, sb: LocalDb) -> None:
    """VIFs asking IPAM for addresses, added, updated and deleted, and static ports
    beside them, in place (its write-back coming back too), each run equal to a
    recompute; a static port taking a dynamic port's address moves that one's, which
    recomputes."""
    loop = _topology(nb, sb)

    def dynamic(name: str) -> str | None:
        lsp = next(r for r in nb.db.tables["Logical_Switch_Port"].rows.values()
                   if r.name == name)
        return lsp.dynamic_addresses

    steps: list[Callable[[], Changeset[IdlRow]]] = [
        lambda: _lsp_add(nb, "sw2", "ipam0", addresses=["dynamic"]),
        lambda: _lsp_add(nb, "sw2", "ipam1", addresses=["00:00:00:00:00:21 10.2.0.5"]),
        lambda: _lsp_add(nb, "sw2", "ipam2", addresses=["0a:00:00:00:00:99 dynamic"]),
        lambda: _lsp_set(nb, "ipam2", addresses=["dynamic 10.2.0.77"]),
        lambda: _lsp_add(nb, "sw0", "dyn", addresses=["dynamic"]),  # (no IPAM there)
        lambda: _lsp_del(nb, "ipam2")]
    for step in steps:
        before = loop.stat("northd", "recompute")
        loop.change(step())
        assert loop.stat("northd", "recompute") == before
        check_equals_recompute(loop)
    assert dynamic("ipam0") == "0a:00:00:02:00:03 10.2.0.2"
    assert dynamic("dyn") is None
    before = loop.stat("northd", "recompute")
    loop.change(_lsp_add(nb, "sw2", "thief", addresses=["00:00:00:00:00:31 10.2.0.2"]))
    assert loop.stat("northd", "recompute") > before
    check_equals_recompute(loop)
    assert dynamic("ipam0") == "0a:00:00:02:00:03 10.2.0.3"


def test_ports_beside_an_igmp_group_in_place(nb: Nb, sb: LocalDb) -> None:
    """A snooping switch with a multicast group its VIFs joined (SB IGMP_Group): ports
    added, updated (`mcast_flood`) and deleted, a member among them, are applied in
    place, the switch's multicast groups built again with the IGMP group merged in;
    the chassis that reported it deleted, the stale IGMP row is deleted in place; each
    run equal to a recompute."""
    loop = _topology(nb, sb)
    loop.change(nb.db.transact([{"op": "update", "table": "Logical_Switch",
                                 "where": [["name", "==", "sw0"]],
                                 "row": {"other_config": ["map", [["mcast_snoop", "true"]]]}}]))
    for name, mac in (("m1", "00:00:00:00:00:21"), ("m2", "00:00:00:00:00:22")):
        loop.change(_lsp_add(nb, "sw0", name, addresses=[f"{mac} 10.0.0.2{name[1]}"]))
    pbs = {r.logical_port: u for u, r in sb.tables["Port_Binding"].rows.items()}
    ch0 = next(iter(sb.tables["Chassis"].rows))
    dp = sb.tables["Port_Binding"].rows[pbs["m1"]].data["datapath"]
    loop.sb_changed(sb.transact([{"op": "insert", "table": "IGMP_Group", "row": {
        "address": "239.0.0.1", "datapath": ["uuid", str(dp)], "chassis": ["uuid", ch0],
        "ports": ["set", [["uuid", pbs["m1"]], ["uuid", pbs["m2"]]]]}}]))
    loop.settle()

    def members() -> list[str] | None:
        group = next((r for r in sb.tables["Multicast_Group"].rows.values()
                      if r.name == "239.0.0.1"), None)
        return None if group is None else sorted(p.logical_port for p in group.ports)

    assert members() == ["m1", "m2"]
    before = loop.stat("northd", "recompute")
    for step, want in ((lambda: _lsp_add(nb, "sw0", "m3", addresses=["00:00:00:00:00:23"]),
                        ["m1", "m2"]),
                       (lambda: _lsp_set(nb, "m2", options={"mcast_flood": "true"}), ["m1"]),
                       (lambda: _lsp_del(nb, "m1"), None)):
        loop.change(step())
        check_equals_recompute(loop)
        assert members() == want
    assert members() is None  # (m2 floods, m1 went: the group has no member left)
    # The chassis that reported the join goes: its IGMP row, stale, is deleted.
    assert sb.tables["IGMP_Group"].rows
    loop.sb_changed(sb.delete("Chassis", ch0))
    loop.settle()
    check_equals_recompute(loop)
    assert not sb.tables["IGMP_Group"].rows
    assert loop.stat("northd", "recompute") == before


def test_qos_ports_take_their_queues_in_place(nb: Nb, sb: LocalDb) -> None:
    """VIFs with QoS options added, claimed on a chassis (each taking the lowest queue
    id free there, which its binding and its flows carry), their options dropped (the
    queue given back) and deleted: in place, each run equal to a recompute."""
    loop = _topology(nb, sb)
    ch0 = next(iter(sb.tables["Chassis"].rows))

    def claim(name: str) -> None:
        pb = next(u for u, r in sb.tables["Port_Binding"].rows.items()
                  if r.logical_port == name)
        loop.sb_changed(sb.update("Port_Binding", pb, chassis=ch0))
        loop.settle()

    def queue(name: str) -> str | None:
        pb = next(r for r in sb.tables["Port_Binding"].rows.values()
                  if r.logical_port == name)
        return pb.options.get("qdisc_queue_id")

    before = loop.stat("northd", "recompute")
    for name in ("q1", "q2"):
        loop.change(_lsp_add(nb, "sw0", name, addresses=["unknown"],
                             options={"qos_max_rate": "1000"}))
        check_equals_recompute(loop)
        claim(name)
        check_equals_recompute(loop)
    assert (queue("q1"), queue("q2")) == ("1", "2")
    assert any("set_queue(2);" in r.actions for r in sb.tables["Logical_Flow"].rows.values())
    loop.change(_lsp_set(nb, "q1", options={}))
    check_equals_recompute(loop)
    assert queue("q1") is None
    loop.change(_lsp_add(nb, "sw0", "q3", addresses=["unknown"],
                         options={"qos_min_rate": "10"}))
    claim("q3")
    check_equals_recompute(loop)
    assert queue("q3") == "1"
    loop.change(_lsp_del(nb, "q2"))
    check_equals_recompute(loop)
    assert loop.stat("northd", "recompute") == before


def test_vtep_ports_in_place(nb: Nb, sb: LocalDb) -> None:
    """VTEP ports (a hardware gateway's) added and deleted in place, the switch joining
    and leaving the VTEP switches (whose flows, and their routers', read it); beside a
    distributed gateway port's peer (whose chassisredirect binding reads it) the
    caller recomputes."""
    loop = _topology(nb, sb)
    vtep = {"vtep-physical-switch": "ps0", "vtep-logical-switch": "ls0"}
    for step, in_place in (
            (lambda: _lsp_add(nb, "sw1", "vtep0", type="vtep", options=vtep), True),
            (lambda: _lsp_add(nb, "sw1", "vtep1", type="vtep", options=vtep), True),
            (lambda: _lsp_del(nb, "vtep0"), True),
            (lambda: _lsp_del(nb, "vtep1"), True),
            (lambda: _lsp_add(nb, "sw0", "vtep3", type="vtep", options=vtep), True),  # (lr0's)
            (lambda: _lsp_del(nb, "vtep3"), True),
            (lambda: _gateway_on_sw0(nb), False),
            (lambda: _lsp_add(nb, "sw0", "vtep2", type="vtep", options=vtep), False)):
        before = loop.stat("northd", "recompute")
        loop.change(step())
        assert (loop.stat("northd", "recompute") == before) is in_place
        check_equals_recompute(loop)


def _gateway_on_sw0(nb: Nb) -> Changeset[IdlRow]:
    """lrp0 (peering sw0) made a distributed gateway port: a recompute, as it is not a
    change of gateway chassis alone."""
    return nb.db.transact([
        {"op": "insert", "table": "Gateway_Chassis", "uuid-name": "g",
         "row": {"name": "lrp0-ch0", "chassis_name": "ch0", "priority": 1}},
        {"op": "mutate", "table": "Logical_Router_Port", "where": [["name", "==", "lrp0"]],
         "mutations": [["gateway_chassis", "insert", ["named-uuid", "g"]],
                       ["external_ids", "insert", ["map", [["x", "y"]]]]]}])


def test_what_it_cannot_prove_recomputes(nb: Nb, sb: LocalDb) -> None:
    loop = _topology(nb, sb)
    steps: list[Callable[[], Changeset[IdlRow]]] = [
        lambda: _lsp_add(nb, "sw0", "meta", type="localport", addresses=["dynamic"])]
    for step in steps:
        before = loop.stat("northd", "recompute")
        loop.change(step())
        assert loop.stat("northd", "recompute") > before
        check_equals_recompute(loop)


def _random_step(rng: random.Random, nb: Nb, n: int) -> Changeset[IdlRow] | None:
    lsps = sorted((r for r in nb.db.tables["Logical_Switch_Port"].rows.values()
                   if r.name.startswith("vm")), key=lambda r: r.name)
    kind = rng.choice(("add", "add", "del", "set", "set"))
    if kind == "add" or not lsps:
        addresses = rng.choice(([], ["unknown"], [f"00:00:00:00:01:{n % 256:02x}"],
                                [f"00:00:00:00:01:{n % 256:02x} 10.0.0.{n % 200 + 20}"]))
        options = rng.choice(({}, {"mcast_flood": "true"}, {"mcast_flood_reports": "true"},
                              {"requested-chassis": "ch0"}))
        return _lsp_add(nb, rng.choice(("sw0", "sw1", "sw2")), f"vm{n}",
                        addresses=addresses, options=options)
    lsp = rng.choice(lsps)
    if kind == "del":
        return _lsp_del(nb, lsp.name)
    column, value = rng.choice((
        ("addresses", [["unknown"], ["00:00:00:00:02:01"], []][n % 3]),
        ("enabled", [[], [False], [True]][n % 3]),
        ("options", [{}, {"mcast_flood": "true"}, {"requested-tnl-key": "99"}][n % 3]),
        ("port_security", [[], ["00:00:00:00:02:01"]][n % 2]),
        ("type", ["", "localport"][n % 2])))
    return _lsp_set(nb, lsp.name, **{column: value})


def play_random(nb: Nb, sb: LocalDb, seed: int, steps: int = 40) -> int:
    """Random VIF steps, checked after each; how many did not recompute `northd`."""
    rng = random.Random(seed)
    loop = _topology(nb, sb)
    handled = 0
    for n in range(steps):
        cs = _random_step(rng, nb, n)
        if cs is None:
            continue
        before = loop.stat("northd", "recompute")
        loop.change(cs)
        handled += loop.stat("northd", "recompute") == before
        check_equals_recompute(loop)
    return handled


@pytest.mark.parametrize("seed", range(4))
def test_random_vif_steps_equal_recompute(nb: Nb, sb: LocalDb, seed: int) -> None:
    handled = play_random(nb, sb, seed)
    assert handled >= 10  # the handler did the work, not the recompute


def test_a_handler_that_forgets_multicast_groups_is_caught(
        nb: Nb, sb: LocalDb, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports_incremental, "put_fixed_groups", lambda *a, **k: None)
    with pytest.raises(AssertionError):
        play_random(nb, sb, 0)


def test_a_handler_that_forgets_tunnel_keys_is_caught(
        nb: Nb, sb: LocalDb, monkeypatch: pytest.MonkeyPatch) -> None:
    class Fixed(port_keys.TunnelKeys):
        def allocate(self) -> int | None:
            return 1
    monkeypatch.setattr(port_keys, "TunnelKeys", Fixed)
    with pytest.raises((AssertionError, TransactError)):  # (a key taken twice)
        play_random(nb, sb, 0)


def test_flow_warnings_come_from_full_builds_only(nb: Nb, sb: LocalDb) -> None:
    """The flow builders' warnings (a bad static route, a bad switch port address) are
    reported when `lflow` recomputes, as 23.03 logs them while it builds every flow,
    and not by the partial rebuild of the flows a VIF change touches."""
    loop = _topology(nb, sb)
    route = nb.db.transact([
        {"op": "insert", "table": "Logical_Router_Static_Route", "uuid-name": "r",
         "row": {"ip_prefix": "10.9.0.0/16", "nexthop": "zz"}},
        {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "lr0"]],
         "mutations": [["static_routes", "insert", ["set", [["named-uuid", "r"]]]]]}])
    uuid = next(iter(nb.db.tables["Logical_Router_Static_Route"].rows))
    bad_route = f"bad 'nexthop' zz in static route {uuid}"
    bad_address = "vm9: invalid syntax 'garbage' in addresses column"
    with collecting() as found:
        loop.change(route)
    assert [d.message for d in found] == [bad_route]
    lflow_recomputes = loop.stat("lflow", "recompute")
    with collecting() as found:
        loop.change(_lsp_add(nb, "sw0", "vm9", addresses=["00:00:00:00:00:09", "garbage"]))
    assert loop.stat("lflow", "recompute") == lflow_recomputes  # sw0 and lr0 rebuilt
    assert not {bad_route, bad_address} & {d.message for d in found}
    loop.driver.force_recompute()
    with collecting() as found:
        loop.run()
    assert {bad_route, bad_address} <= {d.message for d in found}
