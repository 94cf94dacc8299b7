"""The ARP and ND responder of a switch (`lflows.ls_arp_nd`), built from in-memory
databases: which ports answer for which addresses, with what, and which do not."""

from __future__ import annotations

import ipaddress
from typing import Any

from pyovsdb.northd.lflows.ls_arp_nd import arp_reply, solicited_node
from pyovsdb.northd.lflows.stages import Stage
from pyovsdb.northd.lflows.table import Flow, LflowTable
from pyovsdb.northd.testing import LocalDb, Nb, add_chassis, build_flows

STAGE = Stage.LS_IN_ARP_RSP
Line = tuple[int, str, str]


def flows(table: LflowTable, dp_key: str) -> list[Flow]:
    return [f for f in table.on(dp_key) if f.key.stage is STAGE]


def lines(table: LflowTable, dp_key: str) -> set[Line]:
    return {(f.key.priority, f.key.match, f.key.actions) for f in flows(table, dp_key)}


def port_lines(table: LflowTable, name: str) -> set[Line]:
    """What the owner ("port", name) asked for in this stage."""
    return {(k.priority, k.match, k.actions)
            for k, _ in table.owners.get(("port", name), []) if k.stage is STAGE}


def lsp(nb: Nb, ls: str, name: str, *addresses: str, **cols: Any) -> str:
    return nb.lsp_add(ls, name, addresses=list(addresses), **cols)


def vif_ipv4(name: str, mac: str, ip: str) -> set[Line]:
    match = f"arp.tpa == {ip} && arp.op == 1"
    return {(50, match, arp_reply(mac, ip)), (100, f'{match} && inport == "{name}"', "next;")}


def test_helpers() -> None:
    assert str(solicited_node(ipaddress.IPv6Address("fd00::12:3456"))) == "ff02::1:ff12:3456"
    assert str(solicited_node(ipaddress.IPv6Address("fe80::200:ff:fe00:1"))) == \
        "ff02::1:ff00:1"


def test_bare_switch_passes_everything(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    table = build_flows(nb.db, sb)
    assert lines(table, sw) == {(0, "1", "next;")}
    assert [k for k, _ in table.owners[("dp", sw)] if k.stage is STAGE] != []


def test_vif_answers_for_each_address(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("sw0")
    lsp(nb, "sw0", "p1", "00:00:00:00:00:01 10.0.0.1 10.0.0.2 fd00::1",
        "00:00:00:00:00:21 10.0.0.21")
    table = build_flows(nb.db, sb)
    want = vif_ipv4("p1", "00:00:00:00:00:01", "10.0.0.1") | \
        vif_ipv4("p1", "00:00:00:00:00:01", "10.0.0.2") | \
        vif_ipv4("p1", "00:00:00:00:00:21", "10.0.0.21")
    ns = "nd_ns && ip6.dst == {fd00::1, ff02::1:ff00:1} && nd.target == fd00::1"
    want |= {(50, ns, "nd_na { eth.src = 00:00:00:00:00:01; ip6.src = fd00::1; "
              "nd.target = fd00::1; nd.tll = 00:00:00:00:00:01; outport = inport; "
              "flags.loopback = 1; output; };"),
             (100, ns + ' && inport == "p1"', "next;")}
    assert port_lines(table, "p1") == want
    by_key = {(f.key.priority, f.key.match): f for f in flows(table, nb.uuid(
        "Logical_Switch", "sw0"))}
    own = by_key[(100, 'arp.tpa == 10.0.0.1 && arp.op == 1 && inport == "p1"')]
    assert own.io_port == "p1"
    assert own.hint == nb.uuid("Logical_Switch_Port", "p1")[:8]
    assert by_key[(50, "arp.tpa == 10.0.0.1 && arp.op == 1")].io_port is None


def test_ports_that_do_not_answer(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("sw0")
    lsp(nb, "sw0", "unk", "00:00:00:00:00:01 10.0.0.1", "unknown")
    lsp(nb, "sw0", "ext", "00:00:00:00:00:02 10.0.0.2", type="external")
    lsp(nb, "sw0", "ln", "00:00:00:00:00:03 10.0.0.3", type="localnet",
        options={"network_name": "phys"})
    nb.ls_add("sw1", other_config={"vlan-passthru": "true"})
    lsp(nb, "sw1", "q1", "00:00:00:00:00:04 10.0.0.4")
    table = build_flows(nb.db, sb)
    assert port_lines(table, "unk") == set()
    assert port_lines(table, "ext") == set()
    assert port_lines(table, "q1") == set()
    # A localnet port's requests skip the responder; its own address is answered.
    assert port_lines(table, "ln") == {(100, 'inport == "ln"', "next;")} | \
        vif_ipv4("ln", "00:00:00:00:00:03", "10.0.0.3")


def test_lsp_down_matters_only_when_asked(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("sw0")
    lsp(nb, "sw0", "p1", "00:00:00:00:00:01 10.0.0.1")
    lsp(nb, "sw0", "p2", "00:00:00:00:00:02 10.0.0.2")
    lsp(nb, "sw0", "lp", "00:00:00:00:00:03 10.0.0.3", type="localport")
    table = build_flows(nb.db, sb)
    assert port_lines(table, "p1") == vif_ipv4("p1", "00:00:00:00:00:01", "10.0.0.1")
    nb.db.insert("NB_Global", options={"ignore_lsp_down": "false"})
    ch = add_chassis(sb, "ch1", "192.168.0.1")
    pb = next(r.uuid for r in sb.tables["Port_Binding"].rows.values()
              if r.logical_port == "p1")
    sb.update("Port_Binding", pb, chassis=ch)
    table = build_flows(nb.db, sb)
    assert port_lines(table, "p1") == vif_ipv4("p1", "00:00:00:00:00:01", "10.0.0.1")
    assert port_lines(table, "p2") == set()
    assert port_lines(table, "lp") == vif_ipv4("lp", "00:00:00:00:00:03", "10.0.0.3")


def test_router_port_answers_for_its_networks_and_proxies(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("sw0")
    nb.lr_add("lr0")
    nb.connect("sw0", "lr0", "lrp0", "00:00:00:00:ff:01", "10.0.0.254/24")
    nb.set("Logical_Switch_Port", "sw0-lrp0",
           options={"router-port": "lrp0", "arp_proxy": "10.0.0.100 fd00::1 10.0.0.101"})
    copp = nb.db.insert("Copp", name="c1", meters={"nd-na": "m1"})
    nb.meter_add("m1")
    nb.set("Logical_Switch", "sw0", copp=copp)
    table = build_flows(nb.db, sb)
    mac = "00:00:00:00:ff:01"
    got = port_lines(table, "sw0-lrp0")
    assert vif_ipv4("sw0-lrp0", mac, "10.0.0.254") <= got
    lla = "fe80::200:ff:fe00:ff01"
    ns = f"nd_ns && ip6.dst == {{{lla}, ff02::1:ff00:ff01}} && nd.target == {lla}"
    assert (50, ns, f"nd_na_router {{ eth.src = {mac}; ip6.src = {lla}; nd.target = {lla}; "
            f"nd.tll = {mac}; outport = inport; flags.loopback = 1; output; }};") in got
    proxy = (50, "arp.op == 1 && arp.tpa == {10.0.0.100,10.0.0.101}",
             f"eth.dst = eth.src; eth.src = {mac}; arp.op = 2; /* ARP reply */ "
             f"arp.tha = arp.sha; arp.sha = {mac}; arp.tpa <-> arp.spa; outport = inport; "
             "flags.loopback = 1; output;")
    assert proxy in got
    assert len(got) == 5
    meters = {f.key.match: f.key.meter for f in flows(table, nb.uuid("Logical_Switch", "sw0"))}
    assert meters[ns] == "m1"
    assert meters["arp.tpa == 10.0.0.254 && arp.op == 1"] is None


def test_virtual_port_binds_through_its_parents(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("sw0")
    nb.ls_add("sw1")
    lsp(nb, "sw0", "vm1", "00:00:00:00:00:01 10.0.0.1")
    lsp(nb, "sw1", "vm2", "00:00:00:00:00:02 10.0.1.2")
    lsp(nb, "sw0", "vip", "00:00:00:00:00:0a 10.0.0.100", type="virtual",
        options={"virtual-ip": "10.0.0.100", "virtual-parents": "vm1,,vm2,nosuch"})
    lsp(nb, "sw0", "vip6", type="virtual",
        options={"virtual-ip": "fd00:0::100", "virtual-parents": "vm1"})
    lsp(nb, "sw0", "bad", type="virtual",
        options={"virtual-ip": "10.0.0.300", "virtual-parents": "vm1"})
    table = build_flows(nb.db, sb)
    assert port_lines(table, "vip") == {
        (100, 'inport == "vm1" && ((arp.op == 1 && arp.spa == 10.0.0.100 && '
         "arp.tpa == 10.0.0.100) || (arp.op == 2 && arp.spa == 10.0.0.100))",
         'bind_vport("vip", inport); next;')}
    assert port_lines(table, "vip6") == {
        (100, 'inport == "vm1" && ((nd_ns && ip6.dst == {fd00:0::100, ff02::1:ff00:100} '
         "&& nd.target == fd00:0::100) ||(nd_na && nd.target == fd00:0::100))",
         'bind_vport("vip6", inport); next;')}
    assert port_lines(table, "bad") == set()
    bind = next(f for f in flows(table, nb.uuid("Logical_Switch", "sw0"))
                if f.key.actions.startswith('bind_vport("vip",'))
    assert bind.io_port == "vm1"
    assert bind.hint == nb.uuid("Logical_Switch_Port", "vm1")[:8]


def test_one_address_on_two_switches_is_one_flow(nb: Nb, sb: LocalDb) -> None:
    # 23.03 meets d2 before d1 in its port hash table (whatever order they were
    # inserted in), so the shared flow carries d2's stage hint, as the real northd's does.
    sw0, sw1 = nb.ls_add("sw0"), nb.ls_add("sw1")
    lsp(nb, "sw0", "d1", "00:00:00:00:0d:01 10.9.0.1")
    lsp(nb, "sw1", "d2", "00:00:00:00:0d:01 10.9.0.1")
    table = build_flows(nb.db, sb)
    shared = [f for f in flows(table, sw0) if f.key.priority == 50]
    assert len(shared) == 1
    assert set(shared[0].datapaths) == {sw0, sw1}
    assert shared[0].hint == nb.uuid("Logical_Switch_Port", "d2")[:8]
