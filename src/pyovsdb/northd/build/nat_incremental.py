"""NAT rules changed in place: an `lr-nat-add`, `lr-nat-del` or a rule updated, without
rebuilding the core.

Rules kept here:
- Correctness first: a NAT rule is read by the flows of its router and of the switches
  next to it (the ARP replies for its external IPs), and by the bindings of the switch
  ports that advertise the router's addresses.
  A change this cannot prove is so is refused (None) and the caller recomputes.
- A distributed rule (a `dnat_and_snat` with a logical port and an external MAC, as
  a DVR floating IP) also decides the chassisredirect ports' `always-redirect`: the
  bindings of the routers' chassisredirect ports are put again.
- Refused: a rule asking for routes (`add_route`: its IP reaches the routers beyond
  the next switch), and a rule of no router northd has.
- The routers whose `nat` changed are taken with their rows as they are now; the
  `nat_addresses` of the switch ports advertising them (`nat-addresses`) are built
  again; the datapaths whose flows change are named: of those routers what their NAT
  rules derive (`PortsDelta.nats`), the routers paired with them whole, on their
  switches the requests of the switch ports paired with theirs alone.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...idl.tracking import changed_columns
from ...ovsdb.changeset import RowChange
from ..desired import DesiredDb
from .datapaths import DatapathsData, smap_bool
from .delta import PortsDelta
from .ports import PortsData
from .ports_lookup import refresh_datapaths
from .ports_router import readvertise, router_port_binding

RowChanges = Mapping[str, RowChange[IdlRow]]


def nats_changed(nb: Mapping[str, ReplicaTable], datapaths: DatapathsData, ports: PortsData,
                 sb_desired: DesiredDb, nat_changes: RowChanges, lr_changes: RowChanges
                 ) -> PortsDelta | None:
    """The NAT rules `nat_changes` and the routers' `nat` lists `lr_changes` applied;
    None (nothing touched) where a recompute is needed."""
    rows = [r for rc in nat_changes.values() for r in (rc.old, rc.new) if r is not None]
    if any(smap_bool(r.options, "add_route") for r in rows):
        return None
    listed = {u for u, rc in lr_changes.items() if rc.old is not None and rc.new is not None
              and "nat" in changed_columns(rc)}
    updated = {u for u, rc in nat_changes.items() if rc.old is not None and rc.new is not None}
    routers = set(listed)
    table = nb.get("Logical_Router")
    if updated and table is not None:
        routers |= {lr.uuid for lr in table.rows.values()
                    if not updated.isdisjoint(lr.value("nat"))}
    if not routers <= datapaths.routers.keys() or table is None:
        return None
    if not refresh_datapaths(listed, datapaths.routers, table.rows, ports):
        return None
    delta = PortsDelta()
    bindings = sb_desired.tables["Port_Binding"]
    for name in readvertise(routers, ports, bindings):
        delta.touch_unread(name)
    if any(_distributed(r) for r in rows):
        for key in routers:
            for lrp in ports.l3dgw_ports.get(key, ()):
                cr = ports.ports.get(lrp.cr_port or "")
                if cr is not None and cr.name in bindings.rows:
                    bindings.set(cr.name, **router_port_binding(cr, ports))
                    delta.touch("sb", "Port_Binding", cr.name)
    # The routers' NAT flows, and on the switches next to them the requests of the
    # ports paired with theirs (the ARP replies and MACs of their NAT addresses); a
    # router next to them is built again whole.
    lsps, peers = ports.router_neighbours(routers)
    ips = {str(r.external_ip) for r in rows} | _moved_ips(nb, nat_changes, lr_changes)
    delta.nats = {key: set(ips) for key in routers}
    delta.flows = peers - routers
    delta.focus |= lsps
    return delta


def _moved_ips(nb: Mapping[str, ReplicaTable], nat_changes: RowChanges,
               lr_changes: RowChanges) -> set[str]:
    """The external IPs of the NAT rules that joined or left a router's `nat` (as the
    rule is now, or was when it went)."""
    table = nb.get("NAT")
    out: set[str] = set()
    for rc in lr_changes.values():
        if rc.old is None or rc.new is None:
            continue
        for uuid in set(rc.old.value("nat")) ^ set(rc.new.value("nat")):
            row = table.rows.get(uuid) if table is not None else None
            if row is None and uuid in nat_changes:
                row = nat_changes[uuid].old
            if row is not None:
                out.add(str(row.external_ip))
    return out


def _distributed(nat: IdlRow) -> bool:
    return nat.type == "dnat_and_snat" and bool(nat.logical_port) and bool(nat.external_mac)
