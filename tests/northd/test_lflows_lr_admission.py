"""Router admission, neighbor lookup and learning, packet length checks and delivery
(`lflows.lr_admission`, `lr_neighbor`), built from in-memory databases: which port gets
which admission and delivery flow, what `always_learn_from_arp_request=false` changes,
the `gateway_mtu` checks and ICMP errors with their header sizes and meters."""

from __future__ import annotations

from typing import Any

from pyovsdb.northd.lflows.stages import Stage
from pyovsdb.northd.lflows.table import Flow, LflowTable
from pyovsdb.northd.testing import LocalDb, Nb, build_flows

Line = tuple[int, str, str]
ADM = Stage.LR_IN_ADMISSION
LOOKUP = Stage.LR_IN_LOOKUP_NEIGHBOR
LEARN = Stage.LR_IN_LEARN_NEIGHBOR
CHK = Stage.LR_IN_CHK_PKT_LEN
LARGER = Stage.LR_IN_LARGER_PKTS
DELIVERY = Stage.LR_OUT_DELIVERY


def flows(table: LflowTable, dp_key: str, stage: Stage) -> list[Flow]:
    return [f for f in table.on(dp_key) if f.key.stage is stage]


def lines(table: LflowTable, dp_key: str, stage: Stage, *priorities: int) -> set[Line]:
    return {(f.key.priority, f.key.match, f.key.actions) for f in flows(table, dp_key, stage)
            if not priorities or f.key.priority in priorities}


def save(mac: str, check: str = "") -> str:
    return f"{check}xreg0[0..47] = {mac}; next;"


def gateway(nb: Nb, lrp: str, chassis: str = "gw1") -> None:
    nb.add_child("Logical_Router_Port", lrp, "gateway_chassis", "Gateway_Chassis",
                 name=f"{lrp}-{chassis}", chassis_name=chassis, priority=10)


def test_router_defaults_without_ports(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0")
    table = build_flows(nb.db, sb)
    assert lines(table, lr, ADM) == {(100, "vlan.present || eth.src[40]", "drop;"),
                                     (0, "1", "drop;")}
    assert lines(table, lr, CHK) == lines(table, lr, LARGER) == {(0, "1", "next;")}
    assert lines(table, lr, DELIVERY) == set()  # the default drop comes with a port
    assert (0, "1", "reg9[2] = 1; next;") in lines(table, lr, LOOKUP)
    assert (100, "reg9[2] == 1", "next;") in lines(table, lr, LEARN)


def test_admission_and_delivery_per_port(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0", options={"mcast_relay": "true"})
    nb.lrp_add("lr0", "p1", "00:00:00:00:ff:01", "10.0.0.1/24")
    nb.lrp_add("lr0", "off", "00:00:00:00:ff:02", "10.1.0.1/24", enabled=False)
    table = build_flows(nb.db, sb)
    assert lines(table, lr, ADM, 50) == {
        (50, 'eth.mcast && inport == "p1"', save("00:00:00:00:ff:01")),
        (50, 'eth.dst == 00:00:00:00:ff:01 && inport == "p1"', save("00:00:00:00:ff:01"))}
    assert lines(table, lr, DELIVERY) == {
        (110, '(ip4.mcast || ip6.mcast) && outport == "p1"',
         "eth.src = 00:00:00:00:ff:01; output;"),
        (100, 'outport == "p1"', "output;"), (0, "1", "drop;")}
    # A disabled port still looks up ARP requests from its network.
    assert (100, 'inport == "off" && arp.spa == 10.1.0.0/24 && arp.op == 1',
            "reg9[2] = lookup_arp(inport, arp.spa, arp.sha); next;") \
        in lines(table, lr, LOOKUP)
    nb.set("Logical_Router", "lr0", options={})
    assert lines(build_flows(nb.db, sb), lr, DELIVERY, 110) == set()


def test_distributed_gateway_port_is_resident(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0")
    nb.ls_add("pub")
    nb.connect("pub", "lr0", "lr0-pub", "00:00:00:00:ff:01", "172.16.0.1/24")
    gateway(nb, "lr0-pub")
    table = build_flows(nb.db, sb)
    resident = 'is_chassis_resident("cr-lr0-pub")'
    assert (50, f'eth.dst == 00:00:00:00:ff:01 && inport == "lr0-pub" && {resident}',
            save("00:00:00:00:ff:01")) in lines(table, lr, ADM)
    assert (100, f'inport == "lr0-pub" && arp.spa == 172.16.0.0/24 && arp.op == 1 && '
            f"{resident}", "reg9[2] = lookup_arp(inport, arp.spa, arp.sha); next;") \
        in lines(table, lr, LOOKUP)
    # Nothing for the chassisredirect port itself.
    assert not [m for stage in (ADM, DELIVERY) for _, m, _ in lines(table, lr, stage)
                if 'port == "cr-lr0-pub"' in m]
    assert {m for _, m, _ in lines(table, lr, DELIVERY)} == {'outport == "lr0-pub"', "1"}
    # A vtep port on the peer switch: the MAC is admitted on every chassis.
    nb.lsp_add("pub", "vtep0", type="vtep", addresses=["unknown"],
               options={"vtep-physical-switch": "br", "vtep-logical-switch": "ls0"})
    assert (50, 'eth.dst == 00:00:00:00:ff:01 && inport == "lr0-pub"',
            save("00:00:00:00:ff:01")) in lines(build_flows(nb.db, sb), lr, ADM)


def test_learning_only_known_senders(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0", options={"always_learn_from_arp_request": "false"})
    nb.lrp_add("lr0", "p1", "00:00:00:00:ff:01", "10.0.0.1/24", "fd00::1/64")
    table = build_flows(nb.db, sb)
    got = lines(table, lr, LOOKUP)
    assert (100, "arp.op == 2",
            "reg9[2] = lookup_arp(inport, arp.spa, arp.sha); reg9[3] = 1; next;") in got
    assert (110, "nd_na && ip6.src == fe80::/10 && ip6.dst == ff00::/8",
            "reg9[2] = lookup_nd(inport, ip6.src, nd.tll); "
            "reg9[3] = lookup_nd_ip(inport, ip6.src); next;") in got
    assert (100, "nd_ns", "reg9[2] = lookup_nd(inport, ip6.src, nd.sll); "
            "reg9[3] = lookup_nd_ip(inport, ip6.src); next;") in got
    assert (110, 'inport == "p1" && arp.spa == 10.0.0.0/24 && arp.tpa == 10.0.0.1 && '
            "arp.op == 1",
            "reg9[2] = lookup_arp(inport, arp.spa, arp.sha); reg9[3] = 1; next;") in got
    assert (100, 'inport == "p1" && arp.spa == 10.0.0.0/24 && arp.op == 1',
            "reg9[2] = lookup_arp(inport, arp.spa, arp.sha); "
            "reg9[3] = lookup_arp_ip(inport, arp.spa); next;") in got
    assert (100, "reg9[2] == 1 || reg9[3] == 0", "next;") in lines(table, lr, LEARN)
    # Any other value (and "FALSE") counts as the default for a true default.
    nb.set("Logical_Router", "lr0", options={"always_learn_from_arp_request": "no"})
    table = build_flows(nb.db, sb)
    assert not lines(table, lr, LOOKUP, 110)
    assert (100, "reg9[2] == 1", "next;") in lines(table, lr, LEARN)


def test_learning_meters_from_copp(nb: Nb, sb: LocalDb) -> None:
    nb.meter_add("m-arp")
    nb.meter_add("m-nd")
    copp = nb.db.insert("Copp", name="c", meters={"arp": "m-arp", "nd-na": "m-nd",
                                                  "nd-ns": "m-none"})
    lr = nb.lr_add("lr0", copp=copp)
    got = {(f.key.priority, f.key.match): f.key.meter
           for f in flows(build_flows(nb.db, sb), lr, LEARN)}
    assert got == {(100, "reg9[2] == 1"): None, (90, "arp"): "m-arp",
                   (95, "nd_ns && (ip6.src == 0 || nd.sll == 0)"): None,
                   (95, "nd_na && nd.tll == 0"): "m-nd", (90, "nd_na"): "m-nd",
                   (90, "nd_ns"): None, (0, "1"): None}


def _mtu_topology(nb: Nb, **pub_options: str) -> str:
    lr = nb.lr_add("lr0")
    nb.ls_add("pub")
    nb.lsp_add("pub", "ln", type="localnet", addresses=["unknown"],
               options={"network_name": "phys"})
    nb.connect("pub", "lr0", "lr0-pub", "00:00:00:00:ff:01", "172.16.0.1/24")
    nb.set("Logical_Router_Port", "lr0-pub", options=pub_options)
    nb.lrp_add("lr0", "v4", "00:00:00:00:ff:02", "10.0.0.1/24")
    nb.lrp_add("lr0", "v6", "00:00:00:00:ff:03", "fd00::1/64")
    return lr


def test_gateway_mtu_checks_and_errors(nb: Nb, sb: LocalDb) -> None:
    lr = _mtu_topology(nb, gateway_mtu="1400", gateway_mtu_bypass="tcp")
    table = build_flows(nb.db, sb)
    check = "reg9[1] = check_pkt_larger(1414); "
    assert lines(table, lr, CHK) == {
        (50, 'outport == "lr0-pub"', check + "next;"),
        (55, 'outport == "lr0-pub" && (tcp)', "next;"), (0, "1", "next;")}
    assert lines(table, lr, ADM, 55, 50) >= {
        (50, 'eth.mcast && inport == "lr0-pub"', save("00:00:00:00:ff:01", check)),
        (55, 'eth.mcast && inport == "lr0-pub" && (tcp)', save("00:00:00:00:ff:01"))}
    larger = {m for _, m, _ in lines(table, lr, LARGER, 150)}
    tail = "reg9[1] && reg9[0] == 0"
    assert larger == {f'inport == "v4" && outport == "lr0-pub" && ip4 && {tail}',
                      f'inport == "v4" && outport == "lr0-pub" && ip6 && {tail}',
                      f'inport == "v6" && outport == "lr0-pub" && ip6 && {tail}'}
    (v6,) = [a for _, m, a in lines(table, lr, LARGER, 150) if m.startswith('inport == "v6"')]
    assert v6 == ("icmp6_error {reg9[0] = 1; reg9[1] = 0; eth.dst = 00:00:00:00:ff:03; "
                  "ip6.dst = ip6.src; ip6.src = fd00::1; ip.ttl = 255; icmp6.type = 2; "
                  "/* Packet Too Big. */ icmp6.code = 0; icmp6.frag_mtu = 1400; "
                  "next(pipeline=ingress, table=0); };")


def test_gateway_mtu_header_size_and_bad_values(nb: Nb, sb: LocalDb) -> None:
    lr = _mtu_topology(nb, gateway_mtu="1500")
    nb.set("Logical_Switch_Port", "ln", tag_request=[100])
    table = build_flows(nb.db, sb)
    assert (50, 'outport == "lr0-pub"', "reg9[1] = check_pkt_larger(1518); next;") \
        in lines(table, lr, CHK)
    for bad in ("0", "-1", "abc", "1_000"):
        nb.set("Logical_Router_Port", "lr0-pub",
               options={"gateway_mtu": bad, "gateway_mtu_bypass": "tcp"})
        table = build_flows(nb.db, sb)
        assert lines(table, lr, CHK) == {(0, "1", "next;")}, bad
        assert lines(table, lr, LARGER) == {(0, "1", "next;")}, bad
        assert not [a for _, _, a in lines(table, lr, ADM) if "check_pkt" in a], bad


def test_icmp_error_meters(nb: Nb, sb: LocalDb) -> None:
    nb.meter_add("m4")
    nb.meter_add("m6")
    lr = _mtu_topology(nb, gateway_mtu="1400")
    copp = nb.db.insert("Copp", name="c", meters={"icmp4-error": "m4", "icmp6-error": "m6"})
    nb.set("Logical_Router", "lr0", copp=copp)
    table = build_flows(nb.db, sb)
    got: dict[str, Any] = {f.key.match.split(" && ")[-3]: f.key.meter
                           for f in flows(table, lr, LARGER) if f.key.priority == 150}
    assert got == {"ip4": "m4", "ip6": "m6"}
    hints = {f.hint for f in flows(table, lr, LARGER) if f.key.priority == 150}
    assert hints == {nb.uuid("Logical_Router_Port", "v4")[:8],
                     nb.uuid("Logical_Router_Port", "v6")[:8]}
