"""Routing and policies of a logical router (`lflows.lr_routing`, `lr_routes`,
`lr_policy`), built from in-memory databases: the priority and match of each kind of
route, which routes 23.03 leaves out, how route tables and ECMP groups are numbered,
symmetric ECMP replies, BFD, policies and multicast relay."""

from __future__ import annotations

from typing import Any

from pyovsdb.northd.lflows.lr_routes import Prefix, parse_cidr
from pyovsdb.northd.lflows.lr_routing import route_match
from pyovsdb.northd.lflows.stages import Stage
from pyovsdb.northd.lflows.table import LflowTable
from pyovsdb.northd.testing import LocalDb, Nb, add_chassis, build_flows

ROUTING = Stage.LR_IN_IP_ROUTING
Line = tuple[int, str, str]


def lines(table: LflowTable, dp_key: str, stage: Stage = ROUTING) -> set[Line]:
    return {(f.key.priority, f.key.match, f.key.actions) for f in table.on(dp_key)
            if f.key.stage is stage}


def to(port: str, mac: str, src: str, hop: str = "ip4.dst", *, v4: bool = True) -> str:
    """The actions of a route leaving by `port`."""
    r0, r1 = ("reg0", "reg1") if v4 else ("xxreg0", "xxreg1")
    return (f"ip.ttl--; reg8[0..15] = 0; {r0} = {hop}; {r1} = {src}; eth.src = {mac}; "
            f'outport = "{port}"; flags.loopback = 1; next;')


def uid(n: int) -> str:
    """A fixed UUID whose order among others is `n`'s."""
    return f"{n:08x}-0000-4000-8000-000000000000"


def add_row(nb: Nb, router: str, column: str, table: str, uuid: str, **cols: Any) -> None:
    """Insert a row with a chosen UUID and add it to the router's `column`."""
    nb.db.transact([
        {"op": "insert", "table": table, "uuid": uuid, "row": nb.db.json_row(table, cols)},
        {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", router]],
         "mutations": [[column, "insert", ["set", [["uuid", uuid]]]]]}])


def route(nb: Nb, router: str, n: int, prefix: str, nexthop: str, **cols: Any) -> None:
    add_row(nb, router, "static_routes", "Logical_Router_Static_Route", uid(n),
            ip_prefix=prefix, nexthop=nexthop, **cols)


def two_port_router(nb: Nb, **router_cols: Any) -> str:
    lr = nb.lr_add("lr0", **router_cols)
    nb.lrp_add("lr0", "lr0-a", "00:00:00:00:ff:01", "10.0.0.1/24", "fd00::1/64")
    nb.lrp_add("lr0", "lr0-b", "00:00:00:00:ff:02", "10.1.0.1/24")
    return lr


def test_parse_cidr_reads_what_ip46_parse_cidr_reads() -> None:
    assert parse_cidr("10.0.0.7/24") == Prefix(True, 0x0A000007, 24)
    assert parse_cidr("10.0.0.7/255.255.0.0") == Prefix(True, 0x0A000007, 16)
    assert parse_cidr("10.0.0.7") == Prefix(True, 0x0A000007, 32)
    assert parse_cidr("fd00::5/64") == Prefix(False, 0xFD00 << 112 | 5, 64)
    for bad in ("10.0.0.7/255.0.255.0", "10.0.0.7/33", "10.0.0.7/24 ", "fd00::/129",
                "discard", "", "10.0.0/24"):
        assert parse_cidr(bad) is None, bad
    p = parse_cidr("10.0.0.7/24")
    assert p is not None and (p.network_s, p.normalized) == ("10.0.0.0", "10.0.0.0/24")
    host = parse_cidr("fd00::5")
    assert host is not None and host.normalized == "fd00::5"


def test_route_priorities_favour_longer_prefixes_then_connected() -> None:
    assert route_match(None, 0, "10.0.0.0", 24, False, True, 2) == \
        ("ip4.dst == 10.0.0.0/24", 74)
    assert route_match(None, 0, "10.0.0.0", 24, False, True, 1) == \
        ("reg7 == 0 && ip4.dst == 10.0.0.0/24", 73)
    assert route_match(None, 0, "10.0.0.0", 24, True, True, 1) == \
        ("ip4.src == 10.0.0.0/24", 72)
    assert route_match(None, 3, "fd00::", 64, True, False, 1) == \
        ("reg7 == 3 && ip6.src == fd00::/64", 192)


def test_connected_routes_per_network_with_link_local_bound_to_its_port(
        nb: Nb, sb: LocalDb) -> None:
    lr = two_port_router(nb)
    got = lines(build_flows(nb.db, sb), lr)
    a = ("lr0-a", "00:00:00:00:ff:01")
    assert got == {
        (0, "1", "drop;"),
        (10550, "nd_rs || nd_ra", "drop;"),
        (74, "ip4.dst == 10.0.0.0/24", to(*a, "10.0.0.1")),
        (74, "ip4.dst == 10.1.0.0/24", to("lr0-b", "00:00:00:00:ff:02", "10.1.0.1")),
        (194, "ip6.dst == fd00::/64", to(*a, "fd00::1", "ip6.dst", v4=False)),
        (194, 'inport == "lr0-a" && ip6.dst == fe80::/64',
         to(*a, "fe80::200:ff:fe00:ff01", "ip6.dst", v4=False)),
        (194, 'inport == "lr0-b" && ip6.dst == fe80::/64',
         to("lr0-b", "00:00:00:00:ff:02", "fe80::200:ff:fe00:ff02", "ip6.dst", v4=False))}


def test_static_routes_and_the_ones_left_out(nb: Nb, sb: LocalDb) -> None:
    lr = two_port_router(nb)
    a, b = ("lr0-a", "00:00:00:00:ff:01"), ("lr0-b", "00:00:00:00:ff:02")
    route(nb, "lr0", 1, "0.0.0.0/0", "10.1.0.254")
    route(nb, "lr0", 2, "10.50.0.9/16", "10.0.0.254")
    route(nb, "lr0", 3, "10.0.0.0/24", "10.1.0.253", policy="src-ip")
    route(nb, "lr0", 4, "10.60.0.0/16", "discard")
    route(nb, "lr0", 5, "10.70.0.0/16", "192.0.2.1", output_port="lr0-b")
    route(nb, "lr0", 6, "10.80.0.0/16", "10.0.0.253", options={"origin": "connected"})
    route(nb, "lr0", 7, "10.90.0.0/16", "192.0.2.1")  # no port reaches the next hop
    route(nb, "lr0", 8, "10.91.0.0/16", "fd00::9")  # families differ
    route(nb, "lr0", 9, "10.92.0.0/16", "10.0.0.9/24")  # not a host next hop
    route(nb, "lr0", 10, "10.93.0.0/16", "10.0.0.9", output_port="nope")
    got = {ln for ln in lines(build_flows(nb.db, sb), lr) if "reg7" in ln[1] or
           ("10.0.0.0/24" in ln[1] and "src" in ln[1]) or "10.80" in ln[1]}
    assert got == {
        (1, "reg7 == 0 && ip4.dst == 0.0.0.0/0", to(*b, "10.1.0.1", "10.1.0.254")),
        (49, "reg7 == 0 && ip4.dst == 10.50.0.0/16", to(*a, "10.0.0.1", "10.0.0.254")),
        (72, "ip4.src == 10.0.0.0/24", to(*b, "10.1.0.1", "10.1.0.253")),
        (49, "reg7 == 0 && ip4.dst == 10.60.0.0/16", "drop;"),
        (49, "reg7 == 0 && ip4.dst == 10.70.0.0/16", to(*b, "10.1.0.1", "192.0.2.1")),
        (50, "ip4.dst == 10.80.0.0/16", to(*a, "10.0.0.1", "10.0.0.253"))}


def test_route_tables_number_port_tables_first(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0")
    nb.lrp_add("lr0", "lr0-a", "00:00:00:00:ff:01", "10.0.0.1/24",
               options={"route_table": "ports-table"})
    nb.lrp_add("lr0", "lr0-b", "00:00:00:00:ff:02", "10.1.0.1/24")
    route(nb, "lr0", 1, "10.50.0.0/16", "10.1.0.254", route_table="routes-table")
    route(nb, "lr0", 2, "10.60.0.0/16", "10.1.0.254", route_table="ports-table")
    table = build_flows(nb.db, sb)
    assert lines(table, lr, Stage.LR_IN_IP_ROUTING_PRE) == {
        (0, "1", "reg7 = 0; next;"), (100, 'inport == "lr0-a"', "reg7 = 1; next;")}
    assert {m for _, m, _ in lines(table, lr) if "reg7" in m} == {
        "reg7 == 2 && ip4.dst == 10.50.0.0/16", "reg7 == 1 && ip4.dst == 10.60.0.0/16"}


def test_ecmp_group_is_numbered_when_its_second_route_appears(nb: Nb, sb: LocalDb) -> None:
    lr = two_port_router(nb)
    route(nb, "lr0", 1, "10.100.0.0/16", "10.1.0.11")
    route(nb, "lr0", 2, "10.200.0.0/16", "10.1.0.21")
    route(nb, "lr0", 3, "10.200.0.0/16", "10.0.0.22")
    route(nb, "lr0", 4, "10.100.0.0/16", "10.0.0.12")
    route(nb, "lr0", 5, "10.100.0.0/16", "discard")
    table = build_flows(nb.db, sb)
    select = "ip.ttl--; flags.loopback = 1; reg8[0..15] = {}; reg8[16..31] = select({});"
    assert {ln for ln in lines(table, lr) if "select" in ln[2]} == {
        (49, "reg7 == 0 && ip4.dst == 10.200.0.0/16", select.format(1, "1, 2")),
        (49, "reg7 == 0 && ip4.dst == 10.100.0.0/16", select.format(2, "1, 2, 3"))}
    member = ('reg0 = {}; reg1 = {}; eth.src = {}; outport = "{}"; next;')
    assert lines(table, lr, Stage.LR_IN_IP_ROUTING_ECMP) == {
        (0, "1", "drop;"), (150, "reg8[0..15] == 0", "next;"),
        (100, "reg8[0..15] == 1 && reg8[16..31] == 1",
         member.format("10.1.0.21", "10.1.0.1", "00:00:00:00:ff:02", "lr0-b")),
        (100, "reg8[0..15] == 1 && reg8[16..31] == 2",
         member.format("10.0.0.22", "10.0.0.1", "00:00:00:00:ff:01", "lr0-a")),
        (100, "reg8[0..15] == 2 && reg8[16..31] == 1",
         member.format("10.1.0.11", "10.1.0.1", "00:00:00:00:ff:02", "lr0-b")),
        (100, "reg8[0..15] == 2 && reg8[16..31] == 2",
         member.format("10.0.0.12", "10.0.0.1", "00:00:00:00:ff:01", "lr0-a"))}


def test_symmetric_replies_on_gateway_routers_once_per_output_port(
        nb: Nb, sb: LocalDb) -> None:
    sym = {"ecmp_symmetric_reply": "true"}
    for name, options in (("gr0", {"chassis": "gw1"}), ("lr1", {})):
        nb.lr_add(name, options=options)
        nb.lrp_add(name, f"{name}-a", "00:00:00:00:ff:01", "10.0.0.1/24")
        nb.lrp_add(name, f"{name}-b", "00:00:00:00:ff:02", "10.1.0.1/24")
    route(nb, "gr0", 1, "0.0.0.0/0", "10.0.0.11", options=sym)
    route(nb, "gr0", 2, "0.0.0.0/0", "10.0.0.12", options=sym)
    route(nb, "gr0", 3, "0.0.0.0/0", "10.1.0.13")
    route(nb, "lr1", 4, "0.0.0.0/0", "10.0.0.11", options=sym)
    route(nb, "lr1", 5, "0.0.0.0/0", "10.0.0.12", options=sym)
    add_chassis(sb, "gw1", "192.168.0.1")  # without ct-no-masked-label
    table = build_flows(nb.db, sb)
    gr0, lr1 = nb.uuid("Logical_Router", "gr0"), nb.uuid("Logical_Router", "lr1")
    replies = {ln for ln in lines(table, gr0) if ln[0] == 10300}
    assert len(replies) == 1
    (_, match, actions), = replies
    assert match == ("ct.rpl && reg9[5] == 1 && ct_label.ecmp_reply_port == 1 && "
                     "reg7 == 0 && ip4.dst == 0.0.0.0/0")
    assert 'outport = "gr0-a"' in actions and "reg1 = 10.0.0.1" in actions
    assert len({ln for ln in lines(table, gr0, Stage.LR_IN_ECMP_STATEFUL) if ln[0] == 100}) == 6
    assert (65535, match.split(" && reg7")[0], "next;") in lines(table, gr0, Stage.LR_IN_POLICY)
    assert {ln for ln in lines(table, lr1, Stage.LR_IN_ECMP_STATEFUL) if ln[0] == 100} == set()
    assert not any(ln[0] == 10300 for ln in lines(table, lr1))


def test_bfd_session_down_removes_its_route_up_keeps_it_with_a_twin(
        nb: Nb, sb: LocalDb) -> None:
    lr = two_port_router(nb)
    up = nb.db.insert("BFD", logical_port="lr0-b", dst_ip="10.1.0.254", status="up")
    down = nb.db.insert("BFD", logical_port="lr0-b", dst_ip="10.1.0.253", status="down")
    route(nb, "lr0", 1, "10.50.0.0/16", "10.1.0.254", bfd=up)
    route(nb, "lr0", 2, "10.60.0.0/16", "10.1.0.253", bfd=down)
    route(nb, "lr0", 3, "10.70.0.0/16", "10.1.0.252", bfd=down)  # not its next hop
    got = {ln[:2] for ln in lines(build_flows(nb.db, sb), lr) if "reg7" in ln[1]}
    assert got == {(49, "reg7 == 0 && ip4.dst == 10.50.0.0/16"),
                   (50, "reg7 == 0 && ip4.dst == 10.50.0.0/16 && udp.dst == 3784"),
                   (49, "reg7 == 0 && ip4.dst == 10.70.0.0/16"),
                   (50, "reg7 == 0 && ip4.dst == 10.70.0.0/16 && udp.dst == 3784")}


def test_policies(nb: Nb, sb: LocalDb) -> None:
    lr = two_port_router(nb)
    policy = "Logical_Router_Policy"
    add_row(nb, "lr0", "policies", policy, uid(1), priority=30, match="ip4.src == 10.0.0.5",
            action="allow", options={"pkt_mark": "7"})
    add_row(nb, "lr0", "policies", policy, uid(2), priority=20, match="ip4", action="drop")
    add_row(nb, "lr0", "policies", policy, uid(3), priority=10, match="ip4.src == 10.0.0.6",
            action="reroute", nexthops=["10.1.0.9"])
    add_row(nb, "lr0", "policies", policy, uid(4), priority=9, match="ip4.src == 10.0.0.7",
            action="reroute", nexthops=["192.0.2.1"])
    add_row(nb, "lr0", "policies", policy, uid(5), priority=8, match="ip4.src == 10.0.0.8",
            action="reroute", nexthops=["10.1.0.9", "fd00::9"])
    add_row(nb, "lr0", "policies", policy, uid(6), priority=7, match="ip4.src == 10.0.0.9",
            action="reroute", nexthops=["10.1.0.9", "10.0.0.9"])
    table = build_flows(nb.db, sb)
    hop = 'reg0 = {}; reg1 = {}; eth.src = {}; outport = "{}"; flags.loopback = 1; '
    b = ("10.1.0.1", "00:00:00:00:ff:02", "lr0-b")
    assert lines(table, lr, Stage.LR_IN_POLICY) == {
        (0, "1", "reg8[0..15] = 0; next;"),
        (30, "ip4.src == 10.0.0.5", "pkt.mark = 7; reg8[0..15] = 0; next;"),
        (20, "ip4", "drop;"),
        (10, "ip4.src == 10.0.0.6", hop.format("10.1.0.9", *b) + "reg8[0..15] = 0; next;"),
        (7, "ip4.src == 10.0.0.9", "reg8[0..15] = 2; reg8[16..31] = select(1, 2);")}
    assert lines(table, lr, Stage.LR_IN_POLICY_ECMP) == {
        (0, "1", "drop;"), (150, "reg8[0..15] == 0", "next;"),
        (100, "reg8[0..15] == 2 && reg8[16..31] == 1",
         hop.format("10.0.0.9", "10.0.0.1", "00:00:00:00:ff:01", "lr0-a") + "next;"),
        (100, "reg8[0..15] == 2 && reg8[16..31] == 2", hop.format("10.1.0.9", *b) + "next;")}


def test_mcast_relay_floods_statically_only_with_an_enabled_flooding_port(
        nb: Nb, sb: LocalDb) -> None:
    lr = two_port_router(nb, options={"mcast_relay": "true"})
    relay_drop = (10450, "ip4.mcast || ip6.mcast", "drop;")
    assert relay_drop in lines(build_flows(nb.db, sb), lr)
    nb.set("Logical_Router_Port", "lr0-b", options={"mcast_flood": "true"}, enabled=[False])
    assert relay_drop in lines(build_flows(nb.db, sb), lr)
    nb.set("Logical_Router_Port", "lr0-b", enabled=[True])
    got = lines(build_flows(nb.db, sb), lr)
    assert relay_drop not in got
    assert {ln for ln in got if ln[0] in (10460, 10450) or "eth.src" in ln[1]} == {
        (10550, "eth.src == 00:00:00:00:ff:01 && igmp", "drop;"),
        (10550, "eth.src == 00:00:00:00:ff:01 && (mldv1 || mldv2)", "drop;"),
        (10550, "eth.src == 00:00:00:00:ff:02 && igmp", "drop;"),
        (10550, "eth.src == 00:00:00:00:ff:02 && (mldv1 || mldv2)", "drop;"),
        (10460, "igmp", 'clone { outport = "_MC_static"; next; };'),
        (10460, "mldv1 || mldv2", 'clone { outport = "_MC_static"; next; };'),
        (10450, "ip4.mcast || ip6.mcast",
         'clone { outport = "_MC_static"; ip.ttl--; next; };')}
