"""The build's port key walk run again over whole datapaths, in place, for a change
that moves what a port's key request is granted: the request itself changed on an
existing router port (`lrp_updated`), or the VXLAN mode moved under a port asking
for a key of `VXLAN_MIN_MULTICAST` or more (`chassis_incremental.vxlan_moved`).

Rules kept here:
- Each datapath's ports hold their bindings' keys as a recompute would see them
  (`port_keys.held_space` with every port walked), and the walk is
  `port_keys.port_keys` over them all, none new, in the VXLAN mode given.
- The ports whose keys move take them in their bindings (`port_keys.rekey_bindings`,
  with their routers' flows).
- False where any of that cannot be told (a port without its binding, the keys run
  out): the caller recomputes. The walk may have set ports' keys by then; a recompute
  builds them anew.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from ...idl.replica import ReplicaTable
from ..desired import DesiredDb
from .delta import PortsDelta
from .port_keys import held_space, port_keys, rekey_bindings
from .ports import Port, PortsData, datapath_keys
from .ports_lookup import bindings_of


def walk_port_keys(keys: Collection[str], sb: Mapping[str, ReplicaTable], ports: PortsData,
                   vxlan: bool, sb_desired: DesiredDb, delta: PortsDelta) -> bool:
    """The ports of the datapaths `keys` (NB keys) given their keys as a build gives
    them, the bindings of those that moved put again (see the rules)."""
    if not keys:
        return True
    members = {key: list(ports.by_datapath.get(key, [])) for key in sorted(keys)}
    bound = bindings_of(sb, {p.name for held in members.values() for p in held})
    dp_keys = datapath_keys(sb)
    moved: list[Port] = []
    for key, held in members.items():
        if held_space(held, key, bound, dp_keys, (), ports.retyped, vxlan, True) is None:
            return False
        walked = port_keys(held, [], vxlan)
        if walked is None:
            return False
        moved += walked
    return rekey_bindings(moved, sb_desired.tables["Port_Binding"], delta)
