"""Load balancer flows of routers (`lflows.lr_lb`, `lflows.lr_lb_affinity`), built from
in-memory databases: the flow type a router and a load balancer choose, the gateway
port's residence checks and undnat, rejects with their meters, affinity, unsnat for
VIPs that are NAT addresses, and one flow shared by the routers of a group."""

from __future__ import annotations

from typing import Any

from pyovsdb.northd.lflows.stages import Stage
from pyovsdb.northd.lflows.table import LflowTable
from pyovsdb.northd.testing import LocalDb, Nb, add_chassis, build_flows

Line = tuple[int, str, str]
NEW = "ct.new && !ct.rel && ip4 && ip4.dst == 172.16.0.100 && tcp && tcp.dst == 80"
BACKENDS = "backends=10.0.0.10:80,10.0.0.11:80"


def lines(table: LflowTable, dp_key: str, stage: Stage) -> set[Line]:
    return {(f.key.priority, f.key.match, f.key.actions)
            for f in table.on(dp_key) if f.key.stage is stage}


def lb_add(nb: Nb, name: str, vips: dict[str, str], *routers: str, **cols: Any) -> str:
    uuid = nb.db.insert("Load_Balancer", name=name, vips=vips, **cols)
    for lr in routers:
        nb.db.add_to("Logical_Router", nb.uuid("Logical_Router", lr), "load_balancer", uuid)
    return uuid


def web(nb: Nb, *routers: str, **cols: Any) -> str:
    return lb_add(nb, "web", {"172.16.0.100:80": "10.0.0.10:80,10.0.0.11:80"}, *routers,
                  protocol="tcp", **cols)


def test_router_without_lbs_only_passes_through(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0")
    table = build_flows(nb.db, sb)
    assert lines(table, lr, Stage.LR_IN_LB_AFF_CHECK) == {(0, "1", "next;")}
    assert lines(table, lr, Stage.LR_IN_LB_AFF_LEARN) == {(0, "1", "next;")}
    assert not [f for f in table.on(lr) if f.key.stage is Stage.LR_IN_DEFRAG
                and f.key.priority == 100]


def test_vip_defragments_and_balances_by_flow_type(nb: Nb, sb: LocalDb) -> None:
    plain = nb.lr_add("lr0")
    forced = nb.lr_add("lr1", options={"lb_force_snat_ip": "172.16.0.1"})
    ignored = nb.lr_add("lr2", options={"lb_force_snat_ip": "router_ip"})  # no chassis
    gw = nb.lr_add("gr0", options={"chassis": "gw1", "lb_force_snat_ip": "router_ip"})
    web(nb, "lr0", "lr1", "lr2", "gr0")
    table = build_flows(nb.db, sb)
    defrag = (100, "ip && ip4.dst == 172.16.0.100", "ct_dnat;")
    for dp in (plain, forced, ignored, gw):
        assert defrag in lines(table, dp, Stage.LR_IN_DEFRAG)
    normal = (120, NEW, f"ct_lb_mark({BACKENDS});")
    force = (120, NEW, f"flags.force_snat_for_lb = 1; ct_lb_mark({BACKENDS}; force_snat);")
    assert normal in lines(table, plain, Stage.LR_IN_DNAT)
    assert normal in lines(table, ignored, Stage.LR_IN_DNAT)
    assert force in lines(table, forced, Stage.LR_IN_DNAT)
    assert force in lines(table, gw, Stage.LR_IN_DNAT)
    shared = [f for f in table.flows.values() if (f.key.priority, f.key.match,
                                                  f.key.actions) == normal]
    assert len(shared) == 1 and set(shared[0].datapaths) == {plain, ignored}


def test_skip_snat_wins_and_lets_snat_pass(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0", options={"lb_force_snat_ip": "172.16.0.1"})
    web(nb, "lr0", options={"skip_snat": "true"})
    table = build_flows(nb.db, sb)
    assert (120, NEW, f"flags.skip_snat_for_lb = 1; ct_lb_mark({BACKENDS}; skip_snat);") \
        in lines(table, lr, Stage.LR_IN_DNAT)
    assert (120, "flags.skip_snat_for_lb == 1 && ip", "next;") \
        in lines(table, lr, Stage.LR_OUT_SNAT)


def test_gateway_port_limits_balancing_to_its_chassis(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0")
    nb.lrp_add("lr0", "lr0-pub", "00:00:00:00:ff:01", "172.16.0.1/24")
    nb.add_child("Logical_Router_Port", "lr0-pub", "gateway_chassis", "Gateway_Chassis",
                 name="lr0-pub-gw1", chassis_name="gw1", priority=10)
    web(nb, "lr0")
    lb_add(nb, "rej", {"172.16.0.101:80": ""}, "lr0", protocol="tcp",
           options={"reject": "true"})
    lb_add(nb, "drop", {"172.16.0.102:80": ""}, "lr0", protocol="tcp")
    table = build_flows(nb.db, sb)
    resident = 'is_chassis_resident("cr-lr0-pub")'
    dnat = lines(table, lr, Stage.LR_IN_DNAT)
    assert (120, f"{NEW} && {resident}", f"ct_lb_mark({BACKENDS});") in dnat
    assert (120, "ct.new && !ct.rel && ip4 && ip4.dst == 172.16.0.101 && tcp && "
            "tcp.dst == 80", "reg0 = 0; reject { outport <-> inport; "
            f"next(pipeline=egress,table={Stage.LR_OUT_SNAT.table});}};") in dnat
    assert (120, "ct.new && !ct.rel && ip4 && ip4.dst == 172.16.0.102 && tcp && "
            f"tcp.dst == 80 && {resident}", "drop;") in dnat
    undnat = {line for line in lines(table, lr, Stage.LR_OUT_UNDNAT) if line[0] == 120}
    assert undnat == {(120, "ip4 && ((ip4.src == 10.0.0.10 && tcp.src == 80) || "
                       "(ip4.src == 10.0.0.11 && tcp.src == 80)) && "
                       f'outport == "lr0-pub" && {resident}', "ct_dnat_in_czone;")}


def test_reject_takes_each_routers_meter(nb: Nb, sb: LocalDb) -> None:
    nb.db.transact([
        {"op": "insert", "table": "Meter_Band", "uuid-name": "b",
         "row": {"action": "drop", "rate": 10}},
        {"op": "insert", "table": "Meter", "row": {
            "name": "m-rej", "unit": "pktps", "bands": ["named-uuid", "b"]}}])
    copp = nb.db.insert("Copp", name="copp0", meters={"reject": "m-rej"})
    metered = nb.lr_add("lr0", copp=copp)
    bare = nb.lr_add("lr1")
    lb_add(nb, "rej", {"172.16.0.101": ""}, "lr0", "lr1", protocol="tcp",
           options={"reject": "true"})
    table = build_flows(nb.db, sb)
    rejects = [f for f in table.flows.values()
               if f.key.stage is Stage.LR_IN_DNAT and f.key.priority == 110]
    assert {(tuple(f.datapaths), f.key.meter) for f in rejects} == {
        ((metered,), "m-rej"), ((bare,), None)}


def test_vip_that_is_a_nat_address_skips_unsnat(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0", options={"chassis": "gw1"})
    nb.add_child("Logical_Router", "lr0", "nat", "NAT", type="dnat_and_snat",
                 external_ip="172.16.0.100", logical_ip="10.0.0.50")
    web(nb, "lr0")
    table = build_flows(nb.db, sb)
    assert (120, "ip4 && ip4.dst == 172.16.0.100 && tcp && tcp.dst == 80", "next;") \
        in lines(table, lr, Stage.LR_IN_UNSNAT)


def test_affinity_on_a_router_forcing_snat(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0", options={"lb_force_snat_ip": "172.16.0.1"})
    web(nb, "lr0", options={"affinity_timeout": "60"})
    table = build_flows(nb.db, sb)
    assert (100, NEW, "reg0 = ip4.dst; reg9[16..31] = tcp.dst; reg9[6] = chk_lb_aff(); "
            "next;") in lines(table, lr, Stage.LR_IN_LB_AFF_CHECK)
    assert (150, "reg9[6] == 1 && ct.new && ip4 && reg4 == 10.0.0.11 && reg8[0..15] == 80",
            "reg0 = 172.16.0.100; flags.force_snat_for_lb = 1; "
            "ct_lb_mark(backends=10.0.0.11:80; force_snat);") \
        in lines(table, lr, Stage.LR_IN_DNAT)
    assert (100, "reg9[6] == 0 && ct.new && ip4 && reg0 == 172.16.0.100 && "
            "reg9[16..31] == 80 && ip4.dst == 10.0.0.10 && tcp.dst == 80",
            'commit_lb_aff(vip = "172.16.0.100:80", backend = "10.0.0.10:80", '
            "proto = tcp, timeout = 60); /* drop */") \
        in lines(table, lr, Stage.LR_IN_LB_AFF_LEARN)


def test_several_gateway_ports_use_the_first_in_nb_order(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0")
    uuids = {}
    for i, name in enumerate(("lr0-a", "lr0-b")):
        uuids[name] = nb.lrp_add("lr0", name, f"00:00:00:00:ff:0{i + 1}",
                                 f"172.16.{i}.1/24")
        nb.add_child("Logical_Router_Port", name, "gateway_chassis", "Gateway_Chassis",
                     name=f"{name}-gw1", chassis_name="gw1", priority=10)
    web(nb, "lr0")
    first = min(uuids, key=uuids.__getitem__)
    table = build_flows(nb.db, sb)
    dnat = [m for p, m, _ in lines(table, lr, Stage.LR_IN_DNAT) if p == 120]
    assert dnat == [f'{NEW} && is_chassis_resident("cr-{first}")']
    undnat = [m for p, m, _ in lines(table, lr, Stage.LR_OUT_UNDNAT) if p == 120]
    assert len(undnat) == 1 and f'outport == "{first}"' in undnat[0]


def test_old_chassis_get_ct_lb_without_the_snat_flag(nb: Nb, sb: LocalDb) -> None:
    add_chassis(sb, "hv1", "192.168.0.1")  # no feature flags in other_config
    lr = nb.lr_add("lr0")
    web(nb, "lr0", options={"skip_snat": "true"})
    dnat = lines(build_flows(nb.db, sb), lr, Stage.LR_IN_DNAT)
    assert (120, NEW, f"flags.skip_snat_for_lb = 1; ct_lb({BACKENDS});") in dnat


def test_empty_vip_reports_an_event_unless_rejected(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0")
    lb = lb_add(nb, "ev", {"172.16.0.102:80": "", "[fd01::102]:80": ""}, "lr0",
                protocol="tcp", options={"event": "true"})
    table = build_flows(nb.db, sb)
    events = {(p, m, a) for p, m, a in lines(table, lr, Stage.LR_IN_DNAT) if p == 130}
    assert events == {
        (130, "ip4.dst == 172.16.0.102 && tcp && tcp.dst == 80",
         'trigger_event(event = "empty_lb_backends", vip = "172.16.0.102:80", '
         f'protocol = "tcp", load_balancer = "{lb}");'),
        (130, "ip6.dst == fd01::102 && tcp && tcp.dst == 80",
         'trigger_event(event = "empty_lb_backends", vip = "[fd01::102]:80", '
         f'protocol = "tcp", load_balancer = "{lb}");')}
    assert (120, "ct.new && !ct.rel && ip4 && ip4.dst == 172.16.0.102 && tcp && "
            "tcp.dst == 80", "drop;") in lines(table, lr, Stage.LR_IN_DNAT)
    nb.db.update("Load_Balancer", lb, options={"event": "true", "reject": "true"})
    table = build_flows(nb.db, sb)
    assert not [f for f in table.on(lr) if f.key.stage is Stage.LR_IN_DNAT
                and f.key.priority == 130]
