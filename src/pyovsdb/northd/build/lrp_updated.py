"""Router ports updated in place in what their own bindings and the flows read: their
`external_ids`, `enabled`, `ipv6_ra_configs`, and the options only the flows read.

Rules kept here:
- Handled: an update of a router port the build has (the same row UUID under the same
  name) that changes only `COLUMNS`, and of `options` only the keys in
  `FLOW_OPTIONS`, on a port without `options:mcast_flood` (the multicast groups read
  it with `enabled`). Anything else is refused (None) and the caller recomputes.
- The port and its chassisredirect port take the new row; their bindings are put
  again (`router_port_binding`: the IPv6 options read `enabled` and
  `ipv6_ra_configs`), and so is the `nat_addresses` of the switch port peering it
  (`reside-on-redirect-chassis` adds the port's own GARP entry there); its router
  and the datapaths of its router's peers have their flows built again
  (`PortsDelta.flows`).
"""

from __future__ import annotations

from collections.abc import Mapping

from ...idl.row import IdlRow
from ...idl.tracking import changed_columns
from ...ovsdb.changeset import RowChange
from ..desired import DesiredDb, Ref
from .delta import PortsDelta
from .ports import Port, PortsData
from .ports_router import router_lsp_nat_addresses, router_port_binding

COLUMNS = frozenset(("external_ids", "enabled", "ipv6_ra_configs", "options"))
FLOW_OPTIONS = frozenset(("gateway_mtu", "gateway_mtu_bypass", "reside-on-redirect-chassis",
                          "dynamic-routing", "routing-protocols"))


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
        and ("options" not in columns or _changed_options(old, new) <= FLOW_OPTIONS)


def lrps_updated(changes: Mapping[str, RowChange[IdlRow]], ports: PortsData,
                 sb_desired: DesiredDb) -> PortsDelta | None:
    """The router port updates `changes` (each `updatable`) applied in place, or
    None (see the rules)."""
    found: list[tuple[Port, IdlRow]] = []
    for uuid, rc in changes.items():
        new = rc.new
        assert new is not None
        port = ports.ports.get(new.name)
        if port is None or not port.is_lrp or port.nb.uuid != uuid:
            return None
        found.append((port, new))
    delta = PortsDelta()
    table = sb_desired.tables["Port_Binding"]
    routers: set[str] = set()
    for port, new in found:
        for p in (port, ports.ports.get(port.cr_port or "")):
            if p is None:
                continue
            p.nb, p.options = new, new.options
            table.put(p.name, logical_port=p.name, datapath=Ref("Datapath_Binding", p.dp.key),
                      tunnel_key=p.tunnel_key, up=[False], mirror_rules=[],
                      **router_port_binding(p, ports))
            delta.touch("sb", "Port_Binding", p.name)
        peer = ports.peer_of(port)
        if peer is not None and peer.is_lsp and peer.name in table.rows:
            table.set(peer.name, nat_addresses=router_lsp_nat_addresses(
                peer, ports, port.dp.nb.options.get("chassis")))
            delta.touch("sb", "Port_Binding", peer.name)
        routers.add(port.dp.key)
    delta.flows = ports.next_to(routers)
    return delta
