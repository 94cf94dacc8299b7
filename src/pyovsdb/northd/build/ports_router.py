"""Port_Binding rows of router ports and their chassisredirect ports, and the
`nat_addresses` that a switch's router-type port advertises for its router.

Rules kept here (OVN 23.03, `ovn_port_update_sbrec` for `op->nbrp`, and
`get_nat_addresses`):
- Type: "chassisredirect" for a `cr-` port, "l3gateway" on a gateway router (a router
  with `options:chassis`), else "patch".
- A chassisredirect port's options: `distributed-port`, `redirect-type` if the router
  port sets it, and `always-redirect=true` unless the router has distributed NAT (a
  dnat_and_snat with logical_port and external_mac), or the peer switch has vtep
  ports, or the redirect type is "bridged". Its HA chassis group is the NB group of the
  router port, else the group named after the router port that northd makes of its
  gateway chassis, else none.
- Other router ports: `peer` (and `chassis-redirect-port` on a distributed gateway
  port) when connected, `l3gateway-chassis` on a gateway router.
- `ipv6_ra_pd_list`, written by ovn-controller, is kept as the binding has it.
- A router port connected to a switch (`ovn_update_ipv6_options`) also gets
  `ipv6_prefix_delegation=true` / `ipv6_prefix=true` from its `prefix_delegation` /
  `prefix` options while enabled, and, with `ipv6_ra_configs` of a known
  address_mode and `send_periodic=true`, the `ipv6_ra_*` options (intervals clamped as
  RFC 4861 6.2.1, MTU from 1280, prefixes of its IPv6 networks then the delegated ones,
  the link-local source address, preference HIGH/LOW or MEDIUM).
- mac is "MAC NETWORK...", external_ids the router port's.
- NAT addresses: the router port's MAC followed by the external IPs of its router's
  centralized NAT rules that are not router port addresses and the load balancer VIPs
  (unless excluded), restricted to the gateway chassis on a distributed gateway port;
  one entry more per distributed NAT rule (its own MAC, IP and logical port). VIPs are
  listed sorted (23.03 prints them in hash order).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..desired import DesiredTable, Ref
from .datapaths import Datapath, smap_bool, smap_int
from .ports import Port, PortsData
from .ports_addresses import ALL4, find_lrp_member_ip, format_mac, ip_parse_masked, parse_mac


def has_distributed_nat(router: IdlRow) -> bool:
    return any(nat.type == "dnat_and_snat" and nat.logical_port and nat.external_mac
               and _ip(nat.external_ip) is not None
               for nat in router.nat if isinstance(nat, IdlRow))


def router_port_binding(port: Port, data: PortsData) -> dict[str, Any]:
    lrp = port.nb
    router = port.dp.nb
    gw_chassis = router.options.get("chassis")
    options: dict[str, str] = {}
    ha_group: list[Ref] = []
    if port.is_cr:
        pb_type = "chassisredirect"
        if lrp.ha_chassis_group is not None:
            ha_group = [Ref("HA_Chassis_Group", lrp.ha_chassis_group.name)]
        elif lrp.gateway_chassis:
            ha_group = [Ref("HA_Chassis_Group", lrp.name)]
        options["distributed-port"] = lrp.name
        gw_port = data.ports.get(port.l3dgw_port or "")
        gw_peer = data.peer_of(gw_port) if gw_port is not None else None
        always = not has_distributed_nat(router) and not (
            gw_peer is not None and gw_peer.dp.key in data.vtep_switches)
        redirect_type = port.options.get("redirect-type")
        if redirect_type is not None:
            options["redirect-type"] = redirect_type
            if redirect_type == "bridged":
                always = False
        if always:
            options["always-redirect"] = "true"
    else:
        pb_type = "l3gateway" if gw_chassis is not None else "patch"
        if port.peer is not None:
            options["peer"] = port.peer
            if lrp.ha_chassis_group is not None or lrp.gateway_chassis:
                options["chassis-redirect-port"] = "cr-" + lrp.name
        if gw_chassis is not None:
            options["l3gateway-chassis"] = gw_chassis
    pd_list = port.sb.options.get("ipv6_ra_pd_list") if port.sb is not None else None
    if pd_list is not None:
        options["ipv6_ra_pd_list"] = pd_list
    if port.is_lrp and not lrp.peer and port.peer is not None:
        _ipv6_options(port, options, pd_list)
    return {
        "type": pb_type,
        "options": options,
        "parent_port": [],
        "tag": [],
        "mac": [" ".join([lrp.mac, *lrp.networks])],
        "external_ids": dict(lrp.external_ids),
        "nat_addresses": [],
        "ha_chassis_group": ha_group,
        "gateway_chassis": [],
    }


RA_MODES = ("slaac", "dhcpv6_stateful", "dhcpv6_stateless")


def _ipv6_options(port: Port, options: dict[str, str], pd_list: str | None) -> None:
    lrp = port.nb
    enabled = lrp.enabled is None or bool(lrp.enabled)
    if enabled and smap_bool(port.options, "prefix_delegation", False):
        options["ipv6_prefix_delegation"] = "true"
    if enabled and smap_bool(port.options, "prefix", False):
        options["ipv6_prefix"] = "true"
    ra = lrp.ipv6_ra_configs
    mode = ra.get("address_mode")
    if mode not in RA_MODES or not smap_bool(ra, "send_periodic", False):
        return
    options["ipv6_ra_send_periodic"] = "true"
    options["ipv6_ra_address_mode"] = str(mode)
    max_interval = min(max(smap_int(ra, "max_interval", 600), 4), 1800)
    options["ipv6_ra_max_interval"] = str(max_interval)
    default_min = max_interval // 3 if max_interval >= 9 else max_interval * 3 // 4
    min_interval = smap_int(ra, "min_interval", default_min)
    min_interval = max(min(min_interval, max_interval * 3 // 4), 3)
    options["ipv6_ra_min_interval"] = str(min_interval)
    mtu = smap_int(ra, "mtu", 0)
    if mtu >= 1280:
        options["ipv6_ra_mtu"] = str(mtu)
    prefixes = []
    networks = port.networks
    for net in networks.ipv6 if networks is not None else ():
        network = net.network
        if int(network.network_address) >> 64 == 0xFE80 << 48:  # in6_is_lla
            # 23.03 smap_adds one key per link-local address; which one the SB keeps
            # follows its hash map and sort of the options. With the derived one last
            # that is the derived one (checked against 23.03 with one configured
            # link-local address; another case kept the configured one).
            options["ipv6_ra_src_addr"] = net.addr_s
            continue
        prefixes.append(f"{network.network_address}/{net.plen}")
    if pd_list:
        prefixes.append(pd_list)
    options["ipv6_ra_prefixes"] = " ".join(prefixes)
    for key in ("rdnss", "dnssl"):
        if key in ra:
            options[f"ipv6_ra_{key}"] = ra[key]
    if networks is not None:
        options["ipv6_ra_src_eth"] = networks.ea_s
    prf = ra.get("router_preference")
    options["ipv6_ra_prf"] = prf if prf in ("HIGH", "LOW") else "MEDIUM"
    if "route_info" in ra:
        options["ipv6_ra_route_info"] = ra["route_info"]


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def lb_ips(router: IdlRow) -> tuple[list[str], list[str]]:
    """The VIP addresses of the router's load balancers (direct and through groups)."""
    lbs: dict[str, IdlRow] = {}
    for lb in router.load_balancer:
        if isinstance(lb, IdlRow):
            lbs[lb.uuid] = lb
    for group in router.load_balancer_group:
        if isinstance(group, IdlRow):
            for lb in group.load_balancer:
                if isinstance(lb, IdlRow):
                    lbs[lb.uuid] = lb
    v4: set[str] = set()
    v6: set[str] = set()
    for lb in lbs.values():
        for vip in lb.vips:
            host = vip
            if vip.startswith("["):
                host = vip[1:].split("]", 1)[0]
            elif vip.count(":") == 1:
                host = vip.split(":", 1)[0]
            ip = _ip(host)
            if isinstance(ip, ipaddress.IPv4Address):
                v4.add(host)
            elif ip is not None:
                v6.add(host)
    return sorted(v4), sorted(v6)


def is_nat_gateway_port(nat: IdlRow, port: Port, n_gateways: int) -> bool:
    """`is_nat_gateway_port`: whether router port `port`, one of its router's
    `n_gateways` distributed gateway ports, serves `nat` (its `gateway_port`, else
    the port on a network holding its external IP; with one gateway port, it)."""
    if n_gateways <= 1:
        return True
    if nat.gateway_port is not None:
        return isinstance(nat.gateway_port, IdlRow) and nat.gateway_port.uuid == port.nb.uuid
    return find_lrp_member_ip(port.networks, nat.external_ip) is not None


def nat_addresses(port: Port, data: PortsData, include_lb_ips: bool) -> list[str]:
    """`get_nat_addresses(op, routable_only=false)` for router port `port`."""
    router = port.dp.nb
    mac = parse_mac(port.nb.mac)
    nats = sorted((n for n in router.nat if isinstance(n, IdlRow)), key=lambda n: n.uuid)
    v4, v6 = lb_ips(router)
    if mac is None or (not nats and not (v4 or v6)):
        return []
    out: list[str] = []
    central = [format_mac(mac)]
    n_gw = len(data.l3dgw_ports.get(port.dp.key, []))
    networks = port.networks
    own: set[str] = set()
    if networks is not None:
        own = {n.addr_s for n in networks.ipv4} | {n.addr_s for n in networks.ipv6}
    for nat in nats:
        ext = nat.external_ip
        masked = ip_parse_masked(ext)
        if isinstance(masked, str) or masked[1] != ALL4:
            continue  # IPv4 only, and a full mask
        if not is_nat_gateway_port(nat, port, n_gw):
            continue
        if n_gw and nat.type == "dnat_and_snat" and nat.logical_port and nat.external_mac:
            ext_mac = parse_mac(nat.external_mac)
            if ext_mac is not None:
                out.append(f'{format_mac(ext_mac)} {ext} is_chassis_resident("'
                           f'{nat.logical_port}")')
        elif ext not in own:
            central.append(ext)
    if include_lb_ips:
        central += v4 + v6
    if len(central) > 1:
        if port.cr_port is not None:
            cr = data.ports.get(port.cr_port)
            if cr is not None:
                central.append(f"is_chassis_resident({cr.json_key})")
        out.append(" ".join(central))
    return out


def advertising_ports(router: str, data: PortsData) -> list[Port]:
    """The switch ports of type router peering router `router` (a datapath key) that
    set `nat-addresses`: their bindings' `nat_addresses` follow the router's NAT rules
    and load balancer VIPs."""
    out: list[Port] = []
    for port in data.of_datapath(router):
        peer = data.peer_of(port)
        if peer is not None and peer.is_lsp and "nat-addresses" in peer.options:
            out.append(peer)
    return out


def readvertise(routers: Iterable[str], data: PortsData, bindings: DesiredTable,
                vips_only: bool = False) -> list[str]:
    """The desired `nat_addresses` of the ports advertising `routers`
    (`advertising_ports`) built again, as the binding builder builds them; the names
    of the bindings set. `vips_only`: only the routers' VIPs changed, so the ports
    whose addresses do not list them are skipped (`_lists_vips`)."""
    names: list[str] = []
    for key in routers:
        for lsp in advertising_ports(key, data):
            if lsp.name not in bindings.rows or (vips_only and not _lists_vips(lsp)):
                continue
            router = peer_router(lsp, data)
            gw_chassis = router.nb.options.get("chassis") if router is not None else None
            bindings.set(lsp.name, nat_addresses=router_lsp_nat_addresses(lsp, data,
                                                                          gw_chassis))
            names.append(lsp.name)
    return names


def _lists_vips(lsp: Port) -> bool:
    """Whether the `nat_addresses` of advertising port `lsp` list its router's VIPs
    (`nat_addresses`: with `exclude-lb-vips-from-garp`, a router whose NAT rules
    list nothing advertises nothing, VIPs or not)."""
    return lsp.options.get("nat-addresses") == "router" \
        and not smap_bool(lsp.options, "exclude-lb-vips-from-garp", False)


def router_lsp_nat_addresses(lsp: Port, data: PortsData, gw_chassis: str | None) -> list[str]:
    """`nat_addresses` of a switch port of type router (`options:nat-addresses` and the
    router port's own GARP entry)."""
    peer = data.peer_of(lsp)
    peer_gws = data.l3dgw_ports.get(peer.dp.key, []) if peer is not None else []
    option = lsp.options.get("nat-addresses")
    out: list[str] = []
    if option == "router":
        if peer is not None and (gw_chassis is not None or peer_gws):
            out = nat_addresses(peer, data, not smap_bool(
                lsp.options, "exclude-lb-vips-from-garp", False))
    elif option is not None and (gw_chassis is not None or peer_gws):
        words = option.split()
        if words and parse_mac(words[0]) is not None:
            entry = option
            if peer_gws and peer is not None:
                gw = peer if peer.cr_port is not None else peer_gws[0]
                cr = data.ports.get(gw.cr_port or "")
                if cr is not None:
                    entry += f" is_chassis_resident({cr.json_key})"
            out = [entry]
    garp = False
    if peer is not None and peer.is_lrp and peer_gws:
        if peer.cr_port is not None:
            garp = True
        elif smap_bool(peer.options, "reside-on-redirect-chassis", False):
            garp = len(peer_gws) == 1
    elif gw_chassis is not None and data.localnet_ports.get(lsp.dp.key):
        garp = True
    if garp and peer is not None and peer.networks is not None:
        parts = [peer.networks.ea_s, *(n.addr_s for n in peer.networks.ipv4)]
        if peer_gws:
            gw = peer if peer.cr_port is not None else peer_gws[0]
            cr = data.ports.get(gw.cr_port or "")
            if cr is not None:
                parts.append(f"is_chassis_resident({cr.json_key})")
        out.append(" ".join(parts))
    return out


def garp_again(switch: str, data: PortsData, bindings: DesiredTable) -> list[str]:
    """The `nat_addresses` of the ports on `switch` peering a gateway router put again
    (their GARP entry follows the switch's localnet ports); their names."""
    names: list[str] = []
    for lsp in data.router_ports.get(switch, ()):
        router = peer_router(lsp, data)
        gw_chassis = router.nb.options.get("chassis") if router is not None else None
        if gw_chassis is not None and lsp.name in bindings.rows:
            bindings.set(lsp.name, nat_addresses=router_lsp_nat_addresses(lsp, data,
                                                                         gw_chassis))
            names.append(lsp.name)
    return names


CHASSIS_BY_NAME = "name"  # SB Chassis indexes the graph asks the replica for
CHASSIS_BY_HOST = "hostname"


class ChassisLookup:
    """SB Chassis by name, else by hostname (the first by UUID where either repeats):
    through the replica's indexes where it keeps them (`CHASSIS_BY_NAME`,
    `CHASSIS_BY_HOST`), else through a walk of the table, made once."""

    def __init__(self, sb: Mapping[str, ReplicaTable]) -> None:
        self.table = sb.get("Chassis")
        self._walked: tuple[dict[str, IdlRow], dict[str, IdlRow]] | None = None

    def find(self, name: str) -> IdlRow | None:
        table = self.table
        if table is None:
            return None
        by_name = table.indexes.get(CHASSIS_BY_NAME)
        by_host = table.indexes.get(CHASSIS_BY_HOST)
        if by_name is None or by_host is None:
            return self._walk(name)
        for index, key in ((by_name, name), (by_host, name if name else None)):
            rows = index.entries.get((key,)) if key is not None else None
            if rows:
                return next(iter(rows.values())) if len(rows) == 1 else rows[min(rows)]
        return None

    def _walk(self, name: str) -> IdlRow | None:
        if self._walked is None:
            by_name: dict[str, IdlRow] = {}
            by_host: dict[str, IdlRow] = {}
            assert self.table is not None
            for row in sorted(self.table.rows.values(), key=lambda r: r.uuid):
                by_name.setdefault(row.name, row)
                if row.hostname:
                    by_host.setdefault(row.hostname, row)
            self._walked = by_name, by_host
        found = self._walked[0].get(name)
        return found if found is not None else self._walked[1].get(name)


def peer_router(lsp: Port, data: PortsData) -> Datapath | None:
    peer = data.peer_of(lsp)
    return peer.dp if peer is not None and peer.dp.is_router else None
