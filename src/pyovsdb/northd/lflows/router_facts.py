"""Per-router facts several router pipeline areas read (23.03 computes them into
`struct ovn_datapath` in `init_nat_entries`, `init_router_external_ips`,
`init_lb_for_datapath` and `build_lrouter_lb_ips`): the NAT entries with their
external addresses parsed, the unique SNAT IPs, the force-SNAT addresses, whether the
router is a gateway router, its distributed gateway ports (`router_facts`); apart, its
load balancers' VIPs (`router_vips`).

Rules kept here:
- NAT entries keep the NB `nat` column's order (UUID order, as the C IDL stores a set);
  an entry whose `external_ip` is not exactly one IPv4 or one IPv6 address is left out
  (23.03 warns "Bad ip address ... in nat configuration").
- `snat_ips` lists each SNAT IP once with the SNAT entries that use it, in the order
  23.03 adds them: the `dnat_force_snat_ip` addresses, then `lb_force_snat_ip`'s (unless
  it is `router_ip` on a gateway router), then the snat entries.
- `options:lb_force_snat_ip=router_ip` counts only on a gateway router (`options:chassis`).
- The VIPs are apart because they cost a walk of every load balancer: a load
  balancer's own flows (`lr_lb`) read the router's NAT facts on each of its routers,
  and must not pay for the VIPs of the thousands of others a router may have.
- Pure: computed from the context on first use and cached per router.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from ...idl.row import IdlRow, cached
from ..build.datapaths import Datapath
from ..build.ports import Port
from ..build.ports_addresses import Addresses, ip_address, ip_addresses
from .context import LflowContext, has_lb_vip, ref_rows


@dataclass(frozen=True, slots=True)
class Nat:
    nb: IdlRow
    type: str  # "snat", "dnat", "dnat_and_snat"
    external: Addresses  # exactly one address
    logical_ip: str
    external_mac: str | None
    logical_port: str | None

    @property
    def is_v6(self) -> bool:
        return bool(self.external.ipv6)

    @property
    def external_ip(self) -> str:
        """The external address as 23.03 prints it (`ext_addrs.*_addrs[0].addr_s`)."""
        return self.external.ipv6[0].addr_s if self.is_v6 else self.external.ipv4[0].addr_s

    @property
    def is_distributed(self) -> bool:
        """A dnat_and_snat with a logical port and an external MAC: handled on the
        chassis of that port, not the gateway."""
        return self.type == "dnat_and_snat" and bool(self.logical_port) \
            and bool(self.external_mac)


@dataclass(slots=True)
class RouterFacts:
    nats: list[Nat]
    snat_ips: dict[str, list[Nat]]
    has_distributed_nat: bool
    dnat_force_snat: Addresses | None
    lb_force_snat: Addresses | None
    lb_force_snat_router_ip: bool
    is_gw_router: bool
    l3dgw_ports: list[Port]
    external_ips: frozenset[str]  # the NB `external_ip` strings


@dataclass(frozen=True, slots=True)
class RouterVips:
    """What a router's load balancers (its own, its groups', those lent to it) give it."""

    has_lb_vip: bool  # an own or group load balancer with any NB `vips`
    v4: frozenset[str]  # VIPs
    v6: frozenset[str]
    v4_routable: list[str]  # VIPs of `add_route` load balancers, sorted
    v6_routable: list[str]


def _opt(value: object) -> str | None:
    if isinstance(value, list):
        return str(value[0]) if value else None
    return str(value) if value else None


def parse_nats(dp: Datapath) -> list[Nat]:
    """The router's NAT rules whose external IP is one address, in `nat` order (each
    row parsed once: a row never changes, an update makes another)."""
    nats = (cached(row, "router_facts.nat", _parse_nat) for row in ref_rows(dp.nb.nat))
    return [nat for nat in nats if nat is not None]


def _parse_nat(row: IdlRow) -> Nat | None:
    ext = ip_addresses(row.external_ip)
    if ext is None or len(ext.ipv4) + len(ext.ipv6) != 1:
        return None
    return Nat(nb=row, type=row.type, external=ext, logical_ip=row.logical_ip,
               external_mac=_opt(row.external_mac), logical_port=_opt(row.logical_port))


T = TypeVar("T")


def _per_router(ctx: LflowContext, name: str, dp: Datapath,
                build: Callable[[LflowContext, Datapath], T]) -> T:
    """`build(ctx, dp)`, kept in the context's cache under `name` per router."""
    cache: dict[str, T] = ctx.cache.setdefault(name, {})
    found = cache.get(dp.key)
    if found is None:
        found = cache[dp.key] = build(ctx, dp)
    return found


def router_facts(ctx: LflowContext, dp: Datapath) -> RouterFacts:
    return _per_router(ctx, "router_facts", dp, _build)


def _first(addrs: Addresses | None, v6: bool) -> str | None:
    if addrs is None:
        return None
    nets = addrs.ipv6 if v6 else addrs.ipv4
    return nets[0].addr_s if nets else None


def _build(ctx: LflowContext, dp: Datapath) -> RouterFacts:
    options = dp.nb.options
    nats = parse_nats(dp)
    snat_ips: dict[str, list[Nat]] = {}
    dnat_force = ip_address(options["dnat_force_snat_ip"]) \
        if "dnat_force_snat_ip" in options else None
    for v6 in (False, True):
        ip = _first(dnat_force, v6)
        if ip is not None:
            snat_ips.setdefault(ip, [])
    is_gw = "chassis" in options
    router_ip = options.get("lb_force_snat_ip") == "router_ip" and is_gw
    lb_force = None
    if not router_ip and "lb_force_snat_ip" in options:
        lb_force = ip_address(options["lb_force_snat_ip"])
        for v6 in (False, True):
            ip = _first(lb_force, v6)
            if ip is not None:
                snat_ips.setdefault(ip, [])
    for nat in nats:
        if nat.type == "snat":
            snat_ips.setdefault(nat.external_ip, []).append(nat)
    return RouterFacts(
        nats=nats, snat_ips=snat_ips,
        has_distributed_nat=any(n.is_distributed for n in nats),
        dnat_force_snat=dnat_force, lb_force_snat=lb_force,
        lb_force_snat_router_ip=router_ip, is_gw_router=is_gw,
        l3dgw_ports=list(ctx.ports.l3dgw_ports.get(dp.key, [])),
        external_ips=frozenset(r.external_ip for r in ref_rows(dp.nb.nat)))


def router_vips(ctx: LflowContext, dp: Datapath) -> RouterVips:
    return _per_router(ctx, "router_facts.vips", dp, _build_vips)


def _build_vips(ctx: LflowContext, dp: Datapath) -> RouterVips:
    v4: set[str] = set()
    v6: set[str] = set()
    v4r: set[str] = set()
    v6r: set[str] = set()
    for lb in ctx.lbs.lbs.values():
        if dp.key not in lb.routers:
            continue
        for vip in lb.vips:
            ip = vip.vip.ip_str
            (v6 if vip.vip.family == 6 else v4).add(ip)
            if lb.routable:
                (v6r if vip.vip.family == 6 else v4r).add(ip)
    return RouterVips(has_lb_vip=has_lb_vip(dp.nb), v4=frozenset(v4), v6=frozenset(v6),
                      v4_routable=sorted(v4r), v6_routable=sorted(v6r))

