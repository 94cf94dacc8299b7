"""Service monitors: the SB Service_Monitor rows through which ovn-controller probes
load balancer backends.

Rules kept here (OVN 23.03, `ovn_lb_svc_create` and `build_lb_svcs` in northd.c):
- Every NB load balancer counts, applied to a datapath or not, except template ones
  (and SCTP ones, which have no health checks).
- A backend is monitored when its VIP has a health check (`vip` equal to the VIP's key
  as NB writes it), `ip_port_mappings` maps the backend's IP (IPv6 in brackets) to
  `<logical port>:<source IP>`, that port is a switch port of some datapath, it is
  enabled and the source IP parses.
- A row is keyed by (ip, port, protocol, logical_port), protocol defaulting to tcp;
  it carries the health check's options, the service monitor MAC and the source IP.
  Backends shared by several LBs are one row, the last LB in build order setting its
  options. `status` belongs to ovn-controller and is not a managed column; the one
  write 23.03 makes to it (an `online` monitor whose backend port's binding is not up
  is set `offline`) is `offline_monitors`, for the daemon to add to its transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..desired import DesiredDb, DesiredTable
from .address_sets import MONITOR_MAC_SET
from .datapaths import DatapathsData
from .delta import PortsDelta
from .lb import LbData, LoadBalancer, parse_address
from .ports import PortsData

COLUMNS = ("ip", "port", "protocol", "logical_port", "options", "src_mac", "src_ip")


def switch_ports(dps: DatapathsData) -> dict[str, IdlRow]:
    """Logical switch ports by name, of the switches that have datapaths."""
    out: dict[str, IdlRow] = {}
    for dp in dps.switches.values():
        for lsp in dp.nb.ports:
            if isinstance(lsp, IdlRow):
                out.setdefault(lsp.name, lsp)
    return out


def probed_ports(lb: IdlRow) -> list[str]:
    """The names of the switch ports a load balancer's `ip_port_mappings` probe
    through (each target `<logical port>:<source IP>`), whose changes move its
    monitors."""
    return [target.split(":", 1)[0] for target in lb.ip_port_mappings.values()]


def switches_of(names: Iterable[str], ports: PortsData) -> set[str]:
    """The switches of the switch ports `names` that there are."""
    return {p.dp.key for n in names if (p := ports.ports.get(n)) is not None and p.is_lsp}


def lsp_enabled(lsp: IdlRow) -> bool:
    return lsp.enabled is None or bool(lsp.enabled)


MonitorKey = tuple[str, int, str, str]  # (ip, port, protocol, logical port)


def lb_monitors(lb: LoadBalancer, lsp: Callable[[str], IdlRow | None], svc_monitor_mac: str
                ) -> Iterator[tuple[MonitorKey, dict[str, Any]]]:
    """The monitors of one load balancer's health-checked backends (see the rules;
    `lsp`: a switch port's NB row by name)."""
    if lb.template:
        return
    mappings = lb.nb.ip_port_mappings
    protocol = lb.protocol or "tcp"
    for vip in lb.vips:
        if vip.health_check is None:
            continue
        for be in vip.backends:
            mkey = be.ip_str if be.family == 4 else f"[{be.ip_str}]"
            target = mappings.get(mkey)
            if target is None or ":" not in target:
                continue
            port_name, src = target.split(":", 1)
            row = lsp(port_name)
            src_ip = parse_address(src)
            if row is None or src_ip is None or not lsp_enabled(row):
                continue
            yield (be.ip_str, be.port, protocol, port_name), {
                "ip": be.ip_str, "port": be.port, "protocol": protocol,
                "logical_port": port_name, "options": dict(vip.health_check.options),
                "src_mac": svc_monitor_mac, "src_ip": str(src_ip)}


def build_service_monitors(lbs: LbData, dps: DatapathsData, svc_monitor_mac: str,
                           sb: DesiredDb) -> None:
    table = sb.add(DesiredTable("Service_Monitor", COLUMNS))
    ports = switch_ports(dps)
    for lb in lbs.lbs.values():
        for key, values in lb_monitors(lb, ports.get, svc_monitor_mac):
            table.put(key, **values)


def monitor_mac_moved(mac: str, nb: Mapping[str, ReplicaTable], lbs: LbData,
                      sb: DesiredDb, delta: PortsDelta) -> set[str]:
    """The service monitor MAC changed to `mac`: its address set put again (an NB set of
    that name wins, as in a build); the health-checked load balancers, whose monitors
    and ARP/ND responders carry it, returned for the caller to find again."""
    nb_sets = nb.get("Address_Set")
    if nb_sets is None or all(row.name != MONITOR_MAC_SET for row in nb_sets.rows.values()):
        sb.tables["Address_Set"].put(MONITOR_MAC_SET, name=MONITOR_MAC_SET, addresses=[mac])
        delta.touch("sb", "Address_Set", MONITOR_MAC_SET)
    return {key for key, lb in lbs.lbs.items()
            if any(v.health_check is not None for v in lb.vips)}


def monitors_changed(old: Iterable[LoadBalancer], new: LbData, lsp: Callable[[str], IdlRow | None],
                     svc_monitor_mac: str, sb: DesiredDb, delta: PortsDelta,
                     also: Iterable[MonitorKey] = ()) -> None:
    """The load balancers `old` (as they were) changed into `new`'s: the monitors they
    had or have decided again from every load balancer with health checks, in build
    order, and those of keys `also`; the keys whose rows changed touched."""
    table = sb.tables["Service_Monitor"]
    keys = {key for lb in old for key, _ in lb_monitors(lb, lsp, svc_monitor_mac)}
    keys.update(also)
    wanted: dict[MonitorKey, dict[str, Any]] = {}
    for lb in new.lbs.values():
        if any(v.health_check is not None for v in lb.vips):
            for key, values in lb_monitors(lb, lsp, svc_monitor_mac):
                wanted[key] = values
    keys |= {key for key in wanted if key not in table.rows or table.rows[key] != wanted[key]}
    for key in keys:
        before = table.rows.pop(key, None)
        if key in wanted:
            table.put(key, **wanted[key])
        if table.rows.get(key) != before:
            delta.touch("sb", "Service_Monitor", key)


def offline_monitors(monitors: DesiredTable, sb: Mapping[str, ReplicaTable]
                     ) -> tuple[str, ...]:
    """UUIDs of the SB Service_Monitor rows, among those desired, that are `online`
    while the Port_Binding of their logical port is not up (or missing)."""
    table = sb.get("Service_Monitor")
    if table is None or not monitors.rows:
        return ()
    # The bindings of the ports of online monitors only (most runs have none).
    ports = {row.logical_port for row in table.rows.values() if row.status == "online"}
    if not ports:
        return ()
    pbs = sb.get("Port_Binding")
    up: dict[str, bool] = {}
    if pbs is not None:
        for pb in pbs.rows.values():
            if pb.logical_port in ports:
                up[pb.logical_port] = up.get(pb.logical_port, False) or pb.up is True
    out = []
    for row in sorted(table.rows.values(), key=lambda r: r.uuid):
        key = (row.ip, row.port, row.protocol, row.logical_port)
        if key in monitors.rows and row.status == "online" and not up.get(row.logical_port):
            out.append(row.uuid)
    return tuple(out)
