"""Static next-hop resolution of logical routers (`lr_in_arp_resolve`): the MAC a
packet routed to a next hop is sent to, known without ARP or ND where northd knows the
address's owner, as ovn-northd 23.03 writes it (`build_arp_resolve_flows_for_lrouter`,
`build_arp_resolve_flows_for_lrouter_port`, and the NAT external IPs of
`build_lrouter_nat_defrag_and_lb`).

Rules kept here:
- Every router passes multicast on (500), asks the MAC_Binding table (`get_arp`,
  `get_nd`) for the rest (1) and drops what is not IP (0, `ctx.drop_action`).
- A flow is written in the pipeline of the router that routes to the address and
  matches the router port it leaves by (`outport`), at priority 100:
  - every IPv4 and IPv6 address of a switch port (any type but router and virtual, and
    not disabled), for each router port on its switch whose networks hold it;
  - a virtual port's virtual IP: with the MAC of its parent when the binding names a
    virtual parent and a chassis, else 00:00:00:00:00:00 (resolved by `arp` later),
    once, for the first router port (or parent address) whose networks hold it;
  - the networks of every other router port on a shared switch (unless the router has
    `options:dynamic_neigh_routers`, which leaves them to ARP: with N gateway routers
    on one join switch the static entries grow as N*N), and, when the router is a
    gateway router or has a distributed gateway port, the routable NAT and load
    balancer addresses (`add_route`) of distributed gateway ports there;
  - a router port peered directly with another router port: its networks, in the
    peer's pipeline.
  Router ports' networks are written bare when there is one, in braces otherwise (the
  IPv6 link-local address counts, so a port with one IPv6 network writes two).
- A distributed gateway port with `redirect-type=bridged` sends packets leaving by it
  on another chassis to its own MAC (50), so the gateway chassis resolves them.
- Router IPs that are also SNAT or load balancer addresses are dropped here (2): they
  got past the unSNAT stage without a session.
- On a router with distributed gateway ports, every NAT external IP, once per
  address as written in NB: packets from outside still bound for it are dropped (150),
  those routed there from inside are sent to the NAT's external MAC if distributed, else
  the gateway port's MAC (100); with `redirect-type=bridged` a distributed NAT's own
  traffic is resolved with `get_arp`/`get_nd` on its chassis (90).
- NAT entries are those that pass 23.03's checks (`lr_nat_rules.nat_rules`).
- Ports are visited in 23.03's port hash table order (`ls_arp_nd.walk_order`), so a
  flow two ports ask for keeps the first one's stage hint.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...ovsdb.hashorder import hmap_order
from ...util.ovshash import hash_name
from ..build.datapaths import Datapath, smap_bool
from ..build.ports import Port
from ..build.ports_addresses import (
    ALL4,
    Addresses,
    find_lrp_member_ip,
    format_mac,
    ip_parse_masked,
    lsp_addresses,
    parse_mac,
)
from .context import LflowContext
from .lr_nat_rules import nat_rules
from .router_facts import router_facts, router_vips
from .stages import Stage
from .table import LflowTable, nat_ip_owner, nat_port_owner, pair_owner

STAGE = Stage.LR_IN_ARP_RESOLVE


def build_router(ctx: LflowContext, dp: Datapath, out: LflowTable) -> None:
    out.add(dp, STAGE, 500, "ip4.mcast || ip6.mcast", "next;")
    out.add(dp, STAGE, 1, "ip4", "get_arp(outport, reg0); next;")
    out.add(dp, STAGE, 1, "ip6", "get_nd(outport, xxreg0); next;")
    out.add(dp, STAGE, 0, "1", ctx.drop_action)


# --- addresses ----------------------------------------------------------------------

def v4_networks(networks: Addresses) -> str:
    """`op_put_v4_networks` without broadcasts."""
    addrs = [n.addr_s for n in networks.ipv4]
    return addrs[0] if len(addrs) == 1 else "{" + ", ".join(addrs) + "}"


def v6_networks(networks: Addresses) -> str:
    addrs = [n.addr_s for n in networks.ipv6]
    return addrs[0] if len(addrs) == 1 else "{" + ", ".join(addrs) + "}"


# --- NAT entries ----------------------------------------------------------------------

def l3dgw_ports(ctx: LflowContext, dp: Datapath) -> list[Port]:
    """The router's distributed gateway ports in the order 23.03 lists them: its NB
    `ports` column's (UUID order)."""
    return sorted(router_facts(ctx, dp).l3dgw_ports, key=lambda p: p.nb.uuid)


def redirect_bridged(ctx: LflowContext, dp: Datapath) -> bool:
    """`od->redirect_bridged`: a port of the router has `redirect-type=bridged`."""
    return any(p.is_lrp and p.options.get("redirect-type", "").lower() == "bridged"
               for p in ctx.all_ports_of(dp))


def build_nat(ctx: LflowContext, dp: Datapath, out: LflowTable) -> None:
    """The NAT external IPs of a router with distributed gateway ports."""
    facts = router_facts(ctx, dp)
    if facts.is_gw_router or not facts.l3dgw_ports:
        return
    gateways = l3dgw_ports(ctx, dp)
    bridged = redirect_bridged(ctx, dp)
    seen: set[str] = set()
    for nat in nat_rules(ctx, dp):
        ext = nat.external_ip
        gw = nat.gw_port
        if ext in seen or gw is None or gw.networks is None:
            continue
        seen.add(ext)
        with out.owned_by(nat_ip_owner(dp, ext)):
            ip = "ip6" if nat.is_v6 else "ip4"
            out.add(dp, STAGE, 150, f"inport == {gw.json_key} && outport == {gw.json_key} "
                    f"&& {ip}.dst == {ext}", ctx.drop_action, hint=nat.nb)
            mac = str(nat.nb.external_mac) if nat.distributed else gw.networks.ea_s
            reg = "xxreg0" if nat.is_v6 else "reg0"
            out.add(dp, STAGE, 100, f"outport == {gw.json_key} && {reg} == {ext}",
                    f"eth.dst = {mac}; next;", hint=nat.nb)
            if bridged and nat.distributed:
                get = "get_nd(outport, xxreg0)" if nat.is_v6 else "get_arp(outport, reg0)"
                out.add(dp, STAGE, 90, f"outport == {gateways[0].json_key} && {ip}.src == "
                        f'{nat.nb.logical_ip} && is_chassis_resident("{nat.nb.logical_port}")',
                        f"{get}; next;", hint=nat.nb)


# --- per port ---------------------------------------------------------------------------

def build_port(ctx: LflowContext, port: Port, out: LflowTable) -> None:
    if port.is_lrp:
        _router_port(ctx, port, out)
    elif port.is_lsp and port.enabled:
        if port.type == "router":
            _router_type_port(ctx, port, out)
        elif port.type == "virtual":
            _virtual_port(ctx, port, out)
        else:
            _vif(ctx, port, out)


def _router_port(ctx: LflowContext, port: Port, out: LflowTable) -> None:
    networks = port.networks
    if networks is None:
        return
    peer = ctx.ports.peer_of(port)
    if peer is not None and port.nb.peer and peer.is_lrp:
        match = f"outport == {peer.json_key} && "
        action = f"eth.dst = {networks.ea_s}; next;"
        if networks.ipv4:
            out.add(peer.dp, STAGE, 100, match + "reg0== " + v4_networks(networks), action,
                    hint=port.nb)
        if networks.ipv6:
            out.add(peer.dp, STAGE, 100, match + "xxreg0 == " + v6_networks(networks),
                    action, hint=port.nb)
    cr = ctx.ports.ports.get(port.cr_port) if port.cr_port is not None else None
    if cr is not None and port.options.get("redirect-type", "").lower() == "bridged":
        out.add(port.dp, STAGE, 50,
                f"outport == {port.json_key} && !is_chassis_resident({cr.json_key})",
                f"eth.dst = {networks.ea_s}; next;", hint=port.nb)
    with out.owned_by(nat_port_owner(port.dp.key, port.name)):
        _drop_own_snat_ips(ctx, port, networks, out)


def build_port_nat(ctx: LflowContext, port: Port, out: LflowTable) -> None:
    """What router port `port`'s router's NAT rules (and VIPs) derive on it: the drops
    of its SNAT IPs and VIPs."""
    if port.networks is not None:
        _drop_own_snat_ips(ctx, port, port.networks, out)


def _drop_own_snat_ips(ctx: LflowContext, port: Port, networks: Addresses,
                       out: LflowTable) -> None:
    """`build_lrouter_drop_own_dest` for the router IPs that are SNAT or LB IPs."""
    facts, vips = router_facts(ctx, port.dp), router_vips(ctx, port.dp)
    v4 = [n.addr_s for n in networks.ipv4
          if n.addr_s in facts.snat_ips or n.addr_s in vips.v4]
    if v4:
        out.add(port.dp, STAGE, 2, "ip4.dst == {" + ", ".join(v4) + "}", ctx.drop_action,
                hint=port.nb)
    v6 = [n.addr_s for n in networks.ipv6
          if n.addr_s in facts.snat_ips or n.addr_s in vips.v6]
    if v6:
        out.add(port.dp, STAGE, 2, "ip6.dst == {" + ", ".join(v6) + "}", ctx.drop_action,
                hint=port.nb)


def _switch_router_ports(ctx: LflowContext, switch: Datapath) -> list[Port]:
    """The router ports that the switch's router-type ports name, in the switch's
    order of them."""
    cache: dict[str, list[Port]] = ctx.cache.setdefault("lr_arp_switch_routers", {})
    found = cache.get(switch.key)
    if found is None:
        found = cache[switch.key] = []
        for lsp in ctx.ports.router_ports.get(switch.key, []):
            peer = ctx.ports.peer_of(lsp)
            if peer is not None and peer.is_lrp:
                found.append(peer)
    return found


def _vif(ctx: LflowContext, port: Port, out: LflowTable) -> None:
    routers = _switch_router_ports(ctx, port.dp)
    if not routers:
        return
    for addrs in port.lsp_addrs:
        action = f"eth.dst = {addrs.ea_s}; next;"
        for reg, ips in (("reg0", [a.addr_s for a in addrs.ipv4]),
                         ("xxreg0", [a.addr_s for a in addrs.ipv6])):
            for ip in ips:
                for rp in routers:
                    if find_lrp_member_ip(rp.networks, ip) is not None:
                        out.add(rp.dp, STAGE, 100, f"outport == {rp.json_key} && "
                                f"{reg} == {ip}", action, hint=port.nb)


def _vip_is_valid(vip: str) -> bool:
    try:
        if "." in vip:
            ipaddress.IPv4Address(vip)
        else:
            ipaddress.IPv6Address(vip)
    except ValueError:
        return False
    return True


def _virtual_port(ctx: LflowContext, port: Port, out: LflowTable) -> None:
    vip = port.options.get("virtual-ip")
    routers = _switch_router_ports(ctx, port.dp)
    if not routers or vip is None or "virtual-parents" not in port.options or \
            not _vip_is_valid(vip):
        return
    reg = "reg0" if "." in vip else "xxreg0"
    binding = port.sb
    parent_name = binding.virtual_parent if binding is not None else None
    if binding is None or not parent_name or binding.chassis is None:
        for rp in routers:
            if find_lrp_member_ip(rp.networks, vip) is not None:
                out.add(rp.dp, STAGE, 100, f"outport == {rp.json_key} && {reg} == {vip}",
                        "eth.dst = 00:00:00:00:00:00; next;", hint=port.nb)
                return
        return
    parent = ctx.ports.ports.get(str(parent_name))
    if parent is None or not parent.is_lsp:
        return
    parent_routers = _switch_router_ports(ctx, parent.dp)
    for addrs in parent.lsp_addrs:
        for rp in parent_routers:
            if find_lrp_member_ip(rp.networks, vip) is not None:
                out.add(rp.dp, STAGE, 100, f"outport == {rp.json_key} && {reg} == {vip}",
                        f"eth.dst = {addrs.ea_s}; next;", hint=port.nb)
                return


def _router_type_port(ctx: LflowContext, port: Port, out: LflowTable) -> None:
    peer = ctx.ports.peer_of(port)
    if peer is None or not peer.is_lrp:
        return
    router = peer.dp
    if smap_bool(router.nb.options, "dynamic_neigh_routers") or not out.wants(router.key):
        return
    routables = "chassis" in router.nb.options or peer.cr_port is not None
    match = f"outport == {peer.json_key} && "
    for other in _switch_router_ports(ctx, port.dp):
        networks = other.networks
        if other is peer or networks is None or not ctx.asks_about(other.name):
            continue
        with out.owned_by(pair_owner(port.name, other.name)):
            action = f"eth.dst = {networks.ea_s}; next;"
            if networks.ipv4:
                out.add(router, STAGE, 100, match + "reg0 == " + v4_networks(networks),
                        action, hint=port.nb)
            if networks.ipv6:
                out.add(router, STAGE, 100, match + "xxreg0 == " + v6_networks(networks),
                        action, hint=port.nb)
            if routables:
                for addrs in routable_addresses(ctx, other):
                    ips = ", ".join(a.addr_s for a in addrs.ipv4)
                    out.add(router, STAGE, 100, match + "reg0 == {" + ips + "}",
                            f"eth.dst = {addrs.ea_s}; next;")


def routable_addresses(ctx: LflowContext, port: Port) -> list[Addresses]:
    """`op->routables` of a distributed gateway port: `get_nat_addresses` with only
    the NAT and LB addresses that ask for a route (`add_route`), as 23.03 computes
    them while it still lists the router's gateway ports (those up to this one)."""
    if port.cr_port is None:
        return []
    cache: dict[str, list[Addresses]] = ctx.cache.setdefault("lr_arp_routables", {})
    found = cache.get(port.name)
    if found is None:
        found = cache[port.name] = _routables(ctx, port)
    return found


def _routables(ctx: LflowContext, port: Port) -> list[Addresses]:
    dp = port.dp
    if not _asks_routes(ctx, dp):
        return []  # (what follows finds nothing: the router's facts are not built)
    vips = router_vips(ctx, dp)
    mac = parse_mac(str(port.nb.mac))
    networks = port.networks
    nats = sorted((r for r in dp.nb.nat if isinstance(r, IdlRow)), key=lambda r: r.uuid)
    if mac is None or networks is None or (not nats and not vips.has_lb_vip):
        return []
    gateways = l3dgw_ports(ctx, dp)
    n_gateways = gateways.index(port) + 1 if port in gateways else len(gateways)
    own = {n.addr_s for n in networks.ipv4} | {n.addr_s for n in networks.ipv6}
    strings: list[str] = []
    central = [format_mac(mac)]
    for nat in nats:
        if nat.type == "snat" or not smap_bool(nat.options, "add_route"):
            continue
        ext = str(nat.external_ip)
        masked = ip_parse_masked(ext)
        if isinstance(masked, str) or masked[1] != ALL4:
            continue
        if n_gateways > 1:
            gw = nat.gateway_port
            if gw is None and find_lrp_member_ip(networks, ext) is None:
                continue
            if gw is not None and (not isinstance(gw, IdlRow) or gw.uuid != port.nb.uuid):
                continue
        if nat.type == "dnat_and_snat" and nat.logical_port and nat.external_mac:
            ext_mac = parse_mac(str(nat.external_mac))
            if ext_mac is not None:
                strings.append(f"{format_mac(ext_mac)} {ext}")
        elif ext not in own:
            central.append(ext)
    central += _sset_order(vips.v4_routable) + _sset_order(vips.v6_routable)
    if len(central) > 1:
        strings.append(" ".join(central))
    parsed = (lsp_addresses(s) for s in strings)
    return [a for a in parsed if a is not None]


def routes_asked(ctx: LflowContext) -> bool:
    """Whether any NAT rule or load balancer asks for routes (`add_route`): without
    one, no gateway port has routables (a router-type port on a shared switch need not
    ask each router)."""
    found: bool | None = ctx.cache.get("lr_arp_routes_asked")
    if found is None:
        found = ctx.cache["lr_arp_routes_asked"] = bool(_lb_askers(ctx)) or any(
            _nat_asks(row) for row in _nat_rows(ctx.nb.get("NAT")))
    return found


def _asks_routes(ctx: LflowContext, dp: Datapath) -> bool:
    """Whether a NAT rule (other than SNAT) or a load balancer with VIPs of router `dp`
    asks for routes: without one, its gateway ports have no routables."""
    return dp.key in _lb_askers(ctx) or any(
        _nat_asks(row) for row in dp.nb.nat if isinstance(row, IdlRow))


def _nat_rows(table: ReplicaTable | None) -> Iterable[IdlRow]:
    """The NAT rules that may ask for routes (not SNAT): by the index of their type
    where the replica keeps one (`NB_INDEXES`), else every one."""
    if table is None:
        return ()
    index = table.indexes.get("type")
    if index is None:
        return table.rows.values()
    return [*index.find("dnat"), *index.find("dnat_and_snat")]


def _nat_asks(nat: IdlRow) -> bool:
    """A NAT rule (not SNAT) that asks for a route, read from its stored values."""
    return nat.value("type") != "snat" and any(k == "add_route" for k, _ in nat.value("options"))


def _lb_askers(ctx: LflowContext) -> frozenset[str]:
    """The routers of load balancers with VIPs that ask for routes, once per build."""
    found: frozenset[str] | None = ctx.cache.get("lr_arp_lb_askers")
    if found is None:
        found = ctx.cache["lr_arp_lb_askers"] = frozenset(
            key for lb in ctx.lbs.lbs.values() if lb.routable and lb.vips
            for key in lb.routers)
    return found


def _sset_order(names: list[str]) -> list[str]:
    """The order 23.03 walks an `sset` holding `names`."""
    return hmap_order((hash_name(n), n) for n in names)
