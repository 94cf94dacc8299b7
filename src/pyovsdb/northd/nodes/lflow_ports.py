"""Which flows a change of ports lets the `lflow` node build again alone, and what it
keeps of each port between runs to tell (`LflowData.port_dps`).

Rules kept here:
- A VIF is a switch port of type "". The VIFs of a switch that come, change or go
  move the requests of the switch's other ports only where those read them
  (`vifs_kept_alike`: no other port but router ports, whose ARP floods reach the
  rest; a router with multicast relay; a virtual port, whose flows name its parents).
- A switch's own flows read its VIFs in two ways alone (`read_by_switch`): a VIF with
  "unknown" addresses has the switch flood unknown MACs (`ls_port_sec.
  floods_unknown`), one with `mcast_flood` floods multicast statically (`ls_mcast.
  switch_info`). Where no VIF changed (as it was or is now) reads so, the switch's
  own flows stay as they are and the VIFs' requests alone are built again
  (`lflows.rebuild_vifs`); a builder of a switch's own flows that comes to read a VIF
  otherwise must be named here (the self-check of every test run finds it).
- Router ports joining or leaving a switch have some ports' requests on the routers
  read them (`router_port_readers`): of the router-type ports there before, only what
  they ask for about those router ports (`pair_readers`, `lflows.rebuild_pairs`).
- A router's own flows, routes, policies and NAT flows read its ports; its other ports'
  requests do not, unless the port is a distributed gateway port (the router's facts
  name it) or is paired with another router's (`plain_lrp`). A plain router port
  coming or going builds those again with its own requests and the requests there of
  the switch ports it brings or takes along (`beside_changed`).
"""

from __future__ import annotations

from ..build.datapaths import Datapath, smap_bool
from ..build.ports import Port, PortsData
from ..lflows import LflowContext, LflowTable
from ..lflows.lr_arp_resolve import routes_asked

# logical port -> its datapath's key, whether it is a VIF, whether its switch's own
# flows read it (`read_by_switch`; of a router's port, whether it is not `plain_lrp`),
# whether it is a router-type switch port paired with a router port (`router_ports`)
PortDp = tuple[str, bool, bool, bool]


def router_port_readers(ctx: LflowContext, switches: set[str], built: set[str]
                        ) -> tuple[set[str], set[str]]:
    """The ports of `switches` (which gained or lost a router port) whose requests on
    the switch's routers read its router ports, and those routers: router-type ports
    whose routers' flows read the other router ports (their networks, without
    `dynamic_neigh_routers`; their routable addresses, while some rule asks for
    routes), and virtual ports (their VIP is resolved on the first router that holds
    it). Routers in `built` are built again whole already."""
    asked = routes_asked(ctx)
    ports = ctx.ports
    names: set[str] = set()
    routers: set[str] = set()
    for key in switches:
        on_switch: set[str] = set()
        for lsp in ports.router_ports.get(key, ()):
            peer = ports.peer_of(lsp)
            if peer is None or peer.dp.key in built:
                continue
            on_switch.add(peer.dp.key)
            if asked or not smap_bool(peer.dp.nb.options, "dynamic_neigh_routers"):
                names.add(lsp.name)
                routers.add(peer.dp.key)
        virtual = {p.name for p in ports.of_datapath(key) if p.type == "virtual"}
        if virtual and on_switch:
            names |= virtual
            routers |= on_switch
    return names, routers


def guarded(ports: PortsData, switches: set[str]) -> set[str]:
    """Of `switches` (which gained or lost a router port), those with an external port:
    its guard drops ARP/ND for the switch's router ports' addresses, one of the
    switch's own flows that read them (built again whole)."""
    return {key for key in switches if any(p.type == "external"
                                           for p in ports.of_datapath(key))}


def pair_readers(ports: PortsData, readers: set[str], joined: dict[str, set[str]],
                 added: set[str], left: set[str]) -> tuple[set[str], set[str]]:
    """Of the `readers` (`router_port_readers`), those that only need what they ask
    for about the router ports that joined their switches (or left them) built again
    (`lflows.rebuild_pairs`): router-type ports there before, on a switch whose router
    ports changed only by new ones joining (`joined`, all `added`) or old ones leaving
    (`left`); and the router ports they ask about. The others' requests are built
    again whole."""
    about: set[str] = set()
    pure: set[str] = set()
    for key, names in joined.items():
        if not names <= added | left:
            continue
        pure.add(key)
        for name in names - left:
            port = ports.ports.get(name)
            peer = ports.peer_of(port) if port is not None else None
            if peer is not None:
                about.add(peer.name)
    kept: set[str] = set()
    for name in readers:
        port = ports.ports.get(name)
        if port is not None and port.type == "router" and port.dp.key in pure \
                and name not in added:
            kept.add(name)
    return kept, about


def ports_kept_alike(ports: PortsData, switch: Datapath, joined: set[str], added: set[str],
                     left: set[str]) -> bool:
    """Whether what the other ports of `switch` ask for stays as it was when the router
    ports `joined` join it (or leave it: those in `left`): while no router with
    multicast relay is on it, and the switch has a port other than a router port (they
    flood ARP requests to the rest) or, all its ports router ports, those joined are new
    and its ARP requests for its routers' addresses flood as they did (`ls_rport_arp`:
    while some of its ports are not paired with a router)."""
    if _relayed(ports, switch.key):
        return False
    if _others(ports, switch.key, joined):
        return True
    if not joined <= added | left:
        return False
    paired = ports.router_ports.get(switch.key, ())
    came = sum(1 for p in paired if p.name in joined)
    n = len(switch.nb.ports)
    gone = len(joined & left)
    return (len(paired) - came + gone != n - (len(joined) - gone) + gone) \
        == (len(paired) != n)


def vifs_kept_alike(ports: PortsData, switch: str, vifs: set[str]) -> bool:
    """Whether what the other ports of `switch` ask for stays as it was when its VIFs
    `vifs` come, change or go: while it has a port other than a router port, no router
    with multicast relay on it, and no virtual port (its flows name the parents there
    are)."""
    return _others(ports, switch, vifs) and not _relayed(ports, switch) and not any(
        p.type == "virtual" for p in ports.of_datapath(switch))


def _others(ports: PortsData, switch: str, names: set[str]) -> bool:
    """Whether `switch` has a port other than a router port beside `names`."""
    return any(p.type != "router" and p.name not in names for p in ports.of_datapath(switch))


def _relayed(ports: PortsData, switch: str) -> bool:
    """Whether a router with multicast relay is on `switch`."""
    return any(smap_bool(peer.dp.nb.options, "mcast_relay")
               for lsp in ports.router_ports.get(switch, ())
               if (peer := ports.peer_of(lsp)) is not None)


def plain_lrp(port: Port) -> bool:
    """Whether the router port `port` is one its router's other flows do not read
    beside its own requests (`lflows.rebuild_router_ports`): neither a distributed
    gateway port nor its chassisredirect port, nor paired with another router's port
    (its requests land there)."""
    return port.is_lrp and port.cr_port is None and not port.nb.peer


def beside_changed(table: LflowTable, ports: PortsData, lrps: dict[str, set[str]]
                   ) -> set[str]:
    """Of the routers `lrps` (which gained or lost those router ports), the switch
    ports whose requests on them come or go: every port of the switch a port gained
    is paired with, and those whose requests are there while their switch is no
    longer paired with the router (or that are gone)."""
    names: set[str] = set()
    for key, changed in lrps.items():
        lost = False
        for name in changed:
            port = ports.ports.get(name)
            peer = ports.peer_of(port) if port is not None else None
            if port is None:
                lost = True
            elif peer is not None and peer.is_lsp:
                names.update(p.name for p in ports.of_datapath(peer.dp.key))
        if not lost:
            continue
        beside = {peer.dp.key for p in ports.of_datapath(key)
                  if (peer := ports.peer_of(p)) is not None and peer.is_lsp}
        for owner in table.owned_on.get(key, ()):
            if isinstance(owner, tuple) and len(owner) in (2, 3) and owner[0] == "port":
                port = ports.ports.get(owner[1])
                if port is None or (port.is_lsp and port.dp.key not in beside):
                    names.add(owner[1])
    return names


def port_dps(ports: PortsData) -> dict[str, PortDp]:
    return {name: port_dp(port) for name, port in ports.ports.items()}


def port_dp(port: Port) -> PortDp:
    return port.dp.key, is_vif(port), \
        read_by_switch(port) if port.is_lsp else not plain_lrp(port), \
        port.is_lsp and port.type == "router" and port.peer is not None


def is_vif(port: Port) -> bool:
    return port.is_lsp and not port.type


def read_by_switch(port: Port) -> bool:
    """Whether the switch's own flows read the switch port `port` (see the rules;
    enabled or not, to be safe)."""
    return port.has_unknown or smap_bool(port.options, "mcast_flood")
