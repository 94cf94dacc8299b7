"""Logical switches and routers created or deleted without rebuilding the core: an
`ls-add` (with its ports, `build.ports_incremental` adds those), an `ls-del`, an
`lr-add` or `lr-del` (with its ports, `ports_incremental.router_ports_changed`).

Rules kept here:
- Correctness first: what this leaves in the core data and the desired tables is what
  `build_core` and `build_extra` would build from the same NB and SB. A router this
  cannot prove it handles is refused (`simple_router` false) and the caller
  recomputes.
- Handled: any switch. What its row holds besides its ports is read by the flows
  (ACLs, QoS rules, forwarding groups, CoPP, most of `other_config`: built with the
  switch), by its own desired rows below (the multicast settings, a requested tunnel
  key, a transit switch name), by its ports' bindings (`vlan-passthru`: its ports are
  `ports_incremental`'s to check), or by what the caller builds again after it (the
  load balancers of the switch and its groups, `lb_incremental`; the DNS rows it
  lists, `dns.dns_listed`). Any enabled router (`simple_router`): its NAT rules,
  routes, policies and CoPP are the flows', its options too but its requested tunnel
  key, its load balancers the caller's to build again; its ports `ports_incremental`'s.
- Tunnel keys as a recompute gives them: while every datapath holds the key of its
  SB binding (a recompute keeps those), new datapaths take the key they request
  (refused unless it is free and in range), then the lowest free keys in the order
  of their names, switches before routers (23.03's walk from hint 0 over the
  datapaths it has no binding for). Routers and switches made in one change: requested
  keys first, then the switches' lowest free, then the routers' (`keys_before_routers`),
  none deleted in it. Where requests race (two asking for one key, a holder asking for
  another), the build's own walk over the replicas tells (`tunnel_keys`).
- The datapath's own desired rows come and go with it: its Datapath_Binding, its
  IP_Multicast row, its fixed multicast groups (the ports' bindings and the groups of
  a new switch are `ports_incremental`'s); a router's binding, and its (empty) set of
  reachable load balancer VIPs.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping
from dataclasses import replace
from typing import Any

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..desired import DesiredDb, Ref
from .address_sets import router_lb_set_name
from .alloc import DP_KEY_MAX, DP_KEY_MAX_VXLAN, DP_KEY_MIN
from .datapaths import (
    Datapath,
    DatapathKind,
    DatapathsData,
    existing_bindings,
    existing_keys,
    put_datapath,
    requested_key,
    router_enabled,
)
from .delta import PortsDelta
from .ip_mcast import mcast_settings
from .lb import LbData
from .mcast_groups import (
    MC_FLOOD,
    MC_FLOOD_L2,
    MC_MROUTER_FLOOD,
    MC_STATIC,
    MC_UNKNOWN,
)
from .port_groups import sb_port_group_name
from .ports import PortsData
from .tunnel_keys import assign_over, keys_as_built

TUNNEL_KEY = "requested-tnl-key"
# A switch's IPAM settings: read by IPAM alone, for the dynamic addresses of its ports.
IPAM_CONFIG = frozenset(("subnet", "exclude_ips", "ipv6_prefix", "mac_only"))
# The names of a datapath's fixed multicast groups (each a name and its tunnel key;
# a router has `MC_STATIC` alone).
FIXED_GROUP_NAMES = tuple(name for name, _ in (MC_FLOOD, MC_UNKNOWN, MC_MROUTER_FLOOD,
                                               MC_STATIC, MC_FLOOD_L2))


def simple_router(row: IdlRow, with_ports: bool = False) -> bool:
    """Whether a router created or deleted is one this module handles: enabled (a
    disabled one is `router_toggled`'s), without ports unless `with_ports` (created or
    deleted with them: `ports_incremental` judges those). Its NAT rules, routes and
    policies come and go with its flows (BFD sessions naming its ports: `NorthdNode.
    on_nb_lrp`'s), its load balancers with the load balancer data the caller builds
    again: Neutron's router created with its gateway, ovn-kubernetes's gateway router
    with the cluster's load balancer group."""
    return router_enabled(row) and (with_ports or not row.value("ports"))


def new_datapath_keys(rows: list[IdlRow], datapaths: DatapathsData,
                      sb: Mapping[str, ReplicaTable], going: Collection[str] = (),
                      taken: Collection[int] | None = (), fresh: Collection[str] = (),
                      moved: dict[str, int] | None = None,
                      nb: Mapping[str, ReplicaTable] | None = None) -> dict[str, int] | None:
    """The tunnel keys a recompute gives the new datapaths `rows`, all switches or all
    routers (see the module rules), while the datapaths `going` are deleted in the same
    change (their keys free); None if it cannot be told without one. `taken`: keys new
    switches of the same change take first (for new routers); `fresh`: datapaths made
    in this change (no binding yet: new routers, for new switches). `moved` (for a
    caller that renumbers them, `renumber`): the datapaths holding a key a new one
    asks for get the lowest free keys there, before the new ones without a request,
    as a recompute gives them; without it, or where such a holder asks for a key
    itself, another datapath asks for the one asked, or SB has FDB entries keyed by
    it or IGMP groups, this refuses. Given `nb` and `moved`, what it refuses is told
    by the build's walk over the replicas (`tunnel_keys.keys_as_built`: requests
    racing), as where `taken` is None (not known)."""
    keys = None if taken is None else _in_order(rows, datapaths, sb, going, taken, fresh,
                                                 moved)
    if keys is None and moved is not None and nb is not None:
        return keys_as_built(rows, nb, sb, datapaths, moved)
    return keys


def _in_order(rows: list[IdlRow], datapaths: DatapathsData, sb: Mapping[str, ReplicaTable],
              going: Collection[str], taken: Collection[int], fresh: Collection[str],
              moved: dict[str, int] | None) -> dict[str, int] | None:
    """`new_datapath_keys` where no request races: the new datapaths in name order."""
    held = existing_keys(sb)
    used = set(taken)
    holding: dict[int, Datapath] = {}
    for dp in datapaths.all():  # (one walk: every binding as built, the keys in use)
        if dp.key in fresh:
            if dp.key not in going:
                used.add(dp.tunnel_key)
            continue
        if held.get(dp.key) != dp.tunnel_key:
            return None
        if dp.key not in going:
            used.add(dp.tunnel_key)
            holding[dp.tunnel_key] = dp
    hi = DP_KEY_MAX_VXLAN if datapaths.vxlan_mode else DP_KEY_MAX
    new = sorted(rows, key=lambda r: (r.name, r.uuid))
    if any(row.uuid in held for row in new):
        return None  # a binding already names it: a recompute keeps that one's key
    # Requested keys come first in a recompute: each must be free and taken as asked
    # (one held by another datapath would move that one).
    requested = {row.uuid: requested_key(row) for row in new}
    asked = {uuid: key for uuid, key in requested.items() if key}
    if len(set(asked.values())) != len(asked) or any(
            not DP_KEY_MIN <= key <= hi for key in asked.values()):
        return None
    holders = [holding.get(key) for key in asked.values() if key in used]
    if holders and not _movable(holders, set(asked.values()), datapaths, sb, moved):
        return None
    used |= set(asked.values())
    # (the holders take theirs first, in build order: they have a binding)
    moving = [dp.key for dp in holders if dp is not None]
    if len(moving) > 1:
        order = {dp.key: i for i, dp in enumerate(datapaths.all())}
        moving.sort(key=order.__getitem__)
    takers = moving + [row.uuid for row in new if row.uuid not in asked]
    free = sorted(set(range(DP_KEY_MIN, DP_KEY_MIN + len(used) + len(takers))) - used)
    free = free[:len(takers)]
    if len(free) < len(takers) or (free and free[-1] > hi):
        return None
    keys = dict(zip(takers, free, strict=True))
    if moved is not None:
        moved.update((dp.key, keys.pop(dp.key)) for dp in holders if dp is not None)
    return {**asked, **keys}


def _movable(holders: list[Datapath | None], asked: set[int], datapaths: DatapathsData,
             sb: Mapping[str, ReplicaTable], moved: dict[str, int] | None) -> bool:
    """Whether the datapaths holding keys new ones ask for (None: a key a new switch
    of the same change takes) move as `new_datapath_keys` says."""
    if moved is None or None in holders:
        return False
    if any(requested_key(dp.nb) for dp in holders if dp is not None):
        return False  # (a holder asking for a key itself)
    if any(requested_key(dp.nb) in asked for dp in datapaths.all()):
        return False  # (asked before the new one: a recompute gives it to that one)
    fdb, igmp = sb.get("FDB"), sb.get("IGMP_Group")
    return not (igmp is not None and igmp.rows) and not (fdb is not None and any(
        r.dp_key in asked for r in fdb.rows.values()))


def keys_before_routers(switches: list[IdlRow], routers: list[IdlRow],
                        datapaths: DatapathsData, sb: Mapping[str, ReplicaTable]
                        ) -> list[int] | None:
    """The keys new `switches` take, made in one change with new `routers` (which take
    theirs after, but for the keys they ask for: a recompute gives those first); None
    if that cannot be told (a router asking for a key a switch asks for too)."""
    asked = {requested_key(row) for row in routers} - {0}
    keys = new_datapath_keys(switches, datapaths, sb, taken=asked)
    return None if keys is None else list(keys.values())


def add_switch(row: IdlRow, tunnel_key: int, datapaths: DatapathsData, ports: PortsData,
               sb_desired: DesiredDb) -> Datapath:
    """The new switch's datapath and its desired Datapath_Binding and IP_Multicast rows."""
    dp = _add_datapath(row, DatapathKind.SWITCH, tunnel_key, datapaths, ports, sb_desired)
    sb_desired.tables["IP_Multicast"].put(dp.key, datapath=Ref("Datapath_Binding", dp.key),
                                          **mcast_settings(row.other_config))
    return dp


def add_router(row: IdlRow, tunnel_key: int, datapaths: DatapathsData, ports: PortsData,
               lbs: LbData, sb_desired: DesiredDb) -> Datapath:
    """The new router's datapath, its desired Datapath_Binding row and its (empty) set
    of reachable load balancer VIPs."""
    dp = _add_datapath(row, DatapathKind.ROUTER, tunnel_key, datapaths, ports, sb_desired)
    lbs.reachable[dp.key] = (frozenset(), frozenset())
    return dp


def _add_datapath(row: IdlRow, kind: DatapathKind, tunnel_key: int, datapaths: DatapathsData,
                  ports: PortsData, sb_desired: DesiredDb) -> Datapath:
    """A new datapath in build order among those of its kind (by name, then NB UUID),
    and its desired binding."""
    dp = Datapath(row.uuid, kind, row.name, tunnel_key, row)
    same = datapaths.switches if kind is DatapathKind.SWITCH else datapaths.routers
    ordered = sorted([*same.values(), dp], key=lambda d: (d.name, d.key))
    same.clear()
    same.update((d.key, d) for d in ordered)
    ports.by_datapath.setdefault(dp.key, [])
    put_datapath(sb_desired.tables["Datapath_Binding"], dp)
    return dp


def remove_router(key: str, datapaths: DatapathsData, ports: PortsData, lbs: LbData,
                  sb_desired: DesiredDb) -> list[tuple[str, Hashable]]:
    """The router (without ports) out of the core data and the desired tables (its
    binding, its fixed multicast groups, the address sets of its load balancers' VIPs);
    the (table, key) of every desired row taken away."""
    named = _named(datapaths.routers[key], sb_desired)
    del datapaths.routers[key]
    for per_dp in (ports.by_datapath, ports.l3dgw_ports):
        per_dp.pop(key, None)
    lbs.reachable.pop(key, None)
    return _drop(sb_desired, [("Datapath_Binding", key), *_fixed_groups(key), *named])


def remove_switch(key: str, datapaths: DatapathsData, ports: PortsData,
                  sb_desired: DesiredDb) -> list[tuple[str, Hashable]]:
    """The switch (its ports gone already) out of the core data and the desired tables
    (with the SB port groups named after it); the (table, key) of every desired row
    taken away."""
    named = _named(datapaths.switches[key], sb_desired)
    del datapaths.switches[key]
    for per_dp in (ports.by_datapath, ports.router_ports, ports.localnet_ports,
                   ports.l3dgw_ports):
        per_dp.pop(key, None)
    ports.vtep_switches.discard(key)
    return _drop(sb_desired, [("Datapath_Binding", key), ("IP_Multicast", key),
                              *_fixed_groups(key), *named])


def _fixed_groups(key: str) -> list[tuple[str, Hashable]]:
    return [("Multicast_Group", (key, name)) for name in FIXED_GROUP_NAMES]


def _drop(sb_desired: DesiredDb, gone: list[tuple[str, Hashable]]
          ) -> list[tuple[str, Hashable]]:
    """The desired rows `gone` (table, key) taken away; `gone`."""
    for table, row_key in gone:
        desired = sb_desired.tables.get(table)
        if desired is not None:
            desired.rows.pop(row_key, None)
    return gone


def renumber(moved: Mapping[str, int], datapaths: DatapathsData, ports: PortsData,
             sb_desired: DesiredDb, delta: PortsDelta) -> None:
    """The datapaths `moved` (by NB UUID) under their new tunnel keys (one asked for
    another's, which takes the lowest free): their ports follow, the SB rows named
    after their keys (a switch's port groups, a router's load balancer address sets)
    are renamed, every one taken out before any is put back (two may swap keys), and
    their bindings, and their flows and their neighbours', are built again."""
    renamed: list[tuple[str, str, dict[str, Any]]] = []
    for key in sorted(moved):
        dp = datapaths.by_key(key)
        new = replace(dp, tunnel_key=moved[key])
        (datapaths.switches if dp.is_switch else datapaths.routers)[key] = new
        for p in ports.by_datapath.get(key, []):
            p.dp = new
        for table, name, to in _named_after(dp, new.tunnel_key, sb_desired):
            row = sb_desired.tables[table].rows.pop(name, None)
            delta.touch("sb", table, name)
            if row is not None:
                renamed.append((table, to, row))
    for table, to, row in renamed:
        sb_desired.tables[table].rows[to] = {**row, "name": to}
        delta.touch("sb", table, to)
    for key in sorted(moved):
        put_datapath(sb_desired.tables["Datapath_Binding"], datapaths.by_key(key))
        delta.touch("sb", "Datapath_Binding", key)
    delta.flows |= ports.next_to(moved)


def remove_switches(keys: list[str], nb: Mapping[str, ReplicaTable],
                    sb: Mapping[str, ReplicaTable], datapaths: DatapathsData,
                    ports: PortsData, sb_desired: DesiredDb, delta: PortsDelta) -> bool:
    """The switches `keys` (their ports gone) removed (`remove_switch`), and the keys
    they free taken as a recompute gives them (`freed_keys`); False where that cannot
    be told."""
    freed = {datapaths.switches[key].tunnel_key for key in keys}
    for key in keys:
        for table, row_key in remove_switch(key, datapaths, ports, sb_desired):
            delta.touch("sb", table, row_key)
    return freed_keys(freed, nb, sb, datapaths, ports, sb_desired, delta)


def remove_routers(keys: list[str], nb: Mapping[str, ReplicaTable],
                   sb: Mapping[str, ReplicaTable], datapaths: DatapathsData,
                   ports: PortsData, lbs: LbData, sb_desired: DesiredDb,
                   delta: PortsDelta) -> bool:
    """The routers `keys` (their ports gone) removed (`remove_router`), and the keys
    they free taken as a recompute gives them (`freed_keys`); False where that cannot
    be told, or where SB has IGMP groups on one (a recompute deletes them: not told
    here), nothing touched."""
    igmp = sb.get("IGMP_Group")
    if igmp is not None and igmp.rows:
        bindings = existing_bindings(sb)
        gone = {bindings[key].uuid for key in keys if key in bindings}
        if any(gone.intersection(row.value("datapath")) for row in igmp.rows.values()):
            return False
    freed = {datapaths.routers[key].tunnel_key for key in keys}
    for key in keys:
        for table, row_key in remove_router(key, datapaths, ports, lbs, sb_desired):
            delta.touch("sb", table, row_key)
    return freed_keys(freed, nb, sb, datapaths, ports, sb_desired, delta)


def freed_keys(freed: set[int], nb: Mapping[str, ReplicaTable],
               sb: Mapping[str, ReplicaTable], datapaths: DatapathsData, ports: PortsData,
               sb_desired: DesiredDb, delta: PortsDelta) -> bool:
    """Datapaths deleted or disabled, their keys `freed`: a datapath asking for one of
    them takes it, with the moves that follow, as a recompute gives them (`renumber`
    of what `tunnel_keys.assign_over` moves); False where that cannot be told."""
    if not freed or not any(requested_key(dp.nb) in freed for dp in datapaths.all()):
        return True
    over = assign_over(nb, sb, datapaths)
    if over is None:
        return False
    renumber(over.moved, datapaths, ports, sb_desired, delta)
    return True


def _named(dp: Datapath, sb_desired: DesiredDb) -> list[tuple[str, Hashable]]:
    """The desired SB rows named after `dp`'s tunnel key, as (table, name)."""
    return [(table, name) for table, name, _ in _named_after(dp, dp.tunnel_key, sb_desired)]


def _named_after(dp: Datapath, key: int, sb_desired: DesiredDb) -> list[tuple[str, str, str]]:
    """The desired SB rows named after `dp`'s tunnel key, as (table, name, the name
    under `key`)."""
    names: list[tuple[str, str, str]] = []
    groups = sb_desired.tables.get("Port_Group") if dp.is_switch else None
    prefix = sb_port_group_name(dp.tunnel_key, "")
    for name in (groups.rows if groups is not None else ()):
        if isinstance(name, str) and name.startswith(prefix):
            names.append(("Port_Group", name, sb_port_group_name(key, name[len(prefix):])))
    sets = sb_desired.tables.get("Address_Set") if dp.is_router else None
    if sets is not None:
        names += [("Address_Set", router_lb_set_name(dp.tunnel_key, family),
                   router_lb_set_name(key, family)) for family in (4, 6)]
    return names
