"""`ref_chassis` of the SB HA chassis groups (23.03's `build_ref_chassis` and
`build_lrouter_groups`), kept claim by claim.

Rules kept here:
- Routers connected to each other directly or through switches form a router group.
  A desired group of more than one chassis that a chassisredirect port of a router
  uses is referenced by every chassis bound to a switch port on a switch whose first
  router port (in walk order) leading to a router leads into that router's group.
  Every other group's `ref_chassis` is empty.
- What a logical port's bindings add (the chassis they are bound to, the groups of its
  switch) is recorded by the port's name, with a count of the ports each chassis is
  counted for in each group: a claim, a release or a binding going (`bind`) moves the
  groups that port added to alone, in time proportional to the change.
- The switches' groups are fixed at `RefChassis.build`: a change of the routers, of
  their ports or of the groups is not followed here (the owner builds again).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..desired import DesiredTable, Ref
from .datapaths import DatapathsData
from .ha_chassis import port_group_name
from .ports import PB_BY_NAME, PortsData


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


@dataclass
class RefChassis:
    """The chassis referencing each group of more than one chassis (see the rules)."""

    ports: PortsData
    lr_root: dict[str, str]  # router key -> its router group's root
    switch_root: dict[str, str]  # switch key -> the router group its claims count for
    names_by_root: dict[str, set[str]]  # router group root -> its groups of > 1 chassis
    switch_groups: dict[str, tuple[str, ...]]  # switch key -> the groups a claim there adds to
    added: dict[str, tuple[frozenset[str], tuple[str, ...]]] = field(default_factory=dict)
    counts: dict[str, Counter[str]] = field(default_factory=dict)

    @classmethod
    def build(cls, datapaths: DatapathsData, ports: PortsData, groups: DesiredTable
              ) -> RefChassis:
        lr_root = router_groups(datapaths, ports)
        names_by_root: dict[str, set[str]] = {}
        for port in ports.ports.values():
            if not port.is_cr:
                continue
            ref = port_group_name(port.nb)
            row = groups.rows.get(ref) if ref is not None else None
            if row is not None and len(row["ha_chassis"]) > 1:
                names_by_root.setdefault(lr_root[port.dp.key], set()).add(str(ref))
        switch_root: dict[str, str] = {}
        for key, lsps in ports.router_ports.items():
            for lsp in lsps:
                rp = ports.peer_of(lsp)
                if rp is not None and rp.dp.is_router:
                    switch_root[key] = lr_root[rp.dp.key]
                    break
        switch_groups = {key: tuple(sorted(names_by_root[root]))
                         for key, root in switch_root.items() if names_by_root.get(root)}
        return cls(ports, lr_root, switch_root, names_by_root, switch_groups)

    def regroup(self, name: str, router: str, multi: bool, table: ReplicaTable) -> set[str]:
        """Group `name`, used by a chassisredirect port of router `router`, now of more
        than one chassis (`multi`) or not: the switches of its router group count for
        it or stop, their ports bound again; the groups whose referencing chassis
        changed."""
        root = self.lr_root.get(router, router)
        names = self.names_by_root.setdefault(root, set())
        if (name in names) == multi:
            return set()
        if multi:
            names.add(name)
        else:
            names.discard(name)
        changed: set[str] = set()
        for key, r in self.switch_root.items():
            if r != root:
                continue
            if names:
                self.switch_groups[key] = tuple(sorted(names))
            else:
                self.switch_groups.pop(key, None)
            for port in self.ports.of_datapath(key):
                changed |= self.rebind(port.name, table)
        if not multi:
            self.counts.pop(name, None)
            changed.add(name)
        return changed

    def bind(self, name: str, rows: Iterable[IdlRow]) -> set[str]:
        """The bindings `rows` are all logical port `name` has now: what the port adds
        replaced; the groups whose referencing chassis changed."""
        old_chassis, old_groups = self.added.pop(name, (frozenset(), ()))
        port = self.ports.ports.get(name)
        groups = self.switch_groups.get(port.dp.key, ()) \
            if port is not None and port.is_lsp else ()
        chassis = frozenset(c.name for c in (r.chassis for r in rows)
                            if isinstance(c, IdlRow)) if groups else frozenset()
        if chassis:
            self.added[name] = (chassis, groups)
        if chassis == old_chassis and groups == old_groups:
            return set()
        changed: set[str] = set()
        for group in old_groups:
            counts = self.counts[group]
            for c in old_chassis:
                counts[c] -= 1
                if not counts[c]:
                    del counts[c]
                    changed.add(group)
        for group in groups:
            counts = self.counts.setdefault(group, Counter())
            for c in chassis:
                counts[c] += 1
                if counts[c] == 1:
                    changed.add(group)
        return changed

    def bind_all(self, table: ReplicaTable | None) -> None:
        """Every binding of `table` (the SB Port_Binding replica) added."""
        if not self.switch_groups or table is None:
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

    def write(self, groups: DesiredTable, names: Iterable[str] | None = None) -> None:
        """`ref_chassis` of the desired groups `names` (None: every group counted)."""
        for name in self.counts if names is None else names:
            row = groups.rows.get(name)
            if row is not None:
                row["ref_chassis"] = [Ref("Chassis", c)
                                      for c in sorted(self.counts.get(name, ()))]


def build_ref_chassis(datapaths: DatapathsData, ports: PortsData,
                      sb: Mapping[str, ReplicaTable], groups: DesiredTable) -> RefChassis:
    """Fill `ref_chassis` of the desired groups (see the module rules); the state
    that keeps them."""
    state = RefChassis.build(datapaths, ports, groups)
    state.bind_all(sb.get("Port_Binding"))
    state.write(groups)
    return state
