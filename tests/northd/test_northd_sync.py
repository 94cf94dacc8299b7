"""sync.plan/apply: the operations that make the replica hold the desired rows, and
nothing when it already does."""

from __future__ import annotations

from pyovsdb.idl.row import IdlRow
from pyovsdb.northd import sync, sync_apply
from pyovsdb.northd.build.core import build_core
from pyovsdb.northd.build.inputs import BuildInput
from pyovsdb.northd.desired import DesiredDb, DesiredTable, Ref
from pyovsdb.northd.testing import LocalDb, Nb, run_core


def desired(nb: Nb, sb: LocalDb) -> tuple[DesiredDb, DesiredDb]:
    sbd, nbd = DesiredDb(), DesiredDb()
    build_core(BuildInput(nb=nb.db.tables, sb=sb.tables), sbd, nbd)
    return sbd, nbd


def commit(ops: list[sync.Op], db: LocalDb) -> list[dict[str, object]]:
    txn = db.transaction()
    sync_apply.apply(ops, txn)
    return db.commit(txn)[1]


def test_plan_is_empty_when_replica_equals_desired(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("sw")
    nb.lsp_add("sw", "p1", addresses=["00:00:00:00:00:01 10.0.0.1"])
    nb.lr_add("lr")
    nb.connect("sw", "lr", "lr-sw", "00:00:00:00:ff:01", "10.0.0.254/24")
    # 2 datapaths, 3 port bindings, _MC_flood and _MC_flood_l2 of sw (and NB up of
    # both switch ports); the second run changes nothing.
    assert run_core(nb.db, sb) == [7, 0]
    sbd, _ = desired(nb, sb)
    assert sync.plan(sbd, sb.tables) == []
    assert commit([], sb) == []  # and a transaction with nothing in it sends nothing


def test_one_column_changed_is_one_update_of_that_column(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("sw")
    nb.lsp_add("sw", "p1", addresses=["00:00:00:00:00:01"])
    run_core(nb.db, sb)
    nb.set("Logical_Switch_Port", "p1", addresses=["00:00:00:00:00:02"])
    sbd, _ = desired(nb, sb)
    ops = sync.plan(sbd, sb.tables)
    assert len(ops) == 1
    op = ops[0]
    assert isinstance(op, sync.Update) and op.table == "Port_Binding" and op.key == "p1"
    assert op.values == {"mac": ["00:00:00:00:00:02"]}
    sent = commit(ops, sb)
    assert [o["op"] for o in sent] == ["update"]
    assert sent[0]["row"] == {"mac": "00:00:00:00:00:02"}


def test_inserts_come_after_the_rows_they_reference(nb: Nb, sb: LocalDb) -> None:
    nb.ls_add("sw")
    nb.lsp_add("sw", "p1")
    sbd, _ = desired(nb, sb)
    ops = sync.plan(sbd, sb.tables)
    tables = [op.table for op in ops]
    assert all(isinstance(op, sync.Insert) for op in ops)
    assert tables.index("Datapath_Binding") < tables.index("Port_Binding") < \
        tables.index("Multicast_Group")
    pb = next(op for op in ops if op.table == "Port_Binding")
    assert isinstance(pb, sync.Insert)
    sw = nb.uuid("Logical_Switch", "sw")
    assert pb.values["datapath"] == sync.Pending("Datapath_Binding", sw)
    commit(ops, sb)
    row = next(iter(sb.tables["Port_Binding"].rows.values()))
    assert row.datapath.external_ids["name"] == "sw" and row.up is False


def test_unwanted_and_duplicate_rows_of_owned_tables_are_deleted(sb: LocalDb) -> None:
    dp = sb.insert("Datapath_Binding", tunnel_key=1, external_ids={"logical-switch": "a"})
    sb.insert("Port_Binding", logical_port="keep", datapath=dp, tunnel_key=1)
    sb.insert("Port_Binding", logical_port="gone", datapath=dp, tunnel_key=2)
    want = DesiredDb()
    want.add(DesiredTable("Datapath_Binding", ("tunnel_key", "external_ids")))
    want["Datapath_Binding"].put("a", tunnel_key=1, external_ids={"logical-switch": "a"})
    pbs = want.add(DesiredTable("Port_Binding", ("logical_port", "datapath", "tunnel_key")))
    pbs.put("keep", logical_port="keep", datapath=Ref("Datapath_Binding", "a"), tunnel_key=1)
    ops = sync.plan(want, sb.tables)
    assert [(type(op).__name__, op.table) for op in ops] == [("Delete", "Port_Binding")]
    commit(ops, sb)
    assert [r.logical_port for r in sb.tables["Port_Binding"].rows.values()] == ["keep"]


def test_fill_columns_only_written_where_default(sb: LocalDb) -> None:
    dp = sb.insert("Datapath_Binding", tunnel_key=1, external_ids={"logical-switch": "a"})
    sb.insert("Port_Binding", logical_port="up", datapath=dp, tunnel_key=1, up=True)
    sb.insert("Port_Binding", logical_port="unset", datapath=dp, tunnel_key=2)
    want = DesiredDb()
    want.add(DesiredTable("Datapath_Binding", ("tunnel_key", "external_ids")))
    want["Datapath_Binding"].put("a", tunnel_key=1, external_ids={"logical-switch": "a"})
    pbs = want.add(DesiredTable("Port_Binding", ("logical_port", "datapath", "tunnel_key", "up"),
                                fill=("up",)))
    for key, port in (("up", 1), ("unset", 2)):
        pbs.put(key, logical_port=key, datapath=Ref("Datapath_Binding", "a"),
                tunnel_key=port, up=[False])
    ops = sync.plan(want, sb.tables)
    assert [(op.key, op.values) for op in ops if isinstance(op, sync.Update)] == \
        [("unset", {"up": [False]})]


def test_not_owned_tables_compare_only_the_columns_named(nb: Nb) -> None:
    lsp_sw = nb.ls_add("sw")
    lsp = nb.lsp_add("sw", "p1", addresses=["dynamic"], up=True)
    want = DesiredDb()
    table = want.table("Logical_Switch_Port", ("up",), owned=False)
    table.set(lsp, up=[True])
    assert sync.plan(want, nb.db.tables) == []
    want.table("Logical_Switch_Port", ("dynamic_addresses",), owned=False).set(
        lsp, dynamic_addresses=["0a:00:00:00:00:01 10.0.0.2"])
    table.set("00000000-0000-0000-0000-000000000000", up=[True])  # no such row: ignored
    ops = sync.plan(want, nb.db.tables)
    assert [(type(op).__name__, op.values) for op in ops] == \
        [("Update", {"dynamic_addresses": ["0a:00:00:00:00:01 10.0.0.2"]})]
    assert lsp_sw


def test_unregistered_chassis_reference_is_left_empty_until_it_registers(
        nb: Nb, sb: LocalDb) -> None:
    from pyovsdb.northd.testing import add_chassis
    nb.ls_add("sw")
    nb.lsp_add("sw", "p1", options={"requested-chassis": "hv1"})
    run_core(nb.db, sb)
    pb = next(iter(sb.tables["Port_Binding"].rows.values()))
    assert pb.requested_chassis is None
    add_chassis(sb, "hv1", "192.168.0.1")
    assert run_core(nb.db, sb) == [1, 0]
    pb = next(iter(sb.tables["Port_Binding"].rows.values()))
    assert pb.requested_chassis.name == "hv1"


def test_a_column_named_table_is_inserted(sb: LocalDb) -> None:
    want = DesiredDb()
    perms = want.add(DesiredTable("RBAC_Permission",
                                  ("table", "authorization", "insert_delete", "update")))
    perms.put("Chassis", table="Chassis", authorization=["name"], insert_delete=True,
              update=["nb_cfg"])
    commit(sync.plan(want, sb.tables), sb)
    row = next(iter(sb.tables["RBAC_Permission"].rows.values()))
    assert (row["table"], row.authorization, row.insert_delete) == ("Chassis", ["name"], True)
    assert sync.plan(want, sb.tables) == []


def test_an_owned_table_without_a_key_is_refused(sb: LocalDb) -> None:
    import pytest

    want = DesiredDb()
    want.add(DesiredTable("Controller_Event", ("event_type",)))
    with pytest.raises(KeyError, match="no key"):
        sync.plan(want, sb.tables)


def test_non_root_rows_are_matched_by_their_values(sb: LocalDb) -> None:
    """Meter bands (non-root) are named by their meter and values: each meter has its
    own rows, as in 23.03, and a second plan is empty."""
    want = DesiredDb()
    bands = want.add(DesiredTable("Meter_Band", ("action", "rate", "burst_size")))
    meters = want.add(DesiredTable("Meter", ("name", "unit", "bands")))
    for name in ("m0", "m1"):
        bands.put((name, "drop", 200, 2), action="drop", rate=200, burst_size=2)
        meters.put(name, name=name, unit="kbps",
                   bands=[Ref("Meter_Band", (name, "drop", 200, 2))])
    commit(sync.plan(want, sb.tables), sb)
    assert len(sb.tables["Meter_Band"].rows) == 2
    assert sync.plan(want, sb.tables) == []


def test_a_reference_to_another_row_is_an_update_and_the_same_one_is_none(
        sb: LocalDb) -> None:
    a = sb.insert("Datapath_Binding", tunnel_key=1, external_ids={"logical-switch": "a"})
    sb.insert("Datapath_Binding", tunnel_key=2, external_ids={"logical-switch": "b"})
    sb.insert("Port_Binding", logical_port="p", datapath=a, tunnel_key=1)
    want = DesiredDb()
    dps = want.add(DesiredTable("Datapath_Binding", ("tunnel_key", "external_ids")))
    dps.put("a", tunnel_key=1, external_ids={"logical-switch": "a"})
    dps.put("b", tunnel_key=2, external_ids={"logical-switch": "b"})
    pbs = want.add(DesiredTable("Port_Binding", ("logical_port", "datapath", "tunnel_key")))
    pbs.put("p", logical_port="p", datapath=Ref("Datapath_Binding", "a"), tunnel_key=1)
    assert sync.plan(want, sb.tables) == []
    # Moved to `b`: the stored reference (a's UUID) is not what is wanted, keyed or not.
    pbs.put("p", logical_port="p", datapath=Ref("Datapath_Binding", "b"), tunnel_key=1)
    for keys in (None, {"Port_Binding": {"p"}}):
        ops = sync.plan(want, sb.tables, keys)
        assert [(type(op), op.table) for op in ops] == [(sync.Update, "Port_Binding")]
        b = next(r for r in sb.tables["Datapath_Binding"].rows.values() if r.tunnel_key == 2)
        assert isinstance(ops[0], sync.Update) and ops[0].values == {"datapath": b.uuid}
    commit(sync.plan(want, sb.tables), sb)
    assert sync.plan(want, sb.tables) == []


def test_ha_chassis_keys_at_once_equal_the_keys_row_by_row(sb: LocalDb) -> None:
    """An HA chassis is keyed by the first group (by UUID) that lists it: the table's
    keys computed in one walk of the groups are the row-by-row keys, rows listed by two
    groups included."""
    ops: list[dict[str, object]] = [
        {"op": "insert", "table": "HA_Chassis", "uuid-name": f"c{i}",
         "row": {"priority": i, "external_ids": ["map", [["chassis-name", f"ch{i}"]]]}}
        for i in range(5)]
    for n, members in enumerate(([0, 1], [1, 2, 3], [3], [4], [1])):
        ops.append({"op": "insert", "table": "HA_Chassis_Group",
                    "row": {"name": f"g{n}", "ha_chassis": [
                        "set", [["named-uuid", f"c{i}"] for i in members]]}})
    sb.transact(ops)
    table = sb.tables["HA_Chassis"]
    at_once = sync.TABLE_KEYS["HA_Chassis"](sb.tables)
    one_by_one = {u: sync.row_key("HA_Chassis", r, sb.tables) for u, r in table.rows.items()}
    assert at_once == one_by_one and len(at_once) == 5


def _group_world(sb: LocalDb) -> tuple[DesiredDb, str, str]:
    """Switches a and b bound, a datapath group of both, as desired; the bindings'
    UUIDs."""
    a = sb.insert("Datapath_Binding", tunnel_key=1, external_ids={"logical-switch": "a"})
    b = sb.insert("Datapath_Binding", tunnel_key=2, external_ids={"logical-switch": "b"})
    want = DesiredDb()
    dps = want.add(DesiredTable("Datapath_Binding", ("tunnel_key", "external_ids")))
    dps.put("a", tunnel_key=1, external_ids={"logical-switch": "a"})
    dps.put("b", tunnel_key=2, external_ids={"logical-switch": "b"})
    groups = want.add(DesiredTable("Logical_DP_Group", ("datapaths",)))
    groups.put(("a", "b"), datapaths=[Ref("Datapath_Binding", "a"),
                                      Ref("Datapath_Binding", "b")])
    lbs = want.add(DesiredTable("Load_Balancer", ("name", "datapath_group", "external_ids")))
    lbs.put("lb", name="lb", datapath_group=[Ref("Logical_DP_Group", ("a", "b"))],
            external_ids={"lb_id": "lb"})  # (a group nobody names is collected)
    return want, a, b


def test_a_group_matched_by_its_own_key_is_not_compared_again(sb: LocalDb) -> None:
    """A datapath group is keyed by its datapaths: found by its key, it holds them."""
    want, _, _ = _group_world(sb)
    commit(sync.plan(want, sb.tables), sb)
    assert sync.plan(want, sb.tables) == []
    # planned by key with an index (as `sync_to_sb` plans a group a flow came to use)
    keys = {"Logical_DP_Group": {("a", "b")}, "Datapath_Binding": set(), "Load_Balancer": set()}
    rows = sb.tables["Logical_DP_Group"].rows
    index = {"Logical_DP_Group": {sync.row_key("Logical_DP_Group", r, sb.tables):
                                  {r.uuid: r} for r in rows.values()}}
    assert sync.plan(want, sb.tables, keys=keys, index=index) == []


def test_a_group_naming_a_duplicate_binding_moves_to_the_one_kept(sb: LocalDb) -> None:
    """A second binding of switch a (a higher UUID: deleted as a duplicate) named by a
    group in place of the first: the group's key is the same, its contents are not."""
    want, a, b = _group_world(sb)
    dup = sb.insert("Datapath_Binding", tunnel_key=3, external_ids={"logical-switch": "a"})
    keep, gone = sorted((a, dup))
    sb.transact([{"op": "insert", "table": "Logical_DP_Group", "uuid-name": "g",
                  "row": {"datapaths": ["set", [["uuid", gone], ["uuid", b]]]}},
                 {"op": "insert", "table": "Load_Balancer",
                  "row": {"name": "lb", "datapath_group": ["named-uuid", "g"],
                          "external_ids": ["map", [["lb_id", "lb"]]]}}])
    ops = sync.plan(want, sb.tables)
    assert ("Delete", "Datapath_Binding") in [(type(op).__name__, op.table) for op in ops]
    update = [op for op in ops if isinstance(op, sync.Update) and op.table == "Logical_DP_Group"]
    assert len(update) == 1 and sorted(update[0].values["datapaths"]) == sorted([keep, b])
    commit(ops, sb)
    (group,) = sb.tables["Logical_DP_Group"].rows.values()
    assert sorted(r.uuid for r in group.datapaths) == sorted([keep, b])


def test_a_group_updated_in_place_is_keyed_from_its_last_key(sb: LocalDb) -> None:
    """A datapath group's key (its datapaths' NB UUIDs, sorted) carried from the row it
    replaces, with the datapaths that came and went, is the key the row has when keyed
    from scratch; a datapath that went with its binding leaves nothing carried."""
    nb_keys = [f"{i:08x}-0000-0000-0000-000000000000" for i in (5, 1, 9, 3, 7)]
    bindings: list[str] = []
    for i, key in enumerate(nb_keys):
        sb.transact([{"op": "insert", "table": "Datapath_Binding",
                      "row": {"tunnel_key": i + 1,
                              "external_ids": ["map", [["logical-switch", key]]]}}])
        bindings.append(str(sb.last_results[0]["uuid"][1]))

    def members(*at: int) -> list[object]:
        return ["set", [["uuid", bindings[i]] for i in at]]

    sb.transact([{"op": "insert", "table": "Logical_DP_Group", "uuid-name": "g",
                  "row": {"datapaths": members(0, 1, 2)}},
                 {"op": "insert", "table": "Logical_Flow",  # (a group is kept while used)
                  "row": {"logical_dp_group": ["named-uuid", "g"], "pipeline": "ingress",
                          "table_id": 0, "priority": 0, "match": "1", "actions": "next;"}}])
    group = str(sb.last_results[0]["uuid"][1])

    def update(*at: int) -> tuple[IdlRow, IdlRow]:
        old = sb.tables["Logical_DP_Group"].rows[group]
        sync.row_key("Logical_DP_Group", old, sb.tables)  # (as the index filed it)
        cs = sb.transact([{"op": "update", "table": "Logical_DP_Group",
                           "where": [["_uuid", "==", ["uuid", group]]],
                           "row": {"datapaths": members(*at)}}])
        rc = cs.tables["Logical_DP_Group"][group]
        assert rc.old is not None and rc.new is not None
        return rc.old, rc.new

    old, new = update(0, 3, 4)  # (two came, two went)
    sync.carry_group_key(old, new)
    assert new.cache is not None
    assert new.cache["group_key"] == tuple(sorted(nb_keys[i] for i in (0, 3, 4)))
    assert new.cache["group_key"] == sync._datapaths_key(new)

    old, new = update(0, 3)
    sb.transact([{"op": "delete", "table": "Datapath_Binding",
                  "where": [["_uuid", "==", ["uuid", bindings[4]]]]}])
    sync.carry_group_key(old, new)
    assert not new.cache or "group_key" not in new.cache
    assert sync.row_key("Logical_DP_Group", new, sb.tables) == tuple(
        sorted(nb_keys[i] for i in (0, 3)))


def test_a_large_set_changed_in_a_few_elements_is_written_as_a_mutation(
        sb: LocalDb) -> None:
    """A group of many datapaths gaining one and losing one sends those two UUIDs (a
    mutation), not the set; a small set, or one changed in most of its elements, is
    written whole. The row ends as the update would leave it either way."""
    bindings = []
    for i in range(sync_apply.MUTATE_AT_LEAST + 4):
        bindings.append(sb.insert("Datapath_Binding", tunnel_key=i + 1,
                                  external_ids={"logical-switch": f"s{i}"}))
    many = bindings[:sync_apply.MUTATE_AT_LEAST + 2]

    def group(members: list[str]) -> IdlRow:
        sb.transact([{"op": "insert", "table": "Logical_DP_Group", "uuid-name": "g",
                      "row": {"datapaths": ["set", [["uuid", u] for u in members]]}},
                     {"op": "insert", "table": "Logical_Flow",
                      "row": {"logical_dp_group": ["named-uuid", "g"], "pipeline": "ingress",
                              "table_id": 0, "priority": 0, "match": "1",
                              "actions": f"next; /* {len(members)} */"}}])
        return sb.tables["Logical_DP_Group"].rows[str(sb.last_results[0]["uuid"][1])]

    def written(row: IdlRow, members: list[str]) -> list[dict[str, object]]:
        ops = commit([sync.Update("Logical_DP_Group", "k", row, {"datapaths": members})], sb)
        now = sb.tables["Logical_DP_Group"].rows[row.uuid]
        assert sorted(r.uuid for r in now.datapaths) == sorted(members)
        return [op for op in ops if op["table"] == "Logical_DP_Group"]

    big = group(many)
    moved = [*many[1:], bindings[-1]]
    (op,) = written(big, moved)
    assert op["op"] == "mutate"
    assert op["mutations"] == [["datapaths", "delete", ["set", [["uuid", many[0]]]]],
                               ["datapaths", "insert", ["set", [["uuid", bindings[-1]]]]]]
    small = group(bindings[:3])
    (op,) = written(small, bindings[1:4])
    assert op["op"] == "update"
    big = sb.tables["Logical_DP_Group"].rows[big.uuid]
    (op,) = written(big, bindings[-3:])  # (most of it replaced)
    assert op["op"] == "update"
