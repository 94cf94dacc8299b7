"""DHCP: the SB DHCP_Options and DHCPv6_Options tables, the options ovn-controller may
be asked to put in replies, with their codes and value types.

Rules kept here (OVN 23.03, `supported_dhcp_opts`/`supported_dhcpv6_opts` in
ovn-northd.c, the `DHCP_OPT_*` definitions of lib/ovn-l7.h):
- Exactly these rows, keyed by option name; rows of other names are deleted, a row
  whose code or type differs is put back (23.03 deletes and re-adds it).
- Intended difference: 23.03 matches DHCPv6_Options rows by name alone, so a row with
  a known name but a wrong code (written by someone else) stays wrong there; here it
  is put back like a DHCP_Options row. The tables are constants: no input is read.
"""

from __future__ import annotations

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


def build_dhcp(sb: DesiredDb) -> None:
    for table, options in (("DHCP_Options", DHCP_OPTIONS),
                           ("DHCPv6_Options", DHCPV6_OPTIONS)):
        t = sb.add(DesiredTable(table, COLUMNS))
        for name, code, otype in options:
            t.put(name, name=name, code=code, type=otype)
