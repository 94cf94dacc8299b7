"""The end of the router pipeline (`lflows.lr_arp`, `lr_arp_resolve`, `lr_nd_ra`), built
from in-memory databases: which next hops resolve statically and to what, where
gateway traffic is redirected, which ARP/ND requests and RA responses are written."""

from __future__ import annotations

import ipaddress

from pyovsdb.northd.build.ports_addresses import find_lrp_member_ip, lrp_networks
from pyovsdb.northd.lflows.stages import Stage
from pyovsdb.northd.lflows.table import LflowTable
from pyovsdb.northd.testing import LocalDb, Nb, build_flows

RESOLVE = Stage.LR_IN_ARP_RESOLVE
REDIRECT = Stage.LR_IN_GW_REDIRECT
REQUEST = Stage.LR_IN_ARP_REQUEST
RA_OPTS = Stage.LR_IN_ND_RA_OPTIONS
RA_RESP = Stage.LR_IN_ND_RA_RESPONSE
Line = tuple[int, str, str]


def lines(table: LflowTable, dp: str, stage: Stage, priority: int | None = None
          ) -> set[Line]:
    return {(f.key.priority, f.key.match, f.key.actions) for f in table.on(dp)
            if f.key.stage is stage and priority in (None, f.key.priority)}


def owned(table: LflowTable, owner: object, stage: Stage) -> set[Line]:
    return {(k.priority, k.match, k.actions) for k, _ in table.owners.get(owner, [])
            if k.stage is stage}


def resolve(port: str, reg: str, ip: str, mac: str) -> Line:
    return (100, f'outport == "{port}" && {reg} == {ip}', f"eth.dst = {mac}; next;")


def test_helpers() -> None:
    nets = lrp_networks("00:00:00:00:ff:01", ["10.0.0.1/24", "fd00::1/64"])
    assert find_lrp_member_ip(nets, "10.0.0.200") == "10.0.0.1"
    assert find_lrp_member_ip(nets, "10.0.1.1") is None
    assert find_lrp_member_ip(nets, "fe80::1") == "fe80::200:ff:fe00:ff01"  # link-local
    assert find_lrp_member_ip(nets, "::ffff:10.0.0.2") is None  # a dot: IPv4, which fails
    assert find_lrp_member_ip(nets, "fd00::9%eth0") is None  # inet_pton: no scope id


def test_bare_router_defaults(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0")
    table = build_flows(nb.db, sb)
    assert lines(table, lr, RESOLVE) == {
        (500, "ip4.mcast || ip6.mcast", "next;"),
        (1, "ip4", "get_arp(outport, reg0); next;"),
        (1, "ip6", "get_nd(outport, xxreg0); next;"), (0, "1", "drop;")}
    assert lines(table, lr, REDIRECT) == {(0, "1", "next;")}
    assert lines(table, lr, RA_OPTS) == lines(table, lr, RA_RESP) == {(0, "1", "next;")}
    assert lines(table, lr, REQUEST) == {
        (100, "eth.dst == 00:00:00:00:00:00 && ip4",
         "arp { eth.dst = ff:ff:ff:ff:ff:ff; arp.spa = reg1; arp.tpa = reg0; arp.op = 1; "
         "output; };"),
        (100, "eth.dst == 00:00:00:00:00:00 && ip6", "nd_ns { nd.target = xxreg0; output; };"),
        (0, "1", "output;")}


def test_switch_ports_resolve_where_a_router_port_holds_them(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("sw0")
    nb.ls_add("sw1")
    lr = nb.lr_add("lr0")
    nb.connect("sw0", "lr0", "lr0-sw0", "00:00:00:00:ff:01", "10.0.0.1/24", "fd00::1/64")
    nb.connect("sw1", "lr0", "lr0-sw1", "00:00:00:00:ff:02", "10.0.1.1/24")
    vm0 = nb.lsp_add("sw0", "vm0", addresses=["00:00:00:00:00:01 10.0.0.10 fd00::10 "
                                              "10.0.1.10", "00:00:00:00:00:11 10.0.0.11"])
    nb.lsp_add("sw1", "vm1", addresses=["00:00:00:00:00:02 10.0.1.10"], enabled=[False])
    nb.lsp_add("sw1", "vm2", addresses=["00:00:00:00:00:03 10.0.1.20"])
    table = build_flows(nb.db, sb)
    assert owned(table, ("port", "vm0"), RESOLVE) == {
        resolve("lr0-sw0", "reg0", "10.0.0.10", "00:00:00:00:00:01"),
        resolve("lr0-sw0", "xxreg0", "fd00::10", "00:00:00:00:00:01"),
        resolve("lr0-sw0", "reg0", "10.0.0.11", "00:00:00:00:00:11")}
    assert owned(table, ("port", "vm1"), RESOLVE) == set()  # disabled
    assert resolve("lr0-sw1", "reg0", "10.0.1.20", "00:00:00:00:00:03") in \
        lines(table, lr, RESOLVE, 100)
    flow = next(f for f in table.on(lr) if f.key.stage is RESOLVE
                and f.key.match == 'outport == "lr0-sw0" && reg0 == 10.0.0.10')
    assert flow.hint == vm0[:8]


def test_router_ports_on_a_shared_switch(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("join")
    lr0 = nb.lr_add("lr0")
    lr1 = nb.lr_add("lr1", options={"dynamic_neigh_routers": "true"})
    lr2 = nb.lr_add("lr2")
    nb.connect("join", "lr0", "lr0-j", "00:00:00:00:01:01", "100.64.0.1/16", "fd98::1/64")
    nb.connect("join", "lr1", "lr1-j", "00:00:00:00:02:01", "100.64.0.2/16")
    nb.connect("join", "lr2", "lr2-j", "00:00:00:00:03:01", "100.64.0.3/16",
               "100.65.0.3/16")
    table = build_flows(nb.db, sb)
    assert lines(table, lr0, RESOLVE, 100) == {
        resolve("lr0-j", "reg0", "100.64.0.2", "00:00:00:00:02:01"),
        resolve("lr0-j", "xxreg0", "fe80::200:ff:fe00:201", "00:00:00:00:02:01"),
        resolve("lr0-j", "reg0", "{100.64.0.3, 100.65.0.3}", "00:00:00:00:03:01"),
        resolve("lr0-j", "xxreg0", "fe80::200:ff:fe00:301", "00:00:00:00:03:01")}
    assert resolve("lr2-j", "xxreg0", "{fd98::1, fe80::200:ff:fe00:101}",
                   "00:00:00:00:01:01") in lines(table, lr2, RESOLVE, 100)
    assert lines(table, lr1, RESOLVE, 100) == set()  # left to ARP and ND
    # (each other router's resolution its own pair's: a router joining or leaving the
    # switch builds again its pair alone on the routers there)
    assert owned(table, ("port", "join-lr0-j"), RESOLVE) == set()
    lr0_j = owned(table, ("port", "join-lr0-j", "lr1-j"), RESOLVE) | \
        owned(table, ("port", "join-lr0-j", "lr2-j"), RESOLVE)
    assert lr0_j == lines(table, lr0, RESOLVE, 100)


def test_directly_peered_router_ports(nb: Nb, sb: LocalDb) -> None:
    lr0 = nb.lr_add("lr0")
    nb.lr_add("lr1")
    nb.lrp_add("lr0", "lr0-lr1", "00:00:00:00:01:01", "169.254.0.1/30", peer=["lr1-lr0"])
    nb.lrp_add("lr1", "lr1-lr0", "00:00:00:00:01:02", "169.254.0.2/30", peer=["lr0-lr1"])
    table = build_flows(nb.db, sb)
    # The IPv4 match has no blank before "==", as 23.03 writes it.
    assert owned(table, ("port", "lr1-lr0"), RESOLVE) == {
        (100, 'outport == "lr0-lr1" && reg0== 169.254.0.2', "eth.dst = 00:00:00:00:01:02; next;"),
        resolve("lr0-lr1", "xxreg0", "fe80::200:ff:fe00:102", "00:00:00:00:01:02")}
    assert len(lines(table, lr0, RESOLVE, 100)) == 2
    assert lines(table, lr0, RA_OPTS, 50) == set()  # a router peer gets no RAs


def test_distributed_gateway_port(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("pub")
    nb.ls_add("sw0")
    lr = nb.lr_add("lr0")
    nb.connect("pub", "lr0", "lr0-pub", "00:00:20:20:12:13", "172.16.0.1/24")
    nb.connect("sw0", "lr0", "lr0-sw0", "00:00:00:00:ff:01", "10.0.0.1/24")
    nb.add_child("Logical_Router_Port", "lr0-pub", "gateway_chassis", "Gateway_Chassis",
                 name="lr0-pub-gw1", chassis_name="gw1", priority=10)
    nb.lsp_add("sw0", "vm0", addresses=["00:00:00:00:00:01 10.0.0.10"])
    nat = nb.add_child("Logical_Router", "lr0", "nat", "NAT", type="dnat_and_snat",
                       external_ip="172.16.0.110", logical_ip="10.0.0.10",
                       logical_port="vm0", external_mac="00:00:00:00:aa:10")
    nb.add_child("Logical_Router", "lr0", "nat", "NAT", type="snat",
                 external_ip="172.16.0.1", logical_ip="10.0.0.0/24")
    nb.add_child("Logical_Router", "lr0", "nat", "NAT", type="dnat",
                 external_ip="172.16.0.120/24", logical_ip="10.0.0.20")  # not a host
    table = build_flows(nb.db, sb)
    to_cr = 'outport = "cr-lr0-pub"; next;'
    assert lines(table, lr, REDIRECT) == {
        (100, 'ip4.src == 10.0.0.10 && outport == "lr0-pub" && is_chassis_resident("vm0")',
         "eth.src = 00:00:00:00:aa:10; reg1 = 172.16.0.110; next;"),
        (50, 'outport == "lr0-pub"', to_cr), (0, "1", "next;")}
    nat_flows = {(k.priority, k.match, k.actions) for owner, asked in table.owners.items()
                 if owner[:2] == ("nat", lr)  # (the router's NAT, and each external IP's)
                 for k, _ in asked if k.stage is RESOLVE and k.priority in (150, 100)}
    assert ("nat", lr, "172.16.0.110") in table.owners
    assert nat_flows == {
        (150, 'inport == "lr0-pub" && outport == "lr0-pub" && ip4.dst == 172.16.0.110',
         "drop;"),
        resolve("lr0-pub", "reg0", "172.16.0.110", "00:00:00:00:aa:10"),
        (150, 'inport == "lr0-pub" && outport == "lr0-pub" && ip4.dst == 172.16.0.1',
         "drop;"),
        resolve("lr0-pub", "reg0", "172.16.0.1", "00:00:20:20:12:13")}
    flow = next(f for f in table.on(lr) if f.key.stage is REDIRECT and f.key.priority == 100)
    assert flow.hint == nat[:8]
    # The router IP that is also an SNAT IP is dropped, once it got this far.
    assert lines(table, lr, RESOLVE, 2) == {(2, "ip4.dst == {172.16.0.1}", "drop;")}
    assert lines(table, lr, RESOLVE, 50) == set()
    nb.set("Logical_Router_Port", "lr0-pub", options={"redirect-type": "Bridged"})
    table = build_flows(nb.db, sb)
    assert lines(table, lr, RESOLVE, 50) == {
        (50, 'outport == "lr0-pub" && !is_chassis_resident("cr-lr0-pub")',
         "eth.dst = 00:00:20:20:12:13; next;")}
    assert lines(table, lr, RESOLVE, 90) == {
        (90, 'outport == "lr0-pub" && ip4.src == 10.0.0.10 && is_chassis_resident("vm0")',
         "get_arp(outport, reg0); next;")}


def test_static_route_ipv6_next_hops(nb: Nb, sb: LocalDb) -> None:
    nb.meter_add("m-ns")
    copp = nb.db.insert("Copp", name="c", meters={"nd-ns-resolve": "m-ns",
                                                  "arp-resolve": "missing"})
    lr = nb.lr_add("lr0", copp=copp)
    nb.lrp_add("lr0", "lr0-p", "00:00:00:00:ff:01", "fd00::1/64")
    for prefix, nexthop in (("fd10::/64", "fd00::1:2"), ("fd11::/64", "fd00::3/64"),
                            ("10.1.0.0/24", "10.0.0.2"), ("fd12::/64", "discard")):
        nb.add_child("Logical_Router", "lr0", "static_routes",
                     "Logical_Router_Static_Route", ip_prefix=prefix, nexthop=nexthop)
    table = build_flows(nb.db, sb)
    got = {(f.key.priority, f.key.match, f.key.actions, f.key.meter)
           for f in table.on(lr) if f.key.stage is REQUEST and f.key.priority > 0}
    assert got == {
        (200, "eth.dst == 00:00:00:00:00:00 && ip6 && xxreg0 == fd00::1:2",
         "nd_ns { eth.dst = 33:33:ff:01:00:02; ip6.dst = ff02::1:ff01:2; "
         "nd.target = fd00::1:2; output; };", "m-ns"),
        (100, "eth.dst == 00:00:00:00:00:00 && ip4",
         "arp { eth.dst = ff:ff:ff:ff:ff:ff; arp.spa = reg1; arp.tpa = reg0; arp.op = 1; "
         "output; };", None),
        (100, "eth.dst == 00:00:00:00:00:00 && ip6", "nd_ns { nd.target = xxreg0; output; };",
         "m-ns")}


def test_router_solicitation_responder(nb: Nb, sb: LocalDb) -> None:
    nb.meter_add("m-ra")
    copp = nb.db.insert("Copp", name="c", meters={"nd-ra-opts": "m-ra"})
    nb.ls_add("sw0")
    nb.ls_add("sw1")
    lr = nb.lr_add("lr0", copp=copp)
    nb.connect("sw0", "lr0", "lr0-sw0", "00:00:00:00:ff:01", "10.0.0.1/24", "fd00::1/64",
               "fe80::1234/64", "fe80:0:0:1::1/64")
    nb.connect("sw1", "lr0", "lr0-sw1", "00:00:00:00:ff:02", "10.0.1.1/24")
    nb.set("Logical_Router_Port", "lr0-sw0", ipv6_ra_configs={
        "address_mode": "dhcpv6_stateless", "mtu": "1280", "router_preference": "low",
        "rdnss": "fd00::53", "dnssl": "ovn.org", "route_info": "HIGH-fd0b::/64"})
    nb.set("Logical_Router_Port", "lr0-sw1", ipv6_ra_configs={"address_mode": "slaac"})
    table = build_flows(nb.db, sb)
    opts = [f for f in table.on(lr) if f.key.stage is RA_OPTS and f.key.priority == 50]
    assert [(f.key.match, f.key.actions, f.key.meter) for f in opts] == [(
        'inport == "lr0-sw0" && ip6.dst == ff02::2 && nd_rs',
        'reg0[5] = put_nd_ra_opts(addr_mode = "dhcpv6_stateless", slla = 00:00:00:00:ff:01, '
        'mtu = 1280, router_preference = "low", rdnss = fd00::53, dnssl = "ovn.org", '
        'route_info = "HIGH-fd0b::/64", prefix = fd00::/64, prefix = fe80:0:0:1::/64); '
        'next;', "m-ra")]  # lr0-sw1 has only link-local addresses: no RA at all
    assert owned(table, ("port", "lr0-sw0"), RA_RESP) == {(
        50, 'inport == "lr0-sw0" && ip6.dst == ff02::2 && nd_ra && reg0[5]',
        "eth.dst = eth.src; eth.src = 00:00:00:00:ff:01; ip6.dst = ip6.src; "
        "ip6.src = fe80::200:ff:fe00:ff01; outport = inport; flags.loopback = 1; output;")}
    nb.set("Logical_Router_Port", "lr0-sw0", ipv6_ra_configs={
        "address_mode": "dhcpv6", "mtu": "1279"})
    assert lines(build_flows(nb.db, sb), lr, RA_OPTS, 50) == set()
    nb.set("Logical_Router_Port", "lr0-sw0", ipv6_ra_configs={
        "address_mode": "slaac", "mtu": "1279", "router_preference": "MEDIUM"})
    (_, _, actions), = lines(build_flows(nb.db, sb), lr, RA_OPTS, 50)
    assert actions == ('reg0[5] = put_nd_ra_opts(addr_mode = "slaac", slla = '
                       '00:00:00:00:ff:01, prefix = fd00::/64, prefix = fe80:0:0:1::/64); '
                       'next;')
    assert ipaddress.IPv6Address("fe80:0:0:1::") not in ipaddress.IPv6Network("fe80::/64")


def test_gateway_router_resolves_routable_vips_of_a_gateway_port(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("pub")
    nb.lr_add("lr0")
    nb.connect("pub", "lr0", "lr0-pub", "00:00:00:00:10:01", "172.16.1.1/24")
    nb.add_child("Logical_Router_Port", "lr0-pub", "gateway_chassis", "Gateway_Chassis",
                 name="lr0-pub-gw1", chassis_name="gw1", priority=10)
    lb = nb.db.insert("Load_Balancer", name="lb6", vips={"[2001:db8::100]:80": "[fd00::10]:80"},
                      options={"add_route": "true"})
    nb.set("Logical_Router", "lr0", load_balancer=[lb])
    gr = nb.lr_add("gr0", options={"chassis": "gw1"})
    nb.connect("pub", "gr0", "gr0-pub", "00:00:00:00:20:01", "172.16.1.2/24")
    routable = owned(build_flows(nb.db, sb), ("port", "pub-gr0-pub", "lr0-pub"), RESOLVE)
    # With only IPv6 VIPs the IPv4 set is empty, and 23.03 writes it so.
    assert (100, 'outport == "gr0-pub" && reg0 == {}', "eth.dst = 00:00:00:00:10:01; next;") \
        in routable
    nb.db.update("Load_Balancer", lb, options={})
    assert lines(build_flows(nb.db, sb), gr, RESOLVE, 100) == {
        resolve("gr0-pub", "reg0", "172.16.1.1", "00:00:00:00:10:01"),
        resolve("gr0-pub", "xxreg0", "fe80::200:ff:fe00:1001", "00:00:00:00:10:01")}
