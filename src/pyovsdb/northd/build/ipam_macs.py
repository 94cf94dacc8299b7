"""The MACs of the IPAM prefix that every port holds, kept between builds so that a
switch port asking IPAM for an address is planned over its own switches alone
(`ipam_incremental`), not over every port of the topology.

Rules kept here:
- A port holds the MACs a build's IPAM takes for it (`ipam.plan_ipam`): a switch port
  its own static MACs and the MAC of its dynamic addresses (as the core records them,
  `CoreData.dynamic_addresses`), a router or chassisredirect port the MAC of its
  networks; only MACs of the prefix count (no other MAC can be assigned).
- The index is exact or it is not built (`valid` False): built from the core when an
  in-place IPAM plan first needs it, refreshed by name for the ports a switch port
  change touched, and after the handlers of every other change that can move a
  port's MAC (`MAC_MOVERS`: router ports come, go, change, or get a chassisredirect
  port) for the ports whose bindings they touched (`CoreData.refresh_macs`: a port's
  MAC is in its binding, so one that moves is touched). A switch's IPAM settings changed refresh
  the ports that moved (`datapaths_updated.ipam_again`). A new prefix forgets it
  (`datapaths_updated.prefix_again`), and a recompute makes a new core, so a new,
  unbuilt index.
- `same_as_built` compares it with one built from scratch with the core's prefix:
  the driver's self-check runs it, so an index that drifts from the ports (or the
  prefix) fails the tests that run northd.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from .ports import Port, PortsData
from .ports_addresses import parse_mac

MAC_MOVERS = frozenset(("Logical_Router", "Logical_Router_Port", "Gateway_Chassis",
                        "HA_Chassis", "HA_Chassis_Group"))


@dataclass(slots=True)
class MacIndex:
    prefix: int | None = None
    valid: bool = False
    held: dict[str, tuple[int, ...]] = field(default_factory=dict)  # by port name
    count: Counter[int] = field(default_factory=Counter)  # ports holding each MAC

    def build(self, ports: PortsData, dynamic: Mapping[str, str | None],
              prefix: int | None) -> None:
        self.prefix, self.valid = prefix, True
        self.held.clear()
        self.count.clear()
        for port in ports.ports.values():
            self._put(port.name, self._of(port, dynamic))

    def forget(self) -> None:
        """Not exact any more: built again when next needed."""
        self.valid = False
        self.held.clear()
        self.count.clear()

    def refresh(self, names: Iterable[str], ports: PortsData,
                dynamic: Mapping[str, str | None]) -> None:
        """The ports `names` as they are now (gone where no port has the name)."""
        if not self.valid:
            return
        for name in names:
            old = self.held.pop(name, ())
            self.count.subtract(old)
            for mac in old:
                if self.count[mac] <= 0:
                    del self.count[mac]
            port = ports.ports.get(name)
            if port is not None:
                self._put(name, self._of(port, dynamic))

    def taken_outside(self, names: Iterable[str]) -> Callable[[int], bool]:
        """Whether a MAC is held by a port not among `names` (the ports a scoped plan
        walks itself, and those gone)."""
        local = Counter(mac for name in names for mac in self.held.get(name, ()))
        count = self.count
        return lambda mac: count.get(mac, 0) > local.get(mac, 0)

    def same_as_built(self, ports: PortsData, dynamic: Mapping[str, str | None],
                      prefix: int | None) -> bool:
        if not self.valid:
            return True
        fresh = MacIndex()
        fresh.build(ports, dynamic, prefix)
        return self.prefix == prefix and fresh.held == self.held \
            and +fresh.count == +self.count

    def _of(self, port: Port, dynamic: Mapping[str, str | None]) -> tuple[int, ...]:
        prefix = self.prefix
        if prefix is None:
            return ()
        if port.is_lsp:
            macs = [a.mac for a in port.lsp_addrs[:port.n_static_addrs]]
            value = dynamic.get(port.name)
            if value:
                mac = parse_mac(value)
                if mac is not None:
                    macs.append(mac)
        elif port.networks is not None:
            macs = [port.networks.mac]
        else:
            return ()
        return tuple(m for m in macs if not (m ^ prefix) >> 24)

    def _put(self, name: str, macs: tuple[int, ...]) -> None:
        if macs:
            self.held[name] = macs
            self.count.update(macs)
