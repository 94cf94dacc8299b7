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

import functools
import ipaddress
import re
from dataclasses import dataclass, field

from ..diagnostics import ADDRESS_SYNTAX, NETWORKS_SYNTAX, NETWORKS_ZERO, report

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


def lrp_networks(mac: str, networks: list[str], *, log: bool = False) -> Addresses | None:
    """`extract_lrp_networks`; `log`: report the networks it skips, as 23.03 does."""
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
            elif log:
                report(NETWORKS_ZERO, net)
        elif isinstance(parsed, Ipv6Net):
            v6.append(parsed)
        elif log:
            report(NETWORKS_SYNTAX, net)
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


# ovs_scan's pieces (lib/util.c): `%hhu`/`%d` skip C blanks, take a sign and decimal
# digits (the value wraps); `%46[0123456789abcdefABCDEF:.]` skips nothing.
_WS = "[ \t\n\v\f\r]*"
_NUM = "([+-]?[0-9]+)"
_SCAN_IP4 = re.compile("\\.".join([_WS + _NUM] * 4))
_SCAN_INT = re.compile(_WS + _NUM)
_SCAN_IP6 = re.compile("[0-9a-fA-F:.]{1,46}")
_SKIP_WS = re.compile(_WS)


def _int32(digits: str) -> int:
    """A `%d` conversion: the value modulo 2**64, stored in an int."""
    value = int(digits) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _ip4_at(text: str, pos: int) -> tuple[int, int] | None:
    """`IP_SCAN_FMT` at `pos`: the address and where it ends."""
    m = _SCAN_IP4.match(text, pos)
    if m is None:
        return None
    value = 0
    for g in m.groups():
        value = (value << 8) | (int(g) & 0xFF)
    return value, m.end()


def _pton6(text: str) -> int | None:
    try:
        return int(ipaddress.IPv6Address(text))
    except ValueError:
        return None


def _masked4_at(text: str, pos: int) -> tuple[int, int, int] | str:
    """`ip_parse_masked_len` at `pos`: "IP/IP", "IP/LEN" or "IP" (address, mask, end),
    or its error text."""
    got = _ip4_at(text, pos)
    if got is None:
        return f"{text[pos:]}: invalid IP address"
    addr, end = got
    if text.startswith("/", end):
        mask = _ip4_at(text, end + 1)
        if mask is not None:
            return addr, mask[0], mask[1]
        m = _SCAN_INT.match(text, end + 1)
        if m is not None:
            plen = _int32(m.group(1))
            if not 0 <= plen <= 32:
                return (f"{text[pos:]}: IPv4 network prefix bits not between 0 and 32, "
                        "inclusive")
            return addr, (0xFFFFFFFF << (32 - plen)) & 0xFFFFFFFF, m.end()
    return addr, 0xFFFFFFFF, end


def ip_parse_masked(text: str) -> tuple[int, int] | str:
    """`ip_parse_masked`: the whole text "IP/IP", "IP/LEN" or "IP"; or the error."""
    found = _masked4_at(text, 0)
    if isinstance(found, str):
        return found
    if found[2] != len(text):
        return f"{text}: invalid IP address"
    return found[0], found[1]


def _cidr4_at(text: str, pos: int) -> tuple[Ipv4Net, int] | None:
    """`ip_parse_cidr_len` at `pos`: a masked address whose mask is a CIDR mask."""
    found = _masked4_at(text, pos)
    if isinstance(found, str):
        return None
    addr, mask, end = found
    plen = _plen(mask, 32)
    if plen is None:
        return None  # "CIDR network required"
    return Ipv4Net(ipaddress.IPv4Address(addr), plen), end


_ALL6 = (1 << 128) - 1


def _masked6_at(text: str, pos: int) -> tuple[int, int, int] | str:
    """`ipv6_parse_masked_len` at `pos`: blanks, then "IP6", "IP6/LEN" or "IP6/MASK"
    (address, mask, end), or its error text."""
    blanks = _SKIP_WS.match(text, pos)
    m = _SCAN_IP6.match(text, blanks.end() if blanks is not None else pos)
    addr = _pton6(m.group()) if m is not None else None
    if m is None or addr is None:
        return f"{text[pos:]}: invalid IPv6 address"
    end = m.end()
    if text.startswith("/", end):
        n = _SCAN_INT.match(text, end + 1)
        if n is not None:
            plen = _int32(n.group(1))
            if not 0 <= plen <= 128:
                return (f"{text[pos:]}: IPv6 network prefix bits not between 0 and 128, "
                        "inclusive")
            return addr, _ALL6 ^ (_ALL6 >> plen), n.end()
        mm = _SCAN_IP6.match(text, end + 1)
        if mm is not None:
            mask = _pton6(mm.group())
            if mask is None:
                return f"{text[pos:]}: Invalid IPv6 mask"
            return addr, mask, mm.end()
    return addr, _ALL6, end


def ipv6_parse_masked(text: str) -> tuple[int, int] | str:
    """`ipv6_parse_masked`: the whole text one masked IPv6 address; or the error."""
    found = _masked6_at(text, 0)
    if isinstance(found, str):
        return found
    if found[2] != len(text):
        return f"{text}: invalid IPv6 address"
    return found[0], found[1]


def _cidr6_at(text: str, pos: int) -> tuple[Ipv6Net, int] | None:
    """`ipv6_parse_cidr_len` at `pos`: a masked IPv6 address, a CIDR mask."""
    found = _masked6_at(text, pos)
    if isinstance(found, str):
        return None
    addr, mask, end = found
    plen = _plen(mask, 128)
    if plen is None:
        return None  # "IPv6 CIDR network required"
    return Ipv6Net(ipaddress.IPv6Address(addr), plen), end


def _cidr(text: str) -> Ipv4Net | Ipv6Net | None:
    """`ip_parse_cidr`, then `ipv6_parse_cidr`: the whole text one network."""
    found: tuple[Ipv4Net | Ipv6Net, int] | None = _cidr4_at(text, 0)
    if found is None or found[1] != len(text):
        found = _cidr6_at(text, 0)
    return found[0] if found is not None and found[1] == len(text) else None


def _scan_ips(text: str, pos: int) -> tuple[tuple[Ipv4Net, ...], tuple[Ipv6Net, ...], int]:
    """`parse_and_store_addresses` after the MAC: IPv4 or IPv6 networks, one after
    the other, until neither parses; and where that happened."""
    v4: list[Ipv4Net] = []
    v6: list[Ipv6Net] = []
    while pos < len(text):
        found4 = _cidr4_at(text, pos)
        if found4 is not None:
            v4.append(found4[0])
            pos = found4[1]
            continue
        found6 = _cidr6_at(text, pos)
        if found6 is None:
            break
        v6.append(found6[0])
        pos = found6[1]
    return tuple(v4), tuple(v6), pos


def ip_addresses(text: str) -> Addresses | None:
    """`extract_ip_addresses`: "IP[/plen] ..." up to where neither parses (MAC 0);
    None if no address comes first."""
    v4, v6, _ = _scan_ips(text, 0)
    return Addresses(0, v4, v6) if v4 or v6 else None


def ip_address(text: str) -> Addresses | None:
    """`extract_ip_address`: at most one IPv4 and one IPv6 host address."""
    found = ip_addresses(text)
    if found is None or len(found.ipv4) > 1 or len(found.ipv6) > 1 or \
            any(a.plen != 32 for a in found.ipv4) or any(a.plen != 128 for a in found.ipv6):
        return None
    return found


@functools.lru_cache(maxsize=1 << 15)
def parse_lsp_address(text: str) -> tuple[Addresses | None, int]:
    """`extract_addresses`: "MAC [IP...]" (IPs with an optional /plen), and the offset
    where what follows them begins; None without a leading MAC. (Cached: every
    recompute parses every port's addresses again, and the result is immutable.)"""
    found = scan_mac(text)
    if found is None:
        return None, 0
    ea, end = found
    v4, v6, end = _scan_ips(text, end)
    return Addresses(ea, v4, v6), end


def lsp_addresses(text: str) -> Addresses | None:
    """"MAC [IP...]" as `extract_lsp_addresses` keeps it, without its log line."""
    return parse_lsp_address(text)[0]


def extract_lsp_addresses(text: str) -> Addresses | None:
    """`extract_lsp_addresses`: `lsp_addresses`, reporting text after the addresses
    (23.03 keeps what parsed: "MAC IP fe80::zz" is the MAC, the IP and fe80::)."""
    found, end = parse_lsp_address(text)
    if found is not None and end < len(text):
        report(ADDRESS_SYNTAX, text)
    return found


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


def v4_cidr_bits(mask: int) -> int:
    """`ip_count_cidr_bits`: 32 less the trailing zero bits."""
    if mask == 0:
        return 0
    return 32 - ((mask & -mask).bit_length() - 1)


def v6_cidr_bits(mask: int) -> int:
    """`ipv6_count_cidr_bits`: the leading 0xff bytes, then the bits of the first other
    byte up to its last set bit."""
    count = 0
    for shift in range(120, -8, -8):
        byte = (mask >> shift) & 0xFF
        if byte == 0xFF:
            count += 8
            continue
        while byte:
            count += 1
            byte = (byte << 1) & 0xFF
        break
    return count
