"""RBAC and read-only clients in the transaction engine (`ovsdb.rbac`), with a client id
given: the authorized paths that a server without TLS can never reach, and every
denial with the real server's wording. Also the options a Connection row gives its
remote (`remotes.row_options`)."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from unit_helpers import commit, dele, execute_ops, ins, mut, sel, snapshot, upd

from pyovsdb.ovsdb.database import Database
from pyovsdb.ovsdb.rbac import Access, _split_map_name, convert_denied
from pyovsdb.ovsdb.schema import DatabaseSchema
from pyovsdb.ovsdb.transaction import Committed, Failed
from pyovsdb.server.remotes import RemoteOptions, default_options, parse_remote, row_options
from pyovsdb.storage.schemafile import load_schema
from pyovsdb.testing import NB_SCHEMA, SB_SCHEMA


@functools.cache
def sb_schema() -> DatabaseSchema:
    return load_schema(SB_SCHEMA)


def perm(uuid: str, table: str, auth: list[str], insert_delete: bool,
         update: list[str]) -> dict[str, Any]:
    return {"op": "insert", "table": "RBAC_Permission", "uuid-name": uuid,
            "row": {"table": table, "authorization": ["set", auth],
                    "insert_delete": insert_delete, "update": ["set", update]}}


def sb_db() -> Database:
    """A Southbound database with a role as ovn-northd makes them (authorization by a
    string column, by a map key, and for everyone) and rows of two chassis."""
    db = Database(sb_schema())
    commit(db, [
        perm("p_cp", "Chassis_Private", ["name"], True, ["nb_cfg", "external_ids"]),
        perm("p_dp", "Datapath_Binding", ["external_ids:owner"], True, ["external_ids"]),
        perm("p_as", "Address_Set", [""], False, ["addresses"]),
        perm("p_pg", "Port_Group", ["ports", "name"], True, ["ports"]),
        {"op": "insert", "table": "RBAC_Role", "row": {
            "name": "ovn-controller",
            "permissions": ["map", [["Chassis_Private", ["named-uuid", "p_cp"]],
                                    ["Datapath_Binding", ["named-uuid", "p_dp"]],
                                    ["Address_Set", ["named-uuid", "p_as"]],
                                    ["Port_Group", ["named-uuid", "p_pg"]]]]}},
        ins("Chassis_Private", {"name": "hv2"}),
        ins("Datapath_Binding", {"tunnel_key": 2,
                                 "external_ids": ["map", [["owner", "hv2"]]]}),
        ins("Address_Set", {"name": "as1"}),
    ])
    return db


def hv(client_id: str | None = "hv1", role: str | None = "ovn-controller",
       read_only: bool = False) -> Access:
    return Access(None, read_only=read_only, role=role, client_id=client_id)


def denied(client: str, verb: str, table: str) -> dict[str, str]:
    return {"error": "permission error",
            "details": f'RBAC rules for client "{client}" role "ovn-controller" prohibit '
                       f'{verb} table "{table}".'}


INSERTION, DELETION = "row insertion into", "row deletion from"
MODIFICATION, MUTATION = "modification of", "mutate operation on"
NAME = ["name", "==", "hv1"]


def result(db: Database, ops: list[Any], access: Access | None) -> Any:
    """The results; a failed transaction must leave the database as it was."""
    before = snapshot(db)
    out = execute_ops(db, ops, owns_lock=access)
    if isinstance(out, Committed):
        db.apply(out.changeset)
        return out.results
    assert isinstance(out, Failed)
    assert snapshot(db) == before
    return out.results


# ---------------------------------------------------------------------------------------
# The authorized client


def test_authorized_by_string_column() -> None:
    db = sb_db()
    a = hv()
    assert result(db, [ins("Chassis_Private", {"name": "hv1"})], a)[0].keys() == {"uuid"}
    assert result(db, [upd("Chassis_Private", [NAME], {"nb_cfg": 3})], a) == [{"count": 1}]
    assert result(db, [mut("Chassis_Private", [NAME],
                           [["external_ids", "insert", ["map", [["k", "v"]]]]])], a) == [
        {"count": 1}]
    assert result(db, [sel("Chassis_Private", [NAME], columns=["nb_cfg", "external_ids"])],
                  a) == [{"rows": [{"nb_cfg": 3, "external_ids": ["map", [["k", "v"]]]}]}]
    assert result(db, [dele("Chassis_Private", [NAME])], a) == [{"count": 1}]


def test_other_clients_rows_are_refused() -> None:
    db = sb_db()
    a = hv()
    hv2 = [["name", "==", "hv2"]]
    assert result(db, [ins("Chassis_Private", {"name": "hv2"})], a) == [
        denied("hv1", INSERTION, "Chassis_Private")]
    assert result(db, [upd("Chassis_Private", hv2, {"nb_cfg": 1})], a) == [
        denied("hv1", MODIFICATION, "Chassis_Private")]
    assert result(db, [mut("Chassis_Private", hv2, [["nb_cfg", "+=", 1]])], a) == [
        denied("hv1", MUTATION, "Chassis_Private")]
    assert result(db, [dele("Chassis_Private", hv2)], a) == [
        denied("hv1", DELETION, "Chassis_Private")]
    # One refused row among permitted ones refuses the whole operation.
    commit(db, [ins("Chassis_Private", {"name": "hv1"})])
    assert result(db, [upd("Chassis_Private", [], {"nb_cfg": 1})], a) == [
        denied("hv1", MODIFICATION, "Chassis_Private")]


def test_columns_not_updatable_are_refused() -> None:
    db = sb_db()
    a = hv()
    commit(db, [ins("Chassis_Private", {"name": "hv1"})])
    assert result(db, [upd("Chassis_Private", [NAME], {"nb_cfg_timestamp": 5})], a) == [
        denied("hv1", MODIFICATION, "Chassis_Private")]
    assert result(db, [upd("Chassis_Private", [NAME], {"nb_cfg": 1, "name": "hv1"})], a) == [
        denied("hv1", MODIFICATION, "Chassis_Private")]
    assert result(db, [mut("Chassis_Private", [NAME], [["nb_cfg_timestamp", "+=", 1]])],
                  a) == [denied("hv1", MUTATION, "Chassis_Private")]


def test_no_matching_row_is_permitted() -> None:
    """The real server checks the rows the condition selects: none, nothing to refuse
    (even for a column that may not be written)."""
    db = sb_db()
    a = hv()
    nobody = [["name", "==", "nobody"]]
    assert result(db, [upd("Chassis_Private", nobody, {"nb_cfg_timestamp": 1}),
                       dele("Chassis_Private", nobody)], a) == [{"count": 0}, {"count": 0}]


def test_authorized_by_map_key() -> None:
    db = sb_db()
    a = hv()
    mine = {"tunnel_key": 1, "external_ids": ["map", [["owner", "hv1"]]]}
    assert "uuid" in result(db, [ins("Datapath_Binding", mine)], a)[0]
    assert result(db, [ins("Datapath_Binding", {"tunnel_key": 3})], a) == [
        denied("hv1", INSERTION, "Datapath_Binding")]
    assert result(db, [mut("Datapath_Binding", [["tunnel_key", "==", 1]],
                           [["external_ids", "insert", ["map", [["x", "y"]]]]])], a) == [
        {"count": 1}]
    assert result(db, [dele("Datapath_Binding", [["tunnel_key", "==", 2]])], a) == [
        denied("hv1", DELETION, "Datapath_Binding")]
    assert result(db, [dele("Datapath_Binding", [["tunnel_key", "==", 1]])], a) == [
        {"count": 1}]


def test_everyone_authorized_but_no_insert_delete() -> None:
    db = sb_db()
    a = hv()
    assert result(db, [mut("Address_Set", [], [["addresses", "insert", "10.0.0.1"]])], a) == [
        {"count": 1}]
    assert result(db, [ins("Address_Set", {"name": "as2"})], a) == [
        denied("hv1", INSERTION, "Address_Set")]
    assert result(db, [dele("Address_Set", [])], a) == [denied("hv1", DELETION, "Address_Set")]
    assert result(db, [upd("Address_Set", [], {"name": "x"})], a) == [
        denied("hv1", MODIFICATION, "Address_Set")]


def test_authorization_column_of_another_type_authorizes_nobody() -> None:
    """Port_Group's permission names `ports` (a set of strings, not one string: never
    matches) and `name`."""
    db = sb_db()
    assert result(db, [ins("Port_Group", {"name": "g", "ports": ["set", ["hv1"]]})],
                  hv()) == [denied("hv1", INSERTION, "Port_Group")]
    assert "uuid" in result(db, [ins("Port_Group", {"name": "hv1"})], hv())[0]


def test_rows_written_earlier_in_the_transaction_are_checked_as_they_are_now() -> None:
    db = sb_db()
    ops = [ins("Chassis_Private", {"name": "hv1"}),
           upd("Chassis_Private", [NAME], {"nb_cfg": 7}),
           dele("Chassis_Private", [["nb_cfg", "==", 7]])]
    assert result(db, ops, hv())[1:] == [{"count": 1}, {"count": 1}]
    # A refused operation fails the transaction: the permitted writes before it vanish.
    ops = [ins("Chassis_Private", {"name": "hv1"}),
           {"op": "update", "table": "Chassis_Private", "where": [NAME],
            "row": {"external_ids": ["map", [["a", "b"]]]}},
           dele("Chassis_Private", [["name", "==", "hv2"]])]
    assert result(db, ops, hv())[2] == denied("hv1", DELETION, "Chassis_Private")


# ---------------------------------------------------------------------------------------
# Who is refused everything, and who is not restricted at all


def test_without_client_id_every_write_is_refused() -> None:
    """A client without TLS has no id; the real server prints the missing id as (null)."""
    db = sb_db()
    a = hv(client_id=None)
    cases = [(ins("Address_Set", {"name": "a"}), INSERTION),
             (upd("Address_Set", [], {"addresses": ["set", []]}), MODIFICATION),
             (mut("Address_Set", [], [["addresses", "insert", "x"]]), MUTATION),
             (dele("Address_Set", []), DELETION)]
    for op, verb in cases:
        assert result(db, [op], a) == [denied("(null)", verb, "Address_Set")]
    assert result(db, [sel("Address_Set", [], columns=["name"]),
                       {"op": "commit", "durable": False}, {"op": "comment", "comment": "c"}],
                  a) == [{"rows": [{"name": "as1"}]}, {}, {}]


def test_unknown_role_or_table_is_refused() -> None:
    db = sb_db()
    assert result(db, [ins("Chassis_Private", {"name": "x"})], hv("x", role="nobody")) == [
        {"error": "permission error",
         "details": 'RBAC rules for client "x" role "nobody" prohibit row insertion into '
                    'table "Chassis_Private".'}]
    assert result(db, [ins("Meter", {"name": "m", "unit": "kbps"})], hv()) == [
        denied("hv1", INSERTION, "Meter")]


@pytest.mark.parametrize("role", [None, ""])
def test_no_role_is_not_restricted(role: str | None) -> None:
    db = sb_db()
    ops = [ins("Meter", {"name": "m", "unit": "kbps"}), dele("Address_Set", [])]
    assert result(db, ops, hv(client_id=None, role=role))[1] == {"count": 1}


def test_database_without_rbac_tables_is_not_restricted() -> None:
    db = Database(load_schema(NB_SCHEMA))
    out = result(db, [ins("Logical_Switch", {"name": "sw0"})], hv(client_id=None))
    assert "uuid" in out[0]


# ---------------------------------------------------------------------------------------
# Read-only clients


def test_read_only_refuses_writes_after_parsing() -> None:
    db = sb_db()
    ro = Access(None, read_only=True)
    ro_text = "operation not allowed when database server is in read only mode"
    for op in (ins("Address_Set", {"name": "x"}), upd("Address_Set", [], {"name": "x"}),
               mut("Address_Set", [], [["addresses", "insert", "x"]]),
               dele("Address_Set", []), {"op": "commit", "durable": True}):
        assert result(db, [op], ro) == [{"error": "not allowed",
                                         "details": f"{op['op']} {ro_text}"}]
    # A parse error is reported instead; reads and the rest go through.
    bad = result(db, [ins("Address_Set", {"name": 1})], ro)
    assert bad[0]["error"] == "syntax error"
    assert result(db, [sel("Address_Set", [], columns=["name"]), {"op": "assert", "lock": "l"}],
                  ro) == [{"rows": [{"name": "as1"}]},
                          {"error": "not owner", "details": "Asserted lock l not held."}]
    # Read-only is said before the reserved database's own reason, RBAC before both.
    out = execute_ops(db, [ins("Address_Set", {"name": "x"})], owns_lock=ro,
                      read_only_reason="on table in reserved database _Server")
    assert out.results[0]["details"] == f"insert {ro_text}"
    both = Access(None, read_only=True, role="ovn-controller", client_id=None)
    assert result(db, [ins("Address_Set", {"name": "x"})], both) == [
        denied("(null)", INSERTION, "Address_Set")]


def test_access_is_the_lock_test() -> None:
    db = sb_db()
    a = Access(lambda name: name == "mine", role="ovn-controller", client_id="hv1")
    assert result(db, [{"op": "assert", "lock": "mine"}], a) == [{}]
    assert result(db, [{"op": "assert", "lock": "other"}], a)[0]["error"] == "not owner"


def test_convert_permissions() -> None:
    role = convert_denied(hv(client_id=None), "OVN_Southbound")
    assert role is not None and role.to_json() == {
        "error": "permission error",
        "details": 'RBAC rules for client "(null)" role "ovn-controller" prohibit "convert" '
                   "of database OVN_Southbound (only the root role may convert databases)"}
    ro = convert_denied(Access(read_only=True), "OVN_Northbound")
    assert ro is not None and ro.to_json() == {
        "error": "not allowed",
        "details": "conversion is not allowed for read-only database OVN_Northbound"}
    assert convert_denied(Access(role=""), "OVN_Northbound") is None


def test_map_authorization_names_split_as_strtok() -> None:
    assert _split_map_name("external_ids:owner") == ("external_ids", "owner")
    assert _split_map_name("a::b:c") == ("a", "b")
    assert _split_map_name(":owner") == ("owner", None)
    assert _split_map_name(":") == (None, None)


# ---------------------------------------------------------------------------------------
# What a Connection row gives its remote


def connection(**values: Any) -> tuple[Any, dict[str, Any]]:
    ts = sb_schema().tables["Connection"]
    data = ts.defaults()
    data.update(values)
    return ts, data


def test_connection_row_options() -> None:
    base = default_options(parse_remote("ptcp:0:127.0.0.1"))
    assert base == RemoteOptions(probe_interval_ms=5000, max_backoff_ms=8000, dscp=48)
    assert default_options(parse_remote("punix:x")).probe_interval == 0
    ts, data = connection(read_only=True, role="ovn-controller", inactivity_probe=(30000,),
                          max_backoff=(2000,), other_config=(("dscp", "10"),))
    assert row_options(ts, data, base) == RemoteOptions(
        probe_interval_ms=30000, max_backoff_ms=2000, read_only=True, role="ovn-controller",
        dscp=10)
    ts, data = connection()
    assert row_options(ts, data, base) == RemoteOptions(probe_interval_ms=5000, role="")
    # inactivity_probe: 0 disables, anything else is at least a second.
    for ms, seconds in ((0, 0.0), (1, 1.0), (999, 1.0), (1500, 1.5)):
        ts, data = connection(inactivity_probe=(ms,))
        assert row_options(ts, data, base).probe_interval == seconds
    # dscp as C's atoi reads it; out of range keeps the default.
    for text, dscp in (("12abc", 12), ("abc", 0), (" 7", 7), ("64", 48), ("-1", 48)):
        ts, data = connection(other_config=(("dscp", text),))
        assert row_options(ts, data, base).dscp == dscp


def test_bare_ptcp_is_the_ovsdb_port() -> None:
    assert (parse_remote("ptcp:").port, parse_remote("ptcp:").host) == (6640, "0.0.0.0")
    assert parse_remote("ptcp:0:127.0.0.1").port == 0
