"""What ovn-northd 23.03 logs about bad NB data while it builds, as data the daemon
logs: unparsable addresses, bad router port MACs and networks, load balancer VIPs that
do not parse, IPAM subnets that are bad or full, port names used twice, bad static
routes, and IPAM's assignments.

Rules kept here:
- A `Site` is one `VLOG_*` call of OVN: its module (`northd`, `ovn_util`, `lb`,
  `ipam`), level, text (printf `%s`/`%d` pieces filled by the builder) and, for a
  `VLOG_*_RL` call, its `VLOG_RATE_LIMIT_INIT(rate, burst)`. Sites are distinct
  objects even where two calls read alike, since each C call site has its own rate
  limit.
- Builders stay pure: they call `report(site, *args)`, which appends a `Diagnostic` to
  the list of the innermost `collecting()` block, or does nothing outside one (tests
  that do not ask for diagnostics get none). Nothing here logs, reads a clock or keeps
  state between runs; the daemon logs what a run collected, rate-limited per site.
- A builder reports where 23.03 logs: in the same step, so a run that does not rebuild
  that part reports nothing, as 23.03's incremental runs do not log either. The flow
  builders report only from a full build of the flows (the `lflow` node's recompute,
  when 23.03 builds them all); a partial rebuild of some datapaths' flows is `muted()`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

ERR, WARN, INFO = "err", "warn", "info"


@dataclass(frozen=True, eq=False)
class Site:
    """One logging call of ovn-northd (`rate` 0: not rate-limited)."""

    module: str
    level: str
    text: str
    rate: int = 0
    burst: int = 0

    def format(self, *args: object) -> str:
        return self.text % args if args else self.text


@dataclass(frozen=True, slots=True)
class Diagnostic:
    site: Site
    message: str


_sink: ContextVar[list[Diagnostic] | None] = ContextVar("northd_diagnostics", default=None)


def report(site: Site, *args: object) -> None:
    """Record `site`'s message for the enclosing `collecting()` block, if any."""
    sink = _sink.get()
    if sink is not None:
        sink.append(Diagnostic(site, site.format(*args)))


@contextmanager
def collecting() -> Iterator[list[Diagnostic]]:
    """The diagnostics reported inside the block, in the order they were."""
    found: list[Diagnostic] = []
    token = _sink.set(found)
    try:
        yield found
    finally:
        _sink.reset(token)


@contextmanager
def muted() -> Iterator[None]:
    """Nothing reported inside the block is kept, even inside a `collecting()` one."""
    with collecting():
        yield


# -- lib/ovn-util.c --------------------------------------------------------------------

ADDRESS_SYNTAX = Site("ovn_util", INFO, "invalid syntax '%s' in address", 1, 1)
NETWORKS_ZERO = Site("ovn_util", WARN, "bad 'networks' %s", 5, 1)
NETWORKS_SYNTAX = Site("ovn_util", INFO, "invalid syntax '%s' in networks", 1, 1)

# -- northd/northd.c: join_logical_ports -------------------------------------------------

DUPLICATE_LSP = Site("northd", WARN, "duplicate logical port %s", 5, 1)
DUPLICATE_LRP = Site("northd", WARN, "duplicate logical router port %s", 5, 1)
LSP_NO_MAC = Site("northd", INFO, "invalid syntax '%s' in logical switch port addresses. "
                  "No MAC address found", 1, 1)
PS_NO_MAC = Site("northd", INFO, "invalid syntax '%s' in port security. No MAC address "
                 "found", 1, 1)
LRP_BAD_MAC = Site("northd", WARN, "bad 'mac' %s", 5, 1)

# -- northd/northd.c: build_ipam and its helpers -----------------------------------------

MORE_THAN_ONE_DYNAMIC = Site("northd", WARN, "More than one dynamic address configured "
                             "for logical switch port '%s'", 1, 1)
ASSIGNED_IPV4 = Site("northd", INFO, "Assigned dynamic IPv4 address '%s' to port '%s'")
ASSIGNED_MAC = Site("northd", INFO, "Assigned dynamic MAC address '%s' to port '%s'")
ASSIGNED_IPV6 = Site("northd", INFO, "Assigned dynamic IPv6 address '%s' to port '%s'")

# -- northd/ipam.c (the switch is named by its NB UUID) ----------------------------------

DUPLICATE_IP = Site("ipam", WARN, "%s: Duplicate IP set: %s", 1, 1)
SUBNET_EXHAUSTED = Site("ipam", WARN, "%s: Subnet address space has been exhausted.", 5, 1)
DUPLICATE_MAC = Site("ipam", WARN, "Duplicate MAC set: %s", 1, 1)
BAD_IPV6_PREFIX_ERROR = Site("ipam", WARN, "%s: bad 'ipv6_prefix' %s: %s", 5, 1)
BAD_IPV6_PREFIX_LEN = Site("ipam", WARN, "%s: bad 'ipv6_prefix' %s: must be /64", 5, 1)
BAD_IPV6_PREFIX = Site("ipam", WARN, "%s: bad 'ipv6_prefix' %s", 5, 1)
BAD_SUBNET = Site("ipam", WARN, "%s: bad 'subnet' %s", 5, 1)
BAD_EXCLUDE_IPS = Site("ipam", WARN, "%s: bad exclude_ips (%s)", 5, 1)

# -- lib/lb.c ---------------------------------------------------------------------------

LB_VIP = Site("lb", WARN, "Failed to initialize LB VIP: %s", 5, 1)

# -- northd/northd.c: static routes (built with the logical flows) ----------------------

ROUTE_BAD_NEXTHOP = Site("northd", WARN, "bad 'nexthop' %s in static route %s", 5, 1)
ROUTE_NEXTHOP_MASK = Site("northd", WARN, "bad next hop mask %s in static route %s", 5, 1)
ROUTE_BAD_PREFIX = Site("northd", WARN, "bad 'ip_prefix' %s in static route %s", 5, 1)
ROUTE_FAMILY = Site("northd", WARN, "Address family doesn't match between 'ip_prefix' %s "
                    "and 'nexthop' %s in static route %s", 5, 1)
ROUTE_BAD_OUT_PORT = Site("northd", WARN, "Bad out port %s for static route %s", 5, 1)
ROUTE_NO_PATH = Site("northd", WARN, "No path for static route %s; next hop %s", 5, 1)

# -- northd/northd.c: build_lswitch_ip_unicast_lookup -----------------------------------

ADDRESSES_COLUMN = Site("northd", INFO, "%s: invalid syntax '%s' in addresses column", 1, 1)
