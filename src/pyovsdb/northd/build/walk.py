"""The order in which ovn-northd 23.03 walks its port hash table, for some of the ports:
what a partial rebuild needs to visit its ports as a build would (`ports._walk_order`
gives the order of all of them in a build).

Rules kept here:
- A build inserts a name per SB binding first (by the UUID of the name's first
  binding), then a name per port without a binding, in build order (datapaths as the
  build lists them, switches first; a datapath's ports by name and NB UUID, a
  chassisredirect port after its router port).
- The walk visits buckets in order under the table's final mask; within a bucket the
  order follows from where each name was inserted (`hmap_order_of`). So names alone
  in their bucket need only their hashes; the places of names sharing one are found
  only then (a sort of the bindings' UUIDs).
- The switches' router ports stay in the walk's order as the table grows and shrinks:
  past a mask, `resort_router_ports` sorts them again and names the switches whose
  order moved (their readers' flows are built again, as when a switch is rewired).
- Reads the SB Port_Binding table through its index by name where the replica keeps
  one, else by a walk of its rows (no sort): the cost of a partial rebuild grows with
  the ports by one lookup each.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from ...idl.replica import ReplicaTable
from ...util.ovshash import hash_name, hmap_mask, hmap_order_of
from .datapaths import DatapathsData
from .ports import PB_BY_NAME, Port, PortsData, existing_port_bindings


class PortWalk:
    """The walk of a build from `sb`, `ports` and `datapaths` (see the rules)."""

    def __init__(self, sb: Mapping[str, ReplicaTable], ports: PortsData,
                 datapaths: DatapathsData) -> None:
        table = sb.get("Port_Binding")
        index = table.indexes.get(PB_BY_NAME) if table is not None else None
        if table is not None and index is not None and index.columns == ("logical_port",):
            by_name = index.entries
            self._first: Callable[[str], str | None] = lambda name: _min_key(by_name, name)
            # (one binding per name, the usual case: every binding's UUID is a first)
            single = len(table.rows) == len(by_name)
            rows = table.rows
            self._firsts: Callable[[], list[str]] = lambda: sorted(rows) if single else \
                sorted(min(found) for found in by_name.values())
            self.unbound = [ports.ports[name] for name in ports.unbound
                            if name in ports.ports and (name,) not in by_name]
            bound = len(by_name)
        else:
            first = {name: row.uuid for name, row in existing_port_bindings(sb).items()}
            self._first = first.get
            self._firsts = lambda: sorted(first.values())
            self.unbound = [p for name, p in ports.ports.items() if name not in first]
            bound = len(first)
        self._bound = bound
        self._datapaths = datapaths
        self.total = bound + len(self.unbound)
        self.mask = hmap_mask(self.total)

    def order(self, names: Iterable[str]) -> list[str]:
        """`names` (distinct; each a bound name or a port) in the walk's order."""
        hashes = {n: hash_name(n) for n in names}
        mask = self.mask
        buckets = Counter(h & mask for h in hashes.values())
        shared = [n for n, h in hashes.items() if buckets[h & mask] > 1]
        place: dict[str, int] = {}
        if shared:
            at = self._places(shared)
            ordered = hmap_order_of(sorted((at[n], hashes[n], n) for n in shared), self.total)
            place = {n: i for i, n in enumerate(ordered)}
        return sorted(hashes, key=lambda n: (hashes[n] & mask, place.get(n, 0)))

    def sort_ports(self, ports: list[Port]) -> None:
        """Sort `ports` in place in the walk's order."""
        rank = {n: i for i, n in enumerate(self.order(p.name for p in ports))}
        ports.sort(key=lambda p: rank[p.name])

    def _places(self, some: list[str]) -> dict[str, int]:
        """Where each of `some` is inserted, from 1 (see the rules)."""
        out: dict[str, int] = {}
        firsts: list[str] | None = None
        for n in some:
            uuid = self._first(n)
            if uuid is not None:
                if firsts is None:
                    firsts = self._firsts()
                out[n] = bisect.bisect_left(firsts, uuid) + 1
        if len(out) < len(some):
            datapaths = self._datapaths
            rank = {key: i for i, key in enumerate([*datapaths.switches, *datapaths.routers])}
            built = sorted(self.unbound, key=lambda p: (rank.get(p.dp.key, -1),
                                                        p.nb.value("name"), p.nb.uuid, p.is_cr))
            at = {p.name: i for i, p in enumerate(built, self._bound + 1)}
            for n in some:
                if n not in out:
                    out[n] = at[n]
        return out


def resort_router_ports(sb: Mapping[str, ReplicaTable], ports: PortsData,
                        datapaths: DatapathsData) -> set[str]:
    """The switches whose router ports a build would now walk in another order, their
    ports sorted again; none unless the table's final mask moved since the last sort
    (`PortsData.walk_mask`)."""
    walk = PortWalk(sb, ports, datapaths)
    if walk.mask == ports.walk_mask:
        return set()
    ports.walk_mask = walk.mask
    moved: set[str] = set()
    for key, members in ports.router_ports.items():
        if len(members) > 1:
            before = list(members)
            walk.sort_ports(members)
            if members != before:
                moved.add(key)
    return moved


def _min_key(by_name: Mapping[tuple[str, ...], Mapping[str, object]], name: str) -> str | None:
    found = by_name.get((name,))
    return min(found) if found else None
