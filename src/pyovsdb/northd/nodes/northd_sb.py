"""The `northd` node's handlers of the SB tables its builders read (`NORTHD_SB_INPUTS`),
kept apart from the NB side for size: `nodes.northd.NorthdNode` inherits them.

Rules kept here:
- A change a builder cannot see is HANDLED_UNCHANGED: northd's own Datapath_Binding
  and Port_Binding inserts coming back as it wants them, bindings it deleted going,
  claims (`chassis`, `up`, `encap`... of a port without a QoS queue), SB_Global and
  Chassis_Private (the handshake's), MAC bindings and FDB entries learned for live
  ports. A binding of no port (another client's, or one whose delete is in flight
  when a MAC is learned) is deleted, and the MAC bindings of no port with it, as a
  build does (`_unwanted`). A claim of a port with a QoS queue or QoS options binds
  it again (its queue taken on the chassis or given back), and its queue coming back
  builds its flows again (`set_queue`).
- A router port's binding coming back that moves it in the walk of its switch's
  router ports (hash buckets: the echo of a first build's bindings, say) sorts that
  switch's router ports again and marks it `rewired` (its flows rebuilt), in place.
- Chassis and Encap changes are applied in place (`build.chassis_incremental`: the
  ports asking for them bound again; the vxlan mode moved where no tunnel key moves
  with it, `max_tunid` written again); the chassis
  features moving change the global settings in place and have every flow built
  again (`PortsDelta.every_flow`) and the MAC binding aging look again; SB
  static MAC bindings are `NorthdNode.on_static_mac`'s, with the NB ones; IGMP
  groups change the multicast groups of their switches in place
  (`build.igmp_incremental`), and the Multicast_Group rows coming back as desired
  move nothing.
- Anything else recomputes.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ...engine import Handled, Node
from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...idl.tracking import changed_columns
from ...ovsdb.changeset import RowChange
from ..build.chassis_incremental import chassis_changed, vxlan_moved
from ..build.core import fdb_stale, held_tunnel_keys
from ..build.datapaths import datapath_key, is_vxlan_mode
from ..build.delta import PortsDelta
from ..build.global_cfg import (
    chassis_features,
    global_config,
    put_options,
    with_features,
    with_options,
)
from ..build.ha_chassis import with_ref_chassis
from ..build.igmp_incremental import igmp_changed
from ..build.inputs import rows_where
from ..build.peers_incremental import alone_in_bucket
from ..build.ports import (
    PB_BY_NAME,
    Port,
    existing_port_bindings,
    stale_mac_bindings,
    type_changed,
)
from ..build.ports_incremental import rebind
from ..build.ports_retyped import settled
from ..build.walk import PortWalk, resort_router_ports
from ..desired import Ref, single
from .tables import TableChange, Tables, either, only

if TYPE_CHECKING:
    from .northd import NorthdData  # noqa: F401  (the base's type argument)

# SB Port_Binding columns the builders read whole; of `options` they read a few keys,
# and `chassis` only to own the QoS queue of a port with a queue or QoS options.
PB_READ = frozenset(("logical_port", "datapath", "tunnel_key", "type", "parent_port",
                     "requested_additional_chassis"))
ACTIVATED = "additional-chassis-activated"
QUEUE = "qdisc_queue_id"
PB_OPTIONS_READ = (QUEUE, ACTIVATED, "ipv6_ra_pd_list")
QOS_OPTIONS = ("qos_max_rate", "qos_min_rate", "qos_burst")
# Of a virtual port's binding, what its flows read: its claim.
VIRTUAL_READ = frozenset(("virtual_parent", "chassis"))
DP_READ = frozenset(("external_ids", "tunnel_key"))
def bindings_named(table: ReplicaTable, name: str) -> int:
    """How many SB Port_Binding rows name logical port `name`."""
    return sum(1 for r in rows_where(table, PB_BY_NAME, (name,))
               if r.value("logical_port") == name)


def _rows(rc: RowChange[IdlRow]) -> tuple[IdlRow | None, IdlRow | None]:
    return rc.old, rc.new


class SbHandlers(Node["NorthdData", PortsDelta]):
    """The SB handlers of `NorthdNode` (see the module rules)."""

    def sb_tables(self) -> Tables:
        raise NotImplementedError  # (`NorthdNode`'s)

    def nb_tables(self) -> Tables:
        raise NotImplementedError  # (`NorthdNode`'s)

    def _applied(self, result: PortsDelta | None) -> Handled:
        raise NotImplementedError  # (`NorthdNode`'s)

    # SB_Global and Chassis_Private are read by the handshake only: `sync_cfg` takes
    # their changes, and `sync_to_sb` re-plans SB_Global against them.
    def on_cfg_only(self, change: TableChange) -> Handled:
        return Handled.HANDLED_UNCHANGED

    # Chassis registering, updating or leaving: applied in place where
    # `build.chassis_incremental.chassis_changed` can (the ports asking for the
    # chassis by a name it changes bound again alone; the vxlan mode moved, `_vxlan`,
    # where no tunnel key moves with it). The features every
    # chassis supports moved (an upgrade done): the global settings in place, and the
    # flows and the MAC binding aging (which they gate) built again.
    def on_chassis(self, change: TableChange) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        vxlan = self._vxlan()
        if vxlan is Handled.UNHANDLED:
            return vxlan
        return either(vxlan, either(self._features(), self._applied(chassis_changed(
            change.delta, self.data.core, self.sb_tables(), self.data.sb))))

    # Of the encaps, builders read only whether one is vxlan.
    def on_encap(self, change: TableChange) -> Handled:
        return self._vxlan() if self.has_data else Handled.UNHANDLED

    # The vxlan mode moved: the key ranges and `max_tunid` in place
    # (`chassis_incremental.vxlan_moved`: the datapaths whose keys move with it).
    def _vxlan(self) -> Handled:
        core, sb = self.data.core, self.sb_tables()
        if is_vxlan_mode(sb) == core.datapaths.vxlan_mode:
            return Handled.HANDLED_UNCHANGED
        delta = vxlan_moved(core, self.nb_tables(), sb, self.data.sb)
        if delta is None:
            return Handled.UNHANDLED
        self.track().merge(delta)
        cfg = with_options(self.data.extra.config,  # (as a build makes them)
                           global_config(self.nb_tables(), sb).nb_options)
        self.data.extra = replace(self.data.extra, config=cfg)
        put_options(cfg, self.data.nb, self.data.sb, self.track())
        return Handled.HANDLED_UPDATED

    def _features(self) -> Handled:
        features = chassis_features(self.sb_tables())
        data = self.data
        if features == data.extra.config.features:
            return Handled.HANDLED_UNCHANGED
        cfg = with_features(data.extra.config, features)
        data.extra = replace(data.extra, config=cfg)
        delta = self.track()
        delta.every_flow = delta.aging = True
        sb_global = data.sb.tables.get("SB_Global")
        if sb_global is not None and () in sb_global.rows:
            sb_global.set((), options=cfg.sb_options)
            delta.touch("sb", "SB_Global", ())
        return Handled.HANDLED_UPDATED

    # Builders read SB Multicast_Group (the kept keys of IGMP groups) only while SB
    # has IGMP groups, whose changes recompute.
    def on_multicast_group(self, change: TableChange) -> Handled:
        igmp = self.sb_tables().get("IGMP_Group")
        if igmp is None or not igmp.rows:
            return Handled.HANDLED_UNCHANGED
        desired = self.data.sb.tables.get("Multicast_Group") if self.has_data else None
        if desired is None:
            return Handled.UNHANDLED

        # (what they read is the tunnel key a group holds: one coming back as
        # desired, or one going that is not, moves nothing)
        def ok(rc: RowChange[IdlRow]) -> bool:
            row = rc.new if rc.new is not None else rc.old
            assert row is not None
            dp = row.datapath
            want = desired.rows.get((datapath_key(dp), row.name)) \
                if isinstance(dp, IdlRow) else None
            if rc.new is None:
                return want is None
            return want is not None and want.get("tunnel_key") == row.tunnel_key and (
                rc.old is None or (rc.old.name, rc.old.tunnel_key) == (row.name, row.tunnel_key))

        return only(change, ok)

    # A receiver joining or leaving a multicast group (ovn-controller's IGMP rows): the
    # groups of its switch and the routers relaying for it (`build.igmp_incremental`).
    def on_igmp_group(self, change: TableChange) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        switches = {str(datapath_key(r.datapath)) for rc in change.delta.values()
                    for r in (rc.old, rc.new)
                    if r is not None and isinstance(r.datapath, IdlRow)}
        core = self.data.core
        return self._applied(igmp_changed(core.datapaths, core.ports, self.sb_tables(),
                                          self.data.sb, switches))

    # Builders read SB MAC_Binding (to delete the bindings of gone ports) only while an
    # existing Port_Binding goes; ovn-controller's learning otherwise moves nothing.
    def on_mac_binding(self, change: TableChange) -> Handled:
        if not self.has_data:
            return Handled.UNHANDLED
        ports = self.data.core.ports
        if self._one_binding_each():
            return Handled.HANDLED_UNCHANGED
        gone: list[str] = []
        for name, pb in existing_port_bindings(self.sb_tables()).items():
            if name in ports.retyped:
                continue
            port = ports.ports.get(name)
            if port is None:
                gone.append(name)  # (a binding of no port: deleted, its delete in flight)
            # A port whose binding is its own insert come back (sb None) keeps it.
            elif port.sb is not None and port.sb.uuid != pb.uuid:
                return Handled.UNHANDLED
        return self._unwanted(gone) if gone else Handled.HANDLED_UNCHANGED

    def _unwanted(self, names: list[str]) -> Handled:
        """Bindings of no port (`names`) are deleted, and the MAC bindings of no port
        or datapath with them, as a build deletes them (`core.cleanup_mac_bindings`)."""
        desired = self.data.sb.table("MAC_Binding", (), owned=False)
        desired.delete = stale_mac_bindings(self.sb_tables(), self.data.core.datapaths,
                                            self.data.core.ports)
        delta = self.track()
        delta.touch("sb", "MAC_Binding")
        for name in names:
            delta.touch_unread(name)  # (no flow reads a binding of no port)
        return Handled.HANDLED_UPDATED

    def _one_binding_each(self) -> bool:
        """Whether, without a walk, every SB binding is a port's own and none goes: as
        many bindings as ports with one named for them (every port not `unbound`), none
        recreated, and no binding changed in this run (`unbound` then follows them)."""
        bindings = self.sb_tables().get("Port_Binding")
        ports = self.data.core.ports
        leaf = self.groups["sb"].get("Port_Binding")
        return bindings is not None and leaf is not None \
            and not self.inputs[leaf].updated and not ports.recreated \
            and len(bindings.rows) == len(ports.ports) - len(ports.unbound)

    # FDB entries are read to delete those of no datapath or port: an entry learned
    # for a live port, or one going, moves nothing; one learned for no port (ovn-
    # controller learning on a port as it goes) joins the entries to delete, and one
    # gone leaves them.
    def on_fdb(self, change: TableChange) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        core = self.data.core
        stale = fdb_stale(change.delta, self.sb_tables(), core)
        if stale is not None:
            desired = self.data.sb.tables.get("FDB")
            gone = {u for u, rc in change.delta.items() if rc.new is None} \
                & (desired.delete if desired is not None else set())
            if not stale and not gone:
                return Handled.HANDLED_UNCHANGED
            desired = self.data.sb.table("FDB", (), owned=False)
            desired.delete = (desired.delete - gone) | stale
            self.track().touch("sb", "FDB")
            return Handled.HANDLED_UPDATED
        keys = held_tunnel_keys(core.datapaths, core.ports)
        return only(change, lambda rc: rc.new is None
                     or rc.new.port_key in keys.get(rc.new.dp_key, ()))

    def on_port_binding(self, change: TableChange) -> Handled:
        """A binding northd wants, as it wants it (its own insert coming back), one it
        no longer wants going, or a change builders do not read (a claim: `chassis`,
        `up`, `encap`)."""
        if not self.has_data:
            return Handled.UNHANDLED
        desired = self.data.sb.tables.get("Port_Binding")
        if desired is None:
            return Handled.UNHANDLED
        table = change.data
        ports = getattr(self.data.core, "ports", None)

        def qos(name: str) -> bool:
            port = ports.ports.get(name) if ports is not None else None
            lsp = getattr(port, "nb", None) if port is not None else None
            options = getattr(lsp, "options", None) if lsp is not None else None
            return isinstance(options, dict) and any(k in options for k in QOS_OPTIONS)

        def ok(rc: RowChange[IdlRow]) -> bool:
            old, new = _rows(rc)
            if old is not None and new is not None:
                cols = set(changed_columns(rc))
                if cols & PB_READ and not _own_write(desired.rows.get(new.logical_port),
                                                     new, cols):
                    # (northd's own write come back, as desired (a port's type changed),
                    # moves nothing; its own additional chassis, which its binding
                    # reads: a port migrating, its binding put again below)
                    if cols & PB_READ != {"requested_additional_chassis"}:
                        return False
                    again.add(new.logical_port)
                if "options" in cols:
                    read = {k for k in PB_OPTIONS_READ if old.options.get(k) != new.options.get(k)}
                    if read - {ACTIVATED, QUEUE}:
                        return False
                    # (the migration target activated: copied into its binding; a QoS
                    # queue given, which the port's flows read: built again)
                    if read:
                        again.add(new.logical_port)
                port = ports.ports.get(new.logical_port) if ports is not None else None
                if port is not None and port.sb is not None and port.sb.uuid == new.uuid:
                    port.sb = new  # (the builders read the binding as it is now)
                    if port.type == "virtual" and cols & VIRTUAL_READ:
                        claimed[port.name] = {old.virtual_parent, new.virtual_parent}
                if "chassis" in cols and (QUEUE in old.options or QUEUE in new.options
                                          or qos(new.logical_port)):
                    again.add(new.logical_port)  # (its queue is taken on the chassis)
                return True
            if new is None:
                assert old is not None
                port = ports.ports.get(old.logical_port) if ports is not None else None
                if port is not None and ports is not None and old.uuid in ports.replaced \
                        and port.is_lsp:
                    # (a retyped port's old binding, or a moved one's, on its old switch)
                    here = _refers(Ref("Datapath_Binding", port.dp.key), old.datapath)
                    if not here or type_changed(old, port.nb):
                        ports.replaced.discard(old.uuid)
                        return True
                return old.logical_port not in desired.rows
            want = desired.rows.get(new.logical_port)
            if want is None and ports is not None and new.logical_port not in ports.ports:
                stray.append(new.logical_port)  # (another client's, of no port: deleted)
                return True
            if want is None or not _same_binding(want, new):
                return False
            # (a switch's router port takes its place in the walk by its binding)
            port = ports.ports.get(new.logical_port) if ports is not None else None
            if port is not None and port.is_lsp and port.type == "router" \
                    and not self._walk_kept(port):
                resort.add(port.dp.key)  # (sorted again below: its flows rebuilt)
            if bindings_named(table, new.logical_port) != 1:
                return False
            self.data.core.ports.bound(new.logical_port)
            if port is not None:
                port.sb = new  # (the builders read the binding as it is now)
                if port.name in self.data.core.ports.recreated:
                    settled(port.name, self.data.core.ports, desired)
            return True

        claimed: dict[str, set[str | None]] = {}
        stray: list[str] = []
        again: set[str] = set()
        resort: set[str] = set()  # switches whose router ports a build walks otherwise
        handled = only(change, ok)
        if handled is Handled.UNHANDLED or ports is None:
            return handled
        if again and not rebind(self.sb_tables(), ports, again, self.data.sb, self.track()):
            return Handled.UNHANDLED
        # (bindings come or gone resize the table a build walks: its order may have
        # moved; claims and other updates leave it as it is)
        resized = any(rc.old is None or rc.new is None for rc in (change.delta or {}).values())
        moved = resort_router_ports(self.sb_tables(), ports, self.data.core.datapaths) \
            if resized else set()
        if resort:  # (the echo of a first build's bindings, say)
            walk = PortWalk(self.sb_tables(), ports, self.data.core.datapaths)
            for key in resort:
                walk.sort_ports(ports.router_ports.get(key, []))
            moved |= resort
        if stray:
            handled = self._unwanted(stray)
        if not moved and not claimed and not again:
            return handled
        delta = self.track()
        delta.rewired |= moved
        groups = self.data.sb.tables.get("HA_Chassis_Group")
        if moved and groups is not None and with_ref_chassis(groups):
            delta.touch("sb", "HA_Chassis_Group")  # (as `ports_incremental._rewire`)
        for name, parents in claimed.items():
            delta.claimed.add(name)
            for p in (name, *parents):
                found = ports.ports.get(p) if p else None
                if found is not None:
                    delta.claimed_on.add(found.dp.key)
        return Handled.HANDLED_UPDATED

    def _walk_kept(self, lsp: Port) -> bool:
        """Whether the router ports of the switch of `lsp` (whose binding came) are in
        the order a build from the SB as it is now would walk them."""
        core = self.data.core
        if alone_in_bucket(lsp, core.ports):
            return True
        members = core.ports.router_ports.get(lsp.dp.key, [])
        walked = list(members)
        PortWalk(self.sb_tables(), core.ports, core.datapaths).sort_ports(walked)
        return walked == members

    def on_datapath_binding(self, change: TableChange) -> Handled:
        if not self.has_data:
            return Handled.UNHANDLED
        desired = self.data.sb.tables.get("Datapath_Binding")
        if desired is None:
            return Handled.UNHANDLED

        def ok(rc: RowChange[IdlRow]) -> bool:
            old, new = _rows(rc)
            if old is not None and new is not None:
                return not (set(changed_columns(rc)) & DP_READ) or _own_binding(
                    old, new, desired.rows)
            row = new if new is not None else old
            assert row is not None
            key = datapath_key(row)
            if new is None:
                return key is None or key not in desired.rows
            want = desired.rows.get(key) if key is not None else None
            return want is not None and want.get("tunnel_key") == row.tunnel_key

        return only(change, ok)


def _own_binding(old: IdlRow, new: IdlRow, desired: Mapping[Hashable, Mapping[str, Any]]
                 ) -> bool:
    """Whether a Datapath_Binding update is northd's own write come back: the datapath
    it names unchanged, its key and external_ids as desired (a datapath renamed)."""
    key = datapath_key(new)
    want = desired.get(key) if key is not None else None
    return want is not None and key == datapath_key(old) \
        and want.get("tunnel_key") == new.tunnel_key \
        and want.get("external_ids") == dict(new.external_ids)


def _own_write(want: Mapping[str, Any] | None, new: IdlRow, cols: set[str]) -> bool:
    """Whether a Port_Binding update in columns builders read is northd's own write
    come back as desired (its additional chassis are ovn-controller's)."""
    return want is not None and "requested_additional_chassis" not in cols \
        and _same_binding(want, new)


def _same_binding(want: Mapping[str, Any], row: IdlRow) -> bool:
    """Whether an inserted Port_Binding carries what the builders read as desired."""
    if want.get("tunnel_key") != row.tunnel_key or (want.get("type") or "") != row.type \
            or (single(want.get("parent_port")) or None) != row.parent_port \
            or row.requested_additional_chassis:
        return False
    options, have = want.get("options") or {}, row.options
    return all(options.get(k) == have.get(k) for k in PB_OPTIONS_READ) \
        and _refers(want.get("datapath"), row.datapath)


def _refers(ref: Any, value: Any) -> bool:
    """Whether the SB reference `value` is the Datapath_Binding desired as `ref`."""
    if not isinstance(ref, Ref) or not isinstance(value, IdlRow):
        return False
    return datapath_key(value) == ref.key
