"""BFD sessions changed in place: NB sessions, the SB sessions ovn-controller writes
(their `status`), and static routes naming sessions.

Rules kept here:
- The BFD tables are built again whole (`ports_bfd.build_bfd`: a walk of the sessions
  and of the routers' static routes, not of the ports or the flows) and compared with
  what was desired: the SB rows and the NB `status` write-backs that differ are the
  delta.
- The flows read a session's status (a route through a session that is down is left
  out) and which ports have sessions: the routers of the ports the changed sessions
  name, and the routers whose routes name them, have their flows built again
  (`PortsDelta.flows`).
"""

from __future__ import annotations

from collections.abc import Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..desired import DesiredDb
from .core import CoreData
from .delta import PortsDelta
from .ports_bfd import NB_COLUMNS, build_bfd

Session = tuple[str, str]  # (logical_port, dst_ip)


def bfd_changed(nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable],
                core: CoreData, sb_desired: DesiredDb, nb_desired: DesiredDb,
                sessions: set[Session]) -> PortsDelta:
    """The BFD tables built again; `sessions`: those the change names (see the
    rules)."""
    fresh_sb, fresh_nb = DesiredDb(), DesiredDb()
    core.bfd_ports = build_bfd(nb, sb, fresh_sb, fresh_nb)
    delta = PortsDelta()
    new, old = fresh_sb.tables["BFD"], sb_desired.tables["BFD"]
    for key in new.rows.keys() | old.rows.keys():
        if new.rows.get(key) != old.rows.get(key):
            delta.touch("sb", "BFD", key)
            sessions.add(key)  # type: ignore[arg-type]
    sb_desired.tables["BFD"] = new
    new_nb = fresh_nb.table("BFD", NB_COLUMNS, owned=False)
    old_nb = nb_desired.tables.get("BFD")
    old_rows = old_nb.rows if old_nb is not None else {}
    nb_rows = nb.get("BFD")
    for uuid in new_nb.rows.keys() | old_rows.keys():
        if new_nb.rows.get(uuid) != old_rows.get(uuid):
            delta.touch("nb", "BFD", uuid)
            row = nb_rows.rows.get(str(uuid)) if nb_rows is not None else None
            if row is not None:
                sessions.add((row.logical_port, row.dst_ip))
    nb_desired.tables["BFD"] = new_nb
    delta.flows = _routers(nb, core, sessions)
    return delta


def sessions_naming(nb: Mapping[str, ReplicaTable], lps: set[str]) -> set[Session]:
    """The NB BFD sessions whose logical port is one of `lps`."""
    table = nb.get("BFD")
    return {(r.logical_port, r.dst_ip) for r in (table.rows.values() if table else ())
            if r.logical_port in lps}


def _routers(nb: Mapping[str, ReplicaTable], core: CoreData, sessions: set[Session]
             ) -> set[str]:
    """The routers whose flows read the sessions (see the rules)."""
    out: set[str] = set()
    ports = core.ports.ports
    for lp, _ in sessions:
        port = ports.get(lp)
        if port is not None and port.is_lrp:
            out.add(port.dp.key)
    routers = nb.get("Logical_Router")
    for key in core.datapaths.routers:
        row = routers.rows.get(key) if routers is not None else None
        for route in row.static_routes if row is not None else ():
            bfd = route.bfd if isinstance(route, IdlRow) else None
            if isinstance(bfd, IdlRow) and (bfd.logical_port, bfd.dst_ip) in sessions:
                out.add(key)
                break
    return out
