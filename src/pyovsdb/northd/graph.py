"""northd's engine graph: which node takes which inputs (OVN's inc-proc-northd.c).

Rules kept here:
- This module only wires: it makes the leaves and the nodes, in dependency order, and
  the engine over them. What a node reads, and which of its inputs have handlers, is
  declared in the node's own module under `nodes/`; `describe()` prints the whole
  graph (a golden file in the tests keeps it from changing unnoticed).
- The replicas get the indexes the handlers read (`PB_BY_NAME`, `DP_BY_TUNNEL_KEY`,
  `CHASSIS_BY_NAME`, `CHASSIS_BY_HOST`, `NB_INDEXES`, `LSP_INDEXES`), kept by the
  replica.
- The leaves: one per replicated table (`nodes.tables.leaf_name`), `now` (the wall
  clock of the run, whose change is never reported: time moving recomputes nothing),
  `sync_cfg_committed` (the nb_cfg of the last committed SB transaction) and
  `mac_binding_aging_waker` (fired when the next MAC binding expires) and `unwritten`
  (what a hot standby's plans wanted written, planned again: `standby`).
- Node names are OVN's where a node corresponds: `northd`, `lflow`, `sync_from_sb`
  (23.09's), `mac_binding_aging`, `sync_to_sb`, `northd_output` (the root).
  `sync_cfg` is ours: the nb_cfg/sb_cfg/hv_cfg handshake, which 23.03 runs outside its
  engine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..engine import Engine, Leaf
from ..idl.replica import ReplicaTable
from .build.core import DP_BY_TUNNEL_KEY
from .build.igmp_incremental import MC_BY_DATAPATH
from .build.ports import PB_BY_NAME
from .build.ports_incremental import NB_INDEXES
from .build.ports_router import CHASSIS_BY_HOST, CHASSIS_BY_NAME
from .nodes.lflow import LSP_INDEXES, LflowNode
from .nodes.mac_binding_aging import MacBindingAgingNode
from .nodes.northd import NorthdNode
from .nodes.output import NorthdOutputNode
from .nodes.sync_cfg import SyncCfgNode
from .nodes.sync_from_sb import SyncFromSbNode
from .nodes.sync_to_sb import SyncToSbNode
from .nodes.tables import TableLeaf, leaf_name
from .standby import Unwritten


@dataclass(frozen=True)
class Wired:
    """The engine and the handles the driver feeds."""

    engine: Engine
    nb: dict[str, TableLeaf]
    sb: dict[str, TableLeaf]
    now: Leaf[int, int]
    cfg: Leaf[int, int]
    waker: Leaf[int, int]
    aging: MacBindingAgingNode
    unwritten: Leaf[Unwritten, Unwritten]


def wire(nb_tables: Mapping[str, ReplicaTable], sb_tables: Mapping[str, ReplicaTable], *,
         incremental_ports: bool = True, clock: Callable[[], float] | None = None,
         log: Callable[[str], None] | None = None,
         debug: Callable[[str], None] | None = None, log_timeout_ms: int = 500) -> Wired:
    """The graph for the tables the replicas have."""
    nb: dict[str, TableLeaf] = {t: Leaf(leaf_name("NB", t), nb_tables[t])
                                for t in sorted(nb_tables)}
    sb: dict[str, TableLeaf] = {t: Leaf(leaf_name("SB", t), sb_tables[t])
                                for t in sorted(sb_tables)}
    bindings = sb_tables.get("Port_Binding")
    if bindings is not None and PB_BY_NAME not in bindings.indexes:
        bindings.add_index(PB_BY_NAME, "logical_port")
    datapaths = sb_tables.get("Datapath_Binding")
    if datapaths is not None and DP_BY_TUNNEL_KEY not in datapaths.indexes:
        datapaths.add_index(DP_BY_TUNNEL_KEY, "tunnel_key")
    groups = sb_tables.get("Multicast_Group")
    if groups is not None and MC_BY_DATAPATH not in groups.indexes:
        groups.add_index(MC_BY_DATAPATH, "datapath")
    chassis = sb_tables.get("Chassis")
    if chassis is not None:
        for name in (CHASSIS_BY_NAME, CHASSIS_BY_HOST):
            if name not in chassis.indexes and name in chassis.col_index:
                chassis.add_index(name, name)
    indexed = [*NB_INDEXES.items(), *(("Logical_Switch_Port", c) for c in LSP_INDEXES)]
    for table, column in indexed:
        rows = nb_tables.get(table)
        if rows is not None and column not in rows.indexes and column in rows.col_index:
            rows.add_index(column, column)
    now: Leaf[int, int] = Leaf("now", 0, is_change=lambda c: False)
    cfg: Leaf[int, int] = Leaf("sync_cfg_committed", 0, is_change=lambda c: True)
    waker: Leaf[int, int] = Leaf("mac_binding_aging_waker", 0, is_change=lambda c: True)
    unwritten: Leaf[Unwritten, Unwritten] = Leaf("unwritten", Unwritten(), is_change=bool)

    northd = NorthdNode(nb, sb, now, cfg, incremental_ports=incremental_ports)
    sync_cfg = SyncCfgNode(cfg, now, nb, sb)
    aging = MacBindingAgingNode(northd, waker, now, nb, sb)
    sync_from_sb = SyncFromSbNode(northd, nb, sb)
    lflow = LflowNode(northd, sync_from_sb, nb, sb)
    sync_to_sb = SyncToSbNode(northd, sync_from_sb, sync_cfg, aging, lflow, unwritten, nb,
                              sb)
    root = NorthdOutputNode(sync_to_sb)

    engine = Engine(root, clock=clock, log=log, compute_log_timeout_ms=log_timeout_ms,
                    debug=debug)
    return Wired(engine, nb, sb, now, cfg, waker, aging, unwritten)


def describe(engine: Engine) -> str:
    """The graph as text, one line per input of each computing node in the engine's
    order: `node <- input` and its handler (`recompute`: none), a group's members
    under the group's name."""
    lines: list[str] = []
    for node in engine.nodes:
        if not node.inputs:
            continue
        lines.append(f"{node.name}")
        group_of = {m: g for g, members in node.groups.items() for m in members.values()}
        for name, inp in node.inputs.items():
            handler = getattr(inp.handler, "__name__", None) or "recompute"
            group = group_of.get(name)
            where = f" [{group}]" if group else ""
            lines.append(f"  <- {name}{where}: {handler}")
    return "\n".join(lines) + "\n"
