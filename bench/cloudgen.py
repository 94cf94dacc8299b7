"""A large cloud topology, as an OpenStack-like CMS builds it, for the northd benchmarks.

    ROUTERS tenant routers (default 1,000), each with
      - a gateway port on the shared `public` switch (gateway chassis `gw1`), which also
        has a localnet port;
      - SWITCHES_PER_ROUTER tenant switches (default 10), each on its own /24 and
        connected by a router port (`lr{r}-ls{s}`, peer `ls{s}-lr{r}` of type router);
      - VIFS VIF ports per tenant switch (default 3, MAC and IP);
      - a SNAT rule per tenant subnet and one floating IP (dnat_and_snat, centralized);
      - a default route through the public network's gateway and a route to a
        neighbouring tenant's subnets;
      - `dynamic_neigh_routers` (see ROUTER_OPTIONS).

At the defaults: 10,001 switches, 30,000 VIFs, 1,000 routers with gateway ports, 11,000
router ports, 11,000 NAT rules, 2,000 routes. Tenant switch `s` (0-based, router
`s // SWITCHES_PER_ROUTER`) is 10.{s // 256}.{s % 256}.0/24 (so at most 65,536
switches); its VIF `p` is `vm-{s}-{p}` at .{p + 10}. Router `r`'s gateway is
100.64.{r // 250}.{r % 250 + 1}/16 on `public` (at most 16,000 routers).

The rows go in by JSON-RPC `transact`, ROUTERS_PER_TXN routers a transaction (what
`ovn-nbctl` would take hours for), each router with everything it owns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyovsdb.jsonrpc.client import Client

ROUTERS_PER_TXN = 20
# What ovn-nb(5) recommends when many routers share a switch (and ovn-kubernetes,
# kube-ovn and ovn-heater set): without it every router gets an ARP resolve flow for
# every other router's gateway IP, a million flows at 1,000 routers (ovn-northd 23.03
# passed 12 GB building them).
ROUTER_OPTIONS = [["dynamic_neigh_routers", "true"],
                  ["always_learn_from_arp_request", "false"]]


def switch_net(s: int) -> str:
    return f"10.{s // 256}.{s % 256}"


def vif_mac(s: int, p: int) -> str:
    return f"0a:01:{s // 256:02x}:{s % 256:02x}:00:{p:02x}"


def gw_ip(r: int) -> str:
    return f"100.64.{r // 250}.{r % 250 + 1}"


def _mac(kind: int, n: int) -> str:
    return f"0a:{kind:02x}:00:{n // 65536 % 256:02x}:{n // 256 % 256:02x}:{n % 256:02x}"


def router_ops(r: int, per_router: int, vifs: int) -> tuple[list[dict[str, Any]], str]:
    """The operations that add router `r` and everything it owns; the named UUID of its
    port on `public` (the caller adds it to that switch)."""
    ops: list[dict[str, Any]] = []
    lrps: list[list[str]] = []
    nats: list[list[str]] = []
    for k in range(per_router):
        s = r * per_router + k
        net = switch_net(s)
        ports = []
        for p in range(vifs):
            ops.append({"op": "insert", "table": "Logical_Switch_Port",
                        "uuid-name": f"vm{s}x{p}",
                        "row": {"name": f"vm-{s}-{p}",
                                "addresses": f"{vif_mac(s, p)} {net}.{p + 10}",
                                "port_security": f"{vif_mac(s, p)} {net}.{p + 10}"}})
            ports.append(["named-uuid", f"vm{s}x{p}"])
        ops.append({"op": "insert", "table": "Logical_Switch_Port",
                    "uuid-name": f"rp{s}",
                    "row": {"name": f"ls{s}-lr{r}", "type": "router",
                            "addresses": "router",
                            "options": ["map", [["router-port", f"lr{r}-ls{s}"]]]}})
        ports.append(["named-uuid", f"rp{s}"])
        ops.append({"op": "insert", "table": "Logical_Switch",
                    "row": {"name": f"ls{s}", "ports": ["set", ports]}})
        ops.append({"op": "insert", "table": "Logical_Router_Port", "uuid-name": f"lrp{s}",
                    "row": {"name": f"lr{r}-ls{s}", "mac": _mac(2, s),
                            "networks": f"{net}.1/24"}})
        lrps.append(["named-uuid", f"lrp{s}"])
        ops.append({"op": "insert", "table": "NAT", "uuid-name": f"snat{s}",
                    "row": {"type": "snat", "external_ip": gw_ip(r),
                            "logical_ip": f"{net}.0/24"}})
        nats.append(["named-uuid", f"snat{s}"])
    ops.append({"op": "insert", "table": "Gateway_Chassis", "uuid-name": f"gc{r}",
                "row": {"name": f"lr{r}-gw-gw1", "chassis_name": "gw1", "priority": 10}})
    ops.append({"op": "insert", "table": "Logical_Router_Port", "uuid-name": f"gwp{r}",
                "row": {"name": f"lr{r}-gw", "mac": _mac(3, r),
                        "networks": f"{gw_ip(r)}/16",
                        "gateway_chassis": ["named-uuid", f"gc{r}"]}})
    lrps.append(["named-uuid", f"gwp{r}"])
    first = r * per_router
    ops.append({"op": "insert", "table": "NAT", "uuid-name": f"fip{r}",
                "row": {"type": "dnat_and_snat",
                        "external_ip": f"100.65.{r // 250}.{r % 250 + 1}",
                        "logical_ip": f"{switch_net(first)}.10"}})
    nats.append(["named-uuid", f"fip{r}"])
    routes = []
    ops.append({"op": "insert", "table": "Logical_Router_Static_Route",
                "uuid-name": f"dflt{r}",
                "row": {"ip_prefix": "0.0.0.0/0", "nexthop": "100.64.255.254"}})
    routes.append(["named-uuid", f"dflt{r}"])
    ops.append({"op": "insert", "table": "Logical_Router_Static_Route",
                "uuid-name": f"peer{r}",
                "row": {"ip_prefix": f"192.168.{r % 256}.0/24",
                        "nexthop": gw_ip((r + 1) % 16000)}})
    routes.append(["named-uuid", f"peer{r}"])
    ops.append({"op": "insert", "table": "Logical_Router",
                "row": {"name": f"lr{r}", "ports": ["set", lrps], "nat": ["set", nats],
                        "static_routes": ["set", routes],
                        "options": ["map", ROUTER_OPTIONS]}})
    ops.append({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": f"pub{r}",
                "row": {"name": f"public-lr{r}", "type": "router", "addresses": "router",
                        "options": ["map", [["router-port", f"lr{r}-gw"]]]}})
    return ops, f"pub{r}"


def kinds(routers: int, per_router: int = 10) -> dict[str, Callable[[int], list[str]]]:
    """What a cloud CMS does most, as `ovn-nbctl` arguments for the i-th repetition, on
    the router in the middle of the topology and its first switch."""
    r = routers // 2
    s = r * per_router
    net = switch_net(s)

    def interface(i: int) -> list[str]:
        name, lrp = f"netx{i}", f"lr{r}-netx{i}"
        return ["ls-add", name, "--", "lrp-add", f"lr{r}", lrp, _mac(4, i),
                f"10.255.{i}.1/24", "--", "lsp-add", name, f"{name}-lr", "--",
                "lsp-set-type", f"{name}-lr", "router", "--", "lsp-set-addresses",
                f"{name}-lr", "router", "--", "lsp-set-options", f"{name}-lr",
                f"router-port={lrp}"]

    def router(i: int) -> list[str]:
        name = f"lrx{i}"
        return ["lr-add", name, "--", "set", "Logical_Router", name,
                *(f"options:{k}={v}" for k, v in ROUTER_OPTIONS), "--",
                "lrp-add", name, f"{name}-gw", _mac(5, i),
                f"100.64.251.{i + 1}/16", "--", "lrp-set-gateway-chassis", f"{name}-gw",
                "gw1", "10", "--", "lsp-add", "public", f"public-{name}", "--",
                "lsp-set-type", f"public-{name}", "router", "--", "lsp-set-addresses",
                f"public-{name}", "router", "--", "lsp-set-options", f"public-{name}",
                f"router-port={name}-gw"]

    def gateway_set(i: int) -> list[str]:
        name, ip = f"lry{i}", f"100.64.252.{i + 1}"
        return ["lr-add", name, "--", "lrp-add", name, f"{name}-gw", _mac(7, i), f"{ip}/16",
                "--", "lrp-set-gateway-chassis", f"{name}-gw", "gw1", "10", "--", "lsp-add",
                "public", f"public-{name}", "--", "lsp-set-type", f"public-{name}",
                "router", "--", "lsp-set-addresses", f"public-{name}", "router", "--",
                "lsp-set-options", f"public-{name}", f"router-port={name}-gw",
                "nat-addresses=router", "--", "lr-nat-add", name, "snat", ip,
                f"10.251.{i}.0/24", "--", "lr-route-add", name, "0.0.0.0/0", "100.64.0.1"]

    return {
        "vm add (VIF on a tenant switch)": lambda i: [
            "lsp-add", f"ls{s}", f"vmx{i}", "--", "lsp-set-addresses", f"vmx{i}",
            f"{vif_mac(s, 100 + i)} {net}.{100 + i}", "--", "lsp-set-port-security",
            f"vmx{i}", f"{vif_mac(s, 100 + i)} {net}.{100 + i}"],
        "vm del (the VIF above)": lambda i: ["lsp-del", f"vmx{i}"],
        "network update (Neutron: its name and revision in external_ids)": lambda i: [
            "set", "Logical_Switch", f"ls{s}", f'external_ids:"neutron:network_name"=n{i}',
            f'external_ids:"neutron:revision_number"={i + 2}'],
        "VIP port made virtual (others list its IP; its binding inserted again)":
            lambda i: ["lsp-set-type", f"vm-{s}-2", "virtual", "--", "lsp-set-options",
                       f"vm-{s}-2", f"virtual-ip={net}.12",
                       f"virtual-parents=vm-{s}-0,vm-{s}-1"],
        "VIP port made a VIF again": lambda i: [
            "lsp-set-type", f"vm-{s}-2", "", "--", "lsp-set-options", f"vm-{s}-2"],
        "subnet added to a router interface (its networks)": lambda i: [
            "set", "Logical_Router_Port", f"lr{r}-ls{s}",
            f'networks="{net}.1/24","fd00:{i + 1:x}::1/64"'],
        "router update (Neutron: its name and revision in external_ids)": lambda i: [
            "set", "Logical_Router", f"lr{r}", f'external_ids:"neutron:router_name"=r{i}',
            f'external_ids:"neutron:revision_number"={i + 2}'],
        "security rule add (ACL on a tenant switch)": lambda i: [
            "acl-add", f"ls{s}", "to-lport", str(1000 + i),
            f"ip4.src == 10.254.{i}.0/24 && tcp.dst == 22", "allow-related"],
        "floating IP add (centralized dnat_and_snat)": lambda i: [
            "lr-nat-add", f"lr{r}", "dnat_and_snat", f"100.66.0.{i + 1}", f"{net}.{11 + i}"],
        "floating IP del (the one above)": lambda i: [
            "lr-nat-del", f"lr{r}", "dnat_and_snat", f"100.66.0.{i + 1}"],
        "network + router interface (ls-add, lrp-add, router port)": interface,
        "router interface del (lrp-del, ls-del)": lambda i: [
            "lrp-del", f"lr{r}-netx{i}", "--", "ls-del", f"netx{i}"],
        "router with gateway add (lr-add, gateway lrp-add, port on public)": router,
        "router with gateway del (the router above, its port on public)": lambda i: [
            "lr-del", f"lrx{i}", "--", "lsp-del", f"public-lrx{i}"],
        "router with gateway set (Neutron: gateway port, SNAT, default route)": gateway_set,
        "router gateway clear (the one above: gateway port, SNAT, route deleted)":
            lambda i: ["lrp-del", f"lry{i}-gw", "--", "lsp-del", f"public-lry{i}", "--",
                       "lr-nat-del", f"lry{i}", "snat", f"100.64.252.{i + 1}", "--",
                       "lr-route-del", f"lry{i}"],
        "network with a router-type port first (ls-add, lsp-add naming no port yet)":
            lambda i: ["ls-add", f"nety{i}", "--", "lsp-add", f"nety{i}", f"nety{i}-lr",
                       "--", "lsp-set-type", f"nety{i}-lr", "router", "--",
                       "lsp-set-addresses", f"nety{i}-lr", "router", "--",
                       "lsp-set-options", f"nety{i}-lr", f"router-port=lr{r}-nety{i}"],
        "router interface add after (lrp-add of the port named above)": lambda i: [
            "lrp-add", f"lr{r}", f"lr{r}-nety{i}", _mac(6, i), f"10.254.{i}.1/24"],
        "router interface del first (lrp-del; the switch port stays)": lambda i: [
            "lrp-del", f"lr{r}-nety{i}"],
        "network del (ls-del with its router-type port)": lambda i: ["ls-del", f"nety{i}"],
        "lr-route-add": lambda i: ["lr-route-add", f"lr{r}", f"192.169.{i}.0/24",
                                   gw_ip(r + 1)],
        "lb-add + ls-lb-add": lambda i: [
            "lb-add", f"lbc{i}", f"172.17.0.{i + 1}:80", f"{net}.10:80", "tcp", "--",
            "ls-lb-add", f"ls{s}", f"lbc{i}"],
        "health-checked lb-add (a backend probed through its VIF, as Octavia's)": lambda i: [
            "lb-add", f"lbh{i}", f"172.18.0.{i + 1}:80", f"{net}.11:80", "tcp", "--",
            "set", "Load_Balancer", f"lbh{i}",
            f'ip_port_mappings:"{net}.11"="vm-{s}-1:{net}.2"', "--",
            "--id=@hc", "create", "Load_Balancer_Health_Check",
            f'vip="172.18.0.{i + 1}:80"', "options:interval=5", "--",
            "add", "Load_Balancer", f"lbh{i}", "health_check", "@hc", "--",
            "ls-lb-add", f"ls{s}", f"lbh{i}"],
        "health-checked lb-del (the one above)": lambda i: ["lb-del", f"lbh{i}"],
        "gateway chassis priority (lrp-set-gateway-chassis)": lambda i: [
            "lrp-set-gateway-chassis", f"lr{r}-gw", "gw1", str(20 + i)],
    }


def load(db: str, routers: int, per_router: int = 10, vifs: int = 3) -> None:
    """Add the topology to the (empty, initialized) Northbound database at `db`."""
    if routers > 16000 or routers * per_router > 65536:
        raise ValueError("cloudgen: at most 16,000 routers and 65,536 tenant switches")
    with Client(db) as c:
        _check(c.call("transact", [
            "OVN_Northbound",
            {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "ln",
             "row": {"name": "public-ln", "type": "localnet", "addresses": "unknown",
                     "options": ["map", [["network_name", "physnet1"]]]}},
            {"op": "insert", "table": "Logical_Switch",
             "row": {"name": "public", "ports": ["named-uuid", "ln"]}}]))
        for start in range(0, routers, ROUTERS_PER_TXN):
            ops: list[Any] = ["OVN_Northbound"]
            public: list[list[str]] = []
            for r in range(start, min(routers, start + ROUTERS_PER_TXN)):
                more, pub = router_ops(r, per_router, vifs)
                ops += more
                public.append(["named-uuid", pub])
            ops.append({"op": "mutate", "table": "Logical_Switch",
                        "where": [["name", "==", "public"]],
                        "mutations": [["ports", "insert", ["set", public]]]})
            _check(c.call("transact", ops))


def add_fips(db: str, routers: int, n: int, per_router: int = 10) -> None:
    """`n` more floating IPs (centralized dnat_and_snat) on the router `kinds` changes,
    external IPs from 100.68.0.1, each to its own VIP address across its switches: a
    router of many floating IPs, whose change must not cost in proportion to them."""
    if n > 130 * per_router:
        raise ValueError("cloudgen: at most 130 more floating IPs per tenant switch")
    r = routers // 2
    ops: list[Any] = ["OVN_Northbound"]
    for i in range(n):
        net = switch_net(r * per_router + i % per_router)
        ops.append({"op": "insert", "table": "NAT", "uuid-name": f"f{i}",
                    "row": {"type": "dnat_and_snat",
                            "external_ip": f"100.68.{i // 250}.{i % 250 + 1}",
                            "logical_ip": f"{net}.{i // per_router + 120}"}})
    ops.append({"op": "mutate", "table": "Logical_Router", "where": [["name", "==", f"lr{r}"]],
                "mutations": [["nat", "insert", ["set", [["named-uuid", f"f{i}"]
                                                         for i in range(n)]]]]})
    with Client(db) as c:
        _check(c.call("transact", ops))


def _check(reply: Any) -> None:
    for r in reply:
        if isinstance(r, dict) and "error" in r:
            raise SystemExit(f"cloudgen: NB transaction failed: {r}")
