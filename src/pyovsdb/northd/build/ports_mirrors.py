"""SB Mirror rows and the mirror rules of switch port bindings (OVN 23.03,
`sync_mirrors` and `sbrec_port_binding_update_mirror_rules`).

Rules kept here:
- One SB Mirror per NB Mirror, by name, with its filter, sink, type and index; SB
  mirrors no NB mirror names are deleted. External ids are not copied.
- A switch port's binding lists the SB mirrors named by its NB mirror rules (router
  ports none). 23.03 adds a mirror created in the same run one run later; the final
  rows are the same.
- In place (`mirrors_changed`): the names an NB mirror change touches are decided
  again alone. A mirror renamed while switch ports' rules name it has those ports'
  bindings list it again (by its new name), which no flow reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...ovsdb.changeset import RowChange
from ..desired import DesiredDb, DesiredTable, Ref
from .delta import PortsDelta
from .ports import Port

MIRROR_COLUMNS = ("name", "filter", "sink", "type", "index")


def _put(table: DesiredTable, rows: Iterable[IdlRow]) -> None:
    for row in sorted(rows, key=lambda r: (r.name, r.uuid)):
        if row.name not in table.rows:
            table.put(row.name, name=row.name, filter=row.filter, sink=row.sink,
                      type=row.type, index=row.index)


def build_mirrors(nb: Mapping[str, ReplicaTable], sb: DesiredDb) -> DesiredTable:
    table = sb.add(DesiredTable("Mirror", MIRROR_COLUMNS))
    mirrors = nb.get("Mirror")
    _put(table, mirrors.rows.values() if mirrors is not None else ())
    return table


def mirrors_changed(nb: Mapping[str, ReplicaTable], sb: DesiredDb,
                    changes: Mapping[str, RowChange[IdlRow]]) -> PortsDelta | None:
    """The NB mirror changes `changes` on the desired SB mirrors, or None (see the
    rules)."""
    renamed = {u for u, rc in changes.items()
               if rc.old is not None and rc.new is not None and rc.old.name != rc.new.name}
    lsps = nb.get("Logical_Switch_Port")
    listing = [r for r in lsps.rows.values() if not renamed.isdisjoint(r.value("mirror_rules"))] \
        if renamed and lsps is not None else []
    names = {str(r.name) for rc in changes.values() for r in (rc.old, rc.new)
             if r is not None}
    table = sb.tables["Mirror"]
    old = {n: table.rows.pop(n) for n in names if n in table.rows}
    mirrors = nb.get("Mirror")
    _put(table, [r for r in (mirrors.rows.values() if mirrors is not None else ())
                 if r.name in names])
    delta = PortsDelta()
    for name in names:
        if table.rows.get(name) != old.get(name):
            delta.touch("sb", "Mirror", name)
    bindings = sb.tables["Port_Binding"]
    for lsp in listing:
        if lsp.name in bindings.rows:
            bindings.set(lsp.name, mirror_rules=_rules(lsp, table))
            delta.touch_unread(lsp.name)
    return delta


def mirror_rules(port: Port, mirrors: DesiredTable) -> list[Ref]:
    if not port.is_lsp or not port.nb.value("mirror_rules"):
        return []
    return _rules(port.nb, mirrors)


def _rules(lsp: IdlRow, mirrors: DesiredTable) -> list[Ref]:
    names = sorted({m.name for m in lsp.mirror_rules if isinstance(m, IdlRow)})
    return [Ref("Mirror", n) for n in names if n in mirrors.rows]
