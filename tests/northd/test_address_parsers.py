"""OVS's address parsers (lib/packets.c) as `build.ports_addresses` reads them, the one
set every northd site uses: `ip_parse_masked`, `ip_parse_cidr` and their `_len` forms,
the IPv6 ones, OVN's `ip46_parse_cidr`; and the cases where the copies they replaced
disagreed with each other (which one 23.03 agrees with is checked against the real
ovn-northd by the corpus lines named below)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pyovsdb.northd.build.ports_addresses import (
    ALL4,
    ALL6,
    MemberIndex,
    cidr_plen,
    find_lrp_member_ip,
    ip46_parse_cidr,
    ip_parse,
    ip_parse_cidr,
    ip_parse_cidr_len,
    ip_parse_masked,
    ipv6_parse,
    ipv6_parse_cidr,
    ipv6_parse_masked,
    lrp_networks,
    scan_ip,
    v4_cidr_bits,
    v6_cidr_bits,
)

V6_64 = ((1 << 64) - 1) << 64


def test_ipv4_masked_and_cidr() -> None:
    assert ip_parse_masked("10.0.0.0/24") == (0x0A000000, 0xFFFFFF00)
    assert ip_parse_masked("10.1.0.0/255.255.0.0") == (0x0A010000, 0xFFFF0000)
    assert ip_parse_masked("10.0.0.7") == (0x0A000007, ALL4)
    assert ip_parse_masked("10.0.0.0/0") == (0x0A000000, 0)
    assert ip_parse_masked("10.0.0.1/255.0.255.0") == (0x0A000001, 0xFF00FF00)
    # ovs_scan: blanks may lead each number ("%d" too), "%hhu" wraps to a byte
    assert ip_parse_masked(" 10. 0.0.300/ 24") == (0x0A00002C, 0xFFFFFF00)
    for bad, error in (("10.0.0.0/33", "IPv4 network prefix bits not between 0 and 32, "
                                       "inclusive"),
                       ("10.0.0.0/", "invalid IP address"),
                       ("10.0.0/24", "invalid IP address"),
                       ("10.0.0.0/24x", "invalid IP address"),
                       ("10.0.0.1 10.0.0.2", "invalid IP address"),
                       ("fd00::/64", "invalid IP address")):
        assert ip_parse_masked(bad) == f"{bad}: {error}"
    assert ip_parse_cidr("10.0.0.7/255.255.0.0") == (0x0A000007, 16)
    assert ip_parse_cidr("10.0.0.7/255.0.255.0") == \
        "10.0.0.7/255.0.255.0: CIDR network required"
    # the _len form reads at a position and tells where it stopped; errors name the text
    assert ip_parse_cidr_len("ab 10.0.0.1/8 x", 2) == (0x0A000001, 8, 13)
    assert ip_parse_cidr_len("ab zz", 2) == "ab zz: invalid IP address"
    assert scan_ip("1.2.3.4.5") == (0x01020304, 7)
    assert ip_parse("10.0.0.1") == 0x0A000001
    assert ip_parse("10.0.0.010") is None and ip_parse(" 10.0.0.1") is None  # inet_pton


def test_ipv6_masked_and_cidr() -> None:
    assert ipv6_parse_masked("fd00::/64") == (0xFD00 << 112, V6_64)
    assert ipv6_parse_masked("fd00::/ffff::") == (0xFD00 << 112, 0xFFFF << 112)
    assert ipv6_parse_masked("fd00::1") == ((0xFD00 << 112) | 1, ALL6)
    assert ipv6_parse_masked(" fd00::1") == ((0xFD00 << 112) | 1, ALL6)  # " " in format
    for bad, error in (("fd00::/129", "IPv6 network prefix bits not between 0 and 128, "
                                      "inclusive"),
                       ("fd00::/", "invalid IPv6 address"),
                       ("fd00:::1/64", "invalid IPv6 address"),
                       ("10.0.0.0/24", "invalid IPv6 address"),
                       ("fd00::/64 ", "invalid IPv6 address"),
                       ("fd00::/::zz", "invalid IPv6 address"),
                       ("fd00::/::2::3", "Invalid IPv6 mask")):
        assert ipv6_parse_masked(bad) == f"{bad}: {error}"
    assert ipv6_parse_cidr("fd00::5/ffff:ffff::") == ((0xFD00 << 112) | 5, 32)
    assert ipv6_parse_cidr("fd00::/ffff::1") == "fd00::/ffff::1: IPv6 CIDR network required"
    assert ipv6_parse("fe80::1%eth0") is None  # inet_pton knows no scope id


def test_ip46_parse_cidr() -> None:
    assert ip46_parse_cidr("10.0.0.7/24") == (True, 0x0A000007, 24)
    assert ip46_parse_cidr("fd00::5/64") == (False, 0xFD00 << 112 | 5, 64)
    for bad in ("10.0.0.7/255.0.255.0", "10.0.0.7/33", "10.0.0.7/24 ", "fd00::/129",
                "discard", "", "10.0.0/24"):
        assert ip46_parse_cidr(bad) is None, bad


def test_where_the_copies_disagreed() -> None:
    # "%d" stores the prefix in an int: 2**32 + 16 is 16 (the static routes' copy
    # refused it; corpus 113_lf_static_routes)
    assert ip46_parse_cidr("10.69.0.0/4294967312") == (True, 0x0A450000, 16)
    # ovs_scan never fails on range: a number past 64 bits wraps (the NAT rules' copy
    # refused it; corpus 127_lf_nat_dgp)
    assert ip_parse_masked("172.16.0.18446744073709551716") == (0xAC100064, ALL4)
    # C digits are 0-9 (the static routes' and DHCP copies took any Unicode digit)
    assert ip46_parse_cidr("\u0661\u0660.0.0.0/16") is None
    assert ip_parse_masked("10.0.0.0/\u0662\u0664") == "10.0.0.0/\u0662\u0664: invalid IP address"
    # a leading zero or a wrapped byte is an address here (the ARP resolve copy, on
    # Python's ipaddress, refused both; corpus 127_lf_nat_dgp)
    assert ip_parse_masked("172.16.0.021") == (0xAC100015, ALL4)
    # a snat's logical network may have any mask (the ARP resolve copy wanted a prefix)
    assert ip_parse_masked("10.0.0.0/255.0.255.0") == (0x0A000000, 0xFF00FF00)
    # no trailing blank (the NAT rules' IPv6 copy stripped it)
    assert isinstance(ipv6_parse_masked("fd00::1 "), str)


def test_cidr_bits() -> None:
    assert [cidr_plen(m, 32) for m in (0, 0xFFFFFF00, ALL4, 0xFF00FF00)] == [0, 24, 32, None]
    # ip_count_cidr_bits counts from the lowest set bit, a CIDR mask or not
    assert [v4_cidr_bits(m) for m in (0, 0xFFFFFF00, 0xFFFFFFFF, 0xFF00FF00)] == \
        [0, 24, 32, 24]
    assert v6_cidr_bits(V6_64) == 64
    assert v6_cidr_bits(0xFFF0 << 112) == 12


# Router ports' networks (prefix lengths that share bits and that do not, both families,
# a /0 and host routes) and addresses inside and outside them.
_NETWORKS = ["10.0.0.1/24", "10.0.0.129/25", "10.0.1.1/24", "10.0.0.7/32", "0.0.0.1/0",
             "10.1.0.1/16", "fd00::1/64", "fd00::1:1/112", "fd01::1/48", "::1/0"]
_IPS = ["10.0.0.5", "10.0.0.200", "10.0.1.9", "10.0.0.7", "10.1.2.3", "192.0.2.1",
        "fd00::5", "fd00::1:9", "fd01::9", "2001:db8::1", "not an address", "10.0.0.300"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.lists(st.sampled_from(_NETWORKS), min_size=1,
                                              max_size=3, unique=True)), max_size=6))
def test_member_index_is_find_lrp_member_ip_in_turn(ports: list[list[str] | None]) -> None:
    """`MemberIndex.first` finds what `find_lrp_member_ip` of each port in turn finds:
    the first port holding the address, and the address of its first network that
    does."""
    listed = [(i, None if nets is None else lrp_networks(f"0a:00:00:00:00:{i:02x}", nets))
              for i, nets in enumerate(ports)]
    index = MemberIndex(listed)
    for ip in _IPS:
        walked = next(((i, addr) for i, nets in listed
                       if (addr := find_lrp_member_ip(nets, ip)) is not None), None)
        assert index.first(ip) == walked, ip
