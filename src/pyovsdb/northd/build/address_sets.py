"""Address sets: SB Address_Set rows, from NB Address_Set and from what northd derives:
the service monitor MAC, each port group's IPv4 and IPv6 addresses, and each router's
reachable load balancer VIPs.

Rules kept here (OVN 23.03, `sync_addr_sets` and `build_port_group_address_set` in
en-sync-sb.c, `split_addresses`/`extract_lsp_addresses` in lib/ovn-util.c):
- `svc_monitor_mac` holds the one MAC; `<pg>_ip4`/`<pg>_ip6` exist for every NB port
  group, empty or not, with the IPs of its ports' `addresses` and
  `dynamic_addresses` (a "MAC IP..." entry's IPs, up to the first token that is not
  one); `_rtr_lb_<router tunnel key>_ip4`/`_ip6` exist for routers with reachable
  VIPs; NB address sets come last and win over a derived set of the same name.
- Keyed by name; SB sets of other names are deleted. Addresses are a set (sorted).
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Iterable, Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow, cached
from ..desired import DesiredDb, DesiredTable
from .datapaths import DatapathsData
from .lb import LbData

COLUMNS = ("name", "addresses")
_MAC = re.compile(r"[0-9a-fA-F]{1,2}(?::[0-9a-fA-F]{1,2}){5}")
MONITOR_MAC_SET = "svc_monitor_mac"  # (the set holding the service monitor MAC)


@functools.lru_cache(maxsize=1 << 16)
def split_addresses(entry: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The IPv4 and IPv6 addresses (no prefix length) of a "MAC [IP[/plen]...]" entry
    (remembered: a port group's sets are built again from every member's entries
    whenever one member changes)."""
    tokens = entry.split()
    if not tokens or not _MAC.fullmatch(tokens[0]):
        return (), ()
    v4: list[str] = []
    v6: list[str] = []
    for tok in tokens[1:]:
        try:
            iface = ipaddress.ip_interface(tok)
        except ValueError:
            break
        (v4 if iface.version == 4 else v6).append(str(iface.ip))
    return tuple(v4), tuple(v6)


def _port_ips(lsp: IdlRow) -> tuple[tuple[str, ...], tuple[str, ...]]:
    v4: list[str] = []
    v6: list[str] = []
    entries: list[str] = list(lsp.addresses)
    if lsp.dynamic_addresses:
        entries.append(lsp.dynamic_addresses)
    for entry in entries:
        a4, a6 = split_addresses(entry)
        v4 += a4
        v6 += a6
    return tuple(v4), tuple(v6)


def port_ips(lsp: IdlRow) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The IPv4 and IPv6 addresses a switch port gives its port groups' sets (of its
    `addresses` and `dynamic_addresses`), kept on the row: a group's sets are built
    again from every member's whenever one member goes."""
    return cached(lsp, "port_ips", _port_ips)  # type: ignore[no-any-return]


def port_group_addresses(pg: IdlRow) -> tuple[list[str], list[str]]:
    v4: set[str] = set()
    v6: set[str] = set()
    replica = pg.table.replica
    table = replica.tables.get("Logical_Switch_Port") if replica is not None else None
    lsps = table.rows if table is not None else {}
    for uuid in pg.value("ports"):
        lsp = lsps.get(uuid)
        if lsp is None:
            continue
        a4, a6 = port_ips(lsp)
        v4.update(a4)
        v6.update(a6)
    return sorted(v4), sorted(v6)


def router_lb_set_name(tunnel_key: int, family: int) -> str:
    return f"_rtr_lb_{tunnel_key}_ip{family}"


def _sorted_rows(table: ReplicaTable | None) -> Iterable[IdlRow]:
    return sorted([] if table is None else table.rows.values(),
                  key=lambda r: (r.name, r.uuid))


def build_address_sets(nb: Mapping[str, ReplicaTable], dps: DatapathsData, lbs: LbData,
                       svc_monitor_mac: str, sb: DesiredDb) -> None:
    table = sb.add(DesiredTable("Address_Set", COLUMNS))

    def put(name: str, addresses: Iterable[str]) -> None:
        table.put(name, name=name, addresses=sorted(set(addresses)))

    put(MONITOR_MAC_SET, [svc_monitor_mac])
    for pg in _sorted_rows(nb.get("Port_Group")):
        v4, v6 = port_group_addresses(pg)
        put(f"{pg.name}_ip4", v4)
        put(f"{pg.name}_ip6", v6)
    for key, dp in dps.routers.items():
        v4s, v6s = lbs.reachable.get(key, (frozenset(), frozenset()))
        if v4s:
            put(router_lb_set_name(dp.tunnel_key, 4), v4s)
        if v6s:
            put(router_lb_set_name(dp.tunnel_key, 6), v6s)
    for aset in _sorted_rows(nb.get("Address_Set")):
        put(aset.name, aset.addresses)
