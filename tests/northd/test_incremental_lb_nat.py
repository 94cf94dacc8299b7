"""Load balancers and NAT rules changed without recomputing `northd`
(`build.lb_incremental`, `build.nat_incremental`): after every step the incremental
state equals a graph built from scratch on the same databases (which wants to write
nothing), and the stats say whether `northd` recomputed. Where the change reaches
what those modules do not follow, `northd` recomputes, and is still equal; health
checks (their service monitors) and distributed NAT rules are followed. A router whose
switch port advertises its addresses (`nat-addresses=router`) has that port's binding
follow its NAT rules and VIPs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from test_incremental_datapaths import _gateway, _lrp_add, _topology
from test_incremental_ports import Loop, check_equals_recompute

from pyovsdb.idl.row import IdlRow
from pyovsdb.northd.testing import LocalDb, Nb
from pyovsdb.ovsdb.changeset import Changeset

Step = Callable[[], Changeset[IdlRow]]


def _play(loop: Loop, steps: list[tuple[str, Step, bool]]) -> None:
    """Each step, and whether `northd` must handle it without a recompute; after each,
    the state equals a recompute's."""
    for name, step, in_place in steps:
        before = loop.stat("northd", "recompute")
        loop.change(step())
        check_equals_recompute(loop)
        recomputed = loop.stat("northd", "recompute") > before
        assert recomputed is not in_place, f"{name}: recomputed={recomputed}"


def _mutate(table: str, name: str, column: str, op: str, value: Any) -> dict[str, Any]:
    return {"op": "mutate", "table": table, "where": [["name", "==", name]],
            "mutations": [[column, op, value]]}


def _lb_add(nb: Nb, name: str, vips: dict[str, str], *on: tuple[str, str],
            **row: Any) -> Changeset[IdlRow]:
    """A load balancer, listed by the switches and routers `on` ((table, name)...)."""
    return nb.db.transact([
        {"op": "insert", "table": "Load_Balancer", "uuid-name": "lb",
         "row": {"name": name, "vips": ["map", [[k, v] for k, v in sorted(vips.items())]], **row}},
        *(_mutate(t, n, "load_balancer", "insert", ["named-uuid", "lb"]) for t, n in on)])


def _lb_attach(nb: Nb, lb: str, table: str, name: str) -> Changeset[IdlRow]:
    return nb.db.transact([_mutate(table, name, "load_balancer", "insert",
                                   ["uuid", nb.uuid("Load_Balancer", lb)])])


def _lb_set(nb: Nb, lb: str, **row: Any) -> Changeset[IdlRow]:
    return nb.db.transact([{"op": "update", "table": "Load_Balancer",
                            "where": [["name", "==", lb]], "row": row}])


def _lb_del(nb: Nb, lb: str) -> Changeset[IdlRow]:
    uuid = ["uuid", nb.uuid("Load_Balancer", lb)]
    return nb.db.transact([
        *({"op": "mutate", "table": t, "where": [[c, "includes", uuid]],
           "mutations": [[c, "delete", uuid]]}
          for t, c in (("Logical_Switch", "load_balancer"), ("Logical_Router", "load_balancer"),
                       ("Load_Balancer_Group", "load_balancer"))),
        {"op": "delete", "table": "Load_Balancer", "where": [["name", "==", lb]]}])


def _group(nb: Nb, name: str, lb: str, *on: tuple[str, str]) -> Changeset[IdlRow]:
    return nb.db.transact([
        {"op": "insert", "table": "Load_Balancer_Group", "uuid-name": "g",
         "row": {"name": name, "load_balancer": ["uuid", nb.uuid("Load_Balancer", lb)]}},
        *(_mutate(t, n, "load_balancer_group", "insert", ["named-uuid", "g"]) for t, n in on)])


def _health_checked(nb: Nb) -> Changeset[IdlRow]:
    return nb.db.transact([
        {"op": "insert", "table": "Load_Balancer_Health_Check", "uuid-name": "hc",
         "row": {"vip": "10.0.0.103:80"}},
        {"op": "insert", "table": "Load_Balancer", "uuid-name": "lb",
         "row": {"name": "lbh", "vips": ["map", [["10.0.0.103:80", "10.0.0.11:80"]]],
                 "health_check": ["named-uuid", "hc"],
                 "ip_port_mappings": ["map", [["10.0.0.11", "vm1:10.0.0.250"]]]}},
        _mutate("Logical_Switch", "sw0", "load_balancer", "insert", ["named-uuid", "lb"])])


def _nat_add(nb: Nb, lr: str, type_: str, external: str, logical: str,
             **row: Any) -> Changeset[IdlRow]:
    return nb.db.transact([
        {"op": "insert", "table": "NAT", "uuid-name": "n",
         "row": {"type": type_, "external_ip": external, "logical_ip": logical, **row}},
        _mutate("Logical_Router", lr, "nat", "insert", ["named-uuid", "n"])])


def _nat_row(nb: Nb, external: str) -> str:
    return next(u for u, r in nb.db.tables["NAT"].rows.items()
                if r.data["external_ip"] == external)


def _nat_set(nb: Nb, external: str, **row: Any) -> Changeset[IdlRow]:
    return nb.db.transact([{"op": "update", "table": "NAT", "where": [
        ["_uuid", "==", ["uuid", _nat_row(nb, external)]]], "row": row}])


def _nat_del(nb: Nb, lr: str, external: str) -> Changeset[IdlRow]:
    return nb.db.transact([_mutate("Logical_Router", lr, "nat", "delete",
                                   ["uuid", _nat_row(nb, external)])])


def _router_set_lists(sb: LocalDb, address: str) -> Changeset[IdlRow]:
    """A step that changes nothing: it checks that a router's VIP address set
    (`_rtr_lb_<key>_ip4`) lists `address`."""
    sets = [r for r in sb.tables["Address_Set"].rows.values()
            if r.data["name"].startswith("_rtr_lb_")]
    assert any(address in r.data["addresses"] for r in sets), sets
    return Changeset()


def _listed(sb: LocalDb, address: str) -> Changeset[IdlRow]:
    """A step that changes nothing: it checks that the advertising port's binding
    lists `address`."""
    binding = next(r for r in sb.tables["Port_Binding"].rows.values()
                   if r.data["logical_port"] == "ext-lr0")
    assert any(address in entry.split() for entry in binding.data["nat_addresses"])
    return Changeset()


def _advertising_switch(nb: Nb) -> Changeset[IdlRow]:
    """Switch `ext` on router port lr0-gw (a gateway port), its router port with
    `nat-addresses=router`."""
    return nb.db.transact([
        {"op": "insert", "table": "Logical_Router_Port", "uuid-name": "gw",
         "row": {"name": "lr0-gw", "mac": "00:00:00:00:ff:fe", "networks": "172.16.0.1/24"}},
        _mutate("Logical_Router", "lr0", "ports", "insert", ["named-uuid", "gw"]),
        {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "rp",
         "row": {"name": "ext-lr0", "type": "router", "addresses": "router",
                 "options": ["map", [["router-port", "lr0-gw"],
                                     ["nat-addresses", "router"]]]}},
        {"op": "insert", "table": "Logical_Switch",
         "row": {"name": "ext", "ports": ["named-uuid", "rp"]}}])


def test_load_balancers_change_in_place(nb: Nb, sb: LocalDb) -> None:
    loop = _topology(nb, sb)
    loop.change(nb.db.transact([{"op": "insert", "table": "Logical_Switch",
                                 "row": {"name": "sw1"}}]))
    _play(loop, [
        ("lb-add alone", lambda: _lb_add(nb, "lb0", {"10.0.0.100:80": "10.0.0.11:80"}), True),
        ("ls-lb-add", lambda: _lb_attach(nb, "lb0", "Logical_Switch", "sw0"), True),
        ("lb-add + ls-lb-add on two switches", lambda: _lb_add(
            nb, "lb1", {"10.0.0.101": "10.0.0.11,10.0.0.12"}, ("Logical_Switch", "sw0"),
            ("Logical_Switch", "sw1"), protocol="udp"), True),
        ("lr-lb-add (a VIP on the router's network)",
         lambda: _lb_attach(nb, "lb0", "Logical_Router", "lr0"), True),
        ("lb-add on the router, a VIP beyond its networks", lambda: _lb_add(
            nb, "lb5", {"10.5.0.100:80": "10.0.0.11:80"}, ("Logical_Router", "lr0")), True),
        ("lrp-add: a network that holds the VIP", lambda: _lrp_add(
            nb, "lr0", "lr0-five", "10.5.0.1/24"), True),
        ("(the router's VIP set lists it)", lambda: _router_set_lists(sb, "10.5.0.100"), True),
        ("its networks changed: the VIP beyond them", lambda: nb.db.transact([
            {"op": "update", "table": "Logical_Router_Port", "where": [["name", "==", "lr0-five"]],
             "row": {"networks": "10.6.0.1/24"}}]), True),  # (the VIP set follows)
        ("and back", lambda: nb.db.transact([
            {"op": "update", "table": "Logical_Router_Port", "where": [["name", "==", "lr0-five"]],
             "row": {"networks": "10.5.0.1/24"}}]), True),
        ("lrp-del of that port", lambda: nb.db.transact([
            {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "lr0"]],
             "mutations": [["ports", "delete",
                            ["uuid", nb.uuid("Logical_Router_Port", "lr0-five")]]]}]), True),
        ("VIPs changed", lambda: _lb_set(nb, "lb0", vips=["map", [
            ["10.0.0.100:8080", "10.0.0.11:80,10.0.0.12:80"], ["10.0.0.99:80", "10.0.0.12:80"]]]),
         True),
        ("options changed", lambda: _lb_set(nb, "lb0", options=["map", [
            ["neighbor_responder", "none"], ["skip_snat", "true"]]]), True),
        ("a bad VIP", lambda: _lb_set(nb, "lb1", vips=["map", [["10.0.0.101:80", "x"]]]),
         True),
        ("a group on a switch and a router", lambda: _group(
            nb, "lbg", "lb1", ("Logical_Switch", "sw1"), ("Logical_Router", "lr0")), True),
        ("lb-del of a grouped one", lambda: _lb_del(nb, "lb1"), True),
        ("lb-del", lambda: _lb_del(nb, "lb0"), True),
        ("a health check", lambda: _health_checked(nb), True),
        ("the service monitor MAC changed (the monitors and responders carry it)",
         lambda: nb.db.transact([
             {"op": "update", "table": "NB_Global", "where": [],
              "row": {"options": ["map", [["mac_prefix", "0a:00:00"],
                                          ["svc_monitor_mac", "0a:00:00:00:00:fd"]]]}}]), True),
        ("install_ls_lb_from_router", lambda: nb.db.transact([
            {"op": "update", "table": "NB_Global", "where": [],
             "row": {"options": ["map", [["install_ls_lb_from_router", "true"],
                                         ["mac_prefix", "0a:00:00"],
                                         ["svc_monitor_mac", "0a:00:00:00:00:fe"]]]}}]), True),
        ("lr-lb-add with install_ls_lb_from_router", lambda: _lb_add(
            nb, "lb2", {"10.0.0.102": "10.0.0.11"}, ("Logical_Router", "lr0")), True),
        ("a switch attached to the router: the router's load balancers reach it",
         lambda: _attach(nb, "sw1", "lr0", "lrp1", "10.1.0.1/24"), True),
        ("its router-type port removed: they leave it", lambda: nb.db.transact([
            _mutate("Logical_Switch", "sw1", "ports", "delete",
                    ["uuid", nb.uuid("Logical_Switch_Port", "sw1-lrp1")])]), True),
        ("install_ls_lb_from_router off", lambda: nb.db.transact([
            {"op": "update", "table": "NB_Global", "where": [],
             "row": {"options": ["map", [["mac_prefix", "0a:00:00"],
                                         ["svc_monitor_mac", "0a:00:00:00:00:fe"]]]}}]), True),
    ])


def _attach(nb: Nb, ls: str, lr: str, lrp: str, net: str) -> Changeset[IdlRow]:
    """A router port and its switch's router-type port, in one transaction."""
    return nb.db.transact([
        {"op": "insert", "table": "Logical_Router_Port", "uuid-name": "p",
         "row": {"name": lrp, "mac": "00:00:00:00:ff:0a", "networks": net}},
        _mutate("Logical_Router", lr, "ports", "insert", ["named-uuid", "p"]),
        {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "s",
         "row": {"name": f"{ls}-{lrp}", "type": "router", "addresses": "router",
                 "options": ["map", [["router-port", lrp]]]}},
        _mutate("Logical_Switch", ls, "ports", "insert", ["named-uuid", "s"])])


def test_nat_rules_change_in_place(nb: Nb, sb: LocalDb) -> None:
    loop = _topology(nb, sb)
    _play(loop, [
        ("lr-nat-add snat", lambda: _nat_add(nb, "lr0", "snat", "172.16.0.5", "10.0.0.0/24"),
         True),
        ("lr-nat-add dnat_and_snat", lambda: _nat_add(
            nb, "lr0", "dnat_and_snat", "10.0.0.50", "10.0.0.11"), True),
        ("lr-nat-add dnat", lambda: _nat_add(nb, "lr0", "dnat", "10.0.0.51", "10.0.0.11"),
         True),
        ("NAT updated", lambda: _nat_set(nb, "10.0.0.50", external_ip="10.0.0.52"), True),
        ("lr-nat-del", lambda: _nat_del(nb, "lr0", "10.0.0.51"), True),
        ("a distributed one", lambda: _nat_add(
            nb, "lr0", "dnat_and_snat", "10.0.0.60", "10.0.0.11", logical_port="vm1",
            external_mac="00:00:00:00:aa:01"), True),
        ("one asking for routes", lambda: _nat_add(
            nb, "lr0", "dnat", "10.0.0.61", "10.0.0.11",
            options=["map", [["add_route", "true"]]]), False),
    ])


def test_rules_sharing_external_ips_change_in_place(nb: Nb, sb: LocalDb) -> None:
    """On a router with a distributed gateway port and on a gateway router, rules that
    share an external IP (a SNAT beside a floating IP, two SNATs: the first of an IP
    answers ARP) come, go and move between IPs: each IP's flows are rebuilt alone
    (`lflows.rebuild_router_nat` with the IPs changed), equal to a recompute."""
    loop = _topology(nb, sb)
    nb.ls_add("pub")
    nb.connect("pub", "lr0", "lr0-pub", "00:00:20:20:12:13", "172.16.0.1/24")
    _gateway(nb, "lr0-pub")
    nb.ls_add("pub1")
    nb.lr_add("gr1", options={"chassis": "ch0"})
    nb.connect("pub1", "gr1", "gr1-pub", "00:00:20:20:12:14", "172.16.1.1/24")
    nb.db.insert("Address_Set", name="allowed", addresses=["192.0.2.0/24"])
    loop = Loop(nb, sb)  # (a northd started on the whole topology)
    loop.settle()
    names: dict[str, str] = {}

    def add(lr: str, tag: str, type_: str, external: str, logical: str,
            **row: Any) -> Changeset[IdlRow]:
        cs = _nat_add(nb, lr, type_, external, logical, **row)
        names[tag] = nb.db.last_results[0]["uuid"][1]
        return cs

    def set_(tag: str, **row: Any) -> Changeset[IdlRow]:
        return nb.db.transact([{"op": "update", "table": "NAT", "where": [
            ["_uuid", "==", ["uuid", names[tag]]]], "row": row}])

    def drop(lr: str, tag: str) -> Changeset[IdlRow]:
        return nb.db.transact([_mutate("Logical_Router", lr, "nat", "delete",
                                       ["uuid", names[tag]])])

    _play(loop, [
        ("a SNAT", lambda: add("lr0", "snat", "snat", "172.16.0.5", "10.0.0.0/24"), True),
        ("a floating IP on the SNAT's IP", lambda: add(
            "lr0", "fip", "dnat_and_snat", "172.16.0.5", "10.0.0.11"), True),
        ("a distributed floating IP", lambda: add(
            "lr0", "dvr", "dnat_and_snat", "172.16.0.6", "10.0.0.12", logical_port="vm1",
            external_mac="00:00:00:00:aa:01"), True),
        ("a second SNAT of the same IP", lambda: add(
            "lr0", "snat2", "snat", "172.16.0.5", "10.0.1.0/24"), True),
        ("the first SNAT of the IP deleted", lambda: drop("lr0", "snat"), True),
        ("the distributed one moved onto the shared IP", lambda: set_(
            "dvr", external_ip="172.16.0.5"), True),
        ("a stateless one with allowed external IPs", lambda: add(
            "lr0", "sl", "dnat_and_snat", "172.16.0.7", "10.0.0.13",
            options=["map", [["stateless", "true"]]],
            allowed_ext_ips=["uuid", nb.uuid("Address_Set", "allowed")]), True),
        ("the floating IP deleted", lambda: drop("lr0", "fip"), True),
        ("on a gateway router: a SNAT", lambda: add(
            "gr1", "gsnat", "snat", "172.16.1.5", "10.1.0.0/24"), True),
        ("and a DNAT on its IP", lambda: add(
            "gr1", "gdnat", "dnat", "172.16.1.5", "10.1.0.11"), True),
        ("the gateway router's SNAT moved", lambda: set_("gsnat", external_ip="172.16.1.6"),
         True),
        ("its DNAT deleted", lambda: drop("gr1", "gdnat"), True),
    ])


def _unsnat_skipped(sb: LocalDb, vip: str, present: bool) -> Changeset[IdlRow]:
    """A step that changes nothing: it checks whether the router's load balancer skips
    unSNAT for `vip` (it does while `vip` is also a NAT external IP of the router)."""
    found = any(r.data["table_id"] == 4 and r.data["priority"] == 120
                and f"ip4.dst == {vip}" in r.data["match"]
                for r in sb.tables["Logical_Flow"].rows.values()
                if r.data["pipeline"] == "ingress")
    assert found is present, (vip, present)
    return Changeset()


def test_a_nat_rule_on_a_vip_rebuilds_the_load_balancer_flows(nb: Nb, sb: LocalDb) -> None:
    """A NAT rule rebuilds its router's NAT flows alone, unless a load balancer of the
    router has its external IP as a VIP: that load balancer's flows read it."""
    loop = _topology(nb, sb)
    _play(loop, [
        ("a gateway port", lambda: _lrp_add(nb, "lr0", "lr0-gw", "172.16.0.1/24"), True),
        ("a gateway", lambda: _gateway(nb, "lr0-gw"), True),
        ("lr-lb-add", lambda: _lb_add(nb, "lbv", {"172.16.0.20:80": "10.0.0.11:80"},
                                      ("Logical_Router", "lr0")), True),
        ("(no NAT on the VIP)", lambda: _unsnat_skipped(sb, "172.16.0.20", False), True),
        ("lr-nat-add on the VIP", lambda: _nat_add(nb, "lr0", "dnat_and_snat", "172.16.0.20",
                                                   "10.0.0.11"), True),
        ("(unSNAT skipped)", lambda: _unsnat_skipped(sb, "172.16.0.20", True), True),
        ("another", lambda: _nat_add(nb, "lr0", "snat", "172.16.0.21", "10.0.0.0/24"), True),
        ("lr-nat-del on the VIP", lambda: _nat_del(nb, "lr0", "172.16.0.20"), True),
        ("(no more)", lambda: _unsnat_skipped(sb, "172.16.0.20", False), True),
    ])


def test_a_router_that_advertises_its_addresses(nb: Nb, sb: LocalDb) -> None:
    """A switch port with `nat-addresses=router` carries its router's NAT and VIP
    addresses in its binding: changes of those rebuild it in place."""
    loop = _topology(nb, sb)
    _play(loop, [
        ("the advertising switch", lambda: _advertising_switch(nb), True),
        ("a gateway", lambda: _gateway(nb, "lr0-gw"), True),
        ("lr-nat-add", lambda: _nat_add(nb, "lr0", "dnat_and_snat", "172.16.0.7",
                                        "10.0.0.11"), True),
        ("lr-lb-add", lambda: _lb_add(nb, "lbx", {"172.16.0.8": "10.0.0.11"},
                                      ("Logical_Router", "lr0")), True),
        ("VIPs changed", lambda: _lb_set(nb, "lbx", vips=["map", [["172.16.0.9", "10.0.0.11"]]]),
         True),
        ("lr-nat-del", lambda: _nat_del(nb, "lr0", "172.16.0.7"), True),
        ("(the binding lists the VIP)", lambda: _listed(sb, "172.16.0.9"), True),
        ("lb-del", lambda: _lb_del(nb, "lbx"), True),
    ])
    binding = next(r for r in sb.tables["Port_Binding"].rows.values()
                   if r.data["logical_port"] == "ext-lr0")
    assert binding.data["nat_addresses"] == (
        '00:00:00:00:ff:fe 172.16.0.1 is_chassis_resident("cr-lr0-gw")',)  # its own, alone


def test_a_rebuild_of_most_datapaths_recomputes_the_flows(nb: Nb, sb: LocalDb) -> None:
    """`lflow` rebuilds a few datapaths in place, but recomputes where a change reaches
    more than half of them (`REBUILD_AT_MOST`); `northd` stays in place either way."""
    from pyovsdb.northd.nodes.lflow import REBUILD_ANY

    loop = _topology(nb, sb)
    count = 2 * REBUILD_ANY
    loop.change(nb.db.transact([{"op": "insert", "table": "Logical_Switch",
                                 "row": {"name": f"many{i}"}} for i in range(count)]))
    for lb, switches, lflow_recomputes in (("few", range(10), False),
                                           ("most", range(count - 10), True)):
        before = {n: loop.stat(n, "recompute") for n in ("northd", "lflow")}
        loop.change(_lb_add(nb, lb, {"10.9.9.9:80": "10.0.0.11:80"},
                            *(("Logical_Switch", f"many{i}") for i in switches)))
        check_equals_recompute(loop)
        assert loop.stat("northd", "recompute") == before["northd"], lb
        assert (loop.stat("lflow", "recompute") > before["lflow"]) is lflow_recomputes, lb


def _gateway_router(i: int) -> list[dict[str, Any]]:
    """Gateway router `gw<i>` on switch `many<i>`, whose router port advertises the
    router's addresses (`nat-addresses=router`: its binding lists the VIPs)."""
    return [
        {"op": "insert", "table": "Logical_Router_Port", "uuid-name": f"p{i}",
         "row": {"name": f"gw{i}-ext", "mac": f"00:00:00:01:{i // 256:02x}:{i % 256:02x}",
                 "networks": f"172.20.{i}.1/24"}},
        {"op": "insert", "table": "Logical_Router",
         "row": {"name": f"gw{i}", "ports": ["named-uuid", f"p{i}"],
                 "options": ["map", [["chassis", "ch0"]]]}},
        {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": f"s{i}",
         "row": {"name": f"many{i}-gw{i}", "type": "router", "addresses": "router",
                 "options": ["map", [["router-port", f"gw{i}-ext"],
                                     ["nat-addresses", "router"]]]}},
        _mutate("Logical_Switch", f"many{i}", "ports", "insert", ["named-uuid", f"s{i}"])]


def test_a_load_balancer_on_most_datapaths_rebuilds_its_own_flows(nb: Nb, sb: LocalDb) -> None:
    """A load balancer on most datapaths (a cluster's, on every node's switch and
    gateway router) whose VIPs or backends change has its own flows built again, not
    its datapaths: `lflow` does not recompute (the routers' advertising bindings
    change, but no flow reads them). Where what other flows read of it moves
    (`lflows.lb_reads`: the first or last VIP of a switch, a VIP on a router port's
    address or network or on a NAT external IP), those datapaths are built again
    whole; each step equals a recompute."""
    from pyovsdb.northd.nodes.lflow import REBUILD_ANY

    loop = _topology(nb, sb)
    count = 2 * REBUILD_ANY
    loop.change(nb.db.transact([{"op": "insert", "table": "Logical_Switch",
                                 "row": {"name": f"many{i}"}} for i in range(count)]))
    loop.change(nb.db.transact([op for i in range(count) for op in _gateway_router(i)]))
    loop.change(_nat_add(nb, "lr0", "dnat_and_snat", "10.7.0.5", "10.0.0.11"))
    on = [(t, f"{n}{i}") for i in range(count - 10)
          for t, n in (("Logical_Switch", "many"), ("Logical_Router", "gw"))] + [
        ("Logical_Router", "lr0"), ("Logical_Switch", "sw0")]

    def vips(*pairs: tuple[str, str]) -> Callable[[], Changeset[IdlRow]]:
        return lambda: _lb_set(nb, "cluster", vips=["map", [list(p) for p in pairs]])

    base = ("10.96.0.1:443", "10.0.0.11:6443")
    for name, step, lflow_recomputes in (
            ("the cluster's load balancer: its switches' first VIP",
             lambda: _lb_add(nb, "cluster", dict([base]), *on), True),
            ("a VIP added", vips(base, ("10.96.0.2:53", "10.0.0.11:53")), False),
            ("backends changed", vips(base, ("10.96.0.2:53", "10.0.0.11:53,10.0.0.12:53")),
             False),
            ("a VIP in the router port's network", vips(base, ("10.0.0.200:80", "10.0.0.11:80")),
             False),
            ("a VIP on the router port's address", vips(base, ("10.0.0.1:80", "10.0.0.11:80")),
             False),
            ("a VIP on a NAT external IP", vips(base, ("10.7.0.5:80", "10.0.0.11:80")), False),
            ("the VIP taken away", vips(base), False),
            ("a second load balancer on one switch", lambda: _lb_add(
                nb, "one", {"10.96.1.1:80": "10.0.0.11:80"}, ("Logical_Switch", "many0")),
             False),
            ("the switches' last VIP gone", lambda: _lb_set(nb, "cluster", vips=["map", []]),
             True)):
        before = {n: loop.stat(n, "recompute") for n in ("northd", "lflow")}
        loop.change(step())
        check_equals_recompute(loop)
        assert loop.stat("northd", "recompute") == before["northd"], name
        assert (loop.stat("lflow", "recompute") > before["lflow"]) is lflow_recomputes, name


def test_a_binding_is_unread_only_while_every_step_left_its_flows_alone() -> None:
    """`PortsDelta.unread` (bindings changed in columns no flow reads, which `lflow`
    skips) holds a binding only while no step of the run changed it otherwise, in
    whatever order the steps' deltas merge."""
    from pyovsdb.northd.build.delta import PortsDelta

    def delta(*steps: tuple[str, str]) -> PortsDelta:
        """A delta of (how, binding) touches in this order."""
        d = PortsDelta()
        for how, name in steps:
            if how == "read":
                d.touch("sb", "Port_Binding", name)
            else:
                d.touch_unread(name)
        return d

    assert delta(("unread", "a")).unread == {"a"}
    assert delta(("read", "a"), ("unread", "a")).unread == set()
    assert delta(("unread", "a"), ("read", "a")).unread == set()
    for first, later in ((delta(("unread", "a"), ("unread", "b")), delta(("read", "a"))),
                         (delta(("read", "a")), delta(("unread", "a"), ("unread", "b")))):
        first.merge(later)
        assert first.unread == {"b"} and first.sb["Port_Binding"] == {"a", "b"}
