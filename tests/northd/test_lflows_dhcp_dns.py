"""Native DHCP and DNS on a switch (`lflows.ls_dhcp_dns`, `lflows.ls_dhcp_actions`),
built from in-memory databases: which ports answer DHCP with which options, what the
external ports and the switch's Copp meters change, and where DNS lookups happen."""

from __future__ import annotations

import ipaddress
from typing import Any

from pyovsdb.northd.lflows.ls_dhcp_actions import dhcpv4_actions, dhcpv6_actions
from pyovsdb.northd.lflows.stages import Stage
from pyovsdb.northd.lflows.table import Flow, LflowTable
from pyovsdb.northd.testing import LocalDb, Nb, build_flows

OPTIONS = Stage.LS_IN_DHCP_OPTIONS
RESPONSE = Stage.LS_IN_DHCP_RESPONSE
V4 = {"server_id": "10.0.0.1", "server_mac": "00:00:00:00:ff:01", "lease_time": "3600"}
DISCOVER = ("ip4.src == 0.0.0.0 && ip4.dst == 255.255.255.255 && udp.src == 68 && "
            "udp.dst == 67")
SOLICIT = "ip6.dst == ff02::1:2 && udp.src == 546 && udp.dst == 547"


def stage_flows(table: LflowTable, dp_key: str, stage: Stage) -> list[Flow]:
    return [f for f in table.on(dp_key) if f.key.stage is stage and f.key.priority]


def port_flows(table: LflowTable, name: str) -> list[tuple[Stage, str, str]]:
    """What the owner ("port", name) asked for in the DHCP stages, in table order."""
    return sorted(((k.stage, k.match, k.actions) for k, _ in table.owners.get(("port", name), [])
                   if k.stage in (OPTIONS, RESPONSE)),
                  key=lambda t: (t[0].table, t[1], t[2]))


def dhcp_row(nb: Nb, cidr: str, **options: str) -> str:
    return nb.db.insert("DHCP_Options", cidr=cidr, options=options)


def vif(nb: Nb, ls: str, name: str, *addresses: str, **cols: Any) -> str:
    return nb.lsp_add(ls, name, addresses=list(addresses), **cols)


def test_dhcpv4_options_sorted_with_netmask_and_hostname() -> None:
    offer = ipaddress.IPv4Address("10.0.0.5")
    opts = {**V4, "router": "10.0.0.1", "dns_server": "{8.8.8.8, 8.8.4.4}",
            "hostname": '"row"', "T1": "100"}
    got = dhcpv4_actions("10.0.0.0/24", opts, offer, '"port"')
    assert got is not None
    assert got.options == (
        "reg0[3] = put_dhcp_opts(offerip = 10.0.0.5, T1 = 100, dns_server = {8.8.8.8, "
        '8.8.4.4}, hostname = "port", lease_time = 3600, netmask = 255.255.255.0, '
        "router = 10.0.0.1, server_id = 10.0.0.1); next;")
    assert got.renew_match == "ip4.src == 10.0.0.5 && ip4.dst == {10.0.0.1, 255.255.255.255}"
    assert "eth.src = 00:00:00:00:ff:01; ip4.src = 10.0.0.1;" in got.response
    assert "hostname = \"row\"" in str(dhcpv4_actions("10.0.0.0/24", opts, offer, None))
    # Outside the cidr, or a required option missing: nothing offered.
    assert dhcpv4_actions("10.0.1.0/24", opts, offer, None) is None
    for required in V4:
        assert dhcpv4_actions("10.0.0.0/24", {k: v for k, v in V4.items() if k != required},
                              offer, None) is None


def test_dhcpv4_row_netmask_follows_the_cidr_one() -> None:
    got = dhcpv4_actions("10.0.0.0/24", {**V4, "netmask": "255.255.0.0", "a": "1"},
                         ipaddress.IPv4Address("10.0.0.5"), None)
    assert got is not None
    assert got.options == (
        "reg0[3] = put_dhcp_opts(offerip = 10.0.0.5, a = 1, lease_time = 3600, "
        "netmask = 255.255.255.0, netmask = 255.255.0.0, server_id = 10.0.0.1); next;")


def test_dhcpv6_stateful_and_stateless() -> None:
    offer = ipaddress.IPv6Address("fd00::5")
    opts = {"server_id": "00:00:00:00:ff:02", "dns_server": "{fd00::53}"}
    got = dhcpv6_actions("fd00::/64", opts, offer)
    assert got is not None
    assert got.options == ("reg0[3] = put_dhcpv6_opts(ia_addr = fd00::5, dns_server = "
                           "{fd00::53}, server_id = 00:00:00:00:ff:02); next;")
    assert "ip6.src = fe80::200:ff:fe00:ff02;" in got.response
    stateless = dhcpv6_actions("fd00::/64", {**opts, "dhcpv6_stateless": "True"}, offer)
    assert stateless is not None
    assert stateless.options == ("reg0[3] = put_dhcpv6_opts(dns_server = {fd00::53}, "
                                 "server_id = 00:00:00:00:ff:02); next;")
    assert dhcpv6_actions("fd01::/64", opts, offer) is None
    mapped = dhcpv6_actions("::ffff:10.0.0.0/120", opts, ipaddress.IPv6Address("::ffff:10.0.0.5"))
    assert mapped is not None and mapped.options.startswith(
        "reg0[3] = put_dhcpv6_opts(ia_addr = 10.0.0.5, ")
    assert dhcpv6_actions("fd00::/64", {"server_id": "10.0.0.1"}, offer) is None


def test_port_offers_first_address_in_cidr(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    d = dhcp_row(nb, "10.0.0.0/24", **V4)
    vif(nb, "sw0", "p1", "00:00:00:00:00:01 192.168.0.1 10.0.0.11 10.0.0.12",
        dhcpv4_options=d)
    table = build_flows(nb.db, sb)
    head = 'inport == "p1" && eth.src == 00:00:00:00:00:01 && '
    flows = port_flows(table, "p1")
    assert [(s, m) for s, m, _ in flows] == [
        (OPTIONS, head + DISCOVER),
        (OPTIONS, head + "ip4.src == 10.0.0.11 && ip4.dst == {10.0.0.1, 255.255.255.255} "
                         "&& udp.src == 68 && udp.dst == 67"),
        (RESPONSE, head + "ip4 && udp.src == 68 && udp.dst == 67 && reg0[3]")]
    assert "offerip = 10.0.0.11," in flows[0][2]
    for f in stage_flows(table, sw, OPTIONS) + stage_flows(table, sw, RESPONSE):
        assert f.io_port == "p1" and f.hint == d[:8] and f.key.meter is None


def test_ports_without_dhcp_flows(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    d = dhcp_row(nb, "10.0.0.0/24", **V4)
    vif(nb, "sw0", "off", "00:00:00:00:00:01 10.0.0.1", dhcpv4_options=d, enabled=False)
    vif(nb, "sw0", "rtr", "00:00:00:00:00:02 10.0.0.2", dhcpv4_options=d, type="router")
    vif(nb, "sw0", "far", "00:00:00:00:00:03 10.9.0.3", dhcpv4_options=d)
    vif(nb, "sw0", "none", "00:00:00:00:00:04 10.0.0.4")
    vif(nb, "sw0", "ext", "00:00:00:00:00:05 10.0.0.5", dhcpv4_options=d, type="external")
    table = build_flows(nb.db, sb)
    assert stage_flows(table, sw, OPTIONS) == stage_flows(table, sw, RESPONSE) == []
    assert {(f.key.stage, f.key.match) for f in table.on(sw)
            if f.key.stage.stage_name.startswith(("ls_in_dhcp", "ls_in_dns"))} == {
        (s, "1") for s in (OPTIONS, RESPONSE, Stage.LS_IN_DNS_LOOKUP,
                           Stage.LS_IN_DNS_RESPONSE)}


def test_external_port_answers_through_localnet(nb: Nb, sb: LocalDb) -> None:
    sw = nb.ls_add("sw0")
    d4 = dhcp_row(nb, "10.0.0.0/24", **V4)
    d6 = dhcp_row(nb, "fd00::/64", server_id="00:00:00:00:ff:02")
    vif(nb, "sw0", "ln0", "unknown", type="localnet", options={"network_name": "phys"})
    group = nb.db.insert("HA_Chassis_Group", name="g")
    vif(nb, "sw0", "ext", "00:00:00:00:00:05 10.0.0.5 fd00::5", type="external",
        dhcpv4_options=d4, dhcpv6_options=d6, ha_chassis_group=group)
    table = build_flows(nb.db, sb)
    options = stage_flows(table, sw, OPTIONS)
    assert len(options) == 3 and len(stage_flows(table, sw, RESPONSE)) == 2
    for f in options:
        assert f.key.match.startswith('inport == "ln0" && eth.src == 00:00:00:00:00:05')
        assert f.key.match.endswith(' && is_chassis_resident("ext")')
        assert f.io_port == "ln0"
    v6_response = [f for f in stage_flows(table, sw, RESPONSE) if "ip6" in f.key.match]
    assert v6_response[0].key.match.endswith('is_chassis_resident("ext") && reg0[3]')


def test_copp_meters_and_dns(nb: Nb, sb: LocalDb) -> None:
    nb.meter_add("m1")
    copp = nb.db.insert("Copp", name="c", meters={"dhcpv6-opts": "m1", "dns": "m1",
                                                  "dhcpv4-opts": "missing"})
    dns = nb.db.insert("DNS", records={"vm1.ovn.org": "10.0.0.1"})
    empty = nb.db.insert("DNS", records={})
    sw = nb.ls_add("sw0", copp=copp, dns_records=[dns])
    other = nb.ls_add("sw1", dns_records=[empty])
    d4 = dhcp_row(nb, "10.0.0.0/24", **V4)
    d6 = dhcp_row(nb, "fd00::/64", server_id="00:00:00:00:ff:02")
    vif(nb, "sw0", "p1", "00:00:00:00:00:01 10.0.0.11 fd00::11", dhcpv4_options=d4,
        dhcpv6_options=d6)
    table = build_flows(nb.db, sb)
    meters = {(f.key.stage, "ip6" in f.key.match, f.key.meter)
              for f in stage_flows(table, sw, OPTIONS) + stage_flows(table, sw, RESPONSE)}
    assert meters == {(OPTIONS, False, None), (OPTIONS, True, "m1"),
                      (RESPONSE, False, None), (RESPONSE, True, None)}
    lookup = stage_flows(table, sw, Stage.LS_IN_DNS_LOOKUP)
    assert [(f.key.match, f.key.actions, f.key.meter) for f in lookup] == [
        ("udp.dst == 53", "reg0[4] = dns_lookup(); next;", "m1")]
    assert sorted(f.key.actions.split(";")[1] for f in
                  stage_flows(table, sw, Stage.LS_IN_DNS_RESPONSE)) == [
        " ip4.src <-> ip4.dst", " ip6.src <-> ip6.dst"]
    assert stage_flows(table, other, Stage.LS_IN_DNS_LOOKUP) == []
