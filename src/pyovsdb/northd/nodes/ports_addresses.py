"""Parsing of the address strings of NB ports, as OVN 23.03's `lib/ovn-util.c` reads them.

Rules kept here:
- A MAC is six hex bytes separated by colons, scanned as `ETH_ADDR_SCAN_FMT` does
  (blanks, a sign or 0x may lead a byte, any number of digits wraps to a byte, text
  may follow); it is printed back lowercase with two digits per byte (`ETH_ADDR_FMT`).
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

# One byte of `ETH_ADDR_SCAN_FMT` ("%hhx:..."): optional blanks and sign, an optional
# 0x, hex digits; the value wraps to a byte.
_BYTE = r"\s*([+-]?)(?:0[xX](?=[0-9a-fA-F]))?([0-9a-fA-F]+)"
_SCAN_MAC = re.compile(":".join([_BYTE] * 6))


def scan_mac(text: str) -> tuple[int, int] | None:
    """The MAC `ovs_scan(text, ETH_ADDR_SCAN_FMT)` reads at the start of `text`, and
    where it ends."""
    m = _SCAN_MAC.match(text)
    if m is None:
        return None
    value = 0
    for i in range(6):
        sign, digits = m.group(2 * i + 1), m.group(2 * i + 2)
        byte = int(digits, 16)
        value = (value << 8) | ((-byte if sign == "-" else byte) & 0xFF)
    return value, m.end()


def parse_mac(text: str) -> int | None:
    """A MAC at the start of `text`, as `eth_addr_from_string` reads it (what follows
    it is ignored)."""
    found = scan_mac(text)
    return found[0] if found is not None else None


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


_OCTET = re.compile(r"[ \t\n\v\f\r]*[+-]?[0-9]+")


def scan_ipv4(text: str) -> int | None:
    """Four `%hhu` fields joined by dots, as OVS scans `IP_SCAN_FMT`: blanks and a sign
    may lead a field, and its value wraps to a byte ("10.0.0.300" is 10.0.0.44)."""
    parts = text.split(".")
    if len(parts) != 4 or not all(_OCTET.fullmatch(p) for p in parts):
        return None
    value = 0
    for part in parts:
        number = int(part.strip())
        if abs(number) >= 1 << 64:
            return None  # strtoull's ERANGE
        value = (value << 8) | (number & 0xFF)
    return value


def _plen(mask: int, bits: int) -> int | None:
    """The prefix length of a CIDR mask (None: not one)."""
    inverted = ~mask & ((1 << bits) - 1)
    if inverted & (inverted + 1):
        return None
    return bits - inverted.bit_length()


def _cidr(text: str) -> Ipv4Net | Ipv6Net | None:
    """`ip_parse_cidr_len`, then `ipv6_parse_cidr_len`: "IP", "IP/LEN" or "IP/MASK" (a
    CIDR mask), host bits kept."""
    addr, sep, plen_s = text.strip().partition("/")
    v4 = scan_ipv4(addr) if ":" not in addr else None
    if v4 is not None:
        plen: int | None = 32
        if sep:
            mask = scan_ipv4(plen_s)
            plen = _plen(mask, 32) if mask is not None else \
                int(plen_s) if plen_s.isdigit() and int(plen_s) <= 32 else None
        return Ipv4Net(ipaddress.IPv4Address(v4), plen) if plen is not None else None
    try:
        ip6 = ipaddress.IPv6Address(addr)
    except ValueError:
        return None
    plen = 128
    if sep:
        if plen_s.isdigit():
            plen = int(plen_s) if int(plen_s) <= 128 else None
        else:
            try:
                plen = _plen(int(ipaddress.IPv6Address(plen_s)), 128)
            except ValueError:
                plen = None
    return Ipv6Net(ip6, plen) if plen is not None else None


def _ip_words(words: list[str]) -> tuple[tuple[Ipv4Net, ...], tuple[Ipv6Net, ...]]:
    """IP[/plen] words up to the first that is neither."""
    v4: list[Ipv4Net] = []
    v6: list[Ipv6Net] = []
    for word in words:
        parsed = _cidr(word)
        if parsed is None:
            break
        if isinstance(parsed, Ipv4Net):
            v4.append(parsed)
        else:
            v6.append(parsed)
    return tuple(v4), tuple(v6)


def ip_addresses(text: str) -> Addresses | None:
    """`extract_ip_addresses`: "IP[/plen] ..." up to the first word that is neither
    (MAC 0); None if no address comes first."""
    v4, v6 = _ip_words(text.split())
    return Addresses(0, v4, v6) if v4 or v6 else None


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
    found = scan_mac(words[0])
    if found is None:
        return None
    ea, end = found
    if end != len(words[0]):
        return Addresses(ea)  # the scan stops inside the word: no address follows
    v4, v6 = _ip_words(words[1:])
    return Addresses(ea, v4, v6)


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
