"""An OVSDB database in memory with an IDL replica of it: northd's builders and sync
tested without a server.

Rules kept here:
- Pure: the caller loads the schema (a JSON object or a `DatabaseSchema`) and passes it;
  nothing here reads files, sockets or clocks.
- The replica mirrors the database through the same path an IDL takes: each committed
  changeset is rendered as an update2 notification (every table, every column) and
  applied with `Replica.apply_update2`, so builders read real `IdlRow`s and the
  changeset `transact` returns is the replica's, as `Idl.track_take()` would give it.
- A failing transaction raises (`TransactError`) and changes nothing.
- `transaction()` hands out a real `idl.Transaction` over the replica (write-changed-only
  on every column, as northd's SB IDL is configured), and `commit(txn)` executes the
  operations it would send: `sync_apply.apply` is tested on the same object the daemon uses.
- `LocalNorthd` is the daemon's loop in miniature over two `LocalDb`s, on the daemon's
  own `driver.Driver`: changes fed in, one run, its operations committed, the commits'
  changesets fed back as the IDLs would deliver them; the clock advances by a fixed
  step per run. The driver's self-check is on: a run whose operations differ from a
  recompute's raises `SelfCheckFailed`.
- Two `LocalNorthd`s over the same databases are an active and a hot standby: each
  feeds the changes it is given (its own commits' too) to its `peers`, and a run
  `standby` commits nothing, as a northd without the lock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from ..idl.replica import Replica, ReplicaTable
from ..idl.row import IdlRow
from ..idl.txn import Transaction
from ..ovsdb.changeset import Changeset, merge
from ..ovsdb.database import Database
from ..ovsdb.schema import DatabaseSchema
from ..ovsdb.transaction import Committed, execute
from .driver import Driver, RunOutput


class TransactError(Exception):
    """A transaction the in-memory database refused."""

    def __init__(self, error: Any, results: list[Any]) -> None:
        super().__init__(f"transaction failed: {error}")
        self.error = error
        self.results = results


def render_update2(cs: Changeset, schema: DatabaseSchema) -> dict[str, Any]:
    """A changeset as the table-updates2 a monitor of every column would send."""
    out: dict[str, Any] = {}
    for tname, changes in cs.tables.items():
        ts = schema.tables[tname]
        codecs = [(c, col.type.codec) for c, col in ts.columns.items()]
        rows: dict[str, Any] = {}
        for uuid, ch in changes.items():
            if ch.new is None:
                if ch.old is not None:
                    rows[uuid] = {"delete": None}
                continue
            new = ch.new.data
            if ch.old is None:
                rows[uuid] = {"insert": {c: codec.to_json(new[c]) for c, codec in codecs
                                         if new[c] != codec.default}}
                continue
            old = ch.old.data
            diff = {c: codec.to_json(codec.diff(old[c], new[c])) for c, codec in codecs
                    if old[c] != new[c]}
            if diff:
                rows[uuid] = {"modify": diff}
        if rows:
            out[tname] = rows
    return out


class _LocalIdl:
    """The little of an `Idl` that `idl.Transaction` reads to build its operations."""

    def __init__(self, replica: Replica) -> None:
        self.replica = replica
        self.lock_name: str | None = None

    def skips_unchanged(self, table: str, column: str) -> bool:
        return True


class LocalDb:
    """A `Database` and its replica, kept equal by every `transact`."""

    def __init__(self, schema: DatabaseSchema | Mapping[str, Any]) -> None:
        if not isinstance(schema, DatabaseSchema):
            schema = DatabaseSchema.from_json(dict(schema))
        self.schema = schema
        self.db = Database(schema)
        self.replica = Replica(schema)
        self._idl = _LocalIdl(self.replica)

    @property
    def tables(self) -> dict[str, ReplicaTable]:
        return self.replica.tables

    def transact(self, ops: list[dict[str, Any]]) -> Changeset[IdlRow]:
        """Execute `ops` (a `transact`'s operations); the replica's changeset."""
        outcome = execute(self.db, ops)
        if not isinstance(outcome, Committed):
            raise TransactError(getattr(outcome, "error", outcome),
                                getattr(outcome, "results", []))
        self.last_results: list[Any] = outcome.results
        self.db.apply(outcome.changeset)
        return self.replica.apply_update2(render_update2(outcome.changeset, self.schema))

    def transaction(self) -> Transaction:
        """An IDL transaction over the replica (see the module rules)."""
        return Transaction(cast(Any, self._idl))

    def commit(self, txn: Transaction) -> tuple[Changeset[IdlRow], list[dict[str, Any]]]:
        """Execute what `txn` would send; its changeset and the operations sent (empty,
        and nothing executed, when nothing would change)."""
        ops, _ = txn.ops()
        if not ops:
            return Changeset[IdlRow](), []
        return self.transact(ops), ops

    def json_row(self, table: str, values: Mapping[str, Any]) -> dict[str, Any]:
        """Python values (str/int/bool, a list for a set, a dict for a map, a UUID string
        for a reference) as the JSON of an operation's row."""
        ts = self.schema.tables[table]
        return {c: _to_json(ts.columns[c].type.codec, v) for c, v in values.items()}

    def insert(self, table: str, **values: Any) -> str:
        """Insert one row; its UUID."""
        self.transact([{"op": "insert", "table": table,
                        "row": self.json_row(table, values)}])
        return str(self.last_results[0]["uuid"][1])

    def update(self, table: str, uuid: str, **values: Any) -> Changeset[IdlRow]:
        return self.transact([{"op": "update", "table": table,
                               "where": [["_uuid", "==", ["uuid", uuid]]],
                               "row": self.json_row(table, values)}])

    def add_to(self, table: str, uuid: str, column: str, *elements: Any) -> Changeset[IdlRow]:
        """Insert elements into a set column (e.g. a port into a switch's ports)."""
        codec = self.schema.tables[table].columns[column].type.codec
        return self.transact([{"op": "mutate", "table": table,
                               "where": [["_uuid", "==", ["uuid", uuid]]],
                               "mutations": [[column, "insert",
                                              ["set", [_atom(codec.key_type, e)
                                                       for e in elements]]]]}])

    def delete(self, table: str, uuid: str) -> Changeset[IdlRow]:
        return self.transact([{"op": "delete", "table": table,
                               "where": [["_uuid", "==", ["uuid", uuid]]]}])


class Nb:
    """An NB `LocalDb` with `ovn-nbctl`-like helpers (rows by name); the helpers that
    create a row return its UUID."""

    def __init__(self, db: LocalDb) -> None:
        self.db = db

    def uuid(self, table: str, name: str) -> str:
        for row in self.db.tables[table].rows.values():
            if row.name == name:
                return row.uuid
        raise KeyError(f"{table} {name}")

    def ls_add(self, name: str, **cols: Any) -> str:
        return self.db.insert("Logical_Switch", name=name, **cols)

    def lr_add(self, name: str, **cols: Any) -> str:
        return self.db.insert("Logical_Router", name=name, **cols)

    def add_child(self, parent_table: str, parent: str, column: str, table: str,
               **cols: Any) -> str:
        ops: list[dict[str, Any]] = [{"op": "insert", "table": table, "uuid-name": "new",
                "row": self.db.json_row(table, cols)},
               {"op": "mutate", "table": parent_table,
                "where": [["name", "==", parent]],
                "mutations": [[column, "insert", ["set", [["named-uuid", "new"]]]]]}]
        self.db.transact(ops)
        return str(self.db.last_results[0]["uuid"][1])

    def lsp_add(self, ls: str, name: str, **cols: Any) -> str:
        return self.add_child("Logical_Switch", ls, "ports", "Logical_Switch_Port",
                           name=name, **cols)

    def lrp_add(self, lr: str, name: str, mac: str, *networks: str, **cols: Any) -> str:
        return self.add_child("Logical_Router", lr, "ports", "Logical_Router_Port",
                           name=name, mac=mac, networks=list(networks), **cols)

    def connect(self, ls: str, lr: str, lrp: str, mac: str, *networks: str) -> str:
        """A router port on `lr` and its peer `<ls>-<lrp>` router-type LSP on `ls`."""
        self.lrp_add(lr, lrp, mac, *networks)
        return self.lsp_add(ls, f"{ls}-{lrp}", type="router", addresses=["router"],
                            options={"router-port": lrp})

    def set(self, table: str, name: str, **cols: Any) -> None:
        self.db.update(table, self.uuid(table, name), **cols)

    def meter_add(self, name: str, **cols: Any) -> None:
        """A meter `name` (pktps, one drop band of rate 10; `cols` set more columns)."""
        self.db.transact([
            {"op": "insert", "table": "Meter_Band", "uuid-name": "band",
             "row": {"action": "drop", "rate": 10}},
            {"op": "insert", "table": "Meter",
             "row": {"name": name, "unit": "pktps", "bands": ["named-uuid", "band"],
                     **self.db.json_row("Meter", cols)}}])


def _atom(atype: str | None, value: Any) -> Any:
    if atype == "uuid":
        return ["uuid", str(value)]
    if atype == "real":
        return float(value)
    return value


def _to_json(codec: Any, value: Any) -> Any:
    if codec.is_map:
        return ["map", [[_atom(codec.key_type, k), _atom(codec.value_type, v)]
                        for k, v in dict(value).items()]]
    if isinstance(value, (list, tuple, set, frozenset)):
        return ["set", [_atom(codec.key_type, v) for v in value]]
    if value is None:
        return ["set", []]
    return _atom(codec.key_type, value)


def run_core(nb: LocalDb, sb: LocalDb, *, max_runs: int = 3) -> list[int]:
    """Build the core tables from `nb` and `sb` and commit what differs into both, as
    northd's loop would, until a run changes nothing (23.03 needs a second run where
    its own SB writes feed back); the number of SB operations of each run."""
    from . import sync, sync_apply
    from .build.core import build_core
    from .build.inputs import BuildInput
    from .desired import DesiredDb

    counts = []
    for _ in range(max_runs):
        sbd, nbd = DesiredDb(), DesiredDb()
        build_core(BuildInput(nb=nb.tables, sb=sb.tables), sbd, nbd)
        sb_ops = sync.plan(sbd, sb.tables)
        nb_ops = sync.plan(nbd, nb.tables)
        counts.append(len(sb_ops))
        if not sb_ops and not nb_ops:
            break
        txn = sb.transaction()
        sync_apply.apply(sb_ops, txn)
        sb.commit(txn)
        txn = nb.transaction()
        sync_apply.apply(nb_ops, txn)
        nb.commit(txn)
    return counts


def build_flows(nb: LocalDb, sb: LocalDb) -> Any:
    """The logical flows (`lflows.LflowTable`) of one northd run over `nb` and `sb`,
    after `run_core` committed the core tables (so datapaths and ports have their
    tunnel keys); `table.on(dp_key)` gives one datapath's flows."""
    from .build.core import build_core
    from .build.extra import build_extra
    from .build.inputs import BuildInput
    from .desired import DesiredDb
    from .lflows import LflowContext, build_lflows

    run_core(nb, sb)
    inp = BuildInput(nb=nb.tables, sb=sb.tables)
    sbd, nbd = DesiredDb(), DesiredDb()
    core = build_core(inp, sbd, nbd)
    extra = build_extra(inp, core, sbd, nbd, now_ms=0)
    return build_lflows(LflowContext(nb=nb.tables, sb=sb.tables, datapaths=core.datapaths,
                                     ports=core.ports, lbs=extra.lbs, config=extra.config))


def named(row: Any) -> Any:
    """A row's typed values with every referenced row replaced by the key northd names
    it by (`sync.row_key`), for assertions that do not depend on UUIDs."""
    from .sync import row_key

    def name(v: Any) -> Any:
        if isinstance(v, IdlRow):
            replica = v.table.replica
            return row_key(v.table.name, v, replica.tables if replica is not None else {})
        if isinstance(v, list):
            return sorted((name(x) for x in v), key=repr)
        if isinstance(v, dict):
            return {k: name(x) for k, x in v.items()}
        return v

    return {c: name(v) for c, v in row.to_dict().items()}


def add_chassis(sb: LocalDb, name: str, ip: str, *, encap: str = "geneve",
                **cols: Any) -> str:
    """A chassis with one encap, as `ovn-sbctl chassis-add` registers it; its UUID."""
    sb.transact([{"op": "insert", "table": "Encap", "uuid-name": "e",
                  "row": {"type": encap, "ip": ip, "chassis_name": name,
                          "options": ["map", [["csum", "true"]]]}},
                 {"op": "insert", "table": "Chassis",
                  "row": {"name": name, "encaps": ["named-uuid", "e"],
                          **sb.json_row("Chassis", cols)}}])
    return str(sb.last_results[1]["uuid"][1])


def _by_name(v: Any) -> Any:
    """A typed value with referenced rows replaced by their names."""
    if isinstance(v, IdlRow):
        t = v.table.name
        if t == "Datapath_Binding":
            return v.external_ids["name"]
        if t == "Port_Binding":
            return v.logical_port
        return v.name  # Chassis, HA_Chassis_Group, Mirror
    if isinstance(v, list):
        return sorted(_by_name(x) for x in v)
    return v


SUMMARY_PB_COLUMNS = (
    "datapath", "tunnel_key", "type", "options", "mac", "port_security", "mirror_rules",
    "nat_addresses", "parent_port", "tag", "external_ids", "requested_chassis",
    "requested_additional_chassis", "ha_chassis_group")


def port_bindings(sb: LocalDb) -> dict[str, dict[str, Any]]:
    """Port_Binding rows by logical_port, non-empty managed columns only, references
    by name."""
    out = {}
    for row in sb.tables["Port_Binding"].rows.values():
        d = {}
        for c in SUMMARY_PB_COLUMNS:
            v = _by_name(row[c])
            if v not in ([], {}, "", None):
                d[c] = v
        out[row.logical_port] = d
    return out


def multicast_groups(sb: LocalDb) -> dict[str, list[Any]]:
    """Multicast_Group rows as "DATAPATH NAME": [tunnel_key, sorted port names]."""
    return {f"{_by_name(r.datapath)} {r.name}": [r.tunnel_key, _by_name(r.ports)]
            for r in sb.tables["Multicast_Group"].rows.values()}


@dataclass(frozen=True)
class Step:
    """One `LocalNorthd` run: its output, the operations committed, and whether the
    loop has more to do (something committed, a cfg to report, a commit lost)."""

    out: RunOutput
    sb_ops: list[dict[str, Any]]
    nb_ops: list[dict[str, Any]]
    again: bool


class SelfCheckFailed(AssertionError):
    """An incremental run wrote other than a recompute from scratch would."""


class LocalNorthd:
    """northd over two in-memory databases, driven as the daemon drives it."""

    def __init__(self, nb: LocalDb, sb: LocalDb, driver: Driver | None = None, *,
                 now_ms: int = 1_000_000, step_ms: int = 1000,
                 self_check: bool = True) -> None:
        self.nb, self.sb = nb, sb
        self.driver = driver if driver is not None else Driver(clock=lambda: 0.0)
        self.driver.self_check = self_check
        self.now_ms = now_ms
        self.step_ms = step_ms
        self.nb_pending: list[Changeset[IdlRow]] = []
        self.sb_pending: list[Changeset[IdlRow]] = []
        self.runs = 0
        self.peers: list[LocalNorthd] = []  # (other northds on the same databases)

    def nb_changed(self, cs: Changeset[IdlRow]) -> None:
        self.nb_pending.append(cs)
        for peer in self.peers:
            peer.nb_pending.append(cs)

    def sb_changed(self, cs: Changeset[IdlRow]) -> None:
        self.sb_pending.append(cs)
        for peer in self.peers:
            peer.sb_pending.append(cs)

    @property
    def pending(self) -> bool:
        return any(self.nb_pending) or any(self.sb_pending)

    def run_once(self, *, recompute: bool = False, lose_sb_commit: bool = False,
                 standby: bool = False) -> Step:
        """One run and its commits (none on `standby`). `lose_sb_commit`: the SB
        transaction fails (if there is one), as the daemon sees a commit that did not
        happen."""
        self.now_ms += self.step_ms
        self.runs += 1
        nb_cs, sb_cs = merge(self.nb_pending), merge(self.sb_pending)
        self.nb_pending, self.sb_pending = [], []
        out = self.driver.run(self.nb.tables, self.sb.tables, nb_cs, sb_cs,
                              recompute=recompute, now_ms=self.now_ms, standby=standby)
        if self.driver.last_differences:
            raise SelfCheckFailed("\n".join(["self-check: the run differs from a recompute",
                                              *self.driver.last_differences]))
        if standby:
            return Step(out, [], [], False)
        sb_txn, nb_txn = self.sb.transaction(), self.nb.transaction()
        self.driver.write(out, sb_txn, nb_txn)
        lost = lose_sb_commit and bool(out.sb_ops)
        sb_ops: list[dict[str, Any]] = []
        if not lost:
            sb_cs, sb_ops = self.sb.commit(sb_txn)
            self.sb_changed(sb_cs)
        nb_cs, nb_ops = self.nb.commit(nb_txn)
        self.nb_changed(nb_cs)
        poked = self.driver.committed(out, sb_ok=not lost, nb_ok=True)
        report = self.nb.transaction()
        if poked and self.driver.report_cfg(self.nb.tables, report, now_ms=self.now_ms):
            report_cs, report_ops = self.nb.commit(report)
            self.nb_changed(report_cs)
            nb_ops = [*nb_ops, *report_ops]
        return Step(out, sb_ops, nb_ops, bool(sb_ops or nb_ops or poked or lost))

    def fresh(self) -> tuple[Driver, RunOutput]:
        """A driver built from scratch on the same replicas (and the same committed
        cfg), and what it would write now: nothing, once the loop settled correctly."""
        return self.driver.fresh(self.nb.tables, self.sb.tables, self.now_ms)

    def stat(self, node: str, stat: str = "recompute") -> int:
        return int(self.driver.show_stats(node, stat))

    def settle(self, limit: int = 8) -> int:
        """Run until a run has nothing more to do; the number of runs made."""
        for i in range(1, limit + 1):
            if not self.run_once().again and not self.pending:
                return i
        raise AssertionError(f"northd did not settle in {limit} runs")
