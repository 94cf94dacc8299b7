"""The packets `ovn-trace` follows through the logical flows of corpus scripts.

What it owns: per corpus script, the microflows whose traces on our SB must equal the
traces on the real northd's SB (`test_lflows_trace`), built by a few helpers so each
reads as what it is (an ARP request, a DHCP discover, ICMP between two VIFs, a packet
an ACL drops, TCP to a load balancer VIP).

Rules kept here:
- A microflow names its datapath and sets every field the switch pipeline looks at
  (inport, both MACs, addresses, TTL, L4 ports), so `ovn-trace` never has to guess.
- Stateful stages see the connection state a probe asks for (`ct`, one `--ct` per
  `ct_next`). Probes go to VIPs with one backend and set no `lb_dst`: ovn-trace picks
  among several backends at random, and `--lb-dst` is applied already at the
  pre-stateful `ct_lb_mark` (without backends), so the VIP's own flow no longer
  matches. A router's `ct_snat`/`ct_dnat` take a `--ct` too when the packet is not
  tracked yet, so router probes give a few more `new` than they need (the rest go
  unused). ovn-trace picks an ECMP `select` member at random: a probe through an ECMP
  route names the member (`select_id`). On a gateway router ovn-trace stops at a
  plain `ct_snat;` (23.03's ovn-trace returns there without tracing on), so a packet to
  a gateway router's NAT address proves only the stages up to unsnat: probe what comes
  before it (SNAT outwards, TTL expiry) or an LB VIP (which skips unsnat) instead.
  23.03's ovn-trace aborts on `nd_na_router` (an assertion on the action's type), so
  no probe sends a router port a neighbor solicitation.
- A probe avoids packets that two flows of one table and priority with different
  actions both match: ovn-trace (like OpenFlow) picks either, in an order that changes
  from run to run (23.03's `ls_out_pre_lb` has `eth.mcast` and `ip && outport ==
  ROUTER_PORT` at 110: multicast IP to a router port is such a packet).
- The addresses are the scripts' own: a script changed must be checked here too (a
  probe of a port that no longer exists traces an implicit drop on both sides and
  proves nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

BROADCAST = "ff:ff:ff:ff:ff:ff"


@dataclass(frozen=True)
class Probe:
    """One `ovn-trace` run: `ovn-trace [--ct=STATE...] [--lb-dst=IP:PORT]
    [--select-id=ID] DP 'FLOW'`."""

    name: str
    datapath: str
    microflow: str
    ct: tuple[str, ...] = ()
    lb_dst: str | None = None
    select_id: int | None = None

    def args(self) -> list[str]:
        out = [f"--ct={state}" for state in self.ct]
        if self.lb_dst:
            out.append(f"--lb-dst={self.lb_dst}")
        if self.select_id is not None:
            out.append(f"--select-id={self.select_id}")
        return [*out, self.datapath, self.microflow]


@dataclass(frozen=True)
class Vif:
    """Where a packet comes from or goes to: a port's name, MAC and IP (either family)."""

    port: str
    mac: str
    ip: str = ""

    def inport(self) -> str:
        return f'inport == "{self.port}" && eth.src == {self.mac}'


def _v6(ip: str) -> bool:
    return ":" in ip


def arp_request(src: Vif, target: str) -> str:
    return (f"{src.inport()} && eth.dst == {BROADCAST} && arp.op == 1 && "
            f"arp.sha == {src.mac} && arp.spa == {src.ip} && "
            f"arp.tha == 00:00:00:00:00:00 && arp.tpa == {target}")


def nd_solicit(src: Vif, target: str) -> str:
    """An IPv6 neighbor solicitation for `target` (to its solicited-node group)."""
    tail = target.split(":")[-1].rjust(4, "0")
    group = f"ff02::1:ff{tail[-6:-4] if len(tail) > 4 else '00'}:{tail[-4:]}"
    mcast_mac = f"33:33:ff:00:{tail[-4:-2]}:{tail[-2:]}"
    return (f"{src.inport()} && eth.dst == {mcast_mac} && ip6.src == {src.ip} && "
            f"ip6.dst == {group} && ip.ttl == 255 && icmp6.type == 135 && "
            f"icmp6.code == 0 && nd.target == {target} && nd.sll == {src.mac}")


def icmp_echo(src: Vif, dst: Vif) -> str:
    if _v6(src.ip):
        return (f"{src.inport()} && eth.dst == {dst.mac} && ip6.src == {src.ip} && "
                f"ip6.dst == {dst.ip} && ip.ttl == 64 && icmp6.type == 128 && "
                "icmp6.code == 0")
    return (f"{src.inport()} && eth.dst == {dst.mac} && ip4.src == {src.ip} && "
            f"ip4.dst == {dst.ip} && ip.ttl == 64 && icmp4.type == 8 && icmp4.code == 0")


def l4(src: Vif, dst_mac: str, dst_ip: str, proto: str, dport: int,
       sport: int = 40000) -> str:
    """A TCP, UDP or SCTP packet (a SYN for TCP) to `dst_ip:dport`."""
    fam = "ip6" if _v6(dst_ip) else "ip4"
    flags = " && tcp.flags == 0x2" if proto == "tcp" else ""
    return (f"{src.inport()} && eth.dst == {dst_mac} && {fam}.src == {src.ip} && "
            f"{fam}.dst == {dst_ip} && ip.ttl == 64 && {proto}.src == {sport} && "
            f"{proto}.dst == {dport}{flags}")


def ttl(microflow: str, hops: int) -> str:
    """`microflow` with another IP TTL (a TTL of 1 expires in the first router)."""
    return microflow.replace("ip.ttl == 64", f"ip.ttl == {hops}")


def dhcp_discover(src: Vif) -> str:
    return (f"{src.inport()} && eth.dst == {BROADCAST} && ip4.src == 0.0.0.0 && "
            "ip4.dst == 255.255.255.255 && ip.ttl == 64 && udp.src == 68 && udp.dst == 67")


def dhcpv6_solicit(src: Vif, link_local: str) -> str:
    return (f"{src.inport()} && eth.dst == 33:33:00:01:00:02 && ip6.src == {link_local} && "
            "ip6.dst == ff02::1:2 && ip.ttl == 1 && udp.src == 546 && udp.dst == 547")


def dns_query(src: Vif, dst_mac: str, server: str) -> str:
    return l4(src, dst_mac, server, "udp", 53)


def igmp_report(src: Vif) -> str:
    """An IGMPv3 membership report (to 224.0.0.22)."""
    return (f"{src.inport()} && eth.dst == 01:00:5e:00:00:16 && ip4.src == {src.ip} && "
            "ip4.dst == 224.0.0.22 && ip.ttl == 1 && ip.proto == 2")


def mcast_data(src: Vif, group: str, mac: str) -> str:
    return (f"{src.inport()} && eth.dst == {mac} && ip4.src == {src.ip} && "
            f"ip4.dst == {group} && ip.ttl == 64 && udp.src == 40000 && udp.dst == 5000")


# -- the probes of each corpus script -------------------------------------------------

_P1 = Vif("p1", "00:00:00:00:00:11", "10.0.0.11")
_P4 = Vif("p4", "00:00:00:00:00:04", "10.0.0.4")
_B1 = Vif("b1", "00:00:00:00:01:01", "10.0.1.1")
_B2 = Vif("b2", "00:00:00:00:01:02", "10.0.1.2")
_Q1 = Vif("p1", "00:00:00:00:00:01", "10.0.0.1")
_Q2 = Vif("p2", "00:00:00:00:00:02", "10.0.0.2")
_W1 = Vif("w1", "00:00:00:00:01:01", "10.0.1.1")
_D1 = Vif("d1", "00:00:00:00:01:02", "10.0.1.2")
_P1A = Vif("p1", "00:00:00:00:00:01", "10.0.0.1")
_VM0 = Vif("vm0", "00:00:00:00:00:01", "10.0.0.10")
_VM1 = Vif("vm1", "00:00:00:00:01:01", "10.0.0.11")
_VM2 = Vif("vm2", "00:00:00:00:01:02", "10.0.0.12")
_E2 = Vif("vm2", "00:00:00:00:00:02", "10.0.0.12")
_R0 = Vif("vm0", "00:00:00:00:00:10", "10.0.0.10")
_R1 = Vif("vm1", "00:00:00:00:01:10", "10.0.1.10")
_R2 = Vif("vm2", "00:00:00:00:00:20", "10.0.0.20")
_R_LR0 = "00:00:00:00:ff:01"  # lr0-sw0, the first hop of sw0's VIFs
_EXT = Vif("ln-public", "00:00:00:00:ee:01", "198.51.100.7")
_GR_EXT = Vif("gr0-ext", "00:00:00:00:ee:02", "172.16.0.200")
_GR126_EXT = Vif("gr0-ext", "00:00:00:00:ee:02", "172.16.0.99")
_NEW = ("new", "new")  # one --ct per ct_next: ingress, then egress
_EST = ("est", "est")

TRACES: dict[str, tuple[Probe, ...]] = {
    "01_switch_vif": (
        Probe("arp-for-vif", "sw0", arp_request(_P4, "10.0.0.11")),
        Probe("arp-flood", "sw0", arp_request(_P1, "10.0.0.99")),
        Probe("icmp-to-unknown", "sw0", icmp_echo(_P1, Vif("p3", "00:00:00:00:00:33",
                                                             "10.0.0.33"))),
        Probe("spoofed-source", "sw0", icmp_echo(Vif("p1", "00:00:00:00:00:99", "10.0.0.11"),
                                                 Vif("p3", "00:00:00:00:00:33", "10.0.0.33"))),
    ),
    "02_router_ports": (
        Probe("arp-for-router", "sw0", arp_request(Vif("vm0", "00:00:00:00:00:01",
                                                       "10.0.0.10"), "10.0.0.1")),
        Probe("icmp-to-vif", "sw1", icmp_echo(Vif("vm1", "00:00:00:00:00:02", "10.0.1.10"),
                                              Vif("sw1-lr0", "00:00:00:00:00:09",
                                                  "10.0.1.99"))),
    ),
    "03_localnet": (
        Probe("vif-to-localnet", "public", icmp_echo(
            Vif("vm0", "00:00:00:00:00:01", "172.16.0.10"),
            Vif("x", "00:00:00:00:00:99", "172.16.0.99"))),
        Probe("localnet-arp-for-vif", "public", arp_request(
            Vif("ln-public", "00:00:00:00:00:99", "172.16.0.99"), "172.16.0.10")),
    ),
    "04_localport": (
        Probe("vif-to-localport", "sw0", icmp_echo(
            Vif("vm0", "00:00:00:00:00:01", "10.0.0.10"),
            Vif("meta", "00:00:00:00:00:fe", "10.0.0.2"))),
        Probe("localport-arp-flood", "sw0", arp_request(
            Vif("meta", "00:00:00:00:00:fe", "10.0.0.2"), "10.0.0.99")),
    ),
    "07_external": (
        Probe("external-arp-for-vif", "sw0", arp_request(
            Vif("ln0", "00:00:00:00:00:0e", "10.0.0.14"), "10.0.0.15")),
    ),
    "08_virtual": (
        Probe("arp-for-virtual-ip", "sw0", arp_request(
            Vif("vm1", "00:00:00:00:00:01", "10.0.0.11"), "10.0.0.100")),
        Probe("icmp-between-vifs", "sw0", icmp_echo(
            Vif("vm1", "00:00:00:00:00:01", "10.0.0.11"),
            Vif("vm2", "00:00:00:00:00:02", "10.0.0.12"))),
    ),
    "15_dhcp": (
        Probe("dhcp-discover", "sw0", dhcp_discover(Vif("p1", "00:00:00:00:00:01"))),
        Probe("dhcpv6-solicit", "sw0", dhcpv6_solicit(Vif("p1", "00:00:00:00:00:01"),
                                                      "fe80::200:ff:fe00:1")),
        Probe("dhcp-discover-no-options", "sw0",
              dhcp_discover(Vif("p2", "00:00:00:00:00:02"))),
    ),
    "16_dns": (
        Probe("dns-query", "sw1", dns_query(Vif("p2", "00:00:00:00:00:02", "10.0.1.10"),
                                            "00:00:00:00:00:99", "10.0.1.1")),
        Probe("dns-query-no-records", "sw0", dns_query(
            Vif("p1", "00:00:00:00:00:01", "10.0.0.10"), "00:00:00:00:00:99", "10.0.0.1")),
    ),
    "20_lb_health_check": (
        Probe("tcp-to-vip", "sw0", l4(Vif("be1", "00:00:00:00:00:01", "10.0.0.10"),
                                      "00:00:00:00:00:98", "10.0.0.100", "tcp", 80),
              ct=_NEW),
        Probe("arp-for-backend", "sw0", arp_request(
            Vif("be1", "00:00:00:00:00:01", "10.0.0.10"), "10.0.0.11")),
    ),
    "21_port_groups": (
        Probe("icmp-between-vifs", "sw0", icmp_echo(
            Vif("p1", "00:00:00:00:00:01", "10.0.0.1"),
            Vif("p2", "00:00:00:00:00:02", "10.0.0.2"))),
        Probe("icmp6-to-unknown", "sw0", icmp_echo(
            Vif("p1", "00:00:00:00:00:01", "fd00::1"),
            Vif("x", "00:00:00:00:00:99", "fd00::99"))),
    ),
    "24_multicast": (
        Probe("igmp-report", "sw0", igmp_report(Vif("p1", "00:00:00:00:00:01", "10.0.0.1"))),
    ),
    "44_igmp_groups": (
        Probe("mcast-to-group", "sw0", mcast_data(Vif("p1", "00:00:00:00:00:01", "10.0.0.1"),
                                                  "239.1.1.2", "01:00:5e:01:01:02")),
    ),
    "55_lf_acl_stateless_switch": (
        Probe("acl-allow", "sw1", icmp_echo(_B1, _B2)),
        Probe("acl-drop-ssh", "sw1", l4(_B1, _B2.mac, _B2.ip, "tcp", 22)),
        Probe("acl-reject-udp", "sw1", l4(_B2, _B1.mac, _B1.ip, "udp", 53)),
        Probe("acl-reject-icmp6", "sw1", icmp_echo(Vif("b1", _B1.mac, "fd00:1::1"),
                                                   Vif("x", "00:00:00:00:01:99", "fd00:1::9"))),
        Probe("no-acls", "sw0", arp_request(Vif("a1", "00:00:00:00:00:01", "10.0.0.1"),
                                            "10.0.0.9")),
    ),
    "56_lf_acl_stateful_switch": (
        Probe("acl-allow-new", "sw0", l4(_Q1, _Q2.mac, _Q2.ip, "udp", 7), ct=_NEW),
        Probe("acl-drop-icmp", "sw0", icmp_echo(_Q2, _Q1), ct=_NEW),
        Probe("acl-reject-smtp", "sw0", l4(_Q2, _Q1.mac, _Q1.ip, "tcp", 25), ct=_NEW),
        Probe("acl-established", "sw0", l4(_Q1, _Q2.mac, _Q2.ip, "tcp", 80), ct=_EST),
        Probe("acl-drop-ip6", "sw0", icmp_echo(Vif("p2", _Q2.mac, "fd00::2"),
                                               Vif("p1", _Q1.mac, "fd00::1")), ct=_NEW),
        Probe("dhcp-discover", "sw0", dhcp_discover(Vif("p1", _Q1.mac))),
    ),
    "58_lf_acl_port_groups": (
        Probe("pg-acl-allow", "sw1", icmp_echo(_W1, _D1), ct=_NEW),
        Probe("pg-acl-drop", "sw1", icmp_echo(_D1, _W1), ct=_NEW),
        Probe("pg-acl-other-switch", "sw0", icmp_echo(
            Vif("w0", "00:00:00:00:00:01", "10.0.0.1"),
            Vif("x", "00:00:00:00:00:99", "10.0.0.99")), ct=_NEW),
    ),
    "60_lf_acl_after_lb": (
        Probe("after-lb-drop", "sw0", icmp_echo(_P1A, Vif("p2", "00:00:00:00:00:02",
                                                          "10.0.0.2")), ct=_NEW),
        Probe("after-lb-allow", "sw0", l4(_P1A, "00:00:00:00:00:02", "10.0.0.2", "tcp", 80),
              ct=_NEW),
        Probe("ip-to-vip-hairpin", "sw1", icmp_echo(
            Vif("q1", "00:00:00:00:01:01", "10.0.1.1"),
            Vif("x", "00:00:00:00:01:99", "10.0.1.100")), ct=_NEW),
    ),
    "62_lf_lb_vips": (
        Probe("udp-to-vip-hairpin", "sw0", l4(_VM1, "00:00:00:00:ff:01", "10.0.0.102",
                                              "udp", 53), ct=_NEW),
        Probe("udp-to-vip", "sw0", l4(_VM2, "00:00:00:00:ff:01", "10.0.0.102", "udp", 53),
              ct=_NEW),
        Probe("sctp-to-vip", "sw0", l4(_VM1, "00:00:00:00:ff:01", "10.0.0.103", "sctp",
                                       3868), ct=_NEW),
        Probe("tcp6-to-vip-without-port", "sw0", l4(
            Vif("vm2", _VM2.mac, "fd00::12"), "00:00:00:00:ff:01", "fd00::101", "tcp", 8000),
              ct=_NEW),
        Probe("icmp-between-vifs", "sw0", icmp_echo(_VM1, _VM2), ct=_NEW),
    ),
    "69_lf_arp_nd_addresses": (
        Probe("arp-for-second-ip", "sw0", arp_request(Vif("p1", "00:00:00:00:00:11",
                                                          "10.0.0.11"), "10.0.0.102")),
        Probe("nd-for-vif", "sw0", nd_solicit(Vif("p1", "00:00:00:00:00:11", "fd00::11"),
                                              "fd00::2")),
        Probe("arp-for-localport", "sw0", arp_request(Vif("p4", "00:00:00:00:00:04",
                                                          "10.0.0.4"), "10.0.0.200")),
    ),
    "73_lf_dhcpv4": (
        Probe("dhcp-discover", "sw0", dhcp_discover(Vif("p1", "00:00:00:00:01:01"))),
        Probe("dhcp-discover-hostname", "sw0", dhcp_discover(Vif("p2", "00:00:00:00:01:02"))),
        Probe("dhcp-discover-disabled", "sw0", dhcp_discover(Vif("p5", "00:00:00:00:01:05"))),
        Probe("dhcp-discover-masked-cidr", "sw0",
              dhcp_discover(Vif("p9", "00:00:00:00:01:09"))),
    ),
    "74_lf_dhcpv6": (
        Probe("dhcpv6-stateful", "sw0", dhcpv6_solicit(Vif("p1", "00:00:00:00:02:01"),
                                                       "fe80::200:ff:fe00:201")),
        Probe("dhcpv6-stateless", "sw0", dhcpv6_solicit(Vif("p2", "00:00:00:00:02:02"),
                                                        "fe80::200:ff:fe00:202")),
    ),
    "75_lf_dns_copp": (
        Probe("dns-query", "sw0", dns_query(Vif("p1", "00:00:00:00:03:01", "10.0.0.11"),
                                            "00:00:00:00:ff:01", "10.0.0.1")),
        Probe("dhcp-discover-metered", "sw0", dhcp_discover(Vif("p1", "00:00:00:00:03:01"))),
    ),
    "77_lf_l2_addresses": (
        Probe("icmp-to-second-mac", "sw0", icmp_echo(
            Vif("vm2", "0a:00:00:00:00:02", "10.0.0.12"),
            Vif("vm1", "00:00:00:00:01:01", "10.0.1.11"))),
        Probe("icmp-to-unknown", "sw0", icmp_echo(
            Vif("vm1", "00:00:00:00:00:01", "10.0.0.11"),
            Vif("x", "00:00:00:00:00:99", "10.0.0.99"))),
        Probe("icmp-to-disabled", "sw0", icmp_echo(
            Vif("vm1", "00:00:00:00:00:01", "10.0.0.11"),
            Vif("vm6", "00:00:00:00:00:06", "10.0.0.16"))),
    ),
    "78_lf_l2_router_nat_lb": (
        Probe("arp-for-nat-ip", "sw1", arp_request(Vif("sw1-lr0", "00:00:00:00:ff:02",
                                                       "20.0.0.1"), "20.0.0.110")),
        Probe("arp-for-router", "sw0", arp_request(_VM0, "10.0.0.1")),
        Probe("tcp-to-router-vip", "sw0", l4(_VM0, "00:00:00:00:ff:01", "10.0.0.200",
                                             "tcp", 8080)),
    ),
    "80_lf_l2_igmp_groups": (
        Probe("mcast-to-learnt-group", "sw0", mcast_data(
            Vif("p2", "00:00:00:00:00:02", "10.0.0.2"), "239.1.1.1", "01:00:5e:01:01:01")),
        Probe("mcast-over-table-size", "sw1", mcast_data(
            Vif("q1", "00:00:00:00:01:01", "10.1.0.1"), "239.2.2.2", "01:00:5e:02:02:02")),
        Probe("mcast-unregistered-flooded", "sw2", mcast_data(
            Vif("r1", "00:00:00:00:02:01", "10.2.0.1"), "239.9.9.9", "01:00:5e:09:09:09")),
    ),
    "82_lf_l2_fwd_group": (
        Probe("arp-for-group-vip", "sw1", arp_request(
            Vif("q1", "00:00:00:00:01:01", "10.1.0.1"), "10.1.0.100")),
        Probe("to-group-mac", "sw1", icmp_echo(Vif("q1", "00:00:00:00:01:01", "10.1.0.1"),
                                               Vif("x", "00:00:00:00:02:00", "10.1.0.100"))),
    ),
    "84_lf_every_feature": (
        Probe("dhcp-discover", "sw0", dhcp_discover(Vif("vm1", "00:00:00:00:00:01"))),
        Probe("arp-for-vif", "sw0", arp_request(_E2, "10.0.0.13")),
        Probe("acl-reject-udp", "sw0", l4(_E2, "00:00:00:00:00:03", "10.0.0.13", "udp",
                                          9999), ct=_NEW),
        Probe("pg-acl-drop", "sw0", icmp_echo(_E2, Vif("vm3", "00:00:00:00:00:03",
                                                       "10.0.0.13")), ct=_NEW),
        Probe("udp-to-vip", "sw0", l4(_E2, "00:00:00:00:00:03", "10.0.0.101", "udp", 53),
              ct=_NEW),
        Probe("tcp-to-vip-without-backends", "sw0", l4(_E2, "00:00:00:00:00:03",
                                                       "10.0.0.102", "tcp", 443), ct=_NEW),
        Probe("dns-query", "sw0", dns_query(_E2, "00:00:00:00:ff:01", "10.0.0.1")),
    ),
    "88_lf_provider_dual_stack": (
        Probe("icmp6-allowed-by-pg", "sw0", icmp_echo(
            Vif("a1", "00:00:00:00:00:a1", "fd00::11"),
            Vif("a2", "00:00:00:00:00:a2", "fd00::12")), ct=_NEW),
        Probe("dhcpv6-solicit", "sw1", dhcpv6_solicit(Vif("b1", "00:00:00:00:00:b1"),
                                                      "fe80::200:ff:fe00:b1")),
        Probe("arp-for-fwd-group-vip", "sw2", arp_request(
            Vif("c1", "00:00:00:00:00:c1", "10.0.2.11"), "10.0.2.100")),
        Probe("nd-for-vif", "sw2", nd_solicit(Vif("c1", "00:00:00:00:00:c1", "fd00:2::11"),
                                              "fd00:2::12")),
    ),
    "61_lf_qos": (
        Probe("dscp-marked", "sw0", icmp_echo(Vif("p1", "00:00:00:00:00:01", "10.0.0.1"),
                                              Vif("x", "00:00:00:00:00:99", "10.0.0.99"))),
        Probe("dscp-and-meter", "sw0", l4(Vif("p1", "00:00:00:00:00:01", "10.0.0.1"),
                                          "00:00:00:00:00:99", "10.0.0.99", "udp", 53)),
        Probe("acl-reject-metered", "sw0", l4(Vif("p1", "00:00:00:00:00:01", "10.0.0.1"),
                                              "00:00:00:00:00:99", "10.0.0.99", "tcp", 23)),
    ),
    "71_lf_arp_nd_virtual": (
        Probe("arp-for-virtual-ip", "sw0", arp_request(
            Vif("vm2", "00:00:00:00:00:02", "10.0.0.2"), "10.0.0.100")),
        Probe("nd-for-virtual-ip", "sw0", nd_solicit(
            Vif("vm1", "00:00:00:00:00:01", "fd00::1"), "fd00::100")),
    ),
    "83_lf_shared_port_groups": (
        Probe("pg-acl-db-from-web", "sw0", l4(
            Vif("web0", "00:00:00:00:00:01", "10.0.0.11"), "00:00:00:00:00:02", "10.0.0.12",
            "tcp", 5432), ct=_NEW),
        Probe("pg-acl-db-drop", "sw1", icmp_echo(
            Vif("web1", "00:00:00:00:01:01", "10.0.1.11"),
            Vif("db1", "00:00:00:00:01:02", "10.0.1.12")), ct=_NEW),
        Probe("ip-to-vip", "sw2", icmp_echo(Vif("web2", "00:00:00:00:02:01", "10.0.2.11"),
                                            Vif("x", "00:00:00:00:02:99", "10.0.100.3")),
              ct=_NEW),
    ),
    "86_lf_chassis_features": (
        Probe("acl-allow-related", "sw0", l4(Vif("vm1", "00:00:00:00:00:01", "10.0.0.11"),
                                             "00:00:00:00:00:02", "10.0.0.12", "tcp", 80),
              ct=_NEW),
        Probe("acl-drop-ssh", "sw0", l4(Vif("vm1", "00:00:00:00:00:01", "10.0.0.11"),
                                        "00:00:00:00:00:02", "10.0.0.12", "tcp", 22),
              ct=_NEW),
        Probe("related", "sw0", icmp_echo(Vif("vm2", "00:00:00:00:00:02", "10.0.0.12"),
                                          Vif("vm1", "00:00:00:00:00:01", "10.0.0.11")),
              ct=("rel", "rel")),
    ),
    "89_lf_features_removed": (
        Probe("icmp-between-vifs", "sw0", icmp_echo(
            Vif("vm1", "00:00:00:00:00:01", "10.0.0.11"),
            Vif("vm2", "00:00:00:00:00:02", "10.0.0.12"))),
        Probe("dhcp-discover-no-options", "sw0", dhcp_discover(Vif("vm1", "00:00:00:00:00:01"))),
    ),
    "50_lf_port_sec_vifs": (
        Probe("from-disabled-port", "sw0", icmp_echo(
            Vif("p5", "00:00:00:00:00:05", "10.0.0.5"),
            Vif("p1", "00:00:00:00:00:01", "10.0.0.1"))),
        Probe("to-unknown-learnt", "sw0", icmp_echo(
            Vif("p1", "00:00:00:00:00:01", "10.0.0.1"),
            Vif("x", "00:00:00:00:00:99", "10.0.0.99"))),
        Probe("vlan-passthru", "sw2", icmp_echo(
            Vif("r1", "00:00:00:00:02:01", "10.0.2.1"),
            Vif("x", "00:00:00:00:02:99", "10.0.2.99"))),
    ),
    "52_lf_vtep": (
        Probe("from-vtep", "sw0", icmp_echo(Vif("vtep1", "00:00:00:00:00:51", "10.0.0.51"),
                                            Vif("vm0", "00:00:00:00:00:01", "10.0.0.10"))),
        Probe("from-disabled-vtep", "sw0", icmp_echo(
            Vif("vtep2", "00:00:00:00:00:52", "10.0.0.52"),
            Vif("vm0", "00:00:00:00:00:01", "10.0.0.10"))),
    ),
    "53_lf_external_router": (
        Probe("external-arp-for-router", "sw0", arp_request(
            Vif("ln0", "00:00:00:00:00:0e", "10.0.0.14"), "10.0.0.1")),
        Probe("vif-arp-for-external", "sw1", arp_request(
            Vif("vm1", "00:00:00:00:01:01", "10.0.1.1"), "10.0.1.99")),
    ),
    "54_lf_debug_drop": (
        Probe("from-disabled-port", "sw0", icmp_echo(
            Vif("p2", "00:00:00:00:00:02", "10.0.0.2"),
            Vif("p1", "00:00:00:00:00:01", "10.0.0.1"))),
        Probe("to-unknown", "sw0", icmp_echo(Vif("p1", "00:00:00:00:00:01", "10.0.0.1"),
                                             Vif("x", "00:00:00:00:00:99", "10.0.0.99"))),
    ),
    "142_lf_trace_routers": (
        Probe("east-west", "sw0", icmp_echo(_R0, Vif("vm1", _R_LR0, "10.0.1.10"))),
        Probe("east-west-back", "sw1", icmp_echo(_R1, Vif("vm0", "00:00:00:00:ff:02",
                                                          "10.0.0.10"))),
        Probe("snat-out", "sw0", l4(_R0, _R_LR0, "198.51.100.7", "tcp", 443), ct=_NEW * 4),
        Probe("floating-ip-out", "sw0", icmp_echo(_R2, Vif("x", _R_LR0, "198.51.100.7")),
              ct=_NEW * 4),
        Probe("floating-ip-in", "public", icmp_echo(_EXT, Vif("x", "00:00:20:20:12:13",
                                                              "172.16.0.110")),
              ct=_NEW * 4),
        Probe("reroute-policy", "sw1", icmp_echo(_R1, Vif("x", "00:00:00:00:ff:02",
                                                          "192.0.2.9"))),
        Probe("ttl-expired", "sw0", ttl(icmp_echo(_R0, Vif("vm1", _R_LR0, "10.0.1.10")),
                                        1)),
        Probe("arp-for-router", "sw1", arp_request(_R1, "10.0.1.1")),
        Probe("east-west6", "sw0", icmp_echo(Vif("vm0", _R0.mac, "fd00::10"),
                                             Vif("vm1", _R_LR0, "fd01::10"))),
        Probe("hop-limit-expired6", "sw0", ttl(icmp_echo(Vif("vm0", _R0.mac, "fd00::10"),
                                                         Vif("vm1", _R_LR0, "fd01::10")), 1)),
    ),
    "140_lf_lr_lb_dgp": (
        Probe("tcp-to-vip-on-nat-ip", "public", l4(
            Vif("ln-public", "00:00:00:00:ee:09", "172.16.0.9"), "00:00:20:20:12:13",
            "172.16.0.50", "tcp", 443), ct=_NEW * 4),
        Probe("udp-to-skip-snat-vip", "public", l4(
            Vif("ln-public", "00:00:00:00:ee:09", "172.16.0.9"), "00:00:20:20:12:13",
            "172.16.0.102", "udp", 8080), ct=_NEW * 4),
        Probe("tcp-to-reject-vip", "public", l4(
            Vif("ln-public", "00:00:00:00:ee:09", "172.16.0.9"), "00:00:20:20:12:13",
            "172.16.0.103", "tcp", 80), ct=_NEW * 4),
    ),
    "135_lf_lr_lb_gw_router": (
        Probe("udp-to-gw-router-vip", "gr0", l4(_GR_EXT, "00:00:00:00:ff:02",
                                               "172.16.0.100", "udp", 53), ct=_NEW * 4),
        Probe("tcp-to-vip-on-nat-ip", "gr0", l4(_GR_EXT, "00:00:00:00:ff:02",
                                               "172.16.0.50", "tcp", 443), ct=_NEW * 4),
    ),
    "116_lf_policies": (
        Probe("policy-drop", "lr0", icmp_echo(Vif("lr0-sw0", "00:00:00:00:00:05",
                                                  "10.0.0.5"),
                                              Vif("x", "00:00:00:00:ff:01", "10.1.0.99"))),
        Probe("policy-reroute-pkt-mark", "lr0", icmp_echo(
            Vif("lr0-sw0", "00:00:00:00:00:12", "10.0.0.12"),
            Vif("x", "00:00:00:00:ff:01", "10.1.0.77"))),
    ),
    "126_lf_nat_gateway_router": (
        Probe("snat-out", "gr0", l4(Vif("gr0-join", "00:00:00:00:ee:03", "100.64.1.7"),
                                    "00:00:00:00:01:01", "172.16.0.99", "udp", 53),
              ct=_NEW * 4),
        Probe("ttl-expired", "gr0", ttl(icmp_echo(_GR126_EXT, Vif(
            "x", "00:00:00:00:01:02", "100.64.0.9")), 1)),
    ),
    "115_lf_ecmp_routes": (
        Probe("ecmp-symmetric-member-2", "lr0", icmp_echo(
            Vif("lr0-sw1", "00:00:00:00:01:50", "10.1.0.50"),
            Vif("x", "00:00:00:00:ff:02", "10.200.0.5")), select_id=2, ct=_NEW * 4),
        Probe("ecmp6-member-1", "lr0", icmp_echo(
            Vif("lr0-sw0", "00:00:00:00:00:50", "fd00::50"),
            Vif("x", "00:00:00:00:ff:01", "2001:db8:77::1")), select_id=1),
        Probe("discard-route", "lr0", icmp_echo(
            Vif("lr0-sw1", "00:00:00:00:01:50", "10.1.0.50"),
            Vif("x", "00:00:00:00:ff:02", "10.99.0.5")), select_id=1),
    ),
    "10_gateway_chassis": (
        Probe("distributed-floating-ip-out", "sw0", l4(
            Vif("sw0-vm", "00:00:00:00:00:01", "10.0.0.10"), "00:00:00:00:ff:01",
            "172.168.0.7", "tcp", 80), ct=_NEW * 4),
        Probe("distributed-floating-ip-in", "public", icmp_echo(
            Vif("ln-public", "00:00:00:00:ee:07", "172.168.0.7"),
            Vif("x", "00:00:00:00:aa:01", "172.168.0.110")), ct=_NEW * 4),
        Probe("arp-for-snat-ip", "public", arp_request(
            Vif("ln-public", "00:00:00:00:ee:07", "172.168.0.7"), "172.168.0.100")),
    ),
}
