"""DHCP: the SB DHCP_Options and DHCPv6_Options tables, the options ovn-controller may
be asked to put in replies, with their codes and value types.

Rules kept here (OVN 23.03, `supported_dhcp_opts`/`supported_dhcpv6_opts` in
ovn-northd.c, the `DHCP_OPT_*` definitions of lib/ovn-l7.h):
- Exactly these rows, keyed by option name; rows of other names are deleted. A
  DHCP_Options row whose code or type differs is put back (23.03 deletes and re-adds
  it); a DHCPv6_Options row is matched by name alone, as 23.03 matches it, so an
  existing one keeps whatever code and type it has.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...idl.replica import ReplicaTable
from ..desired import DesiredDb, DesiredTable

DHCP_OPTIONS: tuple[tuple[str, int, str], ...] = (
    ("offerip", 0, "ipv4"),
    ("netmask", 1, "ipv4"),
    ("router", 3, "ipv4"),
    ("dns_server", 6, "ipv4"),
    ("log_server", 7, "ipv4"),
    ("lpr_server", 9, "ipv4"),
    ("swap_server", 16, "ipv4"),
    ("policy_filter", 21, "ipv4"),
    ("router_solicitation", 32, "ipv4"),
    ("nis_server", 41, "ipv4"),
    ("ntp_server", 42, "ipv4"),
    ("server_id", 54, "ipv4"),
    ("tftp_server", 66, "host_id"),
    ("classless_static_route", 121, "static_routes"),
    ("ms_classless_static_route", 249, "static_routes"),
    ("ip_forward_enable", 19, "bool"),
    ("router_discovery", 31, "bool"),
    ("ethernet_encap", 36, "bool"),
    ("default_ttl", 23, "uint8"),
    ("tcp_ttl", 37, "uint8"),
    ("mtu", 26, "uint16"),
    ("lease_time", 51, "uint32"),
    ("T1", 58, "uint32"),
    ("T2", 59, "uint32"),
    ("wpad", 252, "str"),
    ("bootfile_name", 67, "str"),
    ("path_prefix", 210, "str"),
    ("tftp_server_address", 150, "ipv4"),
    ("hostname", 12, "str"),
    ("domain_name", 15, "str"),
    ("arp_cache_timeout", 35, "uint32"),
    ("tcp_keepalive_interval", 38, "uint32"),
    ("domain_search_list", 119, "domains"),
    ("bootfile_name_alt", 254, "str"),
    ("broadcast_address", 28, "ipv4"),
    ("netbios_name_server", 44, "ipv4"),
    ("netbios_node_type", 46, "uint8"),
    ("next_server", 253, "ipv4"),
)

DHCPV6_OPTIONS: tuple[tuple[str, int, str], ...] = (
    ("ia_addr", 5, "ipv6"),
    ("server_id", 2, "mac"),
    ("domain_search", 24, "str"),
    ("dns_server", 23, "ipv6"),
)

COLUMNS = ("name", "code", "type")


def build_dhcp(sb: DesiredDb, sb_tables: Mapping[str, ReplicaTable] | None = None) -> None:
    v4 = sb.add(DesiredTable("DHCP_Options", COLUMNS))
    for name, code, otype in DHCP_OPTIONS:
        v4.put(name, name=name, code=code, type=otype)
    existing = {}
    table = (sb_tables or {}).get("DHCPv6_Options")
    if table is not None:
        for row in sorted(table.rows.values(), key=lambda r: r.uuid, reverse=True):
            existing[row.name] = (row.code, row.type)  # the lowest UUID wins
    v6 = sb.add(DesiredTable("DHCPv6_Options", COLUMNS))
    for name, code, otype in DHCPV6_OPTIONS:
        code, otype = existing.get(name, (code, otype))
        v6.put(name, name=name, code=code, type=otype)
