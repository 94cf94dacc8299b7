"""The router's IP input stage (`lflows.lr_ip_input`, `lr_ip_input_v6`,
`lr_ip_input_nat`), built from in-memory databases: the fixed drops and what multicast
options change, a port's own-address flows and when a gateway drops the unreachable
replies, which addresses are dropped, the NAT and VIP ARP/ND answers on a distributed
gateway port, BFD, DHCPv6 and the meters the replies carry."""

from __future__ import annotations

import ipaddress

from pyovsdb.northd.build.ports_addresses import Ipv6Net
from pyovsdb.northd.lflows.lr_ip_input_v6 import is_lla, sn_addr
from pyovsdb.northd.lflows.stages import Stage
from pyovsdb.northd.lflows.table import Flow, LflowTable
from pyovsdb.northd.testing import LocalDb, Nb, build_flows

IP_INPUT = Stage.LR_IN_IP_INPUT
Line = tuple[int, str, str]
ARP_REPLY = ("eth.dst = eth.src; eth.src = {mac}; arp.op = 2; /* ARP reply */ "
             "arp.tha = arp.sha; arp.sha = {mac}; arp.tpa <-> arp.spa; "
             "outport = inport; flags.loopback = 1; output;")


def flows(table: LflowTable, dp_key: str) -> list[Flow]:
    return [f for f in table.on(dp_key) if f.key.stage is IP_INPUT]


def lines(table: LflowTable, dp_key: str, *priorities: int) -> set[Line]:
    return {(f.key.priority, f.key.match, f.key.actions) for f in flows(table, dp_key)
            if not priorities or f.key.priority in priorities}


def matches(table: LflowTable, dp_key: str, *priorities: int) -> set[str]:
    return {m for _, m, _ in lines(table, dp_key, *priorities)}


def gateway(nb: Nb, lrp: str, chassis: str = "gw1") -> None:
    nb.add_child("Logical_Router_Port", lrp, "gateway_chassis", "Gateway_Chassis",
                 name=f"{lrp}-{chassis}", chassis_name=chassis, priority=10)


def nat(nb: Nb, lr: str, kind: str, external: str, logical: str, **cols: object) -> str:
    return nb.add_child("Logical_Router", lr, "nat", "NAT", type=kind, external_ip=external,
                        logical_ip=logical, **cols)


def test_solicited_node_address() -> None:
    assert sn_addr(ipaddress.IPv6Address("fd00::1")) == "ff02::1:ff00:1"
    assert sn_addr(ipaddress.IPv6Address("fe80::200:ff:fe00:ff01")) == "ff02::1:ff00:ff01"


def test_link_local_is_fe80_slash_64() -> None:
    def net(text: str, plen: int) -> Ipv6Net:
        return Ipv6Net(ipaddress.IPv6Address(text), plen)

    assert is_lla(net("fe80::1", 64)) and is_lla(net("fe80::5", 10))
    assert not is_lla(net("fe80:0:0:1::1", 64))
    assert not is_lla(net("fd00::1", 64))


def test_router_defaults_and_multicast_options(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0")
    table = build_flows(nb.db, sb)
    assert lines(table, lr, 85, 84, 83, 82, 50, 30, 0) == {
        (85, "arp || nd", "drop;"), (84, "nd_rs || nd_ra", "next;"),
        (83, "ip6.mcast_rsvd", "drop;"), (82, "ip4.mcast || ip6.mcast", "drop;"),
        (50, "eth.bcast", "drop;"), (30, "ip.ttl == {0, 1}", "drop;"), (0, "1", "next;")}
    assert lines(table, lr, 120) == set()
    nb.set("Logical_Router", "lr0", options={"mcast_relay": "true"})
    nb.lrp_add("lr0", "lr0-a", "00:00:00:00:ff:01", "10.0.0.1/24",
               options={"mcast_flood": "true"})
    table = build_flows(nb.db, sb)
    assert (82, "ip4.mcast || ip6.mcast", "next;") in lines(table, lr)
    assert matches(table, lr, 120) == {"igmp && ip.ttl == 1",
                                       "(mldv1 || mldv2) && ip.ttl == 1"}
    nb.set("Logical_Router_Port", "lr0-a", enabled=False)  # a disabled port floods nothing
    assert lines(build_flows(nb.db, sb), lr, 120) == set()


def test_port_addresses_echo_arp_ttl_and_unreachable(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0")
    nb.ls_add("sw0")
    nb.connect("sw0", "lr0", "lr0-sw0", "00:00:00:00:ff:01", "10.0.0.1/24", "10.1.0.1/16")
    table = build_flows(nb.db, sb)
    got = lines(table, lr)
    assert (100, "ip4.src == {10.0.0.1, 10.0.0.255, 10.1.0.1, 10.1.255.255} && "
            "reg9[0] == 0", "drop;") in got
    assert (90, "ip4.dst == {10.0.0.1, 10.1.0.1} && icmp4.type == 8 && icmp4.code == 0",
            "ip4.dst <-> ip4.src; ip.ttl = 255; icmp4.type = 0; flags.loopback = 1; "
            "next; ") in got
    reply = ARP_REPLY.format(mac="xreg0[0..47]")
    assert (90, 'inport == "lr0-sw0" && arp.op == 1 && arp.tpa == 10.1.0.1 && '
            "arp.spa == 10.1.0.0/16", reply) in got
    ttl = [a for p, m, a in got if p == 31 and " ip4 " in m]
    assert len(ttl) == 2 and all("ip4.dst = ip4.src; ip4.src = 10." in a for a in ttl)
    assert len(matches(table, lr, 80)) == 2 * 3 + 3  # tcp/udp/sctp per v4 and v6 address
    assert (60, "ip4.dst == {10.0.0.1, 10.1.0.1}", "drop;") in got
    # A gateway router answers no port-unreachable and keeps the rest.
    nb.set("Logical_Router", "lr0", options={"chassis": "gw1"})
    table = build_flows(nb.db, sb)
    assert matches(table, lr, 80, 70) == set()
    assert (60, "ip4.dst == {10.0.0.1, 10.1.0.1}", "drop;") in lines(table, lr)


def test_own_addresses_that_are_snat_ips_or_vips_are_not_dropped(nb: Nb, sb: LocalDb
                                                                 ) -> None:
    lr = nb.lr_add("lr0", options={"chassis": "gw1"})
    nb.lrp_add("lr0", "lr0-a", "00:00:00:00:ff:01", "10.0.0.1/24", "10.0.1.1/24",
               "10.0.2.1/24")
    nat(nb, "lr0", "snat", "10.0.0.1", "192.168.0.0/16")
    lb = nb.db.insert("Load_Balancer", name="lb0", vips={"10.0.1.1:80": "192.168.0.5:80"})
    nb.db.update("Logical_Router", lr, load_balancer=[lb])
    table = build_flows(nb.db, sb)
    assert (60, "ip4.dst == {10.0.2.1}", "drop;") in lines(table, lr)
    # The VIP is answered on the router's VIP address set, once per port.
    tk = sb.tables["Datapath_Binding"].rows
    (dp,) = [r for r in tk.values() if r.external_ids.get("logical-router") == lr]
    assert (90, f'inport == "lr0-a" && arp.op == 1 && arp.tpa == $_rtr_lb_{dp.tunnel_key}'
            "_ip4", ARP_REPLY.format(mac="xreg0[0..47]")) in lines(table, lr)
    # SNAT to the router's port IPs after load balancing: no drop at all.
    nb.set("Logical_Router", "lr0", options={"chassis": "gw1",
                                             "lb_force_snat_ip": "router_ip"})
    assert lines(build_flows(nb.db, sb), lr, 60) == set()


def test_distributed_gateway_port_nat_answers(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0")
    nb.ls_add("sw0")
    nb.ls_add("public")
    nb.connect("sw0", "lr0", "lr0-sw0", "00:00:00:00:ff:01", "10.0.0.1/24")
    nb.connect("public", "lr0", "lr0-pub", "00:00:00:00:ff:02", "172.16.0.1/24")
    nb.lsp_add("public", "ln", type="localnet", addresses=["unknown"],
               options={"network_name": "phys"})
    gateway(nb, "lr0-pub")
    nat(nb, "lr0", "snat", "172.16.0.100", "10.0.0.0/24")
    fip = nat(nb, "lr0", "dnat_and_snat", "172.16.0.110", "10.0.0.10",
              logical_port=["vm0"], external_mac=["00:00:00:00:aa:01"])
    nb.set("Logical_Router_Port", "lr0-pub", options={"gateway_mtu": "1400"})
    table = build_flows(nb.db, sb)
    got = lines(table, lr)
    # Every router answers for the external IPs, on any port.
    assert (90, "arp.op == 1 && arp.tpa == 172.16.0.110",
            ARP_REPLY.format(mac="xreg0[0..47]")) in got
    # The gateway port: where the rule belongs, else dropped.
    assert (92, 'inport == "lr0-pub" && arp.op == 1 && arp.tpa == 172.16.0.110 && '
            'is_chassis_resident("vm0")', ARP_REPLY.format(mac="00:00:00:00:aa:01")) in got
    assert (92, 'inport == "lr0-pub" && arp.op == 1 && arp.tpa == 172.16.0.100 && '
            'is_chassis_resident("cr-lr0-pub")', ARP_REPLY.format(mac="xreg0[0..47]")) in got
    assert matches(table, lr, 91) == {
        'inport == "lr0-pub" && arp.op == 1 && arp.tpa == 172.16.0.100',
        'inport == "lr0-pub" && arp.op == 1 && arp.tpa == 172.16.0.110'}
    assert (120, 'inport == "lr0-pub" && ip4.src == 172.16.0.100', "next;") in got
    # Its own address: only on the gateway chassis (its peer switch has a localnet).
    assert 'inport == "lr0-pub" && arp.op == 1 && arp.tpa == 172.16.0.1 && arp.spa == ' \
        '172.16.0.0/24 && is_chassis_resident("cr-lr0-pub")' in matches(table, lr, 90)
    (big,) = [f for f in flows(table, lr) if f.key.priority == 160]
    assert big.key.match == ('inport == "lr0-pub" && reg9[1] && reg9[0] == 0 && ip4 && '
                             "ip4.dst == 172.16.0.110")
    assert "eth.src = 00:00:00:00:aa:01; " in big.key.actions and big.hint == fip[:8]
    assert matches(table, lr, 150) == {'inport == "lr0-pub" && ip4 && reg9[1] && '
                                       'reg9[0] == 0',
                                       'inport == "lr0-pub" && ip6 && reg9[1] && '
                                       'reg9[0] == 0'}
    assert matches(table, lr, 80, 70) == set()  # a router with a gateway port


def test_nat_rules_23_03_does_not_apply_get_no_gateway_flows(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0")
    nb.lrp_add("lr0", "lr0-pub", "00:00:00:00:ff:02", "172.16.0.1/24")
    gateway(nb, "lr0-pub")
    nat(nb, "lr0", "snat", "172.16.0.100/24", "10.0.0.0/24")  # a masked external IP
    aset = nb.db.insert("Address_Set", name="as1", addresses=["1.1.1.1"])
    nat(nb, "lr0", "snat", "172.16.0.101", "10.0.1.0/24", allowed_ext_ips=[aset],
        exempted_ext_ips=[aset])
    nat(nb, "lr0", "snat", "172.16.0.102", "10.0.2.0/24")
    table = build_flows(nb.db, sb)
    assert matches(table, lr, 120) == {'inport == "lr0-pub" && ip4.src == 172.16.0.102'}
    # The ARP answers only need one external address.
    assert "arp.op == 1 && arp.tpa == 172.16.0.101" in matches(table, lr, 90)


def test_ipv6_port_flows(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0")
    nb.lrp_add("lr0", "lr0-a", "00:00:00:00:ff:01", "fd00::1/64")
    table = build_flows(nb.db, sb)
    got = lines(table, lr)
    lla = "fe80::200:ff:fe00:ff01"
    assert (90, f"ip6.dst == {{fd00::1, {lla}}} && icmp6.type == 128 && icmp6.code == 0",
            "ip6.dst <-> ip6.src; ip.ttl = 255; icmp6.type = 129; flags.loopback = 1; "
            "next; ") in got
    assert f'inport == "lr0-a" && ip6.dst == {{{lla}, ff02::1:ff00:ff01}} && nd_ns && ' \
        f"nd.target == {lla}" in matches(table, lr, 90)
    assert matches(table, lr, 100) >= {
        "ip6.dst == fd00::1 && udp.src == 547 && udp.dst == 546",
        f"ip6.dst == {lla} && udp.src == 547 && udp.dst == 546"}
    # The TTL-expired reply names the source network: none for the link-local one.
    assert matches(table, lr, 31) == {
        'inport == "lr0-a" && ip6 && ip6.src == fd00::/64 && ip.ttl == {0, 1} && '
        "!ip.later_frag"}
    assert (60, f"ip6.dst == {{fd00::1, {lla}}}", "drop;") in got
    assert not [m for m in matches(table, lr) if "ip4.src == {" in m]  # no IPv4: none


def test_bfd_and_meters(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0")
    nb.lrp_add("lr0", "lr0-a", "00:00:00:00:ff:01", "10.0.0.1/24")
    nb.db.insert("BFD", logical_port="lr0-a", dst_ip="10.0.0.2")
    for name in ("m-bfd", "m-icmp", "m-nd"):
        nb.meter_add(name)
    copp = nb.db.insert("Copp", name="copp0", meters={
        "bfd": "m-bfd", "icmp4-error": "m-icmp", "nd-na": "m-nd", "tcp-reset": "m-gone"})
    nb.db.update("Logical_Router", lr, copp=[copp])
    table = build_flows(nb.db, sb)
    meters = {(f.key.priority, f.key.match): f.key.meter for f in flows(table, lr)}
    assert meters[(110, "ip4.src == 10.0.0.1 && udp.dst == 3784")] is None
    assert meters[(110, "ip4.dst == 10.0.0.1 && udp.dst == 3784")] == "m-bfd"
    assert meters[(70, "ip4 && ip4.dst == 10.0.0.1 && !ip.later_frag")] == "m-icmp"
    assert meters[(80, "ip4 && ip4.dst == 10.0.0.1 && !ip.later_frag && tcp")] is None
    nd = [m for (p, match), m in meters.items() if p == 90 and "nd_ns" in match]
    assert nd == ["m-nd"]
    arp = [m for (p, match), m in meters.items() if p == 90 and "arp.op" in match]
    assert arp == [None]
    assert len([k for k in meters if k[0] == 110]) == 4  # IPv4 and IPv6, both ways
