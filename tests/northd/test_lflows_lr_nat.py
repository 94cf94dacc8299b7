"""NAT on routers (`lflows.lr_nat`, `lr_nat_rules`), built from in-memory
databases: which rules 23.03 applies, the flows of a rule on a gateway router and on a
distributed gateway port (centralized and distributed), the priorities of SNAT and of
exempted external IPs, the gateway port of a rule among several, and force SNAT."""

from __future__ import annotations

from typing import Any

from pyovsdb.northd.lflows.stages import Stage
from pyovsdb.northd.lflows.table import LflowTable
from pyovsdb.northd.testing import LocalDb, Nb, build_flows

Line = tuple[int, str, str]
NAT_STAGES = (Stage.LR_IN_UNSNAT, Stage.LR_IN_DNAT, Stage.LR_OUT_CHK_DNAT_LOCAL,
              Stage.LR_OUT_UNDNAT, Stage.LR_OUT_SNAT, Stage.LR_OUT_EGR_LOOP)


def lines(table: LflowTable, dp: str, stage: Stage, *, above: int = 0) -> set[Line]:
    return {(f.key.priority, f.key.match, f.key.actions) for f in table.on(dp)
            if f.key.stage is stage and f.key.priority > above}


def nat(nb: Nb, router: str, kind: str, external: str, logical: str, **cols: Any) -> str:
    return nb.add_child("Logical_Router", router, "nat", "NAT", type=kind,
                        external_ip=external, logical_ip=logical, **cols)


def gateway_router(nb: Nb) -> str:
    gr = nb.lr_add("gr0", options={"chassis": "gw1"})
    nb.ls_add("ext")
    nb.connect("ext", "gr0", "gr0-ext", "00:00:00:00:01:02", "172.16.0.2/24", "fd20::2/64")
    return gr


def dgp_router(nb: Nb, *gateways: tuple[str, str]) -> str:
    """lr0 on sw0 with a distributed gateway port per (name, network)."""
    lr = nb.lr_add("lr0")
    nb.ls_add("sw0")
    nb.connect("sw0", "lr0", "lr0-sw0", "00:00:00:00:ff:01", "10.0.0.1/24")
    for i, (name, network) in enumerate(gateways or (("lr0-public", "172.168.0.100/24"),)):
        nb.ls_add(f"pub{i}")
        nb.connect(f"pub{i}", "lr0", name, f"00:00:20:20:12:1{i}", network)
        nb.add_child("Logical_Router_Port", name, "gateway_chassis", "Gateway_Chassis",
                     name=f"{name}-gw1", chassis_name="gw1", priority=20)
    return lr


def test_a_router_without_gateway_has_only_the_defaults(nb: Nb, sb: LocalDb) -> None:
    lr = nb.lr_add("lr0")
    nb.ls_add("sw0")
    nb.connect("sw0", "lr0", "lr0-sw0", "00:00:00:00:ff:01", "10.0.0.1/24")
    nat(nb, "lr0", "snat", "172.16.0.1", "10.0.0.0/24")
    table = build_flows(nb.db, sb)
    for stage in NAT_STAGES:
        assert lines(table, lr, stage, above=0) == (
            {(120, "nd_ns", "next;")} if stage is Stage.LR_OUT_SNAT else set())
    assert lines(table, lr, Stage.LR_OUT_CHK_DNAT_LOCAL, above=-1) == \
        {(0, "1", "reg9[4] = 0; next;")}


def test_gateway_router_rules(nb: Nb, sb: LocalDb) -> None:
    gr = gateway_router(nb)
    nat(nb, "gr0", "snat", "172.16.0.2", "100.64.0.0/16")
    nat(nb, "gr0", "snat", "172.16.0.3", "100.64.1.0/24")
    nat(nb, "gr0", "dnat_and_snat", "172.16.0.50", "100.64.0.50",
        external_port_range="1000-2000")
    nat(nb, "gr0", "dnat_and_snat", "fd20::50", "fd10::50")
    nat(nb, "gr0", "dnat", "172.16.0.60", "100.64.0.0/24")  # a network: not applied
    nb.set("Logical_Router", "gr0", options={"chassis": "gw1",
                                              "dnat_force_snat_ip": "100.64.0.1"})
    table = build_flows(nb.db, sb)
    assert lines(table, gr, Stage.LR_OUT_SNAT, above=0) == {
        (120, "nd_ns", "next;"),
        (17, "ip && ip4.src == 100.64.0.0/16 && (!ct.trk || !ct.rpl)", "ct_snat(172.16.0.2);"),
        (25, "ip && ip4.src == 100.64.1.0/24 && (!ct.trk || !ct.rpl)", "ct_snat(172.16.0.3);"),
        (33, "ip && ip4.src == 100.64.0.50 && (!ct.trk || !ct.rpl)",
         "ct_snat(172.16.0.50,1000-2000);"),
        (129, "ip && ip6.src == fd10::50 && (!ct.trk || !ct.rpl)", "ct_snat(fd20::50);"),
        (100, "flags.force_snat_for_dnat == 1 && ip4", "ct_snat(100.64.0.1);")}
    assert lines(table, gr, Stage.LR_IN_DNAT, above=0) == {
        (100, "ip && ip4.dst == 172.16.0.50",
         "flags.force_snat_for_dnat = 1; flags.loopback = 1; ct_dnat(100.64.0.50,1000-2000);"),
        (100, "ip && ip6.dst == fd20::50",
         "flags.force_snat_for_dnat = 1; flags.loopback = 1; ct_dnat(fd10::50);")}
    assert (90, "ip && ip4.dst == 172.16.0.2", "ct_snat;") in \
        lines(table, gr, Stage.LR_IN_UNSNAT)
    assert (110, "ip4 && ip4.dst == 100.64.0.1", "ct_snat;") in \
        lines(table, gr, Stage.LR_IN_UNSNAT)
    # NAT on a gateway router un-DNATs every reply and commits new reply connections.
    assert lines(table, gr, Stage.LR_OUT_UNDNAT, above=0) == {
        (100, "nd || nd_rs || nd_ra", "next;"), (50, "ip", "flags.loopback = 1; ct_dnat;")}
    assert lines(table, gr, Stage.LR_OUT_POST_UNDNAT, above=0) == {
        (50, "ip && ct.new", "ct_commit { } ; next; ")}


def test_dgp_centralized_and_distributed(nb: Nb, sb: LocalDb) -> None:
    lr = dgp_router(nb)
    nb.lsp_add("sw0", "vm1", addresses=["00:00:00:00:00:01 10.0.0.10"])
    nat(nb, "lr0", "snat", "172.168.0.100", "10.0.0.0/24")
    nat(nb, "lr0", "dnat_and_snat", "172.168.0.120", "10.0.0.10", logical_port="vm1",
        external_mac="00:00:00:00:AA:01")
    table = build_flows(nb.db, sb)
    cr = 'is_chassis_resident("cr-lr0-public")'
    vm = 'is_chassis_resident("vm1")'
    out = 'outport == "lr0-public"'
    assert lines(table, lr, Stage.LR_OUT_SNAT, above=0) - {(120, "nd_ns", "next;")} == {
        (153, f"ip && ip4.src == 10.0.0.0/24 && {out} && {cr}",
         "ct_snat_in_czone(172.168.0.100);"),
        (154, f"ip && ip4.src == 10.0.0.0/24 && {out} && {cr} && reg9[4] == 1",
         "reg9[4] = 0; ct_snat(172.168.0.100);"),
        # The distributed rule's MAC is printed as parsed, where it rewrites eth.src.
        (161, f"ip && ip4.src == 10.0.0.10 && {out} && {vm}",
         "eth.src = 00:00:00:00:aa:01; ct_snat_in_czone(172.168.0.120);"),
        (162, f"ip && ip4.src == 10.0.0.10 && {out} && {vm} && reg9[4] == 1",
         "eth.src = 00:00:00:00:aa:01; reg9[4] = 0; ct_snat(172.168.0.120);")}
    assert lines(table, lr, Stage.LR_IN_DNAT, above=0) == {
        (100, 'ip && ip4.dst == 172.168.0.120 && inport == "lr0-public"',
         "ct_dnat_in_czone(10.0.0.10);")}
    assert lines(table, lr, Stage.LR_OUT_CHK_DNAT_LOCAL, above=0) == {
        (50, f"ip && ip4.dst == 172.168.0.100 && {cr}", "reg9[4] = 1; next;"),
        (50, f"ip && ip4.dst == 172.168.0.120 && {vm}", "reg9[4] = 1; next;"),
        # No chassis lacks ct_no_masked_label: the mark is in ct_mark.
        (50, "ip && ct_mark.natted == 1", "reg9[4] = 1; next;")}
    loops = lines(table, lr, Stage.LR_OUT_EGR_LOOP, above=0)
    assert {(p, m) for p, m, _ in loops} == {
        (100, f"ip4.dst == 172.168.0.100 && {out} && {cr}"),
        (100, f"ip4.dst == 172.168.0.120 && {out} && {vm}")}
    assert all(a.startswith("clone { ct_clear; ") and "reg9 = 0; reg9[0] = 1; " in a
               for _, _, a in loops)
    # The external MAC is the gateway port's where the logical port is.
    assert (50, f'eth.dst == 00:00:00:00:aa:01 && inport == "lr0-public" && {vm}',
            "xreg0[0..47] = 00:00:20:20:12:10; next;") in \
        lines(table, lr, Stage.LR_IN_ADMISSION)


def test_exempted_and_allowed_external_ips(nb: Nb, sb: LocalDb) -> None:
    gr = gateway_router(nb)
    exempt = nb.db.insert("Address_Set", name="exempt", addresses=["3.3.3.3"])
    allowed = nb.db.insert("Address_Set", name="allowed", addresses=["1.1.1.1"])
    nat(nb, "gr0", "dnat_and_snat", "172.16.0.50", "100.64.0.50", exempted_ext_ips=exempt)
    nat(nb, "gr0", "snat", "172.16.0.2", "100.64.0.0/16", allowed_ext_ips=allowed)
    nat(nb, "gr0", "dnat", "172.16.0.52", "100.64.0.52", allowed_ext_ips=allowed,
        exempted_ext_ips=exempt)  # both: not applied
    table = build_flows(nb.db, sb)
    assert lines(table, gr, Stage.LR_IN_DNAT, above=0) == {
        (102, "ip && ip4.dst == 172.16.0.50 && ip4.src == $exempt", "next;"),
        (100, "ip && ip4.dst == 172.16.0.50", "flags.loopback = 1; ct_dnat(100.64.0.50);")}
    assert lines(table, gr, Stage.LR_OUT_SNAT, above=0) - {(120, "nd_ns", "next;")} == {
        (35, "ip && ip4.src == 100.64.0.50 && ip4.dst == $exempt", "next;"),
        (33, "ip && ip4.src == 100.64.0.50 && (!ct.trk || !ct.rpl)", "ct_snat(172.16.0.50);"),
        (17, "ip && ip4.src == 100.64.0.0/16 && ip4.dst == $allowed && "
             "(!ct.trk || !ct.rpl)", "ct_snat(172.16.0.2);")}


def test_stateless_rules_rewrite_addresses(nb: Nb, sb: LocalDb) -> None:
    lr = dgp_router(nb)
    nat(nb, "lr0", "dnat_and_snat", "172.168.0.110", "10.0.0.10",
        options={"stateless": "true"})
    nat(nb, "lr0", "snat", "172.168.0.100", "10.0.0.0/24", options={"stateless": "true"})
    table = build_flows(nb.db, sb)
    cr = 'is_chassis_resident("cr-lr0-public")'
    snat = lines(table, lr, Stage.LR_OUT_SNAT, above=0)
    assert (161, f'ip && ip4.src == 10.0.0.10 && outport == "lr0-public" && {cr}',
            "ip4.src=172.168.0.110; next;") in snat
    assert not any(p == 162 for p, _, _ in snat)  # no second, conntrack flow
    assert (154, f'ip && ip4.src == 10.0.0.0/24 && outport == "lr0-public" && {cr} && '
            "reg9[4] == 1", "reg9[4] = 0; ct_snat(172.168.0.100);") in snat  # a snat stays
    assert lines(table, lr, Stage.LR_IN_UNSNAT, above=0) >= {
        (100, 'ip && ip4.dst == 172.168.0.110 && inport == "lr0-public" && '
              f"flags.loopback == 0 && {cr}", "next;")}
    assert (100, f'ip && ip4.src == 10.0.0.10 && outport == "lr0-public" && {cr}',
            "next;") in lines(table, lr, Stage.LR_OUT_UNDNAT)


def test_gateway_port_of_a_rule_among_several(nb: Nb, sb: LocalDb) -> None:
    lr = dgp_router(nb, ("lr0-pub1", "172.16.1.1/24"), ("lr0-pub2", "172.16.2.1/24"))
    pub1 = nb.uuid("Logical_Router_Port", "lr0-pub1")
    own = nb.uuid("Logical_Router_Port", "lr0-sw0")
    nat(nb, "lr0", "dnat", "172.16.2.10", "10.0.0.10")  # by network: pub2
    nat(nb, "lr0", "dnat", "172.16.3.10", "10.0.0.11", gateway_port=pub1)
    nat(nb, "lr0", "dnat", "172.16.4.10", "10.0.0.12")  # no port holds it: none
    nat(nb, "lr0", "dnat", "172.16.5.10", "10.0.0.13", gateway_port=own)  # not a DGP
    table = build_flows(nb.db, sb)
    assert {m for _, m, _ in lines(table, lr, Stage.LR_IN_DNAT, above=0)} == {
        'ip && ip4.dst == 172.16.2.10 && inport == "lr0-pub2" && '
        'is_chassis_resident("cr-lr0-pub2")',
        'ip && ip4.dst == 172.16.3.10 && inport == "lr0-pub1" && '
        'is_chassis_resident("cr-lr0-pub1")'}


def test_lb_force_snat_router_ip(nb: Nb, sb: LocalDb) -> None:
    gr = nb.lr_add("gr0", options={"chassis": "gw1", "lb_force_snat_ip": "router_ip"})
    nb.ls_add("join")
    nb.connect("join", "gr0", "gr0-join", "00:00:00:00:01:01", "100.64.0.1/16",
               "100.65.0.1/16", "fd10::1/64")
    nb.lrp_add("gr0", "gr0-lone", "00:00:00:00:01:03", "192.0.2.1/24")  # no peer
    lr = nb.lr_add("lr1", options={"lb_force_snat_ip": "router_ip"})  # no gateway router
    nb.connect("join", "lr1", "lr1-join", "00:00:00:00:02:01", "100.64.0.5/16")
    table = build_flows(nb.db, sb)
    assert lines(table, gr, Stage.LR_OUT_SNAT, above=100) == {
        (120, "nd_ns", "next;"),
        (110, 'flags.force_snat_for_lb == 1 && ip4 && outport == "gr0-join"',
         "ct_snat(100.64.0.1);"),
        (110, 'flags.force_snat_for_lb == 1 && ip6 && outport == "gr0-join"',
         "ct_snat(fd10::1);")}
    def owned(port: str) -> set[str]:
        return {k.match for k, _ in table.owners.get(("port", port), [])
                if k.stage in (Stage.LR_IN_UNSNAT, Stage.LR_OUT_SNAT)}

    assert owned("gr0-join") == {
        'inport == "gr0-join" && ip4.dst == 100.64.0.1',
        'inport == "gr0-join" && ip6.dst == fd10::1',
        'flags.force_snat_for_lb == 1 && ip4 && outport == "gr0-join"',
        'flags.force_snat_for_lb == 1 && ip6 && outport == "gr0-join"'}
    assert owned("gr0-lone") == set()
    assert lines(table, lr, Stage.LR_OUT_SNAT, above=0) == {(120, "nd_ns", "next;")}


def test_established_lb_connections_on_a_router_with_vips(nb: Nb, sb: LocalDb) -> None:
    gr = gateway_router(nb)
    nb.lr_add("lr1")  # no VIP of its own: none of these
    lb = nb.db.insert("Load_Balancer", name="lb0", protocol="tcp",
                      vips={"172.16.0.100:80": "100.64.0.10:80"})
    nb.set("Logical_Router", "gr0", load_balancer=[lb])
    table = build_flows(nb.db, sb)
    est = "ct.est && !ct.rel && !ct.new && ct_mark.natted"
    rel = "ct.rel && !ct.est && !ct.new"
    assert lines(table, gr, Stage.LR_IN_DNAT, above=0) >= {
        (70, f"{est} && ct_mark.skip_snat == 1", "flags.skip_snat_for_lb = 1; next;"),
        (70, f"{est} && ct_mark.force_snat == 1", "flags.force_snat_for_lb = 1; next;"),
        (50, est, "next;"),
        (70, f"{rel} && ct_mark.skip_snat == 1",
         "flags.skip_snat_for_lb = 1; ct_commit_nat;"),
        (50, rel, "ct_commit_nat;")}
    # A gateway router with VIPs un-DNATs replies even without NAT rules.
    assert (50, "ip", "flags.loopback = 1; ct_dnat;") in lines(table, gr, Stage.LR_OUT_UNDNAT)
    lr1 = nb.uuid("Logical_Router", "lr1")
    assert lines(table, lr1, Stage.LR_IN_DNAT, above=0) == set()
