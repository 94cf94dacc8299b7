"""The ARP and ND responder of logical switches (`ls_in_arp_rsp`): replies for the
addresses switch ports own, so that ARP requests and neighbor solicitations for them
never leave the hypervisor, as ovn-northd 23.03 writes them.

Owns every flow of `ls_in_arp_rsp` except the service monitors' source-IP replies
(load balancers' area) and the forwarding groups' VIP replies (L2 area).

Rules kept here (23.03's `build_lswitch_arp_nd_responder_*`):
- Every switch passes what it does not answer (priority 0).
- Requests coming in from a localnet port are never answered here (priority 100): the
  physical network has its own owner of the address, and every chassis would answer.
- A port answers for its own addresses (priority 50, one flow per IPv4 and per IPv6
  address), and lets the owner's own request through unanswered (priority 100, so a
  duplicate-address check of the owner still works). Not answered: external ports
  (their chassis answers), ports with "unknown" addresses (the address may live
  behind them), ports on a `vlan-passthru` switch, and, only with
  `NB_Global options:ignore_lsp_down=false`, VIFs that are down (router ports and
  localports are always up for this). Router-type ports answer for their router
  port's networks, IPv6 with `nd_na_router`; the ND replies take the switch's CoPP
  `nd-na` meter when that meter exists.
- A virtual port answers nothing; its parents' ARP and ND traffic for the virtual IP
  binds it (`bind_vport`), per parent on the same switch, the virtual IP written as
  configured.
- A router-type port with `options:arp_proxy` answers ARP for the proxied IPv4
  addresses (`extract_ip_addresses`: `ports_addresses.ip_addresses`) with its router
  port's MAC (one flow for all of them); skipped whenever
  the port's own replies are skipped for the reasons above.
- Ports are visited in the order 23.03 walks its port hash table: a flow several ports
  ask for in one run (one address on two switches) is one flow, and the first port
  met gives it its stage hint.
- A port's "up" is the value northd writes to NB from its binding (`build.lsp_up`), so
  the flows do not wait for northd's own NB write to come back.
"""

from __future__ import annotations

import ipaddress

from ...ovsdb.hashorder import hmap_order
from ...util.ovshash import hash_name
from ..build.datapaths import smap_bool
from ..build.lsp_up import port_up
from ..build.ports import Port, datapath_keys
from ..build.ports_addresses import ip_addresses
from ..build.walk import PortWalk
from .context import CoppProto, LflowContext
from .stages import Stage
from .table import LflowTable

STAGE = Stage.LS_IN_ARP_RSP
_SOLICITED_NODE = int(ipaddress.IPv6Address("ff02::1:ff00:0"))


def build(ctx: LflowContext, out: LflowTable) -> None:
    """Every flow of this area's stages."""
    switches = ctx.switches()
    for dp in switches:
        with out.owned_by(("dp", dp.key)):
            out.add(dp, STAGE, 0, "1", "next;")
    responder = _Responder(ctx, out)
    scope = ctx.scope
    for port in walk_order(ctx):
        # Every flow here is on the port's own switch.
        if port.is_lsp and (scope is None or port.dp.key in scope):
            with out.owned_by(("port", port.name)):
                responder.port(port)


def walk_order(ctx: LflowContext) -> list[Port]:
    """The ports that build flows (`ctx.scoped_names()`), in the order 23.03 walks its
    port hash table when it builds flows (the names of the existing bindings
    inserted first, then the new ports): where two ports ask for the same flow (one
    address on two switches), the first fixes the flow's stage hint. A partial
    rebuild computes the order of its ports alone (`build.walk.PortWalk`)."""
    cache_key = ("walk_order", ctx.scope, ctx.walked, ctx.focus)
    cached: list[Port] | None = ctx.cache.get(cache_key)
    if cached is None:
        ports = ctx.ports.ports
        within = ctx.scoped_names()
        if within is None:
            existing = ctx.bindings()
            names = [*existing, *(n for n in ports if n not in existing)]
            order = hmap_order((hash_name(n), n) for n in names)
        else:
            order = PortWalk(ctx.sb, ctx.ports, ctx.datapaths).order(
                n for n in within if n in ports)
        cached = ctx.cache[cache_key] = [ports[n] for n in order if n in ports]
    return cached


def solicited_node(addr: ipaddress.IPv6Address) -> ipaddress.IPv6Address:
    """The solicited-node multicast address of `addr` (RFC 4291 2.7.1)."""
    return ipaddress.IPv6Address(_SOLICITED_NODE | (int(addr) & 0xFFFFFF))


def arp_reply(mac: str, ip: str) -> str:
    """The actions that turn an ARP request for `ip` into the reply from `mac`."""
    return (f"eth.dst = eth.src; eth.src = {mac}; arp.op = 2; /* ARP reply */ "
            f"arp.tha = arp.sha; arp.sha = {mac}; arp.tpa = arp.spa; arp.spa = {ip}; "
            f"outport = inport; flags.loopback = 1; output;")


class _Responder:
    """Per-port flows; the run-wide facts they read, computed once."""

    def __init__(self, ctx: LflowContext, out: LflowTable) -> None:
        self.ctx = ctx
        self.out = out
        self.check_up = not smap_bool(ctx.nb_options, "ignore_lsp_down", True)
        self.bindings = ctx.bindings() if self.check_up else {}
        self.dp_keys = datapath_keys(ctx.sb) if self.check_up else {}

    def port(self, port: Port) -> None:
        out = self.out
        dp = port.dp
        if port.type == "localnet":
            out.add(dp, STAGE, 100, f"inport == {port.json_key}", "next;",
                    hint=port.nb, io_port=port.name)
        if port.type == "virtual":
            self.virtual(port)
        elif self.answers(port):
            self.own_addresses(port)
        else:
            return
        self.arp_proxy(port)

    def answers(self, port: Port) -> bool:
        if self.check_up and port.type not in ("router", "localport") and \
                not self.is_up(port):
            return False
        if port.type == "external" or port.has_unknown:
            return False
        return not smap_bool(port.dp.nb.other_config, "vlan-passthru", False)

    def is_up(self, port: Port) -> bool:
        return port_up(port.nb, self.ctx.ports.binding_of(port, self.bindings,
                                                          self.dp_keys))

    def own_addresses(self, port: Port) -> None:
        out, dp = self.out, port.dp
        na = "nd_na_router" if port.type == "router" else "nd_na"
        meter = self.ctx.copp_meter(dp, CoppProto.ND_NA)
        for addrs in port.lsp_addrs:
            mac = addrs.ea_s
            for v4 in addrs.ipv4:
                match = f"arp.tpa == {v4.addr_s} && arp.op == 1"
                out.add(dp, STAGE, 50, match, arp_reply(mac, v4.addr_s), hint=port.nb)
                out.add(dp, STAGE, 100, f"{match} && inport == {port.json_key}",
                        "next;", hint=port.nb, io_port=port.name)
            for v6 in addrs.ipv6:
                ip = v6.addr_s
                match = (f"nd_ns && ip6.dst == {{{ip}, {solicited_node(v6.addr)}}} "
                         f"&& nd.target == {ip}")
                actions = (f"{na} {{ eth.src = {mac}; ip6.src = {ip}; nd.target = {ip}; "
                           f"nd.tll = {mac}; outport = inport; flags.loopback = 1; "
                           f"output; }};")
                out.add(dp, STAGE, 50, match, actions, hint=port.nb, meter=meter)
                out.add(dp, STAGE, 100, f"{match} && inport == {port.json_key}",
                        "next;", hint=port.nb, io_port=port.name)

    def virtual(self, port: Port) -> None:
        vip = port.options.get("virtual-ip")
        parents = port.options.get("virtual-parents")
        if not vip or not parents:
            return
        try:
            if "." in vip:
                ipaddress.IPv4Address(vip)
                v6 = None
            else:
                v6 = ipaddress.IPv6Address(vip)
        except ValueError:
            return
        out, dp = self.out, port.dp
        for name in (p for p in parents.split(",") if p):
            parent = self.ctx.ports.ports.get(name)
            if parent is None or parent.dp.key != dp.key:
                continue
            if v6 is None:
                match = (f'inport == "{name}" && ((arp.op == 1 && arp.spa == {vip} && '
                         f"arp.tpa == {vip}) || (arp.op == 2 && arp.spa == {vip}))")
            else:
                match = (f'inport == "{name}" && ((nd_ns && ip6.dst == '
                         f"{{{vip}, {solicited_node(v6)}}} && nd.target == {vip}) ||"
                         f"(nd_na && nd.target == {vip}))")
            out.add(dp, STAGE, 100, match, f"bind_vport({port.json_key}, inport); next;",
                    hint=parent.nb, io_port=name)

    def arp_proxy(self, port: Port) -> None:
        peer = self.ctx.ports.peer_of(port)
        proxy = port.options.get("arp_proxy")
        if peer is None or peer.networks is None or not proxy:
            return
        found = ip_addresses(proxy)  # IPv6 ones are read but not proxied
        ips = [net.addr_s for net in found.ipv4] if found is not None else []
        if not ips:
            return
        mac = peer.networks.ea_s
        match = "arp.op == 1 && arp.tpa == {" + ",".join(ips) + "}"
        actions = (f"eth.dst = eth.src; eth.src = {mac}; arp.op = 2; /* ARP reply */ "
                   f"arp.tha = arp.sha; arp.sha = {mac}; arp.tpa <-> arp.spa; "
                   f"outport = inport; flags.loopback = 1; output;")
        self.out.add(port.dp, STAGE, 50, match, actions, hint=port.nb)
