"""Template variables: SB Chassis_Template_Var, the per-chassis values ovn-controller
substitutes into template load balancers (`^name` in VIPs and backends).

Rules kept here (OVN 23.03, `sync_template_vars` in northd.c):
- One SB row per NB row, keyed by `chassis` (the name of the chassis the values are
  for; indexed in both databases), `variables` copied; SB rows for other chassis are
  deleted. NB `external_ids` are not copied.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...idl.replica import ReplicaTable
from ..desired import DesiredDb, DesiredTable

COLUMNS = ("chassis", "variables")


def build_template_vars(nb: Mapping[str, ReplicaTable], sb: DesiredDb) -> None:
    table = sb.add(DesiredTable("Chassis_Template_Var", COLUMNS))
    rows = nb.get("Chassis_Template_Var")
    for row in sorted([] if rows is None else rows.rows.values(),
                      key=lambda r: (r.chassis, r.uuid)):
        if row.chassis not in table.rows:
            table.put(row.chassis, chassis=row.chassis, variables=dict(row.variables))
