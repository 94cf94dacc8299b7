"""Port groups and address sets changed without recomputing `northd`
(`build.groups_incremental`): after every step the incremental state equals a graph
built from scratch on the same databases, and the stats say whether `northd`
recomputed. A port group's ACLs follow it to the switches it gains and leave those it
loses; names another source also gives an address set recompute."""

from __future__ import annotations

from typing import Any

from test_incremental_datapaths import _topology, _unlink
from test_incremental_lb_nat import _play
from test_incremental_ports import Loop, check_equals_recompute

from pyovsdb.idl.row import IdlRow
from pyovsdb.northd.testing import LocalDb, Nb
from pyovsdb.ovsdb.changeset import Changeset


def _ports(nb: Nb, *names: str) -> list[Any]:
    return ["set", [["uuid", nb.uuid("Logical_Switch_Port", n)] for n in names]]


def _pg_set(nb: Nb, group: str, **row: Any) -> Changeset[IdlRow]:
    return nb.db.transact([{"op": "update", "table": "Port_Group",
                            "where": [["name", "==", group]], "row": row}])


def _pg_add_with_acl(nb: Nb, name: str, *ports: str) -> Changeset[IdlRow]:
    return nb.db.transact([
        {"op": "insert", "table": "ACL", "uuid-name": "a",
         "row": {"priority": 1001, "direction": "to-lport", "action": "allow-related",
                 "match": f"outport == @{name} && ip4"}},
        {"op": "insert", "table": "Port_Group",
         "row": {"name": name, "ports": _ports(nb, *ports), "acls": ["named-uuid", "a"]}}])


def _as(nb: Nb, op: str, name: str, *addresses: str) -> Changeset[IdlRow]:
    if op == "delete":
        return nb.db.transact([{"op": "delete", "table": "Address_Set",
                                "where": [["name", "==", name]]}])
    row = {"addresses": ["set", list(addresses)]}
    if op == "insert":
        return nb.db.transact([{"op": "insert", "table": "Address_Set",
                                "row": {"name": name, **row}}])
    return nb.db.transact([{"op": "update", "table": "Address_Set",
                            "where": [["name", "==", name]], "row": row}])


def _two_switches(nb: Nb, sb: LocalDb) -> Loop:
    """The topology of `test_incremental_datapaths` and a switch sw1 with a VIF vm2."""
    loop = _topology(nb, sb)
    loop.change(nb.db.transact([
        {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "p",
         "row": {"name": "vm2", "addresses": "00:00:00:00:00:02 10.1.0.12"}},
        {"op": "insert", "table": "Logical_Switch",
         "row": {"name": "sw1", "ports": ["named-uuid", "p"]}}]))
    return loop


def test_port_groups_and_address_sets_change_in_place(nb: Nb, sb: LocalDb) -> None:
    loop = _two_switches(nb, sb)
    _play(loop, [
        ("pg-add with an ACL", lambda: _pg_add_with_acl(nb, "pg0", "vm1"), True),
        ("the group gains a switch", lambda: _pg_set(nb, "pg0", ports=_ports(nb, "vm1", "vm2")),
         True),
        ("the group loses a switch", lambda: _pg_set(nb, "pg0", ports=_ports(nb, "vm2")),
         True),
        ("the group renamed", lambda: _pg_set(nb, "pg0", name="pg1"), True),
        ("a grouped VIF gets other addresses", lambda: nb.db.transact([
            {"op": "update", "table": "Logical_Switch_Port", "where": [["name", "==", "vm2"]],
             "row": {"addresses": "00:00:00:00:00:02 10.1.0.22"}}]), True),
        ("a pod added: its port, in the group", lambda: nb.db.transact([
            {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "p",
             "row": {"name": "pod3", "addresses": "00:00:00:00:00:03 10.1.0.13"}},
            {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw1"]],
             "mutations": [["ports", "insert", ["named-uuid", "p"]]]},
            {"op": "mutate", "table": "Port_Group", "where": [["name", "==", "pg1"]],
             "mutations": [["ports", "insert", ["named-uuid", "p"]]]}]), True),
        ("an address set for the pods", lambda: _as(nb, "insert", "as_pods", "10.1.0.13"),
         True),
        ("a pod added as ovn-kubernetes adds one: port, group, address set at once",
         lambda: nb.db.transact([
             {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "p",
              "row": {"name": "pod4", "addresses": "00:00:00:00:00:04 10.1.0.14",
                      "port_security": "00:00:00:00:00:04 10.1.0.14",
                      "options": ["map", [["requested-chassis", "ch0"]]]}},
             {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw1"]],
              "mutations": [["ports", "insert", ["named-uuid", "p"]]]},
             {"op": "mutate", "table": "Port_Group", "where": [["name", "==", "pg1"]],
              "mutations": [["ports", "insert", ["named-uuid", "p"]]]},
             {"op": "mutate", "table": "Address_Set", "where": [["name", "==", "as_pods"]],
              "mutations": [["addresses", "insert", "10.1.0.14"]]}]), True),
        ("a pod deleted: its port, out of the group", lambda: nb.db.transact([
            {"op": "mutate", "table": t, "where": [["name", "==", n]],
             "mutations": [[c, "delete", ["uuid", nb.uuid("Logical_Switch_Port", "pod3")]]]}
            for t, n, c in (("Port_Group", "pg1", "ports"), ("Logical_Switch", "sw1", "ports"))]),
         True),
        ("a grouped VIF moves to the other switch as the group gains a port", lambda: (
            nb.db.transact([
                {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw1"]],
                 "mutations": [["ports", "delete", ["uuid", nb.uuid("Logical_Switch_Port",
                                                                    "pod4")]]]},
                {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw0"]],
                 "mutations": [["ports", "insert", ["uuid", nb.uuid("Logical_Switch_Port",
                                                                    "pod4")]]]},
                {"op": "mutate", "table": "Port_Group", "where": [["name", "==", "pg1"]],
                 "mutations": [["ports", "insert", ["uuid", nb.uuid("Logical_Switch_Port",
                                                                    "vm1")]]]}])), True),
        ("a switch's one grouped port deleted", lambda: nb.db.transact([
            {"op": "mutate", "table": t, "where": [["name", "==", n]],
             "mutations": [[c, "delete", ["uuid", nb.uuid("Logical_Switch_Port", "vm2")]]]}
            for t, n, c in (("Port_Group", "pg1", "ports"), ("Logical_Switch", "sw1", "ports"))]),
         True),
        ("address set added", lambda: _as(nb, "insert", "as0", "10.0.0.11", "10.1.0.12"), True),
        ("address set changed", lambda: _as(nb, "update", "as0", "10.0.0.11"), True),
        ("address set deleted", lambda: _as(nb, "delete", "as0"), True),
        ("an address set named as the group's", lambda: _as(nb, "insert", "pg1_ip4", "1.1.1.1"),
         True),
        ("the group loses its ports", lambda: _pg_set(nb, "pg1", ports=["set", []]), False),
        ("pg-del", lambda: nb.db.transact([{"op": "delete", "table": "Port_Group",
                                            "where": [["name", "==", "pg1"]]}]), False),
        ("the address set deleted", lambda: _as(nb, "delete", "pg1_ip4"), True),
        ("svc_monitor_mac", lambda: _as(nb, "insert", "svc_monitor_mac", "1.1.1.1"), False),
    ])


def _acl_to(nb: Nb, table: str, owner: str, match: str, action: str) -> Changeset[IdlRow]:
    return nb.db.transact([
        {"op": "insert", "table": "ACL", "uuid-name": "a",
         "row": {"priority": 1002, "direction": "to-lport", "action": action,
                 "match": match}},
        {"op": "mutate", "table": table, "where": [["name", "==", owner]],
         "mutations": [["acls", "insert", ["named-uuid", "a"]]]}])


def _acl_from(nb: Nb, table: str, owner: str, match: str) -> Changeset[IdlRow]:
    uuid = next(u for u, r in nb.db.tables["ACL"].rows.items() if r.data["match"] == match)
    return nb.db.transact([{"op": "mutate", "table": table, "where": [["name", "==", owner]],
                            "mutations": [["acls", "delete", ["uuid", uuid]]]}])


def test_acls_alone_are_built_again_alone(nb: Nb, sb: LocalDb,
                                          whole_rebuilds: list[frozenset[str]]) -> None:
    """An ACL added to or taken from a port group or a switch that keeps its ACL facts
    (has ACLs, has a stateful one) rebuilds that ACL's flows alone, not the switches;
    one that changes them rebuilds the switches. Equal to a recompute either way."""
    rebuilt = whole_rebuilds
    loop = _two_switches(nb, sb)
    loop.change(nb.db.transact([{"op": "insert", "table": "Logical_Switch",
                                 "row": {"name": "sw2"}}]))
    loop.change(_pg_add_with_acl(nb, "pg0", "vm1", "vm2"))
    for name, step, alone in [
        ("a second stateful ACL on the group",
         lambda: _acl_to(nb, "Port_Group", "pg0", "outport == @pg0 && tcp", "allow-related"),
         True),
        ("a drop ACL on the group", lambda: _acl_to(
            nb, "Port_Group", "pg0", "outport == @pg0 && udp", "drop"), True),
        ("the drop ACL taken off", lambda: _acl_from(
            nb, "Port_Group", "pg0", "outport == @pg0 && udp"), True),
        ("an ACL of a switch that has ACLs", lambda: _acl_to(
            nb, "Logical_Switch", "sw0", "ip4.dst == 10.0.0.11", "allow-related"), True),
        ("the first ACL of a switch", lambda: _acl_to(
            nb, "Logical_Switch", "sw2", "ip4", "drop"), False),
        ("its first stateful ACL", lambda: _acl_to(
            nb, "Logical_Switch", "sw2", "ip4 && tcp", "allow-related"), False),
    ]:
        rebuilt.clear()
        before = loop.stat("northd", "recompute")
        loop.change(step())
        check_equals_recompute(loop)
        assert loop.stat("northd", "recompute") == before, name
        assert (not rebuilt) is alone, (name, rebuilt)


def _vif_comes_and_goes(loop: Loop, nb: Nb, switch: str) -> None:
    _play(loop, [
        ("a VIF added", lambda: nb.db.transact([
            {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "p",
             "row": {"name": "vm5", "addresses": "00:00:00:00:00:05 10.1.0.15"}},
            {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", switch]],
             "mutations": [["ports", "insert", ["named-uuid", "p"]]]}]), True),
        ("the VIF deleted", lambda: _unlink(nb, "Logical_Switch_Port", "ports",
                                            "Logical_Switch", "vm5"), True),
    ])


def _stateful_group(name: str, port: list[Any]) -> list[dict[str, Any]]:
    return [{"op": "insert", "table": "ACL", "uuid-name": "a",
             "row": {"priority": 1001, "direction": "to-lport", "action": "allow-related",
                     "match": f"outport == @{name} && ip4"}},
            {"op": "insert", "table": "Port_Group",
             "row": {"name": name, "ports": port, "acls": ["named-uuid", "a"]}}]


def test_a_group_on_a_switch_by_a_port_it_lists(nb: Nb, sb: LocalDb) -> None:
    """The switches a port group is on when a VIF of one of them comes or goes (a
    rebuild of that switch alone): not one that lists a grouped port a switch before it
    lists too (the port is the first's); one that lists a grouped port named as a
    router port (the switch port keeps the name)."""
    loop = _two_switches(nb, sb)
    vm1 = nb.uuid("Logical_Switch_Port", "vm1")
    loop.change(nb.db.transact([
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw1"]],
         "mutations": [["ports", "insert", ["uuid", vm1]]]},
        *_stateful_group("pgv", ["uuid", vm1])]))
    check_equals_recompute(loop)
    _vif_comes_and_goes(loop, nb, "sw1")
    loop.change(nb.db.transact([
        {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "d",
         "row": {"name": "lrp0", "addresses": "00:00:00:00:00:09 10.1.0.19"}},
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw1"]],
         "mutations": [["ports", "insert", ["named-uuid", "d"]]]},
        *_stateful_group("pgd", ["named-uuid", "d"])]))
    check_equals_recompute(loop)
    _vif_comes_and_goes(loop, nb, "sw1")
