"""A router disabled or enabled again (`enabled`) in place: a build leaves a disabled
router out with its ports, so disabling deletes its datapath and ports from the build
and enabling makes them, as `lr-del` and `lr-add` with ports do.

Rules kept here:
- The change is the router's `enabled` alone. The router may have NAT rules, routes
  and policies (its flows'), but no load balancers (their data reads the routers) and
  no multicast relay; its ports are what `ports_incremental.router_ports_changed`
  takes (switch ports naming them unpaired or paired with them; no router port
  naming them as its peer). Static MAC bindings and BFD sessions naming its ports
  are refused. Anything else is refused (None) and the caller recomputes.
- Disabled: its ports go as deleted ones do (`router_ports_changed` with their rows
  as gone), then its datapath and binding. Enabled: its datapath takes the key a
  build gives a new router (`new_datapath_keys`), then its ports come as added ones
  do, pairing with the switch ports that name them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...idl.tracking import changed_columns
from ...ovsdb.changeset import RowChange
from ..desired import DesiredDb
from .bfd_incremental import sessions_naming
from .datapaths import DatapathsData, router_enabled
from .datapaths_incremental import add_router, new_datapath_keys, remove_routers, renumber
from .delta import PortsDelta
from .lb import LbData
from .ports import PortsData
from .ports_incremental import router_ports_changed
from .ports_static_mac import named_keys


def router_toggled(rc: RowChange[IdlRow]) -> bool:
    """Whether a router update disabled or enabled it, alone."""
    return rc.old is not None and rc.new is not None \
        and set(changed_columns(rc)) == {"enabled"} \
        and router_enabled(rc.old) != router_enabled(rc.new)


def routers_toggled(changes: Mapping[str, RowChange[IdlRow]], nb: Mapping[str, ReplicaTable],
                    sb: Mapping[str, ReplicaTable], datapaths: DatapathsData,
                    ports: PortsData, names: Counter[str], lbs: LbData,
                    sb_desired: DesiredDb) -> PortsDelta | None:
    """The updates `changes` (each `router_toggled`) applied in place, or None (see
    the rules). `names`: the NB port names (`port_names`), as NB has them."""
    if len(changes) != 1:
        return None  # (one router at a time: another's keys would interleave)
    (uuid, rc), = changes.items()
    row = rc.new
    assert row is not None
    if row.value("load_balancer") or row.value("load_balancer_group") \
            or "mcast_relay" in row.options:
        return None
    lrp_rows = [r for r in row.ports if isinstance(r, IdlRow)]
    lrp_names = {r.name for r in lrp_rows}
    if named_keys(nb, sb, lrp_names) or sessions_naming(nb, lrp_names):
        return None
    if not router_enabled(row):
        if uuid not in datapaths.routers:
            return None
        gone = Counter(names)
        gone.subtract(lrp_names)  # (as if deleted: a build no longer has them)
        delta = router_ports_changed(
            nb, sb, datapaths, ports, gone, sb_desired,
            {r.uuid: RowChange(r.uuid, r, None) for r in lrp_rows},
            {uuid: RowChange(uuid, rc.old, None)}, {})
        if delta is None:
            return None
        return delta if remove_routers([uuid], nb, sb, datapaths, ports, lbs, sb_desired,
                                       delta) else None
    if uuid in datapaths.routers:
        return None
    moved: dict[str, int] = {}  # (the datapath holding the key it asks for)
    keys = new_datapath_keys([row], datapaths, sb, moved=moved, nb=nb)
    if keys is None:
        return None
    held = PortsDelta()
    renumber(moved, datapaths, ports, sb_desired, held)
    add_router(row, keys[uuid], datapaths, ports, lbs, sb_desired)
    delta = router_ports_changed(
        nb, sb, datapaths, ports, names, sb_desired,
        {r.uuid: RowChange(r.uuid, None, r) for r in lrp_rows},
        {uuid: RowChange(uuid, None, row)}, {})
    if delta is None:
        return None
    delta.touch("sb", "Datapath_Binding", uuid)
    delta.merge(held)
    return delta
