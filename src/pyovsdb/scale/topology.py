"""The ovn-kubernetes topology ovn-heater builds, as Northbound operations.

Rules kept here:
- Shapes follow ovn-heater's `WorkerNode.provision` (ovn_kubernetes.py): a cluster router
  and a join switch once; per node a switch with a router port on the cluster router
  and a management port, a gateway router pinned to the node's chassis (SNAT of the
  cluster network, a default route) joined to the join switch, and an external switch
  with a localnet port; the cluster's load balancer group is on every node switch and
  gateway router. Pods are ports of their node's switch, with addresses and port
  security, `requested-chassis` naming the node (its chassis' hostname).
- Namespaces are ovn-heater's `Namespace`: an address set every pod's address joins,
  and three port groups (the namespace's, its default-deny ingress and egress) that
  its pods join once a policy enforces it. ACLs are ovn-heater's, one `acl-add` each,
  except that a default-deny ACL names the namespace's address set (ovn-heater's
  names a set that does not exist, a slip of its f-string). Load balancers are one
  row per protocol (tcp, udp, sctp), each in the cluster's group.
- Pure: operations are JSON values referring to rows by name (`where name == ...`) or
  by named uuid within one transaction; nothing here touches a socket.
- Addresses are a function of the node and pod numbers, distinct up to 250 nodes of
  250 pods (10.128.0.0/14 as ovn-kubernetes carves it).
"""

from __future__ import annotations

from typing import Any

CLUSTER_ROUTER = "ovn_cluster_router"
JOIN = "join"
LB_GROUP = "cluster-lb-group"
PROTOCOLS = ("tcp", "udp", "sctp")
# ovn-heater's ACL priorities
DENY_PRIORITY, ALLOW_ARP_PRIORITY, NETPOL_ALLOW_PRIORITY = 1, 2, 3
PODS_PER_NODE = 250


def chassis_name(node: int) -> str:
    return f"chassis-{node}"


def node_name(node: int) -> str:
    return f"node{node}"


def pod_name(node: int, pod: int) -> str:
    return f"pod-{node}-{pod}"


def _mac(a: int, b: int, c: int) -> str:
    return f"0a:58:{a & 255:02x}:{b >> 8 & 255:02x}:{b & 255:02x}:{c & 255:02x}"


def _subnet(node: int) -> tuple[int, int]:
    """The node's /24 in 10.128.0.0/14: its second and third octets."""
    return 128 + node // 250, node % 250


# The operation builders, shared with `cloud.py`.

def insert_op(table: str, ref: str, row: dict[str, Any]) -> dict[str, Any]:
    """Insert `row`, named `ref` within the transaction."""
    return {"op": "insert", "table": table, "uuid-name": ref, "row": row}


def set_change(table: str, name: str, column: str, how: str,
               values: list[Any]) -> dict[str, Any]:
    """`how` ("insert", "delete") `values` in set `column` of the row named `name`."""
    return {"op": "mutate", "table": table, "where": [["name", "==", name]],
            "mutations": [[column, how, ["set", values]]]}


def add_refs(table: str, name: str, column: str, refs: list[str]) -> dict[str, Any]:
    """The rows named `refs` within the transaction added to `column` of `name`."""
    return set_change(table, name, column, "insert", [["named-uuid", r] for r in refs])


def smap(d: dict[str, str]) -> list[Any]:
    """A string map as OVSDB's JSON (pairs as lists, sorted)."""
    return ["map", [[k, v] for k, v in sorted(d.items())]]


def global_ops(backoff_ms: int = 0) -> list[dict[str, Any]]:
    """NB_Global, with seed 000's backoff if asked."""
    options = {"northd-backoff-interval-ms": str(backoff_ms)} if backoff_ms else {}
    return [{"op": "insert", "table": "NB_Global", "row": {"options": smap(options)}}]


def cluster_ops() -> list[dict[str, Any]]:
    """The cluster-wide rows: the cluster router, the join switch, the load balancer
    group (its uuid is the last operation's result)."""
    return [
        insert_op("Logical_Router_Port", "rtoj", {
            "name": f"rtoj-{CLUSTER_ROUTER}", "mac": "0a:58:64:40:00:01",
            "networks": ["set", ["100.64.0.1/16"]]}),
        insert_op("Logical_Router", "cr", {
            "name": CLUSTER_ROUTER, "ports": ["set", [["named-uuid", "rtoj"]]]}),
        insert_op("Logical_Switch_Port", "jtor", {
            "name": f"jtor-{CLUSTER_ROUTER}", "type": "router", "addresses": "router",
            "options": smap({"router-port": f"rtoj-{CLUSTER_ROUTER}"})}),
        insert_op("Logical_Switch", "join", {
            "name": JOIN, "ports": ["set", [["named-uuid", "jtor"]]]}),
        insert_op("Load_Balancer_Group", "lbg", {"name": LB_GROUP}),
    ]


def node_ops(node: int, lb_group: str) -> list[dict[str, Any]]:
    """One worker node's rows (ovn-heater's `WorkerNode.provision`); `lb_group` is the
    uuid of the cluster's load balancer group."""
    group = ["set", [["uuid", lb_group]]]
    n, (b, c) = node_name(node), _subnet(node)
    gr, ext = f"GR_{n}", f"ext_{n}"
    join_ip = f"100.64.{1 + node // 250}.{1 + node % 250}"
    node_ip = f"172.16.{node // 250}.{2 + node % 250}"
    ops = [
        # the node switch, its router port on the cluster router, its management port
        insert_op("Logical_Switch_Port", "stor", {
            "name": f"stor-{n}", "type": "router", "addresses": "router",
            "options": smap({"router-port": f"rtos-{n}"})}),
        insert_op("Logical_Switch_Port", "mgmt", {
            "name": f"k8s-{n}", "addresses": f"{_mac(10, b << 8 | c, 2)} 10.{b}.{c}.2",
            "options": smap({"requested-chassis": n})}),
        insert_op("Logical_Switch", "ls", {
            "name": n, "other_config": smap({"subnet": f"10.{b}.{c}.0/24"}),
            "ports": ["set", [["named-uuid", "stor"], ["named-uuid", "mgmt"]]],
            "load_balancer_group": group}),
        insert_op("Logical_Router_Port", "rtos", {
            "name": f"rtos-{n}", "mac": _mac(10, b << 8 | c, 1),
            "networks": ["set", [f"10.{b}.{c}.1/24"]]}),
        add_refs("Logical_Router", CLUSTER_ROUTER, "ports", ["rtos"]),
        insert_op("Logical_Router_Static_Route", "crroute", {
            "ip_prefix": f"10.{b}.{c}.0/24", "nexthop": join_ip, "policy": "src-ip"}),
        add_refs("Logical_Router", CLUSTER_ROUTER, "static_routes", ["crroute"]),
        # the gateway router on the join switch and the external switch
        insert_op("Logical_Router_Port", "rtoj", {
            "name": f"rtoj-{gr}", "mac": _mac(100, 64 << 8 | node // 250, 1 + node % 250),
            "networks": ["set", [f"{join_ip}/16"]]}),
        insert_op("Logical_Router_Port", "rtoe", {
            "name": f"rtoe-{gr}", "mac": _mac(172, 16 << 8 | node // 250, 2 + node % 250),
            "networks": ["set", [f"{node_ip}/16"]]}),
        insert_op("NAT", "snat", {"type": "snat", "logical_ip": "10.128.0.0/14",
                                "external_ip": node_ip}),
        insert_op("Logical_Router_Static_Route", "defroute", {
            "ip_prefix": "0.0.0.0/0", "nexthop": "172.16.255.254"}),
        insert_op("Logical_Router", "gr", {
            "name": gr, "ports": ["set", [["named-uuid", "rtoj"], ["named-uuid", "rtoe"]]],
            "nat": ["set", [["named-uuid", "snat"]]],
            "static_routes": ["set", [["named-uuid", "defroute"]]],
            "load_balancer_group": group,
            "options": smap({"chassis": chassis_name(node), "dynamic_neigh_routers": "true",
                             "lb_force_snat_ip": "router_ip", "snat-ct-zone": "0"})}),
        insert_op("Logical_Switch_Port", "jtor", {
            "name": f"jtor-{gr}", "type": "router", "addresses": "router",
            "options": smap({"router-port": f"rtoj-{gr}"})}),
        add_refs("Logical_Switch", JOIN, "ports", ["jtor"]),
        insert_op("Logical_Switch_Port", "etor", {
            "name": f"etor-{gr}", "type": "router", "addresses": "router",
            "options": smap({"router-port": f"rtoe-{gr}"})}),
        insert_op("Logical_Switch_Port", "lnet", {
            "name": f"lnet-{n}", "type": "localnet", "addresses": ["set", ["unknown"]],
            "options": smap({"network_name": "physnet"})}),
        insert_op("Logical_Switch", "ext", {
            "name": ext, "ports": ["set", [["named-uuid", "etor"], ["named-uuid", "lnet"]]]}),
    ]
    return ops


def pod_ip(node: int, pod: int) -> str:
    b, c = _subnet(node)
    return f"10.{b}.{c}.{3 + pod}"


def namespace_groups(ns: str) -> tuple[str, str, str]:
    """The namespace's port groups: its own, default-deny ingress, default-deny egress."""
    return f"pg_{ns}", f"pg_deny_igr_{ns}", f"pg_deny_egr_{ns}"


def namespace_ops(ns: str) -> list[dict[str, Any]]:
    """A namespace's port groups and address set (ovn-heater's `Namespace()`)."""
    return [*(insert_op("Port_Group", f"pg{i}", {"name": pg})
              for i, pg in enumerate(namespace_groups(ns))),
            insert_op("Address_Set", "as", {"name": f"as_{ns}"})]


def pod_ops(node: int, pod: int, ns: str, ref: str = "pod",
            enforcing: bool = False) -> list[dict[str, Any]]:
    """One pod: its port on the node switch, its address in the namespace's address set
    and, once the namespace enforces a policy, the port in its port groups (what
    ovn-heater's `provision_ports` and `Namespace.add_ports` write). `ref` names the
    port's row within the transaction (distinct per pod in one with several)."""
    b, c = _subnet(node)
    ip = pod_ip(node, pod)
    addr = f"{_mac(10, b << 8 | c, 3 + pod)} {ip}"
    ops = [
        insert_op("Logical_Switch_Port", ref, {
            "name": pod_name(node, pod), "addresses": ["set", [addr]],
            "port_security": ["set", [addr]],
            "options": smap({"requested-chassis": node_name(node)})}),
        add_refs("Logical_Switch", node_name(node), "ports", [ref]),
        set_change("Address_Set", f"as_{ns}", "addresses", "insert", [ip]),
    ]
    if enforcing:
        ops += [add_refs("Port_Group", pg, "ports", [ref]) for pg in namespace_groups(ns)]
    return ops


def pod_delete_ops(node: int, pod: int, ns: str, port: str) -> list[dict[str, Any]]:
    """A pod gone: its port (uuid `port`) off the node switch, so collected with its
    port group memberships (weak), and its address out of the address set."""
    return [set_change("Logical_Switch", node_name(node), "ports", "delete",
                        [["uuid", port]]),
            set_change("Address_Set", f"as_{ns}", "addresses", "delete",
                        [pod_ip(node, pod)])]


def enforce_ops(ns: str, ports: list[str]) -> list[list[dict[str, Any]]]:
    """The namespace's pods (uuids) into its three port groups, one transaction each
    (ovn-heater's `Namespace.enforce`)."""
    refs = [["uuid", u] for u in ports]
    return [[set_change("Port_Group", pg, "ports", "insert", refs)]
            for pg in namespace_groups(ns)]


def acl_ops(pg: str, priority: int, match: str, action: str) -> list[dict[str, Any]]:
    """`ovn-nbctl --type=port-group acl-add PG to-lport PRIORITY MATCH ACTION`."""
    return [insert_op("ACL", "acl", {"direction": "to-lport", "priority": priority,
                                   "match": match, "action": action}),
            add_refs("Port_Group", pg, "acls", ["acl"])]


def default_deny_ops(ns: str) -> list[list[dict[str, Any]]]:
    """ovn-heater's `Namespace.default_deny(4)`: four ACLs, one transaction each."""
    _, igr, egr = namespace_groups(ns)
    return [acl_ops(igr, DENY_PRIORITY, f"ip4.src == $as_{ns} && outport == @{igr}",
                    "drop"),
            acl_ops(egr, DENY_PRIORITY, f"ip4.dst == $as_{ns} && inport == @{egr}",
                    "drop"),
            acl_ops(igr, ALLOW_ARP_PRIORITY, f"outport == @{igr} && arp", "allow"),
            acl_ops(egr, ALLOW_ARP_PRIORITY, f"inport == @{egr} && arp", "allow")]


def allow_within_ops(ns: str) -> list[list[dict[str, Any]]]:
    """ovn-heater's `Namespace.allow_within_namespace(4)`."""
    pg = namespace_groups(ns)[0]
    return [acl_ops(pg, NETPOL_ALLOW_PRIORITY, f"ip4.src == $as_{ns} && outport == @{pg}",
                    "allow-related"),
            acl_ops(pg, NETPOL_ALLOW_PRIORITY, f"ip4.dst == $as_{ns} && inport == @{pg}",
                    "allow-related")]


def allow_from_external_ops(ns: str, ips: list[str]) -> list[dict[str, Any]]:
    """ovn-heater's `Namespace.allow_from_external(ips)`."""
    pg = namespace_groups(ns)[0]
    return acl_ops(pg, NETPOL_ALLOW_PRIORITY,
                   f"ip4.src == {{{','.join(ips)}}} && outport == @{pg}", "allow-related")


def lb_ops(name: str, vips: dict[str, str], ref: str = "lb") -> list[dict[str, Any]]:
    """A load balancer with `vips` (VIP:port to backends), one row per protocol, in
    the cluster's group (ovn-heater's `OvnLoadBalancer` and `provision_lb`); `ref`
    names its rows within the transaction."""
    refs = [f"{ref}_{p}" for p in PROTOCOLS]
    return [*(insert_op("Load_Balancer", ref, {"name": name, "protocol": p,
                                             "vips": smap(vips)})
              for ref, p in zip(refs, PROTOCOLS, strict=True)),
            add_refs("Load_Balancer_Group", LB_GROUP, "load_balancer", refs)]
