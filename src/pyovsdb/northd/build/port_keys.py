"""Port tunnel keys as a build gives them, over one datapath: for a change where a port
asks for a key (`options:requested-tnl-key`), which can move other ports' keys.

Rules kept here (OVN 23.03, `ovn_port_assign_requested_tnl_id`, `ovn_port_allocate_key`;
`ports._assign_tunnel_keys` is the build's walk over every datapath at once):
- The walk is over the datapath's ports with a binding on it, in build order, then
  those without: first each that asks for a key takes it if no port before it took it
  (in VXLAN mode a key of `VXLAN_MIN_MULTICAST` or more is not granted); then each
  with a binding keeps its binding's key if still free; then the rest take new keys
  after the highest key taken so far (the hint follows every key added), wrapping.
- Where no port asks, the ports keep their keys and new ones take keys after the
  highest (`held_space`, which also proves every port holds its binding's key, as a
  recompute would see them; the walk needs the same).
- Pure: the ports in, their keys set, the ports with a binding whose key moved out;
  None where the keys run out (a build then leaves a port out: the caller
  recomputes).
- Of a port, only its binding's `tunnel_key` and its router's flows (the ECMP
  symmetric reply flows name a router port by its key) read its key: a port whose
  key moved has that column of its desired binding set, touched as read by flows on
  a router and as read by none on a switch (`rekey_bindings`); the rest stays.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from ...idl.row import IdlRow
from ..desired import DesiredTable
from .alloc import PORT_KEY_MAX, PORT_KEY_MAX_VXLAN, PORT_KEY_MIN, VXLAN_MIN_MULTICAST, TunnelKeys
from .datapaths import smap_int
from .delta import PortsDelta
from .ports import Port

TUNNEL_KEY = "requested-tnl-key"


def asks_key(port: Port) -> bool:
    """Whether a port asks for a tunnel key."""
    return bool(smap_int(port.options, TUNNEL_KEY))


def held_space(ports: list[Port], key: str, found: Mapping[str, list[IdlRow]],
               dp_keys: Mapping[str, str], skip: Collection[str], retyped: Collection[str],
               vxlan: bool, asking: bool) -> TunnelKeys | None:
    """Datapath `key`'s port key space with each of its `ports` (but `skip`) holding its
    key, as a recompute would see them now: each has its binding (the first by UUID of
    `found`, set as the port's `sb`) on that datapath (`dp_keys`: the NB key of each
    binding's datapath) with that key, was not `retyped` since the build, and (unless
    `asking`: the caller walks them, `port_keys`) asks for none; None where one does
    not."""
    space = TunnelKeys(PORT_KEY_MIN, PORT_KEY_MAX_VXLAN if vxlan else PORT_KEY_MAX,
                       hint_follows_adds=True)
    for p in ports:
        if p.name in skip:
            continue
        pbs = found.get(p.name, [])
        pb = min(pbs, key=lambda r: r.uuid) if pbs else None
        if (not asking and asks_key(p)) or pb is None \
                or dp_keys.get(pb.value("datapath")) != key \
                or pb.value("tunnel_key") != p.tunnel_key or p.name in retyped \
                or not space.add(p.tunnel_key):
            return None
        p.sb = pb
    return space


def port_keys(held: list[Port], new: list[Port], vxlan: bool) -> list[Port] | None:
    """The keys of one datapath's ports: `held` those with a binding on it (each its
    `sb`), `new` those without, each in build order (see the rules)."""
    space = TunnelKeys(PORT_KEY_MIN, PORT_KEY_MAX_VXLAN if vxlan else PORT_KEY_MAX,
                       hint_follows_adds=True)
    keys: dict[str, int] = {}
    for port in [*held, *new]:
        asked = smap_int(port.options, TUNNEL_KEY)
        if asked and not (vxlan and asked >= VXLAN_MIN_MULTICAST) and space.add(asked):
            keys[port.name] = asked
    for port in held:
        assert port.sb is not None
        if port.name not in keys and space.add(port.sb.value("tunnel_key")):
            keys[port.name] = port.sb.value("tunnel_key")
    for port in [*held, *new]:
        if port.name not in keys:
            key = space.allocate()
            if key is None:
                return None
            keys[port.name] = key
    moved = [p for p in held if keys[p.name] != p.tunnel_key]
    for port in [*held, *new]:
        port.tunnel_key = keys[port.name]
    return moved


def rekey_bindings(moved: Iterable[Port], table: DesiredTable, delta: PortsDelta) -> bool:
    """The desired bindings (`table`) of the ports `moved` given their new keys (see
    the rules); False where a port has no desired binding to set."""
    for port in moved:
        if port.name not in table.rows:
            return False
        table.set(port.name, tunnel_key=port.tunnel_key)
        if port.is_lsp:
            delta.touch_unread(port.name)
        else:
            delta.touch("sb", "Port_Binding", port.name)  # (its router's flows read it)
    return True
