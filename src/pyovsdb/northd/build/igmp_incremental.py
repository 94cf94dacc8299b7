"""SB IGMP groups (ovn-controller's snooping: a receiver joining or leaving a multicast
group) applied to the desired Multicast_Group rows in place.

Rules kept here:
- The IGMP groups are built again from every SB IGMP_Group row
  (`mcast_groups.build_igmp_groups`: a walk of that table and of the groups' ports,
  not of every port), the kept tunnel keys read through an index of the SB
  Multicast_Group rows by datapath; only the groups of the datapaths a changed row is
  on, and of the routers relaying for their switches, are written: each one's fixed
  groups from its own ports (`switch_groups`, or its router ports' `_MC_static`)
  with the IGMP groups merged in, as `build_mcast_groups` makes them. Rows of those
  datapaths no longer wanted go; the keys whose rows changed are in the delta.
- A stale IGMP group (no chassis, no datapath, a datapath gone: a chassis deleted,
  say) is deleted, as a build deletes it (the desired IGMP_Group table's `delete`, kept
  to the rows SB still has).
- The flows of the datapaths written are built again (`PortsDelta.flows`): the
  switches' IGMP flows and the relaying routers' multicast routes read the groups.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..desired import DesiredDb, Ref
from .datapaths import DatapathsData, datapath_key, smap_bool
from .delta import PortsDelta
from .mcast_groups import (
    MC_STATIC,
    Groups,
    build_igmp_groups,
    relays,
    switch_groups,
)
from .ports import PortsData

MC_BY_DATAPATH = "datapath"  # the SB Multicast_Group index `igmp_changed` reads


def relaying_routers(switches: Iterable[str], ports: PortsData) -> set[str]:
    """The routers relaying multicast for `switches`."""
    out: set[str] = set()
    for key in switches:
        for lsp in ports.router_ports.get(key, []):
            rp = ports.peer_of(lsp)
            if rp is not None and relays(rp):
                out.add(rp.dp.key)
    return out


def _fixed(key: str, datapaths: DatapathsData, ports: PortsData) -> Groups:
    if key in datapaths.switches:
        return switch_groups(key, ports)
    groups: Groups = {}
    for port in ports.of_datapath(key):
        if port.is_lrp and port.enabled and smap_bool(port.options, "mcast_flood", False):
            member = ports.ports.get(port.cr_port or "", port)
            groups.setdefault((key, MC_STATIC[0]), (MC_STATIC[1], set()))[1].add(member.name)
    return groups


def igmp_changed(datapaths: DatapathsData, ports: PortsData, sb: Mapping[str, ReplicaTable],
                 sb_desired: DesiredDb, switches: set[str]) -> PortsDelta:
    """The IGMP rows of the datapaths `switches` changed: their groups, and the stale
    rows deleted (see the rules)."""
    affected = {k for k in switches if datapaths.get(k) is not None}
    affected |= relaying_routers(affected, ports)
    groups: Groups = {}
    for key in affected:
        groups.update(_fixed(key, datapaths, ports))
    igmp: Groups = dict(groups)
    delta = PortsDelta()
    stale = build_igmp_groups(datapaths, ports, sb, igmp, _kept_keys(sb, datapaths, affected))
    rows = sb.get("IGMP_Group")
    deleting = sb_desired.tables.get("IGMP_Group")
    if deleting is not None and rows is not None:
        deleting.delete.intersection_update(rows.rows)  # (those gone: deleted)
    if stale:
        deleting = sb_desired.table("IGMP_Group", (), owned=False)
        for uuid in stale - deleting.delete:
            delta.touch("sb", "IGMP_Group", uuid)
        deleting.delete.update(stale)
    table = sb_desired.tables["Multicast_Group"]
    old = {k: table.rows.pop(k) for k in [k for k in table.rows if _on(k, affected)]}
    for (dp_key, name), (tunnel_key, members) in sorted(igmp.items()):
        if dp_key in affected:
            table.put((dp_key, name), datapath=Ref("Datapath_Binding", dp_key), name=name,
                      tunnel_key=tunnel_key,
                      ports=[Ref("Port_Binding", p) for p in sorted(members)])
    for gkey in old.keys() | {k for k in table.rows if _on(k, affected)}:
        if table.rows.get(gkey) != old.get(gkey):
            delta.touch("sb", "Multicast_Group", gkey)
    delta.flows = set(affected)
    return delta


def _on(key: Hashable, datapaths: set[str]) -> bool:
    """Whether a desired Multicast_Group key ((datapath key, name)) is on `datapaths`."""
    return isinstance(key, tuple) and key[0] in datapaths


def _kept_keys(sb: Mapping[str, ReplicaTable], datapaths: DatapathsData,
               affected: set[str]) -> Mapping[tuple[str, str], int] | None:
    """The tunnel keys the SB Multicast_Group rows of the datapaths `affected` hold,
    by (datapath key, name), through the index by datapath (None: no index, the
    builder walks the table)."""
    table, dps = sb.get("Multicast_Group"), sb.get("Datapath_Binding")
    index = table.indexes.get(MC_BY_DATAPATH) if table is not None else None
    if table is None or dps is None or index is None:
        return None
    out: dict[tuple[str, str], int] = {}
    by_key = dps.indexes.get("tunnel_key")
    for key in affected:
        dp = datapaths.get(key)
        rows: Iterable[IdlRow] = by_key.entries.get((dp.tunnel_key,), {}).values() \
            if dp is not None and by_key is not None else ()
        for row in rows:
            if datapath_key(row) != key:
                continue
            for mc in index.entries.get((row.uuid,), {}).values():
                out.setdefault((key, mc.name), mc.tunnel_key)
    return out
