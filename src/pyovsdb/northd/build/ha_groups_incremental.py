"""NB gateway chassis and HA chassis changes applied to the desired SB HA chassis
groups in place: a gateway chassis updated (its chassis, its priority), a distributed
gateway port's set of gateway chassis changed, an NB HA chassis group's members
changed, an HA chassis updated.

Rules kept here:
- Only SB HA_Chassis_Group and HA_Chassis rows move: no flow reads a group's members,
  and a binding names its group by name.
- The ports that use groups are the chassisredirect ports (one per distributed gateway
  port: `PortsData.l3dgw_ports`) and, when NB HA chassis groups or HA chassis changed,
  the external switch ports. A port whose gateway chassis, NB group or that group's HA
  chassis changed has its group put again as `ha_chassis.port_group` reads it now;
  member rows no longer in it are deleted; only rows whose content changed are in the
  delta.
- Refused (None: the caller recomputes): an NB group renamed while a port uses it (the
  binding names it).
- A router port updated in its gateway chassis alone is the caller's to judge
  (`gateway_chassis_only`): it stays a distributed gateway port. Ports are read as
  their rows are now; a port changed otherwise is its own handler's (which gives up on
  what it cannot take, so the recompute builds it anew).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...idl.tracking import changed_columns
from ...ovsdb.changeset import RowChange
from ..desired import DesiredDb, DesiredTable
from .delta import PortsDelta
from .ha_chassis import CHASSIS_COLUMNS, GROUP_COLUMNS, port_group, put_group
from .ports import Port, PortsData

RowChanges = Mapping[str, RowChange[IdlRow]]


def gateway_chassis_only(rc: RowChange[IdlRow]) -> bool:
    """Whether a router port update changed its gateway chassis alone, a gateway port
    before and after."""
    return rc.old is not None and rc.new is not None \
        and set(changed_columns(rc)) == {"gateway_chassis"} \
        and bool(rc.old.value("gateway_chassis")) and bool(rc.new.value("gateway_chassis"))


def _users(ports: PortsData, external: bool) -> Iterable[Port]:
    """The ports that use groups (see the rules)."""
    for gateways in ports.l3dgw_ports.values():
        for lrp in gateways:
            cr = ports.ports.get(lrp.cr_port or "")
            if cr is not None:
                yield cr
    if external:
        for port in ports.ports.values():
            if port.is_lsp and port.type == "external" and port.nb.ha_chassis_group:
                yield port


def _reads(port: Port, nb_groups: ReplicaTable | None) -> set[str]:
    """The UUIDs of the NB rows the port's group is read from."""
    nb = port.nb
    out = {nb.uuid, *(nb.value("gateway_chassis") if port.is_cr else ())}
    group = nb.value("ha_chassis_group")
    if group:
        out.update(group)
        row = nb_groups.rows.get(group[0]) if nb_groups is not None else None
        if row is not None:
            out.update(row.value("ha_chassis"))
    return out


def ha_groups_changed(changes: Mapping[str, RowChanges], nb: Mapping[str, ReplicaTable],
                      ports: PortsData, sb_desired: DesiredDb) -> PortsDelta | None:
    """The delta of NB row changes `changes` (by table: Gateway_Chassis, HA_Chassis,
    HA_Chassis_Group, router ports changed in their gateway chassis alone) on the
    desired groups, or None (see the rules)."""
    changed = {u for rows in changes.values() for u in rows}
    nb_groups = nb.get("HA_Chassis_Group")
    external = bool(changes.get("HA_Chassis") or changes.get("HA_Chassis_Group"))
    renamed = {u for u, rc in changes.get("HA_Chassis_Group", {}).items()
               if rc.old is not None and rc.new is not None and rc.old.name != rc.new.name}
    found: dict[str, list[tuple[str, int]]] = {}
    for port in _users(ports, external):
        # (the port as it is now: one changed otherwise is its own handler's, which
        # gives up on it if it cannot take it)
        rows = nb["Logical_Router_Port" if port.is_cr else "Logical_Switch_Port"].rows
        row = rows.get(port.nb.uuid)
        if row is None:
            continue
        if row is not port.nb:
            port.nb = row
            gateway = ports.ports.get(port.l3dgw_port or "")
            if gateway is not None:
                gateway.nb = row
        reads = _reads(port, nb_groups)
        if changed.isdisjoint(reads):
            continue
        if not renamed.isdisjoint(reads):
            return None
        group = port_group(port)
        if group is not None:
            found[group[0]] = group[1]
    delta = PortsDelta()
    for name, members in found.items():
        _put_again(sb_desired, name, members, delta)
    # A group deleted: gone with its HA chassis unless a port still uses one of its
    # name (the ports that used it name a row gone: their own changes cannot tell it).
    groups_used({str(rc.old.name) for rc in changes.get("HA_Chassis_Group", {}).values()
                 if rc.new is None and rc.old is not None} - found.keys(),
                ports, sb_desired, delta)
    return delta


def _put_again(sb_desired: DesiredDb, name: str, members: list[tuple[str, int]],
               delta: PortsDelta) -> None:
    """Group `name` put with `members`, the rows that changed in `delta`."""
    groups = sb_desired.tables.get("HA_Chassis_Group")
    if groups is None:
        groups = sb_desired.add(DesiredTable("HA_Chassis_Group", GROUP_COLUMNS))
    chassis = sb_desired.tables.get("HA_Chassis")
    if chassis is None:
        chassis = sb_desired.add(DesiredTable("HA_Chassis", CHASSIS_COLUMNS))
    old_group = groups.rows.get(name)
    old_keys: list[Hashable] = [r.key for r in old_group["ha_chassis"]] if old_group else []
    old_rows = {k: chassis.rows.get(k) for k in old_keys}
    new_keys = put_group(groups, chassis, name, members)
    if groups.rows[name] != old_group:
        delta.touch("sb", "HA_Chassis_Group", name)
    for new in new_keys:
        if chassis.rows[new] != old_rows.get(new):
            delta.touch("sb", "HA_Chassis", new)
    for old in set(old_keys) - set(new_keys):
        del chassis.rows[old]
        delta.touch("sb", "HA_Chassis", old)


def group_names(rows: Iterable[IdlRow]) -> set[str]:
    """The NB HA chassis groups the external switch ports `rows` use, by name."""
    return {str(group.name) for row in rows if row.value("type") == "external"
            and isinstance(group := row.ha_chassis_group, IdlRow)}


def groups_used(names: set[str], ports: PortsData, sb_desired: DesiredDb,
                delta: PortsDelta) -> None:
    """The SB groups `names` (external switch ports came to use them, or stopped) put
    again as their users read them now, or taken away with their HA chassis where no
    port uses them any more (`ha_chassis`: a group exists while a port uses it)."""
    if not names:
        return  # (the ports are walked only for a group some port came to or left)
    found: dict[str, list[tuple[str, int]]] = {}
    for port in _users(ports, True):
        group = port_group(port)
        if group is not None and group[0] in names:
            found[group[0]] = group[1]
    for name in sorted(names):
        if name in found:
            _put_again(sb_desired, name, found[name], delta)
            continue
        groups, chassis = (sb_desired.tables.get(t) for t in ("HA_Chassis_Group",
                                                                "HA_Chassis"))
        row = groups.rows.pop(name, None) if groups is not None else None
        if row is not None:
            delta.touch("sb", "HA_Chassis_Group", name)
            for ref in row["ha_chassis"]:
                if chassis is not None and chassis.rows.pop(ref.key, None) is not None:
                    delta.touch("sb", "HA_Chassis", ref.key)
