"""Where one NB change's time goes inside our northd, without servers or sockets.

    python bench/northd_step_profile.py --cloud 100 --reps 5
    python bench/northd_step_profile.py --cloud 100 --only fip --profile 25
    python bench/northd_step_profile.py --nodes 100 --only pod
    python bench/northd_step_profile.py --nodes 100 --kind "node add" --kind "node del"
    python bench/northd_step_profile.py --cloud 100 --kind "router with gateway set"
    python bench/northd_step_profile.py --switches 1000 --kind lsp-add --kind lsp-del

With `--nodes N` the topology is the N-node ovn-kubernetes-like cluster of
`tests/northd/k8sgen.py` (made by the real `ovn-nbctl` on a throwaway real
`ovsdb-server`, then read from its file), and the kinds are its pods. With `--kind`,
the changes are those of `northd_change_bench.py` (the start of a kind's name), made by
the real `ovn-nbctl` on that throwaway server after the topology, each replayed here as
the operations that turn one snapshot of the server's file into the next.

Loads the cloud topology of `cloudgen.py` into in-memory NB and SB databases
(`northd.testing.LocalNorthd`: the daemon's driver, no JSON-RPC), settles it, then makes
each change kind `--reps` times (add, then its undo) and prints the milliseconds of the
run that handles it (the engine run, the SB operations built, commit fed back) and the
nodes that recomputed. `--profile N` prints the N costliest functions (cProfile,
cumulative) over the runs of the kinds chosen. This is a tool to find hot spots; the
figures that compare with ovn-northd come from `northd_change_bench.py`.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import subprocess
import tempfile

import cloudgen
import northd_change_bench as change_bench
from pyovsdb.northd.testing import LocalDb, LocalNorthd, add_chassis
from pyovsdb.storage import standalone
from pyovsdb.testing import NB_SCHEMA, SB_SCHEMA, ServerProcess, create_db
from pyovsdb.util import gctune

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "northd"))
import k8sgen  # the cluster lives beside the corpus it generates

Ops = list[dict[str, Any]]


def _schema(path: str) -> dict[str, Any]:
    with open(path) as f:
        return dict(json.load(f))


def load(nb: LocalDb, routers: int) -> None:
    nb.transact([
        {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "ln",
         "row": {"name": "public-ln", "type": "localnet", "addresses": "unknown",
                 "options": ["map", [["network_name", "physnet1"]]]}},
        {"op": "insert", "table": "Logical_Switch",
         "row": {"name": "public", "ports": ["named-uuid", "ln"]}}])
    for start in range(0, routers, cloudgen.ROUTERS_PER_TXN):
        ops: Ops = []
        public: list[list[str]] = []
        for r in range(start, min(routers, start + cloudgen.ROUTERS_PER_TXN)):
            more, pub = cloudgen.router_ops(r, 10, 3)
            ops += more
            public.append(["named-uuid", pub])
        ops.append({"op": "mutate", "table": "Logical_Switch",
                    "where": [["name", "==", "public"]],
                    "mutations": [["ports", "insert", ["set", public]]]})
        nb.transact(ops)


def load_real(nb: LocalDb, make: Callable[[str], None],
              changes: list[tuple[str, list[str]]]) -> list[tuple[str, Ops]]:
    """The topology `make` builds on a throwaway real `ovsdb-server` (given its socket),
    copied row by row (same UUIDs) into `nb`; then each change of `changes` (a label
    and `ovn-nbctl` arguments) made there in turn, returned as the operations that
    turn one snapshot of the server's file into the next."""
    out: list[tuple[str, Ops]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        server = ServerProcess("real", work, [create_db("real", work / "nb.db", NB_SCHEMA)],
                               name="nb")
        server.start()

        def snapshot() -> dict[str, dict[str, Any]]:
            db, _, _ = standalone.load(str(work / "nb.db"))
            return {t: rows for t, rows in standalone.snapshot_record(db, "").items()
                    if not t.startswith("_")}
        try:
            nbctl(server.unix, ["init"])
            make(server.unix)
            first = before = snapshot()
            for label, args in changes:
                nbctl(server.unix, args)
                after = snapshot()
                out.append((label, _diff(before, after)))
                before = after
        finally:
            server.stop()
    nb.transact([{"op": "insert", "table": table, "uuid": uuid, "row": row}
                 for table, rows in first.items() for uuid, row in rows.items()])
    return out


def nbctl(db: str, args: list[str]) -> None:
    subprocess.run(["ovn-nbctl", f"--db={db}", "--no-wait", "--timeout=900", *args],
                   check=True, stdout=subprocess.DEVNULL)


def load_grid(db: str, switches: int) -> None:
    """The grid of `northd_change_bench.py`: `switches` x 10 ports and its router."""
    change_bench.preload(db, switches, 10)
    for args in change_bench.grid_routers(switches):
        nbctl(db, args)


def load_k8s(nb: LocalDb, sb: LocalDb, nodes: int,
             changes: list[tuple[str, list[str]]] = ()) -> list[tuple[str, Ops]]:  # type: ignore[assignment]
    """The cluster as `ovn-nbctl` makes it (`load_real`); a chassis per node in `sb`."""
    def make(db: str) -> None:
        cmds = [c for line in k8sgen.nbctl_lines(nodes) for c in line]
        nbctl(db, k8sgen.joined(cmds))
    made = load_real(nb, make, list(changes))
    for i in range(nodes):
        add_chassis(sb, k8sgen.chassis(i), f"192.0.{2 + i // 250}.{1 + i % 250}")
    return made


def _diff(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> Ops:
    """The operations that turn the rows of `old` into those of `new` (values compared
    as the file writes them; a column gone from a row is written back empty)."""
    ops: Ops = []
    for table in sorted(set(old) | set(new)):
        was, now = old.get(table, {}), new.get(table, {})
        for uuid, row in now.items():
            if uuid not in was:
                ops.append({"op": "insert", "table": table, "uuid": uuid, "row": row})
            elif row != was[uuid]:
                cols = {c: v for c, v in row.items() if was[uuid].get(c) != v}
                cols.update({c: _empty(v) for c, v in was[uuid].items() if c not in row})
                ops.append({"op": "update", "table": table, "where": _uuid(uuid),
                            "row": cols})
        ops += [{"op": "delete", "table": table, "where": _uuid(uuid)}
                for uuid in was if uuid not in now]
    return ops


def _empty(value: Any) -> Any:
    """The default of a column whose value was `value` (as the file writes it)."""
    if isinstance(value, list) and value[0] in ("set", "map"):
        return [value[0], []]
    if isinstance(value, list):  # (a single UUID in an optional column)
        return ["set", []]
    return type(value)()


def k8s_kinds(nb: LocalDb) -> dict[str, tuple[Callable[[int], Ops], Callable[[str], Ops]]]:
    """A pod on node 1 (its port, its namespace's and the default-deny port groups, its
    namespace's address set), as `northd_change_bench.py --nodes` makes it."""
    def pod_ip(i: int) -> str:
        return k8sgen.node_ip(1, 60 + i)

    def pod_add(i: int) -> Ops:
        addr = f"{k8sgen.node_mac(1, 60 + i)} {pod_ip(i)}"
        return [{"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "p",
                 "row": {"name": f"bench-pod-{i}", "addresses": addr, "port_security": addr,
                         "options": ["map", [["requested-chassis", k8sgen.chassis(1)]]]}},
                {"op": "mutate", "table": "Logical_Switch", "where": _where(k8sgen.node(1)),
                 "mutations": [["ports", "insert", ["named-uuid", "p"]]]},
                *({"op": "mutate", "table": "Port_Group", "where": _where(pg),
                   "mutations": [["ports", "insert", ["named-uuid", "p"]]]}
                  for pg in ("pg_ns0", "ingressDefaultDeny", "egressDefaultDeny")),
                {"op": "mutate", "table": "Address_Set", "where": _where("as_ns0"),
                 "mutations": [["addresses", "insert", pod_ip(i)]]}]

    def pod_del(uuid: str) -> Ops:
        ip = nb.tables["Logical_Switch_Port"].rows[uuid].port_security[0].split()[1]
        return [*({"op": "mutate", "table": "Port_Group", "where": _where(pg),
                   "mutations": [["ports", "delete", ["uuid", uuid]]]}
                  for pg in ("pg_ns0", "ingressDefaultDeny", "egressDefaultDeny")),
                *_take("Logical_Switch", k8sgen.node(1), "ports", uuid),
                {"op": "mutate", "table": "Address_Set", "where": _where("as_ns0"),
                 "mutations": [["addresses", "delete", ip]]}]

    return {"pod": (pod_add, pod_del)}


def _where(name: str) -> list[list[str]]:
    return [["name", "==", name]]


def _uuid(uuid: str) -> list[list[Any]]:
    return [["_uuid", "==", ["uuid", uuid]]]


def _take(table: str, name: str, column: str, uuid: str) -> Ops:
    """`uuid` taken from the `column` of row `name` (a child row goes with it)."""
    return [{"op": "mutate", "table": table, "where": _where(name),
             "mutations": [[column, "delete", ["uuid", uuid]]]}]


def kinds(routers: int, nb: LocalDb) -> dict[str, tuple[Callable[[int], Ops],
                                                        Callable[[str], Ops]]]:
    """Each kind: the operations of its i-th change, and of its undo given the UUID of
    the row the change inserted first."""
    r = routers // 2
    s = r * 10
    net = cloudgen.switch_net(s)

    def fip_add(i: int) -> Ops:
        return [{"op": "insert", "table": "NAT", "uuid-name": "n",
                 "row": {"type": "dnat_and_snat", "external_ip": f"100.66.0.{i + 1}",
                         "logical_ip": f"{net}.{11 + i}"}},
                {"op": "mutate", "table": "Logical_Router", "where": _where(f"lr{r}"),
                 "mutations": [["nat", "insert", ["named-uuid", "n"]]]}]

    def fip_del(uuid: str) -> Ops:
        return _take("Logical_Router", f"lr{r}", "nat", uuid)

    def lb_add(i: int) -> Ops:
        return [{"op": "insert", "table": "Load_Balancer", "uuid-name": "lb",
                 "row": {"name": f"lbc{i}", "protocol": "tcp",
                         "vips": ["map", [[f"172.17.0.{i + 1}:80", f"{net}.10:80"]]]}},
                {"op": "mutate", "table": "Logical_Switch", "where": _where(f"ls{s}"),
                 "mutations": [["load_balancer", "insert", ["named-uuid", "lb"]]]}]

    def lb_del(uuid: str) -> Ops:
        return [*_take("Logical_Switch", f"ls{s}", "load_balancer", uuid),
                {"op": "delete", "table": "Load_Balancer", "where": _uuid(uuid)}]

    def vm_add(i: int) -> Ops:
        addr = f"{cloudgen.vif_mac(s, 100 + i)} {net}.{100 + i}"
        return [{"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "p",
                 "row": {"name": f"vmx{i}", "addresses": addr, "port_security": addr}},
                {"op": "mutate", "table": "Logical_Switch", "where": _where(f"ls{s}"),
                 "mutations": [["ports", "insert", ["named-uuid", "p"]]]}]

    def vm_del(uuid: str) -> Ops:
        return _take("Logical_Switch", f"ls{s}", "ports", uuid)

    def net_add(i: int) -> Ops:
        lrp = f"lr{r}-netx{i}"
        return [{"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "rp",
                 "row": {"name": f"netx{i}-lr", "type": "router", "addresses": "router",
                         "options": ["map", [["router-port", lrp]]]}},
                {"op": "insert", "table": "Logical_Switch", "uuid-name": "ls",
                 "row": {"name": f"netx{i}", "ports": ["named-uuid", "rp"]}},
                {"op": "insert", "table": "Logical_Router_Port", "uuid-name": "p",
                 "row": {"name": lrp, "mac": f"0a:04:00:00:00:{i:02x}",
                         "networks": f"10.255.{i}.1/24"}},
                {"op": "mutate", "table": "Logical_Router", "where": _where(f"lr{r}"),
                 "mutations": [["ports", "insert", ["named-uuid", "p"]]]}]

    def net_del(uuid: str) -> Ops:
        lsp = nb.tables["Logical_Switch_Port"].rows[uuid]
        lrp = next(u for u, row in nb.tables["Logical_Router_Port"].rows.items()
                   if row.name == lsp.options["router-port"])
        return [{"op": "delete", "table": "Logical_Switch", "where": [
                    ["ports", "includes", ["uuid", uuid]]]},
                *_take("Logical_Router", f"lr{r}", "ports", lrp)]

    return {"fip": (fip_add, fip_del), "lb": (lb_add, lb_del), "vm": (vm_add, vm_del),
            "net": (net_add, net_del)}


def step(north: LocalNorthd, nb: LocalDb, ops: Ops) -> tuple[float, float, str]:
    """One change, settled: the milliseconds of the run that handles it and of the
    runs after it (the echo of its commits, `sb_cfg`), and the UUID of the first row
    it inserted (if any)."""
    north.nb_changed(nb.transact(ops))
    first = nb.last_results[0].get("uuid", [None, ""])[1]
    t0 = time.perf_counter()
    north.run_once()
    t1 = time.perf_counter()
    north.settle()
    t2 = time.perf_counter()
    return (t1 - t0) * 1000, (t2 - t1) * 1000, str(first)


def bench_changes(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """The `northd_change_bench.py` kinds `--kind` names (by the start of their names),
    `--reps` times each in turn, as that benchmark makes them."""
    table = change_bench.k8s_kinds(args.nodes) if args.nodes else \
        change_bench.kinds(args.switches) if args.switches else cloudgen.kinds(args.cloud)
    chosen = [k for k in table if any(k.startswith(w) for w in args.kind)]
    missing = [w for w in args.kind if not any(k.startswith(w) for k in table)]
    if missing:
        raise SystemExit(f"unknown change kinds: {', '.join(missing)}")
    return [(k, table[k](i)) for i in range(args.reps) for k in chosen
            if table[k](i)[0] != change_bench.SBCTL]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cloud", type=int, default=100, help="routers (cloudgen)")
    ap.add_argument("--nodes", type=int, default=0,
                    help="the ovn-kubernetes-like cluster of this many nodes instead")
    ap.add_argument("--switches", type=int, default=0,
                    help="with --kind: the grid of this many switches x 10 ports instead")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", action="append", help="kinds (default: every one)")
    ap.add_argument("--kind", action="append", default=[],
                    help="instead, kinds of northd_change_bench.py (the start of a name), "
                         "made by the real ovn-nbctl on a throwaway real server")
    ap.add_argument("--profile", type=int, default=0, metavar="N")
    ap.add_argument("--self-check", action="store_true")
    args = ap.parse_args()
    nb, sb = LocalDb(_schema(NB_SCHEMA)), LocalDb(_schema(SB_SCHEMA))
    t0 = time.perf_counter()
    changes = bench_changes(args) if args.kind else []
    captured: list[tuple[str, Ops]] = []
    if args.nodes:
        captured = load_k8s(nb, sb, args.nodes, changes)
    elif args.switches and args.kind:
        add_chassis(sb, "gw1", "192.0.2.1")
        captured = load_real(nb, lambda db: load_grid(db, args.switches), changes)
    elif args.kind:
        add_chassis(sb, "gw1", "192.0.2.1")
        captured = load_real(nb, lambda db: cloudgen.load(db, args.cloud), changes)
    else:
        add_chassis(sb, "gw1", "192.0.2.1")
        load(nb, args.cloud)
    north = LocalNorthd(nb, sb, self_check=args.self_check)
    gctune.tune()  # (the collector as the daemon sets it, the settled state frozen)
    north.settle()
    gctune.freeze()
    what = f"{args.nodes} nodes" if args.nodes else \
        f"{args.switches} switches" if args.switches else f"cloud {args.cloud}"
    print(f"{what}: loaded and settled in {time.perf_counter() - t0:.1f} s")
    prof = cProfile.Profile() if args.profile else None
    if args.kind:
        replay(north, nb, captured, prof)
    else:
        every = k8s_kinds(nb) if args.nodes else kinds(args.cloud, nb)
        chosen = {k: v for k, v in every.items() if not args.only or k in args.only}
        for name, (do, undo) in chosen.items():
            run_kind(north, nb, name, do, undo, args.reps, prof)
    if prof is not None:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(args.profile)
    return 0


def replay(north: LocalNorthd, nb: LocalDb, captured: list[tuple[str, Ops]],
           prof: cProfile.Profile | None) -> None:
    """Each captured change in turn, the milliseconds of its run per kind."""
    timed = Timed(north, nb, prof)
    for label, ops in captured:
        timed.step(label, ops)
    timed.report()


def run_kind(north: LocalNorthd, nb: LocalDb, name: str, do: Callable[[int], Ops],
             undo: Callable[[str], Ops], reps: int, prof: cProfile.Profile | None) -> None:
    """A kind of this tool's own, `reps` times (add, then its undo)."""
    timed = Timed(north, nb, prof)
    for i in range(reps):
        made = timed.step(f"{name} add", do(i))
        timed.step(f"{name} del", undo(made))
    timed.report()


class Timed:
    """Changes made one by one, their runs timed (and profiled) by label."""

    def __init__(self, north: LocalNorthd, nb: LocalDb, prof: cProfile.Profile | None
                 ) -> None:
        self.north, self.nb, self.prof = north, nb, prof
        self.times: dict[str, list[float]] = {}
        self.after: dict[str, list[float]] = {}

    def step(self, label: str, ops: Ops) -> str:
        """One change; the UUID of the first row it inserted (if any)."""
        north = self.north
        before = {n: north.stat(n) for n in ("northd", "lflow", "sync_to_sb")}
        if self.prof is not None:
            self.prof.enable()
        ms, then, made = step(north, self.nb, ops)
        if self.prof is not None:
            self.prof.disable()
        self.times.setdefault(label, []).append(ms)
        self.after.setdefault(label, []).append(then)
        again = [n for n, v in before.items() if north.stat(n) != v]
        if again:
            print(f"  {label} #{len(self.times[label]) - 1}: recomputed {again}")
        return made

    def report(self) -> None:
        for label, xs in self.times.items():
            _report(label, xs, self.after[label])


def _report(label: str, xs: list[float], then: list[float]) -> None:
    xs, ys = sorted(xs), sorted(then)
    print(f"{label}: median {xs[len(xs) // 2]:.1f} ms, min {xs[0]:.1f} ms; "
          f"the runs after it {ys[len(ys) // 2]:.1f} ms")


if __name__ == "__main__":
    sys.exit(main())
