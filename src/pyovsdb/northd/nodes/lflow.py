"""The `lflow` engine node: the logical flows of the `northd` node's build, as desired
SB `Logical_Flow` rows and the `Logical_DP_Group` rows they share.

Rules kept here:
- `lflow` recomputes whenever `northd` recomputed (as 23.03 does on any change); when
  `northd` applied changes in place (its `PortsDelta`: the bindings of VIFs and router
  ports, the datapaths created or deleted; the datapaths its `flows` names, whose
  load balancers changed), only the flows of those datapaths and of the routers
  connected to them are built again (`lflows.rebuild`), and its delta
  names the Logical_Flow rows that changed, so `sync_to_sb` plans those alone. It also
  recomputes on an SB table only flows read (`LFLOW_SB_INPUTS`), or, with
  `ignore_lsp_down=false`, when `sync_from_sb` moved a port's `up`. What the builders
  report about bad NB data comes from the recompute, and from the rebuild of a
  datapath whose ACLs, routes, policies or load balancers changed (what 23.03,
  recomputing, reports then); the rebuild after VIF changes is `diagnostics.muted()`.
- A change whose datapaths to build again are more than half of them (and more than a
  few) recomputes (`REBUILD_AT_MOST`): a load balancer on every node of a cluster.
- Its data is the flows as data (`LflowTable`, by datapath and owner) plus their
  desired SB tables, never writes: `sync_to_sb` plans them with the rest.
- Its desired rows come from `lflow_rows.desired_rows`: the `Logical_DP_Group` rows
  are northd's with the flows' groups added, in a copy, and the flows using each
  group are counted (`LflowData.group_users`), so a rebuild updates the groups of the
  flows it changed and never walks the others.
- It reads `northd`, `sync_from_sb`, every NB table and the SB tables `northd` reads,
  whose changes `northd` always carries (their handler is `noop`: a change the flows
  could see either recomputes `northd` or comes as its delta), and SB tables only
  flows read (`LFLOW_SB_INPUTS`, no handler). The exceptions are what `northd` does not
  carry: an ACL change and a switch's or a port group's `acls` rebuild the flows of
  the switches they are on here (ACLs added to or taken from `acls`, where the
  switches keep their ACL facts: those ACLs' flows alone), a route or policy change and
  a router's `static_routes` or `policies` the routers' route or policy flows alone.
- A router that gains or loses plain router ports is not built whole
  (`lflows.rebuild_router_ports`), nor are the routers on a switch a router joins or
  leaves (`lflows.rebuild_pairs`): `nodes/lflow_ports.py` says when each holds. A
  switch with an external port that gains or loses a router port is built whole (the
  port's guard drops ARP/ND for its router ports' addresses: `lflow_ports.guarded`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...engine import Change, Group, Handled, Input, Node, noop
from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...idl.tracking import changed_columns
from ..build.datapaths import smap_bool
from ..build.delta import PortsDelta
from ..build.dp_groups import TABLE as DP_GROUP_TABLE
from ..build.inputs import rows_where, singleton
from ..build.lb import LbData
from ..desired import DesiredDb
from ..diagnostics import muted
from ..lflows import (
    LflowContext,
    LflowTable,
    build_lflows,
    rebuild,
    rebuild_focused,
    rebuild_lbs,
    rebuild_owned,
    rebuild_pairs,
    rebuild_policies,
    rebuild_router_lookups,
    rebuild_router_nat,
    rebuild_router_ports,
    rebuild_routes,
    rebuild_vifs,
)
from ..lflows.lb_reads import lb_owners, lb_rebuilds
from ..lflows.ls_acl import build_acl_flows
from ..lflows.router_facts import router_vips
from ..lflows.table import FlowKey, Owner, flow_row_key
from .lflow_ports import (
    PortDp,
    beside_changed,
    guarded,
    is_vif,
    pair_readers,
    plain_lrp,
    port_dp,
    port_dps,
    ports_kept_alike,
    read_by_switch,
    router_port_readers,
    vifs_kept_alike,
)
from .lflow_rows import desired_rows
from .lflow_rules import (
    RuleRebuilds,
    Rules,
    added_or_gone,
    policies_alone,
    routes_alone_now,
    updated,
)
from .northd import LS_FLOWS_ONLY, NORTHD_SB_INPUTS, NorthdData, NorthdNode
from .sync_from_sb import SbFeedback, SyncFromSbNode
from .tables import TableChanges, TableLeaf, declared, either, leaf_name, table_inputs

LFLOW_TABLES = ("Logical_Flow", DP_GROUP_TABLE)
# SB tables the flow builders read that `northd` does not: the health checks'
# Service_Monitor status decides which backends a VIP has (`on_service_monitor`).
LFLOW_SB_INPUTS = ("Service_Monitor",)
# A rebuild of more than this share of the datapaths (and more than REBUILD_ANY of them)
# recomputes instead: the partial path's bookkeeping (replacing flows, diffing rows)
# then costs more than it saves.
REBUILD_AT_MOST = 0.5
REBUILD_ANY = 64
# Tables of `northd`'s delta whose desired rows no flow builder reads: what changed with
# them reaches the flows as the delta's `flows` (the datapaths to build again; a
# datapath made or gone by its Datapath_Binding key).
FLOWLESS = frozenset(("Load_Balancer", "Address_Set", "Port_Group", DP_GROUP_TABLE,
                      "SB_Global", "HA_Chassis", "HA_Chassis_Group", "DNS", "Meter",
                      "Meter_Band", "Static_MAC_Binding", "Chassis_Template_Var",
                      "Mirror", "BFD", "Datapath_Binding", "IP_Multicast", "FDB",
                      "MAC_Binding"))
# Switch columns whose change rebuilds the switch here: those only the flows read, and
# its DNS rows (whose SB rows `northd` changes).
LS_REBUILT = LS_FLOWS_ONLY | {"dns_records"}
# NB switch port columns the flows look ports up by (the replica keeps an index of each,
# named as the column, where `graph.wire` adds them; without one, a walk of the ports).
LSP_INDEXES = ("dhcpv4_options", "dhcpv6_options")
# The switch column that lists the rows of each of these NB tables (by leaf name).
SWITCH_LISTS = {leaf_name("NB", "QoS"): "qos_rules",
                leaf_name("NB", "Forwarding_Group"): "forwarding_groups"}
# The leaves of the NB routes and policies (`on_nb_lr` reads what this run's change of
# them was).
ROUTE_LEAF = leaf_name("NB", "Logical_Router_Static_Route")
POLICY_LEAF = leaf_name("NB", "Logical_Router_Policy")
# Routers' routes or policies built again (the flow table, the context, the routers,
# and the rules of some of them alone by UUID): the flows that changed.
RulesRebuild = Callable[[LflowTable, LflowContext, frozenset[str],
                         Mapping[str, frozenset[str]]], set[FlowKey]]


# Tables of its NB write-backs no flow reads (NB_Global: the options copied back; the
# options flows read recompute `northd`, and so this node).
FLOWLESS_NB = frozenset(("NB_Global", "BFD"))


@dataclass(slots=True)
class LflowData:
    flows: LflowTable
    sb: DesiredDb  # Logical_Flow and Logical_DP_Group
    # logical port -> where it is and what it is (`lflow_ports.PortDp`), as of this data
    port_dps: dict[str, PortDp]
    # The flows of each datapath group they use (groups of more than one datapath).
    group_users: Counter[tuple[str, ...]]
    lbs: LbData  # the load balancers these flows were built for


@dataclass(slots=True)
class LflowDelta:
    """The sync keys of the Logical_Flow rows a partial rebuild changed, and of the
    datapath groups it may have added or taken away (None: any of them)."""

    rows: set[Hashable] = field(default_factory=set)
    groups: set[Hashable] | None = field(default_factory=set)
    # The datapaths whose flows a handler of this run built again whole: the node's
    # inputs stay as they are for the rest of the run, so a later handler asking for
    # some of them alone skips them.
    built: set[str] = field(default_factory=set)
    # The routers whose routes' or policies' flows a handler of this run built again,
    # as ("routes" or "policies", router key).
    rules: set[tuple[str, str]] = field(default_factory=set)


def lflow_context(nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable],
                  northd: NorthdData) -> LflowContext:
    return LflowContext(nb=nb, sb=sb, datapaths=northd.core.datapaths,
                        ports=northd.core.ports, lbs=northd.extra.lbs,
                        config=northd.extra.config)


def _uuids(refs: Any) -> set[str]:
    """The UUIDs of a reference column's value (rows or UUID strings; one row, of an
    optional reference)."""
    if isinstance(refs, IdlRow):
        return {refs.uuid}
    return {r.uuid if isinstance(r, IdlRow) else str(r) for r in refs or ()}


def _group_switches(group: IdlRow, northd: NorthdData) -> set[str]:
    """The keys of the switches a port group has ports on."""
    ports = northd.core.ports.ports
    out: set[str] = set()
    for lsp in group.ports or ():
        port = ports.get(lsp.value("name")) if isinstance(lsp, IdlRow) else None
        if port is not None and port.is_lsp and port.nb.uuid == lsp.uuid:
            out.add(port.dp.key)
    return out


def _acl_switches(nb: Mapping[str, ReplicaTable], acls: set[str], northd: NorthdData
                  ) -> set[str]:
    """The switches whose flows the ACLs `acls` (UUIDs) are in: those listing them and
    those a port group listing them has ports on."""
    if not acls:
        return set()
    groups = nb.get("Port_Group")
    dps: set[str] = set()
    for group in groups.rows.values() if groups is not None else ():
        if acls & _uuids(group.acls):
            dps |= _group_switches(group, northd)
    switches = nb.get("Logical_Switch")
    dps |= {ls.uuid for ls in switches.rows.values() if acls & _uuids(ls.acls)} \
        if switches is not None else set()
    return dps


def build_lflow_data(nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable],
                     northd: NorthdData) -> LflowData:
    flows = build_lflows(lflow_context(nb, sb, northd))
    desired, users, _ = desired_rows(northd, flows, None, set(), Counter())
    return LflowData(flows, desired, port_dps(northd.core.ports), users, northd.extra.lbs)


class LflowNode(Node[LflowData, LflowDelta]):
    def __init__(self, northd: NorthdNode, feedback: SyncFromSbNode,
                 nb: Mapping[str, TableLeaf], sb: Mapping[str, TableLeaf]) -> None:
        self.nb_schema, self.sb_schema = frozenset(nb), frozenset(sb)
        covered = {**dict.fromkeys(NORTHD_SB_INPUTS, noop),  # (`northd` carries them)
                   "Service_Monitor": self.on_service_monitor}
        super().__init__(
            "lflow", northd=Input(northd, self.on_northd),
            sync_from_sb=Input(feedback, self.on_up),
            nb=Group(table_inputs(nb, sorted(nb), {**dict.fromkeys(nb, noop),
                                                   "ACL": self.on_nb_acl,
                                                   "Meter": self.on_nb_meter,
                                                   "Copp": self.on_nb_copp,
                                                   "Logical_Switch": self.on_nb_ls,
                                                   "Port_Group": self.on_nb_port_group,
                                                   "Logical_Router": self.on_nb_lr,
                                                   "Logical_Router_Static_Route":
                                                       self.on_nb_route,
                                                   "Logical_Router_Policy":
                                                       self.on_nb_policy,
                                                   "DHCP_Options": self.on_nb_dhcp_options,
                                                   "DNS": self.on_nb_dns,
                                                   "QoS": self.on_switch_rows,
                                                   "Forwarding_Group": self.on_switch_rows})),
            sb=Group(table_inputs(sb, sorted(NORTHD_SB_INPUTS + LFLOW_SB_INPUTS), covered)))

    def _tables(self) -> tuple[Mapping[str, ReplicaTable], Mapping[str, ReplicaTable]]:
        return (declared(self.group_data("nb"), self.nb_schema, self.name),
                declared(self.group_data("sb"), self.sb_schema, self.name))

    def new_delta(self) -> LflowDelta:
        return LflowDelta()

    def merge_deltas(self, earlier: LflowDelta, later: LflowDelta) -> LflowDelta | None:
        return None  # a recompute changed everything

    def run(self, *, northd: NorthdData, sync_from_sb: SbFeedback,
            nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable]) -> LflowData:
        return build_lflow_data(declared(nb, self.nb_schema, self.name),
                                declared(sb, self.sb_schema, self.name), northd)

    # `northd` applied VIFs in place (its PortsDelta names their bindings): the flows of
    # their switches, and of the routers those switches are connected to (a router
    # resolves its switches' VIF addresses), are built again; anything else recomputes.
    def on_northd(self, change: Change[Any, Any]) -> Handled:
        delta = change.delta
        if not isinstance(delta, PortsDelta) or not self.has_data or delta.every_flow:
            return Handled.UNHANDLED
        northd: NorthdData = change.data
        old = self.data
        ports = northd.core.ports
        switches = northd.core.datapaths.switches
        dps: set[str] = set()
        vifs: set[str] = set()  # switch ports of type "" (or gone from a switch)
        whole: set[str] = set()  # datapaths whose neighbours are built again whole
        rewired = set(delta.rewired)  # switches that gained or lost a router port
        joined: dict[str, set[str]] = {}  # of those, the router ports they gained or lost
        mixed: set[str] = set()  # switches whose other ports changed
        plain: dict[str, set[str]] = {}  # of those, the VIFs changed there
        unplain: set[str] = set()  # of those, where one was or is other than a VIF there
        read: set[str] = set()  # of those, where their own flows read one (`lflow_ports`)
        routers = northd.core.datapaths.routers
        lrps: dict[str, set[str]] = {}  # routers that gained or lost plain router ports
        added: set[str] = set()  # the ports made
        left: set[str] = set()  # the router-type switch ports gone (`joined`)
        # (a binding put again for a datapath kept, renamed say, moves no flow: what
        # changed in it, `delta.flows` names)
        made_or_gone = {str(k) for k in delta.sb.get("Datapath_Binding", ())
                        if (k in old.flows.by_dp) != (northd.core.datapaths.get(str(k))
                                                      is not None)}
        for name in delta.sb.get("Port_Binding", ()):
            if name in delta.unread:
                continue
            port = ports.ports.get(str(name))
            was = old.port_dps.get(str(name))
            key = port.dp.key if port is not None else was[0] if was is not None else None
            if key is None:
                return Handled.UNHANDLED
            dps.add(key)
            if was is not None and port is not None and was[0] != key:
                dps.add(was[0])  # (a port moved between switches: its old one whole)
                unplain.add(was[0])
            if was is None:
                added.add(str(name))
            if key in switches and port is None and was is not None and was[0] == key \
                    and was[3]:  # (a router-type port gone, its switch kept)
                rewired.add(key)
                joined.setdefault(key, set()).add(str(name))
                left.add(str(name))
            elif key in switches and (port is None or is_vif(port)):
                vifs.add(str(name))
                mixed.add(key)
                plain.setdefault(key, set()).add(str(name))
                if was is not None and (was[0] != key or not was[1]):
                    unplain.add(key)
                if (was is not None and was[2]) or (port is not None and read_by_switch(port)):
                    read.add(key)
            elif key in switches and port is not None and port.type == "router":
                rewired.add(key)
                joined.setdefault(key, set()).add(port.name)
            elif key in routers and key not in made_or_gone and (was is None) != (port is None) \
                    and (plain_lrp(port) if port is not None else not was[2]):  # type: ignore[index]
                lrps.setdefault(key, set()).add(str(name))
            else:
                whole.add(key)
        # (a router port's binding comes with its switch port's: its router is in `dps`)
        for name in delta.sb.get("Port_Binding", ()):  # (where each port is now)
            port = ports.ports.get(str(name))
            if port is None:
                old.port_dps.pop(str(name), None)
            else:
                old.port_dps[port.name] = port_dp(port)
        dps |= made_or_gone
        every_joined = {key: set(names) for key, names in joined.items()
                        if key not in made_or_gone}
        # Switches that gained router ports and nothing else: those ports' requests and
        # the switches' own flows built again, the other ports' kept.
        joined = {key: names for key, names in joined.items()
                  if key not in mixed and key not in made_or_gone
                  and ports_kept_alike(ports, switches[key], names, added, left)}
        dps -= joined.keys()
        # Routers that gained or lost plain router ports and nothing else: likewise
        # (`lflows.rebuild_router_ports`); a switch made or gone beside one of them puts
        # no more there than its ports' requests.
        lrps = {key: names for key, names in lrps.items()
                if key not in whole and key not in delta.flows}
        dps -= lrps.keys()
        next_to: set[str] = set()
        for key in list(dps):
            for rp in ports.router_ports.get(key, ()):
                peer = ports.peer_of(rp)
                if peer is None or (key in made_or_gone and peer.dp.key in lrps):
                    continue
                (dps if key in whole | made_or_gone else next_to).add(peer.dp.key)
        next_to -= dps
        lrps = {key: names for key, names in lrps.items() if key not in dps}
        # Switches whose VIFs alone changed (added, updated or deleted, VIFs before and
        # after): those VIFs' requests and the switches' own flows built again, the
        # other ports' kept (their routers get the VIFs' requests, `next_to`).
        focused = {key: names for key, names in plain.items()
                   if key not in unplain | whole | made_or_gone | rewired
                   and vifs_kept_alike(ports, key, names)}
        dps -= focused.keys()
        quiet = {key: names for key, names in focused.items() if key not in read}
        focused = {key: names for key, names in focused.items() if key in read}
        # (the rebuilds of ports changed share one context, its facts built once; muted,
        # they have one of their own)
        ctx = lflow_context(*self._tables(), northd)
        whole_too = guarded(ports, rewired - dps) if rewired else set()
        if whole_too:
            dps |= whole_too
            joined = {key: names for key, names in joined.items() if key not in whole_too}
        readers, read_on = router_port_readers(ctx, rewired, dps) if rewired \
            else (set(), set())
        flows, lb_dps = set(delta.flows), set[str]()
        focus = {n for n in delta.focus if n in ports.ports}
        if delta.lbs:
            whole, lb_dps = lb_rebuilds(old.lbs, northd.extra.lbs, delta.lbs,
                                        northd.core.datapaths, ports)
            # (a router's VIPs are what its switch ports look up: `ls_rport_arp`)
            lsps, peers = ports.router_neighbours(whole & northd.core.datapaths.routers.keys())
            flows |= whole | peers
            focus |= lsps
        groups = DP_GROUP_TABLE in delta.sb
        nats = {key: ips for key, ips in delta.nats.items()
                if key in northd.core.datapaths.routers}
        if not dps and not flows and not lb_dps and not groups and not focus and not rewired \
                and not joined and not focused and not quiet and not delta.claimed and not nats \
                and not lrps:
            if (delta.sb.keys() - FLOWLESS - {"Port_Binding"}) or delta.nb.keys() - FLOWLESS_NB \
                    or delta.sb.get("Port_Binding", set()) - delta.unread:
                return Handled.UNHANDLED
            old.lbs = northd.extra.lbs
            return Handled.HANDLED_UNCHANGED
        with muted():  # a VIF's rebuild is not where 23.03 would warn
            results = [self._rebuild(northd, dps, groups=groups,
                                     owned=(next_to, vifs) if next_to and vifs else None,
                                     ctx=ctx)]
            for alone, rebuilt in ((joined, rebuild_focused), (focused, rebuild_focused),
                                   (quiet, rebuild_vifs)):
                if alone:
                    results.append(self._changed(northd, rebuilt(
                        self.data.flows, ctx, frozenset(alone),
                        frozenset().union(*alone.values()))))
            kept, about = pair_readers(ports, readers, every_joined, added, left)
            if readers - kept:
                results.append(self._changed(northd, rebuild_owned(
                    self.data.flows, ctx, frozenset(read_on), frozenset(readers - kept))))
            if kept:
                results.append(self._changed(northd, rebuild_pairs(
                    self.data.flows, ctx, frozenset(
                        peer.dp.key for n in kept
                        if (peer := ports.peer_of(ports.ports[n])) is not None),
                    frozenset(kept), frozenset(about))))
            if lrps:
                results.append(self._router_ports(northd, ctx, lrps))
        # (NAT rules, load balancers changed: their flows report what a recompute would;
        # these rebuilds share one context, its facts built once and reported)
        ctx = lflow_context(*self._tables(), northd)
        for key, ips in nats.items():  # (a VIP that is a NAT IP: its flows read the rule)
            vips = router_vips(ctx, northd.core.datapaths.routers[key])
            if not ips.isdisjoint(vips.v4) or not ips.isdisjoint(vips.v6):
                flows.add(key)
        nat_routers = frozenset(nats.keys() - flows - dps)
        if flows:
            results.append(self._rebuild(northd, flows, ctx=ctx))
        nat_ips = {key: frozenset(nats[key]) for key in nat_routers}
        if nat_routers:
            results.append(self._changed(northd, rebuild_router_nat(
                self.data.flows, ctx, nat_routers, nat_ips)))
        focus_dps = {ports.ports[n].dp.key for n in focus} - flows - dps
        if focus_dps:
            results.append(self._changed(northd, rebuild_router_lookups(
                self.data.flows, ctx, frozenset(focus_dps),
                frozenset(n for n in focus if ports.ports[n].dp.key in focus_dps), nat_ips)))
        claimed = frozenset(n for n in delta.claimed if n in ports.ports)
        claimed_on = frozenset(peer.dp.key for key in delta.claimed_on
                               for lsp in ports.router_ports.get(key, ())
                               if (peer := ports.peer_of(lsp)) is not None) - flows - dps
        if claimed and claimed_on:  # (virtual ports claimed: their VIPs on the routers)
            results.append(self._changed(northd, rebuild_owned(
                self.data.flows, ctx, claimed_on, claimed)))
        lb_dps -= flows | dps
        if lb_dps and Handled.UNHANDLED not in results:
            owners: set[Owner] = set()
            only: dict[str, frozenset[str] | None] = {}
            for key in delta.lbs:
                theirs, only[key] = lb_owners(old.lbs.lbs.get(key), northd.extra.lbs.lbs.get(key))
                owners |= theirs
            results.append(self._changed(northd, rebuild_lbs(
                self.data.flows, ctx, frozenset(owners), only, frozenset(lb_dps))))
        if Handled.UNHANDLED in results:
            return Handled.UNHANDLED
        self.data.lbs = northd.extra.lbs
        return Handled.HANDLED_UPDATED if Handled.HANDLED_UPDATED in results \
            else Handled.HANDLED_UNCHANGED

    def _rebuild(self, northd: NorthdData, dps: set[str], groups: bool = False,
                 owned: tuple[set[str], set[str]] | None = None,
                 ctx: LflowContext | None = None) -> Handled:
        """The flows of the datapaths `dps` built again, the rows that changed tracked.
        What the builders report of those datapaths is reported (the NB data changed
        is theirs), unless the caller mutes it. `groups`: `northd`'s datapath groups
        changed (desired again here, flows changed or not); `owned`: datapaths and
        switch ports whose requests there alone are built again
        (`lflows.rebuild_owned`); `ctx`: the context to build in (a new one by
        default)."""
        old = self.data
        datapaths = northd.core.datapaths
        if self.delta is not None and dps <= self.delta.built:
            dps = set()  # (built with them already; not some alone: another's build
            # may put flows on them, a router port's peer resolving its addresses)
        if len(dps) > max(REBUILD_ANY, REBUILD_AT_MOST * (len(datapaths.switches)
                                                          + len(datapaths.routers))):
            return Handled.UNHANDLED  # (a recompute costs less)
        if ctx is None:
            ctx = lflow_context(*self._tables(), northd)
        changed = rebuild(old.flows, ctx, frozenset(dps)) if dps else set()
        if owned is not None:
            changed |= rebuild_owned(old.flows, ctx, frozenset(owned[0]), frozenset(owned[1]))
        handled = self._changed(northd, changed, groups)
        if dps:
            self.track().built |= dps
        return handled

    def _router_ports(self, northd: NorthdData, ctx: LflowContext,
                      lrps: dict[str, set[str]]) -> Handled:
        """The routers `lrps` gained or lost those plain router ports alone: their
        requests, the routers' own flows, the routes and policies they move, their NAT
        flows built again, and the requests there of the switch ports now or no longer
        beside them. (Not marked as the routers' rules built: a route or policy added
        in the same run is built by its own handler.)"""
        table = self.data.flows
        return self._changed(northd, rebuild_router_ports(
            table, ctx, frozenset(lrps), frozenset().union(*lrps.values()),
            frozenset(beside_changed(table, ctx.ports, lrps))))

    def _changed(self, northd: NorthdData, changed: set[FlowKey], groups: bool = False
                 ) -> Handled:
        """The desired rows of the flows `changed` (in place in the table) made again,
        and tracked."""
        old = self.data
        if not changed and not groups:
            return Handled.HANDLED_UNCHANGED
        desired, users, touched = desired_rows(northd, old.flows, old.sb, changed,
                                           old.group_users, groups_kept=not groups)
        port_dps = old.port_dps
        self.data = LflowData(old.flows, desired, port_dps, users, old.lbs)
        delta = self.track()
        delta.rows.update(flow_row_key(k) for k in changed)
        if touched is None:
            delta.groups = None
        elif delta.groups is not None:
            delta.groups |= touched
        return Handled.HANDLED_UPDATED

    def _acls_alone(self, northd: NorthdData, column: str, switches: set[str],
                    before: set[str], after: set[str]) -> Handled | None:
        """ACLs added to or taken from the `acls` of one kind of owner (switches or port
        groups; `before`/`after`: the ACL UUIDs they listed) on `switches`: the flows of
        those ACLs alone built again (`ls_acl.build_acl_flows`), where no other ACL
        changed in this run and every switch keeps its ACL facts (`has_acls`,
        `has_stateful_acl`); None where that does not hold (the caller rebuilds the
        switches)."""
        acl_leaf = self.inputs.get(leaf_name("NB", "ACL"))
        acl_changes = acl_leaf.delta if acl_leaf is not None and acl_leaf.updated else {}
        other = leaf_name("NB", "Port_Group" if column == "ls" else "Logical_Switch")
        other_leaf = self.inputs.get(other)
        if acl_changes is None or (other_leaf is not None and other_leaf.updated) \
                or any(rc.old is not None and rc.new is not None
                       for rc in acl_changes.values()):
            return None
        added, removed = after - before, before - after
        gone: dict[str, IdlRow] = {}
        for uuid in removed:
            rc = acl_changes.get(uuid)
            if rc is None or rc.old is None or rc.new is not None:
                return None  # (an ACL taken from one owner and kept by another)
            gone[uuid] = rc.old
        ctx = lflow_context(*self._tables(), northd)
        by_key = northd.core.datapaths.switches
        dps = [dp for key, dp in by_key.items() if key in switches]
        for dp in dps:
            facts = ctx.switch(dp)
            was = [a for a in facts.acls if a.uuid not in added] + list(gone.values())
            if (bool(was), any(a.action == "allow-related" for a in was)) != \
                    (facts.has_acls, facts.has_stateful_acl):
                return None
        new = LflowTable(only=frozenset(switches))
        new.source = "ls_acl.py"
        build_acl_flows(ctx, new, dps, added)
        owners = frozenset(("acl", u) for u in added | removed)
        return self._changed(northd, self.data.flows.replace_owned(switches, owners, new))

    # An ACL of switches or port groups changed: those switches' flows built
    # again. An ACL exists only while referenced (it is not a root table): inserted or
    # deleted, its switches' `acls` change too, and `on_nb_ls` rebuilds them.
    def on_nb_acl(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        nb = self._tables()[0]
        acls = {u for u, rc in change.delta.items() if rc.old is not None and rc.new is not None}
        if not acls:
            return Handled.HANDLED_UNCHANGED
        northd: NorthdData = self.inputs["northd"].data
        dps = _acl_switches(nb, acls, northd)
        return self._rebuild(northd, dps) if dps else Handled.HANDLED_UNCHANGED

    # Flows read of the NB meters which names exist and which are fair: a meter
    # created, deleted, renamed or made fair or not builds again the datapaths whose
    # Copp names it and the switches of the ACLs that log through it (a walk of the
    # datapaths and the ACLs). Its bands are the SB rows' alone (`northd`).
    def on_nb_meter(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        names = {str(r.name) for rc in change.delta.values() for r in (rc.old, rc.new)
                 if r is not None and (rc.old is None or rc.new is None
                                       or rc.old.name != rc.new.name
                                       or rc.old.fair != rc.new.fair)}
        if not names:
            return Handled.HANDLED_UNCHANGED
        nb = self._tables()[0]
        northd: NorthdData = self.inputs["northd"].data
        datapaths = northd.core.datapaths
        dps = {key for key, dp in (*datapaths.switches.items(), *datapaths.routers.items())
               if isinstance(dp.nb.copp, IdlRow) and names & set(dp.nb.copp.meters.values())}
        acls = nb.get("ACL")
        dps |= _acl_switches(nb, {a.uuid for a in (acls.rows.values() if acls else ())
                                  if a.meter in names}, northd)
        return self._rebuild(northd, dps) if dps else Handled.HANDLED_UNCHANGED

    # A service monitor's `status` (ovn-controller's) decides which backends of a
    # health-checked VIP the flows name: the load balancers with such a VIP and a
    # backend a changed monitor probes have their own flows built again.
    def on_service_monitor(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        probed = {(str(r.ip), int(r.port)) for rc in change.delta.values()
                  for r in (rc.old, rc.new) if r is not None}
        northd: NorthdData = self.inputs["northd"].data
        lbs = [lb for lb in northd.extra.lbs.lbs.values()
               if any(v.health_check is not None
                      and any((b.ip_str, b.port) in probed for b in v.backends)
                      for v in lb.vips)]
        if not lbs:
            return Handled.HANDLED_UNCHANGED
        owners: set[Owner] = set()
        for lb in lbs:
            owners |= lb_owners(lb, None)[0]
        dps = frozenset().union(*(lb.switches | lb.routers for lb in lbs))
        ctx = lflow_context(*self._tables(), northd)
        return self._changed(northd, rebuild_lbs(
            self.data.flows, ctx, frozenset(owners), dict.fromkeys(lb.key for lb in lbs),
            dps))

    # A Copp row updated: the datapaths naming it built again (created or deleted, it
    # comes with their `copp`).
    def on_nb_copp(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        dps = self._listing(change.delta, "Logical_Switch", "copp") | \
            self._listing(change.delta, "Logical_Router", "copp")
        return self._rebuild(self.inputs["northd"].data, dps) if dps \
            else Handled.HANDLED_UNCHANGED

    # DHCP options changed: the switches of the ports that name them built again (a
    # row created or deleted is named by no port that did not change with it).
    def on_nb_dhcp_options(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        changed = [(u,) for u, rc in change.delta.items()
                   if rc.old is not None and rc.new is not None]
        lsps = self._tables()[0].get("Logical_Switch_Port")
        if not changed or lsps is None:
            return Handled.HANDLED_UNCHANGED
        northd: NorthdData = self.inputs["northd"].data
        ports = northd.core.ports.ports
        dps = {port.dp.key for column in LSP_INDEXES
               for row in rows_where(lsps, column, changed)
               if (port := ports.get(row.name)) is not None and port.nb is row}
        return self._rebuild(northd, dps) if dps else Handled.HANDLED_UNCHANGED

    # A QoS rule or a forwarding group updated: the switches listing it built again
    # (created or deleted, it comes with its switch's list: `on_nb_ls`).
    def on_switch_rows(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        dps = self._listing(change.delta, "Logical_Switch", SWITCH_LISTS[change.node])
        return self._rebuild(self.inputs["northd"].data, dps) if dps \
            else Handled.HANDLED_UNCHANGED

    # A DNS row whose records came or went: the switches listing it built again (their
    # DNS flows are there while a row of theirs has records). `northd` changed the SB
    # row; a row created or deleted comes with its switches' `dns_records` (`on_nb_ls`).
    def on_nb_dns(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        northd: NorthdData = self.inputs["northd"].data
        table = northd.sb.tables.get("DNS")
        dps: set[str] = set()
        for uuid, rc in change.delta.items():
            row = table.rows.get(uuid) if table is not None else None
            if row is not None and rc.old is not None and rc.new is not None \
                    and bool(rc.old.records) != bool(rc.new.records):
                dps.update(str(ref.key) for ref in row["datapaths"])
        return self._rebuild(northd, dps) if dps else Handled.HANDLED_UNCHANGED

    # A port group's `acls` changed: the flows of the switches it has ports on built
    # again; any other change of a group reaches `northd`, which recomputes or names
    # the switches that gained or lost the group (`on_northd`).
    def on_nb_port_group(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        northd: NorthdData = self.inputs["northd"].data
        dps: set[str] = set()
        before: set[str] = set()
        after: set[str] = set()
        alone = True  # (only `acls` changed: the groups' switches are theirs still)
        for rc in change.delta.values():
            if rc.old is not None and rc.new is not None and "acls" in changed_columns(rc):
                dps |= _group_switches(rc.new, northd)
                before.update(rc.old.value("acls"))
                after.update(rc.new.value("acls"))
                alone = alone and set(changed_columns(rc)) == {"acls"}
        if not dps:
            return Handled.HANDLED_UNCHANGED
        handled = self._acls_alone(northd, "pg", dps, before, after) if alone else None
        return handled if handled is not None else self._rebuild(northd, dps)

    # A switch's `acls` changed: its flows built again; any other change of a switch
    # reaches `northd`, which recomputes or names the ports it changed (`on_northd`).
    def on_nb_ls(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        northd: NorthdData = self.inputs["northd"].data
        changed = {uuid: rc for uuid, rc in change.delta.items() if rc.old is not None
                   and rc.new is not None and LS_REBUILT & set(changed_columns(rc))}
        if not changed:
            return Handled.HANDLED_UNCHANGED
        dps = set(changed)
        handled = None
        if all(set(changed_columns(rc)) == {"acls"} for rc in changed.values()):
            handled = self._acls_alone(
                northd, "ls", dps,
                {u for rc in changed.values() if rc.old for u in rc.old.value("acls")},
                {u for rc in changed.values() if rc.new for u in rc.new.value("acls")})
        return handled if handled is not None else self._rebuild(northd, dps)

    # A router's routes or policies changed: the flows of those added or gone
    # (`lflow_rules`; any other change of a router reaches `northd`).
    def on_nb_lr(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        routes, policies = self._rules()
        return either(
            self._router_rules("routes", added_or_gone(change.delta, routes,
                                                       routes_alone_now), rebuild_routes),
            self._router_rules("policies", added_or_gone(change.delta, policies,
                                                         policies_alone), rebuild_policies))

    # A route updated: its flows built again on the routers that list it (inserted or
    # deleted, its router's `static_routes` changes too: `on_nb_lr`).
    def on_nb_route(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        return self._router_rules("routes", updated(
            self._routers(), self._rules()[0], routes_alone_now), rebuild_routes)

    # A policy updated: its flows built again on the routers that list it (inserted or
    # deleted, its router's `policies` changes too: `on_nb_lr`).
    def on_nb_policy(self, change: Change[ReplicaTable, TableChanges]) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        return self._router_rules("policies", updated(
            self._routers(), self._rules()[1], policies_alone), rebuild_policies)

    def _rules(self) -> tuple[Rules, Rules]:
        """The routes and the policies, with this run's changes of them."""
        nb = self._tables()[0]
        return (Rules("static_routes", nb.get("Logical_Router_Static_Route"),
                      self.inputs[ROUTE_LEAF].delta),
                Rules("policies", nb.get("Logical_Router_Policy"),
                      self.inputs[POLICY_LEAF].delta))

    def _routers(self) -> Iterable[IdlRow]:
        routers = self._tables()[0].get("Logical_Router")
        return routers.rows.values() if routers is not None else ()

    def _router_rules(self, kind: str, rules: RuleRebuilds, rebuild_rules: RulesRebuild
                      ) -> Handled:
        """The flows of the routes or the policies (`kind`) of the routers `rules` names
        built again (all of a router's, or those named), where no handler of this run
        built them all already."""
        northd: NorthdData = self.inputs["northd"].data
        known = northd.core.datapaths.routers  # (a disabled one: none)
        rules = {key: only for key, only in rules.items() if key in known}
        if self.delta is not None:
            rules = {key: only for key, only in rules.items()
                     if key not in self.delta.built and (kind, key) not in self.delta.rules}
        if not rules:
            return Handled.HANDLED_UNCHANGED
        self.track().rules.update((kind, key) for key, only in rules.items() if only is None)
        ctx = lflow_context(*self._tables(), northd)
        return self._changed(northd, rebuild_rules(
            self.data.flows, ctx, frozenset(rules),
            {key: only for key, only in rules.items() if only is not None}))

    def _listing(self, delta: TableChanges, table: str, column: str) -> set[str]:
        """The switches or routers (`table`) whose `column` lists a row the delta
        updated."""
        rows = {u for u, rc in delta.items() if rc.old is not None and rc.new is not None}
        listing = self._tables()[0].get(table)
        if not rows or listing is None:
            return set()
        return {dp.uuid for dp in listing.rows.values() if rows & _uuids(getattr(dp, column))}

    # A port's `up` (what `sync_from_sb` decides) moves flows only where the ARP/ND
    # responder skips ports that are down: with NB_Global `ignore_lsp_down=false`.
    def on_up(self, change: Change[Any, Any]) -> Handled:
        row = singleton(self._tables()[0].get("NB_Global"))
        if row is not None and not smap_bool(row.options, "ignore_lsp_down", True):
            return Handled.UNHANDLED
        return Handled.HANDLED_UNCHANGED
