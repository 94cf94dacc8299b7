"""The ovn-kubernetes topology ovn-heater builds, as Northbound operations.

Rules kept here:
- Shapes follow ovn-heater's `WorkerNode.provision` (ovn_kubernetes.py): a cluster router
  and a join switch once; per node a switch with a router port on the cluster router
  and a management port, a gateway router pinned to the node's chassis (SNAT of the
  cluster network, a default route) joined to the join switch, and an external switch
  with a localnet port. Pods are ports of their node's switch, with addresses and port
  security, `requested-chassis` naming the node (its chassis' hostname), and are
  members of their namespace's port group and address set.
- Pure: operations are JSON values referring to rows by name (`where name == ...`) or
  by named uuid within one transaction; nothing here touches a socket.
- Addresses are a function of the node and pod numbers, distinct up to 250 nodes of
  250 pods (10.128.0.0/14 as ovn-kubernetes carves it).
"""

from __future__ import annotations

from typing import Any

CLUSTER_ROUTER = "ovn_cluster_router"
JOIN = "join"
NAMESPACE = "default"


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


def _insert(table: str, ref: str, row: dict[str, Any]) -> dict[str, Any]:
    return {"op": "insert", "table": table, "uuid-name": ref, "row": row}


def _add_to(table: str, name: str, column: str, refs: list[str]) -> dict[str, Any]:
    return {"op": "mutate", "table": table, "where": [["name", "==", name]],
            "mutations": [[column, "insert", ["set", [["named-uuid", r] for r in refs]]]]}


def _map(d: dict[str, str]) -> list[Any]:
    return ["map", sorted(d.items())]


def cluster_ops(backoff_ms: int = 0) -> list[dict[str, Any]]:
    """The cluster-wide rows: NB_Global, the cluster router, the join switch, the
    namespace's port group and address set."""
    options = {"northd-backoff-interval-ms": str(backoff_ms)} if backoff_ms else {}
    return [
        {"op": "insert", "table": "NB_Global", "row": {"options": _map(options)}},
        _insert("Logical_Router_Port", "rtoj", {
            "name": f"rtoj-{CLUSTER_ROUTER}", "mac": "0a:58:64:40:00:01",
            "networks": ["set", ["100.64.0.1/16"]]}),
        _insert("Logical_Router", "cr", {
            "name": CLUSTER_ROUTER, "ports": ["set", [["named-uuid", "rtoj"]]]}),
        _insert("Logical_Switch_Port", "jtor", {
            "name": f"jtor-{CLUSTER_ROUTER}", "type": "router", "addresses": "router",
            "options": _map({"router-port": f"rtoj-{CLUSTER_ROUTER}"})}),
        _insert("Logical_Switch", "join", {
            "name": JOIN, "ports": ["set", [["named-uuid", "jtor"]]]}),
        _insert("Port_Group", "pg", {"name": f"pg_{NAMESPACE}"}),
        _insert("Address_Set", "as", {"name": f"as_{NAMESPACE}"}),
    ]


def node_ops(node: int) -> list[dict[str, Any]]:
    """One worker node's rows (ovn-heater's `WorkerNode.provision`)."""
    n, (b, c) = node_name(node), _subnet(node)
    gr, ext = f"GR_{n}", f"ext_{n}"
    join_ip = f"100.64.{1 + node // 250}.{1 + node % 250}"
    node_ip = f"172.16.{node // 250}.{2 + node % 250}"
    ops = [
        # the node switch, its router port on the cluster router, its management port
        _insert("Logical_Switch_Port", "stor", {
            "name": f"stor-{n}", "type": "router", "addresses": "router",
            "options": _map({"router-port": f"rtos-{n}"})}),
        _insert("Logical_Switch_Port", "mgmt", {
            "name": f"k8s-{n}", "addresses": f"{_mac(10, b << 8 | c, 2)} 10.{b}.{c}.2",
            "options": _map({"requested-chassis": n})}),
        _insert("Logical_Switch", "ls", {
            "name": n, "other_config": _map({"subnet": f"10.{b}.{c}.0/24"}),
            "ports": ["set", [["named-uuid", "stor"], ["named-uuid", "mgmt"]]]}),
        _insert("Logical_Router_Port", "rtos", {
            "name": f"rtos-{n}", "mac": _mac(10, b << 8 | c, 1),
            "networks": ["set", [f"10.{b}.{c}.1/24"]]}),
        _add_to("Logical_Router", CLUSTER_ROUTER, "ports", ["rtos"]),
        _insert("Logical_Router_Static_Route", "crroute", {
            "ip_prefix": f"10.{b}.{c}.0/24", "nexthop": join_ip, "policy": "src-ip"}),
        _add_to("Logical_Router", CLUSTER_ROUTER, "static_routes", ["crroute"]),
        # the gateway router on the join switch and the external switch
        _insert("Logical_Router_Port", "rtoj", {
            "name": f"rtoj-{gr}", "mac": _mac(100, 64 << 8 | node // 250, 1 + node % 250),
            "networks": ["set", [f"{join_ip}/16"]]}),
        _insert("Logical_Router_Port", "rtoe", {
            "name": f"rtoe-{gr}", "mac": _mac(172, 16 << 8 | node // 250, 2 + node % 250),
            "networks": ["set", [f"{node_ip}/16"]]}),
        _insert("NAT", "snat", {"type": "snat", "logical_ip": "10.128.0.0/14",
                                "external_ip": node_ip}),
        _insert("Logical_Router_Static_Route", "defroute", {
            "ip_prefix": "0.0.0.0/0", "nexthop": "172.16.255.254"}),
        _insert("Logical_Router", "gr", {
            "name": gr, "ports": ["set", [["named-uuid", "rtoj"], ["named-uuid", "rtoe"]]],
            "nat": ["set", [["named-uuid", "snat"]]],
            "static_routes": ["set", [["named-uuid", "defroute"]]],
            "options": _map({"chassis": chassis_name(node), "dynamic_neigh_routers": "true",
                             "lb_force_snat_ip": "router_ip", "snat-ct-zone": "0"})}),
        _insert("Logical_Switch_Port", "jtor", {
            "name": f"jtor-{gr}", "type": "router", "addresses": "router",
            "options": _map({"router-port": f"rtoj-{gr}"})}),
        _add_to("Logical_Switch", JOIN, "ports", ["jtor"]),
        _insert("Logical_Switch_Port", "etor", {
            "name": f"etor-{gr}", "type": "router", "addresses": "router",
            "options": _map({"router-port": f"rtoe-{gr}"})}),
        _insert("Logical_Switch_Port", "lnet", {
            "name": f"lnet-{n}", "type": "localnet", "addresses": ["set", ["unknown"]],
            "options": _map({"network_name": "physnet"})}),
        _insert("Logical_Switch", "ext", {
            "name": ext, "ports": ["set", [["named-uuid", "etor"], ["named-uuid", "lnet"]]]}),
    ]
    return ops


def pod_ops(node: int, pod: int, ref: str = "pod") -> list[dict[str, Any]]:
    """One pod: its port on the node switch, in the namespace's port group and address
    set (what ovn-kubernetes writes for a pod, as ovn-heater's `Namespace.add_ports`).
    `ref` names the port's row within the transaction (distinct per pod in one with
    several)."""
    b, c = _subnet(node)
    ip = f"10.{b}.{c}.{3 + pod}"
    addr = f"{_mac(10, b << 8 | c, 3 + pod)} {ip}"
    return [
        _insert("Logical_Switch_Port", ref, {
            "name": pod_name(node, pod), "addresses": ["set", [addr]],
            "port_security": ["set", [addr]],
            "options": _map({"requested-chassis": node_name(node)})}),
        _add_to("Logical_Switch", node_name(node), "ports", [ref]),
        _add_to("Port_Group", f"pg_{NAMESPACE}", "ports", [ref]),
        {"op": "mutate", "table": "Address_Set", "where": [["name", "==", f"as_{NAMESPACE}"]],
         "mutations": [["addresses", "insert", ["set", [ip]]]]},
    ]
