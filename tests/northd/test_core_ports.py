"""Port_Binding and Multicast_Group rows of every port type, as the real ovn-northd
23.03 wrote them for the same NB changes, made in the same order (tunnel keys
included: each step is one NB transaction followed by a northd run)."""

from __future__ import annotations

from typing import Any

import pytest

from pyovsdb.northd.testing import (
    LocalDb,
    Nb,
    add_chassis,
    multicast_groups,
    port_bindings,
    run_core,
)


def scenario(nb: Nb, sb: LocalDb) -> None:
    """Every port type of 23.03 on two switches, a distributed router, a gateway
    router and a router-to-router link; one northd run per NB transaction."""
    def step() -> None:
        run_core(nb.db, sb)

    add_chassis(sb, "hv1", "192.168.0.1", hostname="host1.example")
    add_chassis(sb, "gw1", "192.168.0.2")
    add_chassis(sb, "gw2", "192.168.0.3")
    nb.ls_add("sw1", external_ids={"neutron:network_name": "net1"},
              other_config={"vlan-passthru": "true"})
    step()
    nb.lsp_add("sw1", "vm1", addresses=["00:00:00:00:01:01 10.1.0.11"],
               port_security=["00:00:00:00:01:01 10.1.0.11"])
    step()
    nb.set("Logical_Switch_Port", "vm1", external_ids={"neutron:port_name": "port-vm1"},
           options={"requested-chassis": "host1.example,gw1,nosuch"})
    step()
    nb.lsp_add("sw1", "vm2", addresses=["00:00:00:00:01:02", "unknown"],
               options={"qos_max_rate": "1000"})
    step()
    nb.lsp_add("sw1", "cont1", parent_name="vm1", tag_request=0,
               addresses=["00:00:00:00:01:03 10.1.0.13"])
    step()
    nb.lsp_add("sw1", "cont2", parent_name="vm1", tag_request=42)
    step()
    nb.lsp_add("sw1", "lp1", type="localport", addresses=["00:00:00:00:01:04 10.1.0.14"])
    step()
    nb.lsp_add("sw1", "virt1", type="virtual",
               options={"virtual-ip": "10.1.0.100", "virtual-parents": "vm1,vm2"})
    step()
    nb.lsp_add("sw1", "ext1", type="external", addresses=["00:00:00:00:01:05 10.1.0.15"])
    step()
    nb.db.insert("HA_Chassis_Group", name="hagrp1")
    nb.add_child("HA_Chassis_Group", "hagrp1", "ha_chassis", "HA_Chassis",
                 chassis_name="gw1", priority=30)
    nb.add_child("HA_Chassis_Group", "hagrp1", "ha_chassis", "HA_Chassis",
                 chassis_name="gw2", priority=20)
    step()
    nb.set("Logical_Switch_Port", "ext1",
           ha_chassis_group=nb.uuid("HA_Chassis_Group", "hagrp1"))
    step()
    nb.lsp_add("sw1", "l2gw1", type="l2gateway",
               options={"network_name": "phys", "l2gateway-chassis": "hv1"})
    step()
    nb.lsp_add("sw1", "rem1", type="remote", options={"requested-chassis": "gw2"})
    step()
    nb.lsp_add("sw1", "dis1", enabled=False, addresses=["unknown"])
    step()
    nb.lr_add("lr1", external_ids={"neutron:router_name": "router1"},
              options={"snat-ct-zone": "5", "always_learn_from_arp_request": "false"})
    step()
    nb.lrp_add("lr1", "lr1-sw1", "00:00:00:00:ff:01", "10.1.0.1/24", "fd01::1/64")
    step()
    nb.lsp_add("sw1", "sw1-lr1", type="router", addresses=["router"],
               options={"router-port": "lr1-sw1"})
    step()
    nb.ls_add("public")
    step()
    nb.lsp_add("public", "ln-public", type="localnet", addresses=["unknown"],
               options={"network_name": "physnet1"})
    step()
    nb.lrp_add("lr1", "lr1-public", "00:00:00:00:ff:02", "172.16.0.1/24")
    step()
    nb.add_child("Logical_Router_Port", "lr1-public", "gateway_chassis", "Gateway_Chassis",
                 name="lr1-public-gw1", chassis_name="gw1", priority=20)
    step()
    nb.add_child("Logical_Router_Port", "lr1-public", "gateway_chassis", "Gateway_Chassis",
                 name="lr1-public-gw2", chassis_name="gw2", priority=10)
    step()
    nb.lsp_add("public", "public-lr1", type="router", addresses=["router"],
               options={"router-port": "lr1-public", "nat-addresses": "router"})
    step()
    nb.add_child("Logical_Router", "lr1", "nat", "NAT", type="snat",
                 external_ip="172.16.0.1", logical_ip="10.1.0.0/24")
    step()
    nb.add_child("Logical_Router", "lr1", "nat", "NAT", type="dnat_and_snat",
                 external_ip="172.16.0.100", logical_ip="10.1.0.11")
    step()
    nb.lr_add("gr1", options={"chassis": "gw1"})
    step()
    nb.lrp_add("gr1", "gr1-public", "00:00:00:00:ff:03", "172.16.0.2/24")
    step()
    nb.lsp_add("public", "public-gr1", type="router", addresses=["router"],
               options={"router-port": "gr1-public", "nat-addresses": "router"})
    step()
    nb.add_child("Logical_Router", "gr1", "nat", "NAT", type="snat",
                 external_ip="172.16.0.2", logical_ip="10.2.0.0/24")
    step()
    nb.add_child("Logical_Router", "gr1", "nat", "NAT", type="dnat_and_snat",
                 external_ip="172.16.0.200", logical_ip="10.2.0.5")
    step()
    lb = nb.db.insert("Load_Balancer", name="lb1", protocol="tcp",
                      vips={"172.16.0.250:80": "10.2.0.5:80"})
    nb.db.add_to("Logical_Router", nb.uuid("Logical_Router", "gr1"), "load_balancer", lb)
    step()
    nb.lr_add("lr2", enabled=False)
    step()
    nb.lr_add("lr3")
    step()
    nb.lrp_add("lr3", "lr3-lr1", "00:00:00:00:ff:04", "10.9.0.2/30", peer="lr1-lr3")
    step()
    nb.lrp_add("lr1", "lr1-lr3", "00:00:00:00:ff:05", "10.9.0.1/30", peer="lr3-lr1")
    step()
    nb.ls_add("sw2", other_config={"requested-tnl-key": "77", "interconn-ts": "ts1"})
    step()
    nb.lsp_add("sw2", "vt1", type="vtep",
               options={"vtep-physical-switch": "ps1", "vtep-logical-switch": "ls1",
                        "requested-tnl-key": "9"})
    step()
    nb.lsp_add("sw2", "p21", addresses=["00:00:00:00:02:01 10.2.0.5"],
               options={"mcast_flood": "true", "mcast_flood_reports": "true"})
    step()


# What ovn-northd 23.03.1 wrote for `scenario`.
REAL_PORT_BINDINGS: dict[str, dict[str, Any]] = {
    "cont1": {"datapath": "sw1", "tunnel_key": 3, "options": {"vlan-passthru": "true"},
              "mac": ["00:00:00:00:01:03 10.1.0.13"], "parent_port": "vm1", "tag": 1},
    "cont2": {"datapath": "sw1", "tunnel_key": 4, "options": {"vlan-passthru": "true"},
              "parent_port": "vm1", "tag": 42},
    "cr-lr1-public": {"datapath": "lr1", "tunnel_key": 3, "type": "chassisredirect",
                      "options": {"always-redirect": "true",
                                  "distributed-port": "lr1-public"},
                      "mac": ["00:00:00:00:ff:02 172.16.0.1/24"],
                      "ha_chassis_group": "lr1-public"},
    "dis1": {"datapath": "sw1", "tunnel_key": 10, "options": {"vlan-passthru": "true"},
             "mac": ["unknown"]},
    "ext1": {"datapath": "sw1", "tunnel_key": 7, "type": "external",
             "options": {"vlan-passthru": "true"}, "mac": ["00:00:00:00:01:05 10.1.0.15"],
             "ha_chassis_group": "hagrp1"},
    "gr1-public": {"datapath": "gr1", "tunnel_key": 1, "type": "l3gateway",
                   "options": {"l3gateway-chassis": "gw1", "peer": "public-gr1"},
                   "mac": ["00:00:00:00:ff:03 172.16.0.2/24"]},
    "l2gw1": {"datapath": "sw1", "tunnel_key": 8, "type": "l2gateway",
              "options": {"l2gateway-chassis": "hv1", "network_name": "phys",
                          "vlan-passthru": "true"}},
    "ln-public": {"datapath": "public", "tunnel_key": 1, "type": "localnet",
                  "options": {"network_name": "physnet1"}, "mac": ["unknown"]},
    "lp1": {"datapath": "sw1", "tunnel_key": 5, "type": "localport",
            "options": {"vlan-passthru": "true"}, "mac": ["00:00:00:00:01:04 10.1.0.14"]},
    "lr1-lr3": {"datapath": "lr1", "tunnel_key": 4, "type": "patch",
                "options": {"peer": "lr3-lr1"}, "mac": ["00:00:00:00:ff:05 10.9.0.1/30"]},
    "lr1-public": {"datapath": "lr1", "tunnel_key": 2, "type": "patch",
                   "options": {"chassis-redirect-port": "cr-lr1-public",
                               "peer": "public-lr1"},
                   "mac": ["00:00:00:00:ff:02 172.16.0.1/24"]},
    "lr1-sw1": {"datapath": "lr1", "tunnel_key": 1, "type": "patch",
                "options": {"peer": "sw1-lr1"},
                "mac": ["00:00:00:00:ff:01 10.1.0.1/24 fd01::1/64"]},
    "lr3-lr1": {"datapath": "lr3", "tunnel_key": 1, "type": "patch",
                "options": {"peer": "lr1-lr3"}, "mac": ["00:00:00:00:ff:04 10.9.0.2/30"]},
    "p21": {"datapath": "sw2", "tunnel_key": 10,
            "options": {"mcast_flood": "true", "mcast_flood_reports": "true"},
            "mac": ["00:00:00:00:02:01 10.2.0.5"]},
    "public-gr1": {"datapath": "public", "tunnel_key": 3, "type": "l3gateway",
                   "options": {"l3gateway-chassis": "gw1", "peer": "gr1-public"},
                   "mac": ["router"],
                   "nat_addresses": ["00:00:00:00:ff:03 172.16.0.2",
                                     "00:00:00:00:ff:03 172.16.0.200 172.16.0.250"]},
    "public-lr1": {"datapath": "public", "tunnel_key": 2, "type": "patch",
                   "options": {"peer": "lr1-public"}, "mac": ["router"],
                   "nat_addresses": [
                       '00:00:00:00:ff:02 172.16.0.1 is_chassis_resident("cr-lr1-public")',
                       '00:00:00:00:ff:02 172.16.0.100 is_chassis_resident("cr-lr1-public")']},
    "rem1": {"datapath": "sw1", "tunnel_key": 9, "type": "remote",
             "options": {"requested-chassis": "gw2", "vlan-passthru": "true"},
             "requested_chassis": "gw2"},
    "sw1-lr1": {"datapath": "sw1", "tunnel_key": 11, "type": "patch",
                "options": {"peer": "lr1-sw1"}, "mac": ["router"]},
    "virt1": {"datapath": "sw1", "tunnel_key": 6, "type": "virtual",
              "options": {"virtual-ip": "10.1.0.100", "virtual-parents": "vm1,vm2",
                          "vlan-passthru": "true"}},
    "vm1": {"datapath": "sw1", "tunnel_key": 1,
            "options": {"requested-chassis": "host1.example,gw1,nosuch",
                        "vlan-passthru": "true"},
            "mac": ["00:00:00:00:01:01 10.1.0.11"],
            "port_security": ["00:00:00:00:01:01 10.1.0.11"],
            "external_ids": {"name": "port-vm1", "neutron:port_name": "port-vm1"},
            "requested_chassis": "hv1", "requested_additional_chassis": ["gw1"]},
    "vm2": {"datapath": "sw1", "tunnel_key": 2,
            "options": {"qos_max_rate": "1000", "vlan-passthru": "true"},
            "mac": ["00:00:00:00:01:02", "unknown"]},
    "vt1": {"datapath": "sw2", "tunnel_key": 9, "type": "vtep",
            "options": {"requested-tnl-key": "9", "vtep-logical-switch": "ls1",
                        "vtep-physical-switch": "ps1"}},
}

REAL_MULTICAST_GROUPS: dict[str, list[Any]] = {
    "public _MC_flood": [32768, ["ln-public", "public-gr1", "public-lr1"]],
    "public _MC_flood_l2": [32772, ["ln-public"]],
    "public _MC_unknown": [32769, ["ln-public"]],
    "sw1 _MC_flood": [32768, ["cont1", "cont2", "ext1", "l2gw1", "lp1", "rem1", "sw1-lr1",
                              "virt1", "vm1", "vm2"]],
    "sw1 _MC_flood_l2": [32772, ["cont1", "cont2", "ext1", "l2gw1", "lp1", "rem1", "virt1",
                                 "vm1", "vm2"]],
    "sw1 _MC_unknown": [32769, ["vm2"]],
    "sw2 _MC_flood": [32768, ["p21", "vt1"]],
    "sw2 _MC_flood_l2": [32772, ["p21", "vt1"]],
    "sw2 _MC_mrouter_flood": [32770, ["p21"]],
    "sw2 _MC_static": [32771, ["p21"]],
}


@pytest.fixture
def built(nb: Nb, sb: LocalDb) -> LocalDb:
    scenario(nb, sb)
    return sb


def test_port_bindings_equal_real_northd(nb: Nb, built: LocalDb) -> None:
    uuids = {r.logical_port: r.uuid for r in built.tables["Port_Binding"].rows.values()}
    assert run_core(nb.db, built) == [0]  # nothing left to write, no binding replaced
    assert {r.logical_port: r.uuid for r in built.tables["Port_Binding"].rows.values()} == uuids
    got = port_bindings(built)
    assert sorted(got) == sorted(REAL_PORT_BINDINGS)
    for name, expected in REAL_PORT_BINDINGS.items():
        assert got[name] == expected, name


def test_multicast_groups_equal_real_northd(built: LocalDb) -> None:
    assert multicast_groups(built) == REAL_MULTICAST_GROUPS


def test_claims_are_kept_and_turn_nb_up_and_ref_chassis(nb: Nb, built: LocalDb) -> None:
    """Observed on the real northd after `ovn-sbctl lsp-bind vm1 hv1` and `lsp-bind p21
    gw2` on `scenario`: vm1 and p21 up (and router ports up), the distributed gateway
    port's two-chassis group referenced by hv1 (vm1's switch reaches lr1; p21's switch
    has no router), the claims untouched."""
    rows = {r.logical_port: r for r in built.tables["Port_Binding"].rows.values()}
    assert all(r.up is False for r in rows.values())
    chassis = {c.name: c for c in built.tables["Chassis"].rows.values()}
    built.update("Port_Binding", rows["vm1"].uuid, chassis=chassis["hv1"].uuid, up=True)
    built.update("Port_Binding", rows["p21"].uuid, chassis=chassis["gw2"].uuid, up=True)
    run_core(nb.db, built)
    assert run_core(nb.db, built) == [0]
    rows = {r.logical_port: r for r in built.tables["Port_Binding"].rows.values()}
    assert (rows["vm1"].chassis.name, rows["vm1"].up) == ("hv1", True)
    groups = {g.name: sorted(c.name for c in g.ref_chassis)
              for g in built.tables["HA_Chassis_Group"].rows.values()}
    assert groups == {"lr1-public": ["hv1"], "hagrp1": []}
    up = {r.name: r.up for r in nb.db.tables["Logical_Switch_Port"].rows.values()}
    assert {n for n, v in up.items() if v} == {"vm1", "p21", "sw1-lr1", "public-lr1",
                                              "public-gr1"}
    assert all(v is False for n, v in up.items() if n not in {"vm1", "p21", "sw1-lr1",
                                                              "public-lr1", "public-gr1"})


def test_port_up_notif_waits_for_the_binding_up(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("sw")
    nb.lsp_add("sw", "p")
    hv = add_chassis(sb, "hv", "192.168.0.9", other_config={"port-up-notif": "true"})
    run_core(nb.db, sb)
    pb = next(iter(sb.tables["Port_Binding"].rows.values()))
    sb.update("Port_Binding", pb.uuid, chassis=hv)
    run_core(nb.db, sb)
    lsp = next(iter(nb.db.tables["Logical_Switch_Port"].rows.values()))
    assert lsp.up is False
    sb.update("Port_Binding", pb.uuid, up=True)
    run_core(nb.db, sb)
    lsp = next(iter(nb.db.tables["Logical_Switch_Port"].rows.values()))
    assert lsp.up is True
    sb.update("Port_Binding", pb.uuid, chassis=[])
    run_core(nb.db, sb)
    lsp = next(iter(nb.db.tables["Logical_Switch_Port"].rows.values()))
    assert lsp.up is False


def test_nested_container_tag_is_written_back_to_nb(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("sw")
    nb.lsp_add("sw", "vm")
    nb.lsp_add("sw", "c1", parent_name="vm", tag_request=0)
    nb.lsp_add("sw", "c2", parent_name="vm", tag_request=0)
    nb.lsp_add("sw", "c3", parent_name="vm", tag_request=7)
    run_core(nb.db, sb)
    lsps = {r.name: r for r in nb.db.tables["Logical_Switch_Port"].rows.values()}
    assert (lsps["c1"].tag, lsps["c2"].tag, lsps["c3"].tag) == (1, 2, 7)
    tags = {r.logical_port: r.tag for r in sb.tables["Port_Binding"].rows.values()}
    assert tags == {"vm": None, "c1": 1, "c2": 2, "c3": 7}


def test_port_keys_follow_the_highest_and_requests_displace(nb: Nb, sb: LocalDb) -> None:
    """Observed: p1..p3 get 1..3; after p2 goes, p4 gets 4 (not 2); p1 asking for 3
    takes it and p3 moves past the highest key in use (5)."""
    nb.ls_add("sa")
    for p in ("p1", "p2", "p3"):
        nb.lsp_add("sa", p)
        run_core(nb.db, sb)
    nb.db.transact([{"op": "mutate", "table": "Logical_Switch", "where": [],
                     "mutations": [["ports", "delete",
                                    ["uuid", nb.uuid("Logical_Switch_Port", "p2")]]]}])
    run_core(nb.db, sb)
    nb.lsp_add("sa", "p4")
    run_core(nb.db, sb)
    keys = {r.logical_port: r.tunnel_key for r in sb.tables["Port_Binding"].rows.values()}
    assert keys == {"p1": 1, "p3": 3, "p4": 4}
    nb.set("Logical_Switch_Port", "p1", options={"requested-tnl-key": "3"})
    run_core(nb.db, sb)
    keys = {r.logical_port: r.tunnel_key for r in sb.tables["Port_Binding"].rows.values()}
    assert keys == {"p1": 3, "p3": 5, "p4": 4}


@pytest.mark.parametrize("indexed", [True, False])
def test_chassis_asked_for_found_by_name_then_hostname(sb: LocalDb, indexed: bool) -> None:
    """`requested-chassis` names a chassis by name, else by hostname; where hostnames
    repeat the first chassis by UUID has it. The same through the replica's indexes
    (the daemon's graph asks for them) and through a walk of the table."""
    from pyovsdb.northd.build.ports_router import (
        CHASSIS_BY_HOST,
        CHASSIS_BY_NAME,
        ChassisLookup,
    )

    made = {name: add_chassis(sb, name, f"192.0.2.{i}", hostname=host)
            for i, (name, host) in enumerate([("ch-a", "host1"), ("ch-b", "host1"),
                                              ("ch-c", "ch-a"), ("ch-d", "")], 1)}
    table = sb.tables["Chassis"]
    if indexed:
        for name in (CHASSIS_BY_NAME, CHASSIS_BY_HOST):
            table.add_index(name, name)
    lookup = ChassisLookup(sb.tables)
    found = {name: (row.name if row is not None else None)
             for name in ("ch-a", "ch-d", "host1", "", "nowhere")
             for row in [lookup.find(name)]}
    first_host1 = min((made["ch-a"], "ch-a"), (made["ch-b"], "ch-b"))[1]
    assert found == {"ch-a": "ch-a", "ch-d": "ch-d", "host1": first_host1, "": None,
                     "nowhere": None}
