"""IPv6 router advertisements of logical routers: the router solicitation responder of
`lr_in_nd_ra_options` and `lr_in_nd_ra_response`, as ovn-northd 23.03 writes them
(`build_ND_RA_flows_for_lrouter` and `_port`).

Rules kept here:
- Every router passes what is not a solicitation it answers (priority 0, both stages).
- A router port answers router solicitations only when it faces a switch (a switch
  port of type router names it, and its own `peer` column is empty) and its
  `ipv6_ra_configs:address_mode` is `slaac`, `dhcpv6_stateful` or `dhcpv6_stateless`.
  Without a global IPv6 network to advertise (link-local ones do not count) it writes
  nothing at all.
- `put_nd_ra_opts` carries the options as configured, in 23.03's order: the address
  mode and the port's MAC; `mtu` only when it reads (as `atoi` reads it) as 1280 or
  more (IPv6's minimum); `router_preference` whenever it is not exactly "MEDIUM" (not
  checked further: ovn-controller reads it); `rdnss`, `dnssl`, `route_info`; then one
  `prefix` per network outside fe80::/64 (23.03's `in6_is_lla`; another fe80::/10
  network is advertised), the network address with its length. The flow takes
  the router's Copp `nd-ra-opts` meter.
- The response turns the advertisement back to the solicitor from the port's MAC and
  its link-local address (derived from the MAC, as 23.03 derives it again here).
- The periodic advertisements (`send_periodic` and the intervals) are port binding
  options, not flows: the ports area writes them.
"""

from __future__ import annotations

from ...util.cnum import atoi
from ..build.datapaths import Datapath
from ..build.ports import Port
from ..build.ports_addresses import format_ipv6, lla
from .context import CoppProto, LflowContext
from .stages import Stage
from .table import LflowTable

OPTIONS = Stage.LR_IN_ND_RA_OPTIONS
RESPONSE = Stage.LR_IN_ND_RA_RESPONSE
ADDRESS_MODES = ("slaac", "dhcpv6_stateful", "dhcpv6_stateless")
MIN_IPV6_MTU = 1280  # RFC 2460


def build_router(dp: Datapath, out: LflowTable) -> None:
    out.add(dp, OPTIONS, 0, "1", "next;")
    out.add(dp, RESPONSE, 0, "1", "next;")


def _is_lla(value: int) -> bool:
    """`in6_is_lla`: in fe80::/64 (not all of fe80::/10)."""
    return value >> 64 == 0xFE80 << 48


def build_port(ctx: LflowContext, port: Port, out: LflowTable) -> None:
    if not port.is_lrp or port.nb.peer or port.peer is None or port.networks is None:
        return
    configs: dict[str, str] = port.nb.ipv6_ra_configs
    mode = configs.get("address_mode")
    if mode not in ADDRESS_MODES:
        return
    networks = port.networks
    prefixes = [f"{format_ipv6(net.network.network_address)}/{net.plen}"
                for net in networks.ipv6 if not _is_lla(int(net.network.network_address))]
    if not prefixes:
        return
    dp = port.dp
    key = port.json_key
    actions = f'reg0[5] = put_nd_ra_opts(addr_mode = "{mode}", slla = {networks.ea_s}'
    mtu = atoi(configs["mtu"]) if "mtu" in configs else 0
    if mtu >= MIN_IPV6_MTU:
        actions += f", mtu = {mtu}"
    preference = configs.get("router_preference", "MEDIUM")
    if preference != "MEDIUM":
        actions += f', router_preference = "{preference}"'
    if "rdnss" in configs:
        actions += f", rdnss = {configs['rdnss']}"
    if "dnssl" in configs:
        actions += f', dnssl = "{configs["dnssl"]}"'
    if "route_info" in configs:
        actions += f', route_info = "{configs["route_info"]}"'
    actions += "".join(f", prefix = {p}" for p in prefixes) + "); next;"
    out.add(dp, OPTIONS, 50, f"inport == {key} && ip6.dst == ff02::2 && nd_rs", actions,
            hint=port.nb, meter=ctx.copp_meter(dp, CoppProto.ND_RA_OPTS))
    out.add(dp, RESPONSE, 50,
            f"inport == {key} && ip6.dst == ff02::2 && nd_ra && reg0[5]",
            f"eth.dst = eth.src; eth.src = {networks.ea_s}; ip6.dst = ip6.src; "
            f"ip6.src = {format_ipv6(lla(networks.mac))}; outport = inport; "
            f"flags.loopback = 1; output;", hint=port.nb)
