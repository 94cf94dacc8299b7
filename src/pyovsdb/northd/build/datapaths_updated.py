"""Logical switches and routers updated in place: a switch's or a router's name,
external_ids, and the switch's `other_config` or the router's `options` keys whose
effect this module can apply to the datapath alone.

Rules kept here:
- Correctness first: what this leaves in the core data and the desired tables is what
  `build_core` and `build_extra` would build from the same NB and SB; an update this
  cannot prove it handles is refused (None) and the caller recomputes.
- Handled columns: `name`, `external_ids` and the switch's `other_config` or the
  router's `options` (the caller has the datapath's row refreshed already; other
  columns are other handlers'). A requested tunnel key changed moves the datapaths
  whose keys a recompute moves (`tunnel_keys.assign_over`, once per change: a
  datapath taking a key another holds, that one the lowest free, a race for one key
  won in build order), each with its binding, its ports, the SB rows named after its
  key (`renumber`), and its flows and
  its neighbours'), a router's `chassis` where its ports with gateway chassis are not
  one plain one (`gateway_toggled.redirect_pinned`, which takes that one's
  chassisredirect port away or gives it one; the option makes the router a gateway
  router or no longer one, or moves it: its ports' bindings and their peers' put
  again) and
  `mcast_relay` while SB has IGMP groups (without, the fixed multicast groups of the
  router and its switches are put again), and a switch's `vlan-passthru`
  where its ports (but router-type ones, whose bindings do not carry it) cannot all
  be bound again alone (`ports_incremental.rebind`), and
  its IPAM settings (`IPAM_CONFIG`) while a port of it asks IPAM for addresses or
  holds some, unless the caller gives the core's IPAM (`ipam`: then `ipam_again`
  moves the switch's allocations, every other switch's kept).
- What changes: the datapath's desired binding (its `external_ids` carry the name,
  the Neutron name, the transit switch name, a router's SNAT zone and ARP learning),
  a switch's IP_Multicast row (its snooping settings), a renamed datapath's place in
  build order (by name, then UUID), and with `vlan-passthru` the bindings of the
  switch's ports. A change of the settings (other than the name and external_ids,
  which no flow reads) has the flows of the datapath and of its neighbours through
  router ports built again (`PortsDelta.flows`); a router's MAC binding age threshold
  has `mac_binding_aging` look again (`PortsDelta.aging`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...idl.tracking import changed_columns
from ...ovsdb.changeset import RowChange
from ..desired import DesiredDb, Ref
from .core import CoreData
from .datapaths import Datapath, DatapathsData, put_datapath
from .datapaths_incremental import IPAM_CONFIG, renumber
from .delta import PortsDelta
from .gateway_toggled import redirect_pinned
from .ip_mcast import mcast_settings
from .ipam import NB_LSP_COLUMNS, parse_mac_prefix
from .ipam_incremental import asks_ipam, plan_over, write_back
from .ports import PortsData
from .ports_incremental import put_bindings, rebind, rebindable
from .ports_put import put_fixed_groups, put_router_binding
from .tunnel_keys import assign_over

COLUMNS = frozenset(("name", "external_ids", "other_config", "options"))
# Router options a change of which this module refuses (see the rules).
MCAST_RELAY = "mcast_relay"
GATEWAY = "chassis"  # (a router's: it makes it a gateway router)
TUNNEL_KEY = "requested-tnl-key"
AGE_THRESHOLD = "mac_binding_age_threshold"  # (`mac_binding_aging`'s)


def _changed_keys(old: Mapping[str, str], new: Mapping[str, str]) -> set[str]:
    return {k for k in old.keys() | new.keys() if old.get(k) != new.get(k)}


def datapaths_updated(changes: Mapping[str, RowChange[IdlRow]], router: bool,
                      datapaths: DatapathsData, ports: PortsData,
                      nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable],
                      sb_desired: DesiredDb,
                      ipam: Callable[[set[str], PortsDelta], bool] | None = None
                      ) -> PortsDelta | None:
    """The switch (or, `router`, router) updates `changes` applied in place, each in
    `COLUMNS` alone (the caller's check) and of a datapath the build has with its row
    and name as they are now (`ports_incremental.refresh_datapaths`); or None (see the
    rules)."""
    by_key = datapaths.routers if router else datapaths.switches
    config = "options" if router else "other_config"
    delta = PortsDelta()
    renamed = False
    settings: set[str] = set()
    passthru: list[str] = []
    allocating: set[str] = set()  # switches whose IPAM settings changed
    relaying: set[str] = set()  # routers whose multicast relay changed
    pinned: set[str] = set()  # routers made gateway routers or no longer, or moved
    renumbered = False  # (the keys a recompute moves, moved)
    for uuid, rc in changes.items():
        dp = by_key.get(uuid)
        if rc.old is None or rc.new is None or dp is None or dp.nb is not rc.new:
            return None
        columns = set(changed_columns(rc))
        keys = _changed_keys(getattr(rc.old, config), getattr(rc.new, config)) \
            if config in columns else set()
        if not router and keys & IPAM_CONFIG and ipam is not None:
            allocating.add(uuid)  # (`ipam` moves the switch's allocations)
        if TUNNEL_KEY in keys and not renumbered:
            over = assign_over(nb, sb, datapaths)
            if over is None:
                return None
            renumber(over.moved, datapaths, ports, sb_desired, delta)
            settings |= over.moved.keys()
            renumbered = True
            dp = by_key[uuid]
        if not _keys_ok(dp, keys - (IPAM_CONFIG if uuid in allocating else set()),
                        router, ports):
            return None
        if "vlan-passthru" in keys:
            passthru.append(uuid)
        if router and MCAST_RELAY in keys:
            relaying.add(uuid)
        if router and GATEWAY in keys:
            if not _gateway_movable(dp, ports) or not redirect_pinned(
                    dp, datapaths, ports, sb, sb_desired, delta):
                return None
            pinned.add(uuid)
        renamed = renamed or rc.old.name != rc.new.name
        if keys:
            settings.add(uuid)
        delta.aging = delta.aging or (router and AGE_THRESHOLD in keys)
        put_datapath(sb_desired.tables["Datapath_Binding"], dp)
        delta.touch("sb", "Datapath_Binding", uuid)
        if not router and keys:
            sb_desired.tables["IP_Multicast"].put(
                uuid, datapath=Ref("Datapath_Binding", uuid),
                **mcast_settings(rc.new.other_config))
            delta.touch("sb", "IP_Multicast", uuid)
    if allocating and ipam is not None and not ipam(allocating, delta):
        return None
    if relaying:  # (the fixed multicast groups of the routers and their switches)
        igmp = sb.get("IGMP_Group")
        if igmp is not None and igmp.rows:
            return None  # (the IGMP groups a relaying router takes: a recompute's)
        for key in sorted(ports.next_to(relaying)):
            put_fixed_groups(key, ports, datapaths, sb_desired, delta)
    for uuid in sorted(pinned):  # (their ports' bindings, and their peers')
        table = sb_desired.tables["Port_Binding"]
        mine = ports.by_datapath.get(uuid, [])
        for port in mine:
            put_router_binding(port, ports, table, delta)
        peers = [p for p in map(ports.peer_of, mine) if p is not None and p.is_lsp]
        put_bindings(sb, ports, peers, sb_desired, delta)
    for uuid in passthru:  # (a router-type port's binding has no vlan-passthru)
        if not rebind(sb, ports, [p.name for p in ports.by_datapath.get(uuid, [])
                                  if p.type != "router"], sb_desired, delta):
            return None
    if renamed:
        ordered = sorted(by_key.values(), key=lambda d: (d.name, d.key))
        by_key.clear()
        by_key.update((d.key, d) for d in ordered)
    delta.flows = ports.next_to(settings)
    return delta


def _gateway_movable(dp: Datapath, ports: PortsData) -> bool:
    """Whether router `dp` may become a gateway router, or stop being one, in place:
    no switch port peering one of its ports asks for a VLAN (its port with gateway
    chassis, if any, is `gateway_toggled.redirect_pinned`'s to judge)."""
    return not any(peer.is_lsp and peer.nb.tag_request is not None
                   for peer in map(ports.peer_of, ports.by_datapath.get(dp.key, []))
                   if peer is not None)


def _keys_ok(dp: Datapath, keys: set[str], router: bool, ports: PortsData) -> bool:
    """Whether the settings `keys` of `dp` (its row as it is now) changed in a way this
    module applies (see the rules)."""
    return router or not keys & IPAM_CONFIG or not any(
        asks_ipam(p.nb) for p in ports.by_datapath.get(dp.key, []) if p.is_lsp)


def ipam_again(switches: Collection[str], core: CoreData, sb: Mapping[str, ReplicaTable],
               sb_desired: DesiredDb, nb_desired: DesiredDb, delta: PortsDelta) -> bool:
    """The IPAM settings of `switches` changed (their rows refreshed in the core): the
    ports of theirs whose dynamic addresses move take the plan's (planned over these
    switches alone: `ipam_incremental.plan_over`), their bindings put again, and
    written back to NB; False (nothing touched) where a port moved cannot be bound
    again alone."""
    ports, dynamic = core.ports, core.dynamic_addresses
    plan, moving = plan_over(core, switches)
    movers = [ports.ports[name] for name in sorted(moving)]
    if not all(map(rebindable, movers)):
        return False  # (`rebind`'s own test first: nothing is touched before it)
    table = nb_desired.table("Logical_Switch_Port", NB_LSP_COLUMNS, owned=False)
    for port in movers:
        added = plan.added.get(port.name)
        port.lsp_addrs[port.n_static_addrs:] = [added] if added is not None else []
        write_back(port, plan.result, dynamic, table, delta)
    core.macs.refresh([p.name for p in movers], ports, dynamic)
    return rebind(sb, ports, [p.name for p in movers], sb_desired, delta)


def prefix_again(prefix: str, core: CoreData, sb: Mapping[str, ReplicaTable],
                 sb_desired: DesiredDb, nb_desired: DesiredDb, delta: PortsDelta) -> bool:
    """IPAM's MAC prefix made `prefix` ("xx:xx:xx", NB_Global's `mac_prefix` as the
    globals write it back): the dynamic MACs of the old prefix move, every switch
    with IPAM settings (IPAM looks at no other) or a port holding dynamic addresses
    planned again (`ipam_again`); False where a port moved cannot be bound again
    alone."""
    core.mac_prefix = parse_mac_prefix(prefix)
    core.macs.forget()  # (the MACs of the old prefix: built again with the new one)
    ports = core.ports.ports
    holding = {ports[name].dp.key for name in core.dynamic_addresses if name in ports}
    switches = [key for key, dp in core.datapaths.switches.items()  # (in build order)
                if key in holding or not IPAM_CONFIG.isdisjoint(dp.nb.other_config)]
    return ipam_again(switches, core, sb, sb_desired, nb_desired, delta)
