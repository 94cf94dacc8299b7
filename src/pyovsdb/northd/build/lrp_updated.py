"""Router ports updated in place in what their own bindings and the flows read: their
`external_ids`, `enabled`, `ipv6_ra_configs`, the options only the flows read, and
their `networks` and MAC.

Rules kept here:
- Handled: an update of a router port the build has (the same row UUID under the same
  name) that changes only `COLUMNS`, and of `options` only the keys in
  `OPTIONS`, on a port without `options:mcast_flood` (the multicast groups read
  it with `enabled`). Anything else is refused (None) and the caller recomputes.
- The port and its chassisredirect port take the new row; their bindings are put
  again (`put_router_binding`: the IPv6 options read `enabled` and
  `ipv6_ra_configs`), and so is the `nat_addresses` of the switch port peering it
  (`reside-on-redirect-chassis` adds the port's own GARP entry there); its router
  and the datapaths of its peers (not every switch its router is on: a router on a
  shared public switch does not build that switch again for an interface's subnet)
  have their flows built again (`PortsDelta.flows`).
- A port asking for another tunnel key (`options:requested-tnl-key` added, changed
  or dropped): the build's walk over its router's ports (`port_keys_walked`, given
  the SB replicas `sb` and the VXLAN mode; refused without them, or where it
  refuses); the ports whose keys move have their bindings put again.
- `peer`: the port names another router port (or none), one way, as the build reads
  it (`peers_incremental.router_peers`), and the routers of the ports it named and
  names have their flows built again (a router port's peer's router resolves its
  addresses); refused where a router-type switch port names the port (the build's
  walk order decides which peer it gets).
- `networks` (a subnet added to a router interface, IPv4 beside IPv6) and `mac`:
  on a port whose switch does IPAM for a port asking for or holding dynamic addresses
  (the port's IPs are taken there; IPAM keeps a dynamic MAC it gave even where a
  router port's MAC is the same), refused unless the caller gives the core's IPAM
  (`ipam`: that switch's allocations moved, `datapaths_updated.ipam_again`); the
  port, its chassisredirect port and the
  switch port of type router peering it (whose "router" addresses are the port's)
  take the new networks. Its peer's `nat_addresses` are put again as above (a router
  port's own IPs are no NAT addresses; the ports advertising its router's other
  ports read theirs), and the flows other routers on its switch ask for there (which
  read its networks) are the switch ports', built again with the switch. The VIPs of
  its router's load balancers that it answers for follow its networks: the caller has
  the load balancer data built again (`lb_incremental`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...idl.tracking import changed_columns
from ...ovsdb.changeset import RowChange
from ..desired import DesiredDb
from .delta import PortsDelta
from .ipam_incremental import asks_ipam
from .peers_incremental import peer_named
from .port_keys import TUNNEL_KEY
from .port_keys_walked import walk_port_keys
from .ports import Port, PortsData
from .ports_addresses import Addresses, lrp_networks
from .ports_put import put_router_binding
from .ports_router import router_lsp_nat_addresses

COLUMNS = frozenset(("external_ids", "enabled", "ipv6_ra_configs", "options", "networks",
                     "mac", "peer"))
ADDRESSES = frozenset(("networks", "mac"))
FLOW_OPTIONS = frozenset(("gateway_mtu", "gateway_mtu_bypass", "reside-on-redirect-chassis",
                          "dynamic-routing", "routing-protocols"))
# (`redirect-type` is also its chassisredirect port's: that binding is put again)
OPTIONS = FLOW_OPTIONS | {TUNNEL_KEY, "redirect-type"}


def _changed_options(old: IdlRow, new: IdlRow) -> set[str]:
    a, b = old.options, new.options
    return {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}


def updatable(rc: RowChange[IdlRow]) -> bool:
    """Whether a router port change is an update this module may take (see the
    rules; the port itself is checked by `lrps_updated`)."""
    old, new = rc.old, rc.new
    if old is None or new is None:
        return False
    columns = set(changed_columns(rc))
    return columns <= COLUMNS and "mcast_flood" not in old.options \
        and "mcast_flood" not in new.options \
        and ("options" not in columns or _changed_options(old, new) <= OPTIONS) \
        and (columns.isdisjoint(ADDRESSES)
             or lrp_networks(new.mac, new.networks) is not None)


def lrps_updated(changes: Mapping[str, RowChange[IdlRow]], ports: PortsData,
                 sb_desired: DesiredDb,
                 ipam: Callable[[set[str], PortsDelta], bool] | None = None,
                 sb: Mapping[str, ReplicaTable] | None = None, vxlan: bool = False
                 ) -> PortsDelta | None:
    """The router port updates `changes` (each `updatable`) applied in place, or
    None (see the rules)."""
    found: list[tuple[Port, IdlRow, Addresses | None]] = []
    allocating: set[str] = set()  # switches whose IPAM takes the new networks
    rekeying: set[str] = set()  # routers whose ports' keys the build walks again
    repeered: set[str] = set()  # ports whose `peer` changed
    peered: set[str] = set()  # routers a port names (named) as its peer: their flows
    for uuid, rc in changes.items():
        new = rc.new
        assert new is not None and rc.old is not None
        port = ports.ports.get(new.name)
        if port is None or not port.is_lrp or port.nb.uuid != uuid:
            return None
        networks = None
        columns = set(changed_columns(rc))
        if not columns.isdisjoint(ADDRESSES):
            if not _networks_movable(port, ports):
                peer = ports.peer_of(port)
                if ipam is None or peer is None:
                    return None
                allocating.add(peer.dp.key)
            networks = lrp_networks(new.mac, new.networks)
        if rc.old.options.get(TUNNEL_KEY) != new.options.get(TUNNEL_KEY):
            rekeying.add(port.dp.key)
        if "peer" in columns:
            if ports.named_by.get(port.name):
                return None  # (a router-type switch port names it: the walk's order)
            repeered.add(port.name)
        found.append((port, new, networks))
    for port, new, networks in found:
        if networks is not None:
            _take_networks(port, networks, ports)
        for p in (port, ports.ports.get(port.cr_port or "")):
            if p is not None:
                p.nb, p.options = new, new.options
        if port.name in repeered:
            was = peer_named(port.peer, ports)
            port.peer = peer_named(new.peer, ports)
            peered |= {ports.ports[n].dp.key for n in (was, port.peer) if n is not None}
    delta = PortsDelta()
    if rekeying and (sb is None or not walk_port_keys(rekeying, sb, ports, vxlan,
                                                      sb_desired, delta)):
        return None
    table = sb_desired.tables["Port_Binding"]
    flows: set[str] = set()
    for port, _, _ in found:
        for p in (port, ports.ports.get(port.cr_port or "")):
            if p is not None:
                put_router_binding(p, ports, table, delta)
                peer = ports.peer_of(p)
                if peer is not None:
                    flows.add(peer.dp.key)
        peer = ports.peer_of(port)
        if peer is not None and peer.is_lsp and peer.name in table.rows:
            table.set(peer.name, nat_addresses=router_lsp_nat_addresses(
                peer, ports, port.dp.nb.options.get("chassis")))
            delta.touch("sb", "Port_Binding", peer.name)
        flows.add(port.dp.key)
    delta.flows |= flows | ports.next_to(peered)
    if allocating and ipam is not None and not ipam(allocating, delta):
        return None
    return delta


def _networks_movable(port: Port, ports: PortsData) -> bool:
    """Whether the networks of router port `port` may change in place (see the rules)."""
    peer = ports.peer_of(port)
    if peer is None or not peer.is_lsp or "subnet" not in peer.dp.nb.other_config:
        return True
    return not any(asks_ipam(p.nb) for p in ports.by_datapath.get(peer.dp.key, [])
                   if p.is_lsp)


def _take_networks(port: Port, networks: Addresses, ports: PortsData) -> None:
    """`port`, its chassisredirect port and the switch port peering it with
    "router" addresses (which are the router port's networks) given `networks`."""
    old = port.networks
    for p in (port, ports.ports.get(port.cr_port or "")):
        if p is not None:
            p.networks = networks
    peer = ports.peer_of(port)
    if peer is not None and peer.is_lsp:
        peer.lsp_addrs = [networks if a is old else a for a in peer.lsp_addrs]
