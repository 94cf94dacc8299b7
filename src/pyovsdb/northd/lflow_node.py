"""The `lflow` engine node: the logical flows of the `northd` node's build, as desired
SB `Logical_Flow` rows and the `Logical_DP_Group` rows they share.

Rules kept here:
- As in 23.03, `lflow` recomputes whenever `northd` changed (no handler yet), or an SB
  table only flows read (`LFLOW_SB_INPUTS`), or, with `ignore_lsp_down=false`, when
  `sync_from_sb` moved a port's `up`; its data
  is the flows as data (`LflowTable`, by owner) plus their desired SB tables, never
  writes: `sync_to_sb` plans them with the rest.
- The desired `Logical_DP_Group` table is northd's (the load balancers' groups) with
  the flows' groups added, in a copy: the table `northd` built is not changed.
- Pure: the NB and SB tables come from the run context.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..engine import Change, Handled, Input, Node
from .desired import DesiredDb, DesiredTable
from .lflows import LflowContext, LflowTable, build_lflows
from .nodes.datapaths import smap_bool
from .nodes.dp_groups import TABLE as DP_GROUP_TABLE

if TYPE_CHECKING:
    from .graph import NorthdData, RunContext

LFLOW_TABLES = ("Logical_Flow", DP_GROUP_TABLE)
# SB tables the flow builders read that `northd` does not (a change recomputes `lflow`):
# the health checks' Service_Monitor status decides which backends a VIP has.
LFLOW_SB_INPUTS = ("Service_Monitor",)


@dataclass(slots=True)
class LflowData:
    flows: LflowTable
    sb: DesiredDb  # Logical_Flow and Logical_DP_Group


def lflow_context(ctx: RunContext, northd: NorthdData) -> LflowContext:
    return LflowContext(nb=ctx.nb, sb=ctx.sb, datapaths=northd.core.datapaths,
                        ports=northd.core.ports, lbs=northd.extra.lbs,
                        config=northd.extra.config)


def build_lflow_data(ctx: RunContext, northd: NorthdData) -> LflowData:
    flows = build_lflows(lflow_context(ctx, northd))
    sb = DesiredDb()
    groups = northd.sb.tables.get(DP_GROUP_TABLE)
    if groups is not None:
        sb.add(DesiredTable(groups.name, groups.columns, groups.owned, dict(groups.rows),
                            groups.fill))
    flows.put_desired(sb)
    return LflowData(flows, sb)


class LflowNode(Node[LflowData, None]):
    def __init__(self, ctx: RunContext, northd: Node[Any, Any],
                 sb: Mapping[str, Node[Any, Any]], feedback: Node[Any, Any]) -> None:
        self.ctx = ctx
        inputs: dict[str, Input[Any, Any]] = {"northd": Input(northd),
                                              "sync_from_sb": Input(feedback, self.on_up)}
        for table in LFLOW_SB_INPUTS:
            if table in sb:
                inputs[sb[table].name] = Input(sb[table])
        super().__init__("lflow", **inputs)

    def run(self, **inputs: Any) -> LflowData:
        return build_lflow_data(self.ctx, inputs["northd"])

    # A port's `up` (what `sync_from_sb` decides) moves flows only where the ARP/ND
    # responder skips ports that are down: with NB_Global `ignore_lsp_down=false`.
    def on_up(self, change: Change[Any, Any]) -> Handled:
        table = self.ctx.nb.get("NB_Global")
        rows = sorted(table.rows.values(), key=lambda r: r.uuid) if table is not None else []
        if rows and not smap_bool(rows[0].options, "ignore_lsp_down", True):
            return Handled.UNHANDLED
        return Handled.HANDLED_UNCHANGED
