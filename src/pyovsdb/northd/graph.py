"""northd's engine graph: which node takes which inputs (OVN's inc-proc-northd.c), and
the one call the daemon makes per engine run.

Rules kept here:
- Node names are OVN's where a node corresponds: one leaf per replicated table,
  `NB_<table>` / `SB_<table>` in lower case (`SB_logical_DP_group` as OVN spells it),
  `northd`, `lflow`, `sync_from_sb` (NB `Logical_Switch_Port.up` from SB, 23.09's
  node), `mac_binding_aging`, `sync_to_sb`, `northd_output` (the root). `sync_cfg` is ours:
  the nb_cfg/sb_cfg/hv_cfg handshake, which 23.03 runs outside its engine.
- `northd` (every builder: DesiredDb for SB and for the NB write-backs) recomputes on
  any NB change except two kinds, which cannot move its output: NB_Global changes of
  the handshake columns alone (`sync_cfg` recomputes on them) and LSP `up` written
  back; and on the SB tables builders read (`NORTHD_SB_INPUTS`), with honest handlers
  where a change cannot move its output: its own Datapath_Binding and Port_Binding
  inserts coming back, bindings it deleted going, and chassis claims (`chassis`, `up`,
  `encap`... of a port without QoS queue) are HANDLED_UNCHANGED, as is everything in
  SB_Global and Chassis_Private (read only by the handshake). With `incremental_ports`
  an ordinary VIF added, deleted or updated is applied in place
  (`build.ports_incremental`), its changed keys recorded as the node's `PortsDelta`.
- `sync_from_sb` decides NB `up` (and HA groups' `ref_chassis`) from the bindings,
  incrementally for the bindings that changed, so an `lsp-add` recomputes `northd`
  once (23.03: twice, its own binding and the `up` it writes coming back) and a claim
  not at all.
- Builders get the SB tables `northd` declares as inputs; reading another one is
  recorded (`undeclared_reads`, asserted empty by the tests) and still answered, so a
  missing declaration costs incrementality, never correctness.
- `sync_to_sb` turns the desired state (northd's, with `sync_from_sb` and `sync_cfg`
  laid over it) into SB and NB operations against the replicas, from scratch each time
  one of its inputs changed (a table `northd` changed in place: by its delta's keys),
  plus the writes to rows northd does not own: aged MAC
  bindings deleted, online service monitors of ports not up set offline. Its ops are
  handed out only in a run that recomputed it, so a run where nothing changed commits
  nothing.
- Pure: the replica tables, changesets, wall-clock time and the committed cfg come
  from the caller; the clock given is only for the engine's stats.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..engine import Change, Engine, Handled, Input, Leaf, Node, State
from ..idl.replica import ReplicaTable
from ..idl.row import IdlRow
from ..idl.tracking import changed_columns
from ..idl.txn import Transaction
from ..ovsdb.changeset import Changeset, RowChange
from .build.core import CoreData, build_core, sb_feedback
from .build.extra import ExtraData, build_extra
from .build.global_cfg import CfgHandshake, cfg_handshake, global_config
from .build.inputs import BuildInput
from .build.lsp_up import port_up, switch_ports
from .build.mac_binding_aging import AgingResult, mac_binding_aging
from .build.ports import existing_port_bindings
from .build.ports_incremental import PortsDelta, port_names, switch_ports_changed
from .build.service_monitor import offline_monitors
from .desired import DesiredDb, DesiredTable, Ref, overlay, patch_singleton, set_column
from .lflow_node import LFLOW_TABLES, LflowData, LflowDelta, LflowNode
from .sync import Delete, Op, Update, apply, changed_keys, plan

TableChanges = dict[str, RowChange[IdlRow]]
TableLeaf = Leaf[ReplicaTable, TableChanges]

# SB tables the builders read (the rest they only write, or never look at).
NORTHD_SB_INPUTS = ("SB_Global", "Chassis", "Chassis_Private", "Encap", "Datapath_Binding",
                    "Port_Binding", "IGMP_Group", "Multicast_Group", "MAC_Binding",
                    "Static_MAC_Binding", "FDB", "BFD")
# NB_Global columns only the handshake reads.
CFG_COLUMNS = frozenset(("nb_cfg", "nb_cfg_timestamp", "sb_cfg", "sb_cfg_timestamp",
                         "hv_cfg", "hv_cfg_timestamp"))
# NB Logical_Switch_Port columns northd writes back and no builder reads (`sync_from_sb`
# decides them): a builder that starts reading one must take it out of here.
LSP_WRITTEN_ONLY = frozenset(("up",))
# SB Port_Binding columns the builders read whole; of `options` they read a few keys,
# and `chassis` only to own the QoS queue of a port with a queue or QoS options.
PB_READ = frozenset(("logical_port", "datapath", "tunnel_key", "type", "parent_port",
                     "requested_additional_chassis"))
PB_OPTIONS_READ = ("qdisc_queue_id", "additional-chassis-activated", "ipv6_ra_pd_list")
QOS_OPTIONS = ("qos_max_rate", "qos_min_rate", "qos_burst")
DP_READ = frozenset(("external_ids", "tunnel_key"))
_SPELLING = {"Logical_DP_Group": "logical_DP_group"}


def leaf_name(db: str, table: str) -> str:
    """OVN's name of the leaf node of `table` in database `db` ("NB" or "SB")."""
    return f"{db}_{_SPELLING.get(table, table.lower())}"


@dataclass
class RunContext:
    """What one run reads besides the tables' changes (set by `NorthdGraph.run`)."""

    nb: Mapping[str, ReplicaTable] = field(default_factory=dict)
    sb: Mapping[str, ReplicaTable] = field(default_factory=dict)
    now_ms: int = 0
    committed_sb_cfg: int = 0


class _Recorded(Mapping[str, ReplicaTable]):
    """The SB tables as builders see them: declared ones, and a record of the rest."""

    def __init__(self, tables: Mapping[str, ReplicaTable], declared: frozenset[str],
                 misses: set[str]) -> None:
        self._tables = tables
        self._declared = declared
        self._misses = misses

    def __getitem__(self, name: str) -> ReplicaTable:
        if name not in self._declared:
            self._misses.add(name)
        return self._tables[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables)

    def __len__(self) -> int:
        return len(self._tables)


@dataclass
class NorthdData:
    sb: DesiredDb
    nb: DesiredDb
    core: CoreData
    extra: ExtraData


@dataclass
class SyncOps:
    sb_ops: list[Op]
    nb_ops: list[Op]
    nb_cfg: int | None


def _only(change: Change[ReplicaTable, TableChanges], ok: Callable[[RowChange[IdlRow]], bool]
          ) -> Handled:
    delta = change.delta
    if delta is None:
        return Handled.UNHANDLED
    for rc in delta.values():
        if not ok(rc):
            return Handled.UNHANDLED
    return Handled.HANDLED_UNCHANGED


class NorthdNode(Node[NorthdData, PortsDelta]):
    """Every builder of parts N1 and N2 into desired SB and NB state."""

    def __init__(self, ctx: RunContext, nb: Mapping[str, TableLeaf],
                 sb: Mapping[str, TableLeaf], *, incremental_ports: bool = True) -> None:
        self.ctx = ctx
        self.undeclared_reads: set[str] = set()
        self.incremental_ports = incremental_ports
        inputs: dict[str, Input[Any, Any]] = {}
        nb_handlers: dict[str, Callable[[Change[ReplicaTable, TableChanges]], Handled]] = {
            "NB_Global": self.on_nb_global, "Logical_Switch_Port": self.on_nb_lsp}
        if incremental_ports:
            nb_handlers["Logical_Switch"] = self.on_nb_ls
        self.ls_leaf = nb["Logical_Switch"].name if "Logical_Switch" in nb else None
        self._names: Counter[str] | None = None  # NB port names, since the last recompute
        for table, leaf in nb.items():
            inputs[leaf.name] = Input(leaf, nb_handlers.get(table))
        handlers = {"SB_Global": self.on_cfg_only, "Chassis_Private": self.on_cfg_only,
                    "Port_Binding": self.on_port_binding,
                    "Datapath_Binding": self.on_datapath_binding,
                    "Multicast_Group": self.on_multicast_group,
                    "MAC_Binding": self.on_mac_binding, "FDB": self.on_fdb}
        self.sb_declared = frozenset(t for t in NORTHD_SB_INPUTS if t in sb)
        for table in sorted(self.sb_declared):
            inputs[sb[table].name] = Input(sb[table], handlers.get(table))
        super().__init__("northd", **inputs)

    def new_delta(self) -> PortsDelta:
        return PortsDelta()

    def merge_deltas(self, earlier: PortsDelta, later: PortsDelta) -> PortsDelta | None:
        return None  # a recompute changed everything

    def run(self, **inputs: Any) -> NorthdData:
        ctx = self.ctx
        self._names = None
        inp = BuildInput(nb=ctx.nb, sb=_Recorded(ctx.sb, self.sb_declared,
                                                 self.undeclared_reads))
        sb, nb = DesiredDb(), DesiredDb()
        # The MAC prefix IPAM uses where NB has none: the one the globals write back.
        prefix = global_config(inp.nb, inp.sb).mac_prefix
        core = build_core(inp, sb, nb, mac_prefix=prefix, from_sb=False)
        extra = build_extra(inp, core, sb, nb, now_ms=ctx.now_ms,
                            committed_sb_cfg=ctx.committed_sb_cfg)
        return NorthdData(sb, nb, core, extra)

    # NB_Global: the handshake columns alone are `sync_cfg`'s (it recomputes on them).
    def on_nb_global(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        return _only(change, lambda rc: rc.old is not None and rc.new is not None
                     and set(changed_columns(rc)) <= CFG_COLUMNS)

    # A switch's `ports` alone: the ports it gains and loses are inserted and deleted
    # in the same changes, which `on_nb_lsp` handles (it reads this input's delta and
    # gives up on anything else, a port moved between switches for one).
    def on_nb_ls(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        lsp = self.inputs.get(leaf_name("NB", "Logical_Switch_Port"))
        if lsp is None or not lsp.updated:
            return Handled.UNHANDLED
        return _only(change, lambda rc: rc.old is not None and rc.new is not None
                     and set(changed_columns(rc)) <= {"ports"})

    # LSP.up written back by `sync_from_sb` (northd's own write coming back) moves
    # nothing; ordinary VIFs added, deleted or updated are applied in place
    # (`build.ports_incremental`), anything else recomputes.
    def on_nb_lsp(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        delta = change.delta
        if not self.incremental_ports:
            return _only(change, lambda rc: rc.old is not None and rc.new is not None
                         and set(changed_columns(rc)) <= LSP_WRITTEN_ONLY)
        if delta is None or not self.has_data:
            return Handled.UNHANDLED
        names = self._names
        if names is None:
            names = self._names = port_names(self.ctx.nb)
        else:
            for rc in delta.values():
                if rc.old is not None:
                    names[rc.old.value("name")] -= 1
                if rc.new is not None:
                    names[rc.new.value("name")] += 1
        ls = self.inputs.get(self.ls_leaf) if self.ls_leaf is not None else None
        ls_changes = ls.delta if ls is not None and ls.updated else None
        data = self.data
        core = data.core
        result = switch_ports_changed(
            self.ctx.nb, self.ctx.sb, core.datapaths, core.ports, names,
            core.dynamic_addresses, data.sb, data.nb, delta, ls_changes or {},
            ignored=LSP_WRITTEN_ONLY)
        if result is None:
            self._names = None  # (the recompute starts over)
            return Handled.UNHANDLED
        if not result.sb and not result.nb:
            return Handled.HANDLED_UNCHANGED
        self.track().merge(result)
        return Handled.HANDLED_UPDATED

    # SB_Global and Chassis_Private are read by the handshake only: `sync_cfg` takes
    # their changes, and `sync_to_sb` re-plans SB_Global against them.
    def on_cfg_only(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        return Handled.HANDLED_UNCHANGED

    # Builders read SB Multicast_Group (the kept keys of IGMP groups) only while SB
    # has IGMP groups, whose changes recompute.
    def on_multicast_group(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        igmp = self.ctx.sb.get("IGMP_Group")
        return Handled.UNHANDLED if igmp is not None and igmp.rows \
            else Handled.HANDLED_UNCHANGED

    # Builders read SB MAC_Binding (to delete the bindings of gone ports) only while an
    # existing Port_Binding goes; ovn-controller's learning otherwise moves nothing.
    def on_mac_binding(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        if not self.has_data:
            return Handled.UNHANDLED
        ports = self.data.core.ports
        for name, pb in existing_port_bindings(self.ctx.sb).items():
            if name in ports.retyped:
                continue
            port = ports.ports.get(name)
            # A port whose binding is its own insert come back (sb None) keeps it.
            if port is None or (port.sb is not None and port.sb.uuid != pb.uuid):
                return Handled.UNHANDLED
        return Handled.HANDLED_UNCHANGED

    # FDB entries are read to delete those of no datapath or port: an entry learned
    # for a live port, or one going, moves nothing.
    def on_fdb(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        if not self.has_data:
            return Handled.UNHANDLED
        core = self.data.core
        keys: dict[int, set[int]] = {dp.tunnel_key: set() for dp in core.datapaths.all()}
        for port in core.ports.ports.values():
            keys[port.dp.tunnel_key].add(port.tunnel_key)
        return _only(change, lambda rc: rc.new is None
                     or rc.new.port_key in keys.get(rc.new.dp_key, ()))

    def on_port_binding(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        """A binding northd wants, as it wants it (its own insert coming back), one it
        no longer wants going, or a change builders do not read (a claim: `chassis`,
        `up`, `encap`)."""
        if not self.has_data:
            return Handled.UNHANDLED
        desired = self.data.sb.tables.get("Port_Binding")
        if desired is None:
            return Handled.UNHANDLED
        table = change.data
        ports = getattr(self.data.core, "ports", None)

        def qos(name: str) -> bool:
            port = ports.ports.get(name) if ports is not None else None
            lsp = getattr(port, "nb", None) if port is not None else None
            options = getattr(lsp, "options", None) if lsp is not None else None
            return isinstance(options, dict) and any(k in options for k in QOS_OPTIONS)

        def ok(rc: RowChange[IdlRow]) -> bool:
            old, new = _rows(rc)
            if old is not None and new is not None:
                cols = set(changed_columns(rc))
                if cols & PB_READ:
                    return False
                if "options" in cols and any(old.options.get(k) != new.options.get(k)
                                             for k in PB_OPTIONS_READ):
                    return False
                return "chassis" not in cols or not (
                    "qdisc_queue_id" in old.options or "qdisc_queue_id" in new.options
                    or qos(new.logical_port))
            if new is None:
                assert old is not None
                return old.logical_port not in desired.rows
            want = desired.rows.get(new.logical_port)
            if want is None or not _same_binding(want, new):
                return False
            return names()[new.logical_port] == 1

        counted: list[Counter[str]] = []

        def names() -> Counter[str]:
            """Bindings per logical_port, counted once per call of the handler."""
            if not counted:
                counted.append(Counter(r.logical_port for r in table.rows.values()))
            return counted[0]

        return _only(change, ok)

    def on_datapath_binding(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        if not self.has_data:
            return Handled.UNHANDLED
        desired = self.data.sb.tables.get("Datapath_Binding")
        if desired is None:
            return Handled.UNHANDLED

        def ok(rc: RowChange[IdlRow]) -> bool:
            old, new = _rows(rc)
            if old is not None and new is not None:
                return not (set(changed_columns(rc)) & DP_READ)
            row = new if new is not None else old
            assert row is not None
            key = _dp_key(row)
            if new is None:
                return key is None or key not in desired.rows
            want = desired.rows.get(key) if key is not None else None
            return want is not None and want.get("tunnel_key") == row.tunnel_key

        return _only(change, ok)


def _rows(rc: RowChange[IdlRow]) -> tuple[IdlRow | None, IdlRow | None]:
    return rc.old, rc.new


def _single(value: Any) -> Any:
    """An optional value as the IDL reads it (None or the value) from a desired one
    (a list of at most one, or the value)."""
    if isinstance(value, list | tuple):
        return value[0] if value else None
    return value


def _same_binding(want: Mapping[str, Any], row: IdlRow) -> bool:
    """Whether an inserted Port_Binding carries what the builders read as desired."""
    options = want.get("options") or {}
    parent = _single(want.get("parent_port")) or None
    return (want.get("tunnel_key") == row.tunnel_key
            and (want.get("type") or "") == row.type
            and parent == row.parent_port
            and not row.requested_additional_chassis
            and all(options.get(k) == row.options.get(k) for k in PB_OPTIONS_READ)
            and _refers(want.get("datapath"), row.datapath))


def _dp_key(row: IdlRow) -> str | None:
    ids = row.external_ids
    key = ids.get("logical-switch") or ids.get("logical-router")
    return str(key) if key else None


def _refers(ref: Any, value: Any) -> bool:
    """Whether the SB reference `value` is the Datapath_Binding desired as `ref`."""
    if not isinstance(ref, Ref) or not isinstance(value, IdlRow):
        return False
    return _dp_key(value) == ref.key


@dataclass
class SbFeedback:
    """What ovn-controller's writes decide: NB `up` by LSP UUID, and the HA chassis
    groups with their `ref_chassis` (None: no such table)."""

    up: dict[str, bool]
    ha_groups: DesiredTable | None
    lsps: dict[str, IdlRow]  # switch ports by name, as of the last recompute


class SyncFromSbNode(Node[SbFeedback, None]):
    """NB `Logical_Switch_Port.up` and HA_Chassis_Group `ref_chassis` from the SB
    bindings (23.09's `sync_from_sb`): a claim or an `up` change updates the ports it
    names, without `northd`."""

    def __init__(self, ctx: RunContext, northd: NorthdNode,
                 sb: Mapping[str, TableLeaf]) -> None:
        self.ctx = ctx
        inputs: dict[str, Input[Any, Any]] = {"northd": Input(northd)}
        if "Port_Binding" in sb:
            inputs[sb["Port_Binding"].name] = Input(sb["Port_Binding"],
                                                    self.on_port_binding)
        if "Chassis" in sb:
            inputs[sb["Chassis"].name] = Input(sb["Chassis"])
        super().__init__("sync_from_sb", **inputs)

    def run(self, **inputs: Any) -> SbFeedback:
        northd: NorthdData = inputs["northd"]
        groups = northd.sb.tables.get("HA_Chassis_Group")
        sb = DesiredDb({} if groups is None else {groups.name: groups})
        nb = DesiredDb()
        sb_feedback(BuildInput(nb=self.ctx.nb, sb=self.ctx.sb), northd.core, sb, nb)
        lsp = nb.tables.get("Logical_Switch_Port")
        up = {} if lsp is None else {k: bool(_single(v["up"])) for k, v in lsp.rows.items()
                                     if isinstance(k, str)}
        return SbFeedback(up, sb.tables.get("HA_Chassis_Group"),
                          switch_ports(northd.core.ports))

    def on_port_binding(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        if not self.has_data or change.delta is None:
            return Handled.UNHANDLED
        data = self.data
        groups = data.ha_groups
        if groups is not None and any(len(r.get("ha_chassis") or ()) > 1
                                      for r in groups.rows.values()):
            return Handled.UNHANDLED  # ref_chassis follows every claim: recompute it
        changed = False
        for rc in change.delta.values():
            old, new = _rows(rc)
            row = new if new is not None else old
            assert row is not None
            lsp = data.lsps.get(row.logical_port)
            if lsp is None:
                continue
            if new is None:
                changed |= data.up.pop(lsp.uuid, None) is not None
                continue
            up = port_up(lsp, new)
            if data.up.get(lsp.uuid) != up:
                data.up[lsp.uuid] = up
                changed = True
        return Handled.HANDLED_UPDATED if changed else Handled.HANDLED_UNCHANGED


class SyncCfgNode(Node[CfgHandshake | None, None]):
    """The nb_cfg -> SB nb_cfg -> NB sb_cfg / hv_cfg handshake (update_sequence_numbers)."""

    def __init__(self, ctx: RunContext, cfg: Leaf[int, int], nb: Mapping[str, TableLeaf],
                 sb: Mapping[str, TableLeaf]) -> None:
        self.ctx = ctx
        inputs: dict[str, Input[Any, Any]] = {"cfg": Input(cfg)}
        for leaf in (nb.get("NB_Global"), sb.get("SB_Global"), sb.get("Chassis_Private"),
                     sb.get("Chassis")):
            if leaf is not None:
                inputs[leaf.name] = Input(leaf)
        super().__init__("sync_cfg", **inputs)

    def run(self, **inputs: Any) -> CfgHandshake | None:
        ctx = self.ctx
        nb_global = _first(ctx.nb.get("NB_Global"))
        sb_global = _first(ctx.sb.get("SB_Global"))
        cp = ctx.sb.get("Chassis_Private")
        return cfg_handshake(nb_global, sb_global, [] if cp is None else cp.rows.values(),
                             committed_sb_cfg=ctx.committed_sb_cfg, now_ms=ctx.now_ms)


def _first(table: ReplicaTable | None) -> IdlRow | None:
    if table is None or not table.rows:
        return None
    return min(table.rows.values(), key=lambda r: r.uuid)


class MacBindingAgingNode(Node[AgingResult, None]):
    """MAC_Binding rows past their router's age threshold (mac-binding-aging.c), gated
    on every local chassis stamping its bindings; the waker leaf fires at the next
    expiry the last pass found."""

    def __init__(self, ctx: RunContext, northd: NorthdNode, waker: Leaf[int, int],
                 nb: Mapping[str, TableLeaf], sb: Mapping[str, TableLeaf]) -> None:
        self.ctx = ctx
        inputs: dict[str, Input[Any, Any]] = {"northd": Input(northd),
                                              "mac_binding_aging_waker": Input(waker)}
        for leaf in (nb.get("NB_Global"), sb.get("MAC_Binding"), sb.get("Datapath_Binding")):
            if leaf is not None:
                inputs[leaf.name] = Input(leaf)
        super().__init__("mac_binding_aging", **inputs)

    def run(self, **inputs: Any) -> AgingResult:
        northd: NorthdData = inputs["northd"]
        if not northd.extra.config.features.mac_binding_timestamp:
            return AgingResult((), None)
        return mac_binding_aging(northd.core.datapaths, self.ctx.nb, self.ctx.sb,
                                 now_ms=self.ctx.now_ms)


class SyncToSbNode(Node[SyncOps, None]):
    """Desired state against the replicas: the operations of one SB and one NB txn."""

    def __init__(self, ctx: RunContext, northd: NorthdNode, feedback: SyncFromSbNode,
                 cfg: SyncCfgNode, aging: MacBindingAgingNode, lflow: LflowNode,
                 sb: Mapping[str, TableLeaf], nb: Mapping[str, TableLeaf]) -> None:
        self.ctx = ctx
        inputs: dict[str, Input[Any, Any]] = {
            "northd": Input(northd), "sync_from_sb": Input(feedback),
            "sync_cfg": Input(cfg), "mac_binding_aging": Input(aging),
            "lflow": Input(lflow)}
        self.sb_leaves = {leaf.name: table for table, leaf in sb.items()}
        self.nb_leaves = {nb[t].name: t for t in ("NB_Global", "Logical_Switch_Port")
                          if t in nb}
        for leaf in sb.values():
            inputs[leaf.name] = Input(leaf)
        for name, table in self.nb_leaves.items():
            inputs[name] = Input(nb[table])
        super().__init__("sync_to_sb", **inputs)

    def scope(self) -> tuple[set[str] | None, set[str] | None]:
        """The SB and NB tables to plan in this run (None: all of them). While
        `northd` is unchanged, a table whose desired rows and replica rows are what the
        last committed plan left needs none: only the tables that changed, or whose
        overlay changed, are planned (a claim plans Port_Binding, not every table)."""
        northd = self.inputs["northd"]
        if not self.has_data or (northd.updated and northd.delta is None):
            return None, None
        sb = {t for name, t in self.sb_leaves.items() if self.inputs[name].updated}
        nb = {t for name, t in self.nb_leaves.items() if self.inputs[name].updated}
        if self.inputs["sync_from_sb"].updated:
            sb.add("HA_Chassis_Group")
            nb.add("Logical_Switch_Port")
        if self.inputs["sync_cfg"].updated:
            sb.add("SB_Global")
            nb.add("NB_Global")
        if self.inputs["mac_binding_aging"].updated:
            sb.add("MAC_Binding")
        if self.inputs["lflow"].updated:
            sb.update(LFLOW_TABLES)
        if sb & {"Port_Binding", "Service_Monitor"}:
            sb.add("Service_Monitor")  # offline monitors follow the bindings' `up`
        return sb, nb

    def keyed(self, desired: DesiredDb, sb_scope: set[str] | None, nb_scope: set[str] | None
              ) -> tuple[dict[str, set[Hashable]], dict[str, set[Hashable]]]:
        """Tables to plan by key, the others in scope whole: an SB table planned only
        because its replica changed, by the keys of the rows that changed (its desired
        rows did not); and the keys `northd` changed in place, added to the scope."""
        if sb_scope is None or nb_scope is None:
            return {}, {}
        whole = {"Service_Monitor"}
        lflow = self.inputs["lflow"]
        flow_rows = lflow.delta.rows if lflow.updated and isinstance(lflow.delta, LflowDelta) \
            else None
        for node, tables in (("sync_from_sb", ("HA_Chassis_Group",)),
                             ("sync_cfg", ("SB_Global",)),
                             ("mac_binding_aging", ("MAC_Binding",)),
                             ("lflow", LFLOW_TABLES if flow_rows is None else LFLOW_TABLES[1:])):
            if self.inputs[node].updated:
                whole.update(tables)
        sb: dict[str, set[Hashable]] = {}
        for name, table in sorted(self.sb_leaves.items()):
            leaf = self.inputs[name]
            if leaf.updated and table not in whole:
                keys = changed_keys(table, leaf.delta, self.ctx.sb, desired.tables.get(table))
                if keys is None:
                    whole.add(table)
                else:
                    sb[table] = keys
        if flow_rows is not None and "Logical_Flow" not in whole:
            sb.setdefault("Logical_Flow", set()).update(flow_rows)
        nb: dict[str, set[Hashable]] = {}
        northd = self.inputs["northd"]
        delta = northd.delta if northd.updated else None
        if isinstance(delta, PortsDelta):
            for table, keys in delta.sb.items():
                if table in sb or table not in sb_scope:
                    sb.setdefault(table, set()).update(keys)
            nb = {t: set(k) for t, k in delta.nb.items() if t not in nb_scope}
        if "Port_Binding" in sb or "Port_Binding" in sb_scope:
            sb_scope.add("Service_Monitor")
        sb_scope.update(sb)
        nb_scope.update(nb)
        return sb, nb

    def run(self, **inputs: Any) -> SyncOps:
        northd: NorthdData = inputs["northd"]
        feedback: SbFeedback = inputs["sync_from_sb"]
        hs: CfgHandshake | None = inputs["sync_cfg"]
        aging: AgingResult = inputs["mac_binding_aging"]
        lflow: LflowData = inputs["lflow"]
        desired = DesiredDb({**northd.sb.tables, **lflow.sb.tables})
        sb_scope, nb_scope = self.scope()
        sb_keys, nb_keys = self.keyed(desired, sb_scope, nb_scope)

        def want(scope: set[str] | None, table: str) -> bool:
            return scope is None or table in scope

        sb_db = overlay(desired, sb_scope)
        nb_db = overlay(northd.nb, nb_scope)
        if feedback.ha_groups is not None and want(sb_scope, "HA_Chassis_Group"):
            sb_db.tables[feedback.ha_groups.name] = feedback.ha_groups
        if feedback.up and want(nb_scope, "Logical_Switch_Port"):
            set_column(nb_db, "Logical_Switch_Port", "up",
                        {k: [v] for k, v in feedback.up.items()})
        _singleton_by_uuid(nb_db, "NB_Global", self.ctx.nb)
        if hs is not None:
            patch_singleton(nb_db, "NB_Global", nb_cfg_timestamp=hs.nb_cfg_timestamp,
                   sb_cfg=hs.sb_cfg, sb_cfg_timestamp=hs.sb_cfg_timestamp,
                   hv_cfg=hs.hv_cfg, hv_cfg_timestamp=hs.hv_cfg_timestamp)
            patch_singleton(sb_db, "SB_Global", nb_cfg=hs.sb_nb_cfg)
        sb_ops = plan(sb_db, self.ctx.sb, sb_keys)
        monitors = northd.sb.tables.get("Service_Monitor")
        rows = self.ctx.sb.get("Service_Monitor")
        if monitors is not None and rows is not None and want(sb_scope, "Service_Monitor"):
            for uuid in offline_monitors(monitors, self.ctx.sb):
                row = rows.rows[uuid]
                sb_ops.append(Update("Service_Monitor", (row.ip, row.port, row.protocol,
                                                         row.logical_port), row,
                                     {"status": "offline"}))
        bindings = self.ctx.sb.get("MAC_Binding")
        if bindings is not None and want(sb_scope, "MAC_Binding"):
            sb_ops += [Delete("MAC_Binding", bindings.rows[u]) for u in aging.delete
                       if u in bindings.rows]
        return SyncOps(sb_ops, plan(nb_db, self.ctx.nb, nb_keys),
                       hs.next_cfg if hs is not None else None)


def _singleton_by_uuid(db: DesiredDb, table: str, tables: Mapping[str, ReplicaTable]) -> None:
    """An NB write-back of a singleton (NB_Global, keyed `()` by its builder) keyed by
    the UUID of the row it writes, as the sync keys NB rows; nothing if there is none."""
    old = db.tables.get(table)
    if old is None or () not in old.rows:
        return
    row = _first(tables.get(table))
    rows: dict[Hashable, dict[str, Any]] = {} if row is None else {row.uuid: old.rows[()]}
    db.tables[table] = DesiredTable(old.name, old.columns, old.owned, rows, old.fill)


class NorthdOutput(Node[SyncOps, None]):
    def __init__(self, sync: SyncToSbNode) -> None:
        super().__init__("northd_output", sync_to_sb=Input(sync))

    def run(self, *, sync_to_sb: SyncOps) -> SyncOps:
        return sync_to_sb


@dataclass(frozen=True)
class RunOutput:
    """What the daemon commits after one run."""

    sb_ops: list[Op]
    nb_ops: list[Op]
    nb_cfg: int | None
    canceled: bool
    updated: bool
    wake_at_ms: int | None = None


class NorthdGraph:
    """The engine over northd's nodes, built on the first run from the tables the
    replicas have (and again if that set changes). `incremental_ports` is off by default
    while tests elsewhere still count an lsp-add's `northd` recompute."""

    def __init__(self, *, clock: Callable[[], float] | None = None,
                 log: Callable[[str], None] | None = None,
                 debug: Callable[[str], None] | None = None,
                 incremental_ports: bool = True) -> None:
        self.incremental_ports = incremental_ports
        self._clock = clock
        self._log = log
        self._debug = debug
        self.ctx = RunContext()
        self.engine: Engine | None = None
        self._shape: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
        self._nb: dict[str, TableLeaf] = {}
        self._sb: dict[str, TableLeaf] = {}
        self._cfg: Leaf[int, int] | None = None
        self._waker: Leaf[int, int] | None = None
        self._aging: MacBindingAgingNode | None = None
        self._aging_wake_at: int | None = None
        self._northd: NorthdNode | None = None
        self._log_timeout = 500
        self._pending_recompute = False

    # -- building ----------------------------------------------------------------------

    def _build(self, nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable]) -> None:
        self._nb = {t: Leaf(leaf_name("NB", t), nb[t]) for t in sorted(nb)}
        self._sb = {t: Leaf(leaf_name("SB", t), sb[t]) for t in sorted(sb)}
        self._cfg = Leaf("sync_cfg_committed", 0, is_change=lambda c: True)
        self._waker = Leaf("mac_binding_aging_waker", 0, is_change=lambda c: True)
        northd = self._northd = NorthdNode(self.ctx, self._nb, self._sb,
                                           incremental_ports=self.incremental_ports)
        cfg = SyncCfgNode(self.ctx, self._cfg, self._nb, self._sb)
        aging = self._aging = MacBindingAgingNode(self.ctx, northd, self._waker, self._nb,
                                                  self._sb)
        feedback = SyncFromSbNode(self.ctx, northd, self._sb)
        lflow = LflowNode(self.ctx, northd, self._sb, feedback)
        sync = SyncToSbNode(self.ctx, northd, feedback, cfg, aging, lflow, self._sb, self._nb)
        old_stats = self.engine.stats if self.engine is not None else None
        self.engine = Engine(NorthdOutput(sync), clock=self._clock, log=self._log,
                             compute_log_timeout_ms=self._log_timeout, debug=self._debug)
        if old_stats is not None:
            for name, st in old_stats.items():
                if name in self.engine.stats:
                    self.engine.stats[name].recompute = st.recompute
                    self.engine.stats[name].compute = st.compute
                    self.engine.stats[name].cancel = st.cancel
        self._shape = (tuple(sorted(nb)), tuple(sorted(sb)))

    def prepare(self, nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable]) -> None:
        """Build the graph for these tables unless it is built for them: its nodes and
        their (zero) stats exist before the first run, as in ovn-northd."""
        if self.engine is None or self._shape != (tuple(sorted(nb)), tuple(sorted(sb))):
            self._build(nb, sb)

    @property
    def undeclared_reads(self) -> set[str]:
        return self._northd.undeclared_reads if self._northd is not None else set()

    # -- running -----------------------------------------------------------------------

    def run(self, nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable],
            nb_changes: Changeset[IdlRow], sb_changes: Changeset[IdlRow], *,
            recompute: bool, now_ms: int, sb_cfg: int | None) -> RunOutput:
        self.prepare(nb, sb)
        engine = self.engine
        assert engine is not None and self._cfg is not None
        ctx = self.ctx
        ctx.nb, ctx.sb, ctx.now_ms = nb, sb, now_ms
        changes: dict[str, object] = {}
        for tables, leaves, cs in ((nb, self._nb, nb_changes), (sb, self._sb, sb_changes)):
            for t, leaf in leaves.items():
                leaf.set_data(tables[t])
                ch = cs.tables.get(t)
                if ch:
                    changes[leaf.name] = ch
        committed = sb_cfg or 0
        if committed != ctx.committed_sb_cfg:
            ctx.committed_sb_cfg = committed
            self._cfg.set_data(committed)
            changes[self._cfg.name] = committed
        assert self._waker is not None and self._aging is not None
        if self._aging_wake_at is not None and now_ms >= self._aging_wake_at:
            self._aging_wake_at = None
            self._waker.set_data(now_ms)
            changes[self._waker.name] = now_ms
        if recompute or self._pending_recompute:
            engine.force_recompute()
            self._pending_recompute = False
        result = engine.run(changes)
        if self._aging.state is State.UPDATED:
            wake = self._aging.data.wake_in_ms
            self._aging_wake_at = None if wake is None else now_ms + wake
        if result.canceled or engine.state("sync_to_sb") is not State.UPDATED:
            return RunOutput([], [], None, result.canceled, result.updated,
                             self._aging_wake_at)
        ops: SyncOps = engine.node_data("sync_to_sb")
        return RunOutput(ops.sb_ops, ops.nb_ops, ops.nb_cfg, False, result.updated,
                         self._aging_wake_at)

    def force_recompute(self) -> None:
        self._pending_recompute = True

    # -- writing -----------------------------------------------------------------------

    def apply_sb(self, out: RunOutput, txn: Transaction) -> None:
        apply(out.sb_ops, txn)

    def apply_nb(self, out: RunOutput, txn: Transaction) -> None:
        apply(out.nb_ops, txn)

    # -- control commands --------------------------------------------------------------

    def show_stats(self, node: str | None = None, stat: str | None = None) -> str:
        return self.engine.show_stats(node, stat) if self.engine is not None else ""

    def clear_stats(self) -> None:
        if self.engine is not None:
            self.engine.clear_stats()

    def set_log_timeout(self, ms: int) -> None:
        self._log_timeout = ms
        if self.engine is not None:
            self.engine.compute_log_timeout_ms = ms

    def dump_dot(self) -> str:
        return self.engine.dump_dot() if self.engine is not None else ""
