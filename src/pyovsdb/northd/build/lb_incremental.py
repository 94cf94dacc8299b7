"""Load balancers changed in place: an `lb-add`, `lb-del` or VIP change, a load balancer
group's, a switch's or a router's load balancers (`ls-lb-add`, `lr-lb-add`...), without
rebuilding the core.

Rules kept here:
- Correctness first: what this leaves in the load balancer data and the desired tables
  is what `build_extra` would build from the same NB. A change this cannot prove it
  handles is refused (None) and the caller recomputes.
- The load balancer data is built again from the NB as it is now (`build_lb_data`),
  each load balancer parsed again only if its NB row changed, where each applies
  found again from the datapaths and groups whose rows changed (`lb_members`);
  what differs from the last data decides the rest: the load balancers whose row,
  switches or routers changed, and the routers whose reachable VIPs changed.
- With `NB_Global` `install_ls_lb_from_router` (a router's load balancers reach its
  switches) the memberships are found again whole (`build_lb_data`); the caller asks
  again where a router port changed (the switches a router reaches).
- Refused: a changed load balancer (before or after) that is a template one (its
  VIPs are ovn-controller's to expand), or one asking for routes (`add_route`: its
  VIPs reach the routers beyond the next switch); a router VIP set whose name an NB
  address set also has.
- Health checks: the service monitors of a changed load balancer's backends are
  decided again (`service_monitor.monitors_changed`), and the switches of the ports
  its `ip_port_mappings` name (before and after), where the monitors' ARP/ND
  responders are, have their flows built again. A load balancer whose health check
  row changed (its own row did not) is parsed again (`reparse`).
- Desired rows changed in place: the SB Load_Balancer row of each changed load
  balancer, northd's Logical_DP_Group rows (the groups load balancers use, kept to
  those), the `_rtr_lb_<key>_ip4/6` address sets of the routers whose reachable
  VIPs changed, and the `nat_addresses` of the switch ports advertising the routers
  of the changed load balancers (`nat-addresses=router` lists their VIPs, unless
  `exclude-lb-vips-from-garp`; no flow reads it; of a load balancer whose row is the
  same, the routers it came to or left alone). The changed load balancers are
  named for `lflow` (`PortsDelta.lbs`), which decides what flows change with them
  (`lflows.lb_reads`); so are the datapaths next to a router whose reachable VIPs
  changed otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import cast

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...idl.tracking import changed_columns
from ...ovsdb.changeset import RowChange
from ..desired import DesiredDb
from ..diagnostics import muted
from .address_sets import router_lb_set_name
from .datapaths import DatapathsData
from .delta import PortsDelta
from .dp_groups import TABLE as DP_GROUP_TABLE
from .dp_groups import dp_group_key
from .lb import LbData, LoadBalancer, build_lb_data, parse_lb, put_sb_load_balancer
from .ports import PortsData
from .ports_router import readvertise
from .service_monitor import MonitorKey, monitors_changed, probed_ports, switches_of

# Switch and router columns that say which load balancers apply to them.
LB_COLUMNS = frozenset(("load_balancer", "load_balancer_group"))
# The NB tables whose changes say which load balancers apply where.
LB_TABLES = ("Load_Balancer", "Load_Balancer_Group", "Load_Balancer_Health_Check",
             "Logical_Switch", "Logical_Router")
RowChanges = Mapping[str, RowChange[IdlRow]]


def lb_row(rc: RowChange[IdlRow]) -> bool:
    """Whether a switch or router update changed its load balancers."""
    return rc.old is not None and rc.new is not None \
        and not LB_COLUMNS.isdisjoint(changed_columns(rc))


def lb_rows(changes: RowChanges | None) -> bool:
    return changes is not None and any(lb_row(rc) for rc in changes.values())


def nat_rows(changes: RowChanges | None) -> bool:
    """Whether a router update changed its NAT rules."""
    return changes is not None and any(
        rc.old is not None and rc.new is not None and "nat" in changed_columns(rc)
        for rc in changes.values())


def has_lbs(row: IdlRow | None) -> bool:
    """Whether a switch or router has load balancers (its own or through groups)."""
    return row is not None and any(row.value(c) for c in LB_COLUMNS)


def lbs_changed(nb: Mapping[str, ReplicaTable], datapaths: DatapathsData, ports: PortsData,
                old: LbData, sb_desired: DesiredDb, svc_monitor_mac: str,
                reparse: Collection[str] = ()) -> tuple[LbData, PortsDelta] | None:
    """The load balancer data as the NB has it now and what changed with it, the
    desired tables changed in place; None (nothing touched) where a recompute is
    needed. The datapaths' NB rows must be the current ones."""
    with muted():  # (the changed ones are parsed again below, reporting)
        new = build_lb_data(nb, datapaths, reuse=old, reparse=reparse)
    changed = [key for key in old.lbs.keys() | new.lbs.keys()
               if key in reparse or _differs(old.lbs.get(key), new.lbs.get(key))]
    routers = {key for key in old.reachable.keys() | new.reachable.keys()
               if old.reachable.get(key) != new.reachable.get(key)}
    delta = PortsDelta()
    if not changed and not routers:
        return new, delta
    lbs = [lb for key in changed for lb in (old.lbs.get(key), new.lbs.get(key))
           if lb is not None]
    if not all(_simple(lb) for lb in lbs):
        return None
    delta.lbs.update(changed)
    beyond = set(routers)  # (VIPs reached otherwise than by a changed load balancer)
    advertised = set(routers)
    for key in changed:
        was, now = old.lbs.get(key), new.lbs.get(key)
        for lb in (was, now):
            if lb is not None:
                beyond -= lb.routers
        if was is not None and now is not None and was.nb is now.nb and key not in reparse:
            advertised |= was.routers ^ now.routers  # (its VIPs the same: where it went)
        else:
            advertised |= (was.routers if was else frozenset()) | \
                (now.routers if now else frozenset())
    sets = _router_set_names(routers, datapaths)
    nb_sets = nb.get("Address_Set")
    if sets and nb_sets is not None and any(row.name in sets for row in nb_sets.rows.values()):
        return None  # (an NB address set wins over a router's of the same name)
    _put_router_sets(sets, new, sb_desired, delta)
    for key in changed:
        now = new.lbs.get(key)
        if now is not None and now.nb is not getattr(old.lbs.get(key), "nb", None):
            parse_lb(now.nb)  # what a recompute reports of it
    _sb_load_balancers(changed, old, new, sb_desired, delta)
    _health_checks([old.lbs[k] for k in changed if k in old.lbs], new, ports,
                   svc_monitor_mac, sb_desired, delta)
    for name in readvertise(advertised, ports, sb_desired.tables["Port_Binding"],
                            vips_only=True):
        delta.touch_unread(name)
    delta.flows |= ports.next_to(beyond) if beyond else set()
    return new, delta


def _health_checks(old: list[LoadBalancer], new: LbData, ports: PortsData,
                   svc_monitor_mac: str, sb_desired: DesiredDb, delta: PortsDelta) -> None:
    """The service monitors and responders of the changed load balancers `old` (as
    they were) and as `new` has them (see the rules)."""
    lbs = [*old, *(new.lbs[k] for k in delta.lbs if k in new.lbs)]
    if not any(lb.nb.ip_port_mappings or lb.nb.health_check for lb in lbs):
        return

    monitors_changed(old, new, _lsp_of(ports), svc_monitor_mac, sb_desired, delta)
    for lb in lbs:
        delta.flows |= switches_of(probed_ports(lb.nb), ports)


def probes_moved(delta: PortsDelta, lbs: LbData, ports: PortsData, svc_monitor_mac: str,
                 sb_desired: DesiredDb) -> None:
    """Switch ports a health check probes through came, went or changed
    (`delta.probed`, their switches in `delta.flows`): the monitors of the load
    balancers probing them decided again (is the port there, is it enabled), and the
    datapaths those load balancers are on built again whole (a health-checked VIP's
    backends are those whose port is there, enabled and up)."""
    names = delta.probed
    hit = [lb for lb in lbs.lbs.values() if not names.isdisjoint(probed_ports(lb.nb))]
    held = [cast(MonitorKey, key) for key, row in sb_desired.tables["Service_Monitor"].rows.items()
            if row["logical_port"] in names]
    monitors_changed(hit, lbs, _lsp_of(ports), svc_monitor_mac, sb_desired, delta, also=held)
    for lb in hit:
        delta.flows |= lb.switches | lb.routers


def _lsp_of(ports: PortsData) -> Callable[[str], IdlRow | None]:
    """A switch port's NB row by name (None: no such switch port)."""
    def lsp(name: str) -> IdlRow | None:
        port = ports.ports.get(name)
        return port.nb if port is not None and port.is_lsp else None
    return lsp


def _differs(old: LoadBalancer | None, new: LoadBalancer | None) -> bool:
    if old is None or new is None or old is new:
        return old is not new
    return old.nb is not new.nb or old.switches != new.switches or old.routers != new.routers


def _simple(lb: LoadBalancer) -> bool:
    return not (lb.template or lb.routable)


def _router_set_names(routers: set[str], datapaths: DatapathsData
                      ) -> dict[str, tuple[str, int]]:
    """The names of the routers' VIP address sets: name -> (router, 0 for IPv4 or 1
    for IPv6)."""
    return {router_lb_set_name(datapaths.routers[key].tunnel_key, family): (key, i)
            for key in routers if key in datapaths.routers
            for i, family in enumerate((4, 6))}


def _put_router_sets(names: Mapping[str, tuple[str, int]], new: LbData,
                     sb_desired: DesiredDb, delta: PortsDelta) -> None:
    """The routers' VIP address sets `names` desired as `new` has them (none where a
    router reaches no VIP of the family)."""
    table = sb_desired.tables["Address_Set"]
    for name, (key, i) in names.items():
        addresses = new.reachable.get(key, (frozenset(), frozenset()))[i]
        if addresses:
            table.put(name, name=name, addresses=sorted(addresses))
        else:
            table.rows.pop(name, None)
        delta.touch("sb", "Address_Set", name)


def _sb_load_balancers(changed: list[str], old: LbData, new: LbData, sb_desired: DesiredDb,
                       delta: PortsDelta) -> None:
    """The SB rows of the changed load balancers, and northd's datapath groups kept to
    those the load balancers use (only a changed one's earlier group may be unused
    now: the others are looked for only then)."""
    table = sb_desired.tables["Load_Balancer"]
    for key in changed:
        table.rows.pop(key, None)
        lb = new.lbs.get(key)
        if lb is not None:
            put_sb_load_balancer(lb, sb_desired)
        delta.touch("sb", "Load_Balancer", key)
    groups = sb_desired.tables.get(DP_GROUP_TABLE)
    if groups is None:
        return
    left = {lb.switches for key in changed if (lb := old.lbs.get(key)) is not None} - \
        {lb.switches for key in changed if (lb := new.lbs.get(key)) is not None}
    if left:
        # (the distinct sets first: a set's hash is kept, its sorted key is not; a
        # thousand load balancers of one group are one set)
        used = {dp_group_key(keys) for keys in {lb.switches for lb in new.lbs.values()}
                if keys}
        for group in [k for k in groups.rows if k not in used]:
            del groups.rows[group]
            delta.touch("sb", DP_GROUP_TABLE, group)
    for key in changed:
        lb = new.lbs.get(key)
        if lb is not None and lb.switches:
            delta.touch("sb", DP_GROUP_TABLE, dp_group_key(lb.switches))
    if not groups.rows:
        del sb_desired.tables[DP_GROUP_TABLE]  # (a build makes it on first use)
