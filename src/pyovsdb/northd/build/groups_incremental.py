"""Port groups and address sets changed in place: a port group created, deleted or
given other ports or another name, an NB address set created, deleted or given other
addresses, without rebuilding the extra tables.

Rules kept here:
- Correctness first: what this leaves in the desired tables is what `build_extra`
  builds from the same NB (`build_port_groups`, `build_address_sets`). A change this
  cannot prove it handles is refused (None) and the caller recomputes.
- A port group's ports are found through the core's ports (by name, then the same
  NB row; ports added or deleted in the same run are already there or gone): a
  port the core does not have under that row is refused. Its SB rows (`<switch
  key>_<name>`, one per switch it has ports on) and its `<name>_ip4`/`_ip6` address
  sets are built again; the old rows are those desired under its old name, on the
  switches its old ports were on (a switch gone in the same run took its rows with it:
  `datapaths_incremental.remove_switch`).
- A group whose ports alone changed (none moved or renamed) is planned from the ports
  added and taken away: its rows on their switches, from the rows desired now, and,
  where none was taken away, its sets as they were with the new ports' addresses
  (an ovn-kubernetes pod joins groups holding every pod of the cluster).
- A switch port updated in place changes the address sets of the groups it is in
  (`member_sets`); one renamed or moved to another switch, their SB rows, which list
  ports by switch and name (`members_moved`).
- Derived address set names are refused where another source has the same name (an
  NB address set wins over a port group's or a router's set, `svc_monitor_mac` is
  northd's): a port group's set named as an NB set, an NB set named as a router's
  set or `svc_monitor_mac`, or as a port group's in a run where groups change (in
  one where none does, the NB set's addresses are the set's, and the group's are
  again once it goes).
  An NB address set renamed is refused (flows of NAT rules name their sets).
- Flows: a port group's ACLs apply on the switches it has ports on; the switches that
  gained or lost the group (all of them if it was renamed: nothing else names it) are
  named for `lflow`. An address set's addresses reach no flow (flows name the set).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...idl.tracking import changed_columns
from ...ovsdb.changeset import RowChange
from ..desired import DesiredDb, DesiredTable
from .address_sets import MONITOR_MAC_SET, port_group_addresses, port_ips
from .datapaths import DatapathsData
from .delta import PortsDelta
from .port_groups import sb_port_group_name
from .ports import PortsData

RowChanges = Mapping[str, RowChange[IdlRow]]
# Port group columns whose change this handles (`acls` is the flows' alone).
PG_COLUMNS = frozenset(("ports", "name", "acls", "external_ids"))
AS_COLUMNS = frozenset(("addresses", "external_ids"))


class _Refused(Exception):
    pass


def _need(ok: object) -> None:
    if not ok:
        raise _Refused


def groups_changed(nb: Mapping[str, ReplicaTable], datapaths: DatapathsData, ports: PortsData,
                   sb_desired: DesiredDb, pg_changes: RowChanges, as_changes: RowChanges,
                   ls_changes: RowChanges, lsp_changes: RowChanges) -> PortsDelta | None:
    """The port group and NB address set changes applied to the desired tables in
    place; None (nothing touched) where a recompute is needed."""
    delta = PortsDelta()
    sets = sb_desired.tables["Address_Set"]
    groups = sb_desired.tables["Port_Group"]
    try:
        nb_sets = nb.get("Address_Set")
        nb_set_names = {r.name for r in nb_sets.rows.values()} \
            if nb_sets is not None and pg_changes else set()
        left = {str(u): key for key, rc in ls_changes.items() if rc.old is not None
                for u in rc.old.value("ports")}
        lsps = nb.get("Logical_Switch_Port")
        plans = [_members_changed(rc, nb_set_names, datapaths, ports, groups, sets, left,
                                  lsp_changes, lsps)
                 or _plan_group(rc, nb_set_names, datapaths, ports, groups, left)
                 for rc in pg_changes.values()]
        named = [n for old, new, _, _ in plans for n in {p[0] for p in (old, new) if p}]
        _need(len(named) == len(set(named)))  # (a name passed from one group to another)
        _check_sets(nb, as_changes, bool(pg_changes))
    except _Refused:
        return None
    for old, new, renamed, _ in plans:
        for placement in (old, new):
            if placement is None:
                continue
            name, switches = placement
            for key in switches:
                row = sb_port_group_name(datapaths.switches[key].tunnel_key, name)
                groups.rows.pop(row, None)
                delta.touch("sb", "Port_Group", row)
            for family in ("ip4", "ip6"):
                sets.rows.pop(f"{name}_{family}", None)
                delta.touch("sb", "Address_Set", f"{name}_{family}")
        if new is not None:
            name, switches = new
            for key, names in switches.items():
                row = sb_port_group_name(datapaths.switches[key].tunnel_key, name)
                groups.put(row, name=row, ports=sorted(names))
        was = old[1].keys() if old is not None else set()
        now = new[1].keys() if new is not None else set()
        delta.flows |= (was | now) if renamed else (was ^ now)
    for rc, (_, _, _, gained) in zip(pg_changes.values(), plans, strict=True):
        if rc.new is None:
            continue
        if gained is not None:  # (ports added alone: the sets as they were, with theirs)
            for family, grown in zip(("ip4", "ip6"), gained, strict=True):
                name = f"{rc.new.name}_{family}"
                sets.put(name, name=name, addresses=grown)
            continue
        v4, v6 = port_group_addresses(rc.new)
        for family, addresses in (("ip4", v4), ("ip6", v6)):
            name = f"{rc.new.name}_{family}"
            sets.put(name, name=name, addresses=sorted(set(addresses)))
    for rc in as_changes.values():
        if rc.old is not None:
            sets.rows.pop(rc.old.name, None)
            delta.touch("sb", "Address_Set", rc.old.name)
        if rc.new is not None:
            sets.put(rc.new.name, name=rc.new.name, addresses=sorted(set(rc.new.addresses)))
            delta.touch("sb", "Address_Set", rc.new.name)
    kept = {rc.new.name for rc in as_changes.values() if rc.new is not None}
    for rc in as_changes.values():  # (a group's set that an NB set of its name hid)
        if rc.old is not None and rc.old.name not in kept:
            _group_set_again(nb, rc.old.name, sets)
    return delta


def _group_set_again(nb: Mapping[str, ReplicaTable], name: str, sets: DesiredTable) -> None:
    """The `_ip4`/`_ip6` address set `name` of a port group, if one has that name."""
    family, pgs = name[-4:], nb.get("Port_Group")
    if family not in ("_ip4", "_ip6") or pgs is None:
        return
    pg = next((r for r in pgs.rows.values() if r.name == name[:-4]), None)
    if pg is not None:
        v4, v6 = port_group_addresses(pg)
        sets.put(name, name=name, addresses=sorted(set(v4 if family == "_ip4" else v6)))


Placement = tuple[str, dict[str, set[str]]]  # a group's name, and its ports per switch


# A group's old and new placement, whether it was renamed, and (ports added alone) its
# sets' IPv4 and IPv6 addresses (those it had and the new ports').
Plan = tuple[Placement | None, Placement | None, bool, tuple[list[str], list[str]] | None]


def _members_changed(rc: RowChange[IdlRow], nb_set_names: set[str], datapaths: DatapathsData,
                     ports: PortsData, groups: DesiredTable, sets: DesiredTable,
                     left: Mapping[str, str], lsp_changes: RowChanges,
                     lsps: ReplicaTable | None) -> Plan | None:
    """A group whose ports alone changed, planned from the ports added and taken away
    (not from all of its ports): its rows on the switches those were or are on, from
    the rows desired now. None where that does not hold and `_plan_group` decides: a
    port moved or renamed, one the core does not have, its sets named as NB sets."""
    if rc.old is None or rc.new is None or set(changed_columns(rc)) - {"ports", "acls"} \
            or f"{rc.new.name}_ip4" in nb_set_names or f"{rc.new.name}_ip6" in nb_set_names:
        return None
    was, now = set(rc.old.value("ports")), set(rc.new.value("ports"))
    for uuid, lc in lsp_changes.items():
        if uuid in was and lc.old is not None and lc.new is not None \
                and lc.old.name != lc.new.name:
            return None  # (a member renamed: its rows list it by name)
    found: dict[str, tuple[str, str, bool]] = {}  # port UUID -> (name, switch, added)
    for uuid in was ^ now:
        change = lsp_changes.get(uuid)
        gone = change is not None and change.new is None
        if gone:  # (deleted in this run: its switch's listing lost it)
            assert change is not None and change.old is not None
            if uuid in now or uuid not in left:
                return None
            found[uuid] = (change.old.name, left[uuid], False)
            continue
        row = lsps.rows.get(uuid) if lsps is not None else None  # (not deleted: as now)
        port = ports.ports.get(row.name) if row is not None else None
        if port is None or not port.is_lsp or port.nb.uuid != uuid \
                or left.get(uuid, port.dp.key) != port.dp.key:
            return None  # (not the core's, or moved)
        found[uuid] = (port.name, port.dp.key, uuid in now)
    name = rc.new.name
    old: dict[str, set[str]] = {}
    new: dict[str, set[str]] = {}
    for key in {switch for _, switch, _ in found.values()}:
        dp = datapaths.switches.get(key)
        if dp is None:
            continue  # (a switch gone: its rows went with it)
        row_name = sb_port_group_name(dp.tunnel_key, name)
        desired = groups.rows.get(row_name)
        members = set(desired["ports"]) if desired is not None else set()
        if desired is not None:
            old[key] = set()
        members -= {n for n, k, added in found.values() if k == key and not added}
        members |= {n for n, k, added in found.values() if k == key and added}
        if members:
            new[key] = members
    gained: tuple[list[str], list[str]] | None = None
    if not was - now:
        gained = _addresses(sets, f"{name}_ip4"), _addresses(sets, f"{name}_ip6")
        for port_name, _, _ in found.values():
            for addresses, more in zip(gained, port_ips(ports.ports[port_name].nb), strict=True):
                for a in more:  # (each put in its place: the list stays sorted)
                    i = bisect_left(addresses, a)
                    if i == len(addresses) or addresses[i] != a:
                        addresses.insert(i, a)
    return (name, old), (name, new), False, gained


def _addresses(sets: DesiredTable, name: str) -> list[str]:
    """A copy of a desired set's addresses (sorted, distinct: as put)."""
    row = sets.rows.get(name)
    return list(row["addresses"]) if row is not None else []


def _plan_group(rc: RowChange[IdlRow], nb_set_names: set[str], datapaths: DatapathsData,
                ports: PortsData, groups: DesiredTable, left: Mapping[str, str]) -> Plan:
    """Where the group was (its name and its SB rows' switches, as desired) and is (its
    name and its port names by switch, from the core), and whether it was renamed."""
    if rc.old is not None and rc.new is not None:
        _need(set(changed_columns(rc)) <= PG_COLUMNS)
    for row in (rc.old, rc.new):
        if row is not None:
            _need(f"{row.name}_ip4" not in nb_set_names and f"{row.name}_ip6" not in nb_set_names)
    old: Placement | None = None
    if rc.old is not None:
        name = rc.old.name
        candidates = _where_was(rc.old, ports, left)
        old = name, {key: set() for key, dp in datapaths.switches.items()
                     if (candidates is None or key in candidates)
                     and sb_port_group_name(dp.tunnel_key, name) in groups.rows}
    new = _placement(rc.new, ports) if rc.new is not None else None
    return old, new, old is not None and new is not None and old[0] != new[0], None


def _where_was(pg: IdlRow, ports: PortsData, left: Mapping[str, str]) -> set[str] | None:
    """The switches the group's ports (`pg`: its row at the last build) were on: the
    switch whose `ports` listed it before this run's changes (`left`: port UUID ->
    switch), else its switch now, where it is the same port; None where some port is
    neither (then every switch is a candidate)."""
    out: set[str] = set()
    by_name = ports.ports
    rows = {r.uuid: r for r in pg.ports if isinstance(r, IdlRow)}
    for uuid in pg.value("ports"):
        if str(uuid) in left:  # (where it was, if it moved)
            out.add(left[str(uuid)])
            continue
        row = rows.get(str(uuid))
        port = by_name.get(row.name) if row is not None else None
        if port is None or not port.is_lsp or port.nb.uuid != str(uuid):
            return None
        out.add(port.dp.key)
    return out


def _placement(pg: IdlRow, ports: PortsData) -> Placement:
    per_switch: dict[str, set[str]] = {}
    for lsp in pg.ports:
        _need(isinstance(lsp, IdlRow))  # (a port gone in the same run)
        port = ports.ports.get(lsp.name)
        _need(port is not None and port.is_lsp and port.nb.uuid == lsp.uuid)
        assert port is not None
        per_switch.setdefault(port.dp.key, set()).add(lsp.name)
    return pg.name, per_switch


def _check_sets(nb: Mapping[str, ReplicaTable], as_changes: RowChanges,
                groups_changing: bool) -> None:
    """NB address sets that no derived set shares a name with, and not renamed (a port
    group's may, in a run where no group changes: the NB set wins while it is there,
    and the group's comes back, `_group_set_again`)."""
    pgs = nb.get("Port_Group")
    pg_names = {r.name for r in pgs.rows.values()} \
        if pgs is not None and as_changes and groups_changing else set()
    for rc in as_changes.values():
        if rc.old is not None and rc.new is not None:
            _need(set(changed_columns(rc)) <= AS_COLUMNS)
        for row in (rc.old, rc.new):
            if row is None:
                continue
            name: str = row.name
            _need(name != MONITOR_MAC_SET and not name.startswith("_rtr_lb_")
                  and not (name[-4:] in ("_ip4", "_ip6") and name[:-4] in pg_names))


def members_moved(nb: Mapping[str, ReplicaTable], datapaths: DatapathsData,
                  ports: PortsData, sb_desired: DesiredDb, was_on: Mapping[str, str],
                  delta: PortsDelta) -> bool:
    """The SB rows of the port groups with a port of `was_on` (switch port UUIDs renamed
    or moved to another switch, already so in the core; each with the switch it was
    on) listing their ports by switch and name again: rows on switches left without a
    member go, and those switches and the ones gained are named for `lflow` (the
    group's ACLs apply there). False (some row left as it was) where a group names a
    port the core does not have."""
    pgs = nb.get("Port_Group")
    if pgs is None or not was_on:
        return True
    groups = sb_desired.tables["Port_Group"]
    for pg in pgs.rows.values():
        members = was_on.keys() & {str(u) for u in pg.value("ports")}
        if not members:
            continue
        try:
            _, per_switch = _placement(pg, ports)
        except _Refused:
            return False
        for key in {was_on[u] for u in members} - per_switch.keys():
            dp = datapaths.switches.get(key)
            if dp is None:
                return False
            row = sb_port_group_name(dp.tunnel_key, pg.name)
            if groups.rows.pop(row, None) is not None:
                delta.touch("sb", "Port_Group", row)
                delta.flows.add(key)
        for key, names in per_switch.items():
            row = sb_port_group_name(datapaths.switches[key].tunnel_key, pg.name)
            if row not in groups.rows:
                delta.flows.add(key)
            groups.put(row, name=row, ports=sorted(names))
            delta.touch("sb", "Port_Group", row)
    return True


def member_sets(nb: Mapping[str, ReplicaTable], sb_desired: DesiredDb, lsps: set[str],
                delta: PortsDelta) -> None:
    """The `_ip4`/`_ip6` address sets of the port groups with a port of `lsps` (switch
    port UUIDs whose addresses may have changed) built again, where no NB address set
    of the same name wins over them."""
    pgs = nb.get("Port_Group")
    if pgs is None or not lsps:
        return
    nb_sets = nb.get("Address_Set")
    taken = {r.name for r in nb_sets.rows.values()} if nb_sets is not None else set()
    sets = sb_desired.tables["Address_Set"]
    for pg in pgs.rows.values():
        if lsps.isdisjoint(pg.value("ports")):
            continue
        v4, v6 = port_group_addresses(pg)
        for family, addresses in (("ip4", v4), ("ip6", v6)):
            name = f"{pg.name}_{family}"
            if name not in taken:
                sets.put(name, name=name, addresses=sorted(set(addresses)))
                delta.touch("sb", "Address_Set", name)
