"""Switch ports added, deleted or updated without rebuilding the core: the common case
of an `lsp-add`, `lsp-del` or `lsp-set-addresses` of an ordinary VIF (OVN 23.09 made the
same case incremental in its `northd` node), and more.

Rules kept here:
- Correctness first: the core data and the desired SB and NB tables this leaves behind
  are what `build_core` would build from the same NB and SB contents. Whatever this
  cannot prove it handles exactly is refused (None) and the caller recomputes.
- Handled: switch ports of the `IN_PLACE_TYPES` (a gateway router's GARP entry follows
  a localnet port; an external port's SB group, `ha_groups_incremental.groups_used`;
  a VTEP port its switch's place among the VTEP switches, `PortsData.vtep_again`),
  without a parent but a nested port asking for its VLAN (a trunk's subport) or for
  any free one (its parent's lowest, `ports_switch.tags_in_use`), without a tag or
  request but a localnet's or nested port's own (written back to `tag`), mirror
  rules, requested tunnel key or "router" addresses (an HA chassis group is read
  only on an external port, as in 23.03: on any other it is carried, and a change
  of it alone moves nothing), on a switch with a datapath (or one created or deleted with
  them, as `datapaths_incremental` handles it); QoS options too (a port's queue on
  its chassis taken from those the bindings hold: `ports_switch.queues_in_use`); a VIF
  asking IPAM for addresses too, where no other port's dynamic address moves
  (`ipam_incremental`), while every dynamic address is settled (NB holds what IPAM
  decided); not sharing its name with another switch or router port, not taking over
  a binding of its name but a port's deleted from the same switch in the same change
  (`_adopted`: it keeps that binding, its key and claim, as a build does). Its port
  groups' address sets follow it
  (`groups_incremental.member_sets`); if a load balancer's port mappings name it, its
  switches before and after are rebuilt and `lb_incremental.probes_moved` moves the
  monitors. A port's binding is rebuilt from the same function a recompute uses.
- A switch connected to or disconnected from a router (a router-type port paired with
  a router port, added with it, before it or after it, or deleted with it, before it or
  after it), in the plain case `peers_incremental` takes: each binding follows its peer.
  Several routers may join one switch in one change (a cloud's routers joining its
  external network): the switch's router ports are sorted in the build's walk order
  once, with all of them (`_rewire`).
- Tunnel keys as a recompute gives them: every other port of the switch must hold its
  key in its SB binding; the new ones take keys after the highest, in name order, or,
  where one asks for a key, the build's walk tells (`port_keys`, `rekey_bindings`).
- The switch's fixed multicast groups are rebuilt from its ports, with SB's IGMP
  groups merged in (`igmp_incremental.igmp_changed`; switches made or deleted while
  there are IGMP groups: refused); the MAC bindings and FDB entries a recompute
  deletes are computed again when a port goes. The result says which desired rows
  changed, per table (`PortsDelta`), so the sync plans only those.
- A port renamed (switch or router port, nothing else of it changed for a router
  port) is deleted under its old name and added under its new one, on the same
  switch or router, as a build sees it: a binding of no port, and a port without one.
  A switch port moved between switches (the same row, or one deleted and one added
  under its name) is deleted from one and added to the other; its binding is deleted
  and inserted again there (`rebound`, `ports_retyped.recreate`), as a build does; the
  SB rows of its port groups, which list ports by switch and name, follow
  (`groups_incremental.members_moved`).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...idl.tracking import changed_columns
from ...ovsdb.changeset import RowChange
from ..desired import DesiredDb, DesiredTable, Ref
from .alloc import TunnelKeys
from .core import NB_LSP_COLUMNS, CoreData, stale_fdb
from .datapaths import DatapathsData
from .datapaths_incremental import (
    add_switch,
    new_datapath_keys,
    remove_switches,
    renumber,
)
from .delta import PortsDelta
from .gateways_incremental import (
    add_redirect,
    is_gateway,
    plain_gateway,
    plain_gateway_going,
    put_redirect_group,
    redirect_name,
    remove_redirect,
)
from .groups_incremental import members_moved
from .ha_chassis import with_ref_chassis
from .ha_groups_incremental import group_names, groups_used
from .igmp_incremental import igmp_changed
from .inputs import rows_where
from .ipam_incremental import asks_ipam, ipam_in_place, ipam_settled
from .peers_incremental import (
    connect,
    disconnect,
    name_router_port,
    named_before,
    pairable,
    router_lsp,
    router_peers,
    unpair,
)
from .port_keys import asks_key, held_space, port_keys, rekey_bindings
from .ports import (
    Port,
    PortKind,
    PortsData,
    datapath_keys,
    parse_switch_addresses,
    stale_mac_bindings,
    type_changed,
)
from .ports_addresses import lrp_networks
from .ports_lookup import bindings_of, refresh_datapaths
from .ports_mirrors import mirror_rules
from .ports_put import insert_in_build_order, put_fixed_groups, put_router_binding
from .ports_retyped import recreate, retyped_ports, settled
from .ports_router import garp_again
from .ports_switch import SwitchPortState, switch_port_binding
from .service_monitor import probed_ports, switches_of
from .walk import PortWalk

RowChanges = Mapping[str, RowChange[IdlRow]]
# Switch port types taken in place (bindings read the port alone; `lflow` builds the
# switch whole for any but a VIF): VIFs, localnet, l2gateway, remote, localport (each
# OpenStack network's metadata port), virtual (a VIP its parents claim), external.
IN_PLACE_TYPES = frozenset(("", "localnet", "localport", "virtual", "l2gateway", "remote",
                            "external", "vtep"))


def simple_lsp(row: IdlRow) -> bool:
    """Whether a switch port is one this module handles (see the module rules)."""
    kind = row.value("type")
    request, tag = row.tag_request, row.tag
    any_vlan = row.parent_name is not None and request == 0  # (the parent's next free)
    own_vlan = kind == "localnet" or (row.parent_name is not None and bool(request))
    if kind not in IN_PLACE_TYPES or (row.parent_name is not None and not own_vlan
                                      and not any_vlan) \
            or row.value("mirror_rules") or (asks_ipam(row) and kind != ""):
        return False
    if (request is not None or tag is not None) and not any_vlan and not (
            own_vlan and request and tag in (None, request)):
        return False
    return "router" not in row.addresses


class _Refused(Exception):
    pass


def _need(ok: bool) -> None:
    if not ok:
        raise _Refused


@dataclass
class _Step:
    nb: Mapping[str, ReplicaTable]
    sb: Mapping[str, ReplicaTable]
    datapaths: DatapathsData
    ports: PortsData
    names: Counter[str]
    inserted: dict[str, IdlRow] = field(default_factory=dict)  # by LSP uuid
    deleted: dict[str, IdlRow] = field(default_factory=dict)
    updated: dict[str, IdlRow] = field(default_factory=dict)
    switch_of: dict[str, IdlRow] = field(default_factory=dict)  # new LSP uuid -> new LS row
    new_switches: dict[str, IdlRow] = field(default_factory=dict)  # by LS uuid
    gone_switches: dict[str, IdlRow] = field(default_factory=dict)
    pairs: dict[str, Port] = field(default_factory=dict)  # new router LSP uuid -> its LRP
    # New router ports by name -> the switch port that named them before they came.
    named: dict[str, Port] = field(default_factory=dict)
    going: set[str] = field(default_factory=set)  # names of switch ports deleted
    renamed: set[str] = field(default_factory=set)  # LSP uuids both deleted and inserted
    # Switch ports renamed or moved (deleted and inserted, the same row) by UUID: the
    # switch each was on (their port groups' rows list them by switch and name).
    was_on: dict[str, str] = field(default_factory=dict)
    rebound: dict[str, str] = field(default_factory=dict)  # moved: name -> old binding
    localnet: set[str] = field(default_factory=set)  # switches whose localnet ports change
    gone_routers: set[str] = field(default_factory=set)  # deleted with their ports
    fresh: Collection[str] = ()  # datapaths made in place in this change
    core: CoreData | None = None  # (switch port changes: the core's IPAM)
    probed: set[str] = field(default_factory=set)  # names a health check probes through
    touched: set[str] = field(default_factory=set)  # switches whose ports change (`_apply`)


def switch_ports_changed(nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable],
                         core: CoreData, names: Counter[str], sb_desired: DesiredDb,
                         nb_desired: DesiredDb, lsp_changes: RowChanges,
                         ls_changes: RowChanges, *, ignored: frozenset[str],
                         fresh: Collection[str] = ()) -> PortsDelta | None:
    """Apply the switch port changes `lsp_changes` (with the `ports` changes of their
    switches, `ls_changes`) to the core data and the desired tables in place; what
    changed, or None (nothing touched) where a recompute is needed. `ignored`: LSP
    columns whose change moves nothing here. `names` (`port_names`) is kept up to date.
    `fresh`: datapaths made in place in this change (new routers, no binding yet)."""
    step = _Step(nb, sb, core.datapaths, core.ports, names, fresh=fresh, core=core)
    try:
        _classify(step, lsp_changes, ls_changes, ignored)
        if not (step.inserted or step.deleted or step.updated or step.new_switches
                or step.gone_switches):
            return PortsDelta()
        _check(step, core.dynamic_addresses)
        was = switches_of(step.probed, core.ports)
        delta = _apply(step, sb_desired, nb_desired)
        _need(members_moved(nb, core.datapaths, core.ports, sb_desired, step.was_on, delta))
        igmp = sb.get("IGMP_Group")
        if igmp is not None and igmp.rows:  # (those switches' groups with theirs merged)
            delta.merge(igmp_changed(core.datapaths, core.ports, sb, sb_desired,
                                     step.touched))
        delta.probed = step.probed  # (their switches: the responders' and their own)
        delta.flows |= was | switches_of(step.probed, core.ports)
        return delta
    except _Refused:
        return None


def _classify(step: _Step, lsp_changes: RowChanges, ls_changes: RowChanges,
              ignored: frozenset[str]) -> None:
    for uuid, rc in lsp_changes.items():
        old, new = rc.old, rc.new
        if old is not None and new is not None:
            cols = set(changed_columns(rc))
            if cols <= ignored or (cols <= ignored | {"ha_chassis_group"}
                                   and "external" not in (old.value("type"), new.value("type"))):
                continue  # (only an external port's binding reads its HA group)
            _need(simple_lsp(old) and simple_lsp(new))
            if "name" in cols:  # (a build finds a new port, and a binding of no port)
                step.renamed.add(uuid)
                step.deleted[uuid], step.inserted[uuid] = old, new
            else:
                step.updated[uuid] = new
        elif new is not None:
            _need(simple_lsp(new) or router_lsp(new))
            step.inserted[uuid] = new
        else:
            assert old is not None
            _need(simple_lsp(old) or router_lsp(old))
            step.deleted[uuid] = old
    added: dict[str, IdlRow] = {}
    removed: set[str] = set()
    for uuid, rc in ls_changes.items():
        old, new = rc.old, rc.new
        if old is None or new is None:  # a switch created or deleted
            row = new if new is not None else old
            assert row is not None
            if new is None:
                _need(uuid in step.datapaths.switches)
                step.gone_switches[uuid] = row
            else:
                step.new_switches[uuid] = row
        else:
            _need(set(changed_columns(rc)) <= {"ports"})
            _need(step.datapaths.switches.get(new.uuid) is not None)
        before = set(old.data["ports"]) if old is not None else set()
        after = set(new.data["ports"]) if new is not None else set()
        for u in after - before:
            _need(u not in added)  # one port on two switches: the first one keeps it
            assert new is not None
            added[u] = new
        removed.update(before - after)
    # Every port a switch gained is inserted, every one it lost is deleted; a port
    # moved between switches is both (and takes its binding along, `_adopted`). A port
    # renamed stays on its switch.
    renamed = step.renamed
    lsps = step.nb["Logical_Switch_Port"].rows
    for uuid in added.keys() & removed:
        old_row = step.deleted.get(uuid) or _core_row(step, uuid)
        new_row = step.updated.pop(uuid, None) or lsps.get(uuid)
        _need(uuid not in renamed and old_row is not None and new_row is not None
              and simple_lsp(old_row) and simple_lsp(new_row)
              and old_row.value("name") == new_row.value("name"))
        assert old_row is not None and new_row is not None
        step.deleted[uuid], step.inserted[uuid] = old_row, new_row
    _need(set(added) == set(step.inserted) - renamed
          and removed == set(step.deleted) - renamed and not renamed & (added.keys() | removed))
    for uuid in renamed:
        port = step.ports.ports.get(step.deleted[uuid].value("name"))
        switch = step.nb["Logical_Switch"].rows.get(port.dp.key) if port is not None else None
        _need(switch is not None and port is not None and port.nb.uuid == uuid)
        assert switch is not None
        added[uuid] = switch
    step.switch_of = added
    _need(all(uuid not in added and uuid not in removed for uuid in step.updated))


def _core_row(step: _Step, uuid: str) -> IdlRow | None:
    """The NB row the core holds for switch port `uuid` (found by its current name)."""
    row = step.nb["Logical_Switch_Port"].rows.get(uuid)
    port = step.ports.ports.get(row.value("name")) if row is not None else None
    return port.nb if port is not None and port.is_lsp and port.nb.uuid == uuid else None


def _check(step: _Step, core_dynamic: Mapping[str, str | None]) -> None:
    nb, sb, ports = step.nb, step.sb, step.ports
    igmp, lbs = sb.get("IGMP_Group"), nb.get("Load_Balancer")
    if igmp is not None and igmp.rows:  # (merged into the switches' groups after)
        _need(not (step.new_switches or step.gone_switches))
    _need(ipam_settled(core_dynamic, ports, nb.get("Logical_Switch_Port")))
    if lbs is not None:  # (a port a health check probes through: its monitors move)
        mappings = lbs.col_index["ip_port_mappings"]
        probed = {n for lb in lbs.rows.values() if lb.value_at(mappings) for n in probed_ports(lb)}
        step.probed = probed.intersection(r.value("name") for rows in (
            step.inserted, step.deleted, step.updated) for r in rows.values())
    switches: set[str] = set()
    step.going = {row.value("name") for row in step.deleted.values()}
    again = {row.value("name") for uuid, row in step.inserted.items()
             if uuid not in step.renamed}  # (names deleted and added again: `_adopted`)
    for uuid, row in step.inserted.items():
        name = row.value("name")
        _need(step.names[name] == 1 and (name not in ports.ports or name in step.going))
        switches.add(step.switch_of[uuid].uuid)
        if row.value("type") == "localnet":
            step.localnet.add(step.switch_of[uuid].uuid)
        if row.value("type") == "router":  # a switch connected to a router
            lrp = pairable(row, ports)
            if lrp is None and row.options.get("router-port", "") not in ports.ports:
                continue  # (naming no port yet: it pairs when that one comes)
            _need(lrp is not None and all(p is not lrp for p in step.pairs.values()))
            assert lrp is not None
            step.pairs[uuid] = lrp
    for uuid, row in [*step.deleted.items(), *step.updated.items()]:
        name = row.value("name")
        port = ports.ports.get(name)
        _need(port is not None and port.is_lsp and port.nb.uuid == uuid
              and (name not in ports.recreated or uuid in step.updated))
        # Deleted: no other port of that name takes its place, but one added again
        # under it in this change.
        _need(step.names[name] == (1 if uuid in step.updated or name in again else 0))
        assert port is not None
        if uuid in step.inserted:  # (renamed or moved)
            step.was_on[uuid] = port.dp.key
        switches.add(port.dp.key)
        if "localnet" in (port.type, row.value("type")):
            step.localnet.add(port.dp.key)
        if port.type == "router":  # a switch disconnected from a router
            lrp = ports.peer_of(port)
            _need(lrp is None or lrp.is_lrp)


def _apply(step: _Step, sb_desired: DesiredDb, nb_desired: DesiredDb) -> PortsDelta:
    ports, datapaths = step.ports, step.datapaths
    delta = PortsDelta()
    if step.new_switches:
        moved: dict[str, int] = {}  # (datapaths holding a key a new switch asks for)
        keys = new_datapath_keys(list(step.new_switches.values()), datapaths, step.sb,
                                 step.gone_switches.keys(), (), step.fresh, moved, step.nb)
        _need(keys is not None)
        assert keys is not None
        renumber(moved, datapaths, ports, sb_desired, delta)
        for uuid, row in step.new_switches.items():
            add_switch(row, keys[uuid], datapaths, ports, sb_desired)
            delta.touch("sb", "Datapath_Binding", uuid)
            delta.touch("sb", "IP_Multicast", uuid)
    # The switches involved, with their NB rows as they are now.
    new_ls: dict[str, IdlRow] = {row.uuid: row for row in step.switch_of.values()}
    nb_ls = step.nb["Logical_Switch"].rows
    touched: set[str] = set(new_ls) | step.new_switches.keys()
    for row in [*step.deleted.values(), *step.updated.values()]:
        touched.add(ports.ports[row.value("name")].dp.key)
    gone = step.gone_switches.keys()
    touched -= gone
    step.touched = touched
    _need(refresh_datapaths(touched, datapaths.switches, nb_ls, ports))
    # Every binding of the ports of these switches and of the changed names.
    names = {row.value("name") for row in step.inserted.values()}
    for key in touched:
        names.update(p.name for p in ports.by_datapath.get(key, []))
    dp_keys, found = datapath_keys(step.sb), bindings_of(step.sb, names)
    adopted = _adopted(step, found, dp_keys)
    doomed_binding = bool(step.rebound) or any(
        row.value("name") in found.keys() - adopted.keys() for row in step.deleted.values())
    repaired: list[Port] = []  # router ports paired or unpaired: their bindings change
    rewired: set[str] = set()  # switches whose router ports changed
    for uuid, row in step.deleted.items():
        port = ports.ports.pop(row.value("name"))
        ports.bound(port.name)
        ports.chassis_asked.forget(port.name)
        ports.by_datapath[port.dp.key].remove(port)
        if port.type == "router":
            rewired.add(port.dp.key)
            lrp = disconnect(port, ports)
            if lrp is not None:
                repaired.append(lrp)
        delta.touch("sb", "Port_Binding", port.name)
        sb_desired.tables["Port_Binding"].rows.pop(port.name, None)
        lsp_nb = nb_desired.tables.get("Logical_Switch_Port")
        if lsp_nb is not None and lsp_nb.rows.pop(uuid, None) is not None:
            delta.touch("nb", "Logical_Switch_Port", uuid)
    changed: list[Port] = []
    used = group_names([*step.deleted.values(), *step.inserted.values(), *step.updated.values(),
                        *(ports.ports[r.value("name")].nb for r in step.updated.values())])
    retyped = retyped_ports(step.updated.values(), found)  # (their bindings inserted again)
    for name in ports.recreated & {r.value("name") for r in step.updated.values()} - retyped.keys():
        settled(name, ports, sb_desired.tables["Port_Binding"])  # (its new binding in SB)
    for row in step.updated.values():
        old = ports.ports[row.value("name")]
        port = Port(old.name, old.dp, PortKind.SWITCH, row, tunnel_key=old.tunnel_key)
        parse_switch_addresses(port)
        ports.ports[port.name] = port
        members = ports.by_datapath[port.dp.key]
        members[members.index(old)] = port
        changed.append(port)
    new_ports: list[Port] = []
    rekeyed: list[Port] = []  # (held ports whose keys a port asking for one moves)
    for uuid, row in step.inserted.items():
        dp = datapaths.switches[step.switch_of[uuid].uuid]
        port = Port(row.value("name"), dp, PortKind.SWITCH, row)
        parse_switch_addresses(port)
        new_ports.append(port)
    # Other ports keep their keys (held by their bindings), then new ones take keys.
    for port in new_ports:  # (taking over the binding of their name: its key, first)
        pb = adopted.get(port.name)
        if pb is not None:
            port.sb, port.tunnel_key = pb, pb.value("tunnel_key")
    for key in sorted(touched):
        space = _held_keys(step, key, found, dp_keys, retyped, asking=True)
        kept = [p for p in new_ports if p.sb is not None and p.dp.key == key]
        _need(all(space.add(p.tunnel_key) for p in kept))
        mine = sorted((p for p in [*new_ports, *map(ports.ports.get, retyped)]
                       if p is not None and p.dp.key == key and p.sb is None),
                      key=lambda p: (p.name, p.nb.uuid))
        held = [p for p in ports.by_datapath.get(key, []) if p.name not in retyped]
        _need(not kept or not any(map(asks_key, [*held, *mine, *kept])))
        if not any(map(asks_key, [*held, *mine])):
            for p in mine:
                p.tunnel_key = _allocate(space)
            continue
        walked = port_keys(held, mine, datapaths.vxlan_mode)  # (one asks: the build's walk)
        _need(walked is not None)
        rekeyed += [p for p in walked or () if p not in changed]
    recreate(retyped, ports, sb_desired, delta)
    for port in new_ports:
        insert_in_build_order(ports, port)
        if port.sb is None:  # (no binding: checked above)
            ports.unbound.add(port.name)
        changed.append(port)
        lrp = step.pairs.get(port.nb.uuid)
        if lrp is not None:
            connect(port, lrp, ports)
            repaired.append(lrp)
            rewired.add(port.dp.key)
        elif port.type == "router":
            name_router_port(port, ports)
    recreate(step.rebound, ports, sb_desired, delta)  # (their old bindings: replaced)
    _rewire(step, rewired, sb_desired, delta)
    for key in step.localnet - gone:
        ports.localnet_ports[key] = [p for p in ports.by_datapath.get(key, [])
                                     if p.type == "localnet"]
        if not ports.localnet_ports[key]:
            del ports.localnet_ports[key]
        for name in garp_again(key, ports, sb_desired.tables["Port_Binding"]):
            delta.touch_unread(name)
    gone_names = {r.value("name") for r in step.deleted.values()}
    assert step.core is not None
    _need(ipam_in_place(changed, gone_names, touched, step.core, nb_desired, delta))
    vtep = ports.vtep_again(touched, changed)
    _need(vtep is not None)
    delta.flows |= vtep or set()
    put_bindings(step.sb, step.ports, changed, sb_desired, delta, nb_desired)
    _need(rekey_bindings(rekeyed, sb_desired.tables["Port_Binding"], delta))
    groups_used(used, ports, sb_desired, delta)  # (external ports' groups)
    for lrp in repaired:  # (a gateway port's chassisredirect port reads its peer too)
        cr = ports.ports.get(lrp.cr_port or "")
        for p in (lrp, cr) if cr is not None else (lrp,):
            put_router_binding(p, ports, sb_desired.tables["Port_Binding"], delta)
    for key in sorted(touched):
        put_fixed_groups(key, ports, datapaths, sb_desired, delta)
    _need(remove_switches(sorted(gone), step.nb, step.sb, datapaths, ports, sb_desired, delta))
    if doomed_binding:
        _cleanup_mac_bindings(step, sb_desired, delta)
    _cleanup_fdb(step, sb_desired, delta)
    return delta


def _adopted(step: _Step, found: Mapping[str, list[IdlRow]], dp_keys: Mapping[str, str]
             ) -> dict[str, IdlRow]:
    """The new ports that take over the binding of their name (by name: the binding),
    as a build does for a port in NB and SB alike: only one deleted in this change and
    added again on the same switch (`lsp-del p -- lsp-add sw p`, a pod made again
    under its name), its one binding of the same type (`ports.type_changed`). One
    added on another switch (moved) is a new port there whose binding replaces the old
    one (`rebound`: deleted and inserted, as a build does). Any other port finding a
    binding of its name is refused."""
    out: dict[str, IdlRow] = {}
    for uuid, row in step.inserted.items():
        name = row.value("name")
        pbs = found.get(name)
        if not pbs:
            continue
        _need(len(pbs) == 1 and name in step.going and uuid not in step.renamed
              and not type_changed(pbs[0], row))
        if dp_keys.get(pbs[0].value("datapath")) != step.switch_of[uuid].uuid:
            step.rebound[name] = pbs[0].uuid
        else:
            out[name] = pbs[0]
    return out


def _rewire(step: _Step, rewired: set[str], sb_desired: DesiredDb, delta: PortsDelta
            ) -> None:
    """Switches `rewired` gained or lost router ports: theirs in walk order again."""
    if not rewired:
        return
    delta.rewired |= rewired
    walk = PortWalk(step.sb, step.ports, step.datapaths)
    for key in rewired:
        walk.sort_ports(step.ports.router_ports.get(key, []))
    # (router groups, so the `ref_chassis` of groups of more than one chassis, follow
    # switches' router ports)
    groups = sb_desired.tables.get("HA_Chassis_Group")
    if groups is not None and with_ref_chassis(groups):
        delta.touch("sb", "HA_Chassis_Group")


def _held_keys(step: _Step, key: str, found: Mapping[str, list[IdlRow]],
               dp_keys: Mapping[str, str], retyped: Collection[str],
               asking: bool = False) -> TunnelKeys:
    """`port_keys.held_space` of datapath `key`, or a recompute."""
    space = held_space(step.ports.by_datapath.get(key, []), key, found, dp_keys, retyped,
                       step.ports.retyped, step.datapaths.vxlan_mode, asking)
    _need(space is not None)
    assert space is not None
    return space


def _allocate(space: TunnelKeys) -> int:
    key = space.allocate()
    _need(key is not None)
    assert key is not None
    return key


def rebindable(p: Port) -> bool:
    """Whether a port's binding can be put again alone: no VLAN tag to write back."""
    return p.is_lsp and simple_lsp(p.nb) and (p.nb.tag == p.nb.tag_request or (
        p.nb.tag_request == 0 and p.nb.tag is not None))


def rebind(sb: Mapping[str, ReplicaTable], ports: PortsData, names: Iterable[str],
           sb_desired: DesiredDb, delta: PortsDelta) -> bool:
    """The bindings of the switch ports `names` (those there) put again as they are (a
    chassis they ask for came or went); False, nothing done, where one is not simple."""
    found = [ports.ports[n] for n in sorted(names) if n in ports.ports]
    if simple := all(map(rebindable, found)):
        put_bindings(sb, ports, found, sb_desired, delta)
    return simple


def put_bindings(sb: Mapping[str, ReplicaTable], ports: PortsData, changed: list[Port],
                  sb_desired: DesiredDb, delta: PortsDelta,
                  nb_desired: DesiredDb | None = None) -> None:
    """The bindings of the switch ports `changed` put again (and the VLAN tags they
    request written back to NB, into `nb_desired`)."""
    state = SwitchPortState.for_ports(sb, ports, changed)
    table = sb_desired.tables["Port_Binding"]
    mirrors = sb_desired.tables.get("Mirror") or DesiredTable("Mirror", ())
    for port in changed:
        values = switch_port_binding(port, ports, state)
        _need(not state.new_tags or nb_desired is not None)
        table.put(port.name, logical_port=port.name,
                  datapath=Ref("Datapath_Binding", port.dp.key),
                  tunnel_key=port.tunnel_key, up=[False],
                  mirror_rules=mirror_rules(port, mirrors), **values)
        delta.touch("sb", "Port_Binding", port.name)
    if state.new_tags and nb_desired is not None:
        lsp = nb_desired.table("Logical_Switch_Port", NB_LSP_COLUMNS, owned=False)
        for uuid, tag in sorted(state.new_tags.items()):
            lsp.set(uuid, tag=[tag])
            delta.touch("nb", "Logical_Switch_Port", uuid)


def _cleanup_mac_bindings(step: _Step, sb_desired: DesiredDb, delta: PortsDelta) -> None:
    """23.03's `cleanup_mac_bindings`, run because a binding goes."""
    desired = sb_desired.table("MAC_Binding", (), owned=False)
    desired.delete = stale_mac_bindings(step.sb, step.datapaths, step.ports)
    delta.touch("sb", "MAC_Binding")


def _cleanup_fdb(step: _Step, sb_desired: DesiredDb, delta: PortsDelta) -> None:
    """23.03's `cleanup_stale_fdb_entries`, again over the ports as they are now."""
    table = step.sb.get("FDB")
    old = sb_desired.tables.get("FDB")
    if (table is None or not table.rows) and old is None:
        return
    doomed = stale_fdb(table, step.datapaths, step.ports) if table is not None else set()
    if doomed or old is not None:
        sb_desired.table("FDB", (), owned=False).delete = doomed
        delta.touch("sb", "FDB")


# Router ports. Their options a builder other than the flows reads beyond the port's
# own binding (`router_port_binding` reads the rest): a delegated prefix. (Its gateway
# chassis or NB HA chassis group `gateways_incremental` judges.)
LRP_REFUSED_OPTIONS = ("prefix", "prefix_delegation")


def _simple_lrp(row: IdlRow) -> bool:
    """Whether this module handles a router port."""
    return not any(k in row.options for k in LRP_REFUSED_OPTIONS)


def router_ports_changed(nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable],
                         datapaths: DatapathsData, ports: PortsData, names: Counter[str],
                         sb_desired: DesiredDb, lrp_changes: RowChanges,
                         lr_changes: RowChanges, lsp_changes: RowChanges | None = None
                         ) -> PortsDelta | None:
    """Router ports added to or deleted from routers (`lrp-add`, `lrp-del`, on a router
    without multicast relay, whose name no peer names (the static MAC bindings and BFD
    sessions naming them are the caller's: `ports_static_mac.named_keys`); a distributed
    gateway port in `gateways_incremental`'s plain case; of a router deleted, all of them,
    the caller deleting it after), applied to the core data and the desired tables in place;
    what changed, or None where a recompute is needed. (Which VIPs of its load balancers a
    router answers for follows its networks: the caller builds the load balancer data
    again.) A port added with the switch port that names it, or deleted with its switch
    port, in `lsp_changes`, is taken here without its peer: the switch port's handler
    (`switch_ports_changed`) pairs them, or unpairs them, next."""
    step = _Step(nb, sb, datapaths, ports, names)
    try:
        added, removed = _classify_lrps(step, lrp_changes, lr_changes, lsp_changes or {},
                                        sb_desired)
        if not added and not removed:
            return PortsDelta()
        return _apply_lrps(step, added, removed, sb_desired)
    except _Refused:
        return None


def _classify_lrps(step: _Step, lrp_changes: RowChanges, lr_changes: RowChanges,
                   lsp_changes: RowChanges, sb_desired: DesiredDb
                   ) -> tuple[dict[str, IdlRow], dict[str, IdlRow]]:
    """The LRPs inserted (by UUID: their router's new row) and deleted (their row)."""
    owner: dict[str, IdlRow] = {}
    lost: set[str] = set()
    for rc in lr_changes.values():
        old, new = rc.old, rc.new
        # (a router created with its ports: `on_nb_lr` made it; deleted with them: its
        # ports go here first, then the caller deletes it)
        lr = new if new is not None else old
        assert lr is not None
        before = set(old.data["ports"]) if old is not None else set()
        if new is None and not before:
            continue  # (a router without ports: `on_nb_lr` deleted it)
        _need(lr.uuid in step.datapaths.routers and "mcast_relay" not in lr.options)
        if new is None:
            step.gone_routers.add(lr.uuid)
            lost.update(before)
            continue
        after = set(new.data["ports"])
        for u in after - before:
            owner[u] = new
        lost.update(before - after)
    added: dict[str, IdlRow] = {}
    removed: dict[str, IdlRow] = {}
    for uuid, rc in lrp_changes.items():
        if rc.old is not None and rc.new is not None:  # an update: a rename alone
            _need(set(changed_columns(rc)) == {"name"} and _simple_lrp(rc.new))
            port = step.ports.ports.get(rc.old.value("name"))
            lr = step.nb["Logical_Router"].rows.get(port.dp.key) if port is not None else None
            _need(lr is not None and uuid not in owner and uuid not in lost
                  and uuid in lr.data["ports"])
            assert lr is not None
            owner[uuid] = lr  # (a build finds a new port, and a binding of no port)
            lost.add(uuid)
            added[uuid], removed[uuid] = rc.new, rc.old
            continue
        row = rc.new if rc.new is not None else rc.old
        assert row is not None
        _need(_simple_lrp(row))
        (added if rc.new is not None else removed)[uuid] = row
    _need(set(added) == set(owner) and set(removed) == lost)
    going_lrps = {row.value("name") for row in removed.values()}
    for uuid, row in added.items():
        _need(not is_gateway(row) or plain_gateway(
            row, step.datapaths.routers[owner[uuid].uuid], step.ports, step.names,
            sb_desired, going_lrps))
        name = row.value("name")
        _need(step.names[name] == 1 and name not in step.ports.ports
              and lrp_networks(row.mac, row.networks) is not None)
        added[uuid] = owner[uuid]
    # Switch ports deleted in this change: a router port may go with its peer.
    going = step.going = {rc.old.value("name") for rc in lsp_changes.values()
                          if rc.new is None and rc.old is not None}
    for uuid, row in removed.items():
        port = step.ports.ports.get(row.value("name"))
        _need(port is not None and port.is_lrp and port.nb.uuid == uuid
              and step.names[port.name] == 0)
        assert port is not None
        nb_groups = step.nb.get("HA_Chassis_Group")
        _need(port.cr_port is None or plain_gateway_going(
            port, step.nb["Logical_Router"].rows.get(port.dp.key), step.ports,
            nb_groups.rows if nb_groups is not None else None))
        peer = step.ports.peer_of(port)  # (staying, it is unpaired)
        _need(peer is None or peer.name in going or peer.is_lrp  # (`router_peers`)
              or (peer.is_lsp and router_lsp(peer.nb)))
    for uuid in added:
        row = step.nb["Logical_Router_Port"].rows[uuid]
        lsp = named_before(row, step.ports, going)
        _need(lsp is not False and (not isinstance(lsp, Port) or all(
            other.dp is not lsp.dp for other in step.named.values())))
        if isinstance(lsp, Port):
            step.named[row.name] = lsp
    # (Router ports naming them as their peer pair below, static MAC bindings and BFD
    # sessions naming them are the caller's, router-type switch ports pair either way.)
    return added, removed


# NB columns the handlers here look rows up by (the replicas keep an index of each,
# named as the column, where `graph.wire` adds them; without one, a walk of the rows).
NB_INDEXES = {"Logical_Router_Port": "peer", "Static_MAC_Binding": "logical_port",
              "BFD": "logical_port", "Logical_Router_Static_Route": "output_port",
              "NAT": "type"}  # (the last for `lr_arp_resolve.routes_asked`)


def _apply_lrps(step: _Step, added: dict[str, IdlRow], removed: dict[str, IdlRow],
                sb_desired: DesiredDb) -> PortsDelta:
    ports, datapaths = step.ports, step.datapaths
    delta = PortsDelta()
    lrp_rows = step.nb["Logical_Router_Port"].rows
    touched = {row.uuid for row in added.values()}
    touched.update(ports.ports[row.name].dp.key for row in removed.values())
    touched -= step.gone_routers
    _need(refresh_datapaths(touched, datapaths.routers, step.nb["Logical_Router"].rows,
                            ports))
    names = {p.name for key in touched for p in ports.by_datapath.get(key, [])}
    names.update(lrp_rows[u].name for u in added)
    names.update(n for row in removed.values()
                 for n in (row.name, ports.ports[row.name].cr_port) if n is not None)
    names.update(redirect_name(lrp_rows[u].name) for u in added if is_gateway(lrp_rows[u]))
    found = bindings_of(step.sb, names)
    dp_keys = datapath_keys(step.sb)
    for uuid in added:
        _need(lrp_rows[uuid].name not in found)  # taking over a binding: recompute
    doomed_binding = False
    relisted: list[Port] = []  # switch ports paired or unpaired: their bindings change
    rewired: set[str] = set()
    for row in removed.values():
        port = ports.ports[row.name]
        lsp = ports.peer_of(port)
        if lsp is not None and lsp.is_lsp and lsp.name not in step.going:
            relisted.append(unpair(lsp, ports))
            rewired.add(lsp.dp.key)
        if port.cr_port is not None:
            doomed_binding |= port.cr_port in found
            remove_redirect(port, ports, sb_desired, delta)
        del ports.ports[row.name]
        ports.bound(port.name)
        ports.by_datapath[port.dp.key].remove(port)
        sb_desired.tables["Port_Binding"].rows.pop(port.name, None)
        delta.touch("sb", "Port_Binding", port.name)
        doomed_binding |= port.name in found
    new_ports: list[Port] = []
    rekeyed: list[Port] = []  # (ports whose keys a port asking for one moves)
    for key in sorted(touched):
        space = _held_keys(step, key, found, dp_keys, (), asking=True)
        dp, held = datapaths.routers[key], list(ports.by_datapath.get(key, []))
        rows = sorted((lrp_rows[u] for u, lr in added.items() if lr.uuid == key),
                      key=lambda r: (r.name, r.uuid))
        mine: list[Port] = []
        for row in rows:
            mine.append(Port(row.name, dp, PortKind.ROUTER, row,
                             networks=lrp_networks(row.mac, row.networks)))
            if is_gateway(row):
                _need(redirect_name(row.name) not in found)
                mine.append(add_redirect(mine[-1], ports))
        if any(map(asks_key, [*held, *mine])):  # (the build's walk over its ports)
            moved = port_keys(held, mine, datapaths.vxlan_mode)
            _need(moved is not None)
            rekeyed += moved or ()
        else:
            for p in mine:
                p.tunnel_key = _allocate(space)
        new_ports += mine
    table = sb_desired.tables["Port_Binding"]
    for port in new_ports:
        insert_in_build_order(ports, port)
        ports.unbound.add(port.name)  # (no binding: checked above)
        lsp = step.named.get(port.name) if port.is_lrp else None
        if lsp is not None:
            connect(lsp, port, ports)
            relisted.append(lsp)
            rewired.add(lsp.dp.key)
    gone = {row.name for row in removed.values()}  # (router ports naming these: peers)
    peered = router_peers([p for p in new_ports if p.is_lrp], gone, rows_where(
        step.nb["Logical_Router_Port"], "peer", [(n,) for n in gone | {p.name for p in new_ports}]),
        ports)
    _need(peered is not None)
    _rewire(step, rewired, sb_desired, delta)
    put_bindings(step.sb, step.ports, relisted, sb_desired, delta)
    for key in sorted(rewired | touched):  # (a router's groups: its ports that flood)
        put_fixed_groups(key, ports, datapaths, sb_desired, delta)
    for port in [*new_ports, *(peered or ())]:
        put_router_binding(port, ports, table, delta)
        if port.is_cr:
            for group_table, row_key in put_redirect_group(port, sb_desired):
                delta.touch("sb", group_table, row_key)
    _need(rekey_bindings(rekeyed, table, delta))
    if doomed_binding:
        _cleanup_mac_bindings(step, sb_desired, delta)
    _cleanup_fdb(step, sb_desired, delta)
    return delta
