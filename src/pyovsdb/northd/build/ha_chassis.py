"""SB HA_Chassis_Group and HA_Chassis rows: the gateway chassis of distributed gateway
ports and the NB HA chassis groups that ports use, as OVN 23.03 syncs them
(`sync_ha_chassis_group_for_sbpb`, `copy_gw_chassis_from_nbrp_to_sbpb`,
`cleanup_sb_ha_chassis_groups`).

Rules kept here:
- A group exists in SB only while a port uses it: a chassisredirect port's router port
  through its NB group (named as in NB) or its `gateway_chassis` (a group named after
  the router port, the NB group winning when both are set), or an external switch
  port through its NB group. Every other SB group is deleted.
- Each member is an HA_Chassis with the chassis (by name; empty while no such chassis
  is registered), the priority, and `external_ids:chassis-name`. Gateway chassis
  without a chassis name are left out. Two members naming one chassis (a router port
  renamed keeps its gateway chassis rows, named for the old name, and gets new ones)
  are one HA_Chassis with the higher priority: 23.03 writes a row for each, with two
  references to one key the SB transaction would fail on every run.
- `ref_chassis` is `ref_chassis.build_ref_chassis`'s (put empty here).
"""

from __future__ import annotations

from ...idl.row import IdlRow
from ..desired import DesiredDb, DesiredTable, Ref
from .ports import Port, PortsData

GROUP_COLUMNS = ("name", "ha_chassis", "ref_chassis")
CHASSIS_COLUMNS = ("chassis", "priority", "external_ids")


Members = list[tuple[str, int]]  # (chassis name, priority) of each HA chassis


def port_group(port: Port) -> tuple[str, Members] | None:
    """The SB group a port uses (its name and members), if any (see the rules)."""
    nb = port.nb
    if port.is_cr:
        group = nb.ha_chassis_group
        if isinstance(group, IdlRow):
            return str(group.name), _nb_group(group)
        if nb.gateway_chassis:
            return str(nb.name), [
                (gc.chassis_name, gc.priority)
                for gc in sorted(nb.gateway_chassis, key=lambda g: g.uuid)
                if isinstance(gc, IdlRow) and gc.chassis_name]
    elif port.is_lsp and nb.type == "external":
        group = nb.ha_chassis_group
        if isinstance(group, IdlRow):
            return str(group.name), _nb_group(group)
    return None


def build_ha_chassis_groups(ports: PortsData, sb: DesiredDb) -> DesiredTable:
    members: dict[str, Members] = {}
    for port in ports.ports.values():
        found = port_group(port)
        if found is not None:
            members[found[0]] = found[1]
    groups = sb.add(DesiredTable("HA_Chassis_Group", GROUP_COLUMNS))
    chassis = sb.add(DesiredTable("HA_Chassis", CHASSIS_COLUMNS))
    for name in sorted(members):
        put_group(groups, chassis, name, members[name])
    return groups


def put_group(groups: DesiredTable, chassis: DesiredTable, name: str, members: Members
              ) -> list[tuple[str, str]]:
    """A desired group and its HA chassis rows (their keys returned); its
    `ref_chassis` empty (`build_ref_chassis` fills it)."""
    refs = []
    keys = []
    best: dict[str, int] = {}
    for chassis_name, priority in members:
        if priority > best.get(chassis_name, priority - 1):
            best[chassis_name] = priority
    for chassis_name, priority in best.items():
        key = (name, chassis_name)
        chassis.put(key, chassis=Ref("Chassis", chassis_name), priority=priority,
                    external_ids={"chassis-name": chassis_name})
        refs.append(Ref("HA_Chassis", key))
        keys.append(key)
    groups.put(name, name=name, ha_chassis=refs, ref_chassis=[])
    return keys


def with_ref_chassis(groups: DesiredTable) -> bool:
    """Whether a desired group has more than one chassis: only those have
    `ref_chassis`, which follows claims and router groups."""
    return any(len(r.get("ha_chassis") or ()) > 1 for r in groups.rows.values())


def copy_groups(groups: DesiredTable) -> DesiredTable:
    """A copy of a desired group table whose rows (their `ref_chassis`) can be set
    without changing `groups`'."""
    return DesiredTable(groups.name, groups.columns, groups.owned,
                        {k: dict(v) for k, v in groups.rows.items()}, groups.fill)


def port_group_name(lrp: IdlRow) -> str | None:
    """The SB group a distributed gateway port's chassisredirect port uses."""
    group = lrp.ha_chassis_group
    if isinstance(group, IdlRow):
        return str(group.name)
    if lrp.gateway_chassis:
        return str(lrp.name)
    return None


def _nb_group(group: IdlRow) -> list[tuple[str, int]]:
    return [(hc.chassis_name, hc.priority)
            for hc in sorted(group.ha_chassis, key=lambda h: h.uuid)
            if isinstance(hc, IdlRow)]
