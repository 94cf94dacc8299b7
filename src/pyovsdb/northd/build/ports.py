"""Ports: every logical switch port and router port (and the chassisredirect port of
each distributed gateway port), joined with the SB Port_Binding rows, peers connected,
tunnel keys assigned; then their desired Port_Binding rows.

Rules kept here (OVN 23.03, `join_logical_ports` and `build_ports`):
- A port is named by its NB name, which is the binding's `logical_port`. A name used
  twice is kept for the first port met, and the others are reported (23.03's
  "duplicate logical port", "duplicate logical router port"); so is a router port
  with a bad MAC, which is left out.
- An existing binding is this port's only if it is on the port's datapath and, for a
  switch port, its kind did not change in a way 23.03 handles by deleting and
  recreating the binding (to or from "virtual"; a VIF gaining or losing a parent).
  A port without its binding is new: it keeps no tunnel key.
- A router port with a bad MAC has no binding. A router's distributed gateway ports
  are listed in NB UUID order (the first is "the" gateway port where 23.03 takes one).
  A router port with a gateway chassis or
  an HA chassis group on a router that is not a gateway router (no `options:chassis`)
  is a distributed gateway port and gets a second port, `cr-<name>`, of the same
  router, that stands for it on the gateway chassis.
- A switch port of type "router" whose `options:router-port` names a router port is
  that port's peer, both ways; a router port's `peer` column names another router port
  (one way).
- Tunnel keys per datapath, range 1..32767 (2047 in VXLAN mode): requested keys
  (`options:requested-tnl-key`) first, then kept keys of ports with a binding, then new
  ones after the highest key taken (the hint follows every key kept or requested),
  wrapping to the bottom of the range.
- Deterministic where 23.03 walks hash tables: datapaths in `DatapathsData` order,
  ports of a datapath by name, a chassisredirect port right after its router port.
  Peers are connected in the order 23.03 walks its port hash table (names hashed as
  OVS hashes strings; the existing bindings first, in UUID order for want of the SB
  replica's own order), so where two switch ports name one router port the router
  port's peer is the one 23.03 picks.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...ovsdb.hashorder import hmap_order
from ...util.ovshash import hash_name, hmap_mask
from ..diagnostics import DUPLICATE_LRP, DUPLICATE_LSP, LRP_BAD_MAC, LSP_NO_MAC, PS_NO_MAC, report
from .alloc import PORT_KEY_MAX, PORT_KEY_MAX_VXLAN, PORT_KEY_MIN, VXLAN_MIN_MULTICAST, TunnelKeys
from .datapaths import Datapath, DatapathsData, datapath_key, smap_int
from .inputs import BuildInput
from .placed import Placed
from .ports_addresses import Addresses, extract_lsp_addresses, is_dynamic, lrp_networks


class PortKind(enum.Enum):
    SWITCH = "lsp"  # Logical_Switch_Port
    ROUTER = "lrp"  # Logical_Router_Port
    REDIRECT = "cr"  # the chassisredirect port of a distributed gateway port


@dataclass(slots=True, eq=False)
class Port:
    name: str
    dp: Datapath
    kind: PortKind
    nb: IdlRow  # the LSP, or the LRP (for a chassisredirect port, its gateway port)
    sb: IdlRow | None = None  # the existing binding this port keeps
    tunnel_key: int = 0
    peer: str | None = None
    cr_port: str | None = None  # of a distributed gateway port
    l3dgw_port: str | None = None  # of a chassisredirect port
    networks: Addresses | None = None  # router ports
    lsp_addrs: list[Addresses] = field(default_factory=list)
    n_static_addrs: int = 0  # lsp_addrs[:n] are the LSP's own (not "router", not dynamic)
    has_unknown: bool = False
    # The NB row's type and options, read once (builders read them for every port).
    type: str = ""
    options: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        nb = self.nb
        self.options = nb.options
        if self.kind is PortKind.SWITCH:
            self.type = nb.value("type")

    @property
    def enabled(self) -> bool:
        """`lsp_is_enabled`/`lrport_is_enabled`: unless `enabled` is set to false."""
        enabled = self.nb.value("enabled")  # a set of at most one boolean
        return not enabled or bool(enabled[0])

    @property
    def is_lsp(self) -> bool:
        return self.kind is PortKind.SWITCH

    @property
    def is_lrp(self) -> bool:
        return self.kind is PortKind.ROUTER

    @property
    def is_cr(self) -> bool:
        return self.kind is PortKind.REDIRECT

    @property
    def json_key(self) -> str:
        """The name as a quoted string, as logical flows and nat_addresses write it."""
        return quoted(self.name)


def quoted(name: str) -> str:
    """A port name as a quoted string, as logical flows and nat_addresses write it."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


class ChassisAsks:
    """The chassis names and hostnames switch ports ask for (`requested-chassis`),
    found or not, and which ports ask for each: a chassis registering, leaving or
    renamed under one of them rebinds those ports alone (`chassis_incremental`). A
    port's asks are set again whenever its binding is built, and go with it."""

    __slots__ = ("by_name", "by_port")

    def __init__(self) -> None:
        self.by_name: dict[str, set[str]] = {}  # chassis name or hostname -> port names
        self.by_port: dict[str, set[str]] = {}  # port name -> what it asks for

    def add(self, name: str, port: str) -> None:
        self.by_name.setdefault(name, set()).add(port)
        self.by_port.setdefault(port, set()).add(name)

    def forget(self, port: str) -> None:
        for name in self.by_port.pop(port, ()):
            asking = self.by_name[name]
            asking.discard(port)
            if not asking:
                del self.by_name[name]

    def asking(self, names: Iterable[str]) -> set[str]:
        """The ports that ask for any of `names`."""
        out: set[str] = set()
        for name in names:
            out |= self.by_name.get(name, set())
        return out


class PortTable(Placed[str, Port]):
    """Ports by name in build order, each with its place (`Placed`)."""

    __slots__ = ()


@dataclass(slots=True)
class PortsData:
    ports: PortTable = field(default_factory=PortTable)  # by name, in build order
    by_datapath: dict[str, list[Port]] = field(default_factory=dict)
    # Per switch: its ports of type router that found their router port.
    router_ports: dict[str, list[Port]] = field(default_factory=dict)
    # Per router: its distributed gateway ports.
    l3dgw_ports: dict[str, list[Port]] = field(default_factory=dict)
    localnet_ports: dict[str, list[Port]] = field(default_factory=dict)
    vtep_switches: set[str] = field(default_factory=set)
    # Ports whose existing binding is not theirs (kind or datapath changed): 23.03
    # deletes it and inserts a new one.
    recreated: set[str] = field(default_factory=set)
    retyped: set[str] = field(default_factory=set)  # of those, the ones whose kind changed
    replaced: set[str] = field(default_factory=set)  # UUIDs of the bindings they replace
    # Ports no SB binding is named for (a build's port table holds them after the
    # bound names: `walk.PortWalk`), kept as bindings come.
    unbound: set[str] = field(default_factory=set)
    # The final mask of that table when the switches' router ports were last put in
    # its walk's order (`walk.resort_router_ports`: a table grown or shrunk past a
    # mask walks them in another order).
    walk_mask: int = 0
    # Router-type switch ports by the router port they name (`options:router-port`),
    # found or not: who would pair with a router port of that name.
    named_by: dict[str, set[str]] = field(default_factory=dict)
    # The chassis names and hostnames switch ports ask for (`requested-chassis`).
    chassis_asked: ChassisAsks = field(default_factory=ChassisAsks)

    def peer_of(self, port: Port) -> Port | None:
        return self.ports.get(port.peer) if port.peer is not None else None

    def bound(self, name: str) -> None:
        """`name` no longer waits for a binding (it has one, or it is gone). The set is
        made anew once empty: a set keeps the table of its largest size, and every port
        of a cold start waits for one at first, so a walk of an emptied set would cost
        a walk of all of them (`walk.PortWalk` walks it in every partial build)."""
        unbound = self.unbound
        unbound.discard(name)
        if not unbound:
            self.unbound = set()

    def of_datapath(self, key: str) -> list[Port]:
        return self.by_datapath.get(key, [])

    def router_neighbours(self, routers: Iterable[str]) -> tuple[set[str], set[str]]:
        """Of the routers `routers` (datapath keys), the switch ports paired with their
        ports (names) and the routers paired with them (datapath keys)."""
        lsps: set[str] = set()
        peers: set[str] = set()
        for key in routers:
            for port in self.by_datapath.get(key, ()):
                peer = self.peer_of(port)
                if peer is not None and peer.is_lsp:
                    lsps.add(peer.name)
                elif peer is not None:
                    peers.add(peer.dp.key)
        return lsps, peers

    def vtep_again(self, keys: set[str], changed: Iterable[Port]) -> set[str] | None:
        """The switches `keys` in `vtep_switches` as their ports are now (where one of
        them is a VTEP switch or a port `changed` is a VTEP port); the datapaths whose
        flows read that (the switches that moved and those next to them), or None where
        a distributed gateway port peers one that moved (its chassisredirect binding
        reads it)."""
        if not keys & self.vtep_switches and all(p.type != "vtep" for p in changed):
            return set()
        moved = set()
        for key in keys:
            has = any(p.type == "vtep" for p in self.by_datapath.get(key, ()))
            if has != (key in self.vtep_switches):
                moved.add(key)
                (self.vtep_switches.add if has else self.vtep_switches.discard)(key)
        if any(peer.cr_port for key in moved for p in self.by_datapath.get(key, ())
               if (peer := self.peer_of(p)) is not None):
            return None
        return self.next_to(moved)

    def next_to(self, keys: Iterable[str]) -> set[str]:
        """The datapaths `keys` and those their ports' peers are on."""
        out = set(keys)
        for key in list(out):
            for port in self.by_datapath.get(key, ()):
                peer = self.peer_of(port)
                if peer is not None:
                    out.add(peer.dp.key)
        return out

    def binding_of(self, port: Port, bindings: Mapping[str, IdlRow],
                   dp_keys: Mapping[str, str]) -> IdlRow | None:
        """The port's binding among `bindings` (the SB rows by logical_port, maybe newer
        than this build; `dp_keys` from `datapath_keys`): on its datapath, and not one
        this build replaces."""
        pb = bindings.get(port.name)
        if pb is None or pb.uuid in self.replaced or \
                _dp_of(pb, dp_keys) != port.dp.key:
            return None
        return pb

    def bindings_removed(self, existing: Mapping[str, IdlRow]) -> bool:
        """Whether an existing binding goes without a port of its kind taking it over
        (23.03's non-empty `sb_only`: the port went, moved, or lost its name)."""
        kept = {p.sb.uuid for p in self.ports.values() if p.sb is not None}
        return any(pb.uuid not in kept and name not in self.retyped
                   for name, pb in existing.items())


# The index of SB Port_Binding rows by `logical_port` that `graph.wire` adds to the
# replica (kept by the replica with every change; named as its column, as every index
# the handlers read).
PB_BY_NAME = "logical_port"


def existing_port_bindings(sb: Mapping[str, ReplicaTable]) -> dict[str, IdlRow]:
    table = sb.get("Port_Binding")
    if table is None:
        return {}
    out: dict[str, IdlRow] = {}
    column = table.col_index["logical_port"]
    # (UUIDs are unique: the pairs sort by UUID without comparing rows)
    for _, row in sorted(table.rows.items()):
        out.setdefault(row.value_at(column), row)
    return out


def stale_mac_bindings(sb: Mapping[str, ReplicaTable], datapaths: DatapathsData,
                       ports: PortsData) -> set[str]:
    """The SB MAC bindings (UUIDs) of datapaths or ports that are gone."""
    table = sb.get("MAC_Binding")
    doomed: set[str] = set()
    for row in table.rows.values() if table is not None else ():
        dp = row.datapath
        key = datapath_key(dp) if isinstance(dp, IdlRow) else None
        if not key or datapaths.get(key) is None or row.logical_port not in ports.ports:
            doomed.add(row.uuid)
    return doomed


class DatapathKeys(Mapping[str, str]):
    """The NB UUID each SB Datapath_Binding names, by the binding's UUID, read when
    asked (a change reads the few bindings of its ports, not every datapath's)."""

    __slots__ = ("_rows",)

    def __init__(self, sb: Mapping[str, ReplicaTable]) -> None:
        table = sb.get("Datapath_Binding")
        self._rows: Mapping[str, IdlRow] = table.rows if table is not None else {}

    def __getitem__(self, uuid: str) -> str:
        row = self._rows.get(uuid)
        key = datapath_key(row) if row is not None else None
        if not key:
            raise KeyError(uuid)
        return key

    def __iter__(self) -> Iterator[str]:
        return (u for u, row in self._rows.items() if datapath_key(row))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def datapath_keys(sb: Mapping[str, ReplicaTable]) -> Mapping[str, str]:
    """The NB UUID each SB Datapath_Binding names, by the binding's UUID (`DatapathKeys`:
    read as asked, on the replica as it is when asked)."""
    return DatapathKeys(sb)


def type_changed(pb: IdlRow, lsp: IdlRow) -> bool:
    """`lsp_is_type_changed` where it asks for the binding to be recreated."""
    sb_type, nb_type = str(pb.value("type")), str(lsp.value("type"))
    if not sb_type and not nb_type:
        return (not pb.value("parent_port")) != (not lsp.value("parent_name"))
    return (sb_type == "virtual" or nb_type == "virtual") and sb_type != nb_type


def _dp_of(pb: IdlRow, dp_keys: Mapping[str, str]) -> str | None:
    return dp_keys.get(pb.value("datapath"))  # (a required reference: a UUID string)


def build_ports(inp: BuildInput, datapaths: DatapathsData) -> PortsData:
    existing = existing_port_bindings(inp.sb)
    dp_keys = datapath_keys(inp.sb)
    data = PortsData()
    ports = data.ports
    both: list[Port] = []
    nb_only: list[Port] = []

    def keep(port: Port, pb: IdlRow | None) -> None:
        if pb is not None and _dp_of(pb, dp_keys) == port.dp.key:
            port.sb = pb
            both.append(port)
        else:
            nb_only.append(port)
            if port.name in existing:
                data.recreated.add(port.name)
                data.replaced.add(existing[port.name].uuid)
        ports[port.name] = port
        data.by_datapath.setdefault(port.dp.key, []).append(port)

    for dp in datapaths.switches.values():
        for lsp in sorted(dp.nb.ports, key=lambda r: (r.value("name"), r.uuid)):
            name = lsp.value("name")
            if name in ports:
                report(DUPLICATE_LSP, name)
                continue
            port = Port(name, dp, PortKind.SWITCH, lsp)
            pb = existing.get(name)
            if pb is not None and type_changed(pb, lsp):
                pb = None
                data.retyped.add(name)
            keep(port, pb)
            if port.type == "localnet":
                data.localnet_ports.setdefault(dp.key, []).append(port)
            if port.type == "vtep":
                data.vtep_switches.add(dp.key)
            parse_switch_addresses(port)
    for dp in datapaths.routers.values():
        for lrp in sorted(dp.nb.ports, key=lambda r: (r.name, r.uuid)):
            networks = lrp_networks(lrp.mac, lrp.networks, log=True)
            if networks is None:
                report(LRP_BAD_MAC, lrp.mac)
                continue
            if lrp.name in ports:
                report(DUPLICATE_LRP, lrp.name)
                continue
            port = Port(lrp.name, dp, PortKind.ROUTER, lrp, networks=networks)
            keep(port, existing.get(lrp.name))
            if lrp.ha_chassis_group is None and not lrp.gateway_chassis:
                continue
            if "chassis" in dp.nb.options:
                continue  # "distributed gateway port on L3 gateway router": none
            cr_name = "cr-" + lrp.name
            cr = Port(cr_name, dp, PortKind.REDIRECT, lrp, networks=networks,
                      l3dgw_port=lrp.name)
            port.cr_port = cr_name
            keep(cr, existing.get(cr_name))
            data.l3dgw_ports.setdefault(dp.key, []).append(port)
    for gateways in data.l3dgw_ports.values():
        gateways.sort(key=lambda p: p.nb.uuid)  # 23.03 meets them in NB (UUID) order
    _connect(data, _walk_order(existing, data))
    _assign_tunnel_keys(data, both, nb_only, datapaths.vxlan_mode)
    data.unbound = {name for name in ports if name not in existing}
    return data


def parse_switch_addresses(port: Port) -> None:
    """A switch port's own addresses ("unknown" noted, "router" and dynamic ones left
    to the peer and IPAM), and its port security checked as 23.03 checks it."""
    for address in port.nb.addresses:
        if address == "unknown":
            port.has_unknown = True
        elif address == "router" or is_dynamic(address):
            continue
        else:
            parsed = extract_lsp_addresses(address)
            if parsed is not None:
                port.lsp_addrs.append(parsed)
            else:
                report(LSP_NO_MAC, address)
    port.n_static_addrs = len(port.lsp_addrs)
    for entry in port.nb.port_security:
        if extract_lsp_addresses(entry) is None:
            report(PS_NO_MAC, entry)


def _walk_order(existing: Mapping[str, IdlRow], data: PortsData) -> list[Port]:
    """The ports in the order of 23.03's walk of its port hmap, which holds a port per
    existing binding (inserted first) and then one per new port."""
    names = list(existing)
    names += [n for n in data.ports if n not in existing]
    data.walk_mask = hmap_mask(len(names))
    order = hmap_order((hash_name(n), n) for n in names)
    return [data.ports[n] for n in order if n in data.ports]


def _connect(data: PortsData, walk: list[Port]) -> None:
    ports = data.ports
    for port in walk:
        if port.is_lsp and port.type == "router":
            data.named_by.setdefault(port.options.get("router-port", ""), set()).add(port.name)
            peer = ports.get(port.options.get("router-port", ""))
            if peer is None or peer.is_lsp:
                continue
            if peer.is_cr:
                continue  # a cr- port is no router port of the NB
            data.router_ports.setdefault(port.dp.key, []).append(port)
            port.peer = peer.name
            peer.peer = port.name
            if "router" in port.nb.addresses and peer.networks is not None:
                port.lsp_addrs.append(peer.networks)
        elif port.is_lrp and port.nb.peer:
            peer = ports.get(port.nb.peer)
            if peer is not None and peer.is_lrp:
                port.peer = peer.name


def _assign_tunnel_keys(data: PortsData, both: list[Port], nb_only: list[Port],
                        vxlan: bool) -> None:
    hi = PORT_KEY_MAX_VXLAN if vxlan else PORT_KEY_MAX
    spaces: dict[str, TunnelKeys] = {}

    def space(port: Port) -> TunnelKeys:
        keys = spaces.get(port.dp.key)
        if keys is None:
            keys = spaces[port.dp.key] = TunnelKeys(PORT_KEY_MIN, hi, hint_follows_adds=True)
        return keys

    for port in [*both, *nb_only]:
        requested = smap_int(port.options, "requested-tnl-key")
        if requested and not (vxlan and requested >= VXLAN_MIN_MULTICAST) and \
                space(port).add(requested):
            port.tunnel_key = requested
    for port in both:
        assert port.sb is not None
        kept = port.sb.value("tunnel_key")
        if not port.tunnel_key and space(port).add(kept):
            port.tunnel_key = kept
    for port in [*both, *nb_only]:
        if not port.tunnel_key:
            key = space(port).allocate()
            if key is None:
                _drop(data, port)  # tunnel keys exhausted: 23.03 drops the port
            else:
                port.tunnel_key = key


def _drop(data: PortsData, port: Port) -> None:
    data.ports.pop(port.name, None)
    for group in (data.by_datapath, data.router_ports, data.l3dgw_ports,
                  data.localnet_ports):
        members = group.get(port.dp.key)
        if members is not None and port in members:
            members.remove(port)
