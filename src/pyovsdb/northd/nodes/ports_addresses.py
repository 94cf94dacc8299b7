"""Parsing of the address strings of NB ports, as OVN 23.03's `lib/ovn-util.c` reads them.

Rules kept here:
- A MAC is six hex bytes of one or two digits separated by colons (`ETH_ADDR_SCAN_FMT`);
  it is printed back lowercase with two digits per byte (`ETH_ADDR_FMT`).
- An LSP address is a MAC followed by IPv4/IPv6 addresses (`extract_lsp_addresses`);
  parsing stops at the first word that is neither (23.03 logs and keeps the prefix).
- LRP networks are "IP/plen"; a bad one is skipped, a zero IPv4 address too, and every
  router port also gets the IPv6 link-local address derived from its MAC
  (`extract_lrp_networks`); a bad MAC makes the whole port invalid (None).
- Addresses are printed the way glibc's `inet_ntop` prints them (`format_ipv6`): as
  Python's `ipaddress` does, except that an IPv4-mapped (`::ffff:a.b.c.d`) or
  IPv4-compatible (`::a.b.c.d`, 96 zero bits then a non-zero second-last word)
  address ends in dotted decimal.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

_MAC = re.compile(r"([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):"
                  r"([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})")


def parse_mac(text: str) -> int | None:
    """A MAC at the start of `text` (the whole of it for `eth_addr_from_string`)."""
    m = _MAC.fullmatch(text.strip())
    if m is None:
        return None
    value = 0
    for g in m.groups():
        value = (value << 8) | int(g, 16)
    return value


def format_mac(value: int) -> str:
    return ":".join(f"{(value >> s) & 0xFF:02x}" for s in range(40, -8, -8))


def format_ipv6(addr: ipaddress.IPv6Address) -> str:
    """`addr` as inet_ntop writes it."""
    value = int(addr)
    high = value >> 32
    if high == 0xFFFF or (high == 0 and value >> 16 != 0):
        prefix = "::ffff:" if high else "::"
        return prefix + str(ipaddress.IPv4Address(value & 0xFFFFFFFF))
    return str(addr)


@dataclass(frozen=True, slots=True)
class Ipv4Net:
    addr: ipaddress.IPv4Address
    plen: int

    @property
    def addr_s(self) -> str:
        return str(self.addr)

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network((int(self.addr), self.plen), strict=False)


@dataclass(frozen=True, slots=True)
class Ipv6Net:
    addr: ipaddress.IPv6Address
    plen: int

    @property
    def addr_s(self) -> str:
        return format_ipv6(self.addr)

    @property
    def network(self) -> ipaddress.IPv6Network:
        return ipaddress.IPv6Network((int(self.addr), self.plen), strict=False)


@dataclass(frozen=True, slots=True)
class Addresses:
    """`struct lport_addresses`: a MAC and its IPv4 and IPv6 addresses."""

    mac: int
    ipv4: tuple[Ipv4Net, ...] = field(default=())
    ipv6: tuple[Ipv6Net, ...] = field(default=())

    @property
    def ea_s(self) -> str:
        return format_mac(self.mac)


def lla(mac: int) -> ipaddress.IPv6Address:
    """`in6_generate_lla`: fe80::/64 with the modified EUI-64 of `mac`."""
    hi, lo = mac >> 24, mac & 0xFFFFFF
    eui = ((hi ^ 0x020000) << 40) | (0xFFFE << 24) | lo
    return ipaddress.IPv6Address((0xFE80 << 112) | eui)


def lrp_networks(mac: str, networks: list[str]) -> Addresses | None:
    ea = parse_mac(mac)
    if ea is None:
        return None
    v4: list[Ipv4Net] = []
    v6: list[Ipv6Net] = []
    for net in networks:
        parsed = _cidr(net)
        if isinstance(parsed, Ipv4Net):
            if int(parsed.addr) != 0:
                v4.append(parsed)
        elif isinstance(parsed, Ipv6Net):
            v6.append(parsed)
    v6.append(Ipv6Net(lla(ea), 64))
    return Addresses(ea, tuple(v4), tuple(v6))


def _cidr(text: str) -> Ipv4Net | Ipv6Net | None:
    addr, sep, plen_s = text.strip().partition("/")
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        return None
    max_len = 32 if ip.version == 4 else 128
    if sep:
        if not plen_s.isdigit() or int(plen_s) > max_len:
            return None
        plen = int(plen_s)
    else:
        plen = max_len
    if isinstance(ip, ipaddress.IPv4Address):
        return Ipv4Net(ip, plen)
    return Ipv6Net(ip, plen)


def ip_addresses(text: str) -> Addresses | None:
    """`extract_ip_addresses`: "IP[/plen] ..." up to the first word that is neither
    (MAC 0); None if no address comes first."""
    v4: list[Ipv4Net] = []
    v6: list[Ipv6Net] = []
    for word in text.split():
        parsed = _cidr(word)
        if parsed is None:
            break
        if isinstance(parsed, Ipv4Net):
            v4.append(parsed)
        else:
            v6.append(parsed)
    return Addresses(0, tuple(v4), tuple(v6)) if v4 or v6 else None


def ip_address(text: str) -> Addresses | None:
    """`extract_ip_address`: at most one IPv4 and one IPv6 host address."""
    found = ip_addresses(text)
    if found is None or len(found.ipv4) > 1 or len(found.ipv6) > 1 or \
            any(a.plen != 32 for a in found.ipv4) or any(a.plen != 128 for a in found.ipv6):
        return None
    return found


def lsp_addresses(text: str) -> Addresses | None:
    """"MAC [IP...]" (IPs with an optional /plen); None without a leading MAC."""
    words = text.split()
    if not words:
        return None
    ea = parse_mac(words[0])
    if ea is None:
        return None
    v4: list[Ipv4Net] = []
    v6: list[Ipv6Net] = []
    for word in words[1:]:
        parsed = _cidr(word)
        if parsed is None:
            break
        if isinstance(parsed, Ipv4Net):
            v4.append(parsed)
        else:
            v6.append(parsed)
    return Addresses(ea, tuple(v4), tuple(v6))


def is_dynamic(address: str) -> bool:
    """`is_dynamic_lsp_address`: "dynamic", "dynamic IP4", "dynamic [IP4] IP6",
    "MAC dynamic"."""
    if address.startswith("dynamic"):
        rest = address[7:]
        if not rest:
            return True
        words = rest.split(" ")
        if words[0] != "" or not 2 <= len(words) <= 3:
            return False
        try:
            ips = [ipaddress.ip_address(w) for w in words[1:]]
        except ValueError:
            return False
        versions = [ip.version for ip in ips]
        return versions in ([4], [6], [4, 6])
    words = address.split(" ")
    return len(words) == 2 and parse_mac(words[0]) is not None and words[1] == "dynamic"
