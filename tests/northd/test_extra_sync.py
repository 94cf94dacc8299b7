"""The extra builders' desired rows through `sync` into an in-memory SB: written once,
then nothing to do (every table's keys match the rows they wrote), and NB changes land
as the few writes they cause."""

from __future__ import annotations

from typing import Any, cast

from pyovsdb.idl.txn import NewRow, Transaction
from pyovsdb.northd.build.core import build_core
from pyovsdb.northd.build.extra import build_extra
from pyovsdb.northd.build.global_cfg import global_config
from pyovsdb.northd.build.inputs import BuildInput
from pyovsdb.northd.desired import DesiredDb
from pyovsdb.northd.sync import Delete, Insert, Op, Update, plan
from pyovsdb.northd.sync_apply import apply
from pyovsdb.northd.testing import LocalDb, Nb


def _run(inp: BuildInput, now_ms: int = 1000) -> tuple[DesiredDb, DesiredDb]:
    sb, nb = DesiredDb(), DesiredDb()
    core = build_core(inp, sb, nb)
    build_extra(inp, core, sb, nb, now_ms=now_ms)
    return sb, nb


class _ColumnNamedTable:
    """A transaction whose `insert` takes a column named `table` (RBAC_Permission has
    one, and `Transaction.insert(table, **values)` cannot take it as a keyword)."""

    def __init__(self, txn: Transaction) -> None:
        self.txn = txn

    def insert(self, table_name: str, /, **values: Any) -> NewRow:
        row = self.txn.insert(table_name)
        self.txn.update(row, **values)
        return row

    def __getattr__(self, name: str) -> Any:
        return getattr(self.txn, name)


def _sync(inp: BuildInput, db: LocalDb) -> list[Op]:
    """Build, plan against `db` (the SB), commit the plan; the operations."""
    sb, _ = _run(inp)
    ops = plan(sb, db.tables)
    txn = db.transaction()
    apply(ops, cast(Transaction, _ColumnNamedTable(txn)))
    db.commit(txn)
    return ops


def _topology(nb: Nb, *, meters: bool = False) -> None:
    nb.db.insert("NB_Global", options={"mac_prefix": "0a:00:00",
                                      "svc_monitor_mac": "0a:00:00:00:00:fe"})
    nb.ls_add("sw0")
    p1 = nb.lsp_add("sw0", "p1", addresses=["00:00:00:00:00:01 10.0.0.11"])
    nb.lr_add("r0")
    nb.connect("sw0", "r0", "r0-sw0", "00:00:00:00:ff:01", "10.0.0.1/24")
    nb.db.insert("Port_Group", name="pg1", ports=[p1])
    nb.db.insert("Address_Set", name="as1", addresses=["1.1.1.1"])
    if meters:
        _meter(nb)
    lb = nb.db.insert("Load_Balancer", name="lb0", protocol=["tcp"],
                      vips={"10.0.0.100:80": "10.0.0.11:8080"})
    nb.db.add_to("Logical_Switch", nb.uuid("Logical_Switch", "sw0"), "load_balancer", lb)
    nb.db.add_to("Logical_Router", nb.uuid("Logical_Router", "r0"), "load_balancer", lb)


def _meter(nb: Nb) -> None:
    nb.db.transact([  # a band is not a root: inserted with its meter
        {"op": "insert", "table": "Meter_Band", "uuid-name": "band",
         "row": {"action": "drop", "rate": 100}},
        {"op": "insert", "table": "Meter", "row": {
            "name": "m1", "unit": "kbps", "bands": ["named-uuid", "band"]}}])


def test_second_sync_plans_nothing(nb: Nb, sb: LocalDb, inp: BuildInput) -> None:
    _topology(nb)
    first = _sync(inp, sb)
    tables = {op.table for op in first if isinstance(op, Insert)}
    assert {"SB_Global", "RBAC_Role", "RBAC_Permission", "DHCP_Options", "DHCPv6_Options",
            "Load_Balancer", "Logical_DP_Group", "IP_Multicast",
            "Port_Group", "Address_Set"} <= tables
    assert len(sb.tables["DHCP_Options"].rows) == 38
    assert len(sb.tables["RBAC_Permission"].rows) == 10
    assert _sync(inp, sb) == []


def test_meter_bands_converge(nb: Nb, sb: LocalDb, inp: BuildInput) -> None:
    _topology(nb, meters=True)
    first = _sync(inp, sb)
    assert {"Meter", "Meter_Band"} <= {op.table for op in first if isinstance(op, Insert)}
    assert _sync(inp, sb) == []


def test_nb_change_is_one_update(nb: Nb, sb: LocalDb, inp: BuildInput) -> None:
    _topology(nb)
    _sync(inp, sb)
    nb.db.update("Address_Set", nb.uuid("Address_Set", "as1"),
                 addresses=["1.1.1.1", "2.2.2.2"])
    ops = _sync(inp, sb)
    assert [(type(op).__name__, op.table) for op in ops] == [("Update", "Address_Set")]
    update = ops[0]
    assert isinstance(update, Update) and set(update.values) == {"addresses"}
    row = next(r for r in sb.tables["Address_Set"].rows.values() if r.name == "as1")
    assert row.addresses == ["1.1.1.1", "2.2.2.2"]


def test_stale_rows_deleted(nb: Nb, sb: LocalDb, inp: BuildInput) -> None:
    _topology(nb)
    sb.insert("RBAC_Role", name="intruder")
    sb.insert("Address_Set", name="stale", addresses=["9.9.9.9"])
    sb.insert("DHCPv6_Options", name="server_id", code=99, type="mac")
    sb.insert("DHCP_Options", name="mtu", code=99, type="uint16")
    ops = _sync(inp, sb)
    mtu = next(r for r in sb.tables["DHCP_Options"].rows.values() if r.name == "mtu")
    assert mtu.code == 26
    deleted = sorted((op.table, op.row.name) for op in ops if isinstance(op, Delete))
    assert deleted == [("Address_Set", "stale"), ("RBAC_Role", "intruder")]
    dhcpv6 = {r.name: r.code for r in sb.tables["DHCPv6_Options"].rows.values()}
    # Put back (23.03 matches DHCPv6 options by name alone and would keep 99).
    assert dhcpv6 == {"ia_addr": 5, "server_id": 2, "domain_search": 24, "dns_server": 23}


def test_empty_databases(inp: BuildInput, sb: LocalDb) -> None:
    """Nothing in NB, not even NB_Global: the constant tables, SB_Global and the
    service monitor MAC's set; nothing for NB."""
    sbd, nbd = _run(inp)
    filled = sorted(name for name, t in sbd.tables.items() if t.rows)
    assert filled == ["Address_Set", "DHCP_Options", "DHCPv6_Options", "RBAC_Permission",
                      "RBAC_Role", "SB_Global"]
    assert list(sbd["Address_Set"].rows) == ["svc_monitor_mac"]
    assert all(not t.rows for t in nbd.tables.values())
    _sync(inp, sb)
    assert _sync(inp, sb) == []


def test_ipam_and_globals_share_the_random_prefix(nb: Nb, inp: BuildInput) -> None:
    """No mac_prefix in NB: the one drawn for NB_Global is the one IPAM allocates from
    when the caller makes the config first and hands it to both."""
    nb.db.insert("NB_Global")
    nb.ls_add("sw0", other_config={"mac_only": "true"})
    nb.lsp_add("sw0", "p1", addresses=["dynamic"])
    config = global_config(inp.nb, inp.sb, lambda purpose: 0x123456789ABC)
    sbd, nbd = DesiredDb(), DesiredDb()
    core = build_core(inp, sbd, nbd, mac_prefix=config.mac_prefix)
    build_extra(inp, core, sbd, nbd, now_ms=0, config=config)
    assert config.mac_prefix == "12:34:56"
    (options,) = [r["options"] for r in nbd["NB_Global"].rows.values()]
    assert options["mac_prefix"] == "12:34:56"
    (dynamic,) = [r["dynamic_addresses"] for r in nbd["Logical_Switch_Port"].rows.values()]
    assert dynamic == ["12:34:56:00:00:01"]
