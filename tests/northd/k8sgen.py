"""An ovn-kubernetes-like cluster, written as a differential-harness script.

What it owns: the NB of `corpus/155_lf_k8s_5_nodes.txt`, `156_lf_k8s_100_nodes.txt`,
`157_lf_k8s_churn.txt` (the 5 nodes, then the changes of `churn_lines`) and
`158_lf_k8s_dual_stack.txt` (the 5 nodes, every network also IPv6), as `ovn-nbctl`
command lines, and the text of those scripts. The topology is the one ovn-kubernetes
provisions per node (as ovn-heater's `WorkerNode.provision` builds it):
- one `ovn_cluster_router` and one `join` switch;
- per node: a node switch (management port, pods with port security and a requested
  chassis, an ACL letting the management port in) with its port on the cluster router;
  a gateway router `GR_<node>` on the node's chassis (`dynamic_neigh_routers`,
  `lb_force_snat_ip=router_ip`, `snat-ct-zone=0`, no learning from ARP requests) with
  a join port and a port on the node's external switch (localnet, `nat-addresses=router`),
  SNAT of the cluster subnet, a default route and a route back to the cluster; on the
  cluster router a src-ip route of the node subnet to the GR and a reroute policy of
  the node's traffic to its external IP through the management port; a NodePort load
  balancer on the GR;
- namespaces: a port group and an address set each, with allow-related ACLs, and the
  default-deny port groups every pod is in;
- a cluster load-balancer group (TCP and UDP services, `hairpin_snat_ip`, `reject`)
  on every node switch and gateway router.

Rules kept here:
- Few lines, each many commands joined by `--` (one NB transaction, one northd run), so
  the 100-node script stays fast for a northd that recomputes everything. 23.03 gives
  the rows created in one run their tunnel keys in UUID-hash order, and a gateway
  router's LB address sets are named after its key (`_rtr_lb_<key>_ip4`), so every
  datapath requests its key (router 1, join 2, node i: 3i+3 switch, 3i+4 GR, 3i+5
  external); the script renumbers only Port_Binding.
- Nothing whose flows depend on NB UUID order (no ECMP routes, no route tables, no
  distributed gateway ports), and no two load balancers share a backend or a VIP's IP
  (23.03's undnat and defrag flows would then carry the hint of either, in hash order).
- No line names a row by UUID (`--id=@name` inside the line instead), so the lines can
  also be joined into one transaction (the cold-start benchmark loads them so). The
  simulated chassis (`sim chassis`, in scripts of at most CHASSIS_WITH_SIM nodes) come
  first, before any NB row, so each of their steps is a northd run on an empty NB.
- Pure and deterministic: the same text every time; regenerate the corpus files with
  `python tests/northd/k8sgen.py 5 > tests/northd/corpus/155_lf_k8s_5_nodes.txt` and
  `python tests/northd/k8sgen.py 100 > tests/northd/corpus/156_lf_k8s_100_nodes.txt` and
  `python tests/northd/k8sgen.py 5 --churn > tests/northd/corpus/157_lf_k8s_churn.txt` and
  `python tests/northd/k8sgen.py 5 --dual-stack > tests/northd/corpus/158_lf_k8s_dual_stack.txt`.
"""

from __future__ import annotations

import shlex
import sys

from mixgen import Command, joined  # one nbctl call of several commands, as the mix has

PODS = 3  # per node; pod p of every node is in namespace ns<p % NAMESPACES>
NAMESPACES = 3
BATCH = 20  # nodes per nbctl line
CLUSTER_NET = "10.128.0.0/14"
CLUSTER_NET6 = "fd00:10:244::/48"
JOIN_NET6 = "fd98::/64"
JOIN_NET_LEN = 16
CHASSIS_WITH_SIM = 5  # scripts of at most this many nodes simulate every chassis


def node(i: int) -> str:
    return f"node{i}"


def gr(i: int) -> str:
    return f"GR_{node(i)}"


def chassis(i: int) -> str:
    return f"chassis-{node(i)}"


def node_ip(i: int, host: int) -> str:
    """Address `host` of node `i`'s pod subnet 10.128.i.0/24 (1: the cluster router,
    2: the management port, 3...: pods)."""
    return f"10.{128 + (i >> 8)}.{i & 255}.{host}"


def node_mac(i: int, host: int) -> str:
    return f"0a:58:0a:{128 + (i >> 8):02x}:{i & 255:02x}:{host:02x}"


def node_ip6(i: int, host: int) -> str:
    """The IPv6 twin of `node_ip`, in node `i`'s fd00:10:244:<i + 1>::/64."""
    return f"fd00:10:244:{i + 1:x}::{host:x}"


def join_ip(k: int) -> str:
    """The `k`-th address of the join subnet 100.64.0.0/16 (1: the cluster router,
    node i's GR: i + 2)."""
    return f"100.64.{k >> 8}.{k & 255}"


def join_ip6(k: int) -> str:
    return f"fd98::{k:x}"


def join_mac(k: int) -> str:
    return f"0a:58:64:40:{k >> 8:02x}:{k & 255:02x}"


def ext_ip(i: int) -> str:
    """Node `i`'s external address on 172.18.0.0/16 (the underlay gateway is .0.1)."""
    return f"172.18.{(i + 2) >> 8}.{(i + 2) & 255}"


def ext_ip6(i: int) -> str:
    """Node `i`'s external IPv6 address (the underlay gateway is EXT_NET6's ::1)."""
    return f"fc00:f853:ccd:e793::{i + 2:x}"


def ext_mac(i: int) -> str:
    return f"0a:58:ac:12:{(i + 2) >> 8:02x}:{(i + 2) & 255:02x}"


def pod(i: int, p: int) -> str:
    return f"ns{p % NAMESPACES}_pod-{node(i)}-{p}"


def router_lsp(switch: str, lsp: str, lrp: str, *options: str) -> list[Command]:
    return [["lsp-add", switch, lsp], ["lsp-set-type", lsp, "router"],
            ["lsp-set-addresses", lsp, "router"],
            ["lsp-set-options", lsp, f"router-port={lrp}", *options]]


def cluster_line(dual: bool = False) -> list[Command]:
    lrp = "rtoj-ovn_cluster_router"
    v6: list[Command] = [
        ["lr-policy-add", "ovn_cluster_router", "102",
         f"ip6.src == {CLUSTER_NET6} && ip6.dst == {CLUSTER_NET6}", "allow"],
        ["lr-policy-add", "ovn_cluster_router", "102",
         f"ip6.src == {CLUSTER_NET6} && ip6.dst == {JOIN_NET6}", "allow"]]
    return [["lr-add", "ovn_cluster_router"],
            ["set", "Logical_Router", "ovn_cluster_router", "options:requested-tnl-key=1"],
            ["ls-add", "join"],
            ["set", "Logical_Switch", "join", "other_config:requested-tnl-key=2"],
            ["lrp-add", "ovn_cluster_router", lrp, join_mac(1),
             f"{join_ip(1)}/{JOIN_NET_LEN}", *([f"{join_ip6(1)}/64"] if dual else [])],
            *router_lsp("join", "jtor-ovn_cluster_router", lrp),
            ["lr-policy-add", "ovn_cluster_router", "102",
             f"ip4.src == {CLUSTER_NET} && ip4.dst == {CLUSTER_NET}", "allow"],
            ["lr-policy-add", "ovn_cluster_router", "102",
             f"ip4.src == {CLUSTER_NET} && ip4.dst == 100.64.0.0/16", "allow"],
            *(v6 if dual else [])]


def node_commands(i: int, dual: bool = False) -> list[Command]:
    """Node `i`'s rows; with `dual`, every network, address, SNAT, route and policy
    also in IPv6."""
    ls, lr, ext = node(i), gr(i), f"ext_{node(i)}"
    rtos, rtoj, rtoe = f"rtos-{ls}", f"rtoj-{lr}", f"rtoe-{lr}"
    mgmt = f"k8s-{ls}"

    def addr(host: int) -> str:
        return " ".join([node_mac(i, host), node_ip(i, host),
                         *([node_ip6(i, host)] if dual else [])])

    def six(*net: str) -> list[str]:
        return list(net) if dual else []
    mgmt_addr = addr(2)
    cmds: list[Command] = [
        ["ls-add", ls],
        ["set", "Logical_Switch", ls, f"other_config:requested-tnl-key={3 + 3 * i}"],
        ["lrp-add", "ovn_cluster_router", rtos, node_mac(i, 1), f"{node_ip(i, 1)}/24",
         *six(f"{node_ip6(i, 1)}/64")],
        *router_lsp(ls, f"stor-{ls}", rtos),
        ["lsp-add", ls, mgmt], ["lsp-set-addresses", mgmt, mgmt_addr],
        ["acl-add", ls, "to-lport", "1001", f"ip4.src == {node_ip(i, 2)}",
         "allow-related"],
    ]
    if dual:
        cmds.append(["acl-add", ls, "to-lport", "1001", f"ip6.src == {node_ip6(i, 2)}",
                     "allow-related"])
    for p in range(PODS):
        cmds += [["lsp-add", ls, pod(i, p)], ["lsp-set-addresses", pod(i, p), addr(3 + p)],
                 ["lsp-set-port-security", pod(i, p), addr(3 + p)],
                 ["lsp-set-options", pod(i, p), f"requested-chassis={chassis(i)}"]]
    cmds += [
        ["lr-add", lr],
        ["set", "Logical_Router", lr, f"options:chassis={chassis(i)}",
         "options:dynamic_neigh_routers=true", "options:lb_force_snat_ip=router_ip",
         "options:snat-ct-zone=0", "options:always_learn_from_arp_request=false",
         f"options:requested-tnl-key={4 + 3 * i}",
         f"external_ids:physical_ip={ext_ip(i)}"],
        ["lrp-add", lr, rtoj, join_mac(i + 2), f"{join_ip(i + 2)}/{JOIN_NET_LEN}",
         *six(f"{join_ip6(i + 2)}/64")],
        *router_lsp("join", f"jtor-{lr}", rtoj),
        ["ls-add", ext],
        ["set", "Logical_Switch", ext, f"other_config:requested-tnl-key={5 + 3 * i}"],
        ["lsp-add", ext, f"lnet-{ls}"], ["lsp-set-type", f"lnet-{ls}", "localnet"],
        ["lsp-set-addresses", f"lnet-{ls}", "unknown"],
        ["lsp-set-options", f"lnet-{ls}", "network_name=physnet"],
        ["lrp-add", lr, rtoe, ext_mac(i), f"{ext_ip(i)}/16", *six(f"{ext_ip6(i)}/64")],
        *router_lsp(ext, f"etor-{lr}", rtoe, "nat-addresses=router",
                    "exclude-lb-vips-from-garp=true"),
        ["lr-nat-add", lr, "snat", ext_ip(i), CLUSTER_NET],
        ["lr-route-add", lr, CLUSTER_NET, join_ip(1)],
        ["lr-route-add", lr, "0.0.0.0/0", "172.18.0.1", rtoe],
        ["--policy=src-ip", "lr-route-add", "ovn_cluster_router", f"{node_ip(i, 0)}/24",
         join_ip(i + 2)],
        ["lr-policy-add", "ovn_cluster_router", "1004",
         f'inport == "{rtos}" && ip4.dst == {ext_ip(i)} /* {ls} */', "reroute",
         node_ip(i, 2)],
    ]
    if dual:
        cmds += [
            ["lr-nat-add", lr, "snat", ext_ip6(i), CLUSTER_NET6],
            ["lr-route-add", lr, CLUSTER_NET6, join_ip6(1)],
            ["lr-route-add", lr, "::/0", "fc00:f853:ccd:e793::1", rtoe],
            ["--policy=src-ip", "lr-route-add", "ovn_cluster_router",
             f"{node_ip6(i, 0)}/64", join_ip6(i + 2)],
            ["lr-policy-add", "ovn_cluster_router", "1004",
             f'inport == "{rtos}" && ip6.dst == {ext_ip6(i)} /* {ls} */', "reroute",
             node_ip6(i, 2)],
        ]
    return cmds


def node_lines(n: int, dual: bool = False) -> list[list[Command]]:
    return [[c for i in range(start, min(start + BATCH, n)) for c in node_commands(i, dual)]
            for start in range(0, n, BATCH)]


def namespace_line(n: int, dual: bool = False) -> list[Command]:
    """Per namespace an address set of its pods' IPs and a port group of its pods,
    ingress from the namespace itself and TCP 8080 from anywhere, egress allowed;
    every pod also in the default-deny groups (ARP let through); with `dual`, a second
    address set `as_ns<k>_v6` and the same ACLs for IPv6."""
    cmds: list[Command] = []
    every = [pod(i, p) for i in range(n) for p in range(PODS)]
    for k in range(NAMESPACES):
        members = [pod(i, p) for i in range(n) for p in range(PODS) if p % NAMESPACES == k]
        ips = ",".join(f'"{node_ip(i, 3 + p)}"' for i in range(n) for p in range(PODS)
                       if p % NAMESPACES == k)
        pg, acl = f"pg_ns{k}", ["--type=port-group", "acl-add", f"pg_ns{k}"]
        cmds += [["create", "Address_Set", f"name=as_ns{k}", f"addresses={ips}"],
                 ["pg-add", pg, *members],
                 [*acl, "to-lport", "1001", f"outport == @{pg} && ip4.src == $as_ns{k}",
                  "allow-related"],
                 [*acl, "to-lport", "1001",
                  f"outport == @{pg} && ip4 && tcp.dst == {8080 + k}", "allow-related"],
                 [*acl, "from-lport", "1001", f"inport == @{pg} && ip4", "allow-related"]]
        if dual:
            ips6 = ",".join(f'"{node_ip6(i, 3 + p)}"' for i in range(n)
                            for p in range(PODS) if p % NAMESPACES == k)
            cmds += [["create", "Address_Set", f"name=as_ns{k}_v6", f"addresses={ips6}"],
                     [*acl, "to-lport", "1001",
                      f"outport == @{pg} && ip6.src == $as_ns{k}_v6", "allow-related"],
                     [*acl, "to-lport", "1001",
                      f"outport == @{pg} && ip6 && tcp.dst == {8080 + k}", "allow-related"],
                     [*acl, "from-lport", "1001", f"inport == @{pg} && ip6",
                      "allow-related"]]
    for name, direction, port in (("ingressDefaultDeny", "to-lport", "outport"),
                                  ("egressDefaultDeny", "from-lport", "inport")):
        acl = ["--type=port-group", "acl-add", name]
        cmds += [["pg-add", name, *every],
                 [*acl, direction, "1000", f"{port} == @{name}", "drop"],
                 [*acl, direction, "1001", f"{port} == @{name} && arp", "allow"]]
        if dual:
            cmds.append([*acl, direction, "1001", f"{port} == @{name} && nd", "allow"])
    return cmds


def lb_line(n: int, dual: bool = False) -> list[Command]:
    """Cluster services in one group on every node switch and GR (backends: pods 0
    and 1 of the first nodes, none shared), and a NodePort LB per GR backed by that
    node's pod 2; with `dual`, each service also has an IPv6 VIP (in the same LB, as
    ovn-kubernetes writes a dual-stack service)."""
    def backends(*hosts: tuple[int, int]) -> str:
        return ",".join(f"{node_ip(i, 3 + p)}:8080" for i, p in hosts)

    def backends6(*hosts: tuple[int, int]) -> str:
        return ",".join(f"[{node_ip6(i, 3 + p)}]:8080" for i, p in hosts)

    def vip6(vip: str, *hosts: tuple[int, int]) -> list[str]:
        return [f'vips:"{vip}"="{backends6(*hosts)}"'] if dual else []

    opts = ["options:reject=true", 'options:hairpin_snat_ip="169.254.169.5"']
    a, b, c = (0, 0), (1 % n, 0), (0, 1)
    cmds: list[Command] = [
        ["--id=@svc_tcp", "create", "Load_Balancer", "name=cluster_tcp", "protocol=tcp",
         f'vips:"172.30.0.1:443"="{backends(a, b)}"',
         f'vips:"172.30.0.10:80"="{backends(c)}"',
         *vip6("[fd00:10:96::1]:443", a, b), *vip6("[fd00:10:96::a]:80", c), *opts],
        ["--id=@svc_udp", "create", "Load_Balancer", "name=cluster_udp", "protocol=udp",
         f'vips:"172.30.0.11:53"="{backends((1 % n, 1))}"',
         *vip6("[fd00:10:96::b]:53", (1 % n, 1)), *opts],
        ["--id=@lbg", "create", "Load_Balancer_Group", "name=cluster_lbg",
         "load_balancer=@svc_tcp,@svc_udp"],
    ]
    for i in range(n):
        cmds += [["add", "Logical_Switch", node(i), "load_balancer_group", "@lbg"],
                 ["add", "Logical_Router", gr(i), "load_balancer_group", "@lbg"],
                 [f"--id=@np{i}", "create", "Load_Balancer", f"name=nodeport_{node(i)}",
                  "protocol=tcp", f'vips:"{ext_ip(i)}:30080"="{backends((i, 2))}"',
                  *vip6(f"[{ext_ip6(i)}]:30080", (i, 2)), *opts],
                 ["add", "Logical_Router", gr(i), "load_balancer", f"@np{i}"]]
    return cmds


def nbctl_lines(n: int, dual: bool = False) -> list[list[Command]]:
    """The script's NB lines, each the commands of one `ovn-nbctl` call, for `n`
    nodes (1 to 250: the join and external addresses stay in one /24 byte plus 2),
    IPv4 only or `dual` stack."""
    if not 1 <= n <= 250:
        raise ValueError(f"a cluster has 1 to 250 nodes: {n}")
    return [cluster_line(dual), *node_lines(n, dual), namespace_line(n, dual),
            lb_line(n, dual)]


def churn_lines(n: int) -> list[list[Command]]:
    """What a cluster goes through after it is up, one NB transaction each: a pod
    started (port, namespace port group, address set), a network policy, a service
    added and its endpoints changed, an egress reroute, a new node provisioned (its
    pods joining their groups in the next transaction: the `uuid(...)` references are
    the harness's and name rows of earlier transactions), and the pod stopped.

    Nothing deleted was created together with other rows of its datapath (the keys
    left would depend on 23.03's hash order), and no datapath is deleted: 23.03 keeps
    a shared flow's SB row when its datapath group changes, stage-hint included, so
    the hint goes on naming a deleted datapath when that one happened to add the flow
    first (in hash order)."""
    if n < 3:
        raise ValueError(f"the churn needs 3 nodes or more: {n}")
    new_pod, new_ip = f"ns0_pod-{node(1)}-9", node_ip(1, 3 + 9)
    addr = f"{node_mac(1, 3 + 9)} {new_ip}"
    lbg = "uuid(Load_Balancer_Group,name=cluster_lbg)"
    new = n  # the node added
    add_new = [*node_commands(new),
               ["add", "Logical_Switch", node(new), "load_balancer_group", lbg],
               ["add", "Logical_Router", gr(new), "load_balancer_group", lbg],
               ["--id=@np", "create", "Load_Balancer", f"name=nodeport_{node(new)}",
                "protocol=tcp", f'vips:"{ext_ip(new)}:30080"="{node_ip(new, 5)}:8080"',
                "options:reject=true"],
               ["add", "Logical_Router", gr(new), "load_balancer", "@np"]]
    join_groups: list[Command] = []
    for p in range(PODS):
        port = f"uuid(Logical_Switch_Port,name={pod(new, p)})"
        join_groups += [["add", "Port_Group", f"pg_ns{p % NAMESPACES}", "ports", port],
                        ["add", "Port_Group", "ingressDefaultDeny", "ports", port],
                        ["add", "Port_Group", "egressDefaultDeny", "ports", port],
                        ["add", "Address_Set", f"as_ns{p % NAMESPACES}", "addresses",
                         f'"{node_ip(new, 3 + p)}"']]
    return [
        [["--id=@p", "create", "Logical_Switch_Port", f"name={new_pod}",
          f'addresses="{addr}"', f'port_security="{addr}"',
          f"options:requested-chassis={chassis(1)}"],
         ["add", "Logical_Switch", node(1), "ports", "@p"],
         ["add", "Port_Group", "pg_ns0", "ports", "@p"],
         ["add", "Port_Group", "ingressDefaultDeny", "ports", "@p"],
         ["add", "Port_Group", "egressDefaultDeny", "ports", "@p"],
         ["add", "Address_Set", "as_ns0", "addresses", f'"{new_ip}"']],
        [["--type=port-group", "acl-add", "pg_ns1", "to-lport", "1001",
          "outport == @pg_ns1 && ip4.src == $as_ns0 && tcp.dst == 5432", "allow-related"]],
        [["set", "Load_Balancer", "cluster_tcp",
          f'vips:"172.30.0.20:8443"="{node_ip(2, 3)}:8443,{new_ip}:8443"']],
        [["set", "Load_Balancer", "cluster_tcp",
          f'vips:"172.30.0.10:80"="{node_ip(0, 4)}:8080,{node_ip(2, 3)}:8080"']],
        [["lr-policy-add", "ovn_cluster_router", "100", f"ip4.src == {node_ip(0, 3)}",
          "reroute", join_ip(2 + 2)]],
        add_new,
        join_groups,
        [["lsp-del", new_pod],
         ["remove", "Address_Set", "as_ns0", "addresses", f'"{new_ip}"']],
    ]


def script_text(n: int, churn: bool = False, dual: bool = False) -> str:
    if churn and dual:
        raise ValueError("the churn is written for an IPv4 cluster")
    flag = " --churn" if churn else " --dual-stack" if dual else ""
    head = ["#! renumber Port_Binding",
            f"# An ovn-kubernetes-like{' dual-stack' if dual else ''} cluster of {n} "
            "nodes: cluster router, join switch, per node a node",
            f"# switch with {PODS} pods, a gateway router and an external switch; "
            f"{NAMESPACES} namespaces, a cluster LB group;",
            *(["# then a pod, a policy, services, a reroute and a node added;"]
              if churn else []),
            f"# generated by `tests/northd/k8sgen.py {n}{flag}` (edit that, not this file)."]
    nodes = n + 1 if churn else n
    sims = [f"sim chassis {chassis(i)} 192.168.1.{i + 1}"
            for i in range(nodes)] if n <= CHASSIS_WITH_SIM else []
    lines = nbctl_lines(n, dual) + (churn_lines(n) if churn else [])
    body = [f"nbctl {shlex.join(joined(c))}" for c in lines]
    return "\n".join([*head, *sims, *body]) + "\n"


if __name__ == "__main__":
    flags = {"--churn", "--dual-stack"}
    args = [a for a in sys.argv[1:] if a not in flags]
    sys.stdout.write(script_text(int(args[0]) if args else 5, "--churn" in sys.argv[1:],
                                 "--dual-stack" in sys.argv[1:]))
