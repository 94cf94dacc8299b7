"""What the logical flow builders read: the core build (datapaths, ports), the extra
build (load balancers, global settings, chassis features), the NB and SB tables, and
per-switch facts several pipeline areas need (23.03's `od->has_acls`,
`has_stateful_acl`, `has_lb_vip`, the port groups of a switch).

Rules kept here:
- Read-only and pure: builders get one `LflowContext` and never write to it; facts
  derived from it are computed once, on first use, and cached in it.
- Everything is in a deterministic order (datapaths and ports in build order, NB rows
  by UUID unless 23.03 uses a column's own order); builders must not iterate sets or
  dicts of UUIDs without sorting.
- A fact that one area alone needs lives in that area's module, not here.
- `switches()`/`routers()` are the datapaths flows are built for: all of them, or in a
  partial rebuild (`narrowed`) a few, whose flows then replace theirs in the table.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..build.datapaths import Datapath, DatapathsData, smap_int
from ..build.global_cfg import ChassisFeatures, GlobalConfig
from ..build.lb import LbData
from ..build.placed import Placed
from ..build.ports import Port, PortsData, existing_port_bindings


def ref_rows(value: object) -> list[IdlRow]:
    """The rows a reference column names, in UUID order (the order the C IDL keeps a
    set in, so the order 23.03 walks them)."""
    if not isinstance(value, (list, tuple, set, frozenset)):
        return []
    return sorted((r for r in value if isinstance(r, IdlRow)), key=lambda r: r.uuid)


class CoppProto(enum.Enum):
    """The control-plane protection meters a Copp row may name (lib/copp.c's keys)."""

    ARP = "arp"
    ARP_RESOLVE = "arp-resolve"
    DHCPV4_OPTS = "dhcpv4-opts"
    DHCPV6_OPTS = "dhcpv6-opts"
    DNS = "dns"
    EVENT_ELB = "event-elb"
    ICMP4_ERR = "icmp4-error"
    ICMP6_ERR = "icmp6-error"
    IGMP = "igmp"
    ND_NA = "nd-na"
    ND_NS = "nd-ns"
    ND_NS_RESOLVE = "nd-ns-resolve"
    ND_RA_OPTS = "nd-ra-opts"
    TCP_RESET = "tcp-reset"
    REJECT = "reject"
    SVC_MONITOR = "svc-monitor"
    BFD = "bfd"


@dataclass(slots=True)
class SwitchFacts:
    """Per-switch facts (23.03 computes them into `struct ovn_datapath`)."""

    acls: list[IdlRow]  # the switch's own ACLs, then its port groups' (UUID order each)
    port_groups: list[IdlRow]  # NB port groups with a port on this switch (UUID order)
    has_acls: bool
    has_stateful_acl: bool  # an allow-related ACL, own or of a port group
    has_lb_vip: bool  # an own load balancer with a VIP (`ls_has_lb_vip`)


@dataclass(slots=True)
class LflowContext:
    nb: Mapping[str, ReplicaTable]
    sb: Mapping[str, ReplicaTable]
    datapaths: DatapathsData
    ports: PortsData
    lbs: LbData
    config: GlobalConfig
    _switch: dict[str, SwitchFacts] = field(default_factory=dict)
    _pg_switches: dict[str, list[str]] | None = None
    _pg_on: dict[str, list[IdlRow]] | None = None  # switch key -> its port groups
    _meters: frozenset[str] | None = None
    # Facts of one area's own, computed on first use (`router_facts` keeps its here),
    # shared with the narrowed contexts: a fact that depends on the scope is keyed by it.
    cache: dict[Any, Any] = field(default_factory=dict)
    # A partial rebuild: `switches()` and `routers()` list only these datapaths.
    scope: frozenset[str] | None = None
    # A rebuild of what some ports ask for: only these ports (by name) are walked.
    walked: frozenset[str] | None = None
    # A rebuild of what some ports ask for on their own datapaths (`scope`): there,
    # only these ports are walked.
    focus: frozenset[str] | None = None
    # A rebuild of what some NAT rules derive: on the routers named, only the rules of
    # these external IPs are walked (`lr_nat_rules.nat_rules`, `nat_ip_built`).
    nat_ips: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # A rebuild of what router-type switch ports ask for about some router ports of
    # their switches (`table.pair_owner`): only these router ports are walked there.
    about: frozenset[str] | None = None

    def narrowed(self, scope: frozenset[str]) -> LflowContext:
        """This context for a rebuild of the datapaths `scope` alone (facts shared)."""
        return dataclasses.replace(self, scope=scope)

    def focused(self, scope: frozenset[str], names: frozenset[str]) -> LflowContext:
        """This context for a rebuild of the flows the ports `names` ask for on their
        own datapaths `scope` (the datapaths' own flows are built too: the caller keeps
        the ports' alone)."""
        return dataclasses.replace(self, scope=scope, focus=names)

    def nat_scoped(self, ips: Mapping[str, frozenset[str]]) -> LflowContext:
        """This context for a rebuild of what the NAT rules of the external IPs `ips`
        (by router) derive, beside what the routers' rules derive together."""
        return dataclasses.replace(self, nat_ips=ips)

    def nat_ip_built(self, router_key: str, ip: str) -> bool:
        """Whether the flows of NAT external IP `ip` of the router are built here."""
        only = self.nat_ips.get(router_key)
        return only is None or ip in only

    def about_ports(self, names: frozenset[str]) -> LflowContext:
        """This context for a rebuild of what walked router-type switch ports ask for
        about the router ports `names` of their switches alone (`pair_owner`)."""
        return dataclasses.replace(self, about=names)

    def asks_about(self, name: str) -> bool:
        """Whether what a router-type switch port asks for about router port `name` is
        built here."""
        return self.about is None or name in self.about

    def walking(self, names: frozenset[str]) -> LflowContext:
        """This context for a rebuild of the flows the ports `names` ask for alone: no
        datapath's own flows (`switches()` and `routers()` are empty), and only those
        ports walked."""
        return dataclasses.replace(self, scope=frozenset(), walked=names)

    @property
    def builds_rules(self) -> bool:
        """Whether a build in this context asks for the flows of rules (load balancers,
        ACLs, router policies and static routes: owners of their own): not in a focused
        or walking one, whose builds are kept only for the ports' and the datapaths' own
        requests (`rebuild_focused`, `rebuild_owned`)."""
        return self.focus is None and self.walked is None

    @property
    def features(self) -> ChassisFeatures:
        return self.config.features

    @property
    def svc_monitor_mac(self) -> str:
        return self.config.svc_monitor_mac

    @property
    def nb_options(self) -> dict[str, str]:
        return self.config.nb_options

    @property
    def drop_action(self) -> str:
        """23.03's `debug_drop_action()`: "drop;", or a sample to the collector set of
        `options:debug_drop_collector_set`."""
        opts = self.config.nb_options
        collector = smap_int(opts, "debug_drop_collector_set")
        domain = smap_int(opts, "debug_drop_domain_id")
        if collector and 0 <= domain < 255:
            return (f"sample(probability=65535,collector_set={collector},"
                    f"obs_domain={domain},obs_point=$cookie); /* drop */")
        return "drop;"

    @property
    def implicit_drop_action(self) -> str:
        """`debug_implicit_drop_action()`: the same sample, or "/* drop */"."""
        action = self.drop_action
        return "/* drop */" if action == "drop;" else action

    @property
    def meter_names(self) -> frozenset[str]:
        """The names of the NB Meter rows (23.03's `meter_groups`)."""
        if self._meters is None:
            self._meters = frozenset(str(m.name) for m in self.nb_rows("Meter"))
        return self._meters

    def copp_meter(self, dp: Datapath, proto: CoppProto) -> str | None:
        """`copp_meter_get`: the meter the datapath's Copp row names for `proto`, if an
        NB meter of that name exists."""
        copp = dp.nb.copp
        if not isinstance(copp, IdlRow):
            return None
        meter = copp.meters.get(proto.value)
        return meter if meter is not None and meter in self.meter_names else None

    def switches(self) -> list[Datapath]:
        """The switches to build flows for (all, or those of a partial rebuild); an
        area loops over these for per-switch and per-port flows, and reaches other
        datapaths only through ports and peers."""
        return self._scoped("switches", self.datapaths.switches)

    def routers(self) -> list[Datapath]:
        return self._scoped("routers", self.datapaths.routers)

    def _scoped(self, kind: str, by_key: Placed[str, Datapath]) -> list[Datapath]:
        """The datapaths of `by_key` in scope, in its order (once per build and scope:
        every area asks)."""
        scope = self.scope
        if scope is None:
            return list(by_key.values())
        found: list[Datapath] | None = self.cache.get((kind, scope))
        if found is None:
            if len(scope) * 8 < len(by_key):
                found = by_key.in_order(scope)  # (a few: by place, not every one walked)
            else:
                found = [dp for dp in by_key.values() if dp.key in scope]
            self.cache[(kind, scope)] = found
        return found

    def scoped_names(self) -> frozenset[str] | None:
        """The names of the ports that build flows in this build: every one (None), or
        in a partial rebuild those on the datapaths rebuilt and, for a router, every
        port of the switches next to it (a VIF's address and a router-type port's
        routes land on the routers of its switch; a router port builds nothing on its
        switch); the ports `walking` names alone. The rebuild tests hold each
        datapath's rebuild to a full build."""
        if self.walked is not None:
            return self.walked
        if self.focus is not None:
            return self.focus
        scope = self.scope
        if scope is None:
            return None
        found: frozenset[str] | None = self.cache.get(("scoped_names", scope))
        if found is None:
            ports = self.ports
            names: set[str] = set()
            for key in scope:
                for port in ports.of_datapath(key):
                    names.add(port.name)
                    peer = ports.peer_of(port) if port.is_lrp else None
                    if peer is not None:
                        names.update(p.name for p in ports.of_datapath(peer.dp.key))
            found = self.cache[("scoped_names", scope)] = frozenset(names)
        return found

    def scoped_ports(self) -> list[Port]:
        """The ports that build flows in this build (`scoped_names`), in build order."""
        names = self.scoped_names()
        ports = self.ports.ports
        if names is None:
            return list(ports.values())
        if len(names) * 8 < len(ports):  # (a few: sorted by place, not every port walked)
            return ports.in_order(names)
        return [p for p in ports.values() if p.name in names]

    def ports_of(self, dp: Datapath) -> list[Port]:
        """The ports of `dp` to build flows for (in a focused rebuild, those focused)."""
        ports = self.ports.of_datapath(dp.key)
        focus = self.focus
        return ports if focus is None else [p for p in ports if p.name in focus]

    def all_ports_of(self, dp: Datapath) -> list[Port]:
        """Every port of `dp`, focused or not: what a datapath's own flows read."""
        return self.ports.of_datapath(dp.key)

    def bindings(self) -> dict[str, IdlRow]:
        """The SB Port_Binding rows by logical port as the SB has them in this run (a
        claim's `up` included: claims rebuild no ports), read once per build."""
        found: dict[str, IdlRow] | None = self.cache.get("bindings")
        if found is None:
            found = self.cache["bindings"] = existing_port_bindings(self.sb)
        return found

    def nb_rows(self, table: str) -> list[IdlRow]:
        """Every row of an NB table, in UUID order (sorted once per build: the per-switch
        facts ask for the port groups once per switch). Not to be changed."""
        rows: dict[str, list[IdlRow]] = self.cache.setdefault("nb_rows", {})
        found = rows.get(table)
        if found is None:
            t = self.nb.get(table)
            found = rows[table] = [] if t is None else sorted(t.rows.values(),
                                                                key=lambda r: r.uuid)
        return found

    def port_group_switches(self) -> dict[str, list[str]]:
        """NB port group UUID -> keys of the switches it has ports on (build order)."""
        if self._pg_switches is None:
            groups = self.nb_rows("Port_Group")
            # (port UUIDs as stored: no row is made for the switches' ports)
            wanted = {u for pg in groups for u in pg.value("ports")}
            where = self._switches_of(wanted) if wanted else {}
            switches = self.datapaths.switches
            out: dict[str, list[str]] = {}
            for pg in groups:
                keys = {where[u] for u in pg.value("ports") if u in where}
                out[pg.uuid] = [dp.key for dp in switches.in_order(keys)]
            self._pg_switches = out
        return self._pg_switches

    def _switches_of(self, lsps: set[str]) -> dict[str, str]:
        """Switch port UUID -> the key of the first switch (in build order) listing it:
        by the port of its name, where that is the row (each port on one switch, the
        usual case), else by a walk of every switch."""
        table = self.nb.get("Logical_Switch_Port")
        rows = table.rows if table is not None else {}
        ports = self.ports.ports
        where: dict[str, str] = {}
        for uuid in lsps:
            row = rows.get(uuid)
            port = ports.get(row.value("name")) if row is not None else None
            if port is None or not port.is_lsp or port.nb.uuid != uuid:
                break  # (a port of no switch, or a duplicate name: walked below)
            where[uuid] = port.dp.key
        else:
            return where
        where = {}
        for key, dp in self.datapaths.switches.items():
            for uuid in lsps.intersection(dp.nb.value("ports")):
                where.setdefault(uuid, key)
        return where

    def current(self, dp: Datapath) -> IdlRow:
        """The datapath's NB row as the replica has it now. `northd` keeps the row of
        its last build and takes some changes of the row in place (a switch's `acls`, a
        router's `static_routes` and `policies`): what those columns list is read here."""
        table = self.nb.get("Logical_Switch" if dp.is_switch else "Logical_Router")
        return table.rows.get(dp.key, dp.nb) if table is not None else dp.nb

    def switch(self, dp: Datapath) -> SwitchFacts:
        facts = self._switch.get(dp.key)
        if facts is None:
            facts = self._switch[dp.key] = self._switch_facts(dp)
        return facts

    def _groups_on(self, dp: Datapath) -> list[IdlRow]:
        """The port groups with ports on the switch `dp` (`port_group_switches`)."""
        groups = self.nb_rows("Port_Group")
        if self.scope is not None and self._pg_switches is None:
            listed = self._groups_listed(dp, groups)
            if listed is not None:
                return listed
        if self._pg_on is None:
            pg_of = self.port_group_switches()
            on: dict[str, list[IdlRow]] = {}
            for pg in groups:  # (each switch's in the groups' order)
                for key in pg_of.get(pg.uuid, ()):
                    on.setdefault(key, []).append(pg)
            self._pg_on = on
        return list(self._pg_on.get(dp.key, ()))

    def _groups_listed(self, dp: Datapath, groups: list[IdlRow]) -> list[IdlRow] | None:
        """`_groups_on` for a narrowed build, from the groups' ports the switch lists
        alone, where each is the core's port of that row (the core puts a port on the
        first switch listing it, which is where `port_group_switches` finds it); None
        where one is not."""
        listed = set(dp.nb.value("ports"))
        table = self.nb.get("Logical_Switch_Port")
        rows = table.rows if table is not None else {}
        ports = self.ports.ports
        out: list[IdlRow] = []
        for pg in groups:
            for uuid in listed.intersection(pg.value("ports")):
                row = rows.get(uuid)
                port = ports.get(row.value("name")) if row is not None else None
                if port is None or not port.is_lsp or port.nb.uuid != uuid:
                    return None
                if port.dp.key == dp.key:
                    out.append(pg)
                    break
        return out

    def _switch_facts(self, dp: Datapath) -> SwitchFacts:
        pgs = self._groups_on(dp)
        own = ref_rows(self.current(dp).acls)
        acls = own + [acl for pg in pgs for acl in ref_rows(pg.acls)]
        return SwitchFacts(
            acls=acls, port_groups=pgs, has_acls=bool(acls),
            has_stateful_acl=any(a.action == "allow-related" for a in acls),
            has_lb_vip=has_lb_vip(dp.nb))


def has_lb_vip(nb: IdlRow) -> bool:
    """`ls_has_lb_vip`/`lr_has_lb_vip`: a load balancer of the datapath's own, or of one
    of its groups, with any NB `vips` (parsed or not; not those a router lends)."""
    if any(lb.vips for lb in ref_rows(nb.load_balancer)):
        return True
    return any(isinstance(lb, IdlRow) and lb.vips  # (a group of thousands: to the first)
               for group in ref_rows(nb.load_balancer_group) for lb in group.load_balancer)
