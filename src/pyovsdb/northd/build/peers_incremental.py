"""A switch connected to a router, or disconnected, in place: the switch's router port
(type "router", `options:router-port`) and the router port it names paired as
`ports._connect` pairs them in a build.

Rules kept here:
- Only the plain case: a router-type switch port whose options are `router-port` and
  what it advertises (`nat-addresses`, `exclude-lb-vips-from-garp`; an HA chassis
  group it may name, which 23.03 reads on external ports alone),
  whose addresses are "router" or none, naming a router port that has no peer yet, no
  `peer` column of its own, no NB HA chassis group (gateway chassis it may have: a
  distributed gateway port), on any router (a gateway router's pair is bound as
  `l3gateway` on both sides, from the same binding builders a recompute uses).
  Anything else is refused by the caller (`ports_incremental`), which recomputes.
- A switch's router ports are listed as a build lists them: in the order of 23.03's
  walk of its port hash table (every binding's name, then every port without one),
  which for ports in different buckets is their bucket order under the table's final
  mask (`walk.PortWalk.sort_ports`); ports sharing a bucket are ordered by where each was inserted
  (`hmap_order_of`), which takes a walk over every binding, so only then.
- Either side may come first: a router-type switch port naming no router port (yet)
  is listed in `PortsData.named_by` alone, and pairs when its router port comes
  (`named_before`); a router port going unpairs its switch port, which stays
  (`unpair`).
- A pair is made and undone in both directions at once: the switch port's `peer`, the
  router port's `peer`, the switch's router ports, and the router port's networks as
  the switch port's addresses ("router").
- Router ports peering routers directly (their own `peer` column, one way each:
  `router_peers`) take or lose their peer as the port they name comes or goes, where
  no router-type switch port names them too.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...idl.row import IdlRow
from ...util.ovshash import hash_name, hmap_mask
from .ports import Port, PortKind, PortsData, parse_switch_addresses

# The options of a router-type switch port this module pairs: the router port it names,
# and what it advertises (`nat_addresses` of its binding, built with it).
_PLAIN_OPTIONS = frozenset({"router-port", "nat-addresses", "exclude-lb-vips-from-garp"})


def router_lsp(row: IdlRow) -> bool:
    """Whether a switch port is a plain router port of its switch (see the rules)."""
    if row.value("type") != "router" or row.parent_name is not None \
            or row.tag_request is not None or row.tag is not None \
            or row.value("mirror_rules") \
            or row.dynamic_addresses is not None:
        return False
    options = row.options
    return "router-port" in options and set(options) <= _PLAIN_OPTIONS \
        and all(a == "router" for a in row.addresses)


def pairable(lsp_row: IdlRow, ports: PortsData) -> Port | None:
    """The router port a new plain router-type switch port would pair with, if the pair
    is one this module makes (see the rules)."""
    lrp = ports.ports.get(lsp_row.options.get("router-port", ""))
    if lrp is None or not lrp.is_lrp or lrp.peer is not None \
            or lrp.nb.value("peer") or lrp.nb.ha_chassis_group is not None:
        return None
    return lrp


def named_before(lrp_row: IdlRow, ports: PortsData, going: set[str]) -> Port | bool | None:
    """The switch port a new router port (`lrp_row`) pairs with because it named it
    before the router port came: None if no switch port (other
    than those `going`) names it; False if the pair is not one this module makes (see
    the rules), or more than one does."""
    naming = ports.named_by.get(lrp_row.value("name"), set()) - going
    if not naming:
        return None
    lsp = ports.ports.get(next(iter(naming)))
    if len(naming) != 1 or lsp is None or not lsp.is_lsp or lsp.peer is not None \
            or not router_lsp(lsp.nb) or lrp_row.value("peer") \
            or lrp_row.ha_chassis_group is not None:
        return False
    return lsp


def name_router_port(lsp: Port, ports: PortsData) -> None:
    """A router-type switch port naming a router port that is not there (yet)."""
    ports.named_by.setdefault(lsp.options.get("router-port", ""), set()).add(lsp.name)


def connect(lsp: Port, lrp: Port, ports: PortsData) -> None:
    """Pair the switch port `lsp` with the router port `lrp`."""
    lsp.peer = lrp.name
    lrp.peer = lsp.name
    ports.named_by.setdefault(lrp.name, set()).add(lsp.name)
    ports.router_ports.setdefault(lsp.dp.key, []).append(lsp)
    if "router" in lsp.nb.addresses and lrp.networks is not None:
        lsp.lsp_addrs.append(lrp.networks)


def alone_in_bucket(lsp: Port, ports: PortsData) -> bool:
    """Whether a router port of a switch is alone in its hash bucket among the switch's
    router ports, so that its binding coming (which moves where it was inserted) leaves
    their walk order as it was. Checked under the mask of the ports alone, which is no
    larger than a build's (ports in different buckets there are so in a build)."""
    mask = hmap_mask(len(ports.ports))
    mine = hash_name(lsp.name) & mask
    return not any(hash_name(p.name) & mask == mine
                   for p in ports.router_ports.get(lsp.dp.key, ()) if p is not lsp)


def disconnect(lsp: Port, ports: PortsData) -> Port | None:
    """Undo the pair of the switch port `lsp` (going away); the router port it was
    paired with if that one stays."""
    naming = lsp.options.get("router-port", "")
    named = ports.named_by.get(naming)
    if named is not None:
        named.discard(lsp.name)
        if not named:
            del ports.named_by[naming]
    _leave_router_ports(lsp, ports)
    lrp = ports.peer_of(lsp)
    if lrp is None or not lrp.is_lrp or lrp.peer != lsp.name:
        return None
    lrp.peer = None
    return lrp


def unpair(lsp: Port, ports: PortsData) -> Port:
    """The switch port `lsp` (staying) without the router port it was paired with
    (going): a new port in its place, as a build makes a router-type switch port
    naming no router port (out of the switch's router ports, no router addresses)."""
    _leave_router_ports(lsp, ports)
    port = Port(lsp.name, lsp.dp, PortKind.SWITCH, lsp.nb, tunnel_key=lsp.tunnel_key)
    port.sb = lsp.sb
    parse_switch_addresses(port)
    ports.ports[port.name] = port
    on_dp = ports.by_datapath[port.dp.key]
    on_dp[on_dp.index(lsp)] = port
    return port


def _leave_router_ports(lsp: Port, ports: PortsData) -> None:
    """The switch port `lsp` out of its switch's router ports (if it is there)."""
    members = ports.router_ports.get(lsp.dp.key)
    if members is not None and lsp in members:
        members.remove(lsp)
        if not members:
            del ports.router_ports[lsp.dp.key]


def router_peers(added: list[Port], gone: set[str], namers: Iterable[IdlRow],
                 ports: PortsData) -> list[Port] | None:
    """Router ports peering by their own `peer` column (one way each, as `_connect`
    reads it): the ports `added` (in the core already) take the router port they name,
    and the router ports `namers` (rows; those naming one of `added` or `gone` count)
    take or lose theirs; those whose peer changed, or None, nothing touched, where a
    router-type switch port names one of them too (the walk's order would decide)."""
    names = {p.name for p in added}
    moved: list[tuple[Port, str | None]] = []
    for port in added:
        if port.nb.peer:
            moved.append((port, port.nb.peer))
    for row in namers:
        namer = ports.ports.get(row.name)
        if namer is not None and namer.nb.uuid == row.uuid and namer.name not in names \
                and row.peer in names | gone:
            moved.append((namer, row.peer))
    if any(ports.named_by.get(port.name) for port, _ in moved):
        return None
    for port, name in moved:
        port.peer = peer_named(None if name in gone else name, ports)
    return [port for port, _ in moved if port.name not in names]


def peer_named(name: str | None, ports: PortsData) -> str | None:
    """The peer a router port whose `peer` column is `name` has, as the build reads it:
    that router port, if it is one."""
    target = ports.ports.get(name) if name else None
    return target.name if target is not None and target.is_lrp else None
