"""One change at a time: how long `ovn-nbctl --wait=sb` takes for each kind of NB change
on a large topology, our northd beside ovn-northd 23.03 (Debian) and, with
`--upstream DIR`, the newest upstream ovn-northd (`bench/build_upstream_ovn.sh` prints
DIR; it runs on its own schemas).

    python bench/northd_change_bench.py [--switches 1000] [--ports 10] [--repeat 3]
                                        [--upstream DIR] [--only lsp-add,lr-add]
    python bench/northd_change_bench.py --nodes 100 [--upstream DIR]
    python bench/northd_change_bench.py --cloud 1000 [--upstream DIR]

Topology: SWITCHES switches of PORTS VIFs each (MAC and IP); a router `lr0` with a port
on each of the first 10 switches and a gateway port `lr0-gw` (gateway chassis `gw1`).
With `--nodes N`: the N-node ovn-kubernetes-like cluster of `tests/northd/k8sgen.py`
(node switches, gateway routers, namespaces' port groups and address sets, the cluster
load balancer group), and the changes ovn-kubernetes makes most (`k8s_kinds`).
With `--cloud R`: the cloud of `bench/cloudgen.py` (R tenant routers with gateway
ports, NAT and routes, 10 switches of 3 VIFs each per router) and a cloud CMS's changes.
Every northd has its own NB and SB on the real ovsdb-server (unix sockets, a temporary
directory each), preloaded the same way; all planes are up at once and idle between
changes, and the changes take turns plane by plane: change 1 of every kind on every
northd, then change 2, ...

Kinds ending in "(...; SB)" change SB as ovn-controller does (`ovn-sbctl`), then wait
with `ovn-nbctl --wait=sb sync`: their wall time runs from the SB commit's reply.

Figures per kind, median of the repeats: the wall time of the whole `ovn-nbctl
--wait=sb` process (what a CMS pays: connect, commit, northd's run, SB commit, the
nb_cfg coming back) and the `ovn-northd completion` time `--print-wait-time` reports,
each as ours/23.03 and ours/newest; the northds' CPU seconds over all changes and their
peak RSS (VmHWM). Only processes this script started are stopped, by pid.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import cloudgen
from northd_bench import cpu_seconds, preload
from pyovsdb.testing import (
    NB_SCHEMA,
    SB_SCHEMA,
    ServerProcess,
    compile_bytecode,
    create_db,
    stop_process,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "northd"))
import k8sgen  # the cluster lives beside the corpus it generates

COMPLETION = re.compile(r"ovn-northd completion:\s*(\d+)ms")


def kinds(n: int) -> dict[str, Callable[[int], list[str]]]:
    """Each change kind as `ovn-nbctl` arguments for its i-th repetition."""
    s = n // 2  # a switch in the middle of the topology
    return {
        "lsp-add": lambda i: ["lsp-add", f"ls{s}", f"new{i}", "--", "lsp-set-addresses",
                              f"new{i}", f"0a:ff:00:00:00:{i:02x} 10.{s % 256}.9.{i}"],
        "lsp-del": lambda i: ["lsp-del", f"lsp-{s}-{i}"],
        "acl-add": lambda i: ["acl-add", f"ls{s}", "from-lport", str(1000 + i),
                              f"ip4.src == 10.{s % 256}.0.{i + 2}", "drop"],
        "lb-add + ls-lb-add": lambda i: ["lb-add", f"lb{i}", f"172.16.0.{i}:80",
                                         f"10.{s % 256}.0.2:80", "tcp", "--",
                                         "ls-lb-add", f"ls{s}", f"lb{i}"],
        "lb-del (the load balancer above)": lambda i: ["lb-del", f"lb{i}"],
        "lb-add + lr-lb-add": lambda i: ["lb-add", f"lbr{i}", f"172.16.2.{i}:80",
                                         f"10.{s % 256}.0.2:80", "tcp", "--",
                                         "lr-lb-add", "lr0", f"lbr{i}"],
        "ls-add with 2 ports": lambda i: ["ls-add", f"lsx{i}", "--", "lsp-add", f"lsx{i}",
                                          f"lsx{i}-a", "--", "lsp-add", f"lsx{i}",
                                          f"lsx{i}-b"],
        "ls-del (the switch above)": lambda i: ["ls-del", f"lsx{i}"],
        "lr-add": lambda i: ["lr-add", f"lrx{i}"],
        "lrp-add on the router above (an interface on a switch)": lambda i: [
            "lrp-add", f"lrx{i}", f"lrx{i}-p", f"00:00:00:00:fd:{i:02x}", f"10.201.{i}.1/24",
            "--", "lsp-add", f"ls{s}", f"ls{s}-lrx{i}", "--", "lsp-set-type", f"ls{s}-lrx{i}",
            "router", "--", "lsp-set-addresses", f"ls{s}-lrx{i}", "router", "--",
            "lsp-set-options", f"ls{s}-lrx{i}", f"router-port=lrx{i}-p"],
        "lrp-set-gateway-chassis (that interface made a gateway port)": lambda i: [
            "lrp-set-gateway-chassis", f"lrx{i}-p", "gw1", "10"],
        "lrp-del-gateway-chassis (a plain interface again)": lambda i: [
            "lrp-del-gateway-chassis", f"lrx{i}-p", "gw1"],
        "router disabled (the router above)": lambda i: [
            "set", "Logical_Router", f"lrx{i}", "enabled=false"],
        "router enabled again": lambda i: ["set", "Logical_Router", f"lrx{i}", "enabled=true"],
        "lr-del (the router above)": lambda i: ["lr-del", f"lrx{i}", "--", "lsp-del",
                                                f"ls{s}-lrx{i}"],
        "switch given a subnet (IPAM)": lambda i: [
            "set", "Logical_Switch", f"ls{s + 1}", f"other_config:subnet=10.202.{i}.0/24"],
        "lsp-add asking IPAM for an address": lambda i: [
            "lsp-add", f"ls{s + 1}", f"dyn{i}", "--", "lsp-set-addresses", f"dyn{i}", "dynamic"],
        "lsp-del (the port above)": lambda i: ["lsp-del", f"dyn{i}"],
        "lrp-add": lambda i: ["lrp-add", "lr0", f"lrpx{i}", f"00:00:00:00:fe:{i:02x}",
                              f"10.200.{i}.1/24"],
        "lr-nat-add": lambda i: ["lr-nat-add", "lr0", "snat", f"172.16.1.{i}",
                                 f"10.{i}.0.0/16"],
        "lr-route-add": lambda i: ["lr-route-add", "lr0", f"192.168.{i}.0/24",
                                   f"10.0.0.{100 + i}"],
        "lr-policy-add": lambda i: ["lr-policy-add", "lr0", str(100 + i),
                                    f"ip4.src == 10.{i}.0.0/16", "drop"],
        # (keys are given from 1 up: key i + 1 is another switch's, which moves)
        "ls-add asking for the tunnel key another switch holds": lambda i: [
            "ls-add", f"lsk{i}", "--", "set", "Logical_Switch", f"lsk{i}",
            f"other_config:requested-tnl-key={i + 1}"],
        # (port key i + 1 is another port's, which moves)
        "lsp-add asking for the tunnel key another port holds": lambda i: [
            "lsp-add", f"ls{s}", f"keyed{i}", "--", "lsp-set-addresses", f"keyed{i}",
            f"0a:ff:00:00:01:{i:02x}", "--", "lsp-set-options", f"keyed{i}",
            f"requested-tnl-key={i + 1}"],
        "ls-add and lr-add asking for one tunnel key (the switch wins it)": lambda i: [
            "ls-add", f"lsr{i}", "--", "set", "Logical_Switch", f"lsr{i}",
            f"other_config:requested-tnl-key={60000 + i}", "--", "lr-add", f"lrr{i}", "--",
            "set", "Logical_Router", f"lrr{i}", f"options:requested-tnl-key={60000 + i}"],
        "mac_prefix set (IPAM's dynamic MACs move)": lambda i: [
            "set", "NB_Global", ".", f"options:mac_prefix=0a:0{i % 10}:00"],
    }


# A kind whose arguments start with this changes SB (as ovn-controller does): the rest
# go to `ovn-sbctl`, then `ovn-nbctl --wait=sb sync` waits for northd; the wall time
# runs from the SB commit's reply (`ovn-sbctl` itself reads the whole SB first).
SBCTL = "ovn-sbctl"


# What ovn-controller 23.03 announces in its Chassis row's other_config (northd's
# `build_chassis_features` reads the first three).
FEATURES = ("ct-no-masked-label", "mac-binding-timestamp", "ovn-ct-lb-related",
            "port-up-notif", "fdb-timestamp")


def sb_kinds() -> dict[str, Callable[[int], list[str]]]:
    """What hypervisors do to SB that northd reads, on every topology."""
    return {
        "chassis add (a hypervisor registers; SB)": lambda i: [
            SBCTL, "chassis-add", f"chx{i}", "geneve", f"192.0.3.{i + 1}", "--",
            "set", "Chassis", f"chx{i}", *(f"other_config:{k}=true" for k in FEATURES)],
        "chassis del (the one above; SB)": lambda i: [SBCTL, "chassis-del", f"chx{i}"],
        "vxlan chassis add (the first: key ranges narrow; SB)": lambda i: [
            SBCTL, "chassis-add", f"chv{i}", "vxlan", f"192.0.4.{i + 1}", "--",
            "set", "Chassis", f"chv{i}", *(f"other_config:{k}=true" for k in FEATURES)],
        "vxlan chassis del (the last: key ranges widen; SB)": lambda i: [
            SBCTL, "chassis-del", f"chv{i}"],
    }


def k8s_kinds(nodes: int) -> dict[str, Callable[[int], list[str]]]:
    """What an ovn-kubernetes cluster does most, as `ovn-nbctl` arguments for the i-th
    repetition (the cluster of `tests/northd/k8sgen.py`; the pod goes on node 1)."""
    def pod(i: int) -> tuple[str, str, str]:
        return f"bench-pod-{i}", k8sgen.node_mac(1, 60 + i), k8sgen.node_ip(1, 60 + i)

    def pod_add(i: int) -> list[str]:
        name, mac, ip = pod(i)
        return k8sgen.joined([
            ["--id=@p", "create", "Logical_Switch_Port", f"name={name}",
             f'addresses="{mac} {ip}"', f'port_security="{mac} {ip}"',
             f"options:requested-chassis={k8sgen.chassis(1)}"],
            ["add", "Logical_Switch", k8sgen.node(1), "ports", "@p"],
            *(["add", "Port_Group", pg, "ports", "@p"]
              for pg in ("pg_ns0", "ingressDefaultDeny", "egressDefaultDeny")),
            ["add", "Address_Set", "as_ns0", "addresses", f'"{ip}"']])

    def pod_del(i: int) -> list[str]:
        name, _, ip = pod(i)
        return k8sgen.joined([["lsp-del", name],
                              ["remove", "Address_Set", "as_ns0", "addresses", f'"{ip}"']])

    def node_add(i: int) -> list[str]:  # (what ovn-kubernetes provisions for a node)
        n = nodes + i
        return k8sgen.joined([
            *k8sgen.node_commands(n),
            ["add", "Logical_Switch", k8sgen.node(n), "load_balancer_group", "@g"],
            ["add", "Logical_Router", k8sgen.gr(n), "load_balancer_group", "@g"]])

    def node_del(i: int) -> list[str]:
        n = nodes + i
        ls, lr = k8sgen.node(n), k8sgen.gr(n)
        return k8sgen.joined([
            ["lr-policy-del", "ovn_cluster_router", "1004",
             f'inport == "rtos-{ls}" && ip4.dst == {k8sgen.ext_ip(n)} /* {ls} */'],
            ["lr-route-del", "ovn_cluster_router", f"{k8sgen.node_ip(n, 0)}/24"],
            ["lrp-del", f"rtos-{ls}"], ["lsp-del", f"jtor-{lr}"], ["lr-del", lr],
            ["ls-del", ls], ["ls-del", f"ext_{ls}"]])

    return {
        "node add (node switch, gateway router, external switch, routes, LB group)":
            lambda i: ["--id=@g", "get", "Load_Balancer_Group", "cluster_lbg", "--",
                       *node_add(i)],
        "node del (the node above)": node_del,
        "pod add (port + 3 port groups + address set)": pod_add,
        "pod del (the pod above)": pod_del,
        "network policy ACL add": lambda i: [
            "--type=port-group", "acl-add", "pg_ns1", "to-lport", "1001",
            f"outport == @pg_ns1 && ip4.src == $as_ns0 && tcp.dst == {5432 + i}",
            "allow-related"],
        "service VIP add (the cluster LB group: every node)": lambda i: [
            "set", "Load_Balancer", "cluster_tcp",
            f'vips:"172.30.1.{i + 1}:8443"="{k8sgen.node_ip(2, 3)}:8443"'],
        "service add (a load balancer in the cluster LB group: every node)": lambda i: (
            k8sgen.joined([
                ["--id=@lb", "create", "Load_Balancer", f"name=svc{i}", "protocol=tcp",
                 f'vips:"172.30.2.{i + 1}:80"="{k8sgen.node_ip(2, 3)}:8080"'],
                ["add", "Load_Balancer_Group", "cluster_lbg", "load_balancer", "@lb"]])),
        "egress reroute policy add": lambda i: [
            "lr-policy-add", "ovn_cluster_router", "100", f"ip4.src == {k8sgen.node_ip(0, 3 + i)}",
            "reroute", k8sgen.join_ip(4)],
    }


def grid_routers(switches: int) -> list[list[str]]:
    """The `ovn-nbctl` commands that put the grid's router on it (after `preload`): a
    router on the first ten switches, and a gateway port."""
    out = [["lr-add", "lr0"]]
    for s in range(min(10, switches)):
        out.append(["lrp-add", "lr0", f"lr0-ls{s}", f"00:00:00:00:ff:{s:02x}",
                    f"10.{s}.0.1/16", "--", "lsp-add", f"ls{s}", f"ls{s}-lr0", "--",
                    "lsp-set-type", f"ls{s}-lr0", "router", "--", "lsp-set-addresses",
                    f"ls{s}-lr0", "router", "--", "lsp-set-options", f"ls{s}-lr0",
                    f"router-port=lr0-ls{s}"])
    out.append(["lrp-add", "lr0", "lr0-gw", "00:00:00:00:ff:fe", "172.16.0.1/24", "--",
                "lrp-set-gateway-chassis", "lr0-gw", "gw1", "10"])
    return out


@dataclass
class Northd:
    label: str
    binary: list[str]
    nbctl: str
    nb_schema: str
    sb_schema: str
    sbctl: str = "ovn-sbctl"
    walls: dict[str, list[float]] = field(default_factory=dict)
    completions: dict[str, list[float]] = field(default_factory=dict)
    cpu: float = 0.0
    rss_mb: float = 0.0
    start_s: float = 0.0


class Plane:
    def __init__(self, north: Northd, workdir: Path) -> None:
        self.north = north
        self.dir = workdir
        workdir.mkdir(parents=True)
        self.nb = ServerProcess("real", workdir, [create_db("real", workdir / "nb.db",
                                                            north.nb_schema)], name="nb")
        self.sb = ServerProcess("real", workdir, [create_db("real", workdir / "sb.db",
                                                            north.sb_schema)], name="sb")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, switches: int, ports: int, nodes: int = 0, cloud: int = 0,
              fips: int = 0) -> None:
        """The grid of `switches` x `ports`, or with `nodes` the ovn-kubernetes-like
        cluster of that many nodes, or with `cloud` the cloud of that many routers (the
        one changed with `fips` more floating IPs)."""
        self.nb.start()
        self.sb.start()
        self.nbctl("init")
        if cloud:
            cloudgen.load(self.nb.unix, cloud)
            if fips:
                cloudgen.add_fips(self.nb.unix, cloud, fips)
        elif nodes:
            cmds = [c for line in k8sgen.nbctl_lines(nodes) for c in line]
            self.nbctl("--no-wait", *k8sgen.joined(cmds), timeout=900)
        else:
            self._grid(switches, ports)
        cmd = [*self.north.binary, f"--ovnnb-db={self.nb.unix}", f"--ovnsb-db={self.sb.unix}",
               f"--unixctl={self.dir / 'northd.ctl'}", f"--pidfile={self.dir / 'northd.pid'}",
               f"--log-file={self.dir / 'northd.log'}", "-vconsole:off", "--no-chdir"]
        with open(self.dir / "northd.stderr", "wb") as err:
            self.proc = subprocess.Popen(cmd, cwd=self.dir, stdout=subprocess.DEVNULL,
                                         stderr=err)
        t0 = time.monotonic()
        self.nbctl("--wait=sb", "sync", timeout=1800)
        self.north.start_s = time.monotonic() - t0

    def _grid(self, switches: int, ports: int) -> None:
        preload(self.nb.unix, switches, ports)
        for args in grid_routers(switches):
            self.nbctl(*args)

    def nbctl(self, *args: str, timeout: float = 120) -> str:
        return self._ctl(self.north.nbctl, self.nb, args, timeout)

    def sbctl(self, *args: str, timeout: float = 120) -> str:
        return self._ctl(self.north.sbctl, self.sb, args, timeout)

    def _ctl(self, tool: str, db: ServerProcess, args: tuple[str, ...], timeout: float
             ) -> str:
        p = subprocess.run([tool, f"--db={db.unix}", f"--timeout={int(timeout)}", *args],
                           capture_output=True, text=True, timeout=timeout + 20)
        if p.returncode != 0:
            raise SystemExit(f"{self.north.label}: {Path(tool).name} {' '.join(args)}: "
                             f"{p.stderr.strip()}")
        return p.stdout

    def change(self, kind: str, args: list[str]) -> None:
        if args[0] == SBCTL:
            self.sbctl(*args[1:])
            args = ["sync"]
        start = time.monotonic()
        out = self.nbctl("--wait=sb", "--print-wait-time", *args)
        wall = (time.monotonic() - start) * 1000
        self.north.walls.setdefault(kind, []).append(wall)
        m = COMPLETION.search(out)
        if m:
            self.north.completions.setdefault(kind, []).append(float(m.group(1)))

    def sample(self) -> None:
        assert self.proc is not None
        self.north.cpu = cpu_seconds(self.proc.pid)
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    self.north.rss_mb = int(line.split()[1]) / 1024

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None
        self.sb.stop()
        self.nb.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--switches", type=int, default=1000)
    ap.add_argument("--ports", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--upstream", help="a directory bench/build_upstream_ovn.sh printed")
    ap.add_argument("--nodes", type=int, default=0,
                    help="the ovn-kubernetes-like cluster of this many nodes instead of "
                         "the grid (tests/northd/k8sgen.py), with its own change kinds")
    ap.add_argument("--cloud", type=int, default=0,
                    help="the cloud of this many tenant routers instead of the grid "
                         "(bench/cloudgen.py), with its own change kinds")
    ap.add_argument("--router-fips", type=int, default=0,
                    help="with --cloud: this many more floating IPs on the router changed")
    ap.add_argument("--only", default="",
                    help="change kinds, comma-separated (each the start of a kind's name)")
    ap.add_argument("--json", help="also write the medians here (bench/plot_sizes.py "
                                   "draws several such files against topology size)")
    args = ap.parse_args()
    compile_bytecode()  # (our daemons start as an installed package's do)
    northds = [Northd("23.03", ["ovn-northd"], "ovn-nbctl", NB_SCHEMA, SB_SCHEMA),
               Northd("ours", [sys.executable, "-m", "pyovsdb", "northd"], "ovn-nbctl",
                      NB_SCHEMA, SB_SCHEMA)]
    if args.upstream:
        up = Path(args.upstream)
        northds.insert(1, Northd("newest", [str(up / "northd" / "ovn-northd")],
                                 str(up / "utilities" / "ovn-nbctl"),
                                 str(up / "ovn-nb.ovsschema"), str(up / "ovn-sb.ovsschema"),
                                 str(up / "utilities" / "ovn-sbctl")))
    table = cloudgen.kinds(args.cloud) if args.cloud else \
        k8s_kinds(args.nodes) if args.nodes else kinds(args.switches)
    table |= sb_kinds()
    # (a kind by the start of its name: some names hold commas)
    wanted = [w.strip() for w in args.only.split(",")] if args.only else []
    chosen = [k for k in table if not wanted or any(k.startswith(w) for w in wanted)]
    unknown = {w for w in wanted if not any(k.startswith(w) for k in table)}
    if unknown:
        ap.error(f"unknown change kinds: {', '.join(sorted(unknown))}")
    with tempfile.TemporaryDirectory(prefix="northd-change-") as tmp:
        planes = [Plane(n, Path(tmp) / n.label.replace(".", "")) for n in northds]
        try:
            for p in planes:
                t0 = time.monotonic()
                p.start(args.switches, args.ports, args.nodes, args.cloud, args.router_fips)
                print(f"{p.north.label}: loaded and settled in {time.monotonic() - t0:.1f} s",
                      file=sys.stderr, flush=True)
            cpu0 = {p.north.label: cpu_seconds(p.proc.pid) for p in planes if p.proc}
            for i in range(args.repeat):
                for kind in chosen:
                    for p in planes:
                        p.change(kind, table[kind](i))
                print(f"repeat {i} done", file=sys.stderr, flush=True)
            for p in planes:
                p.sample()
                p.north.cpu -= cpu0[p.north.label]
        finally:
            for p in planes:
                p.stop()
    report(northds, chosen, args)
    if args.json:
        Path(args.json).write_text(json.dumps(summary(northds, chosen, args), indent=1))
    return 0


def summary(northds: list[Northd], kinds_: list[str], args: argparse.Namespace
            ) -> dict[str, object]:
    """The medians of one run, with the topology and its size (logical switches; nodes
    for the ovn-kubernetes-like cluster)."""
    if args.cloud:
        topology, size, unit = "cloud", args.cloud * 10 + 1, "logical switches"
    elif args.nodes:
        topology, size, unit = "ovn-kubernetes", args.nodes, "nodes"
    else:
        topology, size, unit = "grid", args.switches, "logical switches"
    return {"topology": topology, "size": size, "unit": unit, "repeat": args.repeat,
            "router_fips": args.router_fips,
            "northds": {n.label: {
                "completion_ms": {k: _med(n.completions.get(k)) for k in kinds_},
                "wall_ms": {k: _med(n.walls.get(k)) for k in kinds_},
                "cpu_s": n.cpu, "rss_mb": n.rss_mb, "start_s": n.start_s}
                for n in northds}}


def _med(xs: list[float] | None) -> float | None:
    return statistics.median(xs) if xs else None


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def report(northds: list[Northd], kinds_: list[str], args: argparse.Namespace) -> None:
    by = {n.label: n for n in northds}
    ours, old, new = by["ours"], by["23.03"], by.get("newest")
    fips = f", {args.router_fips} more floating IPs on the router changed" \
        if args.router_fips else ""
    where = f"the cloud of {args.cloud} tenant routers (bench/cloudgen.py){fips}" \
        if args.cloud \
        else f"the {args.nodes}-node ovn-kubernetes-like cluster" if args.nodes else \
        f"{args.switches} switches x {args.ports} ports, router lr0 (10 ports and a gateway port)"
    print(f"\n{where}; median of {args.repeat} changes of each kind; ms\n")
    head = "| change | 23.03 | " + ("newest | " if new else "") + "ours | ours/23.03 |" \
        + (" ours/newest |" if new else "")
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for what, attr in (("`ovn-nbctl --wait=sb` wall", "walls"),
                       ("northd completion", "completions")):
        for kind in kinds_:
            o, u, a = (_med(getattr(n, attr).get(kind)) for n in (old, new or old, ours))
            row = f"| {kind}, {what} | {_fmt(o)} | " + (f"{_fmt(u)} | " if new else "") \
                + f"{_fmt(a)} | {_ratio(a, o)} |" + (f" {_ratio(a, u)} |" if new else "")
            print(row)
    print()
    for n in northds:
        print(f"{n.label}: start (northd started to `--wait=sb sync` done) "
              f"{n.start_s:.1f} s; CPU over all changes {n.cpu:.1f} s, peak RSS "
              f"{n.rss_mb:.0f} MB")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
