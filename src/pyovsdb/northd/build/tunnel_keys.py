"""Datapath tunnel keys as a build gives them: one assignment for the build and for the
handlers of a change that moves keys.

Rules kept here (OVN 23.03, `build_datapaths`, `ovn_datapath_assign_requested_tnl_id`):
- The walk is over every switch and every enabled router, in build order (switches,
  then routers, each by name, then NB UUID), those with a binding before those
  without. First, each that requests a key takes it if no datapath before it took it
  (in VXLAN mode a key of 4096 or more is skipped unless the switch is a transit
  switch); a datapath that loses such a race keeps no request. Then each with a
  binding keeps its binding's key if that is still free; then the rest take new keys,
  the lowest free first (`TunnelKeys` from hint 0).
- `datapaths.assign` is that walk, pure: rows, the bindings' keys and the mode in,
  keys out. `assign_over` runs it on the replicas as they are now, for a handler: what it
  returns is what a recompute on the same replicas gives, whatever the handlers of the
  same run have applied already, so handlers that each apply their share of it (moved
  datapaths, then new routers, then new switches) agree.
- A handler applies it only where a key moving leaves nothing else behind: SB holds no
  FDB entry keyed by a key that moves or is taken anew and no IGMP group while any key
  moves, and every datapath gets a key (none left out for exhaustion). Otherwise
  `assign_over` refuses (None) and the caller recomputes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from .datapaths import (
    DatapathsData,
    assign,
    existing_keys,
    is_vxlan_mode,
    requested_key,
    router_enabled,
)


@dataclass(frozen=True, slots=True)
class KeysOver:
    """What a recompute gives: the keys of the NB datapaths the core has no datapath
    for yet (`new`), and of those whose key it changes (`moved`)."""

    new: dict[str, int]
    moved: dict[str, int]


def assign_over(nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable],
                datapaths: DatapathsData) -> KeysOver | None:
    """The build's keys on the replicas as they are now, against the core's datapaths
    (see the rules); None where applying them is a recompute's. The walk is `assign`'s
    over the datapaths a request or a missing binding can move (those asking, those
    without a binding, those holding a key asked for), the others keeping their keys:
    what `assign` over all of them gives, as no key they hold is asked for."""
    rows = [*nb["Logical_Switch"].rows.values(),
            *(r for r in nb["Logical_Router"].rows.values() if router_enabled(r))]
    existing = existing_keys(sb)
    asked = {key for key in map(requested_key, rows) if key}
    movable: list[IdlRow] = []
    kept: dict[str, int] = {}
    for r in rows:
        held = existing.get(r.uuid)
        if held is None or held in asked or requested_key(r):
            movable.append(r)
        else:
            kept[r.uuid] = held
    movable.sort(key=lambda r: (r.table.name == "Logical_Router", r.name, r.uuid))
    tunnel = assign(movable, existing, is_vxlan_mode(sb), kept.values())
    if len(tunnel) != len(movable):
        return None  # (a datapath left out: the keys are exhausted)
    tunnel.update(kept)
    new: dict[str, int] = {}
    moved: dict[str, int] = {}
    left: set[int] = set()
    for uuid, key in tunnel.items():
        dp = datapaths.get(uuid)
        if dp is None:
            new[uuid] = key
        elif dp.tunnel_key != key:
            moved[uuid] = key
            left.add(dp.tunnel_key)
    touched = left | set(moved.values()) | set(new.values())
    fdb, igmp = sb.get("FDB"), sb.get("IGMP_Group")
    if (moved and igmp is not None and igmp.rows) or (fdb is not None and any(
            r.dp_key in touched for r in fdb.rows.values())):
        return None
    return KeysOver(new, moved)


def keys_as_built(rows: list[IdlRow], nb: Mapping[str, ReplicaTable],
                  sb: Mapping[str, ReplicaTable], datapaths: DatapathsData,
                  moved: dict[str, int]) -> dict[str, int] | None:
    """The keys a recompute gives the new datapaths `rows` (the fallback of
    `new_datapath_keys`, where the requests race), the datapaths it moves put in
    `moved`; None where `assign_over` refuses."""
    over = assign_over(nb, sb, datapaths)
    if over is None or any(row.uuid not in over.new for row in rows):
        return None
    moved.update(over.moved)
    return {row.uuid: over.new[row.uuid] for row in rows}
