"""`PortsDelta`: what one in-place step of `northd` changed, for the nodes after it.

Rules kept here:
- Keys of the desired rows changed, by database and table; a table named without keys
  is to be planned whole.
- Beside the rows, what `lflow` needs to know that no desired row names (datapaths
  whose flows change, ports whose requests change, switches that gained or lost router
  ports, load balancers changed), and the bindings changed only in columns no flow
  reads.
- Deltas of several handlers of one run merge; a binding some step changed in a column
  flows read stays read.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field


@dataclass
class PortsDelta:
    """Keys of the desired rows an incremental step changed, by table."""

    sb: dict[str, set[Hashable]] = field(default_factory=dict)
    nb: dict[str, set[Hashable]] = field(default_factory=dict)
    # Datapaths whose flows changed in ways no desired row above names (their NAT
    # rules, a port group's ports): `lflow` builds them again with the rest.
    flows: set[str] = field(default_factory=set)
    # Routers whose NAT rules changed, with the external IPs of the rules changed
    # (before and after): `lflow` builds again what their NAT rules derive (owner
    # `("nat", key)`) and keeps the rest, unless a load balancer of theirs has one of
    # those IPs as a VIP (its flows read the router's external IPs: built whole).
    nats: dict[str, set[str]] = field(default_factory=dict)
    # Switch ports (router-type) whose own requests on their switches `lflow` builds
    # again, those switches kept otherwise (a NAT rule of the router they pair with).
    focus: set[str] = field(default_factory=set)
    # Switches that gained or lost a router port: `lflow` builds again what their other
    # router ports ask for on their routers, where that reads the switch's router ports.
    rewired: set[str] = field(default_factory=set)
    # Virtual ports whose claim (SB `virtual_parent`, `chassis`) changed, and the
    # switches they and their parents are on: `lflow` builds again what they ask for
    # on those switches' routers (their VIP resolved to the parent's MAC).
    claimed: set[str] = field(default_factory=set)
    claimed_on: set[str] = field(default_factory=set)
    # Load balancers (NB UUIDs) changed, created or deleted: `lflow` builds their own
    # flows again, and the datapaths where what other flows read of them changed.
    lbs: set[str] = field(default_factory=set)
    # Switch ports a health check probes through that came, went or changed (their
    # switches are in `flows`): `northd` moves the monitors of the load balancers
    # probing them (`lb_incremental.probes_moved`), which names those for `lflow`.
    probed: set[str] = field(default_factory=set)
    # A router's MAC binding age threshold changed: `mac_binding_aging` looks again.
    aging: bool = False
    # NB_Global options only flows read changed (`global_cfg.FLOW_OPTIONS`): `lflow`
    # builds every flow again.
    every_flow: bool = False
    # Port_Binding keys of `sb` changed only in columns no flow reads
    # (`nat_addresses`): every step that touched them touched them so.
    unread: set[Hashable] = field(default_factory=set)

    def touch(self, db: str, table: str, key: Hashable | None = None) -> None:
        keys = (self.sb if db == "sb" else self.nb).setdefault(table, set())
        if key is not None:
            keys.add(key)
            if db == "sb" and table == "Port_Binding":
                self.unread.discard(key)

    def touch_unread(self, key: Hashable) -> None:
        """A Port_Binding changed in columns no flow reads."""
        if key not in self.sb.get("Port_Binding", ()):
            self.unread.add(key)
        self.sb.setdefault("Port_Binding", set()).add(key)

    def merge(self, later: PortsDelta) -> None:
        read = self._read() | later._read()
        for mine, theirs in ((self.sb, later.sb), (self.nb, later.nb)):
            for table, keys in theirs.items():
                mine.setdefault(table, set()).update(keys)
        self.flows |= later.flows
        for key, ips in later.nats.items():
            self.nats.setdefault(key, set()).update(ips)
        self.focus |= later.focus
        self.rewired |= later.rewired
        self.claimed |= later.claimed
        self.claimed_on |= later.claimed_on
        self.lbs |= later.lbs
        self.probed |= later.probed
        self.aging = self.aging or later.aging
        self.every_flow = self.every_flow or later.every_flow
        self.unread = (self.unread | later.unread) - read

    def _read(self) -> set[Hashable]:
        return self.sb.get("Port_Binding", set()) - self.unread

    def empty(self) -> bool:
        return not (self.sb or self.nb or self.flows or self.nats or self.focus or self.lbs
                    or self.rewired or self.claimed or self.aging or self.every_flow)
