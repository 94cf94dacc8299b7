"""Parsing of the address strings of NB ports, as OVN 23.03's `lib/ovn-util.c` reads them,
and the one copy of OVS's address parsers (lib/packets.c) every northd site uses.

Rules kept here:
- OVS's parsers keep their C names and differ as theirs do: `ip_parse_masked` takes
  any mask, `ip_parse_cidr` only a prefix, their `_len` forms read from a position and
  tell where they stopped, the others want the whole text; the IPv6 ones likewise;
  `ip_parse`/`ipv6_parse` are `inet_pton`'s exact forms. Numbers are read as
  `ovs_scan` reads them (`util.cnum`): blanks and a sign may lead, "%hhu" wraps to a
  byte, "%d" to an int, nothing fails on range. Errors are OVS's texts.
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
from typing import Generic, TypeVar

from ...util.cnum import DECIMAL, scan_int, wrap
from ..diagnostics import ADDRESS_SYNTAX, NETWORKS_SYNTAX, NETWORKS_ZERO, report

# One byte of `ETH_ADDR_SCAN_FMT` ("%hhx:..."): optional blanks and sign, an optional
# 0x, hex digits; the value wraps to a byte.
_BYTE = r"\s*([+-]?)(?:0[xX](?=[0-9a-fA-F]))?([0-9a-fA-F]+)"
_SCAN_MAC = re.compile(":".join([_BYTE] * 6))

T = TypeVar("T")


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
    addr_s: str = field(init=False, compare=False, repr=False)  # (written once: flows read it)

    def __post_init__(self) -> None:
        object.__setattr__(self, "addr_s", str(self.addr))

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network((int(self.addr), self.plen), strict=False)


@dataclass(frozen=True, slots=True)
class Ipv6Net:
    addr: ipaddress.IPv6Address
    plen: int
    addr_s: str = field(init=False, compare=False, repr=False)  # (as inet_ntop writes it)

    def __post_init__(self) -> None:
        object.__setattr__(self, "addr_s", format_ipv6(self.addr))

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


# --- OVS's address parsers (lib/packets.c), as ovs_scan reads them ------------------
# An `..._len` parser reads at `pos` and returns where it stopped; the one without
# `_len` wants the whole text. Errors are OVS's texts, which name the whole text.

_IP_SCAN = re.compile("\\.".join([DECIMAL] * 4))
_IP6_CHARS = re.compile("[0-9a-fA-F:.]{1,46}")  # IPV6_SCAN_FMT: "%46[0-9a-fA-F:.]"
_SKIP_WS = re.compile("[ \t\n\v\f\r]*")
ALL4 = 0xFFFFFFFF
ALL6 = (1 << 128) - 1


def scan_ip(text: str, pos: int = 0) -> tuple[int, int] | None:
    """`IP_SCAN_FMT` ("%hhu.%hhu.%hhu.%hhu") at `pos`: the address and where it ends.
    Blanks and a sign may lead each number, and its value wraps to a byte
    ("10.0.0.300" is 10.0.0.44)."""
    m = _IP_SCAN.match(text, pos)
    if m is None:
        return None
    a, b, c, d = (wrap(int(g), 8, False) for g in m.groups())
    return (a << 24) | (b << 16) | (c << 8) | d, m.end()


def ip_parse(text: str) -> int | None:
    """`ip_parse` (`inet_pton(AF_INET)`): exactly a dotted quad, no leading zeros."""
    try:
        return int(ipaddress.IPv4Address(text))
    except ValueError:
        return None


def ipv6_parse(text: str) -> int | None:
    """`ipv6_parse` (`inet_pton(AF_INET6)`, which knows no scope id)."""
    if "%" in text:
        return None
    try:
        return int(ipaddress.IPv6Address(text))
    except ValueError:
        return None


def cidr_plen(mask: int, bits: int) -> int | None:
    """The prefix length of a CIDR mask of `bits` bits (`ip_is_cidr`/`ipv6_is_cidr`,
    then the count); None for another mask."""
    inverted = ~mask & ((1 << bits) - 1)
    if inverted & (inverted + 1):
        return None
    return bits - inverted.bit_length()


def ip_parse_masked_len(text: str, pos: int = 0) -> tuple[int, int, int] | str:
    """`ip_parse_masked_len`: "IP/IP", "IP/LEN" or "IP" at `pos` (address, mask,
    end), or the error."""
    got = scan_ip(text, pos)
    if got is None:
        return f"{text}: invalid IP address"
    addr, end = got
    if text.startswith("/", end):
        mask = scan_ip(text, end + 1)
        if mask is not None:
            return addr, mask[0], mask[1]
        prefix = scan_int(text, end + 1)  # %d
        if prefix is not None:
            if not 0 <= prefix[0] <= 32:
                return (f"{text}: IPv4 network prefix bits not between 0 and 32, "
                        "inclusive")
            return addr, (ALL4 << (32 - prefix[0])) & ALL4, prefix[1]
    return addr, ALL4, end


def ip_parse_masked(text: str) -> tuple[int, int] | str:
    """`ip_parse_masked`: the whole text "IP/IP", "IP/LEN" or "IP" (address, mask)."""
    found = ip_parse_masked_len(text)
    if isinstance(found, str):
        return found
    return f"{text}: invalid IP address" if found[2] != len(text) else found[:2]


def ip_parse_cidr_len(text: str, pos: int = 0) -> tuple[int, int, int] | str:
    """`ip_parse_cidr_len`: `ip_parse_masked_len` with a CIDR mask (address, prefix
    length, end)."""
    found = ip_parse_masked_len(text, pos)
    if isinstance(found, str):
        return found
    plen = cidr_plen(found[1], 32)
    return f"{text}: CIDR network required" if plen is None else (found[0], plen, found[2])


def ip_parse_cidr(text: str) -> tuple[int, int] | str:
    """`ip_parse_cidr`: the whole text one IPv4 network (address, prefix length)."""
    found = ip_parse_cidr_len(text)
    if isinstance(found, str):
        return found
    return f"{text}: invalid IP address" if found[2] != len(text) else found[:2]


def ipv6_parse_masked_len(text: str, pos: int = 0) -> tuple[int, int, int] | str:
    """`ipv6_parse_masked_len`: blanks, then "IP6", "IP6/LEN" or "IP6/MASK" at `pos`
    (address, mask, end), or the error."""
    m = _IP6_CHARS.match(text, _SKIP_WS.match(text, pos).end())  # type: ignore[union-attr]
    addr = ipv6_parse(m.group()) if m is not None else None
    if m is None or addr is None:
        return f"{text}: invalid IPv6 address"
    end = m.end()
    if text.startswith("/", end):
        prefix = scan_int(text, end + 1)  # %d
        if prefix is not None:
            if not 0 <= prefix[0] <= 128:
                return (f"{text}: IPv6 network prefix bits not between 0 and 128, "
                        "inclusive")
            return addr, ALL6 ^ (ALL6 >> prefix[0]), prefix[1]
        mm = _IP6_CHARS.match(text, end + 1)
        if mm is not None:
            mask = ipv6_parse(mm.group())
            return f"{text}: Invalid IPv6 mask" if mask is None else (addr, mask, mm.end())
    return addr, ALL6, end


def ipv6_parse_masked(text: str) -> tuple[int, int] | str:
    """`ipv6_parse_masked`: the whole text one masked IPv6 address (address, mask)."""
    found = ipv6_parse_masked_len(text)
    if isinstance(found, str):
        return found
    return f"{text}: invalid IPv6 address" if found[2] != len(text) else found[:2]


def ipv6_parse_cidr_len(text: str, pos: int = 0) -> tuple[int, int, int] | str:
    """`ipv6_parse_cidr_len`: `ipv6_parse_masked_len` with a CIDR mask (address,
    prefix length, end)."""
    found = ipv6_parse_masked_len(text, pos)
    if isinstance(found, str):
        return found
    plen = cidr_plen(found[1], 128)
    if plen is None:
        return f"{text}: IPv6 CIDR network required"
    return found[0], plen, found[2]


def ipv6_parse_cidr(text: str) -> tuple[int, int] | str:
    """`ipv6_parse_cidr`: the whole text one IPv6 network (address, prefix length)."""
    found = ipv6_parse_cidr_len(text)
    if isinstance(found, str):
        return found
    return f"{text}: invalid IPv6 address" if found[2] != len(text) else found[:2]


def ip46_parse_cidr(text: str) -> tuple[bool, int, int] | None:
    """OVN's `ip46_parse_cidr`: `ip_parse_cidr`, else `ipv6_parse_cidr` (IPv4 or not,
    address, prefix length)."""
    v4 = ip_parse_cidr(text)
    if not isinstance(v4, str):
        return True, v4[0], v4[1]
    v6 = ipv6_parse_cidr(text)
    return None if isinstance(v6, str) else (False, v6[0], v6[1])


@functools.lru_cache(maxsize=4096)
def _host(ip_s: str) -> tuple[bool, int] | None:
    """`ip_s` as `find_lrp_member_ip` reads it: with `ip_parse` if it has a dot, else
    with `ipv6_parse` (IPv4 or not, value)."""
    v4 = "." in ip_s
    value = ip_parse(ip_s) if v4 else ipv6_parse(ip_s)
    return None if value is None else (v4, value)


def find_lrp_member_ip(networks: Addresses | None, ip_s: str) -> str | None:
    """`find_lrp_member_ip`: the router port's address (of its `networks`) whose
    network holds `ip_s`, the first of them."""
    host = _host(ip_s) if networks is not None else None
    if networks is None or host is None:
        return None
    v4, value = host
    bits, nets = (32, networks.ipv4) if v4 else (128, networks.ipv6)
    for net in nets:
        if (int(net.addr) ^ value) >> (bits - net.plen) == 0:
            return net.addr_s
    return None


class MemberIndex(Generic[T]):
    """`find_lrp_member_ip` over a list of router ports' networks at once: the first
    port (in list order) with a network that holds an address, and that network's
    address, found by one lookup per prefix length the ports have rather than a walk
    of the ports (a router of many ports asked for each of its routes and policies).
    Items are whatever the caller lists with each port's networks (None: no networks)."""

    def __init__(self, listed: list[tuple[T, Addresses | None]]) -> None:
        # family (IPv4?) -> prefix length -> network value -> (place, item, address)
        self._nets: dict[bool, dict[int, dict[int, tuple[int, int, T, str]]]] = \
            {True: {}, False: {}}
        for place, (item, networks) in enumerate(listed):
            if networks is None:
                continue
            nets: list[tuple[bool, Ipv4Net | Ipv6Net]] = \
                [(True, n) for n in networks.ipv4] + [(False, n) for n in networks.ipv6]
            for order, (v4, net) in enumerate(nets):
                by_value = self._nets[v4].setdefault(net.plen, {})
                by_value.setdefault(int(net.addr) >> ((32 if v4 else 128) - net.plen),
                                    (place, order, item, net.addr_s))

    def first(self, ip_s: str) -> tuple[T, str] | None:
        """The first item whose networks hold `ip_s`, and the address of its network
        that does (`find_lrp_member_ip` of each in turn)."""
        host = _host(ip_s)
        if host is None:
            return None
        v4, value = host
        bits = 32 if v4 else 128
        best: tuple[int, int, T, str] | None = None
        for plen, by_value in self._nets[v4].items():
            hit = by_value.get(value >> (bits - plen))
            if hit is not None and (best is None or hit[:2] < best[:2]):
                best = hit
        return None if best is None else (best[2], best[3])


def _cidr(text: str) -> Ipv4Net | Ipv6Net | None:
    """`ip_parse_cidr`, then `ipv6_parse_cidr`: the whole text one network."""
    found = ip46_parse_cidr(text)
    if found is None:
        return None
    v4, addr, plen = found
    if v4:
        return Ipv4Net(ipaddress.IPv4Address(addr), plen)
    return Ipv6Net(ipaddress.IPv6Address(addr), plen)


def _scan_ips(text: str, pos: int) -> tuple[tuple[Ipv4Net, ...], tuple[Ipv6Net, ...], int]:
    """`parse_and_store_addresses` after the MAC: IPv4 or IPv6 networks, one after
    the other, until neither parses; and where that happened."""
    v4: list[Ipv4Net] = []
    v6: list[Ipv6Net] = []
    while pos < len(text):
        found = ip_parse_cidr_len(text, pos)
        if not isinstance(found, str):
            v4.append(Ipv4Net(ipaddress.IPv4Address(found[0]), found[1]))
            pos = found[2]
            continue
        found = ipv6_parse_cidr_len(text, pos)
        if isinstance(found, str):
            break
        v6.append(Ipv6Net(ipaddress.IPv6Address(found[0]), found[1]))
        pos = found[2]
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
