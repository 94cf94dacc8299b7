"""The destination lookup of a switch (`lflows.ls_l2`, `ls_rport_arp`, `ls_mcast`) and
its forwarding-group flows, built from in-memory databases: which address gets which
unicast flow, where ARP/ND for a router's addresses goes, the multicast flows of
snooping, relay and learnt groups, and the meters they carry."""

from __future__ import annotations

from typing import Any

from pyovsdb.northd.build.ports_addresses import parse_mac as scan_mac
from pyovsdb.northd.lflows.stages import Stage
from pyovsdb.northd.lflows.table import Flow, LflowTable
from pyovsdb.northd.testing import LocalDb, Nb, add_chassis, build_flows, run_core

L2 = Stage.LS_IN_L2_LKUP
Line = tuple[int, str, str]
FLOOD_L2 = 'outport = "_MC_flood_l2"; output;'


def flows(table: LflowTable, dp_key: str, stage: Stage = L2) -> list[Flow]:
    return [f for f in table.on(dp_key) if f.key.stage is stage]


def lines(table: LflowTable, dp_key: str, *priorities: int) -> set[Line]:
    return {(f.key.priority, f.key.match, f.key.actions) for f in flows(table, dp_key)
            if not priorities or f.key.priority in priorities}


def owned(table: LflowTable, owner: Any) -> set[Line]:
    return {(k.priority, k.match, k.actions) for k, _ in table.owners.get(owner, [])
            if k.stage is L2}


def to(port: str) -> str:
    return f'outport = "{port}"; output;'


def test_scan_mac_reads_a_leading_mac_as_ovs_scan_does() -> None:
    assert scan_mac("00:00:00:00:00:01 10.0.0.1") == 1
    assert scan_mac("0A:0:0:0:0:2 dynamic") == (0x0A << 40) | 2
    assert scan_mac("00:00:00:00:00:05 not-an-ip") == 5
    assert scan_mac("0x1:0:0:0:0:0") == 1 << 40
    for text in ("dynamic", "unknown", "router", "00:00:00:00:01", ""):
        assert scan_mac(text) is None


def test_every_switch_has_the_svc_check_and_the_flood(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    table = build_flows(nb.db, sb)
    assert lines(table, sw, 110, 70) == {
        (110, "eth.dst == $svc_monitor_mac && (tcp || icmp || icmp6)",
         "handle_svc_check(inport);"),
        (70, "eth.mcast", 'outport = "_MC_flood"; output;')}
    assert lines(table, sw, 100, 90, 85, 80, 75, 50) == set()


def test_unicast_flow_per_address_kind(nb: Nb, sb: LocalDb) -> None:
    nb.db.insert("NB_Global", options={"mac_prefix": "0a:00:00"})
    sw = nb.ls_add("sw0", other_config={"mac_only": "true"})
    nb.lsp_add("sw0", "vm1", addresses=["00:00:00:00:00:01 10.0.0.1",
                                       "00:00:00:00:01:01 fd00::1"])
    nb.lsp_add("sw0", "vm2", addresses=["0A:00:00:00:00:02 dynamic", "unknown"])
    nb.lsp_add("sw0", "vm3", addresses=["dynamic"])
    nb.lsp_add("sw0", "off", addresses=["00:00:00:00:00:04"], enabled=False)
    nb.lsp_add("sw0", "ext", type="external", addresses=["00:00:00:00:00:05 10.0.0.5"])
    table = build_flows(nb.db, sb)
    unicast = lines(table, sw, 50)
    assert (50, "eth.dst == 00:00:00:00:00:01", to("vm1")) in unicast
    assert (50, "eth.dst == 00:00:00:00:01:01", to("vm1")) in unicast
    assert (50, "eth.dst == 0a:00:00:00:00:02", to("vm2")) in unicast
    assert (50, "eth.dst == 00:00:00:00:00:04", "drop;") in unicast
    assert not [m for _, m, _ in unicast if m.endswith(":05")]  # external: none
    (vm3,) = owned(table, ("port", "vm3"))  # the MAC IPAM picked
    assert vm3[2] == to("vm3") and vm3[1].startswith("eth.dst == 0a:00:00:")
    assert len(unicast) == 5


def test_arp_nd_for_router_addresses(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    nb.lsp_add("sw0", "vm", addresses=["00:00:00:00:00:01 10.0.0.10"])
    nb.lr_add("lr0")
    nb.connect("sw0", "lr0", "lr0-sw0", "00:00:00:00:ff:01", "10.0.0.1/24")
    only = nb.ls_add("transit")
    nb.connect("transit", "lr0", "lr0-transit", "00:00:00:00:ff:02", "20.0.0.1/24")
    lr = nb.uuid("Logical_Router", "lr0")
    for ext, kind, mac in (("20.0.0.100", "snat", None), ("20.0.0.110", "dnat", None),
                           ("30.0.0.1", "dnat_and_snat", "00:00:00:00:aa:01")):
        cols: dict[str, Any] = {"type": kind, "external_ip": ext, "logical_ip": "10.0.0.10"}
        if mac:
            cols.update(external_mac=mac, logical_port="vm")
        nb.add_child("Logical_Router", "lr0", "nat", "NAT", **cols)
    lb = nb.db.insert("Load_Balancer", name="lb", vips={"10.0.0.200:80": "10.0.0.10:80",
                                                        "20.0.0.110:80": "10.0.0.10:80"})
    nb.db.update("Logical_Router", lr, load_balancer=[lb])
    table = build_flows(nb.db, sb)
    flood = 'clone {outport = "sw0-lr0-sw0"; output; }; ' + FLOOD_L2

    def arp(ip: str) -> str:
        return f"flags[1] == 0 && arp.op == 1 && arp.tpa == {ip}"

    lla = "flags[1] == 0 && nd_ns && nd.target == fe80::200:ff:fe00:ff01"
    assert lines(table, sw, 80, 75) == {
        (80, arp("10.0.0.1"), flood), (80, lla, flood),
        (80, arp("10.0.0.200"), flood),  # a VIP in the port's network
        (80, arp("30.0.0.1"), flood),  # NAT: anywhere, unless it is a VIP (20.0.0.110)
        (75, "eth.src == {00:00:00:00:ff:01, 00:00:00:00:aa:01} && "
         "(arp.op == 1 || rarp.op == 3 || nd_ns)", FLOOD_L2)}
    direct = to("transit-lr0-transit")  # only router ports: no flood, no priority 75
    assert lines(table, only, 80, 75) == {
        (80, arp("20.0.0.1"), direct), (80, arp("20.0.0.110"), direct),
        (80, arp("30.0.0.1"), direct),
        (80, "flags[1] == 0 && nd_ns && nd.target == fe80::200:ff:fe00:ff02", direct)}
    nb.set("Logical_Router_Port", "lr0-sw0", enabled=False)
    assert lines(build_flows(nb.db, sb), sw, 80, 75) == set()


def test_gateway_port_mac_is_resident_on_the_gateway(nb: Nb, sb: LocalDb) -> None:
    pub = nb.ls_add("pub")
    nb.lsp_add("pub", "ln", type="localnet", addresses=["unknown"],
               options={"network_name": "phys"})
    nb.lsp_add("pub", "vm", addresses=["00:00:00:00:00:01"])
    nb.lr_add("lr0")
    nb.connect("pub", "lr0", "lr0-pub", "00:00:00:00:ff:01", "172.16.0.1/24")
    nb.add_child("Logical_Router_Port", "lr0-pub", "gateway_chassis", "Gateway_Chassis",
                 name="lr0-pub-gw1", chassis_name="gw1", priority=10)
    nb.add_child("Logical_Router", "lr0", "nat", "NAT", type="dnat_and_snat",
                 external_ip="172.16.0.10", logical_ip="10.0.0.10", logical_port="vm",
                 external_mac="00:00:00:00:aa:10")
    table = build_flows(nb.db, sb)
    assert owned(table, ("rport", "pub-lr0-pub")) >= {
        (50, 'eth.dst == 00:00:00:00:ff:01 && is_chassis_resident("cr-lr0-pub")',
         to("pub-lr0-pub")),
        (50, 'eth.dst == 00:00:00:00:aa:10 && is_chassis_resident("vm")',
         to("pub-lr0-pub"))}
    nb.set("Logical_Switch_Port", "ln", type="")  # no localnet: resident anywhere
    unicast = lines(build_flows(nb.db, sb), pub, 50)
    assert (50, "eth.dst == 00:00:00:00:ff:01", to("pub-lr0-pub")) in unicast


def test_snooping_relay_static_and_meters(nb: Nb, sb: LocalDb) -> None:
    nb.meter_add("m1")
    copp = nb.db.insert("Copp", name="c", meters={"igmp": "m1", "svc-monitor": "none"})
    sw = nb.ls_add("sw0", other_config={"mcast_snoop": "true"}, copp=copp)
    nb.lsp_add("sw0", "p1", addresses=["00:00:00:00:00:01"])
    table = build_flows(nb.db, sb)
    mcast = {f.key.match: (f.key.actions, f.key.meter) for f in flows(table, sw)
             if f.key.priority in (110, 100, 85, 80)}
    assert mcast["igmp"] == mcast["mldv1 || mldv2"] == ("igmp;", "m1")
    assert mcast["eth.dst == $svc_monitor_mac && (tcp || icmp || icmp6)"][1] is None
    assert mcast["ip4.mcast && ip4.dst == 224.0.0.0/24"] == (FLOOD_L2, None)
    assert mcast["ip4.mcast || ip6.mcast"] == ("drop;", None)
    nb.lr_add("lr0", options={"mcast_relay": "true"})
    nb.connect("sw0", "lr0", "lr0-sw0", "00:00:00:00:ff:01", "10.0.0.1/24")
    nb.set("Logical_Switch_Port", "p1", options={"mcast_flood": "true"})
    assert lines(build_flows(nb.db, sb), sw, 80) >= {
        (80, "ip4.mcast || ip6.mcast",
         'clone { outport = "_MC_mrouter_flood"; output; }; outport ="_MC_static"; output;')}
    nb.set("Logical_Switch", "sw0", other_config={"mcast_snoop": "true",
                                                  "mcast_flood_unregistered": "true"})
    assert "ip4.mcast || ip6.mcast" not in {m for _, m, _ in lines(build_flows(nb.db, sb),
                                                                   sw, 80)}


def test_learnt_groups_get_flows(nb: Nb, sb: LocalDb) -> None:
    hv1 = add_chassis(sb, "hv1", "192.168.0.1")
    sw = nb.ls_add("sw0", other_config={"mcast_table_size": "1"})
    nb.lsp_add("sw0", "a")
    nb.lsp_add("sw0", "b")
    nb.lr_add("lr0", options={"mcast_relay": "true"})
    nb.connect("sw0", "lr0", "lr0-sw0", "00:00:00:00:ff:01", "10.0.0.1/24")
    run_core(nb.db, sb)
    dps = {r.external_ids["name"]: r.uuid for r in sb.tables["Datapath_Binding"].rows.values()}
    pbs = {r.logical_port: r.uuid for r in sb.tables["Port_Binding"].rows.values()}
    dp = dps["sw0"]
    for address in ("239.1.1.1", "224.0.0.5", "ff02::1", "ff0e::1", "mrouters"):
        sb.insert("IGMP_Group", address=address, datapath=dp, chassis=hv1,
                  ports=[pbs["a"]])
        run_core(nb.db, sb)
    table = build_flows(nb.db, sb)
    relay = 'clone { outport = "_MC_mrouter_flood"; output; };'
    assert lines(table, sw, 90) == {
        (90, "eth.mcast && ip4 && ip4.dst == 239.1.1.1 ",
         relay + 'outport = "239.1.1.1"; output; '),
        (90, "eth.mcast && ip6 && ip6.dst == ff0e::1 ", relay + 'outport = "ff0e::1"; output; ')}
    sb.insert("IGMP_Group", address="239.1.1.2", datapath=dp, chassis=hv1, ports=[pbs["b"]])
    run_core(nb.db, sb)
    v4 = [m for _, m, _ in lines(build_flows(nb.db, sb), sw, 90) if " ip4 " in m]
    assert len(v4) == 1  # mcast_table_size=1 per family


def _fwd_group(nb: Nb, ls: str, name: str, vip: str, vmac: str, *children: str,
               liveness: bool = False) -> str:
    return nb.add_child("Logical_Switch", ls, "forwarding_groups", "Forwarding_Group",
                        name=name, vip=vip, vmac=vmac, child_port=list(children),
                        liveness=liveness)


def test_forwarding_group(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    for p in ("p1", "p2"):
        nb.lsp_add("sw0", p)
    fwd = _fwd_group(nb, "sw0", "g", "10.0.0.100", "00:00:00:00:01:00", "p2", "p1",
                     liveness=True)
    table = build_flows(nb.db, sb)
    assert owned(table, ("fwd_group", fwd)) == {
        (50, "eth.dst == 00:00:00:00:01:00",
         'fwd_group(liveness="true",childports="p1","p2");')}
    (arp,) = [f for f in flows(table, sw, Stage.LS_IN_ARP_RSP) if f.hint == fwd[:8]]
    assert arp.key.match == "arp.tpa == 10.0.0.100 && arp.op == 1"
    assert "eth.src = 00:00:00:00:01:00;" in arp.key.actions
    assert "arp.spa = 10.0.0.100; outport = inport;" in arp.key.actions


def test_second_forwarding_group_as_23_03_loops(nb: Nb, sb: LocalDb) -> None:
    """The group loop's index is reused for the child ports and its buffers are not
    cleared: after a group of two children a second group is never reached; after a
    group of one child, the second's text follows the first's."""
    sw = nb.ls_add("sw0")
    for p in ("p1", "p2", "p3"):
        nb.lsp_add("sw0", p)
    g1 = _fwd_group(nb, "sw0", "g1", "10.0.0.101", "00:00:00:00:01:01", "p1", "p2")
    g2 = _fwd_group(nb, "sw0", "g2", "10.0.0.102", "00:00:00:00:01:02", "p3")
    first = min(g1, g2)
    table = build_flows(nb.db, sb)
    if first == g1:  # two children: g2 is skipped
        assert owned(table, ("fwd_group", g2)) == set()
        assert len(owned(table, ("fwd_group", g1))) == 1
    else:  # g2 (one child) first: g1's ARP match is glued to g2's L2 match
        (l2,) = owned(table, ("fwd_group", g1))
        assert l2 == (50, "eth.dst == 00:00:00:00:01:01",
                      'fwd_group(childports="p1","p2");')
        arp = [f.key.match for f in flows(table, sw, Stage.LS_IN_ARP_RSP)
               if f.hint == g1[:8]]
        assert arp == ["eth.dst == 00:00:00:00:01:02arp.tpa == 10.0.0.101 && arp.op == 1"]
