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
  read them (`router_port_readers`).
"""

from __future__ import annotations

from ..build.datapaths import smap_bool
from ..build.ports import Port, PortsData
from ..lflows import LflowContext
from ..lflows.lr_arp_resolve import routes_asked

# logical port -> its datapath's key, whether it is a VIF, whether its switch's own
# flows read it (`read_by_switch`)
PortDp = tuple[str, bool, bool]


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


def ports_kept_alike(ports: PortsData, switch: str, joined: set[str]) -> bool:
    """Whether what the other ports of `switch` ask for stays as it was when the router
    ports `joined` join it: while the switch has a port other than a router port (they
    flood ARP requests to the rest) and no router with multicast relay on it."""
    return any(p.type != "router" and p.name not in joined for p in ports.of_datapath(switch)) \
        and not any(smap_bool(peer.dp.nb.options, "mcast_relay")
                    for lsp in ports.router_ports.get(switch, ())
                    if (peer := ports.peer_of(lsp)) is not None)


def vifs_kept_alike(ports: PortsData, switch: str, vifs: set[str]) -> bool:
    """Whether what the other ports of `switch` ask for stays as it was when its VIFs
    `vifs` come, change or go: as for router ports joining (`ports_kept_alike`), and
    no virtual port on it (its flows name the parents there are)."""
    return ports_kept_alike(ports, switch, vifs) and not any(
        p.type == "virtual" for p in ports.of_datapath(switch))


def port_dps(ports: PortsData) -> dict[str, PortDp]:
    return {name: port_dp(port) for name, port in ports.ports.items()}


def port_dp(port: Port) -> PortDp:
    return port.dp.key, is_vif(port), read_by_switch(port)


def is_vif(port: Port) -> bool:
    return port.is_lsp and not port.type


def read_by_switch(port: Port) -> bool:
    """Whether the switch's own flows read the switch port `port` (see the rules;
    enabled or not, to be safe)."""
    return port.has_unknown or smap_bool(port.options, "mcast_flood")
