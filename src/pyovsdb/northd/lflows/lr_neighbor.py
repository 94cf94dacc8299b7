"""Neighbor lookup and learning of the logical router (`lr_in_lookup_neighbor`,
`lr_in_learn_neighbor`), as ovn-northd 23.03 writes them.

Rules kept here (23.03's `build_neigh_learning_flows_for_lrouter` and `_lrouter_port`):
- Every router looks up (`lookup_arp`/`lookup_nd`) what ARP replies, ND NA and ND NS
  claim and learns it (`put_arp`/`put_nd`) unless the MAC_Binding is already known;
  everything else skips learning. The learning flows carry the router's Copp meters
  for `arp`, `nd-na` and `nd-ns`.
- With `options:always_learn_from_arp_request=false` a router learns from an ARP
  request or an ND NS only if it already knows the sender's IP
  (`lookup_arp_ip`/`lookup_nd_ip` into `reg9[3]`), except from requests aimed at its
  own addresses; replies set `reg9[3]` and are always learnt; a gratuitous NA from a
  link-local source to a multicast group is looked up by `ip6.src`.
- ARP requests are looked up per IPv4 network of each router port (a chassisredirect
  port has none of its own), on the gateway chassis only for a distributed gateway
  port. A disabled port still gets them: 23.03 checks `enabled` at admission.
- 23.03 has no `learn_from_arp_request` option; only `always_learn_from_arp_request`
  counts.
"""

from __future__ import annotations

from ..build.datapaths import Datapath, smap_bool
from ..build.ports import Port
from .context import CoppProto, LflowContext
from .stages import Stage
from .table import LflowTable

LOOKUP = Stage.LR_IN_LOOKUP_NEIGHBOR
LEARN = Stage.LR_IN_LEARN_NEIGHBOR
RESULT = "reg9[2]"  # REGBIT_LOOKUP_NEIGHBOR_RESULT
IP_RESULT = "reg9[3]"  # REGBIT_LOOKUP_NEIGHBOR_IP_RESULT


def always_learn(dp: Datapath) -> bool:
    """`options:always_learn_from_arp_request` (default true)."""
    return smap_bool(dp.nb.options, "always_learn_from_arp_request", True)


def on_gateway(port: Port) -> str:
    """`is_chassis_resident` of a distributed gateway port's chassisredirect port."""
    assert port.cr_port is not None
    name = port.cr_port.replace("\\", "\\\\").replace('"', '\\"')
    return f'is_chassis_resident("{name}")'


def build_router(ctx: LflowContext, dp: Datapath, out: LflowTable) -> None:
    """The per-router lookup and learning flows."""
    learn = always_learn(dp)
    ip_set = "" if learn else f"{IP_RESULT} = 1; "
    out.add(dp, LOOKUP, 100, "arp.op == 2",
            f"{RESULT} = lookup_arp(inport, arp.spa, arp.sha); {ip_set}next;")
    out.add(dp, LOOKUP, 100, "nd_na",
            f"{RESULT} = lookup_nd(inport, nd.target, nd.tll); {ip_set}next;")
    if not learn:
        out.add(dp, LOOKUP, 110, "nd_na && ip6.src == fe80::/10 && ip6.dst == ff00::/8",
                f"{RESULT} = lookup_nd(inport, ip6.src, nd.tll); "
                f"{IP_RESULT} = lookup_nd_ip(inport, ip6.src); next;")
    ns_ip = "" if learn else f"{IP_RESULT} = lookup_nd_ip(inport, ip6.src); "
    out.add(dp, LOOKUP, 100, "nd_ns",
            f"{RESULT} = lookup_nd(inport, ip6.src, nd.sll); {ns_ip}next;")
    out.add(dp, LOOKUP, 0, "1", f"{RESULT} = 1; next;")

    skip = f"{RESULT} == 1" + ("" if learn else f" || {IP_RESULT} == 0")
    out.add(dp, LEARN, 100, skip, "next;")
    out.add(dp, LEARN, 90, "arp", "put_arp(inport, arp.spa, arp.sha); next;",
            meter=ctx.copp_meter(dp, CoppProto.ARP))
    out.add(dp, LEARN, 95, "nd_ns && (ip6.src == 0 || nd.sll == 0)", "next;")
    na_meter = ctx.copp_meter(dp, CoppProto.ND_NA)
    out.add(dp, LEARN, 95, "nd_na && nd.tll == 0",
            "put_nd(inport, nd.target, eth.src); next;", meter=na_meter)
    out.add(dp, LEARN, 90, "nd_na", "put_nd(inport, nd.target, nd.tll); next;",
            meter=na_meter)
    out.add(dp, LEARN, 90, "nd_ns", "put_nd(inport, ip6.src, nd.sll); next;",
            meter=ctx.copp_meter(dp, CoppProto.ND_NS))
    out.add(dp, LEARN, 0, "1", ctx.drop_action)


def build_port(ctx: LflowContext, port: Port, out: LflowTable) -> None:
    """The ARP-request lookups of one router port's IPv4 networks."""
    if not port.is_lrp or port.networks is None:
        return
    dp = port.dp
    learn = always_learn(dp)
    resident = "" if port.cr_port is None else f" && {on_gateway(port)}"
    for net in port.networks.ipv4:
        spa = f"inport == {port.json_key} && arp.spa == {net.network.network_address}/" \
              f"{net.plen}"
        if not learn:
            out.add(dp, LOOKUP, 110, f"{spa} && arp.tpa == {net.addr_s} && arp.op == 1"
                    f"{resident}",
                    f"{RESULT} = lookup_arp(inport, arp.spa, arp.sha); {IP_RESULT} = 1; "
                    "next;", hint=port.nb)
        ip_lookup = "" if learn else f"{IP_RESULT} = lookup_arp_ip(inport, arp.spa); "
        out.add(dp, LOOKUP, 100, f"{spa} && arp.op == 1{resident}",
                f"{RESULT} = lookup_arp(inport, arp.spa, arp.sha); {ip_lookup}next;",
                hint=port.nb)
