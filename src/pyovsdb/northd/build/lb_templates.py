"""Template variables: SB Chassis_Template_Var, the per-chassis values ovn-controller
substitutes into template load balancers (`^name` in VIPs and backends).

Rules kept here (OVN 23.03, `sync_template_vars` in northd.c):
- One SB row per NB row, keyed by `chassis` (the name of the chassis the values are
  for; indexed in both databases), `variables` copied; SB rows for other chassis are
  deleted. NB `external_ids` are not copied.
- In place (`template_vars_changed`): the chassis names an NB row change touches are
  decided again alone, from the NB rows of those names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..desired import DesiredDb, DesiredTable
from .delta import PortsDelta

COLUMNS = ("chassis", "variables")


def _put(table: DesiredTable, rows: Iterable[IdlRow]) -> None:
    for row in sorted(rows, key=lambda r: (r.chassis, r.uuid)):
        if row.chassis not in table.rows:
            table.put(row.chassis, chassis=row.chassis, variables=dict(row.variables))


def build_template_vars(nb: Mapping[str, ReplicaTable], sb: DesiredDb) -> None:
    table = sb.add(DesiredTable("Chassis_Template_Var", COLUMNS))
    rows = nb.get("Chassis_Template_Var")
    _put(table, [] if rows is None else rows.rows.values())


def template_vars_changed(nb: Mapping[str, ReplicaTable], sb: DesiredDb, names: set[str]
                          ) -> PortsDelta:
    """The desired rows of the chassis `names` decided again; the keys that changed."""
    table = sb.tables["Chassis_Template_Var"]
    rows = nb.get("Chassis_Template_Var")
    old = {n: table.rows.pop(n) for n in names if n in table.rows}
    index = rows.indexes.get("chassis") if rows is not None else None
    if rows is None:
        found: Iterable[IdlRow] = ()
    elif index is not None and index.columns == ("chassis",):
        found = [r for n in names for r in index.entries.get((n,), {}).values()]
    else:
        found = [r for r in rows.rows.values() if r.chassis in names]
    _put(table, found)
    delta = PortsDelta()
    for name in names:
        if table.rows.get(name) != old.get(name):
            delta.touch("sb", "Chassis_Template_Var", name)
    return delta
