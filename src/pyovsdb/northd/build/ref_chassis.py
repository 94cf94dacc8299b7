"""`ref_chassis` of the SB HA chassis groups (23.03's `build_ref_chassis` and
`build_lrouter_groups`), kept claim by claim.

Rules kept here:
- Routers connected to each other directly or through switches form a router group.
  A desired group of more than one chassis that a chassisredirect port of a router
  uses is referenced by every chassis bound to a switch port on a switch whose first
  router port (in walk order) leading to a router leads into that router's group.
  Every other group's `ref_chassis` is empty. So all groups of one router group have
  the same `ref_chassis`, and a group used in several router groups their union.
- Claims are counted per router group, not per HA group: what a logical port's
  bindings add (the chassis they are bound to, its switch's router group) is recorded
  by the port's name, with a count of the ports each chassis is counted for in each
  router group. A claim, a release or a binding going (`bind`) costs the same however
  many HA groups its router group holds (an external network joins every project's
  router, so one router group can hold a thousand).
- Router groups are labelled, and a label outlives the change of its members: when
  switches gain or lose router ports (`rewire`) the router groups are found again and
  each takes the label most of its routers had, so only the switches whose label moved
  are counted again, not the whole cloud.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..desired import DesiredTable, Ref
from .datapaths import DatapathsData
from .ha_chassis import port_group_name
from .ports import PB_BY_NAME, PortsData

_NONE: frozenset[str] = frozenset()


def router_groups(datapaths: DatapathsData, ports: PortsData) -> dict[str, str]:
    """Each router's group (`build_lrouter_groups`), named by one of its routers."""
    parent = {key: key for key in datapaths.routers}

    def find(key: str) -> str:
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    # A router port on a switch joins its router to every router on that switch: the
    # routers of each switch are joined once, and each port's to the first of them (a
    # switch's walk per port was quadratic on an external network of many routers).
    first: dict[str, str | None] = {}  # switch key -> one router on it, or None
    for port in ports.ports.values():
        if not port.is_lrp:
            continue
        peer = ports.peer_of(port)
        if peer is None:
            continue
        if peer.dp.is_router:
            union(port.dp.key, peer.dp.key)
            continue
        switch = peer.dp.key
        if switch not in first:
            routers = [rp.dp.key for rp in map(ports.peer_of, ports.router_ports.get(switch, []))
                       if rp is not None and rp.dp.is_router]
            for key in routers[1:]:
                union(routers[0], key)
            first[switch] = routers[0] if routers else None
        on_switch = first[switch]
        if on_switch is not None:
            union(port.dp.key, on_switch)
    return {key: find(key) for key in parent}


def _switch_roots(ports: PortsData, lr_root: Mapping[str, str]) -> dict[str, str]:
    """Each switch with a router port leading to a router: the router group its first
    such port leads into."""
    switch_root: dict[str, str] = {}
    for key, lsps in ports.router_ports.items():
        for lsp in lsps:
            rp = ports.peer_of(lsp)
            if rp is not None and rp.dp.is_router:
                switch_root[key] = lr_root[rp.dp.key]
                break
    return switch_root


def _names_by_root(ports: PortsData, lr_root: Mapping[str, str], groups: DesiredTable
                   ) -> dict[str, set[str]]:
    """Each router group's HA groups of more than one chassis (by name), used by a
    chassisredirect port of one of its routers."""
    names: dict[str, set[str]] = {}
    for port in ports.ports.values():
        if not port.is_cr:
            continue
        ref = port_group_name(port.nb)
        row = groups.rows.get(ref) if ref is not None else None
        if row is not None and len(row["ha_chassis"]) > 1:
            names.setdefault(lr_root[port.dp.key], set()).add(str(ref))
    return names


def _invert(names_by_root: Mapping[str, set[str]]) -> dict[str, frozenset[str]]:
    roots: dict[str, set[str]] = {}
    for root, names in names_by_root.items():
        for name in names:
            roots.setdefault(name, set()).add(root)
    return {name: frozenset(r) for name, r in roots.items()}


@dataclass
class RefChassis:
    """The chassis referencing each group of more than one chassis (see the rules)."""

    ports: PortsData
    lr_root: dict[str, str]  # router key -> its router group's label
    switch_root: dict[str, str]  # switch key -> the router group its claims count for
    names_by_root: dict[str, set[str]]  # router group label -> its groups of > 1 chassis
    roots_by_name: dict[str, frozenset[str]]  # the inverse: HA group -> router groups
    added: dict[str, tuple[frozenset[str], str]] = field(default_factory=dict)
    counts: dict[str, Counter[str]] = field(default_factory=dict)  # label -> chassis
    _labels: Iterator[int] = field(default_factory=itertools.count)

    @classmethod
    def build(cls, datapaths: DatapathsData, ports: PortsData, groups: DesiredTable
              ) -> RefChassis:
        lr_root = router_groups(datapaths, ports)
        names_by_root = _names_by_root(ports, lr_root, groups)
        return cls(ports, lr_root, _switch_roots(ports, lr_root), names_by_root,
                   _invert(names_by_root))

    def rewire(self, datapaths: DatapathsData, ports: PortsData, groups: DesiredTable,
               table: ReplicaTable) -> set[str]:
        """Switches gained or lost router ports: the router groups found again, each
        labelled as most of its routers were, and the switches whose label moved
        counted again; the HA groups whose referencing chassis changed."""
        self.ports = ports
        self.lr_root = self._relabel(router_groups(datapaths, ports))
        old_switch, old_roots = self.switch_root, self.roots_by_name
        self.switch_root = _switch_roots(ports, self.lr_root)
        self.names_by_root = _names_by_root(ports, self.lr_root, groups)
        self.roots_by_name = _invert(self.names_by_root)
        changed = {name for name in old_roots.keys() | self.roots_by_name.keys()
                   if old_roots.get(name) != self.roots_by_name.get(name)}
        for key in sorted(old_switch.keys() | self.switch_root.keys()):
            if old_switch.get(key) != self.switch_root.get(key):
                for port in ports.of_datapath(key):
                    changed |= self.rebind(port.name, table)
        return changed

    def _relabel(self, roots: Mapping[str, str]) -> dict[str, str]:
        """`roots` (router -> its group's root) with each group labelled as most of its
        routers were (ties: the smallest label), or afresh when a larger group took
        that label."""
        members: dict[str, list[str]] = {}
        for key, root in roots.items():
            members.setdefault(root, []).append(key)
        labels: dict[str, str] = {}
        taken: set[str] = set()
        generation = next(self._labels)
        for root in sorted(members, key=lambda r: (-len(members[r]), r)):  # (largest first)
            votes = Counter(self.lr_root[k] for k in members[root] if k in self.lr_root)
            label = next((old for old, _ in sorted(votes.items(), key=lambda v: (-v[1], v[0]))
                          if old not in taken), None)
            if label is None:  # (unique: no earlier label has this generation)
                label = f"{root}#{generation}"
            taken.add(label)
            for key in members[root]:
                labels[key] = label
        return labels

    def regroup(self, name: str, router: str, multi: bool) -> set[str]:
        """Group `name`, used by a chassisredirect port of router `router`, now of more
        than one chassis (`multi`) or not; the groups whose referencing chassis
        changed."""
        root = self.lr_root.get(router, router)
        names = self.names_by_root.setdefault(root, set())
        if (name in names) == multi:
            return set()
        roots = set(self.roots_by_name.get(name, ()))
        if multi:
            names.add(name)
            roots.add(root)
        else:
            names.discard(name)
            roots.discard(root)
        if roots:
            self.roots_by_name[name] = frozenset(roots)
        else:
            self.roots_by_name.pop(name, None)
        return {name}

    def bind(self, name: str, rows: Iterable[IdlRow]) -> set[str]:
        """The bindings `rows` are all logical port `name` has now: what the port adds
        replaced; the groups whose referencing chassis changed."""
        old_chassis, old_root = self.added.pop(name, (frozenset(), ""))
        port = self.ports.ports.get(name)
        root = self.switch_root.get(port.dp.key, "") \
            if port is not None and port.is_lsp else ""
        chassis = frozenset(c.name for c in (r.chassis for r in rows)
                            if isinstance(c, IdlRow)) if root else frozenset()
        if chassis:
            self.added[name] = (chassis, root)
        if chassis == old_chassis and root == old_root:
            return set()
        changed: set[str] = set()
        if old_chassis:
            counts = self.counts[old_root]
            for c in old_chassis:
                counts[c] -= 1
                if not counts[c]:
                    del counts[c]
                    changed |= self.names_by_root.get(old_root, _NONE)
            if not counts:
                del self.counts[old_root]
        if chassis:
            counts = self.counts.get(root) or self.counts.setdefault(root, Counter())
            for c in chassis:
                counts[c] += 1
                if counts[c] == 1:
                    changed |= self.names_by_root.get(root, _NONE)
        return changed

    def bind_all(self, table: ReplicaTable | None) -> None:
        """Every binding of `table` (the SB Port_Binding replica) added."""
        if not self.switch_root or table is None:
            return
        by_name: dict[str, list[IdlRow]] = {}
        for pb in table.rows.values():
            if isinstance(pb.chassis, IdlRow):
                by_name.setdefault(pb.logical_port, []).append(pb)
        for name, rows in by_name.items():
            self.bind(name, rows)

    def rebind(self, name: str, table: ReplicaTable) -> set[str]:
        """`bind` with the bindings `table` has for `name` now."""
        index = table.indexes.get(PB_BY_NAME)
        if index is None:
            rows: Iterable[IdlRow] = [r for r in table.rows.values() if r.logical_port == name]
        else:
            rows = index.entries.get((name,), {}).values()
        return self.bind(name, rows)

    def chassis_of(self, name: str) -> list[str]:
        """The chassis referencing group `name`, sorted."""
        roots = self.roots_by_name.get(name, ())
        if len(roots) == 1:
            (root,) = roots
            return sorted(self.counts.get(root, ()))
        return sorted({c for root in roots for c in self.counts.get(root, ())})

    def write(self, groups: DesiredTable, names: Iterable[str] | None = None) -> None:
        """`ref_chassis` of the desired groups `names` (None: every group of more than
        one chassis)."""
        made: dict[frozenset[str], list[Ref]] = {}  # (each router group's list once)
        for name in self.roots_by_name if names is None else names:
            row = groups.rows.get(name)
            if row is None:
                continue
            roots = self.roots_by_name.get(name, frozenset())
            refs = made.get(roots)
            if refs is None:
                refs = made[roots] = [Ref("Chassis", c) for c in self.chassis_of(name)]
            row["ref_chassis"] = list(refs)


def build_ref_chassis(datapaths: DatapathsData, ports: PortsData,
                      sb: Mapping[str, ReplicaTable], groups: DesiredTable) -> RefChassis:
    """Fill `ref_chassis` of the desired groups (see the module rules); the state
    that keeps them."""
    state = RefChassis.build(datapaths, ports, groups)
    state.bind_all(sb.get("Port_Binding"))
    state.write(groups)
    return state
