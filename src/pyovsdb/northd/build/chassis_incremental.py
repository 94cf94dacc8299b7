"""SB Chassis and Encap changes (ovn-controller registering, updating or leaving)
applied to northd's build in place.

Rules kept here:
- Of the chassis, builders read: what every local chassis supports
  (`global_cfg.chassis_features`), whether any has a vxlan encap (`is_vxlan_mode`: the
  datapath tunnel key range, `max_tunid`), the chassis switch ports ask for by name or
  hostname (`requested-chassis`, every name asked and the ports asking recorded in
  `PortsData.chassis_asked`), and the chassis HA chassis rows name (a reference by
  name, resolved when `sync_to_sb` plans the row).
- A change that moves the vxlan mode (a first chassis with a vxlan encap, or the
  last going) narrows or widens the tunnel key ranges, which only new keys and
  `max_tunid` read: existing keys are kept, as a recompute keeps them, but for a
  datapath's request of a key of 4096 or more (not a transit switch's), which a
  recompute refuses in vxlan mode and grants otherwise: `vxlan_moved` moves the
  datapaths whose keys a recompute moves (`tunnel_keys.assign_over`). A port asking
  for a key of `VXLAN_MIN_MULTICAST` or more (the same, in its datapath's key space)
  has its datapath's ports walked again (`port_keys_walked`), where the build's walk
  can be told; otherwise the caller recomputes. One that moves the features is the
  caller's too (`nodes.northd_sb`: the global settings in place, every flow built
  again).
- A chassis added, deleted or renamed under a name or hostname ports asked for
  rebinds those ports (`ports_incremental.rebind`: their `requested_chassis` and
  `requested_additional_chassis`), where each is a port whose binding is built alone
  there; otherwise the caller recomputes.
- Nothing else a builder made moves, except that the HA chassis rows naming a
  chassis added, deleted or renamed are touched: their reference is planned again.
  Any other column (`external_ids`, `nb_cfg`, `transport_zones`...) moves nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...idl.tracking import changed_columns
from ...ovsdb.changeset import RowChange
from ..desired import DesiredDb
from .alloc import VXLAN_MIN_MULTICAST
from .core import CoreData
from .datapaths import VXLAN_FIRST_REFUSED, asked_key, is_vxlan_mode, smap_int
from .datapaths_incremental import renumber
from .delta import PortsDelta
from .port_keys_walked import walk_port_keys
from .ports_incremental import rebind
from .tunnel_keys import assign_over

# Chassis columns by which a reference or a request finds the chassis.
NAMING = frozenset(("name", "hostname"))
TUNNEL_KEY = "requested-tnl-key"


def chassis_changed(changes: Mapping[str, RowChange[IdlRow]], core: CoreData,
                    sb: Mapping[str, ReplicaTable], sb_desired: DesiredDb
                    ) -> PortsDelta | None:
    """The delta of Chassis row changes `changes` (the vxlan mode checked kept by the
    caller), or None where a port that asked for a chassis they name cannot be bound
    again alone (see the rules)."""
    named: set[str] = set()
    asked: set[str] = set()
    for rc in changes.values():
        rows = [r for r in (rc.old, rc.new) if r is not None]
        if rc.old is not None and rc.new is not None \
                and NAMING.isdisjoint(changed_columns(rc)):
            continue
        names = {r.name for r in rows}
        asked |= names | {r.hostname for r in rows}
        named.update(names)
    delta = PortsDelta()
    asking = core.ports.chassis_asked.asking(asked)
    if asking and not rebind(sb, core.ports, asking, sb_desired, delta):
        return None
    chassis = sb_desired.tables.get("HA_Chassis")
    if named and chassis is not None:
        for key in chassis.rows:
            if isinstance(key, tuple) and key[1] in named:  # (group, chassis name)
                delta.touch("sb", "HA_Chassis", key)
    return delta


def vxlan_moved(core: CoreData, nb: Mapping[str, ReplicaTable],
                sb: Mapping[str, ReplicaTable], sb_desired: DesiredDb) -> PortsDelta | None:
    """The vxlan mode moved to SB's (see the rules): the datapaths whose keys a
    recompute moves moved (`tunnel_keys.assign_over`, where some datapath but a transit
    switch asks for a key of 4096 or more), and the ports of a datapath where a port
    asks for one of `VXLAN_MIN_MULTICAST` or more walked again (`walk_port_keys`);
    None where either refuses."""
    asking = {p.dp.key for p in core.ports.ports.values()
              if smap_int(p.options, TUNNEL_KEY) >= VXLAN_MIN_MULTICAST}
    datapaths, delta = core.datapaths, PortsDelta()
    if any(key >= VXLAN_FIRST_REFUSED and not transit
           for key, transit in (asked_key(dp.nb) for dp in datapaths.all())):
        over = assign_over(nb, sb, datapaths)
        if over is None:
            return None
        renumber(over.moved, datapaths, core.ports, sb_desired, delta)
    datapaths.vxlan_mode = is_vxlan_mode(sb)
    if not walk_port_keys(asking, sb, core.ports, datapaths.vxlan_mode, sb_desired, delta):
        return None
    return delta
