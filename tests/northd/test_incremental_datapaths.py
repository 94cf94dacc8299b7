"""Switches, routers and router ports created and deleted without recomputing
`northd` (`build.datapaths_incremental`, `ports_incremental.router_ports_changed`): the
stats say so, and after every step the incremental state equals a graph built from
scratch on the same databases (which wants to write nothing). Where something else
names the new or gone row (a router port's peer, a switch's router port, a static MAC
binding), or a tunnel key could differ, `northd` recomputes, and is still equal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from test_incremental_ports import Loop, check_equals_recompute

from pyovsdb.idl.row import IdlRow
from pyovsdb.northd.testing import LocalDb, Nb, add_chassis
from pyovsdb.ovsdb.changeset import Changeset

Step = Callable[[], Changeset[IdlRow]]


def _topology(nb: Nb, sb: LocalDb) -> Loop:
    nb.db.insert("NB_Global", options={"mac_prefix": "0a:00:00",
                                       "svc_monitor_mac": "0a:00:00:00:00:fe"})
    add_chassis(sb, "ch0", "192.0.2.1")
    nb.ls_add("sw0")
    nb.lr_add("lr0")
    nb.connect("sw0", "lr0", "lrp0", "00:00:00:00:ff:01", "10.0.0.1/24")
    nb.lsp_add("sw0", "vm1", addresses=["00:00:00:00:00:01 10.0.0.11"])
    loop = Loop(nb, sb)
    loop.settle()
    return loop


def _lrp_add(nb: Nb, lr: str, name: str, net: str, **cols: Any) -> Changeset[IdlRow]:
    row = {"name": name, "mac": f"00:00:00:00:fe:{len(name):02x}", "networks": net}
    row.update({k: nb.db.json_row("Logical_Router_Port", {k: v})[k] for k, v in cols.items()})
    return nb.db.transact([
        {"op": "insert", "table": "Logical_Router_Port", "uuid-name": "p", "row": row},
        {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", lr]],
         "mutations": [["ports", "insert", ["set", [["named-uuid", "p"]]]]]}])


def _unlink(nb: Nb, table: str, column: str, owner_table: str, name: str
            ) -> Changeset[IdlRow]:
    uuid = nb.uuid(table, name)
    return nb.db.transact([
        {"op": "mutate", "table": owner_table, "where": [[column, "includes", ["uuid", uuid]]],
         "mutations": [[column, "delete", ["set", [["uuid", uuid]]]]]}])


def _delete(nb: Nb, table: str, name: str) -> Changeset[IdlRow]:
    return nb.db.transact([{"op": "delete", "table": table,
                            "where": [["name", "==", name]]}])


def _gateway(nb: Nb, lrp: str) -> Changeset[IdlRow]:
    """`lrp` made a distributed gateway port on ch0 (a chassisredirect port with it)."""
    return nb.db.transact([
        {"op": "insert", "table": "Gateway_Chassis", "uuid-name": "g",
         "row": {"name": f"{lrp}-ch0", "chassis_name": "ch0", "priority": 1}},
        {"op": "mutate", "table": "Logical_Router_Port", "where": [["name", "==", lrp]],
         "mutations": [["gateway_chassis", "insert", ["set", [["named-uuid", "g"]]]]]}])


def _ls_with_ports(nb: Nb, name: str, *ports: str) -> Changeset[IdlRow]:
    ops: list[dict[str, Any]] = [
        {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": f"p{i}",
         "row": {"name": p, "addresses": f"00:00:00:00:0a:{i + 1:02x} 10.9.0.{i + 10}"}}
        for i, p in enumerate(ports)]
    ops.append({"op": "insert", "table": "Logical_Switch",
                "row": {"name": name, "ports": ["set", [["named-uuid", f"p{i}"]
                                                        for i in range(len(ports))]]}})
    return nb.db.transact(ops)


def _core_order(data: Any) -> tuple[list[str], dict[str, list[str]]]:
    """The core's datapaths in build order, and each one's ports in build order."""
    core = data.core
    return ([dp.name for dp in core.datapaths.all()],
            {core.datapaths.by_key(k).name: [p.name for p in ports]
             for k, ports in core.ports.by_datapath.items() if ports})


def _play(loop: Loop, steps: list[tuple[Step, bool]]) -> None:
    """Each step, and whether `northd` must handle it without a recompute; after each,
    the state equals a recompute's, down to the order of datapaths and ports."""
    for i, (step, in_place) in enumerate(steps):
        before = loop.stat("northd", "recompute")
        loop.change(step())
        recomputed = loop.stat("northd", "recompute") > before
        assert recomputed is not in_place, f"step {i}: recomputed={recomputed}"
        check_equals_recompute(loop)
        fresh, _ = loop.fresh()
        assert loop.driver.engine is not None and fresh.engine is not None
        assert _core_order(loop.driver.engine.node_data("northd")) == \
            _core_order(fresh.engine.node_data("northd")), f"step {i}"


def test_switches_and_routers_come_and_go_in_place(nb: Nb, sb: LocalDb) -> None:
    loop = _topology(nb, sb)
    _play(loop, [
        (lambda: _ls_with_ports(nb, "sw5", "a5", "b5"), True),
        (lambda: nb.db.transact([{"op": "insert", "table": "Logical_Switch",
                                  "row": {"name": "sw3"}}]), True),  # a lower name, a later key
        (lambda: _delete(nb, "Logical_Switch", "sw5"), True),
        (lambda: _ls_with_ports(nb, "sw6", "a6"), True),  # takes sw5's freed key
        (lambda: nb.db.transact([{"op": "insert", "table": "Logical_Router",
                                  "row": {"name": "lr7"}}]), True),
        (lambda: _lrp_add(nb, "lr7", "lr7-a", "10.7.0.1/24"), True),
        (lambda: _lrp_add(nb, "lr0", "lr0-b", "10.8.0.1/24"), True),
        (lambda: _gateway(nb, "lr0-b"), True),  # (a gateway port now: in place)
        (lambda: _lrp_add(nb, "lr0", "lr0-a", "10.9.0.1/24"), True),  # before lr0-b's cr-
        (lambda: _unlink(nb, "Logical_Router_Port", "ports", "Logical_Router", "lr0-a"), True),
        (lambda: _unlink(nb, "Logical_Router_Port", "ports", "Logical_Router", "lr0-b"),
         True),  # a gateway port (its chassisredirect port and group go with it)
        (lambda: _unlink(nb, "Logical_Router_Port", "ports", "Logical_Router", "lr7-a"), True),
        (lambda: _delete(nb, "Logical_Router", "lr7"), True),
    ])
    bindings = sb.tables["Datapath_Binding"].rows.values()
    dps = {r.external_ids["name"]: r.tunnel_key for r in bindings}
    assert dps == {"sw0": 1, "lr0": 2, "sw3": 4, "sw6": 3}


def test_what_names_them_comes_in_place(nb: Nb, sb: LocalDb) -> None:
    """A router port naming another as its peer, and the one it names coming later,
    pair in place. A router port a switch's router port names before it comes pairs in
    place, a switch with IPAM (no port asking it for addresses) comes in place, and a
    router with a requested key takes it in place."""
    loop = _topology(nb, sb)
    _play(loop, [
        (lambda: _lrp_add(nb, "lr0", "lr0-x", "10.5.0.1/24", peer=["lr0-y"]), True),
        (lambda: _lrp_add(nb, "lr0", "lr0-y", "10.6.0.1/24"), True),  # named by lr0-x
        (lambda: nb.db.transact([
            {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "r",
             "row": {"name": "sw0-lr0-z", "type": "router",
                     "options": ["map", [["router-port", "lr0-z"]]]}},
            {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw0"]],
             "mutations": [["ports", "insert", ["set", [["named-uuid", "r"]]]]]}]), True),
        (lambda: _lrp_add(nb, "lr0", "lr0-z", "10.4.0.1/24"), True),  # named by sw0-lr0-z
        (lambda: nb.db.transact([{"op": "insert", "table": "Logical_Switch", "row": {
            "name": "sw8", "other_config": ["map", [["subnet", "10.8.0.0/24"]]]}}]), True),
        (lambda: nb.db.transact([{"op": "insert", "table": "Logical_Router", "row": {
            "name": "lr9", "options": ["map", [["requested-tnl-key", "40"]]]}}]), True),
    ])


def _set(nb: Nb, table: str, row: str, **cols: Any) -> Changeset[IdlRow]:
    return nb.db.update(table, nb.uuid(table, row), **cols)


def test_switches_and_routers_updated_in_place(nb: Nb, sb: LocalDb) -> None:
    """Names, external_ids and settings of switches and routers change in place
    (`build.datapaths_updated`), in build order after a rename, and a switch or router
    made next still takes the key a recompute gives it (a router made a gateway router
    too), and a switch asking for a free tunnel key moves there; one asking for
    another's takes it, the other moved to the lowest free key, in place too."""
    loop = _topology(nb, sb)
    _play(loop, [
        (lambda: _ls_with_ports(nb, "sw5", "a5", "b5"), True),
        (lambda: _set(nb, "Logical_Switch", "sw5", name="a-sw5"), True),  # before sw0 now
        (lambda: _set(nb, "Logical_Router", "lr0", name="z-lr0",
                      external_ids={"neutron:router_name": "r0"}), True),
        (lambda: _set(nb, "Logical_Switch", "a-sw5", other_config={
            "mcast_snoop": "true", "vlan-passthru": "true", "subnet": "10.9.0.0/24"}), True),
        (lambda: _set(nb, "Logical_Switch", "a-sw5", other_config={
            "mcast_querier": "false"}), True),  # (the eth source kept, as 23.03 does)
        (lambda: _ls_with_ports(nb, "b-sw6", "a6"), True),
        (lambda: _set(nb, "Logical_Router", "z-lr0", options={"snat-ct-zone": "9"}), True),
        (lambda: nb.db.transact([{"op": "insert", "table": "Logical_Router",
                                  "row": {"name": "lr7"}}]), True),
        (lambda: _set(nb, "Logical_Router", "z-lr0", options={"chassis": "ch0"}), True),
        (lambda: _set(nb, "Logical_Switch", "sw0", other_config={
            "requested-tnl-key": "30"}), True),  # (a free key: moved there in place)
        (lambda: _set(nb, "Logical_Switch", "a-sw5", other_config={
            "requested-tnl-key": "2"}), True),  # (z-lr0's: both move)
    ])
    dps = {r.external_ids["name"]: r.tunnel_key
           for r in sb.tables["Datapath_Binding"].rows.values()}
    assert dps["sw0"] == 30 and dps["a-sw5"] == 2 and dps["z-lr0"] not in (2, 30), dps
