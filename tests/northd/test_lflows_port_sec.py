"""The admission, port security, FDB, external-port and unknown-destination flows of a
switch (`lflows.ls_port_sec`), built from in-memory databases: what 23.03 writes for
each kind of port, and what it leaves to the generic per-switch flows."""

from __future__ import annotations

from typing import Any

from pyovsdb.northd.lflows.stages import Stage
from pyovsdb.northd.lflows.table import Flow, LflowTable
from pyovsdb.northd.testing import LocalDb, Nb, build_flows, port_bindings

OUR_STAGES = (Stage.LS_IN_CHECK_PORT_SEC, Stage.LS_IN_APPLY_PORT_SEC, Stage.LS_IN_LOOKUP_FDB,
              Stage.LS_IN_PUT_FDB, Stage.LS_IN_EXTERNAL_PORT, Stage.LS_IN_L2_UNKNOWN,
              Stage.LS_OUT_CHECK_PORT_SEC, Stage.LS_OUT_APPLY_PORT_SEC)


def flows(table: LflowTable, dp_key: str, *stages: Stage) -> list[Flow]:
    wanted = stages or OUR_STAGES
    return [f for f in table.on(dp_key) if f.key.stage in wanted]


def lines(table: LflowTable, dp_key: str, *stages: Stage) -> set[tuple[str, int, str, str]]:
    return {(f.key.stage.stage_name, f.key.priority, f.key.match, f.key.actions)
            for f in flows(table, dp_key, *stages)}


def port_flows(table: LflowTable, name: str) -> set[tuple[str, int, str, str]]:
    """What the owner ("port", name) asked for, in this area's stages."""
    out = set()
    for key, _ in table.owners.get(("port", name), []):
        if key.stage in OUR_STAGES:
            out.add((key.stage.stage_name, key.priority, key.match, key.actions))
    return out


def lsp(nb: Nb, ls: str, name: str, *addresses: str, **cols: Any) -> str:
    return nb.lsp_add(ls, name, addresses=list(addresses), **cols)


BARE = {
    ("ls_in_check_port_sec", 100, "vlan.present", "drop;"),
    ("ls_in_check_port_sec", 100, "eth.src[40]", "drop;"),
    ("ls_in_check_port_sec", 50, "1", "reg0[15] = check_in_port_sec(); next;"),
    ("ls_in_apply_port_sec", 50, "reg0[15] == 1", "drop;"),
    ("ls_in_apply_port_sec", 0, "1", "next;"),
    ("ls_in_lookup_fdb", 0, "1", "next;"),
    ("ls_in_put_fdb", 0, "1", "next;"),
    ("ls_in_external_port", 0, "1", "next;"),
    ("ls_in_l2_unknown", 50, 'outport == "none"', "drop;"),
    ("ls_in_l2_unknown", 0, "1", "output;"),
    ("ls_out_check_port_sec", 100, "eth.mcast", "reg0[15] = 0; next;"),
    ("ls_out_check_port_sec", 0, "1", "reg0[15] = check_out_port_sec(); next;"),
    ("ls_out_apply_port_sec", 50, "reg0[15] == 1", "drop;"),
    ("ls_out_apply_port_sec", 0, "1", "output;"),
}


def test_port_security_is_generic_for_plain_vifs(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    lsp(nb, "sw0", "p1", "00:00:00:00:00:01 10.0.0.1",
        port_security=["00:00:00:00:00:01 10.0.0.1"])
    lsp(nb, "sw0", "p2", "00:00:00:00:00:02")
    table = build_flows(nb.db, sb)
    assert lines(table, sw) == BARE
    assert port_flows(table, "p1") == set()
    l2 = lines(table, sw, Stage.LS_IN_L2_LKUP)
    assert ("ls_in_l2_lkup", 0, "1", "outport = get_fdb(eth.dst); next;") in l2


def test_vlan_passthru_lets_tagged_frames_in(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0", other_config={"vlan-passthru": "true"})
    table = build_flows(nb.db, sb)
    got = lines(table, sw)
    assert ("ls_in_check_port_sec", 100, "vlan.present", "drop;") not in got
    assert got == BARE - {("ls_in_check_port_sec", 100, "vlan.present", "drop;")}


def test_disabled_port_is_dropped_both_ways_and_floods_nothing(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    uuid = lsp(nb, "sw0", "p1", "unknown", enabled=[False])
    table = build_flows(nb.db, sb)
    assert port_flows(table, "p1") == {
        ("ls_in_check_port_sec", 100, 'inport == "p1"', "reg0[15] = 1; next;"),
        ("ls_in_l2_unknown", 50, 'outport == "p1"', "drop;"),
        # Still learning: being disabled does not stop FDB learning.
        ("ls_in_lookup_fdb", 100, 'inport == "p1"',
         "reg0[11] = lookup_fdb(inport, eth.src); next;"),
        ("ls_in_put_fdb", 100, 'inport == "p1" && reg0[11] == 0',
         "put_fdb(inport, eth.src); next;"),
    }
    # Its "unknown" does not make the switch flood unknown destinations.
    assert ("ls_in_l2_unknown", 50, 'outport == "none"', "drop;") in lines(table, sw)
    (check,) = [f for f in flows(table, sw, Stage.LS_IN_CHECK_PORT_SEC)
                if f.key.match == 'inport == "p1"']
    assert check.io_port == "p1"
    assert check.hint == uuid[:8]


def test_unknown_floods_to_mc_unknown_unless_external(nb: Nb, sb: LocalDb) -> None:
    sw0 = nb.ls_add("sw0")
    sw1 = nb.ls_add("sw1")
    lsp(nb, "sw0", "p1", "unknown")
    lsp(nb, "sw1", "e1", "unknown", type="external")
    table = build_flows(nb.db, sb)
    assert ("ls_in_l2_unknown", 50, 'outport == "none"',
            'outport = "_MC_unknown"; output;') in lines(table, sw0)
    assert ("ls_in_l2_unknown", 50, 'outport == "none"', "drop;") in lines(table, sw1)


def test_fdb_learning_needs_unknown_and_no_port_security(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("sw0")
    lsp(nb, "sw0", "learns", "00:00:00:00:00:01", "unknown")
    lsp(nb, "sw0", "secured", "unknown", port_security=["00:00:00:00:00:02"])
    lsp(nb, "sw0", "bad_ps", "unknown", port_security=["not-a-mac"])
    lsp(nb, "sw0", "known", "00:00:00:00:00:03")
    lsp(nb, "sw0", "lport", "unknown", type="localport")
    lsp(nb, "sw0", "ln1", "unknown", type="localnet", options={"network_name": "a"})
    lsp(nb, "sw0", "ln2", "unknown", type="localnet",
        options={"network_name": "b", "localnet_learn_fdb": "true"})
    table = build_flows(nb.db, sb)
    learning = {name for name in ("learns", "secured", "bad_ps", "known", "lport", "ln1",
                                  "ln2")
                if any(st == "ls_in_lookup_fdb" for st, *_ in port_flows(table, name))}
    assert learning == {"learns", "bad_ps", "ln2"}
    assert port_flows(table, "ln2") == {
        ("ls_in_lookup_fdb", 100, 'inport == "ln2"',
         "reg0[11] = lookup_fdb(inport, eth.src); next;"),
        ("ls_in_put_fdb", 100, 'inport == "ln2" && reg0[11] == 0',
         "put_fdb(inport, eth.src); next;"),
    }


def test_localnet_queue_is_set_in_and_out(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("sw0")
    lsp(nb, "sw0", "ln0", "unknown", type="localnet",
        options={"network_name": "phys", "qos_max_rate": "1000"})
    lsp(nb, "sw0", "vm1", "00:00:00:00:00:01", options={"qos_max_rate": "1000"})
    table = build_flows(nb.db, sb)
    queue = port_bindings(sb)["ln0"]["options"]["qdisc_queue_id"]
    assert port_flows(table, "ln0") == {
        ("ls_in_check_port_sec", 70, 'inport == "ln0"',
         f"set_queue({queue}); reg0[15] = check_in_port_sec(); next;"),
        ("ls_out_apply_port_sec", 100, 'outport == "ln0"', f"set_queue({queue}); output;"),
    }
    # An unbound VIF has no chassis to own a queue: no queue, no flows of its own.
    assert "qdisc_queue_id" not in port_bindings(sb)["vm1"]["options"]
    assert port_flows(table, "vm1") == set()


def test_vtep_port_skips_to_the_hairpin_stage(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("sw0")
    lsp(nb, "sw0", "vtep0", "unknown", type="vtep",
        options={"vtep-physical-switch": "br", "vtep-logical-switch": "ls0"})
    table = build_flows(nb.db, sb)
    assert ("ls_in_check_port_sec", 70, 'inport == "vtep0"',
            "reg0[14] = 1; next(pipeline=ingress, table=16);") in port_flows(table, "vtep0")
    assert Stage.LS_IN_HAIRPIN.table == 16


def test_external_port_guards_router_addresses_per_localnet(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    nb.lr_add("lr0")
    nb.connect("sw0", "lr0", "lr0-sw0", "00:00:00:00:ff:01", "10.0.0.1/24")
    lsp(nb, "sw0", "ln0", "unknown", type="localnet", options={"network_name": "a"})
    lsp(nb, "sw0", "ln1", "unknown", type="localnet", options={"network_name": "b"})
    ext = lsp(nb, "sw0", "ext1", "00:00:00:00:00:0e 10.0.0.14", type="external")
    table = build_flows(nb.db, sb)
    got = flows(table, sw, Stage.LS_IN_EXTERNAL_PORT)
    guards = [f for f in got if f.key.priority == 100]
    # Per localnet port: ARP for the IPv4 address, ND for the link-local address the
    # router port always has, and anything to the router's MAC.
    assert len(guards) == 2 * 3
    head = 'inport == "ln0" && eth.src == 00:00:00:00:00:0e'
    resident = '!is_chassis_resident("ext1")'
    assert {f.key.match for f in guards if f.io_port == "ln0"} == {
        f"{head} && {resident} && arp.tpa == 10.0.0.1 && arp.op == 1",
        f"{head} && {resident} && nd_ns && ip6.dst == {{fe80::200:ff:fe00:ff01, "
        f"ff02::1:ff00:ff01}} && nd.target == fe80::200:ff:fe00:ff01",
        f"{head} && eth.dst == 00:00:00:00:ff:01 && {resident}",
    }
    assert all(f.hint == ext[:8] and f.key.actions == "drop;" for f in guards)
    # External ports have no port-security flows of their own, even when disabled.
    assert not [f for f in flows(table, sw, Stage.LS_IN_CHECK_PORT_SEC) if "ext1" in f.key.match]


def test_drops_follow_the_debug_drop_collector(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    lsp(nb, "sw0", "p1", "00:00:00:00:00:01", enabled=[False])
    nb.db.insert("NB_Global", options={"debug_drop_collector_set": "5",
                                       "debug_drop_domain_id": "2"})
    table = build_flows(nb.db, sb)
    sample = "sample(probability=65535,collector_set=5,obs_domain=2,obs_point=$cookie); /* drop */"
    drops = {(st, prio, match) for st, prio, match, actions in lines(table, sw)
             if actions == sample}
    assert drops == {
        ("ls_in_check_port_sec", 100, "vlan.present"),
        ("ls_in_check_port_sec", 100, "eth.src[40]"),
        ("ls_in_apply_port_sec", 50, "reg0[15] == 1"),
        ("ls_in_l2_unknown", 50, 'outport == "none"'),
        ("ls_in_l2_unknown", 50, 'outport == "p1"'),
        ("ls_out_apply_port_sec", 50, "reg0[15] == 1"),
    }
    assert not [a for *_, a in lines(table, sw) if a == "drop;"]


def test_boolean_options_are_read_without_regard_to_case(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0", other_config={"vlan-passthru": "TRUE"})
    lsp(nb, "sw0", "ln1", "unknown", type="localnet",
        options={"network_name": "a", "localnet_learn_fdb": "True"})
    lsp(nb, "sw0", "ln2", "unknown", type="localnet",
        options={"network_name": "b", "localnet_learn_fdb": "yes"})
    table = build_flows(nb.db, sb)
    assert ("ls_in_check_port_sec", 100, "vlan.present", "drop;") not in lines(table, sw)
    assert port_flows(table, "ln1") and not port_flows(table, "ln2")
