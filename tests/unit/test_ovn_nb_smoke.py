"""A realistic smoke test on the real OVN Northbound schema: the transactions ovn-nbctl
sends for switches, ports, routers, ACLs and address sets, and their commit checks."""

from __future__ import annotations

import pytest
from unit_helpers import (
    ANY_UUID,
    INDEX_INSERTED,
    INDEX_UNMODIFIED,
    UU,
    Case,
    U,
    case_params,
    commit,
    dele,
    derived_state,
    execute_ops,
    fail,
    index_details,
    ins,
    mut,
    new_db,
    ovn_nb_schema,
    recomputed_derived_state,
    row_json,
    run_case,
    sel,
    select,
    upd,
)

from pyovsdb.ovsdb.changeset import Changeset


def nb() -> object:
    return new_db(ovn_nb_schema())


def lsp(name: str, uuid: int, **cols: object) -> dict:
    return ins("Logical_Switch_Port", {"name": name, **cols}, uuid=uuid, name=f"p_{name}")


def switch_with_ports() -> object:
    db = nb()
    commit(db, [
        ins("NB_Global", {"name": "global", "options": ["map", [["mac_prefix", "0a:00:00"]]]},
            uuid=0x60),
        lsp("p1", 0x101, addresses=["set", ["00:00:00:00:00:01 10.0.0.1", "router"]],
            options=["map", [["requested-chassis", "hv1"]]], tag_request=0),
        lsp("p2", 0x102, type="localnet", options=["map", [["network_name", "phys"]]]),
        ins("Logical_Switch", {"name": "sw0", "ports": ["set", [["named-uuid", "p_p1"],
                                                                  ["named-uuid", "p_p2"]]],
                               "other_config": ["map", [["subnet", "10.0.0.0/24"]]]},
            uuid=0x100),
    ])
    return db


def test_create_switch_with_ports() -> None:
    db = switch_with_ports()
    assert row_json(db, "Logical_Switch", U(0x100), "name", "ports") == {
        "name": "sw0", "ports": ["set", [UU(0x101), UU(0x102)]],
    }
    assert select(db, "Logical_Switch_Port", columns=["name", "type", "addresses", "tag_request",
                                                     "up", "enabled", "options"],
                  sort=["name"]) == [
        {"name": "p1", "type": "", "addresses": ["set", ["00:00:00:00:00:01 10.0.0.1", "router"]],
         "tag_request": 0, "up": ["set", []], "enabled": ["set", []],
         "options": ["map", [["requested-chassis", "hv1"]]]},
        {"name": "p2", "type": "localnet", "addresses": ["set", []], "tag_request": ["set", []],
         "up": ["set", []], "enabled": ["set", []],
         "options": ["map", [["network_name", "phys"]]]},
    ]
    assert derived_state(db) == recomputed_derived_state(db)


def test_port_removed_from_switch_is_collected() -> None:
    db = switch_with_ports()
    res = commit(db, [mut("Logical_Switch", [["name", "==", "sw0"]],
                          [["ports", "delete", UU(0x101)]])])
    assert res == [{"count": 1}]
    assert [r["name"] for r in select(db, "Logical_Switch_Port")] == ["p2"]


def test_switch_deletion_cascades_to_ports() -> None:
    db = switch_with_ports()
    out = execute_ops(db, [dele("Logical_Switch", [["name", "==", "sw0"]])])
    assert out.results == [{"count": 1}]
    assert set(out.changeset.tables["Logical_Switch_Port"]) == {U(0x101), U(0x102)}
    db.apply(out.changeset)
    assert select(db, "Logical_Switch_Port") == []
    assert derived_state(db) == recomputed_derived_state(db)


def test_unattached_port_is_not_kept() -> None:
    db = switch_with_ports()
    res = commit(db, [ins("Logical_Switch_Port", {"name": "lonely"})])
    assert res == [{"uuid": ANY_UUID}]
    assert sorted(r["name"] for r in select(db, "Logical_Switch_Port")) == ["p1", "p2"]


def test_changeset_record_replays_into_fresh_database() -> None:
    db = nb()
    replica = nb()
    for ops in [
        [ins("NB_Global", {}, uuid=0x60), lsp("a", 0x101), lsp("b", 0x102),
         ins("Logical_Switch", {"name": "sw", "ports": ["set", [["named-uuid", "p_a"],
                                                                ["named-uuid", "p_b"]]]},
             uuid=0x100)],
        [upd("Logical_Switch_Port", [["name", "==", "a"]], {"addresses": "dynamic",
                                                             "up": True}),
         mut("NB_Global", [], [["nb_cfg", "+=", 1]])],
        [mut("Logical_Switch", [], [["ports", "delete", UU(0x102)]])],
    ]:
        out = execute_ops(db, ops)
        db.apply(out.changeset)
        rec = out.changeset.to_record(db.schema)
        replica.apply(Changeset.from_record(replica.schema, rec,
                                            lambda t: replica.tables[t].rows,
                                            versions=replica.new_version))
    for t in db.tables:
        assert {u: r.data for u, r in db.tables[t].rows.items()} == {
            u: r.data for u, r in replica.tables[t].rows.items()}


SETUP = [[
    ins("NB_Global", {}, uuid=0x60),
    lsp("p1", 0x101),
    ins("Logical_Switch", {"name": "sw0", "ports": ["named-uuid", "p_p1"]}, uuid=0x100),
]]

NB_CASES = [
    Case(
        "nb-global-max-rows",
        [ins("NB_Global", {}, uuid=0x61)],
        [{"uuid": UU(0x61)},
         {"error": "constraint violation",
          "details": 'transaction causes "NB_Global" table to contain 2 rows, greater than '
                     "the schema-defined limit of 1 row(s)"}],
        setup=SETUP, schema="NB",
    ),
    Case(
        "duplicate-port-name",
        [lsp("p1", 0x103), mut("Logical_Switch", [], [["ports", "insert", UU(0x103)]])],
        [{"uuid": UU(0x103)}, {"count": 1},
         {"error": "constraint violation",
          "details": index_details("Logical_Switch_Port", "p1", 'column "name"',
                                   (U(0x103), INDEX_INSERTED), (U(0x101), INDEX_UNMODIFIED))}],
        setup=SETUP, schema="NB",
    ),
    Case(
        "delete-port-still-in-switch",
        [dele("Logical_Switch_Port", [["name", "==", "p1"]])],
        [{"count": 1},
         {"error": "referential integrity violation",
          "details": f"cannot delete Logical_Switch_Port row {U(0x101)} because of 1 remaining "
                     "reference(s)"}],
        setup=SETUP, schema="NB",
    ),
    Case(
        "acl-priority-range",
        [ins("ACL", {"priority": 40000, "direction": "to-lport", "action": "drop",
                     "match": "ip4"})],
        [{"error": "constraint violation",
          "details": "40000 is not in the valid range 0 to 32767 (inclusive)"}],
        schema="NB",
    ),
    Case(
        "acl-direction-default-checked",
        [ins("ACL", {"priority": 100, "action": "drop", "match": "ip4"})],
        [{"error": "constraint violation",
          "details": '"" is not one of the allowed values ([from-lport, to-lport])'}],
        schema="NB",
    ),
    Case(
        "acl-name-too-long",
        [ins("ACL", {"priority": 1, "direction": "to-lport", "action": "drop", "match": "1",
                     "name": "x" * 64})],
        [{"error": "constraint violation",
          "details": f'"{"x" * 64}" length 64 is greater than maximum allowed length 63'}],
        schema="NB",
    ),
    Case(
        "acl-on-switch",
        [ins("ACL", {"priority": 1001, "direction": "from-lport", "action": "allow-related",
                     "match": "inport == \"p1\" && ip4", "severity": "info", "log": True},
             uuid=0xAC1),
         mut("Logical_Switch", [["name", "==", "sw0"]], [["acls", "insert", UU(0xAC1)]]),
         sel("ACL", columns=["priority", "direction", "severity", "label"])],
        [{"uuid": UU(0xAC1)}, {"count": 1},
         {"rows": [{"priority": 1001, "direction": "from-lport", "severity": "info",
                    "label": 0}]}],
        setup=SETUP, schema="NB",
    ),
    Case(
        "port-group-weak-ports",
        [ins("Port_Group", {"name": "pg1", "ports": ["set", [UU(0x101), UU(0xDEAD)]]},
             uuid=0x200),
         sel("Port_Group", columns=["ports"])],
        [{"uuid": UU(0x200)}, {"rows": [{"ports": ["set", [UU(0x101), UU(0xDEAD)]]}]}],
        setup=SETUP, schema="NB",
    ),
    Case(
        "address-set-index",
        [ins("Address_Set", {"name": "as1"}, uuid=0x301)],
        [{"uuid": UU(0x301)},
         {"error": "constraint violation",
          "details": index_details("Address_Set", "as1", 'column "name"',
                                   (U(0x301), INDEX_INSERTED), (U(0x300), INDEX_UNMODIFIED))}],
        setup=[[ins("Address_Set", {"name": "as1", "addresses": ["set", ["10.0.0.1"]]},
                    uuid=0x300)]],
        schema="NB",
    ),
    Case(
        "router-with-port-and-nat",
        [ins("Logical_Router_Port", {"name": "lrp0", "mac": "00:00:00:00:ff:01",
                                     "networks": ["set", ["10.0.0.254/24"]]},
             uuid=0x401, name="lrp0"),
         ins("NAT", {"type": "snat", "external_ip": "172.16.0.1", "logical_ip": "10.0.0.0/24",
                     "gateway_port": ["named-uuid", "lrp0"]}, uuid=0x402, name="nat"),
         ins("Logical_Router", {"name": "lr0", "ports": ["named-uuid", "lrp0"],
                                "nat": ["named-uuid", "nat"]}, uuid=0x400),
         sel("NAT", columns=["type", "gateway_port"]),
         sel("Logical_Router_Port", columns=["name", "networks"])],
        [{"uuid": UU(0x401)}, {"uuid": UU(0x402)}, {"uuid": UU(0x400)},
         {"rows": [{"type": "snat", "gateway_port": UU(0x401)}]},
         {"rows": [{"name": "lrp0", "networks": "10.0.0.254/24"}]}],
        schema="NB",
    ),
    Case(
        "nat-type-enum",
        [ins("NAT", {"type": "masquerade"})],
        [{"error": "constraint violation",
          "details": "masquerade is not one of the allowed values ([dnat, dnat_and_snat, snat])"}],
        schema="NB",
    ),
    Case(
        "nbctl-style-wait-and-update",
        [{"op": "wait", "table": "NB_Global", "where": [], "columns": ["nb_cfg"],
          "until": "==", "rows": [{"nb_cfg": 0}], "timeout": 0},
         mut("NB_Global", [], [["nb_cfg", "+=", 1]]),
         {"op": "comment", "comment": "ovn-nbctl: sync"},
         sel("NB_Global", columns=["nb_cfg"])],
        [{}, {"count": 1}, {}, {"rows": [{"nb_cfg": 1}]}],
        setup=SETUP, schema="NB",
    ),
]


@pytest.mark.parametrize("case", case_params(NB_CASES))
def test_nb_cases(case: Case) -> None:
    run_case(case)


def test_port_group_weak_ref_cleanup() -> None:
    db = nb()
    commit(db, SETUP[0])
    commit(db, [ins("Port_Group", {"name": "pg1", "ports": ["set", [UU(0x101), UU(0xDEAD)]]},
                    uuid=0x200)])
    assert row_json(db, "Port_Group", U(0x200), "ports") == {"ports": UU(0x101)}
    commit(db, [mut("Logical_Switch", [], [["ports", "delete", UU(0x101)]])])
    assert select(db, "Logical_Switch_Port") == []
    assert row_json(db, "Port_Group", U(0x200), "ports") == {"ports": ["set", []]}


def test_router_port_networks_default() -> None:
    db = nb()
    commit(db, [ins("Logical_Router_Port", {"name": "x"}, uuid=1, name="x"),
                ins("Logical_Router", {"ports": ["named-uuid", "x"]})])
    assert row_json(db, "Logical_Router_Port", U(1), "networks") == {"networks": ""}


def test_many_ports_transaction() -> None:
    """A bigger transaction: 200 ports on 4 switches, then half removed."""
    db = nb()
    ops = []
    for s in range(4):
        names = [f"s{s}p{p}" for p in range(50)]
        ops += [ins("Logical_Switch_Port", {"name": n, "addresses": f"00:00:00:00:{s:02x}:{p:02x}"},
                    name=n.replace("s", "x")) for p, n in enumerate(names)]
        ops.append(ins("Logical_Switch", {"name": f"sw{s}", "ports": [
            "set", [["named-uuid", n.replace("s", "x")] for n in names]]}))
    commit(db, ops)
    assert len(db.tables["Logical_Switch_Port"].rows) == 200
    commit(db, [dele("Logical_Switch", [["name", "includes", "sw1"]]),
                dele("Logical_Switch", [["name", "==", "sw3"]])])
    assert len(db.tables["Logical_Switch_Port"].rows) == 100
    assert {r["name"][:2] for r in select(db, "Logical_Switch_Port")} == {"s0", "s2"}
    assert derived_state(db) == recomputed_derived_state(db)
    # Index on the port name still enforced for the survivors.
    results = fail(db, [lsp("s0p0", 0x999), mut("Logical_Switch", [["name", "==", "sw0"]],
                                                  [["ports", "insert", UU(0x999)]])])
    assert results[-1]["error"] == "constraint violation"
    assert "(s0p0) for index on column \"name\"" in results[-1]["details"]
