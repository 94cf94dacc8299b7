"""SB Mirror rows and the mirror rules of switch port bindings (OVN 23.03,
`sync_mirrors` and `sbrec_port_binding_update_mirror_rules`).

Rules kept here:
- One SB Mirror per NB Mirror, by name, with its filter, sink, type and index; SB
  mirrors no NB mirror names are deleted. External ids are not copied.
- A switch port's binding lists the SB mirrors named by its NB mirror rules (router
  ports none). 23.03 adds a mirror created in the same run one run later; the final
  rows are the same.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..desired import DesiredDb, DesiredTable, Ref
from .ports import Port

MIRROR_COLUMNS = ("name", "filter", "sink", "type", "index")


def build_mirrors(nb: Mapping[str, ReplicaTable], sb: DesiredDb) -> DesiredTable:
    table = sb.add(DesiredTable("Mirror", MIRROR_COLUMNS))
    mirrors = nb.get("Mirror")
    for row in sorted(mirrors.rows.values() if mirrors is not None else (),
                      key=lambda r: (r.name, r.uuid)):
        if row.name not in table.rows:
            table.put(row.name, name=row.name, filter=row.filter, sink=row.sink,
                      type=row.type, index=row.index)
    return table


def mirror_rules(port: Port, mirrors: DesiredTable) -> list[Ref]:
    if not port.is_lsp or not port.nb.value("mirror_rules"):
        return []
    names = sorted({m.name for m in port.nb.mirror_rules if isinstance(m, IdlRow)})
    return [Ref("Mirror", n) for n in names if n in mirrors.rows]
