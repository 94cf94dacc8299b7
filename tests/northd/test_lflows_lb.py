"""Load balancing, conntrack and hairpin flows of a switch (`lflows.ls_lb`,
`lflows.ls_stateful`), built from in-memory databases: what a VIP asks for and on
which switches, what a switch without load balancers keeps, health-checked backends,
rejects with their meters, affinity, and template VIPs."""

from __future__ import annotations

from typing import Any

from pyovsdb.northd.build.lb import parse_lb
from pyovsdb.northd.lflows.ls_lb import SwitchVip, _template_vip, selection_fields
from pyovsdb.northd.lflows.stages import Stage
from pyovsdb.northd.lflows.table import Flow, LflowTable
from pyovsdb.northd.testing import LocalDb, Nb, add_chassis, build_flows

Line = tuple[int, str, str]


def lines(table: LflowTable, dp_key: str, stage: Stage) -> set[Line]:
    return {(f.key.priority, f.key.match, f.key.actions)
            for f in table.on(dp_key) if f.key.stage is stage}


def flow(table: LflowTable, stage: Stage, priority: int, match: str) -> Flow:
    found = [f for f in table.flows.values() if f.key.stage is stage
             and f.key.priority == priority and f.key.match == match]
    assert len(found) == 1, found
    return found[0]


def lb_add(nb: Nb, name: str, vips: dict[str, str], *switches: str, **cols: Any) -> str:
    uuid = nb.db.insert("Load_Balancer", name=name, vips=vips, **cols)
    for ls in switches:
        nb.db.add_to("Logical_Switch", nb.uuid("Logical_Switch", ls), "load_balancer", uuid)
    return uuid


def insert_with_child(db: LocalDb, table: str, column: str, child_table: str,
                      child: dict[str, Any], **row: Any) -> str:
    """A row and the non-root row its `column` holds, in one transaction (a child
    inserted alone would be garbage-collected)."""
    db.transact([{"op": "insert", "table": child_table, "uuid-name": "child",
                  "row": db.json_row(child_table, child)},
                 {"op": "insert", "table": table,
                  "row": {**db.json_row(table, row), column: ["named-uuid", "child"]}}])
    return str(db.last_results[1]["uuid"][1])


def test_switch_without_vips_only_passes_through(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    table = build_flows(nb.db, sb)
    pre_lb = lines(table, sw, Stage.LS_IN_PRE_LB)
    assert (0, "1", "next;") in pre_lb
    assert not any(m == "ip" for _, m, _ in pre_lb)
    assert lines(table, sw, Stage.LS_IN_PRE_HAIRPIN) == {(0, "1", "next;")}
    assert lines(table, sw, Stage.LS_IN_LB) == {(0, "1", "next;")}
    assert lines(table, sw, Stage.LS_IN_PRE_STATEFUL) == {
        (0, "1", "next;"), (110, "reg0[2] == 1", "ct_lb_mark;"),
        (100, "reg0[0] == 1", "ct_next;")}
    assert lines(table, sw, Stage.LS_IN_LB_AFF_CHECK) == {(0, "1", "next;")}


def test_vip_flows_on_every_switch_of_the_lb(nb: Nb, sb: LocalDb) -> None:
    sw0, sw1, sw2 = nb.ls_add("sw0"), nb.ls_add("sw1"), nb.ls_add("sw2")
    lb = lb_add(nb, "lb0", {"10.0.0.100:80": "10.0.0.10:8080,10.0.0.11:8080",
                            "fd00::100": "fd00::10"}, "sw0", "sw1", protocol="udp")
    table = build_flows(nb.db, sb)
    v4 = flow(table, Stage.LS_IN_LB, 120, "ct.new && ip4.dst == 10.0.0.100 && udp.dst == 80")
    assert v4.key.actions == "reg0[1] = 0; ct_lb_mark(backends=10.0.0.10:8080,10.0.0.11:8080);"
    assert set(v4.datapaths) == {sw0, sw1}
    assert v4.hint == lb[:8]
    v6 = flow(table, Stage.LS_IN_LB, 110, "ct.new && ip6.dst == fd00::100")
    assert v6.key.actions == "reg0[1] = 0; ct_lb_mark(backends=fd00::10);"
    pre = flow(table, Stage.LS_IN_PRE_STATEFUL, 120,
               "reg0[2] == 1 && ip4.dst == 10.0.0.100 && udp.dst == 80")
    assert pre.key.actions == "reg1 = 10.0.0.100; reg2[0..15] = 80; ct_lb_mark;"
    owned = {k.stage for owner, asked in table.owners.items()
             if owner[:2] == ("lb", lb) for k, _ in asked}  # (its VIPs' owners too)
    assert owned == {Stage.LS_IN_LB, Stage.LS_IN_PRE_STATEFUL}
    for sw in (sw0, sw1):
        assert (100, "ip", "reg0[2] = 1; next;") in lines(table, sw, Stage.LS_OUT_PRE_LB)
        assert len(lines(table, sw, Stage.LS_IN_NAT_HAIRPIN)) == 4
    assert lines(table, sw2, Stage.LS_IN_NAT_HAIRPIN) == {(0, "1", "next;")}


def test_router_and_localnet_ports_skip_conntrack(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    nb.lr_add("lr0")
    nb.connect("sw0", "lr0", "lrp0", "00:00:00:00:ff:01", "10.0.0.1/24")
    nb.lsp_add("sw0", "ln0", type="localnet", addresses=["unknown"],
               options={"network_name": "phys"})
    table = build_flows(nb.db, sb)
    out = flow(table, Stage.LS_OUT_PRE_LB, 110, 'ip && outport == "sw0-lrp0"')
    assert out.key.actions == "ct_clear; next;" and out.io_port == "sw0-lrp0"
    assert (110, 'ip && inport == "ln0"', "next;") in lines(table, sw, Stage.LS_IN_PRE_LB)
    lb_add(nb, "lb0", {"10.0.0.100": "10.0.0.10"}, "sw0")
    table = build_flows(nb.db, sb)
    pre_lb = lines(table, sw, Stage.LS_IN_PRE_LB)
    assert (110, 'ip && inport == "ln0"', "next;") not in pre_lb  # balanced from there
    assert (110, 'ip && inport == "sw0-lrp0"', "next;") in pre_lb


def test_no_backends_rejects_with_the_switch_meter(nb: Nb, sb: LocalDb) -> None:
    sw0, sw1 = nb.ls_add("sw0"), nb.ls_add("sw1")
    insert_with_child(nb.db, "Meter", "bands", "Meter_Band",
                      {"action": "drop", "rate": 10}, name="m1", unit="pktps")
    copp = nb.db.insert("Copp", name="c", meters={"reject": "m1"})
    nb.set("Logical_Switch", "sw0", copp=copp)
    lb_add(nb, "lb0", {"10.0.0.50:80": ""}, "sw0", "sw1", protocol="tcp",
           options={"reject": "true"})
    lb_add(nb, "lb1", {"10.0.0.51": ""}, "sw1", options={"event": "true"})
    table = build_flows(nb.db, sb)
    rejects = [f for f in table.flows.values() if f.key.stage is Stage.LS_IN_LB
               and f.key.priority == 120]
    assert {(f.key.meter, tuple(f.datapaths)) for f in rejects} == {("m1", (sw0,)),
                                                                    (None, (sw1,))}
    assert rejects[0].key.actions == ("reg0 = 0; reject { outport <-> inport; "
                                      "next(pipeline=egress,table=5);};")
    assert (110, "ct.new && ip4.dst == 10.0.0.51", "drop;") in \
        lines(table, sw1, Stage.LS_IN_LB)
    event = flow(table, Stage.LS_IN_PRE_LB, 130, "ip4.dst == 10.0.0.51 && tcp")
    assert 'vip = "10.0.0.51", protocol = "tcp"' in event.key.actions
    assert not any(f.key.priority == 130 and "10.0.0.50" in f.key.match
                   for f in table.flows.values())


def test_health_checked_backends_follow_monitor_status(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    nb.lsp_add("sw0", "be1", addresses=["00:00:00:00:00:01 10.0.0.10"])
    nb.lsp_add("sw0", "be2", addresses=["00:00:00:00:00:02 10.0.0.11"])
    lb = insert_with_child(
        nb.db, "Load_Balancer", "health_check", "Load_Balancer_Health_Check",
        {"vip": "10.0.0.100:80"}, name="lb0", protocol="tcp",
        vips={"10.0.0.100:80": "10.0.0.10:80,10.0.0.11:80,10.0.0.12:80"},
        ip_port_mappings={"10.0.0.10": "be1:10.0.0.2", "10.0.0.11": "be2:10.0.0.2"})
    nb.db.add_to("Logical_Switch", sw, "load_balancer", lb)
    match = "ct.new && ip4.dst == 10.0.0.100 && tcp.dst == 80"
    table = build_flows(nb.db, sb)
    assert flow(table, Stage.LS_IN_LB, 120, match).key.actions == \
        "reg0[1] = 0; ct_lb_mark(backends=10.0.0.10:80,10.0.0.11:80);"
    arp = lines(table, sw, Stage.LS_IN_ARP_RSP)
    assert sum(1 for _, m, _ in arp if m == "arp.tpa == 10.0.0.2 && arp.op == 1") == 1
    sb.insert("Service_Monitor", ip="10.0.0.11", port=80, protocol="tcp",
              logical_port="be2", status="offline")
    table = build_flows(nb.db, sb)
    assert flow(table, Stage.LS_IN_LB, 120, match).key.actions == \
        "reg0[1] = 0; ct_lb_mark(backends=10.0.0.10:80);"
    # An online monitor whose port is not up counts as offline.
    sb.insert("Service_Monitor", ip="10.0.0.10", port=80, protocol="tcp",
              logical_port="be1", status="online")
    table = build_flows(nb.db, sb)
    assert flow(table, Stage.LS_IN_LB, 120, match).key.actions == "drop;"


def test_affinity_learns_and_reuses_a_backend(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    lb_add(nb, "lb0", {"[fd00::100]:80": "[fd00::10]:8080"}, "sw0", protocol="tcp",
           options={"affinity_timeout": "70000"})
    table = build_flows(nb.db, sb)
    assert lines(table, sw, Stage.LS_IN_LB_AFF_CHECK) == {
        (0, "1", "next;"),
        (100, "ct.new && ip6 && xxreg1 == fd00::100 && reg2[0..15] == 80",
         "reg9[6] = chk_lb_aff(); next;")}
    assert (100, "reg9[6] == 0 && ct.new && ip6 && xxreg1 == fd00::100 && reg2[0..15] == 80"
                 " && ip6.dst == fd00::10 && tcp.dst == 8080",
            'commit_lb_aff(vip = "[fd00::100]:80", backend = "[fd00::10]:8080", proto = tcp,'
            " timeout = 65535); /* drop */") in lines(table, sw, Stage.LS_IN_LB_AFF_LEARN)
    assert (150, "reg9[6] == 1 && ct.new && ip6 && xxreg0 == fd00::10 && reg8[0..15] == 8080",
            "reg0[1] = 0; xxreg1 = fd00::100; reg2[0..15] = 80; "
            "ct_lb_mark(backends=[fd00::10]:8080);") in lines(table, sw, Stage.LS_IN_LB)


def test_chassis_without_ct_mark_use_ct_label(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    add_chassis(sb, "hv1", "192.168.0.1", other_config={"ct-no-masked-label": "false"})
    lb_add(nb, "lb0", {"10.0.0.100": "10.0.0.10"}, "sw0")
    table = build_flows(nb.db, sb)
    assert (110, "ct.new && ip4.dst == 10.0.0.100",
            "reg0[1] = 0; ct_lb(backends=10.0.0.10);") in lines(table, sw, Stage.LS_IN_LB)
    assert (100, "reg0[1] == 1 && reg0[13] == 0",
            "ct_commit { ct_label.blocked = 0; }; next;") in \
        lines(table, sw, Stage.LS_OUT_STATEFUL)


def test_template_vips_split_as_23_03_splits_them() -> None:
    vip = _template_vip("^vip:^port", "^b1:80,^b2", True)
    assert isinstance(vip, SwitchVip)
    assert (vip.ip, vip.port_str, vip.v4_address) == ("^vip", "^port", False)
    assert [(b.ip, b.port_str, b.port) for b in vip.backends] == [("^b1", "80", 0),
                                                                   ("^b2", None, 0)]
    assert _template_vip("^a:^b:^c", "^x", True) is None
    explicit = _template_vip("^vip6:80", "[fd00::1]:80", False)
    assert explicit is not None and [(b.ip, b.port) for b in explicit.backends] == \
        [("fd00::1", 80)]
    assert _template_vip("^vip6:80", "fd00::1:2", False) is None  # port on VIP only


def test_selection_fields_name_the_protocol(nb: Nb) -> None:
    uuid = nb.db.insert("Load_Balancer", name="lb", protocol="udp",
                        selection_fields=["tp_src", "ip_dst", "tp_dst"])
    assert selection_fields(parse_lb(nb.db.tables["Load_Balancer"].rows[uuid])) == \
        "ip_dst,udp_dst,udp_src"
    uuid = nb.db.insert("Load_Balancer", name="lb2", selection_fields=["tp_src"])
    assert selection_fields(parse_lb(nb.db.tables["Load_Balancer"].rows[uuid])) == "tp_src"
