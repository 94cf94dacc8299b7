"""The `sync_to_sb` node (OVN 24.03's name): the desired state against the replicas,
as the operations of one SB and one NB transaction.

Rules kept here:
- It turns the desired state (`northd`'s and `lflow`'s, with `sync_from_sb`'s and
  `sync_cfg`'s laid over it) into SB and NB operations against the replicas, plus the
  writes to rows northd does not own: aged MAC bindings deleted (`mac_binding_aging`),
  online service monitors of ports not up set offline.
- It reads every SB table and the NB tables northd writes back (`NB_WRITTEN`).
- `run()` plans every table. The change handlers plan only the tables that changed or
  whose overlay changed (a claim plans Port_Binding, not every table), and of a table
  whose replica alone changed, the rows that changed; `northd`'s and `lflow`'s deltas
  add the keys they changed in place. `northd` recomputed (no delta) is not handled.
- One plan per run, whatever the number of inputs that changed: the handlers agree on
  the run's scope from all the inputs' states at once, and the handler of the last
  updated input (the engine calls them in input order) plans it; the others only say
  the data will change. So the stats count a planned scope as a compute, a full plan
  as a recompute.
- Tables planned by key read only those keys' rows, through an index of the replica
  table kept from its changes (`INDEXED`), not by scanning the table.
- Its ops are handed out only in a run that brought it up to date, so a run where
  nothing changed commits nothing.
- Its ops say what the plan covered (`SyncOps.planned_sb`/`planned_nb`: tables whole or
  by key), which is what a standby keeps of the ops it does not write
  (`standby.Unwritten`). What it kept (the `unwritten` leaf) is planned again with the
  run's own scope: in its next runs (a row it would insert may be referenced) and
  when it takes over.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...engine import Change, Group, Handled, Input, Leaf, Node
from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..build.delta import PortsDelta
from ..build.dp_groups import TABLE as DP_GROUP_TABLE
from ..build.global_cfg import CfgHandshake
from ..build.inputs import singleton
from ..build.mac_binding_aging import AgingResult
from ..build.service_monitor import offline_monitors
from ..desired import DesiredDb, DesiredTable, overlay, patch_singleton, set_column
from ..sync import Delete, Op, Update, carry_group_key, changed_keys, plan, row_key
from .lflow import LFLOW_TABLES, LflowData, LflowDelta, LflowNode
from .mac_binding_aging import MacBindingAgingNode
from .northd import NorthdData, NorthdNode
from .sync_cfg import SyncCfgNode
from .sync_from_sb import SbFeedback, SyncFromSbNode, UpDelta
from .tables import TableChanges, TableLeaf, declared, table_inputs

if TYPE_CHECKING:
    from ..standby import Scope, Unwritten

# SB tables planned by key through an index of their rows, and whose rows a reference
# finds there: a row's key is its own (`logical_port`; a flow's match, actions, stage
# and datapath kind; a datapath's NB UUID; a port group's or address set's name; a
# load balancer's NB UUID), so the index follows the table's own changes, each row
# filed under the key it had then. A multicast group's or a datapath group's key names
# datapaths by the bindings' NB UUIDs: those indexes are dropped when a binding's
# external_ids change.
INDEXED = ("Address_Set", "Datapath_Binding", "IP_Multicast", "Load_Balancer",
           "Logical_DP_Group", "Logical_Flow", "Multicast_Group", "Port_Binding",
           "Port_Group")
# INDEXED tables whose sync keys name datapaths (their index goes when one is renamed).
BY_DATAPATH = ("IP_Multicast", "Logical_DP_Group", "Multicast_Group")
# NB tables northd writes back to (columns the CMS leaves to northd).
NB_WRITTEN = ("BFD", "Logical_Router_Port", "Logical_Switch_Port", "NB_Global")


@dataclass
class SyncOps:
    sb_ops: list[Op]
    nb_ops: list[Op]
    nb_cfg: int | None
    # The tables the ops were planned for, each whole (None) or by key; None: all.
    planned_sb: Scope | None = None
    planned_nb: Scope | None = None

    def take(self) -> tuple[list[Op], list[Op]]:
        """The SB and NB operations, handed over to the caller that commits them: the
        node keeps none (a first run's would hold a second copy of the whole SB until
        the next run that plans anything)."""
        sb, nb = self.sb_ops, self.nb_ops
        self.sb_ops, self.nb_ops = [], []
        return sb, nb


class SyncToSbNode(Node[SyncOps, None]):
    def __init__(self, northd: NorthdNode, feedback: SyncFromSbNode, cfg: SyncCfgNode,
                 aging: MacBindingAgingNode, lflow: LflowNode, unwritten: Leaf[Unwritten, Any],
                 nb: Mapping[str, TableLeaf], sb: Mapping[str, TableLeaf]) -> None:
        self.nb_schema, self.sb_schema = frozenset(nb), frozenset(sb)
        self.sb_leaves = {leaf.name: table for table, leaf in sb.items()}
        self.indexed_leaves = {sb[t].name: t for t in INDEXED if t in sb}
        # The replica rows of INDEXED tables by sync key, kept from the leaves' changes;
        # a table's is made when a scoped plan first needs it, and dropped by a
        # recompute or a change without a delta.
        self._indexes: dict[str, dict[Hashable, dict[str, IdlRow]]] = {}
        # Each indexed row's key as it was filed (by UUID), so that a row going or
        # changing leaves its old entry even when what its key was made of (a
        # datapath it named) went in the same change.
        self._filed: dict[str, dict[str, Hashable]] = {}
        # The keys, as filed and as filed again, of the rows of an indexed table that
        # changed in this run: what its plan is scoped to (a row going names a
        # datapath going with it, whose key could not be told from the row any more).
        self._refiled: dict[str, set[Hashable]] = {}
        self.nb_leaves = {nb[t].name: t for t in NB_WRITTEN if t in nb}
        gather = self.on_input
        super().__init__(
            "sync_to_sb", northd=Input(northd, self.on_northd),
            sync_from_sb=Input(feedback, gather), sync_cfg=Input(cfg, gather),
            mac_binding_aging=Input(aging, gather), lflow=Input(lflow, gather),
            unwritten=Input(unwritten, gather),
            nb=Group(table_inputs(nb, NB_WRITTEN, dict.fromkeys(NB_WRITTEN, gather))),
            sb=Group(table_inputs(sb, sorted(sb), dict.fromkeys(sb, gather))))

    # `northd` changed in place (its delta names the keys): planned with the rest of
    # the run's scope; recomputed (no delta): everything is planned again.
    def on_northd(self, change: Change[NorthdData, PortsDelta]) -> Handled:
        if change.delta is None:
            return Handled.UNHANDLED
        return self.on_input(change)

    def on_input(self, change: Change[Any, Any]) -> Handled:
        """The run's scope is planned once, by the handler of the last updated input."""
        if not self.has_data:
            return Handled.UNHANDLED
        table = self.indexed_leaves.get(change.input)
        if table is not None:
            self._index_changes(table, change.delta)
            if table == "Datapath_Binding" and _renames_datapaths(change.delta):
                for keyed in BY_DATAPATH:
                    self._drop(keyed)
        inputs = self.inputs
        last = next(name for name in reversed(tuple(inputs)) if inputs[name].updated)
        if change.input == last:
            self.data = self.plan_scope()
            self._refiled.clear()
        return Handled.HANDLED_UPDATED

    def plan_scope(self) -> SyncOps:
        args = self.run_arguments()
        del args["unwritten"]  # (`scope` reads it)
        sb_scope, nb_scope = self.scope()
        return self._plan(sb_scope, nb_scope, **args)

    def scope(self) -> tuple[set[str], set[str]]:
        """The SB and NB tables to plan in this run. While `northd` is unchanged, a
        table whose desired rows and replica rows are what the last committed plan left
        needs none: only the tables that changed, or whose overlay changed, are planned
        (a claim plans Port_Binding, not every table)."""
        sb = {t for name, t in self.sb_leaves.items() if self.inputs[name].updated}
        nb = {t for name, t in self.nb_leaves.items() if self.inputs[name].updated}
        feedback = self.inputs["sync_from_sb"]
        if feedback.updated:
            if not isinstance(feedback.delta, UpDelta) or feedback.delta.groups:
                sb.add("HA_Chassis_Group")  # (handlers: `up`, and the groups they name)
            nb.add("Logical_Switch_Port")
        if self.inputs["sync_cfg"].updated:
            sb.add("SB_Global")
            nb.add("NB_Global")
        if self.inputs["mac_binding_aging"].updated:
            sb.add("MAC_Binding")
        if self.inputs["lflow"].updated:
            sb.update(LFLOW_TABLES)
        kept = self._kept()
        if kept is not None:
            sb.update(t for t, keys in kept.sb.items() if keys is None)
            nb.update(t for t, keys in kept.nb.items() if keys is None)
        if sb & {"Port_Binding", "Service_Monitor"}:
            sb.add("Service_Monitor")  # offline monitors follow the bindings' `up`
        return sb, nb

    def _kept(self) -> Unwritten | None:
        """What a standby kept unwritten, when this run plans it again."""
        unwritten = self.inputs["unwritten"]
        return unwritten.data if unwritten.updated else None

    def keyed(self, desired: DesiredDb, sb_tables: Mapping[str, ReplicaTable],
              sb_scope: set[str] | None, nb_scope: set[str] | None
              ) -> tuple[dict[str, set[Hashable]], dict[str, set[Hashable]]]:
        """Tables to plan by key, the others in scope whole: an SB table planned only
        because its replica changed, by the keys of the rows that changed (its desired
        rows did not); an NB table by the rows that changed on either side; and the
        keys `northd` changed in place, added to the scope."""
        if sb_scope is None or nb_scope is None:
            return {}, {}
        whole = {"Service_Monitor"}
        lflow = self.inputs["lflow"]
        flow_delta = lflow.delta if lflow.updated and isinstance(lflow.delta, LflowDelta) \
            else None
        flow_rows = flow_delta.rows if flow_delta is not None else None
        flow_groups = flow_delta.groups if flow_delta is not None else None
        feedback = self.inputs["sync_from_sb"]
        up = feedback.delta.lsps if feedback.updated and isinstance(feedback.delta, UpDelta) \
            else None
        for node, tables in (("sync_from_sb", ("HA_Chassis_Group",) if up is None else ()),
                             ("sync_cfg", ("SB_Global",)),
                             ("mac_binding_aging", ("MAC_Binding",)),
                             ("lflow", LFLOW_TABLES if flow_rows is None
                              else () if flow_groups is not None else LFLOW_TABLES[1:])):
            if self.inputs[node].updated:
                whole.update(tables)
        sb: dict[str, set[Hashable]] = {}
        for name, table in sorted(self.sb_leaves.items()):
            leaf = self.inputs[name]
            if leaf.updated and table not in whole:
                keys = self._refiled[table] if table in self._refiled else \
                    changed_keys(table, leaf.delta, sb_tables, desired.tables.get(table))
                if keys is None:
                    whole.add(table)
                else:
                    sb[table] = keys
        if flow_rows is not None and "Logical_Flow" not in whole:
            sb.setdefault("Logical_Flow", set()).update(flow_rows)
        if flow_groups is not None and DP_GROUP_TABLE not in whole:
            sb.setdefault(DP_GROUP_TABLE, set()).update(flow_groups)
        if feedback.updated and isinstance(feedback.delta, UpDelta) \
                and feedback.delta.groups and "HA_Chassis_Group" not in whole:
            sb.setdefault("HA_Chassis_Group", set()).update(feedback.delta.groups)
        northd = self.inputs["northd"]
        delta = northd.delta if northd.updated else None
        kept = self._kept()
        for extra in (delta.sb if isinstance(delta, PortsDelta) else {},
                      kept.sb if kept is not None else {}):
            for table, keys in extra.items():
                if keys is None:
                    sb.pop(table, None)  # (whole: in `sb_scope` from `scope`)
                elif table in sb or table not in sb_scope:
                    sb.setdefault(table, set()).update(keys)
        # NB write-backs are keyed by the UUID of the row they write: a replica change
        # by the rows it names, `up` by the ports whose `up` changed, and northd's keys.
        nb_whole = {"NB_Global"} if self.inputs["sync_cfg"].updated else set()
        if feedback.updated and up is None:
            nb_whole.add("Logical_Switch_Port")
        nb: dict[str, set[Hashable]] = {}
        for name, table in sorted(self.nb_leaves.items()):
            leaf = self.inputs[name]
            if leaf.updated:
                if leaf.delta is None:
                    nb_whole.add(table)
                else:
                    nb.setdefault(table, set()).update(leaf.delta)
        if up is not None:
            nb.setdefault("Logical_Switch_Port", set()).update(up)
        for extra in (delta.nb if isinstance(delta, PortsDelta) else {},
                      kept.nb if kept is not None else {}):
            for table, nb_keys in extra.items():
                if nb_keys is None:
                    nb_whole.add(table)
                else:
                    nb.setdefault(table, set()).update(nb_keys)
        for table in nb_whole:
            nb.pop(table, None)
        if "Port_Binding" in sb or "Port_Binding" in sb_scope:
            sb_scope.add("Service_Monitor")
        sb_scope.update(sb)
        nb_scope.update(nb)
        return sb, nb

    def _index_changes(self, table: str, changes: TableChanges | None) -> None:
        index = self._indexes.get(table)
        if index is None:
            return
        if changes is None:
            self._drop(table)
            return
        filed = self._filed[table]
        refiled = self._refiled.setdefault(table, set())
        for uuid, rc in changes.items():
            key = filed.pop(uuid, None)
            rows = index.get(key) if rc.old is not None else None
            if rows is not None:
                refiled.add(key)
                rows.pop(uuid, None)
                if not rows:
                    del index[key]
            if rc.new is not None:
                if table == DP_GROUP_TABLE and rc.old is not None:
                    carry_group_key(rc.old, rc.new)
                key = filed[uuid] = row_key(table, rc.new, {})
                refiled.add(key)
                index.setdefault(key, {})[uuid] = rc.new

    def _drop(self, table: str) -> None:
        self._indexes.pop(table, None)
        self._filed.pop(table, None)
        self._refiled.pop(table, None)

    def _by_key(self, table: str, replica: ReplicaTable
                ) -> dict[Hashable, dict[str, IdlRow]]:
        index = self._indexes.get(table)
        if index is None:
            index = self._indexes[table] = {}
            filed = self._filed[table] = {}
            for uuid, row in replica.rows.items():
                key = filed[uuid] = row_key(table, row, {})
                index.setdefault(key, {})[uuid] = row
        return index

    def run(self, *, northd: NorthdData, sync_from_sb: SbFeedback,
            sync_cfg: CfgHandshake | None, mac_binding_aging: AgingResult, lflow: LflowData,
            unwritten: Unwritten, nb: Mapping[str, ReplicaTable],
            sb: Mapping[str, ReplicaTable]) -> SyncOps:
        """Every table planned whole (so what a standby kept, `unwritten`, too)."""
        self._indexes.clear()
        self._filed.clear()
        self._refiled.clear()
        return self._plan(None, None, northd=northd, sync_from_sb=sync_from_sb,
                          sync_cfg=sync_cfg, mac_binding_aging=mac_binding_aging,
                          lflow=lflow, nb=nb, sb=sb)

    def _plan(self, sb_scope: set[str] | None, nb_scope: set[str] | None, *,
              northd: NorthdData, sync_from_sb: SbFeedback, sync_cfg: CfgHandshake | None,
              mac_binding_aging: AgingResult, lflow: LflowData,
              nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable]) -> SyncOps:
        """The operations for the tables in scope (None: every table)."""
        feedback, hs, aging = sync_from_sb, sync_cfg, mac_binding_aging
        nb = declared(nb, self.nb_schema, self.name)
        sb = declared(sb, self.sb_schema, self.name)
        desired = DesiredDb({**northd.sb.tables, **lflow.sb.tables})
        sb_keys, nb_keys = self.keyed(desired, sb, sb_scope, nb_scope)

        def want(scope: set[str] | None, table: str) -> bool:
            return scope is None or table in scope

        sb_db = overlay(desired, sb_scope)
        nb_db = overlay(northd.nb, nb_scope)
        if feedback.ha_groups is not None and want(sb_scope, "HA_Chassis_Group"):
            sb_db.tables[feedback.ha_groups.name] = feedback.ha_groups
        if feedback.up and want(nb_scope, "Logical_Switch_Port"):
            up, lsp_keys = feedback.up, nb_keys.get("Logical_Switch_Port")
            set_column(nb_db, "Logical_Switch_Port", "up",
                       {k: [up[k]] for k in (up if lsp_keys is None else lsp_keys) if k in up},
                       lsp_keys)
        _singleton_by_uuid(nb_db, "NB_Global", nb)
        if hs is not None:
            patch_singleton(nb_db, "NB_Global", nb_cfg_timestamp=hs.nb_cfg_timestamp,
                   sb_cfg=hs.sb_cfg, sb_cfg_timestamp=hs.sb_cfg_timestamp,
                   hv_cfg=hs.hv_cfg, hv_cfg_timestamp=hs.hv_cfg_timestamp)
            patch_singleton(sb_db, "SB_Global", nb_cfg=hs.sb_nb_cfg)
        # A full plan (a recompute) matches every row anyway: it makes the indexes of
        # the tables it matches whole as it goes (the first scoped plan after it would
        # otherwise key every row again), kept from then on.
        index = {t: self._by_key(t, sb[t]) for t in INDEXED if t in sb} \
            if sb_scope is not None else {}
        collect: dict[str, dict[Hashable, dict[str, IdlRow]]] = \
            {t: {} for t in INDEXED if t in sb and t in sb_db.tables} if sb_scope is None else {}
        sb_ops = plan(sb_db, sb, sb_keys, index, collect)
        self._indexes.update(collect)
        for table, by_key in collect.items():
            self._filed[table] = {uuid: key for key, rows in by_key.items() for uuid in rows}
        monitors = northd.sb.tables.get("Service_Monitor")
        rows = sb.get("Service_Monitor")
        if monitors is not None and rows is not None and want(sb_scope, "Service_Monitor"):
            for uuid in offline_monitors(monitors, sb):
                row = rows.rows[uuid]
                sb_ops.append(Update("Service_Monitor", (row.ip, row.port, row.protocol,
                                                         row.logical_port), row,
                                     {"status": "offline"}))
        bindings = sb.get("MAC_Binding")
        if bindings is not None and want(sb_scope, "MAC_Binding"):
            sb_ops += [Delete("MAC_Binding", bindings.rows[u]) for u in aging.delete
                       if u in bindings.rows]
        return SyncOps(sb_ops, plan(nb_db, nb, nb_keys), hs.next_cfg if hs is not None
                       else None, _planned(sb_scope, sb_keys), _planned(nb_scope, nb_keys))


def _planned(scope: set[str] | None, keys: Mapping[str, set[Hashable]]) -> Scope | None:
    """The tables a plan covered, each by its keys or whole (None: every table)."""
    return None if scope is None else {t: keys.get(t) for t in scope}


def _renames_datapaths(changes: TableChanges | None) -> bool:
    """Whether a Datapath_Binding's external_ids changed (the keys of the rows that
    name it change with them, those rows not). One that went is named by no row
    that did not change with it (a group's reference is weak; a multicast group's
    row goes with it), and those leave their entries as filed."""
    return changes is None or any(
        rc.old is not None and rc.new is not None and rc.old.external_ids != rc.new.external_ids
        for rc in changes.values())


def _singleton_by_uuid(db: DesiredDb, table: str, tables: Mapping[str, ReplicaTable]) -> None:
    """An NB write-back of a singleton (NB_Global, keyed `()` by its builder) keyed by
    the UUID of the row it writes, as the sync keys NB rows; nothing if there is none."""
    old = db.tables.get(table)
    if old is None or () not in old.rows:
        return
    row = singleton(tables.get(table))
    rows: dict[Hashable, dict[str, Any]] = {} if row is None else {row.uuid: old.rows[()]}
    db.tables[table] = DesiredTable(old.name, old.columns, old.owned, rows, old.fill)
