"""The `lflow` engine node: the logical flows of the `northd` node's build, as desired
SB `Logical_Flow` rows and the `Logical_DP_Group` rows they share.

Rules kept here:
- As in 23.03, `lflow` recomputes whenever `northd` changed (no handler yet), or an SB
  table only flows read (`LFLOW_SB_INPUTS`); its data
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

from ..engine import Input, Node
from .desired import DesiredDb, DesiredTable
from .lflows import LflowContext, LflowTable, build_lflows
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
                 sb: Mapping[str, Node[Any, Any]]) -> None:
        self.ctx = ctx
        inputs: dict[str, Input[Any, Any]] = {"northd": Input(northd)}
        for table in LFLOW_SB_INPUTS:
            if table in sb:
                inputs[sb[table].name] = Input(sb[table])
        super().__init__("lflow", **inputs)

    def run(self, **inputs: Any) -> LflowData:
        return build_lflow_data(self.ctx, inputs["northd"])
