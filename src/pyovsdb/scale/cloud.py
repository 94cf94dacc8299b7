"""An OpenStack-like cloud as Neutron's ML2/OVN driver writes it to the Northbound,
after ovn-heater's `OpenStackCloud` (cms/openstack/openstack.py).

Rules kept here:
- Pure: operations are JSON values; names, addresses and MACs are functions of the
  project and VM numbers (no randomness), distinct up to 4000 projects of 250 VMs.
- One external network for the cloud: a switch with a metadata port (`localport`) and
  a provider port (`localnet` on `physnet1`).
- A project is what Neutron writes for it, one transaction per API call: its router;
  its internal network (a switch with a metadata port) and subnet (`DHCP_Options`);
  its default security group (a port group and Neutron's four default rules, where the
  remote-group rules name the address set northd derives from the port group); the
  router's interface on the network; the router's gateway on the external network
  (a router port with three `Gateway_Chassis`, the switch side with `nat-addresses`,
  a default route, SNAT of the network).
- A VM is a port of the internal network (addresses, port security, DHCP options,
  `requested-chassis`, in the security group), one transaction; its floating IP is a
  `dnat_and_snat` of the router, one transaction.
"""

from __future__ import annotations

import uuid
from typing import Any

from .topology import add_refs, chassis_name, insert_op, node_name, smap

EXT_NET = "neutron-ext-net"
EXT_GATEWAY = "172.16.0.1"
GATEWAYS = 3  # gateway chassis per router port (ovn-heater's n_chassis_per_gw_lrp)
Ops = list[dict[str, Any]]


def _id(kind: int, n: int) -> str:
    return str(uuid.UUID(int=(0x5ca1e << 100) | (kind << 64) | n))


def _ip(offset: int) -> str:
    """An address of 172.16.0.0/12, the external network."""
    a = 0xAC100000 + offset
    return f"{a >> 24}.{a >> 16 & 255}.{a >> 8 & 255}.{a & 255}"


def _mac(kind: int, n: int) -> str:
    return f"fa:16:3e:{kind & 255:02x}:{n >> 8 & 255:02x}:{n & 255:02x}"


def router_name(p: int) -> str:
    return f"neutron-{_id(1, p)}"


def network_name(p: int) -> str:
    return f"neutron-{_id(2, p)}"


def security_group(p: int) -> str:
    return f"pg_{_id(3, p)}".replace("-", "_")


def vm_port(p: int, v: int) -> str:
    return f"lp-{p}-{v}"


def subnet(p: int) -> tuple[str, str]:
    """The project network's prefix (its first three octets) and CIDR."""
    prefix = f"10.{p >> 8 & 255}.{p & 255}"
    return prefix, f"{prefix}.0/24"


def vm_ip(p: int, v: int) -> str:
    return f"{subnet(p)[0]}.{10 + v}"


def floating_ip(p: int, v: int) -> str:
    return _ip(0x10000 + p * 256 + v)


def external_network_ops() -> Ops:
    return [
        insert_op("Logical_Switch_Port", "meta", {
            "name": _id(0, 1), "type": "localport", "addresses": _mac(0, 1)}),
        insert_op("Logical_Switch_Port", "provnet", {
            "name": f"provnet-{_id(0, 2)}", "type": "localnet",
            "addresses": ["set", ["unknown"]],
            "options": smap({"mcast_flood": "false", "mcast_flood_reports": "true",
                             "network_name": "physnet1"})}),
        insert_op("Logical_Switch", "ext", {
            "name": EXT_NET, "ports": ["set", [["named-uuid", "meta"],
                                               ["named-uuid", "provnet"]]],
            "other_config": smap({"mcast_flood_unregistered": "false",
                                  "mcast_snoop": "false", "vlan-passthru": "false"}),
            "external_ids": smap({"neutron:mtu": "1500",
                                  "neutron:network_name": "ext_net"})}),
    ]


def router_ops(p: int) -> Ops:
    return [insert_op("Logical_Router", "lr", {
        "name": router_name(p),
        "options": smap({"always_learn_from_arp_request": "false",
                         "dynamic_neigh_routers": "true"}),
        "external_ids": smap({"neutron:router_name": f"router-{p}",
                              "neutron:revision_number": "1"})})]


def network_ops(p: int) -> Ops:
    prefix, _ = subnet(p)
    return [
        insert_op("Logical_Switch_Port", "meta", {
            "name": _id(4, p), "type": "localport",
            "addresses": f"{_mac(4, p)} {prefix}.2",
            "external_ids": smap({"neutron:device_owner": "network:distributed"})}),
        insert_op("Logical_Switch", "ls", {
            "name": network_name(p), "ports": ["set", [["named-uuid", "meta"]]],
            "other_config": smap({"mcast_flood_unregistered": "false",
                                  "mcast_snoop": "false", "vlan-passthru": "false"}),
            "external_ids": smap({"neutron:mtu": "1442",
                                  "neutron:network_name": f"int_net_{p}"})}),
    ]


def subnet_ops(p: int) -> Ops:
    prefix, cidr = subnet(p)
    gw = f"{prefix}.1"
    return [insert_op("DHCP_Options", "dhcp", {
        "cidr": cidr,
        "options": smap({"classless_static_route":
                         f"{{169.254.169.254/32,{prefix}.2, 0.0.0.0/0,{gw}}}",
                         "dns_server": "{1.1.1.1}", "lease_time": "43200", "mtu": "1442",
                         "router": gw, "server_id": gw, "server_mac": _mac(5, p)}),
        "external_ids": smap({"subnet_id": _id(5, p)})})]


def security_group_ops(p: int) -> Ops:
    pg = security_group(p)
    rules = [("from-lport", f"inport == @{pg} && ip4"),
             ("from-lport", f"inport == @{pg} && ip6"),
             ("to-lport", f"outport == @{pg} && ip4 && ip4.src == ${pg}_ip4"),
             ("to-lport", f"outport == @{pg} && ip6 && ip6.src == ${pg}_ip6")]
    acls = [insert_op("ACL", f"acl{i}", {"direction": d, "priority": 1002, "match": m,
                                        "action": "allow-related"})
            for i, (d, m) in enumerate(rules)]
    return [*acls, insert_op("Port_Group", "pg", {
        "name": pg, "acls": ["set", [["named-uuid", f"acl{i}"] for i in range(len(rules))]],
        "external_ids": smap({"neutron:security_group_id": _id(3, p)})})]


def interface_ops(p: int) -> Ops:
    """The router's port on the project network, both sides."""
    prefix, _ = subnet(p)
    lrp = f"lrp-{_id(6, p)}"
    return [
        insert_op("Logical_Router_Port", "lrp", {
            "name": lrp, "mac": _mac(6, p), "networks": ["set", [f"{prefix}.1/24"]]}),
        add_refs("Logical_Router", router_name(p), "ports", ["lrp"]),
        insert_op("Logical_Switch_Port", "lsp", {
            "name": _id(6, p), "type": "router", "addresses": "router",
            "options": smap({"router-port": lrp})}),
        add_refs("Logical_Switch", network_name(p), "ports", ["lsp"]),
    ]


def gateway_ops(p: int, nodes: int) -> Ops:
    """The router's gateway on the external network: its port on GATEWAYS chassis
    (by priority), the external switch's side, the default route, SNAT."""
    lrp = f"lrp-{_id(7, p)}"
    gw_ip = _ip(16 + p)
    chosen = [(p * GATEWAYS + k) % nodes for k in range(min(GATEWAYS, nodes))]
    gcs = [insert_op("Gateway_Chassis", f"gc{k}", {
        "name": f"{lrp}_{chassis_name(n)}", "chassis_name": chassis_name(n),
        "priority": len(chosen) - k}) for k, n in enumerate(chosen)]
    return [
        *gcs,
        insert_op("Logical_Router_Port", "gw", {
            "name": lrp, "mac": _mac(7, p), "networks": ["set", [f"{gw_ip}/12"]],
            "gateway_chassis": ["set", [["named-uuid", f"gc{k}"]
                                        for k in range(len(chosen))]]}),
        insert_op("Logical_Router_Static_Route", "route", {
            "ip_prefix": "0.0.0.0/0", "nexthop": EXT_GATEWAY}),
        insert_op("NAT", "snat", {"type": "snat", "external_ip": gw_ip,
                                "logical_ip": subnet(p)[1]}),
        {"op": "mutate", "table": "Logical_Router",
         "where": [["name", "==", router_name(p)]],
         "mutations": [["ports", "insert", ["set", [["named-uuid", "gw"]]]],
                       ["static_routes", "insert", ["set", [["named-uuid", "route"]]]],
                       ["nat", "insert", ["set", [["named-uuid", "snat"]]]]]},
        insert_op("Logical_Switch_Port", "lsp", {
            "name": _id(7, p), "type": "router", "addresses": "router",
            "options": smap({"router-port": lrp, "nat-addresses": "router",
                             "exclude-lb-vips-from-garp": "true"})}),
        add_refs("Logical_Switch", EXT_NET, "ports", ["lsp"]),
    ]


def vm_ops(p: int, v: int, node: int, dhcp: str) -> Ops:
    """VM `v` of project `p` on `node`; `dhcp` is the uuid of the project's
    DHCP_Options."""
    addr = f"{_mac(8, p * 256 + v)} {vm_ip(p, v)}"
    return [
        insert_op("Logical_Switch_Port", "vm", {
            "name": vm_port(p, v), "addresses": ["set", [addr]],
            "port_security": ["set", [addr]], "enabled": True,
            "dhcpv4_options": ["uuid", dhcp],
            "options": smap({"requested-chassis": node_name(node)}),
            "external_ids": smap({"neutron:device_owner": "compute:nova",
                                  "neutron:security_group_ids": _id(3, p)})}),
        add_refs("Logical_Switch", network_name(p), "ports", ["vm"]),
        add_refs("Port_Group", security_group(p), "ports", ["vm"]),
    ]


def floating_ip_ops(p: int, v: int) -> Ops:
    return [insert_op("NAT", "fip", {"type": "dnat_and_snat",
                                   "external_ip": floating_ip(p, v),
                                   "logical_ip": vm_ip(p, v)}),
            add_refs("Logical_Router", router_name(p), "nat", ["fip"])]
