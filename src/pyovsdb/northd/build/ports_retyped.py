"""Switch ports whose binding 23.03 deletes and inserts again when they are updated:
made virtual or no longer virtual, or given a parent or losing it
(`ports.type_changed`, 23.03's `lsp_is_type_changed`).

Rules kept here:
- As a recompute does it: the port holds no binding from then on (`sb` None, among
  the unbound), takes a new tunnel key as a new port of its switch does (the caller
  allocates it), and is named among the ports whose binding is recreated (`retyped`,
  `recreated`, with the old binding's UUID `replaced`); the desired Port_Binding
  table `replace`s its row, so the sync deletes the old row and inserts the new one,
  and the multicast groups listing it are planned again (they list the new row).
- Until the new row comes back (`settled`): then the port holds it and is recreated
  no more, as a build from the SB as it is then would see it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ...idl.row import IdlRow
from ..desired import DesiredDb, DesiredTable, Ref
from .datapaths_incremental import FIXED_GROUP_NAMES
from .delta import PortsDelta
from .ports import PortsData, type_changed


def retyped_ports(rows: Iterable[IdlRow], found: Mapping[str, list[IdlRow]]
                  ) -> dict[str, str]:
    """Of the switch ports updated to `rows`, those whose binding (the first by UUID
    of those `found` by name) is to be inserted again: by name, its UUID."""
    out: dict[str, str] = {}
    for row in rows:
        pbs = found.get(row.value("name"), [])
        pb = min(pbs, key=lambda r: r.uuid) if pbs else None
        if pb is not None and type_changed(pb, row):
            out[row.value("name")] = pb.uuid
    return out


def recreate(retyped: Mapping[str, str], ports: PortsData, sb_desired: DesiredDb,
             delta: PortsDelta) -> None:
    """The ports `retyped` (by name, their old binding's UUID) recreated (see the
    rules), and the multicast groups of their switches that list them named as
    changed: they list the new row."""
    groups = sb_desired.tables.get("Multicast_Group")
    for name, uuid in retyped.items():
        port = ports.ports[name]
        port.sb = None
        ports.unbound.add(name)
        ports.retyped.add(name)
        ports.recreated.add(name)
        ports.replaced.add(uuid)
        sb_desired.tables["Port_Binding"].replace.add(name)
        for group in FIXED_GROUP_NAMES:
            row = groups.rows.get((port.dp.key, group)) if groups is not None else None
            if row is not None and Ref("Port_Binding", name) in row.get("ports", ()):
                delta.touch("sb", "Multicast_Group", (port.dp.key, group))


def settled(name: str, ports: PortsData, bindings: DesiredTable) -> None:
    """The new binding of port `name` came back (see the rules)."""
    ports.retyped.discard(name)
    ports.recreated.discard(name)
    bindings.replace.discard(name)
