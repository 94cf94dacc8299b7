"""The `sync_from_sb` node (OVN 23.09's): NB `Logical_Switch_Port.up` and the HA chassis
groups' `ref_chassis`, decided by ovn-controller's writes to SB.

Rules kept here:
- It reads `northd` (the ports and groups it built), SB `Port_Binding` and `Chassis`,
  and `Datapath_Binding` (to match a binding to its port's datapath), whose handler is
  `noop`: a datapath's own insert coming back changes no binding's match, and any
  other change of it recomputes `northd`; no NB table (the ports' NB rows come with
  `northd`'s data). A chassis added or deleted, or updated in columns other than its
  name and `other_config:port-up-notif`, moves nothing here.
- A claim or an `up` change updates the ports it names, without `northd`, and the
  `ref_chassis` of the groups of more than one chassis the port's claim counts for
  (`build.ref_chassis`, by the port's name). Switch ports `northd` changed in place
  (its `PortsDelta` names their bindings) are decided again alone. The groups
  `northd` changed are taken by key; one that comes to have more than one chassis, or
  no longer has, makes the switches of its router group count for it or stop
  (`RefChassis.regroup`). Switches gaining or losing router ports (`rewired`) have the
  router groups found again in place (`RefChassis.rewire`): only the switches whose
  router group moved are counted again.
- Its delta (`UpDelta`) names the switch ports whose `up` a handler changed and the
  groups whose `ref_chassis` it changed, so `sync_to_sb` plans those alone; a
  recompute has none (everything is planned).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ...engine import Change, Group, Handled, Input, Node, noop
from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...idl.tracking import changed_columns
from ...ovsdb.changeset import RowChange
from ..build.core import sb_feedback
from ..build.delta import PortsDelta
from ..build.ha_chassis import copy_groups, port_group_name, with_ref_chassis
from ..build.inputs import BuildInput, rows_where
from ..build.lsp_up import port_up, switch_ports
from ..build.ports import PB_BY_NAME
from ..build.ref_chassis import RefChassis
from ..desired import DesiredDb, DesiredTable, single
from .northd import NorthdData, NorthdNode
from .tables import TableChange, TableLeaf, declared, only, table_inputs

SYNC_FROM_SB_INPUTS = ("Chassis", "Datapath_Binding", "Port_Binding")
NOTIF = "port-up-notif"  # the Chassis `other_config` key `up` reads (`lsp_up`)


@dataclass
class SbFeedback:
    """What ovn-controller's writes decide: NB `up` by LSP UUID, and the HA chassis
    groups with their `ref_chassis` (None: no such table)."""

    up: dict[str, bool]
    ha_groups: DesiredTable | None
    lsps: dict[str, IdlRow]  # switch ports by name, as of the last recompute
    refs: RefChassis | None = None  # what keeps the groups' `ref_chassis`


@dataclass
class UpDelta:
    """The LSP UUIDs whose `up` handlers changed (set or taken away) in this run,
    and the HA chassis groups (by name) whose `ref_chassis` they changed."""

    lsps: set[str] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)


class SyncFromSbNode(Node[SbFeedback, UpDelta]):
    def __init__(self, northd: NorthdNode, nb: Mapping[str, TableLeaf],
                 sb: Mapping[str, TableLeaf]) -> None:
        self.nb_schema, self.sb_schema = frozenset(nb), frozenset(sb)
        super().__init__(
            "sync_from_sb", northd=Input(northd, self.on_northd),
            sb=Group(table_inputs(sb, SYNC_FROM_SB_INPUTS,
                                  {"Port_Binding": self.on_port_binding,
                                   "Datapath_Binding": noop,
                                   "Chassis": self.on_chassis})))

    def new_delta(self) -> UpDelta:
        return UpDelta()

    def run(self, *, northd: NorthdData, sb: Mapping[str, ReplicaTable]) -> SbFeedback:
        groups = northd.sb.tables.get("HA_Chassis_Group")
        sb_db = DesiredDb({} if groups is None else {groups.name: groups})
        nb_db = DesiredDb()
        inp = BuildInput(nb=declared({}, self.nb_schema, self.name),
                         sb=declared(sb, self.sb_schema, self.name))
        refs = sb_feedback(inp, northd.core, sb_db, nb_db)
        lsp = nb_db.tables.get("Logical_Switch_Port")
        up = {} if lsp is None else {k: bool(single(v["up"])) for k, v in lsp.rows.items()
                                     if isinstance(k, str)}
        return SbFeedback(up, sb_db.tables.get("HA_Chassis_Group"),
                          switch_ports(northd.core.ports), refs)

    def on_northd(self, change: Change[NorthdData, PortsDelta]) -> Handled:
        delta = change.delta
        if delta is None or not self.has_data:
            return Handled.UNHANDLED
        data = self.data
        if "HA_Chassis_Group" in delta.sb and not self._regroup(change.data, delta):
            return Handled.UNHANDLED  # (`ref_chassis` decided again)
        ports = change.data.core.ports
        changed = False
        touched = self.track().lsps
        names = sorted(str(key) for key in delta.sb.get("Port_Binding", ()))
        for name in names:  # (all the old entries first: a port renamed keeps its row)
            changed |= self._rebind(name)
            old = data.lsps.pop(name, None)
            if old is not None and data.up.pop(old.uuid, None) is not None:
                touched.add(old.uuid)
                changed = True
        for name in names:
            port = ports.ports.get(name)
            if port is None or not port.is_lsp:
                continue
            data.lsps[name] = port.nb
            data.up[port.nb.uuid] = port_up(port.nb, port.sb)
            touched.add(port.nb.uuid)
            changed = True
        return Handled.HANDLED_UPDATED if changed else Handled.HANDLED_UNCHANGED

    def on_port_binding(self, change: TableChange) -> Handled:
        if not self.has_data or change.delta is None:
            return Handled.UNHANDLED
        data = self.data
        changed = False
        for rc in change.delta.values():
            old, new = rc.old, rc.new
            row = new if new is not None else old
            assert row is not None
            changed |= self._rebind(row.logical_port)
            if old is not None and new is not None and old.logical_port != new.logical_port:
                changed |= self._rebind(old.logical_port)
            lsp = data.lsps.get(row.logical_port)
            if lsp is None:
                continue
            if new is None:
                # (a binding deleted while another of its name stays, as when one is
                # inserted again for a port whose type changed: that one decides)
                new = _other_binding(change.data, row)
                if new is None:
                    if data.up.pop(lsp.uuid, None) is not None:
                        self.track().lsps.add(lsp.uuid)
                        changed = True
                    continue
            up = port_up(lsp, new)
            if data.up.get(lsp.uuid) != up:
                data.up[lsp.uuid] = up
                self.track().lsps.add(lsp.uuid)
                changed = True
        return Handled.HANDLED_UPDATED if changed else Handled.HANDLED_UNCHANGED

    def _regroup(self, northd: NorthdData, delta: PortsDelta) -> bool:
        """`northd`'s groups `delta` names taken into the copy; False if the router
        groups may have changed while a group has more than one chassis."""
        data = self.data
        groups = northd.sb.tables.get("HA_Chassis_Group")
        if groups is None:
            return False
        keys = delta.sb["HA_Chassis_Group"]
        refs = data.refs
        table = self.group_data("sb")["Port_Binding"]
        # (a switch's router ports changed, named by no group key: the router groups)
        rewired = bool(delta.rewired) or not keys
        if not with_ref_chassis(groups) and (
                data.ha_groups is None or not with_ref_chassis(data.ha_groups)):
            data.ha_groups = copy_groups(groups)
            if rewired and refs is not None:  # (claims counted on for groups to come)
                refs.rewire(northd.core.datapaths, northd.core.ports, groups, table)
            return True
        copy = data.ha_groups
        if refs is None or copy is None:
            return False
        moved = refs.rewire(northd.core.datapaths, northd.core.ports, groups, table) \
            if rewired else set()
        # (the group each distributed gateway port's chassisredirect port uses, and its
        # router; an external switch port's group is referenced by no chassis)
        routers = {port_group_name(lrp.nb): key
                   for key, gateways in northd.core.ports.l3dgw_ports.items()
                   for lrp in gateways}
        for key in keys:
            name = str(key)
            row, old = groups.rows.get(name), copy.rows.get(name)
            if row is None:
                copy.rows.pop(name, None)
            else:
                copy.rows[name] = {**row, "ref_chassis": [] if old is None
                                   else old["ref_chassis"]}
            changed = {name}
            router = routers.get(name)
            if router is not None:
                changed |= refs.regroup(name, router, row is not None
                                        and len(row["ha_chassis"]) > 1)
            refs.write(copy, changed)
            self.track().groups |= changed
        refs.write(copy, moved)  # (after the groups' own rows: new ones are there now)
        self.track().groups |= moved
        return True

    def _rebind(self, name: str) -> bool:
        """The groups logical port `name`'s bindings count for (`RefChassis.rebind`):
        those whose `ref_chassis` changed written and tracked."""
        data = self.data
        refs, groups = data.refs, data.ha_groups
        if refs is None or groups is None:
            return False
        changed = refs.rebind(name, self.group_data("sb")["Port_Binding"])
        if not changed:
            return False
        refs.write(groups, changed)
        self.track().groups |= changed
        return True

    # A binding's `chassis` is a weak reference: a chassis added or deleted is named
    # by no binding that did not change with it (`on_port_binding` takes those). Of an
    # update, `up` reads only `other_config:port-up-notif` and `ref_chassis` the name.
    def on_chassis(self, change: TableChange) -> Handled:
        def ok(rc: RowChange[IdlRow]) -> bool:
            if rc.old is None or rc.new is None:
                return True
            columns = changed_columns(rc)
            return "name" not in columns and (
                "other_config" not in columns
                or rc.old.other_config.get(NOTIF) == rc.new.other_config.get(NOTIF))
        return only(change, ok)


def _other_binding(table: ReplicaTable, gone: IdlRow) -> IdlRow | None:
    """A Port_Binding row naming the same logical port as the deleted row `gone`
    (the first by UUID), if one is left."""
    left = [r for r in rows_where(table, PB_BY_NAME, (gone.logical_port,))
            if r.logical_port == gone.logical_port and r.uuid != gone.uuid]
    return min(left, key=lambda r: r.uuid) if left else None
