"""The `northd` node (OVN's en-northd): every builder of the desired SB tables and
NB write-backs except the logical flows, from the NB tables and the SB tables it reads.

Rules kept here:
- It reads the NB tables (every one: group `nb`), the SB tables builders read
  (`NORTHD_SB_INPUTS`: group `sb`), the time (`now`, whose change is never reported:
  the clock moving recomputes nothing) and the last committed SB nb_cfg
  (`sync_cfg_committed`, handled by `noop`: `sync_cfg` covers it, its handshake
  overrides what this node builds of it in `sync_to_sb`).
- It recomputes on any NB change except these. Two cannot move its output:
  NB_Global changes of the handshake columns alone (`sync_cfg` recomputes on them) and
  LSP `up` written back. Its SB tables' handlers are `nodes.northd_sb`'s (with their
  rules). NB DHCP options, QoS rules, forwarding groups and Copp rows are the flows'
  alone (`FLOWS_ONLY_TABLES`), NB connections and SSL nobody's; a DNS row's records,
  and the DNS rows a switch lists, change the SB DNS rows in place (`build.dns`),
  gateway chassis, NB HA chassis and their groups the SB HA chassis groups
  (`build.ha_groups_incremental`), NB meters and the ACLs' fair meters the SB meters
  (`build.meters`), NB static MAC bindings (and the SB rows of their names) theirs
  (`build.ports_static_mac`), template variables and mirrors theirs
  (`build.lb_templates`, `build.ports_mirrors`), BFD sessions (NB's, SB's status, and
  routes naming them) theirs and the flows of the routers reading them
  (`build.bfd_incremental`). With `incremental_ports` an ordinary VIF added, deleted or
  updated, a switch or router created or deleted (a router with its ports: `on_nb_lrp`
  deletes it after them) and a router port, its switch port paired or unpaired in
  either order, added or deleted, or updated in what the flows and its binding read
  alone (`build.lrp_updated`), and a switch's or router's name, external_ids and
  settings (`build.datapaths_updated`) are applied in place
  (`build.ports_incremental`, `build.datapaths_incremental`), and so are load
  balancers, their groups and the load balancers of switches and routers
  (`build.lb_incremental`), NAT rules (`build.nat_incremental`), port groups and NB
  address sets (`build.groups_incremental`), their changed keys recorded as the
  node's `PortsDelta` (with the datapaths whose flows change). ACLs
  changed (a switch's or a port group's `acls`, an ACL but for its meter) and a
  router's routes (without BFD) and policies move nothing here: they are `lflow`'s,
  which reads the NB tables itself.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ...engine import Group, Handled, Input, Leaf, Node, noop
from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...idl.tracking import changed_columns
from ...ovsdb.changeset import RowChange
from ..build.address_sets import port_ips
from ..build.bfd_incremental import bfd_changed, sessions_naming
from ..build.core import CoreData, build_core
from ..build.datapaths import router_enabled, smap_bool
from ..build.datapaths_incremental import (
    add_router,
    keys_before_routers,
    new_datapath_keys,
    remove_routers,
    renumber,
    simple_router,
)
from ..build.datapaths_updated import COLUMNS as DP_COLUMNS
from ..build.datapaths_updated import datapaths_updated, ipam_again
from ..build.delta import PortsDelta
from ..build.dns import dns_changed, dns_listed
from ..build.extra import ExtraData, build_extra
from ..build.gateway_toggled import (
    gateway_regrouped,
    gateway_toggled,
    gateways_regrouped,
    gateways_toggled,
)
from ..build.global_cfg import global_config
from ..build.groups_incremental import groups_changed, member_sets
from ..build.ha_groups_incremental import gateway_chassis_only, ha_groups_changed
from ..build.inputs import BuildInput
from ..build.ipam_macs import MAC_MOVERS
from ..build.lb_incremental import (
    LB_COLUMNS,
    LB_TABLES,
    has_lbs,
    lb_row,
    lb_rows,
    lbs_changed,
    nat_rows,
    probes_moved,
)
from ..build.lb_templates import template_vars_changed
from ..build.lrp_updated import lrps_updated, updatable
from ..build.meters import acl_meters_changed, meters_changed
from ..build.nat_incremental import nats_changed
from ..build.ports_incremental import router_ports_changed, switch_ports_changed
from ..build.ports_lookup import port_names, refresh_datapaths
from ..build.ports_mirrors import mirrors_changed
from ..build.ports_static_mac import named_keys, static_macs_changed
from ..build.router_toggled import router_toggled, routers_toggled
from ..build.walk import resort_router_ports
from ..desired import DesiredDb
from .northd_global import GlobalHandlers
from .northd_sb import SbHandlers
from .tables import (
    TableChange,
    TableHandler,
    TableLeaf,
    Tables,
    declared,
    either,
    followed,
    leaf_name,
    only,
    table_inputs,
)

# SB tables the builders read (the rest they only write, or never look at).
NORTHD_SB_INPUTS = ("SB_Global", "Chassis", "Chassis_Private", "Encap", "Datapath_Binding",
                    "Port_Binding", "IGMP_Group", "Multicast_Group", "MAC_Binding",
                    "Static_MAC_Binding", "FDB", "BFD")
# Logical_Switch and Logical_Router columns only the flows read.
LS_FLOWS_ONLY = frozenset(("acls", "qos_rules", "forwarding_groups"))
# NB tables no builder reads: the flows' alone (a port's DHCP options; rows that come
# and go with a switch's `qos_rules` or `forwarding_groups`), or nobody's (the
# databases' own connections).
FLOWS_ONLY_TABLES = ("DHCP_Options", "QoS", "Forwarding_Group", "Copp", "Connection", "SSL")
LR_FLOWS_ONLY = frozenset(("static_routes", "policies"))
# NB Logical_Switch_Port columns northd writes back and no builder reads (`sync_from_sb`
# decides them): a builder that starts reading one must take it out of here.
LSP_WRITTEN_ONLY = frozenset(("up",))
@dataclass
class NorthdData:
    sb: DesiredDb
    nb: DesiredDb
    core: CoreData
    extra: ExtraData


class NorthdNode(SbHandlers, GlobalHandlers, Node[NorthdData, PortsDelta]):
    """Every builder of parts N1 and N2 into desired SB and NB state."""

    def __init__(self, nb: Mapping[str, TableLeaf], sb: Mapping[str, TableLeaf],
                 now: Leaf[int, int], cfg: Leaf[int, int], *,
                 incremental_ports: bool = True) -> None:
        self.incremental_ports = incremental_ports
        self.nb_schema, self.sb_schema = frozenset(nb), frozenset(sb)
        nb_handlers: dict[str, TableHandler] = {
            "NB_Global": self.on_nb_global, "Logical_Switch_Port": self.on_nb_lsp,
            "Logical_Router_Port": self.on_nb_lrp, "Port_Group": self.on_nb_port_group,
            "ACL": self.on_nb_acl, "Logical_Router": self.on_nb_lr,
            "Logical_Router_Static_Route": self.on_nb_route,
            "Logical_Router_Policy": self.on_nb_policy}
        if incremental_ports:
            nb_handlers["Logical_Switch"] = self.on_nb_ls
            nb_handlers["Load_Balancer"] = self.on_nb_lb
            nb_handlers["Load_Balancer_Group"] = self.on_nb_lb
            nb_handlers["Load_Balancer_Health_Check"] = self.on_nb_lb_health_check
            nb_handlers["NAT"] = self.on_nb_nat
            nb_handlers["Address_Set"] = self.on_nb_address_set
            nb_handlers["Gateway_Chassis"] = self.on_nb_gateway_chassis
            nb_handlers["HA_Chassis"] = self.on_nb_ha_chassis
            nb_handlers["HA_Chassis_Group"] = self.on_nb_ha_chassis_group
            nb_handlers["DNS"] = self.on_nb_dns
            nb_handlers["Meter"] = self.on_nb_meter
            nb_handlers["Meter_Band"] = self.on_nb_meter
            nb_handlers["Static_MAC_Binding"] = self.on_static_mac
            nb_handlers["Chassis_Template_Var"] = self.on_nb_template_var
            nb_handlers["Mirror"] = self.on_nb_mirror
            nb_handlers["BFD"] = self.on_bfd
        for table in MAC_MOVERS & nb_handlers.keys():
            nb_handlers[table] = followed(nb_handlers[table], self._refresh_macs)
        for table in ("Logical_Switch_Port", "Logical_Router_Port"):
            nb_handlers[table] = self._with_peer_lbs(nb_handlers[table],
                                                     table == "Logical_Router_Port")
        nb_handlers.update(dict.fromkeys(FLOWS_ONLY_TABLES, self.on_flows_only))
        self.ls_leaf = nb["Logical_Switch"].name if "Logical_Switch" in nb else None
        self._names: Counter[str] | None = None  # NB port names, since the last recompute
        # The changes the load balancers were last applied for (`_lbs`): the handlers of
        # one run that reach them find them applied.
        self._lbs_for: tuple[Any, ...] = ()
        sb_handlers = {"SB_Global": self.on_cfg_only, "Chassis_Private": self.on_cfg_only,
                       "Port_Binding": self.on_port_binding,
                       "Datapath_Binding": self.on_datapath_binding,
                       "Multicast_Group": self.on_multicast_group,
                       "MAC_Binding": self.on_mac_binding, "FDB": self.on_fdb}
        if incremental_ports:
            sb_handlers["Static_MAC_Binding"] = self.on_static_mac
            sb_handlers["BFD"] = self.on_bfd
            sb_handlers["IGMP_Group"] = self.on_igmp_group
            sb_handlers["Chassis"] = self.on_chassis
            sb_handlers["Encap"] = self.on_encap
        super().__init__(
            "northd",
            nb=Group(table_inputs(nb, sorted(nb), nb_handlers)),
            sb=Group(table_inputs(sb, sorted(NORTHD_SB_INPUTS), sb_handlers)),
            now=Input(now), sync_cfg_committed=Input(cfg, noop))

    def _with_peer_lbs(self, handler: TableHandler, lrp: bool) -> TableHandler:
        """`handler`, then, with `install_ls_lb_from_router`, the load balancers found
        again where a router port changed (a router's reach its switches)."""
        @functools.wraps(handler)
        def call(change: TableChange) -> Handled:
            handled = handler(change)
            if handled is Handled.UNHANDLED or change.delta is None or not smap_bool(
                    self.data.extra.config.nb_options, "install_ls_lb_from_router") \
                    or not any(r is not None and (lrp or r.type == "router")
                               for rc in change.delta.values() for r in (rc.old, rc.new)):
                return handled
            return either(handled, self._lbs(again=True))
        return call

    def _refresh_macs(self) -> None:  # (a router port's MAC moves its binding)
        if self.has_data and self.delta is not None:
            self.data.core.refresh_macs(self.delta.sb.get("Port_Binding", ()))

    def nb_tables(self) -> Tables:
        return declared(self.group_data("nb"), self.nb_schema, self.name)

    def sb_tables(self) -> Tables:
        return declared(self.group_data("sb"), self.sb_schema, self.name)

    def new_delta(self) -> PortsDelta:
        return PortsDelta()

    def merge_deltas(self, earlier: PortsDelta, later: PortsDelta) -> PortsDelta | None:
        return None  # a recompute changed everything

    def run(self, *, nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable],
            now: int, sync_cfg_committed: int) -> NorthdData:
        self._names = None
        self._lbs_for = ()
        inp = BuildInput(nb=declared(nb, self.nb_schema, self.name),
                         sb=declared(sb, self.sb_schema, self.name))
        sb_db, nb_db = DesiredDb(), DesiredDb()
        # The MAC prefix IPAM uses where NB has none: the one the globals write back.
        prefix = global_config(inp.nb, inp.sb).mac_prefix
        core = build_core(inp, sb_db, nb_db, mac_prefix=prefix, from_sb=False)
        extra = build_extra(inp, core, sb_db, nb_db, now_ms=now,
                            committed_sb_cfg=sync_cfg_committed)
        return NorthdData(sb_db, nb_db, core, extra)

    # A switch's `ports` alone: the ports it gains and loses are inserted and deleted
    # in the same changes, which `on_nb_lsp` handles (it reads this input's delta and
    # gives up on anything else, a port moved between switches for one). A switch
    # created or deleted with ordinary VIFs is applied in place, by `on_nb_lsp` if ports
    # changed too, else here (with its load balancers and DNS rows: `_switch_ports`).
    # A switch's `acls` alone are the flows' (`lflow` rebuilds the switch).
    def on_nb_ls(self, change: TableChange) -> Handled:
        lsp = self.inputs.get(leaf_name("NB", "Logical_Switch_Port"))
        ports_handled = lsp is not None and lsp.updated
        created_or_deleted = moved = False

        def ok(rc: RowChange[IdlRow]) -> bool:
            nonlocal created_or_deleted, moved
            if rc.old is None or rc.new is None:
                created_or_deleted = True
                return True  # (`switch_ports_changed` decides)
            cols = set(changed_columns(rc))
            # (`ports` changed with no port changed: ports moved between switches)
            moved |= "ports" in cols and not ports_handled
            return cols <= {"ports", "dns_records"} | LS_FLOWS_ONLY | LB_COLUMNS \
                | (DP_COLUMNS if self.incremental_ports else set()) \
                and ("ports" not in cols or ports_handled or self.incremental_ports) \
                and ("dns_records" not in cols or self.incremental_ports)

        if not self.has_data:
            return Handled.UNHANDLED
        handled = only(change, ok)
        if handled is not Handled.UNHANDLED:
            # (the flows read the switches' rows through their datapaths: those of
            # switches updated are the rows as they are now)
            # (`switch_ports_changed` refreshes those whose ports alone changed)
            updated = {u for u, rc in (change.delta or {}).items()
                       if rc.old is not None and rc.new is not None
                       and set(changed_columns(rc)) - {"ports"}}
            core = self.data.core
            refresh_datapaths(updated & core.datapaths.switches.keys(),
                              core.datapaths.switches, change.data.rows, core.ports)
        if handled is not Handled.UNHANDLED and change.delta is not None:
            handled = either(handled, self._dns_listed(change.delta))
            handled = either(handled, self._datapaths_updated(change.delta, router=False))
        if handled is not Handled.UNHANDLED and lb_rows(change.delta):
            handled = either(handled, self._lbs())
        if handled is Handled.UNHANDLED or not (created_or_deleted or moved) or ports_handled:
            return handled
        return either(handled, self._switch_ports({}, change.delta or {}))

    # A router's routes and policies are the flows' (`lflow` rebuilds the router); of a
    # route, builders read only its `bfd` (the BFD sessions routes ask for).
    # A router created or deleted (`datapaths_incremental.simple_router`) in place: its
    # datapath and binding, the key a recompute gives it, its load balancers built again.
    def on_nb_lr(self, change: TableChange) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        made: list[IdlRow] = []
        gone: list[IdlRow] = []
        lrp = self.inputs.get(leaf_name("NB", "Logical_Router_Port"))
        core = self.data.core
        if self.incremental_ports and all(router_toggled(rc) for rc in change.delta.values()):
            return self._applied(routers_toggled(  # (disabled or enabled)
                change.delta, self.nb_tables(), self.sb_tables(), core.datapaths, core.ports,
                self._count_names({}), self.data.extra.lbs, self.data.sb))
        # A router's `ports` changed with its ports: `on_nb_lrp` applies both.
        with_ports = lrp is not None and lrp.updated
        columns = LR_FLOWS_ONLY | ({"ports"} if with_ports and self.incremental_ports
                                   else set()) \
            | (LB_COLUMNS | DP_COLUMNS | {"nat"} if self.incremental_ports else set())
        for rc in change.delta.values():
            if rc.old is not None and rc.new is not None:
                if not set(changed_columns(rc)) <= columns:
                    return Handled.UNHANDLED
                continue
            row = rc.new if rc.new is not None else rc.old
            assert row is not None
            if not router_enabled(row) and not row.value("ports") \
                    and row.uuid not in core.datapaths.routers:
                continue  # (made or deleted disabled: a build has nothing of it)
            if not self.incremental_ports or not simple_router(row, with_ports):
                return Handled.UNHANDLED
            if rc.new is None and row.value("ports"):
                continue  # (its ports go first: `on_nb_lrp` deletes it after them)
            (made if rc.new is not None else gone).append(row)
        parts = either(self._lbs() if lb_rows(change.delta) else Handled.HANDLED_UNCHANGED,
                        self._nats() if nat_rows(change.delta) else Handled.HANDLED_UNCHANGED)
        if parts is not Handled.UNHANDLED:
            parts = either(parts, self._datapaths_updated(change.delta, router=True))
        if parts is Handled.UNHANDLED or (not made and not gone):
            return parts
        core, reachable = self.data.core, self.data.extra.lbs
        if any(row.uuid not in core.datapaths.routers for row in gone):
            return Handled.UNHANDLED
        moved: dict[str, int] = {}  # (datapaths whose keys a new router's request moves)
        going = self._going(change)
        keys = new_datapath_keys(made, core.datapaths, self.sb_tables(), going,
                                 self._switch_keys(made, going), moved=moved,
                                 nb=self.nb_tables()) if made else {}
        if keys is None:
            return Handled.UNHANDLED
        delta = self.track()
        renumber(moved, core.datapaths, core.ports, self.data.sb, delta)
        if not remove_routers([row.uuid for row in gone], self.nb_tables(), self.sb_tables(),
                              core.datapaths, core.ports, reachable, self.data.sb, delta):
            return Handled.UNHANDLED
        for row in made:
            add_router(row, keys[row.uuid], core.datapaths, core.ports, reachable,
                       self.data.sb)
            delta.touch("sb", "Datapath_Binding", row.uuid)
        if with_ports or not any(map(has_lbs, made + gone)):
            return Handled.HANDLED_UPDATED  # (with ports: `on_nb_lrp`'s, after them)
        return either(Handled.HANDLED_UPDATED, self._lbs(again=True))

    # A switch's or router's name, external_ids and settings (`DP_COLUMNS`) updated:
    # its datapath in place where `build.datapaths_updated` can.
    def _datapaths_updated(self, changes: Mapping[str, RowChange[IdlRow]],
                           router: bool) -> Handled:
        core = self.data.core
        by_key = core.datapaths.routers if router else core.datapaths.switches
        # (a router disabled, and staying so, has no datapath: none of it is read)
        updated = {u: rc for u, rc in changes.items() if rc.old is not None
                   and rc.new is not None and not DP_COLUMNS.isdisjoint(changed_columns(rc))
                   and (not router or u in by_key or router_enabled(rc.old)
                        or router_enabled(rc.new))}
        if not updated:
            return Handled.HANDLED_UNCHANGED
        table = self.nb_tables()["Logical_Router" if router else "Logical_Switch"]
        if not refresh_datapaths(updated.keys() & by_key.keys(), by_key, table.rows,
                                 core.ports):
            return Handled.UNHANDLED
        return self._applied(datapaths_updated(updated, router, core.datapaths, core.ports,
                                               self.nb_tables(), self.sb_tables(), self.data.sb,
                                               self._ipam_again))

    def _ipam_again(self, switches: set[str], delta: PortsDelta) -> bool:
        """The allocations of `switches` moved where their IPAM's inputs changed
        (`datapaths_updated.ipam_again`)."""
        return ipam_again(switches, self.data.core, self.sb_tables(), self.data.sb,
                          self.data.nb, delta)

    def _going(self, lr: TableChange) -> set[str]:
        """The switches and routers deleted in this change, by any handler: their keys
        are free for the datapaths made in it, as in a recompute."""
        changes = [*(lr.delta or {}).values(), *self._changes("Logical_Switch").values()]
        return {rc.old.uuid for rc in changes if rc.new is None and rc.old is not None}

    def _switch_keys(self, made: list[IdlRow], going: set[str]) -> list[int] | None:
        """The keys the switches made in this change take before the routers `made`
        (`on_nb_ls` gives them those next: `keys_before_routers`); None where that
        cannot be told (a datapath going with them)."""
        switches = [rc.new for rc in self._changes("Logical_Switch").values()
                    if rc.old is None and rc.new]
        if not made or not switches:
            return []
        return None if going else keys_before_routers(switches, made, self.data.core.datapaths,
                                                      self.sb_tables())

    # A load balancer or a group of them changed, or the load balancers of a switch or
    # a router (`on_nb_ls`, `on_nb_lr`): applied in place where
    # `build.lb_incremental.lbs_changed` can.
    def on_nb_lb(self, change: TableChange) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        return self._lbs()

    # NAT rules changed, or a router's `nat` (`on_nb_lr`): applied in place where
    # `build.nat_incremental.nats_changed` can.
    def on_nb_nat(self, change: TableChange) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        return self._nats()

    def _nats(self) -> Handled:
        """The NAT rules and routers' `nat` changed in this run applied in place (again
        in the same run: the same result)."""
        core = self.data.core
        return self._applied(nats_changed(
            self.nb_tables(), core.datapaths, core.ports, self.data.sb, self._changes("NAT"),
            self._changes("Logical_Router")))

    def _changes(self, table: str) -> Mapping[str, RowChange[IdlRow]]:
        """This run's row changes of an NB table (none if it did not change)."""
        leaf = self.inputs.get(leaf_name("NB", table))
        return leaf.delta if leaf is not None and leaf.updated and leaf.delta else {}

    # A health check changed (its options, its VIP): the load balancers naming it
    # parsed again (created or deleted, it comes with their `health_check`).
    def on_nb_lb_health_check(self, change: TableChange) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        changed = set(change.delta)
        lbs = self.nb_tables().get("Load_Balancer")
        return self._lbs({u for u, row in (lbs.rows.items() if lbs is not None else ())
                          if changed & set(row.value("health_check"))})

    def _lbs(self, reparse: set[str] | None = None, *, again: bool = False) -> Handled:
        """The load balancer data built again and what changed applied in place (again
        in the same run: nothing more changes, unless `again`: what it reads beyond
        the load balancer tables changed since), the load balancers `reparse` parsed
        again. The switches and routers whose load balancers changed in this run are
        taken with their rows as they are now."""
        seen = (*(self._changes(t) or None for t in LB_TABLES), frozenset(reparse or ()))
        if not again and len(seen) == len(self._lbs_for) and all(
                a is b for a, b in zip(seen[:-1], self._lbs_for[:-1], strict=True)) \
                and seen[-1] == self._lbs_for[-1]:
            return Handled.HANDLED_UNCHANGED  # (applied by this run's first handler)
        self._lbs_for = seen
        core, nb = self.data.core, self.nb_tables()
        for table, by_key in (("Logical_Switch", core.datapaths.switches),
                              ("Logical_Router", core.datapaths.routers)):
            keys = [uuid for uuid, rc in self._changes(table).items()
                    if uuid in by_key and rc.new is not None and lb_row(rc)]
            if not refresh_datapaths(keys, by_key, nb[table].rows, core.ports):
                return Handled.UNHANDLED
        result = lbs_changed(nb, core.datapaths, core.ports, self.data.extra.lbs,
                             self.data.sb, self.data.extra.config.svc_monitor_mac,
                             reparse or ())
        if result is None:
            return Handled.UNHANDLED
        self.data.extra = replace(self.data.extra, lbs=result[0])
        return self._applied(result[1])

    def on_nb_route(self, change: TableChange) -> Handled:
        if not self.incremental_ports or change.delta is None or not self.has_data:
            return only(change, lambda rc: not any(r is not None and r.value("bfd")
                                                   for r in (rc.old, rc.new)))
        sessions = {(r.bfd.logical_port, r.bfd.dst_ip) for rc in change.delta.values()
                    for r in (rc.old, rc.new) if r is not None and isinstance(r.bfd, IdlRow)}
        if not any(r is not None and r.value("bfd")
                   for rc in change.delta.values() for r in (rc.old, rc.new)):
            return Handled.HANDLED_UNCHANGED
        return self._bfd(sessions)

    # BFD sessions, NB's and SB's (ovn-controller's status): the BFD tables built
    # again and compared (`build.bfd_incremental`), the routers reading them named.
    def on_bfd(self, change: TableChange) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        return self._bfd({(r.logical_port, r.dst_ip) for rc in change.delta.values()
                          for r in (rc.old, rc.new) if r is not None})

    def _bfd(self, sessions: set[tuple[str, str]]) -> Handled:
        data = self.data
        return self._applied(bfd_changed(self.nb_tables(), self.sb_tables(), data.core,
                                         data.sb, data.nb, sessions))

    def on_nb_policy(self, change: TableChange) -> Handled:
        return only(change, lambda rc: True)

    # A port group's `acls` alone are the flows' (`lflow` rebuilds its switches); other
    # changes of port groups, and NB address sets (`on_nb_address_set`), are applied in
    # place where `build.groups_incremental.groups_changed` can.
    def on_nb_port_group(self, change: TableChange) -> Handled:
        handled = only(change, lambda rc: rc.old is not None and rc.new is not None
                       and set(changed_columns(rc)) == {"acls"})
        if handled is not Handled.UNHANDLED or not self.incremental_ports:
            return handled
        return self._groups(change, self._changes("Port_Group"))

    # NB address sets alone (port groups come later, after their new ports: handlers
    # run in table order, `Logical_Switch_Port` before `Port_Group`).
    def on_nb_address_set(self, change: TableChange) -> Handled:
        return self._groups(change, {})

    def _groups(self, change: TableChange,
                groups: Mapping[str, RowChange[IdlRow]]) -> Handled:
        """Port groups `groups` and the NB address sets changed in this run, applied in
        place (again in the same run: the same result)."""
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        core = self.data.core
        return self._applied(groups_changed(
            self.nb_tables(), core.datapaths, core.ports, self.data.sb, groups,
            self._changes("Address_Set"), self._changes("Logical_Switch"),
            self._changes("Logical_Switch_Port")))

    # Of an ACL, builders read only its `meter` (a fair meter of its own copy): the
    # rest is the flows' (`lflow` handles it); the copies of the ACLs changed are put
    # again (`build.meters.acl_meters_changed`).
    def on_nb_acl(self, change: TableChange) -> Handled:
        if not any(r is not None and r.value("meter")
                   for rc in (change.delta or {}).values() for r in (rc.old, rc.new)):
            return only(change, lambda rc: True)
        if change.delta is None or not self.has_data or not self.incremental_ports:
            return Handled.UNHANDLED
        delta = PortsDelta()
        acl_meters_changed(self.nb_tables(), self.data.sb, change.delta, delta)
        return self._applied(delta)

    # NB static MAC bindings, and the SB rows of their names (ours coming back): the
    # names changed decided again (`build.ports_static_mac.static_macs_changed`).
    def on_static_mac(self, change: TableChange) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        keys = {(r.logical_port, r.ip) for rc in change.delta.values()
                for r in (rc.old, rc.new) if r is not None}
        return self._applied(static_macs_changed(
            self.nb_tables(), self.sb_tables(), self.data.core.ports, self.data.sb, keys))

    # Template variables: the SB rows of the chassis changed decided again
    # (`build.lb_templates.template_vars_changed`); flows name variables, not values.
    def on_nb_template_var(self, change: TableChange) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        names = {str(r.chassis) for rc in change.delta.values() for r in (rc.old, rc.new)
                 if r is not None}
        return self._applied(template_vars_changed(self.nb_tables(), self.data.sb, names))

    # Mirrors: the SB mirrors of the names changed (`build.ports_mirrors`); bindings
    # list them by name, so one renamed while a port names it recomputes.
    def on_nb_mirror(self, change: TableChange) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        return self._applied(mirrors_changed(self.nb_tables(), self.data.sb, change.delta))

    # NB meters and their bands: the SB meters of the names changed put again
    # (`build.meters.meters_changed`); a band updated, by the meters listing it.
    def on_nb_meter(self, change: TableChange) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        nb = self.nb_tables()
        names = {str(r.name) for rc in self._changes("Meter").values()
                 for r in (rc.old, rc.new) if r is not None}
        bands = set(self._changes("Meter_Band"))
        meters = nb.get("Meter")
        if bands and meters is not None:
            names |= {str(m.name) for m in meters.rows.values()
                      if bands & set(m.value("bands"))}
        delta = PortsDelta()
        meters_changed(nb, self.data.sb, names, delta)
        return self._applied(delta)

    # LSP.up written back by `sync_from_sb` (northd's own write coming back) moves
    # nothing; ordinary VIFs added, deleted or updated are applied in place
    # (`build.ports_incremental`), anything else recomputes.
    def on_nb_lsp(self, change: TableChange) -> Handled:
        delta = change.delta
        if not self.incremental_ports:
            return only(change, lambda rc: rc.old is not None and rc.new is not None
                         and set(changed_columns(rc)) <= LSP_WRITTEN_ONLY)
        if delta is None or not self.has_data:
            return Handled.UNHANDLED
        return self._switch_ports(delta, self._changes("Logical_Switch"))

    # Router ports added or deleted are applied in place, with the switch port that
    # pairs with them in the same change (`build.ports_incremental.
    # router_ports_changed`, then `on_nb_lsp` pairs them) or one there before (paired
    # there), and with their routers when those go too; anything else recomputes.
    def on_nb_lrp(self, change: TableChange) -> Handled:
        delta = change.delta
        if delta is None or not self.has_data or not self.incremental_ports:
            return Handled.UNHANDLED
        if all(gateway_chassis_only(rc) for rc in delta.values()):
            return self._ha_groups(change, "Logical_Router_Port")
        core = self.data.core
        if all(gateway_regrouped(rc) for rc in delta.values()):  # (another group)
            return self._applied(gateways_regrouped(delta, core.ports,
                                                    self._count_names(delta), self.data.sb))
        if all(gateway_toggled(rc) for rc in delta.values()):  # (made a gateway, or not)
            return self._applied(gateways_toggled(
                delta, self.nb_tables(), self.sb_tables(), core.datapaths, core.ports,
                self._count_names(delta), self.data.sb))
        if all(updatable(rc) for rc in delta.values()):
            handled = self._applied(lrps_updated(
                delta, core.ports, self.data.sb, self._ipam_again, self.sb_tables(),
                core.datapaths.vxlan_mode))
            if handled is Handled.UNHANDLED or not any(
                    "networks" in changed_columns(rc) and rc.new is not None
                    and (port := self.data.core.ports.ports.get(rc.new.name)) is not None
                    and has_lbs(port.dp.nb) for rc in delta.values()):
                return handled
            # (the VIPs a router answers for follow its networks)
            return either(handled, self._lbs(again=True))
        names = self._count_names(delta)
        lr = self.inputs.get(leaf_name("NB", "Logical_Router"))
        lr_changes = lr.delta if lr is not None and lr.updated else None
        lsp = self.inputs.get(leaf_name("NB", "Logical_Switch_Port"))
        lsp_changes = lsp.delta if lsp is not None and lsp.updated else None
        core = self.data.core
        handled = self._applied(router_ports_changed(
            self.nb_tables(), self.sb_tables(), core.datapaths, core.ports, names,
            self.data.sb, delta, lr_changes or {}, lsp_changes or {}))
        if handled is not Handled.UNHANDLED:
            # Routers deleted with their ports (`on_nb_lr` left them): deleted now.
            gone = [rc.old.uuid for rc in (lr_changes or {}).values() if rc.new is None
                    and rc.old is not None and rc.old.uuid in core.datapaths.routers]
            if gone:
                handled = Handled.HANDLED_UPDATED if remove_routers(
                    gone, self.nb_tables(), self.sb_tables(), core.datapaths, core.ports,
                    self.data.extra.lbs, self.data.sb, self.track()) else Handled.UNHANDLED
            # (static MAC bindings and BFD sessions naming the ports: their rows, and
            # the flows reading the sessions, come and go with them)
            lrps = {r.name for rc in delta.values() for r in (rc.old, rc.new) if r is not None}
            keys = named_keys(self.nb_tables(), self.sb_tables(), lrps)
            if keys:
                handled = either(handled, self._applied(static_macs_changed(
                    self.nb_tables(), self.sb_tables(), core.ports, self.data.sb, keys)))
            sessions = sessions_naming(self.nb_tables(), lrps)
            if sessions:
                handled = either(handled, self._bfd(sessions))
        # (a router's networks decide which of its load balancers' VIPs it answers for;
        # every router port added or deleted changes its router's `ports`)
        if handled is Handled.UNHANDLED or not any(
                has_lbs(rc.old if rc.new is None else rc.new)
                for rc in (lr_changes or {}).values()):
            return handled
        return either(handled, self._lbs(again=True))

    # NB DHCP options are the flows' alone (`lflow` builds the switches of the ports
    # that name a row changed; a port naming another row changes itself), and so are
    # QoS rules and forwarding groups (`FLOWS_ONLY_TABLES`).
    def on_flows_only(self, change: TableChange) -> Handled:
        return Handled.HANDLED_UNCHANGED

    # A DNS row's records changed: its SB row in place (`build.dns.dns_changed`); one
    # created or deleted comes with the switches that list it or stop (`on_nb_ls`).
    def on_nb_dns(self, change: TableChange) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        return self._dns_touched(dns_changed(change.delta, self.data.sb))

    def _dns_listed(self, changes: Mapping[str, RowChange[IdlRow]]) -> Handled:
        """Switches listing other DNS rows: those rows' SB rows follow
        (`build.dns.dns_listed`)."""
        dns = self.nb_tables().get("DNS")
        changed: set[str] = set()
        for uuid, rc in changes.items():  # (a switch created or deleted lists or not)
            if dns is None or (rc.old is not None and rc.new is not None
                               and "dns_records" not in changed_columns(rc)):
                continue
            before, after = (set(r.value("dns_records")) if r is not None else set()
                             for r in (rc.old, rc.new))
            if before != after:
                changed |= dns_listed(uuid, before, after, dns.rows, self.data.sb)
        return self._dns_touched(changed)

    def _dns_touched(self, keys: set[str]) -> Handled:
        """The SB DNS rows `keys` changed in place, in this run's delta."""
        if not keys:
            return Handled.HANDLED_UNCHANGED
        delta = self.track()
        for key in keys:
            delta.touch("sb", "DNS", key)
        return Handled.HANDLED_UPDATED

    # A gateway chassis exists only while a router port names it: one inserted or
    # deleted comes with a router port inserted, deleted or updated, which
    # `on_nb_lrp` applies or gives up on; one updated (its chassis, its priority), and
    # NB HA chassis and their groups, change the SB groups in place
    # (`build.ha_groups_incremental`).
    def on_nb_gateway_chassis(self, change: TableChange) -> Handled:
        return self._ha_groups(change, "Gateway_Chassis")

    def on_nb_ha_chassis(self, change: TableChange) -> Handled:
        return self._ha_groups(change, "HA_Chassis")

    def on_nb_ha_chassis_group(self, change: TableChange) -> Handled:
        return self._ha_groups(change, "HA_Chassis_Group")

    def _ha_groups(self, change: TableChange, table: str) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        return self._applied(ha_groups_changed({table: change.delta}, self.nb_tables(),
                                               self.data.core.ports, self.data.sb))

    def _switch_ports(self, lsp_changes: Mapping[str, RowChange[IdlRow]],
                      ls_changes: Mapping[str, RowChange[IdlRow]]) -> Handled:
        """Switch ports (and switches) changed, applied in place if they can be."""
        names = self._count_names(lsp_changes)
        data = self.data
        core = data.core
        nb = self.nb_tables()
        fresh = self.delta.sb.get("Datapath_Binding", ()) if self.delta is not None else ()
        result = switch_ports_changed(
            nb, self.sb_tables(), core, names, data.sb, data.nb, lsp_changes, ls_changes,
            ignored=LSP_WRITTEN_ONLY, fresh={str(k) for k in fresh})
        if result is not None and result.probed:  # (their balancers' monitors and flows)
            probes_moved(result, data.extra.lbs, core.ports,
                         data.extra.config.svc_monitor_mac, data.sb)
        if result is not None:  # (the groups of ports given other addresses: their sets)
            member_sets(nb, data.sb, {u for u, rc in lsp_changes.items()
                                      if rc.old is not None and rc.new is not None
                                      and port_ips(rc.old) != port_ips(rc.new)}, result)
        handled = self._applied(result)  # (switches made or gone with load balancers)
        if handled is Handled.UNHANDLED or not any(
                has_lbs(rc.new if rc.old is None else rc.old if rc.new is None else None)
                for rc in ls_changes.values()):
            return handled
        return either(handled, self._lbs(again=True))

    def _count_names(self, changes: Mapping[str, RowChange[IdlRow]]) -> Counter[str]:
        """The NB switch and router port names (`port_names`), kept up to date with
        `changes` of either table since the last recompute."""
        names = self._names
        if names is None:
            # (as they were before this run: each handler applies its table's changes)
            names = self._names = port_names(self.nb_tables())
            for table in ("Logical_Switch_Port", "Logical_Router_Port"):
                for rc in self._changes(table).values():
                    if rc.new is not None:
                        names[rc.new.value("name")] -= 1
                    if rc.old is not None:
                        names[rc.old.value("name")] += 1
        for rc in changes.values():
            if rc.old is not None:
                names[rc.old.value("name")] -= 1
            if rc.new is not None:
                names[rc.new.value("name")] += 1
        return names

    def _applied(self, result: PortsDelta | None) -> Handled:
        """What a handler says of ports applied in place (None: a recompute is due)."""
        if result is None:
            self._names = None  # (the recompute starts over)
            return Handled.UNHANDLED
        if "Port_Binding" in result.sb:  # (ports come and go: the walk may have moved)
            core = self.data.core
            result.rewired |= resort_router_ports(self.sb_tables(), core.ports,
                                                  core.datapaths)
        if result.empty():
            return Handled.HANDLED_UNCHANGED
        self.track().merge(result)
        return Handled.HANDLED_UPDATED
