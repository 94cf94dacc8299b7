"""The actions of the DHCP flows: what a port's NB `DHCP_Options` row turns into in
`put_dhcp_opts`/`put_dhcpv6_opts` and in the reply that follows, for one offered address.

Rules kept here (23.03's `build_dhcpv4_action` and `build_dhcpv6_action`):
- An address is offered only if it lies in the row's `cidr`, parsed as OVS parses a
  masked address (`a.b.c.d`, `a.b.c.d/len` or `a.b.c.d/m.m.m.m`; IPv6 likewise); a cidr
  that does not parse offers nothing.
- DHCPv4 needs `server_id`, `server_mac` and `lease_time`; DHCPv6 needs a `server_id`
  that is a MAC. Without them the port gets no flows (23.03 only logs).
- Options are written in the byte order of their names, `key = value` with the value as
  NB has it (ovn-controller parses them, northd does not). DHCPv4 drops `server_mac`,
  adds `netmask` from the cidr and takes `hostname` from the port's `options:hostname`
  over the row's; DHCPv6 writes `ia_addr` first unless `dhcpv6_stateless` is true, and
  never writes `dhcpv6_stateless` itself.
- Pure text in, text out: nothing here knows about ports or flows.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from ..build.ports_addresses import ip_parse_masked, ipv6_parse_masked, lla, parse_mac

# What `REGBIT_DHCP_OPTS_RESULT` names: the result of put_dhcp(v6)_opts.
DHCP_RESULT = "reg0[3]"


@dataclass(frozen=True, slots=True)
class DhcpActions:
    """The flows' text for one offered address."""

    options: str  # the ls_in_dhcp_options action
    response: str  # the ls_in_dhcp_response action
    renew_match: str = ""  # DHCPv4 only: the addresses of a renewal (unicast or not)


def ipv6_string_mapped(addr: ipaddress.IPv6Address) -> str:
    """`ipv6_string_mapped`: an IPv4-mapped address as its dotted quad."""
    mapped = addr.ipv4_mapped
    return str(mapped) if mapped is not None else str(addr)


def dhcpv4_actions(cidr: str, options: Mapping[str, str], offer: ipaddress.IPv4Address,
                   hostname: str | None) -> DhcpActions | None:
    """The DHCPv4 flows' text for offering `offer`, or None if this row offers
    nothing to it (`hostname`: the port's `options:hostname`)."""
    parsed = ip_parse_masked(cidr)
    if isinstance(parsed, str):
        return None
    host, mask = parsed
    if (int(offer) ^ host) & mask:
        return None
    server_ip = options.get("server_id")
    server_mac = options.get("server_mac")
    if server_ip is None or server_mac is None or "lease_time" not in options:
        return None
    opts = {k: v for k, v in options.items() if k != "server_mac"}
    if hostname is not None:
        opts["hostname"] = hostname
    # `netmask` comes from the cidr. A row's own "netmask" stays too: 23.03 adds a
    # second entry of that name, which its sort leaves after the one from the cidr.
    pairs = sorted([("netmask", str(ipaddress.IPv4Address(mask))), *opts.items()],
                   key=lambda kv: kv[0])
    rendered = ", ".join(f"{k} = {v}" for k, v in pairs)
    return DhcpActions(
        options=f"{DHCP_RESULT} = put_dhcp_opts(offerip = {offer}, {rendered}); next;",
        response=(f"eth.dst = eth.src; eth.src = {server_mac}; ip4.src = {server_ip}; "
                  "udp.src = 67; udp.dst = 68; outport = inport; flags.loopback = 1; "
                  "output;"),
        renew_match=f"ip4.src == {offer} && ip4.dst == {{{server_ip}, 255.255.255.255}}")


def _is_true(value: str | None) -> bool:
    """`smap_get_bool(..., false)`: "true" in any case."""
    return value is not None and value.lower() == "true"


def dhcpv6_actions(cidr: str, options: Mapping[str, str],
                   offer: ipaddress.IPv6Address) -> DhcpActions | None:
    """The DHCPv6 flows' text for offering `offer`, or None."""
    parsed = ipv6_parse_masked(cidr)
    if isinstance(parsed, str):
        return None
    host, mask = parsed
    if (int(offer) ^ host) & mask:
        return None
    server_mac = options.get("server_id")
    mac = parse_mac(server_mac) if server_mac is not None else None
    if server_mac is None or mac is None:
        return None
    parts: list[str] = []
    if not _is_true(options.get("dhcpv6_stateless")):
        parts.append(f"ia_addr = {ipv6_string_mapped(offer)}")
    parts += [f"{key} = {options[key]}" for key in sorted(options)
              if key != "dhcpv6_stateless"]
    server_ip = ipv6_string_mapped(lla(mac))
    return DhcpActions(
        options=f"{DHCP_RESULT} = put_dhcpv6_opts({', '.join(parts)}); next;",
        response=(f"eth.dst = eth.src; eth.src = {server_mac}; ip6.dst = ip6.src; "
                  f"ip6.src = {server_ip}; udp.src = 547; udp.dst = 546; "
                  "outport = inport; flags.loopback = 1; output;"))
