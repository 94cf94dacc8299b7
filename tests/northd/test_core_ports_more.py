"""More Port_Binding cases as the real ovn-northd 23.03 wrote them for the same NB (and
SB claim) transactions: QoS queue ids per chassis, a port turned virtual (recreated,
new key), a port moved to another switch, mirrors, a bridged distributed gateway port
with distributed NAT, literal and "router" nat-addresses (with and without LB VIPs),
reside-on-redirect-chassis, multicast relay and flood, a router port with a bad MAC."""

from __future__ import annotations

from typing import Any

from pyovsdb.northd.testing import (
    LocalDb,
    Nb,
    add_chassis,
    multicast_groups,
    port_bindings,
    run_core,
)


def scenario(nb: Nb, sb: LocalDb) -> None:
    def step() -> None:
        run_core(nb.db, sb)

    def bind(port: str, chassis: str) -> None:
        """`ovn-sbctl lsp-bind`: chassis and up."""
        pb = next(r for r in sb.tables["Port_Binding"].rows.values()
                  if r.logical_port == port)
        ch = next(c for c in sb.tables["Chassis"].rows.values() if c.name == chassis)
        sb.update("Port_Binding", pb.uuid, chassis=ch.uuid, up=True)
        step()

    add_chassis(sb, "hv1", "192.168.0.1")
    add_chassis(sb, "gw1", "192.168.0.2")
    mir1 = nb.db.insert("Mirror", name="mir1", type="gre", index=7, filter="to-lport",
                        sink="10.0.0.9")
    step()
    mir2 = nb.db.insert("Mirror", name="mir2", type="erspan", index=8,
                        filter="from-lport", sink="10.0.0.10")
    step()
    nb.ls_add("sw1")
    step()
    a1 = nb.lsp_add("sw1", "a1", addresses=["00:00:00:00:0a:01 10.1.0.5"])
    step()
    nb.db.add_to("Logical_Switch_Port", a1, "mirror_rules", mir1)
    step()
    nb.db.add_to("Logical_Switch_Port", a1, "mirror_rules", mir2)
    step()
    nb.lsp_add("sw1", "a2", options={"qos_max_rate": "100", "qos_burst": "10"})
    step()
    nb.lsp_add("sw1", "a3", options={"qos_max_rate": "200"})
    step()
    bind("a2", "hv1")
    bind("a3", "hv1")
    nb.set("Logical_Switch_Port", "a1", type="virtual")
    step()
    nb.lsp_add("sw1", "a4", addresses=["00:00:00:00:0a:04"])
    step()
    nb.lsp_add("sw1", "a5", parent_name="a4", tag_request=7)
    step()
    nb.set("Logical_Switch_Port", "a5", type="")
    step()
    nb.ls_add("sw2")
    step()
    sw1 = nb.uuid("Logical_Switch", "sw1")
    nb.db.transact([
        {"op": "mutate", "table": "Logical_Switch", "where": [["_uuid", "==", ["uuid", sw1]]],
         "mutations": [["ports", "delete", ["uuid", nb.uuid("Logical_Switch_Port", "a4")]]]},
        {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "a4",
         "row": {"name": "a4", "addresses": "00:00:00:00:0a:04"}},
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw2"]],
         "mutations": [["ports", "insert", ["named-uuid", "a4"]]]}])
    step()
    nb.lr_add("lr1", options={"mcast_relay": "true"})
    step()
    nb.lrp_add("lr1", "lr1-sw1", "00:00:00:00:ff:01", "10.1.0.1/24",
               options={"mcast_flood": "true"})
    step()
    nb.lsp_add("sw1", "sw1-lr1", type="router", addresses=["router"],
               options={"router-port": "lr1-sw1"})
    step()
    nb.ls_add("ext")
    step()
    nb.lsp_add("ext", "ext-ln", type="localnet", addresses=["unknown"],
               options={"network_name": "phys", "qos_max_rate": "300"})
    step()
    nb.lrp_add("lr1", "lr1-ext", "00:00:00:00:ff:02", "172.16.0.1/24",
               options={"redirect-type": "bridged"})
    step()
    nb.add_child("Logical_Router_Port", "lr1-ext", "gateway_chassis", "Gateway_Chassis",
                 name="lr1-ext-gw1", chassis_name="gw1", priority=5)
    step()
    nb.lsp_add("ext", "ext-lr1", type="router", addresses=["router"],
               options={"router-port": "lr1-ext",
                        "nat-addresses": "00:00:00:00:ff:02 172.16.0.50"})
    step()
    nb.add_child("Logical_Router", "lr1", "nat", "NAT", type="dnat_and_snat",
                 external_ip="172.16.0.60", logical_ip="10.1.0.5", logical_port="a1",
                 external_mac="00:00:00:00:0a:99")
    step()
    lb = nb.db.insert("Load_Balancer", name="lbx", protocol="tcp",
                      vips={"172.16.0.70": "10.1.0.5"})
    nb.db.add_to("Logical_Router", nb.uuid("Logical_Router", "lr1"), "load_balancer", lb)
    step()
    nb.lrp_add("lr1", "lr1-sw2", "00:00:00:00:ff:03", "10.2.0.1/24",
               options={"reside-on-redirect-chassis": "true"})
    step()
    nb.lsp_add("sw2", "sw2-lr1", type="router", addresses=["router"],
               options={"router-port": "lr1-sw2", "nat-addresses": "router"})
    step()
    nb.set("Logical_Switch_Port", "ext-lr1",
           options={"router-port": "lr1-ext", "nat-addresses": "router",
                    "exclude-lb-vips-from-garp": "true"})
    step()
    nb.lrp_add("lr1", "lr1-bad", "zz", "10.3.0.1/24")
    step()
    nb.lsp_add("sw2", "dup1")
    nb.lsp_add("sw1", "dup1x")
    step()
    nb.db.delete("Mirror", mir2)
    step()


REAL_PORT_BINDINGS: dict[str, dict[str, Any]] = {
    "a1": {"datapath": "sw1", "tunnel_key": 4, "type": "virtual",
           "mac": ["00:00:00:00:0a:01 10.1.0.5"], "mirror_rules": ["mir1"]},
    "a2": {"datapath": "sw1", "tunnel_key": 2,
           "options": {"qdisc_queue_id": "1", "qos_burst": "10", "qos_max_rate": "100"}},
    "a3": {"datapath": "sw1", "tunnel_key": 3,
           "options": {"qdisc_queue_id": "2", "qos_max_rate": "200"}},
    "a4": {"datapath": "sw2", "tunnel_key": 1, "mac": ["00:00:00:00:0a:04"]},
    "a5": {"datapath": "sw1", "tunnel_key": 6, "parent_port": "a4", "tag": 7},
    "cr-lr1-ext": {"datapath": "lr1", "tunnel_key": 3, "type": "chassisredirect",
                   "options": {"distributed-port": "lr1-ext", "redirect-type": "bridged"},
                   "mac": ["00:00:00:00:ff:02 172.16.0.1/24"], "ha_chassis_group": "lr1-ext"},
    "dup1": {"datapath": "sw2", "tunnel_key": 3},
    "dup1x": {"datapath": "sw1", "tunnel_key": 8},
    "ext-ln": {"datapath": "ext", "tunnel_key": 1, "type": "localnet",
               "options": {"network_name": "phys", "qdisc_queue_id": "1",
                           "qos_max_rate": "300"},
               "mac": ["unknown"]},
    "ext-lr1": {"datapath": "ext", "tunnel_key": 2, "type": "patch",
                "options": {"peer": "lr1-ext"}, "mac": ["router"],
                "nat_addresses": [
                    '00:00:00:00:0a:99 172.16.0.60 is_chassis_resident("a1")',
                    '00:00:00:00:ff:02 172.16.0.1 is_chassis_resident("cr-lr1-ext")']},
    "lr1-ext": {"datapath": "lr1", "tunnel_key": 2, "type": "patch",
                "options": {"chassis-redirect-port": "cr-lr1-ext", "peer": "ext-lr1"},
                "mac": ["00:00:00:00:ff:02 172.16.0.1/24"]},
    "lr1-sw1": {"datapath": "lr1", "tunnel_key": 1, "type": "patch",
                "options": {"peer": "sw1-lr1"}, "mac": ["00:00:00:00:ff:01 10.1.0.1/24"]},
    "lr1-sw2": {"datapath": "lr1", "tunnel_key": 4, "type": "patch",
                "options": {"peer": "sw2-lr1"}, "mac": ["00:00:00:00:ff:03 10.2.0.1/24"]},
    "sw1-lr1": {"datapath": "sw1", "tunnel_key": 7, "type": "patch",
                "options": {"peer": "lr1-sw1"}, "mac": ["router"]},
    "sw2-lr1": {"datapath": "sw2", "tunnel_key": 2, "type": "patch",
                "options": {"peer": "lr1-sw2"}, "mac": ["router"],
                "nat_addresses": [
                    '00:00:00:00:0a:99 172.16.0.60 is_chassis_resident("a1")',
                    '00:00:00:00:ff:03 10.2.0.1 is_chassis_resident("cr-lr1-ext")',
                    "00:00:00:00:ff:03 172.16.0.70"]},
}

REAL_MULTICAST_GROUPS: dict[str, list[Any]] = {
    "ext _MC_flood": [32768, ["ext-ln", "ext-lr1"]],
    "ext _MC_flood_l2": [32772, ["ext-ln"]],
    "ext _MC_mrouter_flood": [32770, ["ext-lr1"]],
    "ext _MC_unknown": [32769, ["ext-ln"]],
    "lr1 _MC_static": [32771, ["lr1-sw1"]],
    "sw1 _MC_flood": [32768, ["a1", "a2", "a3", "a5", "dup1x", "sw1-lr1"]],
    "sw1 _MC_flood_l2": [32772, ["a1", "a2", "a3", "a5", "dup1x"]],
    "sw1 _MC_mrouter_flood": [32770, ["sw1-lr1"]],
    "sw2 _MC_flood": [32768, ["a4", "dup1", "sw2-lr1"]],
    "sw2 _MC_flood_l2": [32772, ["a4", "dup1"]],
    "sw2 _MC_mrouter_flood": [32770, ["sw2-lr1"]],
}


def test_more_port_bindings_equal_real_northd(nb: Nb, sb: LocalDb) -> None:
    scenario(nb, sb)
    got = port_bindings(sb)
    assert sorted(got) == sorted(REAL_PORT_BINDINGS)
    for name, expected in REAL_PORT_BINDINGS.items():
        assert {k: v for k, v in got[name].items() if k != "mirror_rules"} == \
            {k: v for k, v in expected.items() if k != "mirror_rules"}, name
    assert got["a1"].get("mirror_rules") == ["mir1"]
    assert multicast_groups(sb) == REAL_MULTICAST_GROUPS
    mirrors = [(m.name, m.filter, m.sink, m.type, m.index)
               for m in sb.tables["Mirror"].rows.values()]
    assert mirrors == [("mir1", "to-lport", "10.0.0.9", "gre", 7)]


def test_binding_recreated_when_port_turns_virtual_or_moves(nb: Nb, sb: LocalDb) -> None:
    """23.03 deletes the binding and inserts a new one: the claim does not carry over."""
    hv = add_chassis(sb, "hv1", "192.168.0.1")
    nb.ls_add("sw1")
    nb.ls_add("sw2")
    nb.lsp_add("sw1", "v")
    nb.lsp_add("sw1", "m")
    run_core(nb.db, sb)
    before = {r.logical_port: r for r in sb.tables["Port_Binding"].rows.values()}
    for row in before.values():
        sb.update("Port_Binding", row.uuid, chassis=hv, up=True)
    nb.set("Logical_Switch_Port", "v", type="virtual")
    nb.db.transact([
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw1"]],
         "mutations": [["ports", "delete", ["uuid", nb.uuid("Logical_Switch_Port", "m")]]]},
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw2"]],
         "mutations": [["ports", "insert", ["uuid", nb.uuid("Logical_Switch_Port", "m")]]]}])
    run_core(nb.db, sb)
    after = {r.logical_port: r for r in sb.tables["Port_Binding"].rows.values()}
    for name in ("v", "m"):
        assert after[name].uuid != before[name].uuid
        assert after[name].chassis is None and after[name].up is False
    assert (after["v"].tunnel_key, after["v"].type) == (1, "virtual")  # sw1 has no other
    assert (after["m"].tunnel_key, after["m"].datapath.external_ids["name"]) == (1, "sw2")
    assert run_core(nb.db, sb) == [0]


def test_router_port_ipv6_options_equal_real_northd(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("sw0", other_config={"vlan-passthru": "true"})
    nb.lsp_add("sw0", "vm0", addresses=["00:00:00:00:00:01 fd00::10"])
    nb.lr_add("lr0")
    nb.connect("sw0", "lr0", "lr0-sw0", "00:00:00:00:ff:01", "10.0.0.1/24", "fd00::1/64")
    nb.set("Logical_Router_Port", "lr0-sw0", ipv6_ra_configs={
        "address_mode": "slaac", "send_periodic": "true", "max_interval": "60",
        "min_interval": "30", "mtu": "1400", "rdnss": "fd00::53", "dnssl": "ovn.org",
        "router_preference": "HIGH"},
        options={"prefix_delegation": "true", "prefix": "true"})
    nb.lrp_add("lr0", "lr0-b", "00:00:00:00:ff:02", "fd01::1/64", "fe80::5/64",
               ipv6_ra_configs={"address_mode": "dhcpv6_stateful", "send_periodic": "true",
                                "max_interval": "5", "mtu": "1000",
                                "router_preference": "bogus",
                                "route_info": "HIGH-fd02::/64"})
    nb.ls_add("swb")
    nb.lsp_add("swb", "swb-lr0", type="router", addresses=["router"],
               options={"router-port": "lr0-b"})
    run_core(nb.db, sb)
    nb.set("Logical_Router_Port", "lr0-b", options={"prefix": "true"}, enabled=False)
    run_core(nb.db, sb)
    pb = next(r for r in sb.tables["Port_Binding"].rows.values()
              if r.logical_port == "lr0-sw0")
    sb.update("Port_Binding", pb.uuid, options={**pb.options,
                                                "ipv6_ra_pd_list": "1:2001:db8:1::/64"})
    run_core(nb.db, sb)
    nb.set("Logical_Router_Port", "lr0-sw0", ipv6_ra_configs={
        "address_mode": "slaac", "send_periodic": "true", "max_interval": "60",
        "min_interval": "1", "mtu": "1400", "rdnss": "fd00::53", "dnssl": "ovn.org",
        "router_preference": "HIGH"})
    run_core(nb.db, sb)
    options = {r.logical_port: r.options for r in sb.tables["Port_Binding"].rows.values()}
    assert options["lr0-b"] == {
        "ipv6_ra_address_mode": "dhcpv6_stateful", "ipv6_ra_max_interval": "5",
        "ipv6_ra_min_interval": "3", "ipv6_ra_prefixes": "fd01::/64", "ipv6_ra_prf": "MEDIUM",
        "ipv6_ra_route_info": "HIGH-fd02::/64", "ipv6_ra_send_periodic": "true",
        "ipv6_ra_src_addr": "fe80::200:ff:fe00:ff02", "ipv6_ra_src_eth": "00:00:00:00:ff:02",
        "peer": "swb-lr0"}
    assert options["lr0-sw0"] == {
        "ipv6_prefix": "true", "ipv6_prefix_delegation": "true",
        "ipv6_ra_address_mode": "slaac", "ipv6_ra_dnssl": "ovn.org",
        "ipv6_ra_max_interval": "60", "ipv6_ra_min_interval": "3", "ipv6_ra_mtu": "1400",
        "ipv6_ra_pd_list": "1:2001:db8:1::/64",
        "ipv6_ra_prefixes": "fd00::/64 1:2001:db8:1::/64", "ipv6_ra_prf": "HIGH",
        "ipv6_ra_rdnss": "fd00::53", "ipv6_ra_send_periodic": "true",
        "ipv6_ra_src_addr": "fe80::200:ff:fe00:ff01", "ipv6_ra_src_eth": "00:00:00:00:ff:01",
        "peer": "sw0-lr0-sw0"}  # the peer name connect() gives (nbctl script: sw0-lr0)
    prefixes = {r.name: r.ipv6_prefix
                for r in nb.db.tables["Logical_Router_Port"].rows.values()}
    assert prefixes == {"lr0-sw0": ["2001:db8:1::/64"], "lr0-b": []}


def test_two_switch_ports_naming_one_router_port(nb: Nb, sb: LocalDb) -> None:
    """Observed: the router port's peer is sw0-lr0, the later of the two in 23.03's walk
    of its port table (by name hash), not the first created; both switch ports say
    peer=lr0-sw0. A router-type port naming a missing port keeps its peer option."""
    nb.lr_add("lr0")
    nb.lr_add("lr1")
    nb.lrp_add("lr0", "lr0-lr1", "00:00:00:00:ff:01", "169.254.0.1/30", peer="lr1-lr0")
    nb.lrp_add("lr1", "lr1-lr0", "00:00:00:00:ff:02", "169.254.0.2/30", peer="lr0-lr1")
    nb.ls_add("sw0")
    nb.lsp_add("sw0", "sw0-nowhere", type="router", addresses=["router"],
               options={"router-port": "missing"})
    run_core(nb.db, sb)
    nb.lrp_add("lr0", "lr0-sw0", "00:00:00:00:ff:03", "10.0.0.1/24")
    run_core(nb.db, sb)
    nb.lsp_add("sw0", "sw0-lr0", type="router", addresses=["router"],
               options={"router-port": "lr0-sw0"})
    run_core(nb.db, sb)
    nb.ls_add("sw1")
    nb.lsp_add("sw1", "sw1-lr0", type="router", addresses=["router"],
               options={"router-port": "lr0-sw0"})
    run_core(nb.db, sb)
    options = {r.logical_port: r.options for r in sb.tables["Port_Binding"].rows.values()}
    assert options["lr0-sw0"] == {"peer": "sw0-lr0"}
    assert options["sw0-lr0"] == options["sw1-lr0"] == {"peer": "lr0-sw0"}
    assert options["sw0-nowhere"] == {"peer": "missing"}
    assert options["lr0-lr1"] == {"peer": "lr1-lr0"}


def test_mac_bindings_of_gone_ports_and_datapaths_are_deleted(nb: Nb, sb: LocalDb) -> None:
    """Observed: a MAC binding naming no port stays until some port binding goes; those
    of a deleted router go with it (their strong reference would block its deletion)."""
    nb.lr_add("lr0")
    nb.lrp_add("lr0", "lr0-a", "00:00:00:00:ff:01", "10.0.0.1/24")
    nb.lrp_add("lr0", "lr0-b", "00:00:00:00:ff:02", "10.1.0.1/24")
    nb.lr_add("lr1")
    nb.lrp_add("lr1", "lr1-a", "00:00:00:00:ff:03", "10.2.0.1/24")
    nb.ls_add("sw")
    nb.lsp_add("sw", "p1")
    nb.lsp_add("sw", "p2")
    run_core(nb.db, sb)
    dps = {r.external_ids["name"]: r.uuid for r in sb.tables["Datapath_Binding"].rows.values()}
    for port, ip, dp in (("lr0-a", "10.0.0.5", "lr0"), ("ghost", "10.0.0.6", "lr0"),
                         ("lr1-a", "10.2.0.5", "lr1"), ("lr0-b", "10.1.0.5", "lr0")):
        sb.insert("MAC_Binding", logical_port=port, ip=ip, mac="00:00:00:00:00:05",
                  datapath=dps[dp])

    def macs() -> list[str]:
        return sorted(r.logical_port for r in sb.tables["MAC_Binding"].rows.values())

    run_core(nb.db, sb)
    assert macs() == ["ghost", "lr0-a", "lr0-b", "lr1-a"]
    nb.db.transact([{"op": "mutate", "table": "Logical_Switch", "where": [],
                     "mutations": [["ports", "delete",
                                    ["uuid", nb.uuid("Logical_Switch_Port", "p2")]]]}])
    run_core(nb.db, sb)
    assert macs() == ["lr0-a", "lr0-b", "lr1-a"]
    nb.db.delete("Logical_Router", nb.uuid("Logical_Router", "lr1"))
    run_core(nb.db, sb)
    assert macs() == ["lr0-a", "lr0-b"]
    assert sorted(r.external_ids["name"] for r in sb.tables["Datapath_Binding"].rows.values()) \
        == ["lr0", "sw"]


def test_static_mac_bindings_equal_real_northd(nb: Nb, sb: LocalDb) -> None:
    nb.lr_add("lr0")
    nb.lrp_add("lr0", "lr0-a", "00:00:00:00:ff:01", "10.0.0.1/24")
    nb.ls_add("sw")
    nb.lsp_add("sw", "p1")
    run_core(nb.db, sb)
    smb = nb.db.insert("Static_MAC_Binding", logical_port="lr0-a", ip="10.0.0.5",
                       mac="00:00:00:00:00:05")
    run_core(nb.db, sb)
    for port, ip in (("p1", "10.0.0.6"), ("nothere", "10.0.0.7")):  # no router port
        nb.db.insert("Static_MAC_Binding", logical_port=port, ip=ip, mac="00:00:00:00:00:06")
        run_core(nb.db, sb)
    nb.db.update("Static_MAC_Binding", smb, mac="00:00:00:00:00:55", override_dynamic_mac=True)
    run_core(nb.db, sb)
    nb.lrp_add("lr0", "lr0-b", "00:00:00:00:ff:02", "10.1.0.1/24")
    b = nb.db.insert("Static_MAC_Binding", logical_port="lr0-b", ip="10.1.0.5",
                     mac="00:00:00:00:00:15")
    run_core(nb.db, sb)
    assert len(sb.tables["Static_MAC_Binding"].rows) == 2
    nb.db.delete("Static_MAC_Binding", b)
    run_core(nb.db, sb)
    rows = [(r.logical_port, r.ip, r.mac, r.override_dynamic_mac, r.datapath.external_ids["name"])
            for r in sb.tables["Static_MAC_Binding"].rows.values()]
    assert rows == [("lr0-a", "10.0.0.5", "00:00:00:00:00:55", True, "lr0")]


def test_fdb_entries_of_gone_keys_are_deleted(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("sw")
    nb.lsp_add("sw", "p1")
    nb.lsp_add("sw", "p2")
    run_core(nb.db, sb)
    for port_key in (1, 2):
        sb.insert("FDB", mac=f"00:00:00:00:00:0{port_key}", dp_key=1, port_key=port_key)
    sb.insert("FDB", mac="00:00:00:00:00:09", dp_key=9, port_key=1)
    run_core(nb.db, sb)
    assert sorted((r.dp_key, r.port_key) for r in sb.tables["FDB"].rows.values()) == \
        [(1, 1), (1, 2)]
    nb.db.transact([{"op": "mutate", "table": "Logical_Switch", "where": [],
                     "mutations": [["ports", "delete",
                                    ["uuid", nb.uuid("Logical_Switch_Port", "p2")]]]}])
    run_core(nb.db, sb)
    assert sorted((r.dp_key, r.port_key) for r in sb.tables["FDB"].rows.values()) == [(1, 1)]
