"""IPAM: the `dynamic` addresses of logical switch ports (NB
`Logical_Switch_Port.dynamic_addresses`), as OVN 23.03 assigns them (`northd/ipam.c`,
`build_ipam` and its helpers in `northd.c`).

Rules kept here:
- A switch does IPAM when it has `other_config:subnet` (IPv4), `ipv6_prefix` (a /64),
  or, with neither, `mac_only=true`. On other switches every port's dynamic_addresses
  is cleared.
- Taken before anything is assigned: every static MAC of every port (and router port),
  each switch's static IPv4 addresses in its subnet, the router port addresses on a
  switch with a subnet (but the subnet's first address, always taken), the
  `exclude_ips` ("IP" and "IP..IP" ranges), and every dynamic address kept.
- A port's one "dynamic" address ("dynamic", "MAC dynamic", "dynamic IP", "dynamic
  IP6", "dynamic IP IP6"; a second one is ignored) keeps its current dynamic_addresses
  where they still fit, else gets new ones: the lowest free IPv4 of the subnet (never
  its last address), a MAC of the prefix whose suffix starts from the IPv4's low 24
  bits, the EUI-64 of the MAC in the prefix. Ports with a router peer get nothing.
- All kept addresses are taken before any new one is assigned, switch by switch in
  `DatapathsData` order and port by name (23.03: hash and UUID order).
- MACs are taken once across all switches; IPv4 addresses per switch.
- The MAC prefix is `NB_Global options:mac_prefix` (three hex bytes); where it is
  missing or zero the caller's (the daemon picks one at random and writes it back, as
  23.03 does); without either no MAC is assigned this run.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..desired import DesiredDb
from ..diagnostics import (
    ASSIGNED_IPV4,
    ASSIGNED_IPV6,
    ASSIGNED_MAC,
    BAD_EXCLUDE_IPS,
    BAD_IPV6_PREFIX,
    BAD_IPV6_PREFIX_ERROR,
    BAD_IPV6_PREFIX_LEN,
    BAD_SUBNET,
    DUPLICATE_IP,
    DUPLICATE_MAC,
    MORE_THAN_ONE_DYNAMIC,
    SUBNET_EXHAUSTED,
    report,
)
from .datapaths import Datapath, DatapathsData, smap_bool
from .ports import Port, PortsData
from .ports_addresses import (
    ALL4,
    Addresses,
    cidr_plen,
    extract_lsp_addresses,
    format_ipv6,
    format_mac,
    ip_parse_masked,
    ipv6_parse,
    ipv6_parse_masked,
    is_dynamic,
    lsp_addresses,
    parse_mac,
    v6_cidr_bits,
)

MAC_ADDR_SPACE = 0xFFFFFF
NB_LSP_COLUMNS = ("dynamic_addresses",)

_PREFIX = re.compile(r"\s*([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})")


def parse_mac_prefix(text: str | None) -> int | None:
    """The prefix as the top 24 bits of a MAC, None where unset or zero."""
    if not text:
        return None
    m = _PREFIX.match(text)
    if m is None:
        return None
    value = (int(m[1], 16) << 40) | (int(m[2], 16) << 32) | (int(m[3], 16) << 24)
    return value or None


def nb_mac_prefix(nb: Mapping[str, ReplicaTable]) -> int | None:
    table = nb.get("NB_Global")
    if table is None:
        return None
    for row in sorted(table.rows.values(), key=lambda r: r.uuid):
        return parse_mac_prefix(row.options.get("mac_prefix"))
    return None


@dataclass(slots=True)
class SwitchIpam:
    """`struct ipam_info` of one switch (`id`: its NB UUID, which 23.03's IPAM
    warnings name; empty: report nothing)."""

    start: int = 0  # first IPv4 of the subnet after the network address
    total: int = 0  # ~mask: addresses from `start` on, the last one never assigned
    taken: set[int] = field(default_factory=set)  # offsets from `start`
    has_ipv4: bool = False
    ipv6_prefix: ipaddress.IPv6Address | None = None
    mac_only: bool = False
    id: str = ""

    @property
    def active(self) -> bool:
        return self.has_ipv4 or self.ipv6_prefix is not None or self.mac_only

    def insert(self, ip: int) -> None:
        """`ipam_insert_ip`."""
        if self.has_ipv4 and self.start <= ip < self.start + self.total:
            index = ip - self.start
            if index in self.taken:
                if self.id:
                    report(DUPLICATE_IP, self.id, ipaddress.IPv4Address(ip))
                return
            self.taken.add(index)

    def unused(self) -> int:
        if not self.has_ipv4:
            return 0
        for index in range(self.total - 1):
            if index not in self.taken:
                return self.start + index
        if self.id:
            report(SUBNET_EXHAUSTED, self.id)
        return 0


def switch_ipam(config: Mapping[str, str], uuid: str = "") -> SwitchIpam:
    """The switch's IPAM from its `other_config`; with its `uuid`, what is wrong with
    that configuration is reported, as 23.03 does when it joins the datapaths."""
    info = SwitchIpam(id=uuid)
    subnet = config.get("subnet")
    if subnet is not None:
        _init_ipv4(info, subnet, config.get("exclude_ips"))
    prefix = config.get("ipv6_prefix")
    if prefix is not None:
        info.ipv6_prefix = _ipv6_prefix(prefix, uuid)
    if subnet is None and prefix is None:
        info.mac_only = smap_bool(config, "mac_only", False)
    return info


def _init_ipv4(info: SwitchIpam, subnet: str, exclude: str | None) -> None:
    parsed = ip_parse_masked(subnet)
    if isinstance(parsed, str) or parsed[1] == ALL4 or cidr_plen(parsed[1], 32) is None:
        if info.id:
            report(BAD_SUBNET, info.id, subnet)
        return
    ip, mask = parsed
    info.has_ipv4 = True
    info.start = (ip & mask) + 1
    info.total = ~mask & 0xFFFFFFFF
    info.taken.add(0)
    if exclude:
        error = _exclude(info, exclude)
        if error is not None and info.id:
            report(BAD_EXCLUDE_IPS, info.id, error)


# The tokens of `exclude_ips` as OVN's lexer reads them: "..", a number-like word
# (digits and letters, ':' before any '.', '.' not doubled), a masked one ("A/B"), an
# identifier, or one other character.
_LEX = re.compile(r"\.\.|[0-9][0-9A-Za-z:]*(?:\.(?!\.)[0-9A-Za-z]*)*(?:/\S*)?"
                  r"|[A-Za-z_][0-9A-Za-z_.]*|\S")


def _exclude(info: SwitchIpam, text: str) -> str | None:
    """`init_ipam_ipv4`'s walk of `exclude_ips` ("IP" and "IP..IP"): marks what is in
    the subnet; the lexer's error (None if none). As 23.03, an error stops the walk,
    but a range outside the subnet only records one."""
    tokens = _LEX.findall(text)
    error: str | None = None
    i = 0
    while i < len(tokens):
        first = _address(tokens[i])
        if isinstance(first, str):
            return error or first.format(what="expecting address")
        end = first + 1
        i += 1
        if i < len(tokens) and tokens[i] == "..":
            last = _address(tokens[i + 1]) if i + 1 < len(tokens) else \
                "Syntax error at end of input {what}."
            if isinstance(last, str):
                return error or last.format(what="expecting address range")
            end = last + 1
            i += 2
        lo = max(info.start, first)
        hi = min(info.start + info.total, end)
        if hi > lo:
            info.taken.update(range(lo - info.start, hi - info.start))
        elif error is None:
            error = "excluded addresses not in subnet"
    return error


def _address(token: str) -> int | str:
    """A lexer token as an IPv4 address of `exclude_ips` (a decimal integer counts as
    one), or the error text (`{what}` to fill)."""
    if token[0].isdigit():
        if "/" in token:
            return f"Syntax error at `{token}' {{what}}."
        if token.isdigit():
            if token[0] == "0" and len(token) > 1:
                return "Decimal constants must not have leading zeros."
            return int(token) & 0xFFFFFFFF
        try:
            return int(ipaddress.IPv4Address(token))
        except ValueError:
            return "Invalid numeric constant."
    if token == "..":
        return "Syntax error at `..' {what}."
    return f"Syntax error at `{token}' {{what}}."


def _ipv6_prefix(text: str, uuid: str = "") -> ipaddress.IPv6Address | None:
    """`init_ipam_ipv6_prefix`: a /64 (or a bare address), its host half cleared."""
    if "/" in text:
        parsed = ipv6_parse_masked(text)
        if isinstance(parsed, str):
            if uuid:
                report(BAD_IPV6_PREFIX_ERROR, uuid, text, parsed)
            return None
        if v6_cidr_bits(parsed[1]) != 64:
            if uuid:
                report(BAD_IPV6_PREFIX_LEN, uuid, text)
            return None
        addr = parsed[0]
    else:
        found = ipv6_parse(text)
        if found is None:
            if uuid:
                report(BAD_IPV6_PREFIX, uuid, text)
            return None
        addr = found
    return ipaddress.IPv6Address(addr & ~((1 << 64) - 1))


def eui64(mac: int, prefix: ipaddress.IPv6Address) -> ipaddress.IPv6Address:
    """`in6_generate_eui64`."""
    hi, lo = mac >> 24, mac & 0xFFFFFF
    iid = ((hi ^ 0x020000) << 40) | (0xFFFE << 24) | lo
    return ipaddress.IPv6Address(int(prefix) | iid)


@dataclass(slots=True)
class _Update:
    port: Port
    spec: str
    current: Addresses | None
    mac: str = "none"  # none / static / dynamic
    ipv4: str = "none"  # none / remove / static / dynamic
    ipv6: str = "none"
    static_mac: int = 0
    static_ip: int = 0
    static_ipv6: ipaddress.IPv6Address | None = None


class Ipam:
    """The IPAM state of one build (the MACs taken, each switch's addresses)."""

    def __init__(self, prefix: int | None,
                 taken: Callable[[int], bool] | None = None) -> None:
        self.prefix = prefix
        self.macs: set[int] = set()
        self.switches: dict[str, SwitchIpam] = {}
        self.taken = taken  # (a scoped plan: MACs held by ports it does not walk)

    def insert_mac(self, mac: int, check: bool = True) -> None:
        """`ipam_insert_mac`: a MAC of the prefix is taken; `check` reports one
        already taken."""
        if self.prefix is None or (mac ^ self.prefix) >> 24:
            return
        if check and mac in self.macs:
            report(DUPLICATE_MAC, format_mac(mac))
            return
        self.macs.add(mac)

    def unused_mac(self, ip4: int) -> int | None:
        if self.prefix is None:
            return None
        base = ip4 & MAC_ADDR_SPACE
        for i in range(MAC_ADDR_SPACE - 1):
            mac = self.prefix | (((base + i) % (MAC_ADDR_SPACE - 1)) + 1)
            if mac not in self.macs and (self.taken is None or not self.taken(mac)):
                return mac
        return None


def _spec_parts(spec: str) -> tuple[int | None, int | None, ipaddress.IPv6Address | None, bool]:
    """(static MAC, static IPv4, static IPv6, IPv6 named) of a dynamic address spec."""
    words = spec.split(" ")
    if len(words) == 2 and words[1] == "dynamic":
        return parse_mac(words[0]), None, None, False
    ip4: int | None = None
    ip6: ipaddress.IPv6Address | None = None
    named6 = False
    for w in words[1:]:
        try:
            ip = ipaddress.ip_address(w)
        except ValueError:
            named6 = True  # scanned as an IPv6 string but not one: "dynamic"
            continue
        if isinstance(ip, ipaddress.IPv4Address):
            ip4 = int(ip)
        else:
            ip6, named6 = ip, True
    return None, ip4, ip6, named6


def _check(update: _Update, info: SwitchIpam, ipam: Ipam) -> bool:
    """`dynamic_addresses_check_for_updates`: does anything need a new value?"""
    cur = update.current
    assert cur is not None
    spec = update.spec
    mac_s, ip4_s, ip6_s, named6 = _spec_parts(spec)
    # MAC
    if mac_s is not None:
        if mac_s != cur.mac:
            update.mac, update.static_mac = "static", mac_s
    elif ipam.prefix is not None and (cur.mac ^ ipam.prefix) >> 24:
        update.mac = "dynamic"
    # IPv4
    if not info.has_ipv4:
        update.ipv4 = "remove" if cur.ipv4 else "none"
    elif not cur.ipv4:
        update.ipv4 = "dynamic"
    else:
        ip4 = int(cur.ipv4[0].addr)
        index = ip4 - info.start
        if ip4 < info.start or index >= info.total - 1 or index in info.taken:
            update.ipv4 = "dynamic"
        elif ip4_s is not None:
            new_index = ip4_s - info.start
            if ip4_s < info.start or new_index > info.total or new_index in info.taken:
                update.ipv4 = "dynamic"
            elif ip4_s != ip4:
                update.ipv4, update.static_ip = "static", ip4_s
    # IPv6
    if info.ipv6_prefix is None:
        update.ipv6 = "remove" if cur.ipv6 else "none"
    elif not cur.ipv6 or mac_s is not None:
        update.ipv6 = "dynamic"
    elif named6:
        prefix = int(info.ipv6_prefix)
        if ip6_s is None or int(ip6_s) & prefix != prefix:
            update.ipv6 = "dynamic"
        elif ip6_s != cur.ipv6[0].addr:
            update.ipv6, update.static_ipv6 = "static", ip6_s
    elif update.mac != "none":
        update.ipv6 = "dynamic"
    return (update.mac, update.ipv4, update.ipv6) != ("none", "none", "none")


def _plan_new(update: _Update, info: SwitchIpam) -> None:
    """`set_dynamic_updates`: a port without dynamic addresses yet."""
    mac_s, ip4_s, ip6_s, _ = _spec_parts(update.spec)
    if mac_s is not None:
        update.mac, update.static_mac = "static", mac_s
    else:
        update.mac = "dynamic"
    if ip4_s is not None:
        update.ipv4, update.static_ip = "static", ip4_s
    else:
        update.ipv4 = "dynamic" if info.has_ipv4 else "none"
    if ip6_s is not None:
        update.ipv6, update.static_ipv6 = "static", ip6_s
    else:
        update.ipv6 = "dynamic" if info.ipv6_prefix is not None else "none"


def _assign(update: _Update, info: SwitchIpam, ipam: Ipam) -> str | None:
    """`update_dynamic_addresses`: the new dynamic_addresses string."""
    cur = update.current
    ip4 = 0
    if update.ipv4 == "none":
        ip4 = int(cur.ipv4[0].addr) if cur is not None and cur.ipv4 else 0
    elif update.ipv4 == "static":
        ip4 = update.static_ip
    elif update.ipv4 == "dynamic":
        ip4 = info.unused()
        report(ASSIGNED_IPV4, ipaddress.IPv4Address(ip4), update.port.name)
    if update.mac == "none":
        assert cur is not None
        mac: int | None = cur.mac
    elif update.mac == "static":
        mac = update.static_mac
    else:
        mac = ipam.unused_mac(ip4)
        if mac is None:
            return None  # no prefix yet (or the space is exhausted)
        report(ASSIGNED_MAC, format_mac(mac), update.port.name)
    assert mac is not None
    ip6: ipaddress.IPv6Address | None = None
    if update.ipv6 == "none":
        ip6 = cur.ipv6[0].addr if cur is not None and cur.ipv6 else None
    elif update.ipv6 == "static":
        ip6 = update.static_ipv6
    elif update.ipv6 == "dynamic" and info.ipv6_prefix is not None:
        ip6 = eui64(mac, info.ipv6_prefix)
        report(ASSIGNED_IPV6, format_ipv6(ip6), update.port.name)
    ipam.insert_mac(mac)
    parts = [format_mac(mac)]
    if ip4:
        info.insert(ip4)
        parts.append(str(ipaddress.IPv4Address(ip4)))
    if ip6 is not None and int(ip6):
        parts.append(str(ip6))
    return " ".join(parts)


def _take_static(port: Port, ports: PortsData, ipam: Ipam) -> None:
    """`ipam_add_port_addresses`."""
    info = ipam.switches.get(port.dp.key)
    if port.is_lsp:
        for addrs in port.lsp_addrs[:port.n_static_addrs]:
            ipam.insert_mac(addrs.mac)
            if info is not None and info.has_ipv4:
                for net in addrs.ipv4:
                    info.insert(int(net.addr))
        return
    if port.networks is None:
        return
    ipam.insert_mac(port.networks.mac)
    peer = ports.peer_of(port)
    if peer is None or not peer.is_lsp or "subnet" not in peer.dp.nb.other_config:
        return
    peer_info = ipam.switches.get(peer.dp.key)
    if peer_info is None:
        return
    for net in port.networks.ipv4:
        if int(net.addr) != peer_info.start:
            peer_info.insert(int(net.addr))


@dataclass
class IpamPlan:
    """What IPAM decides for one build, touching no port: the dynamic_addresses of
    every port it looked at (None: cleared), by port name, and the dynamic addresses
    each port adds to its own (kept or assigned), parsed."""

    result: dict[str, str | None] = field(default_factory=dict)
    added: dict[str, Addresses] = field(default_factory=dict)


@dataclass
class IpamScope:
    """A plan over some switches alone (IPv4 addresses are per switch): `ports`, the
    ports it walks (the switches' own and the router ports peered with them);
    `taken`, whether a MAC is held by any other port."""

    switches: Collection[str]
    ports: list[Port]
    taken: Callable[[int], bool]


def plan_ipam(datapaths: DatapathsData, ports: PortsData, mac_prefix: int | None,
              scope: IpamScope | None = None) -> IpamPlan:
    """Every port's dynamic addresses as a build assigns them (the ports' own
    addresses, `lsp_addrs`, are read up to their static ones alone); with a `scope`,
    those of its switches' ports, every other port keeping what it has."""
    ipam = Ipam(mac_prefix, scope.taken if scope is not None else None)
    switches = [dp for dp in datapaths.switches.values()
                if scope is None or dp.key in scope.switches]
    for dp in switches:
        ipam.switches[dp.key] = switch_ipam(dp.nb.other_config, dp.key)
    active = {key for key, info in ipam.switches.items() if info.active}
    for port in ports.ports.values() if scope is None else scope.ports:
        if port.is_lsp and port.dp.key not in active:
            # (on a switch without IPAM only its MACs of the prefix are taken: the
            # common case, without a call per port)
            if mac_prefix is not None:
                for addrs in port.lsp_addrs[:port.n_static_addrs]:
                    if not (addrs.mac ^ mac_prefix) >> 24:
                        ipam.insert_mac(addrs.mac)
            continue
        _take_static(port, ports, ipam)
    plan = IpamPlan()
    updates: list[tuple[_Update, SwitchIpam]] = []
    for dp in switches:
        info = ipam.switches[dp.key]
        for port in ports.of_datapath(dp.key):
            if not port.is_lsp:
                continue
            if dp.key not in active:  # (without IPAM: only a write-back to clear)
                if port.nb.value("dynamic_addresses"):
                    plan.result[port.name] = None
                continue
            _collect(port, dp, info, ipam, updates, plan)
    for update, info in updates:
        value = _assign(update, info, ipam)
        if value is None:
            cur = update.port.nb.dynamic_addresses
            plan.result[update.port.name] = cur
            continue
        plan.result[update.port.name] = value
        parsed = lsp_addresses(value)
        if parsed is not None:
            plan.added[update.port.name] = parsed
    return plan


def build_ipam(datapaths: DatapathsData, ports: PortsData, nb: DesiredDb,
               mac_prefix: int | None) -> dict[str, str | None]:
    """Assign dynamic addresses; the dynamic_addresses of every port IPAM looked at
    (None: cleared), by port name. Writes the NB values into `nb`."""
    plan = plan_ipam(datapaths, ports, mac_prefix)
    for name, parsed in plan.added.items():
        ports.ports[name].lsp_addrs.append(parsed)
    table = nb.table("Logical_Switch_Port", NB_LSP_COLUMNS, owned=False)
    for name, value in plan.result.items():
        port = ports.ports[name]
        table.set(port.nb.uuid, dynamic_addresses=[value] if value is not None else [])
    return plan.result


def _collect(port: Port, dp: Datapath, info: SwitchIpam, ipam: Ipam,
             updates: list[tuple[_Update, SwitchIpam]], plan: IpamPlan) -> None:
    """A port on a switch whose IPAM is active (`plan_ipam` clears the others')."""
    lsp: IdlRow = port.nb
    current_s = lsp.dynamic_addresses
    if port.peer is not None:
        return
    specs = [a for a in lsp.addresses if is_dynamic(a)]
    if not specs:
        if current_s is not None:
            plan.result[port.name] = None
        return
    for _ in specs[1:]:
        report(MORE_THAN_ONE_DYNAMIC, port.name)
    update = _Update(port, specs[0],
                     extract_lsp_addresses(current_s) if current_s else None)
    if update.current is not None:
        changed = _check(update, info, ipam)
        if update.mac == "none":
            ipam.insert_mac(update.current.mac, check=False)
        if update.ipv4 == "none" and update.current.ipv4:
            info.insert(int(update.current.ipv4[0].addr))
        if changed:
            updates.append((update, info))
        else:
            plan.result[port.name] = current_s
            plan.added[port.name] = update.current
    else:
        _plan_new(update, info)
        updates.append((update, info))
