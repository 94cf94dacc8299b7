"""Datapath_Binding rows as the real ovn-northd 23.03 writes them (values observed by
running it on the same NB commands)."""

from __future__ import annotations

from pyovsdb.northd.build.datapaths import build_datapaths, put_datapaths
from pyovsdb.northd.build.inputs import BuildInput
from pyovsdb.northd.desired import DesiredDb
from pyovsdb.northd.testing import LocalDb, Nb, named, run_core


def bindings(nb: Nb, sb: LocalDb) -> dict[str, dict[str, object]]:
    """SB Datapath_Binding rows by the name of their NB switch or router."""
    out = {}
    for row in sb.tables["Datapath_Binding"].rows.values():
        out[row.external_ids["name"]] = named(row)
    return out


def test_external_ids_and_keys_of_switches_and_routers(nb: Nb, sb: LocalDb) -> None:
    sw1 = nb.ls_add("sw1", external_ids={"neutron:network_name": "net1"})
    run_core(nb.db, sb)
    lr1 = nb.lr_add("lr1", external_ids={"neutron:router_name": "router1"},
                    options={"snat-ct-zone": "5", "always_learn_from_arp_request": "false"})
    run_core(nb.db, sb)
    nb.lr_add("lr2", enabled=False)
    sw2 = nb.ls_add("sw2", other_config={"requested-tnl-key": "77", "interconn-ts": "ts1"})
    gr1 = nb.lr_add("gr1", options={"chassis": "gw1", "always_learn_from_arp_request": "true"})
    run_core(nb.db, sb)
    rows = bindings(nb, sb)
    assert rows == {
        "sw1": {"external_ids": {"logical-switch": sw1, "name": "sw1", "name2": "net1"},
                "load_balancers": [], "tunnel_key": 1},
        "lr1": {"external_ids": {"always_learn_from_arp_request": "false",
                                 "logical-router": lr1, "name": "lr1", "name2": "router1",
                                 "snat-ct-zone": "5"},
                "load_balancers": [], "tunnel_key": 2},
        "sw2": {"external_ids": {"interconn-ts": "ts1", "logical-switch": sw2, "name": "sw2"},
                "load_balancers": [], "tunnel_key": 77},
        "gr1": {"external_ids": {"logical-router": gr1, "name": "gr1"},
                "load_balancers": [], "tunnel_key": 3},
    }


def test_new_datapath_takes_the_lowest_free_key(nb: Nb, sb: LocalDb) -> None:
    for name in ("sa", "sb", "sc"):
        nb.ls_add(name)
        run_core(nb.db, sb)
    nb.db.delete("Logical_Switch", nb.uuid("Logical_Switch", "sb"))
    run_core(nb.db, sb)
    nb.ls_add("sd")
    run_core(nb.db, sb)
    assert {n: r["tunnel_key"] for n, r in bindings(nb, sb).items()} == \
        {"sa": 1, "sc": 3, "sd": 2}


def test_existing_key_kept_and_requested_key_wins(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("sa")
    run_core(nb.db, sb)
    nb.ls_add("sb")
    run_core(nb.db, sb)
    assert {n: r["tunnel_key"] for n, r in bindings(nb, sb).items()} == {"sa": 1, "sb": 2}
    # sb asks for sa's key: it gets it, and sa moves to the lowest free key.
    nb.set("Logical_Switch", "sb", other_config={"requested-tnl-key": "1"})
    run_core(nb.db, sb)
    assert {n: r["tunnel_key"] for n, r in bindings(nb, sb).items()} == {"sa": 2, "sb": 1}


def test_vxlan_mode_narrows_the_range_and_refuses_big_requests(nb: Nb, sb: LocalDb) -> None:
    sb.transact([{"op": "insert", "table": "Encap", "uuid-name": "e",
                  "row": {"type": "vxlan", "ip": "192.168.0.1", "chassis_name": "hv1"}},
                 {"op": "insert", "table": "Chassis",
                  "row": {"name": "hv1", "encaps": ["named-uuid", "e"]}}])
    nb.ls_add("big", other_config={"requested-tnl-key": "5000"})
    nb.ls_add("ts", other_config={"requested-tnl-key": "5001", "interconn-ts": "t"})
    data = build_datapaths(BuildInput(nb=nb.db.tables, sb=sb.tables))
    assert data.vxlan_mode
    assert {d.name: d.tunnel_key for d in data.all()} == {"big": 1, "ts": 5001}


def test_stale_and_unnamed_bindings_are_deleted(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw")
    sb.insert("Datapath_Binding", tunnel_key=9, external_ids={"name": "orphan"})
    sb.insert("Datapath_Binding", tunnel_key=8,
              external_ids={"logical-switch": "5b0d3ec3-7e1f-4bda-9e24-5a6a8bba6a3c"})
    sb.insert("Datapath_Binding", tunnel_key=7, external_ids={"logical-switch": sw})
    run_core(nb.db, sb)
    assert {n: r["tunnel_key"] for n, r in bindings(nb, sb).items()} == {"sw": 7}


def test_desired_rows_are_keyed_by_nb_uuid(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw")
    desired = DesiredDb()
    data = build_datapaths(BuildInput(nb=nb.db.tables, sb=sb.tables))
    table = put_datapaths(data, desired)
    assert data.by_key(sw).name == "sw" and data.by_key(sw).is_switch
    assert table.rows == {sw: {"tunnel_key": 1, "load_balancers": [],
                               "external_ids": {"logical-switch": sw, "name": "sw"}}}
