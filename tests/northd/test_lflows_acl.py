"""The ACL, ACL hint, pre-ACL and QoS flows of a switch (`lflows.ls_acl`,
`ls_acl_rules`, `ls_qos`), built from in-memory databases: what 23.03 writes for a
switch without ACLs, for stateless and stateful switches, for port-group ACLs, logging,
reject meters, the default-drop option, chassis without `ct_mark.blocked`, and QoS."""

from __future__ import annotations

from typing import Any

from pyovsdb.northd.lflows.stages import Stage
from pyovsdb.northd.lflows.table import LflowTable
from pyovsdb.northd.testing import LocalDb, Nb, add_chassis, build_flows

OUR_STAGES = (Stage.LS_IN_PRE_ACL, Stage.LS_IN_ACL_HINT, Stage.LS_IN_ACL,
              Stage.LS_IN_ACL_AFTER_LB, Stage.LS_IN_QOS_MARK, Stage.LS_IN_QOS_METER,
              Stage.LS_OUT_PRE_ACL, Stage.LS_OUT_ACL_HINT, Stage.LS_OUT_ACL,
              Stage.LS_OUT_QOS_MARK, Stage.LS_OUT_QOS_METER)

Line = tuple[str, int, str, str]


def lines(table: LflowTable, dp_key: str, *stages: Stage) -> set[Line]:
    wanted = stages or OUR_STAGES
    return {(f.key.stage.stage_name, f.key.priority, f.key.match, f.key.actions)
            for f in table.on(dp_key) if f.key.stage in wanted}


def owned(table: LflowTable, owner: Any) -> set[tuple[str, Line]]:
    """(datapath key, flow) of everything `owner` asked for in this area's stages."""
    return {(dp, (k.stage.stage_name, k.priority, k.match, k.actions))
            for k, dp in table.owners.get(owner, []) if k.stage in OUR_STAGES}


def acl(nb: Nb, table: str, parent: str, direction: str, priority: int, match: str,
        action: str, **cols: Any) -> str:
    return nb.add_child(table, parent, "acls", "ACL", direction=direction,
                        priority=priority, match=match, action=action, **cols)


BARE = {
    ("ls_in_pre_acl", 0, "1", "next;"),
    ("ls_out_pre_acl", 0, "1", "next;"),
    ("ls_in_pre_acl", 110, "eth.dst == $svc_monitor_mac", "next;"),
    ("ls_out_pre_acl", 110, "eth.src == $svc_monitor_mac", "next;"),
    ("ls_in_acl_hint", 65535, "1", "next;"),
    ("ls_out_acl_hint", 65535, "1", "next;"),
    ("ls_in_acl", 65535, "1", "next;"),
    ("ls_out_acl", 65535, "1", "next;"),
    ("ls_in_acl_after_lb", 0, "1", "next;"),
    ("ls_in_acl", 65532, "nd || nd_ra || nd_rs || mldv1 || mldv2", "next;"),
    ("ls_out_acl", 65532, "nd || nd_ra || nd_rs || mldv1 || mldv2", "next;"),
    ("ls_in_acl_after_lb", 65532, "nd || nd_ra || nd_rs || mldv1 || mldv2", "next;"),
    ("ls_in_qos_mark", 0, "1", "next;"),
    ("ls_out_qos_mark", 0, "1", "next;"),
    ("ls_in_qos_meter", 0, "1", "next;"),
    ("ls_out_qos_meter", 0, "1", "next;"),
}
REJECT_TO_EGRESS = ("reg0 = 0; reject { /* eth.dst <-> eth.src; ip.dst <-> ip.src; is "
                    "implicit. */ outport <-> inport; next(pipeline=egress,table=5); };")


def test_switch_without_acls_passes_every_acl_stage(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    nb.lsp_add("sw0", "p1", addresses=["00:00:00:00:00:01 10.0.0.1"])
    assert lines(build_flows(nb.db, sb), sw) == BARE


def test_stateless_switch_acts_on_each_acl_at_once(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    allow = acl(nb, "Logical_Switch", "sw0", "from-lport", 1000, "ip4", "allow")
    acl(nb, "Logical_Switch", "sw0", "to-lport", 900, "tcp", "drop")
    acl(nb, "Logical_Switch", "sw0", "from-lport", 800, "udp", "reject")
    acl(nb, "Logical_Switch", "sw0", "to-lport", 700, "arp", "allow-stateless")
    table = build_flows(nb.db, sb)
    got = lines(table, sw)
    assert {("ls_in_acl", 2000, "ip4", "next;"),
            ("ls_out_acl", 1900, "tcp", "/* drop */"),
            ("ls_in_acl", 1800, "udp", REJECT_TO_EGRESS),
            ("ls_out_acl", 1700, "arp", "next;"),
            ("ls_in_acl", 0, "1", "next;"),
            ("ls_in_acl_hint", 0, "1", "next;"),
            ("ls_in_acl", 34000, "eth.dst == $svc_monitor_mac", "next;")} <= got
    # Nothing goes to conntrack: no hints, no commit, no stateless pre-ACL filter.
    assert not [ln for ln in got if ln[0] == "ls_in_acl_hint" and ln[1] > 0]
    assert not [ln for ln in got if ln[0].endswith("pre_acl") and ln[1] > 110]
    assert ("ls_in_pre_acl", 100, "ip", "reg0[0] = 1; next;") not in got
    assert owned(table, ("acl", allow)) == {(sw, ("ls_in_acl", 2000, "ip4", "next;"))}
    hints = {f.hint for f in table.on(sw) if f.key.priority == 2000}
    assert hints == {allow[:8]}


def test_stateful_switch_commits_allows_and_blocks_drops(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    nb.lr_add("lr0")
    nb.connect("sw0", "lr0", "lrp0", "00:00:00:00:ff:01", "10.0.0.254/24")
    acl(nb, "Logical_Switch", "sw0", "from-lport", 1002, "tcp", "allow-related")
    acl(nb, "Logical_Switch", "sw0", "to-lport", 1001, "udp", "allow", label=7)
    acl(nb, "Logical_Switch", "sw0", "from-lport", 1000, "icmp4", "drop")
    acl(nb, "Logical_Switch", "sw0", "to-lport", 999, "tcp.dst == 25", "reject")
    acl(nb, "Logical_Switch", "sw0", "from-lport", 998, "arp", "allow-stateless")
    table = build_flows(nb.db, sb)
    got = lines(table, sw)
    assert {
        ("ls_in_acl", 2002, "reg0[7] == 1 && (tcp)", "reg0[1] = 1; next;"),
        ("ls_in_acl", 2002, "reg0[8] == 1 && (tcp)", "next;"),
        ("ls_out_acl", 2001, "reg0[7] == 1 && (udp)",
         "reg0[1] = 1; reg0[13] = 1; reg3 = 7; next;"),
        ("ls_out_acl", 2001, "reg0[8] == 1 && (udp)",
         "reg0[1] = 1; reg0[13] = 1; reg3 = 7; next;"),
        ("ls_in_acl", 2000, "reg0[9] == 1 && (icmp4)", "/* drop */"),
        ("ls_in_acl", 2000, "reg0[10] == 1 && (icmp4)",
         "ct_commit { ct_mark.blocked = 1; }; /* drop */"),
        ("ls_out_acl", 1999, "(reg0[9] == 1) && tcp.dst == 25",
         REJECT_TO_EGRESS.replace("egress,table=5", "ingress,table=25")),
        ("ls_out_acl", 1999, "(reg0[10] == 1) && tcp.dst == 25",
         "ct_commit { ct_mark.blocked = 1; };  "
         + REJECT_TO_EGRESS.replace("egress,table=5", "ingress,table=25")),
        ("ls_in_pre_acl", 1998, "arp", "reg0[16] = 1; next;"),
        ("ls_in_acl", 1998, "arp", "next;"),
        ("ls_in_pre_acl", 100, "ip", "reg0[0] = 1; next;"),
        ("ls_in_acl", 1, "ip && !ct.est", "reg0[1] = 1; next;"),
        ("ls_in_acl", 65532, "!ct.est && ct.rel && !ct.new && !ct.inv && "
         "ct_mark.blocked == 0", "reg0[17] = 1; ct_commit_nat;"),
        ("ls_in_acl_after_lb", 65532, "reg0[17] == 1", "next;"),
        ("ls_in_acl_hint", 4, "!ct.new && ct.est && !ct.rpl && ct_mark.blocked == 0",
         "reg0[8] = 1; reg0[10] = 1; next;"),
    } <= got
    # The router port skips conntrack, on its own behalf and tagged with its name.
    assert owned(table, ("port", "sw0-lrp0")) == {
        (sw, ("ls_in_pre_acl", 110, 'ip && inport == "sw0-lrp0"', "next;")),
        (sw, ("ls_out_pre_acl", 110, 'ip && outport == "sw0-lrp0"', "next;"))}
    tagged = {f.io_port for f in table.on(sw) if "sw0-lrp0" in f.key.match}
    assert tagged == {"sw0-lrp0"}


def test_port_group_acl_follows_each_switch_of_the_group(nb: Nb, sb: LocalDb) -> None:
    sw0, sw1, sw2 = nb.ls_add("sw0"), nb.ls_add("sw1"), nb.ls_add("sw2")
    p1 = nb.lsp_add("sw0", "p1", addresses=["00:00:00:00:00:01 10.0.0.1"])
    p2 = nb.lsp_add("sw1", "p2", addresses=["00:00:00:00:00:02 10.0.0.2"])
    nb.lsp_add("sw2", "p3", addresses=["00:00:00:00:00:03 10.0.0.3"])
    nb.db.insert("Port_Group", name="pg1", ports=[p1, p2])
    rule = acl(nb, "Port_Group", "pg1", "to-lport", 1000, "outport == @pg1 && ip4.src == "
               "$pg1_ip4", "drop")
    acl(nb, "Logical_Switch", "sw1", "from-lport", 1000, "ip", "allow-related")
    table = build_flows(nb.db, sb)
    match = "outport == @pg1 && ip4.src == $pg1_ip4"
    assert owned(table, ("acl", rule)) == {
        (sw0, ("ls_out_acl", 2000, match, "/* drop */")),
        (sw1, ("ls_out_acl", 2000, f"reg0[9] == 1 && ({match})", "/* drop */")),
        (sw1, ("ls_out_acl", 2000, f"reg0[10] == 1 && ({match})",
               "ct_commit { ct_mark.blocked = 1; }; /* drop */"))}
    assert lines(table, sw2) == BARE


def test_a_port_group_of_a_port_two_switches_list(nb: Nb, sb: LocalDb) -> None:
    """One switch port listed by two switches (23.03 keeps it on the first, sw0, and
    reports the second): its port group is on sw0 alone, as 23.03 finds it by the
    switches' ports in their order."""
    sw0, sw1 = nb.ls_add("sw0"), nb.ls_add("sw1")
    port = nb.lsp_add("sw0", "p1", addresses=["00:00:00:00:00:01 10.0.0.1"])
    nb.db.add_to("Logical_Switch", sw1, "ports", port)
    nb.db.insert("Port_Group", name="pg1", ports=[port])
    rule = acl(nb, "Port_Group", "pg1", "to-lport", 1000, "outport == @pg1", "drop")
    table = build_flows(nb.db, sb)
    assert {dp for dp, _ in owned(table, ("acl", rule))} == {sw0}
    assert lines(table, sw1) == BARE


def test_logging_meters_and_log_related(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    nb.meter_add("plain")
    nb.meter_add("fair", fair=True)
    acl(nb, "Logical_Switch", "sw0", "to-lport", 1000, "tcp", "drop", log=True,
        name="d", severity="alert", meter="plain")
    fair = acl(nb, "Logical_Switch", "sw0", "to-lport", 1001, "udp", "reject", log=True,
               meter="fair")
    acl(nb, "Logical_Switch", "sw0", "from-lport", 1002, "ip4", "allow-related", log=True,
        name="r", label=5, options={"log-related": "true"})
    acl(nb, "Logical_Switch", "sw0", "from-lport", 1003, "ip6", "allow-related", log=True,
        options={"log-related": "true"})
    got = lines(build_flows(nb.db, sb), sw)
    assert ("ls_out_acl", 2000, "reg0[9] == 1 && (tcp)",
            'log(name="d", severity=alert, verdict=drop, meter="plain"); /* drop */') in got
    fair_log = f'log(severity=info, verdict=reject, meter="fair__{fair}"); '
    assert ("ls_out_acl", 2001, "(reg0[9] == 1) && udp",
            fair_log + REJECT_TO_EGRESS.replace("egress,table=5", "ingress,table=25")) in got
    related = [ln for ln in got if ln[1] == 65533]
    log = 'log(name="r", severity=info, verdict=allow); next;'
    # Only the labelled ACL logs its replies, and in the other pipeline.
    assert sorted(related) == [
        ("ls_out_acl", 65533, "!ct.est && ct.rel && !ct.new && !ct.inv && "
         "ct_mark.blocked == 0 && ct_label.label == 5", log),
        ("ls_out_acl", 65533, "ct.est && !ct.rel && !ct.new && !ct.inv && ct.rpl && "
         "ct_mark.blocked == 0 && ct_label.label == 5", log)]


def test_reject_uses_the_switch_copp_meter_only_if_it_exists(nb: Nb, sb: LocalDb) -> None:
    sw0, sw1 = nb.ls_add("sw0"), nb.ls_add("sw1")
    nb.meter_add("mrej")
    nb.set("Logical_Switch", "sw0", copp=nb.db.insert("Copp", name="c0",
                                                      meters={"reject": "mrej"}))
    nb.set("Logical_Switch", "sw1", copp=nb.db.insert("Copp", name="c1",
                                                      meters={"reject": "gone"}))
    for name in ("sw0", "sw1"):
        acl(nb, "Logical_Switch", name, "from-lport", 1000, "udp", "reject")
    table = build_flows(nb.db, sb)
    meters = {dp: {f.key.meter for f in table.on(dp) if f.key.priority == 2000}
              for dp in (sw0, sw1)}
    assert meters == {sw0: {"mrej"}, sw1: {None}}


def test_default_drop_and_old_chassis(nb: Nb, sb: LocalDb) -> None:
    nb.db.insert("NB_Global", options={"default_acl_drop": "true",
                                       "use_ct_inv_match": "false"})
    add_chassis(sb, "ch1", "192.168.0.1", other_config={"ct-no-masked-label": "false"})
    sw = nb.ls_add("sw0")
    acl(nb, "Logical_Switch", "sw0", "to-lport", 1000, "ip4", "allow-related")
    got = lines(build_flows(nb.db, sb), sw)
    assert {("ls_in_acl", 0, "1", "drop;"),
            ("ls_in_acl_after_lb", 0, "1", "drop;"),
            ("ls_out_acl", 1, "ip && !ct.est", "drop;"),
            ("ls_out_acl", 1, "ip && ct.est && ct_label.blocked == 1", "reg0[1] = 1; next;"),
            ("ls_out_acl", 65532, "(ct.est && ct.rpl && ct_label.blocked == 1)", "drop;"),
            ("ls_in_acl", 65532, "!ct.est && ct.rel && !ct.new && ct_label.blocked == 0",
             "reg0[17] = 1; next;")} <= got


def test_apply_after_lb_and_load_balancer_state(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    lb = nb.db.insert("Load_Balancer", name="lb0", protocol="tcp",
                      vips={"10.0.0.100:80": "10.0.0.1:80"})
    nb.set("Logical_Switch", "sw0", load_balancer=[lb])
    acl(nb, "Logical_Switch", "sw0", "from-lport", 1000, "ip4.dst == 10.0.0.1", "allow",
        options={"apply-after-lb": "true"})
    acl(nb, "Logical_Switch", "sw0", "to-lport", 900, "arp", "allow-stateless")
    got = lines(build_flows(nb.db, sb), sw)
    # The VIP makes the switch stateful; pre_acl sends nothing to conntrack itself.
    assert {("ls_in_acl_after_lb", 2000, "reg0[7] == 1 && (ip4.dst == 10.0.0.1)",
             "reg0[1] = 1; next;"),
            ("ls_out_pre_acl", 1900, "arp", "reg0[16] = 1; next;"),
            ("ls_in_acl_hint", 7, "ct.new && !ct.est", "reg0[7] = 1; reg0[9] = 1; next;"),
            } <= got
    assert ("ls_in_pre_acl", 100, "ip", "reg0[0] = 1; next;") not in got
    assert not [ln for ln in got if ln[0] == "ls_in_acl" and 1000 < ln[1] < 34000]


def test_qos_marks_and_meters(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    for direction, prio, match, action, bandwidth in (
            ("from-lport", 100, "ip4", {"dscp": 12}, {}),
            ("to-lport", 200, "tcp", {}, {"rate": 1000, "burst": 100}),
            ("from-lport", 300, "udp", {"dscp": 48}, {"rate": 2000}),
            ("to-lport", 60, "icmp4", {"dscp": 1}, {"burst": 500})):
        nb.add_child("Logical_Switch", "sw0", "qos_rules", "QoS", direction=direction,
                     priority=prio, match=match, action=action, bandwidth=bandwidth)
    got = lines(build_flows(nb.db, sb), sw, Stage.LS_IN_QOS_MARK, Stage.LS_IN_QOS_METER,
                Stage.LS_OUT_QOS_MARK, Stage.LS_OUT_QOS_METER)
    assert got == {
        ("ls_in_qos_mark", 0, "1", "next;"), ("ls_out_qos_mark", 0, "1", "next;"),
        ("ls_in_qos_meter", 0, "1", "next;"), ("ls_out_qos_meter", 0, "1", "next;"),
        ("ls_in_qos_mark", 100, "ip4", "ip.dscp = 12; next;"),
        ("ls_out_qos_meter", 200, "tcp", "set_meter(1000, 100); next;"),
        ("ls_in_qos_mark", 300, "udp", "ip.dscp = 48; next;"),
        ("ls_in_qos_meter", 300, "udp", "set_meter(2000); next;"),
        ("ls_out_qos_mark", 60, "icmp4", "ip.dscp = 1; next;")}
