"""Monitor fan-out, side by side: what one Southbound change costs the real ovsdb-server
and ours when hundreds of chassis watch the database as ovn-controller 23.03 does.

The database is a k8s-like Southbound (ovn-heater's shape): per node a switch and a
gateway router, one cluster router and one join switch, pods bound on their node, flows
on every datapath and on a datapath group of all node switches. Each simulated chassis
is one connection with one `monitor_cond_since` whose conditions are those
`update_sb_monitors` sends (controller/ovn-controller.c): Port_Binding by type, by
chassis, by options and by its local ports and datapaths, Logical_Flow by local
datapath or any datapath group, its own Chassis_Private, every Datapath_Binding,
Logical_DP_Group, Chassis, Encap and SB_Global row. `--monitor-all` asks for every row
instead (`ovn-monitor-all=true`). The local datapaths of node i's chassis are its switch,
its gateway router, the cluster router and the join switch.

Changes, each its own transaction from one more connection (northd's place), each one
waited for until every chassis that should see it has its update:
- `port-local`: a pod's Port_Binding modified (seen by its node's chassis);
- `flows-local`: 5 flows inserted on a node switch (seen by that node's chassis);
- `flows-router`: 5 flows inserted on the cluster router (seen by every chassis);
- `flows-group`: 5 flows inserted on the node switches' group (seen by every chassis);
- `nb-cfg`: SB_Global.nb_cfg incremented (seen by every chassis).

With `--burst K`, each change kind is also sent as a burst: K transactions at once
(pipelined on northd's connection), then one marker (SB_Global.nb_cfg set to a new
value); measured are the server's CPU for the whole burst, the wall time until every
chassis has the marker, and the updates and bytes each chassis received. A kind
`ours-dN` is our server with `--update-delay-ms=N` (seed 004's delayed wake on the
server's output): a burst then reaches each chassis as a few merged updates.

Measured first, once per transport: every chassis connecting at once and receiving its
initial rows (a reconnection storm after a server restart), the server's CPU and the
wall time until the last chassis has its rows. Then per change: the server's CPU time
(from /proc, user + system, over the whole batch), that CPU time per chassis that
received the change, and the wall time from the transaction's send to the last
recipient's update (and to the first's: all the chassis are read by this one process,
so the last one's time includes reading the others). Ratios are ours / real: below 1.0 we
are cheaper. The servers run at once, standalone, each with its own chassis; the
batches of the two are interleaved (real, ours, ours, real, ...) and each figure is the
median over the repetitions. Usage:

    python bench/fanout.py [--chassis 100,300] [--changes 40] [--reps 3]
                           [--transport unix,tcp,ssl] [--monitor-all] [--json OUT]
                           [--kinds real,ours,ours-d5] [--burst K]

`ssl` reaches each server through a `pssl:` Connection row, with certificates of a
throwaway CA verified both ways. All the chassis live in this process (one socket each,
read with `selectors`); their
own CPU is not the servers' and is not counted. Servers run as our children in a
temporary directory and are stopped by pid at the end, whatever happens.
"""

from __future__ import annotations

import argparse
import json
import selectors
import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyovsdb.jsonrpc import tls
from pyovsdb.jsonrpc.client import Client, connect
from pyovsdb.jsonrpc.stream import JsonStream, dumps
from pyovsdb.scale.chassis import local_conditions
from pyovsdb.testing import (
    SB_SCHEMA,
    ServerProcess,
    compile_bytecode,
    cpu_seconds,
    create_db,
    free_port,
)
from pyovsdb.testing_pki import Authority, Cert

KINDS = ("real", "ours")
PKI: dict[str, Cert] = {}  # (`--transport ssl`) the server's and the chassis' certificates
SCENARIOS = ("port-local", "flows-local", "flows-router", "flows-group", "nb-cfg")
PODS, FLOWS, SHARED_FLOWS = 10, 40, 200
# -- the database -----------------------------------------------------------------------


def flow(dp: tuple[str, Any], i: int, table: int = 10) -> dict[str, Any]:
    """One Logical_Flow on a datapath (`("logical_datapath", ref)`) or a group."""
    col, ref = dp
    return {"op": "insert", "table": "Logical_Flow", "row": {
        col: ref, "pipeline": "ingress", "table_id": table, "priority": 100 + i % 1000,
        "match": f"inport == \"p{i}\" && ip4.src == 10.{i >> 16 & 255}.{i >> 8 & 255}."
                 f"{i & 255}",
        "actions": "next;", "external_ids": ["map", [["stage-name", "ls_in_acl"]]]}}


def topology_ops(n: int, port: int, ssl_port: int = 0) -> list[dict[str, Any]]:
    """The Southbound of an n-node cluster, as one transaction (named uuids), with the
    TCP remote as deployments at scale configure it: a Connection row whose inactivity
    probe is off (with `--remote=ptcp` the real server closed a chassis connection
    during a 300-chassis storm, presumably by its default 5 s probe)."""
    conns = [("conn", f"ptcp:{port}:127.0.0.1")]
    if ssl_port:
        conns.append(("sslconn", f"pssl:{ssl_port}:127.0.0.1"))
    ops: list[dict[str, Any]] = [
        *({"op": "insert", "table": "Connection", "uuid-name": name,
           "row": {"target": target, "inactivity_probe": 0}} for name, target in conns),
        {"op": "insert", "table": "SB_Global",
         "row": {"connections": ["set", [["named-uuid", name] for name, _ in conns]]}}]
    key = iter(range(1, 1 << 24))

    def dp(name: str, ref: str) -> None:
        ops.append({"op": "insert", "table": "Datapath_Binding", "uuid-name": ref,
                    "row": {"tunnel_key": next(key),
                            "external_ids": ["map", [["name", name]]]}})

    dp("cluster-router", "cr")
    dp("join", "join")
    for i in range(n):
        dp(f"node{i}", f"ls{i}")
        dp(f"GR_node{i}", f"gr{i}")
    ops.append({"op": "insert", "table": "Logical_DP_Group", "uuid-name": "grp",
                "row": {"datapaths": ["set", [["named-uuid", f"ls{i}"] for i in range(n)]]}})
    nflow = iter(range(1 << 30))
    for i in range(n):
        name = f"chassis-{i}"
        ops.append({"op": "insert", "table": "Encap", "uuid-name": f"enc{i}", "row": {
            "type": "geneve", "ip": f"192.168.{i >> 8}.{i & 255}", "chassis_name": name,
            "options": ["map", [["csum", "true"]]]}})
        ops.append({"op": "insert", "table": "Chassis", "uuid-name": f"ch{i}", "row": {
            "name": name, "hostname": f"node{i}", "encaps": ["named-uuid", f"enc{i}"]}})
        ops.append({"op": "insert", "table": "Chassis_Private", "row": {
            "name": name, "chassis": ["named-uuid", f"ch{i}"]}})
        for j in range(PODS):
            ops.append({"op": "insert", "table": "Port_Binding", "row": {
                "logical_port": f"pod-{i}-{j}", "datapath": ["named-uuid", f"ls{i}"],
                "tunnel_key": j + 2, "chassis": ["named-uuid", f"ch{i}"],
                "encap": ["named-uuid", f"enc{i}"], "up": ["set", [True]],
                "mac": f"0a:58:0a:{i >> 8 & 255:02x}:{i & 255:02x}:{j:02x} 10.{i >> 8}."
                       f"{i & 255}.{j + 3}"}})
        for pname, dpref, peer in ((f"stor-node{i}", f"ls{i}", f"rtos-node{i}"),
                                   (f"rtos-node{i}", "cr", f"stor-node{i}"),
                                   (f"jtor-GR_node{i}", "join", f"rtoj-GR_node{i}"),
                                   (f"rtoj-GR_node{i}", f"gr{i}", f"jtor-GR_node{i}")):
            ops.append({"op": "insert", "table": "Port_Binding", "row": {
                "logical_port": pname, "type": "patch", "datapath": ["named-uuid", dpref],
                "tunnel_key": 1 if dpref.startswith(("ls", "gr")) else i + 1,
                "options": ["map", [["peer", peer]]]}})
        for ref in (f"ls{i}", f"gr{i}"):
            for _ in range(FLOWS):
                ops.append(flow(("logical_datapath", ["named-uuid", ref]), next(nflow)))
    for _ in range(SHARED_FLOWS):
        ops.append(flow(("logical_dp_group", ["named-uuid", "grp"]), next(nflow)))
        ops.append(flow(("logical_datapath", ["named-uuid", "cr"]), next(nflow)))
        ops.append(flow(("logical_datapath", ["named-uuid", "join"]), next(nflow)))
    return ops


def uuids_by_name(client: Client, table: str, column: str) -> dict[str, str]:
    rows = transact(client, [{"op": "select", "table": table, "where": [],
                              "columns": ["_uuid", column]}])[0]["rows"]
    return {(r[column][1][0][1] if column == "external_ids" else r[column]): r["_uuid"][1]
            for r in rows}


def transact(client: Client, ops: list[dict[str, Any]]) -> list[Any]:
    reply = client.call("transact", ["OVN_Southbound", *ops])
    for r in reply:
        if r is not None and "error" in r:
            raise SystemExit(f"transaction failed: {r}")
    return reply


# -- the chassis ------------------------------------------------------------------------


def conditions(i: int, ch: str, dps: list[str], monitor_all: bool) -> dict[str, Any]:
    """The monitor requests of node i's chassis (uuid `ch`, local datapaths `dps`):
    ovn-controller's conditions (`scale.chassis.local_conditions`) on its pods and
    datapaths, every row of the other tables it monitors."""
    pods = [f"pod-{i}-{j}" for j in range(PODS)]
    cond = local_conditions(f"chassis-{i}", ch, pods, dps, monitor_all)
    return {**{t: [{"where": w}] for t, w in cond.items()}, "Logical_DP_Group": [{}],
            "Datapath_Binding": [{}], "Chassis": [{}], "Encap": [{}], "SB_Global": [{}]}


class Chassis:
    """One connection with one monitor; counts what it receives."""

    def __init__(self, remote: str, index: int) -> None:
        self.sock = connect(remote)
        self.sock.setblocking(False)
        self.index = index
        self.stream = JsonStream(max_size=1 << 31)
        self.updates = 0
        self.updated_at = 0.0  # perf_counter() of the last update received
        self.bytes = 0
        self.messages = 0
        self.ready = False
        self.nb_cfg = 0  # SB_Global.nb_cfg as this chassis's updates tell it

    def start(self, monitors: dict[str, Any]) -> None:
        msg = {"id": 1, "method": "monitor_cond_since",
               "params": ["OVN_Southbound", ["monid", "OVN_Southbound"], monitors,
                          "00000000-0000-0000-0000-000000000000"]}
        self.sock.setblocking(True)
        self.sock.sendall(dumps(msg))
        self.sock.setblocking(False)

    def on_readable(self) -> None:
        try:
            data = self.sock.recv(1 << 20)
            # (TLS: what the TLS layer already holds is not signalled by the socket)
            while isinstance(self.sock, ssl.SSLSocket) and self.sock.pending():
                data += self.sock.recv(1 << 20)
        except (BlockingIOError, ssl.SSLWantReadError):
            return
        if not data:
            raise SystemExit(f"chassis {self.index}: the server closed the connection")
        self.bytes += len(data)
        for msg in self.stream.feed(data):
            self.messages += 1
            method = msg.get("method")
            if method == "update3":
                self.updates += 1
                self.updated_at = time.perf_counter()
                self._note_nb_cfg(msg["params"][2])
            elif method == "echo":
                self.sock.setblocking(True)
                self.sock.sendall(dumps({"id": msg["id"], "result": msg["params"],
                                         "error": None}))
                self.sock.setblocking(False)
            elif msg.get("id") == 1:
                if msg.get("error") is not None:
                    raise SystemExit(f"chassis {self.index}: monitor refused: {msg}")
                self.ready = True
                self._note_nb_cfg(msg["result"][2])

    def _note_nb_cfg(self, tables: dict[str, Any]) -> None:
        for change in tables.get("SB_Global", {}).values():
            for row in change.values():
                if isinstance(row, dict) and "nb_cfg" in row:
                    self.nb_cfg = row["nb_cfg"]


class Fleet:
    """Every chassis of one server, polled together."""

    def __init__(self, remote: str, n: int, monitors: Callable[[int], dict[str, Any]]) -> None:
        self.sel = selectors.DefaultSelector()
        self.chassis = [Chassis(remote, i) for i in range(n)]
        for c in self.chassis:
            self.sel.register(c.sock, selectors.EVENT_READ, c)
            c.start(monitors(c.index))
        self.poll_until(lambda: all(c.ready for c in self.chassis), 600,
                        f"to connect ({sum(c.ready for c in self.chassis)} of {n} did)")

    def poll_until(self, done: Callable[[], bool], timeout: float, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out waiting for the chassis {what}")
            for key, _ in self.sel.select(0.5):
                key.data.on_readable()

    def close(self) -> None:
        for c in self.chassis:
            self.sel.unregister(c.sock)
            c.sock.close()
        self.sel.close()


# -- one server -------------------------------------------------------------------------


class Target:
    def __init__(self, kind: str, root: Path, n: int) -> None:
        d = root / kind
        d.mkdir()
        server_kind, delay = _kind(kind)
        db = create_db(server_kind, d / "sb.db", SB_SCHEMA)
        self.kind = kind
        self.port = free_port()
        self.ssl_port = free_port() if PKI else 0
        extra = ["--remote=db:OVN_Southbound,SB_Global,connections",
                 *(PKI["server"].options() if PKI else [])]
        if delay:
            extra.append(f"--update-delay-ms={delay}")
        self.server = ServerProcess(server_kind, d, [db], name="sb", extra=extra).start()
        self.marker = 1 << 40  # nb_cfg values of the burst markers (above any other)
        self.n = n
        self.fleet: Fleet | None = None
        self.northd: Client | None = None
        self.seq = 0

    def populate(self) -> None:
        with Client(self.server.unix, timeout=600) as c:
            transact(c, topology_ops(self.n, self.port, self.ssl_port))
            self.dps = uuids_by_name(c, "Datapath_Binding", "external_ids")
            self.chassis = uuids_by_name(c, "Chassis", "name")
            self.group = transact(c, [{"op": "select", "table": "Logical_DP_Group",
                                       "where": []}])[0]["rows"][0]["_uuid"][1]
            self.sb_global = transact(c, [{"op": "select", "table": "SB_Global",
                                           "where": []}])[0]["rows"][0]["_uuid"][1]
        deadline = time.monotonic() + 30  # the server listens once it reads the row
        while True:
            try:
                connect(f"tcp:127.0.0.1:{self.port}").close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"{self.kind}: no listener on {self.port}") from None
                time.sleep(0.05)

    def connect(self, transport: str, monitor_all: bool) -> None:
        remote = {"tcp": f"tcp:127.0.0.1:{self.port}", "ssl": f"ssl:127.0.0.1:{self.ssl_port}",
                  "unix": self.server.unix}[transport]
        d = self.dps

        def monitors(i: int) -> dict[str, Any]:
            local = [d[f"node{i}"], d[f"GR_node{i}"], d["cluster-router"], d["join"]]
            return conditions(i, self.chassis[f"chassis-{i}"], local, monitor_all)

        assert self.server.proc is not None
        cpu0, t0 = cpu_seconds(self.server.proc.pid), time.perf_counter()
        self.fleet = Fleet(remote, self.n, monitors)
        self.connected = {"wall_s": time.perf_counter() - t0,
                          "cpu_s": cpu_seconds(self.server.proc.pid) - cpu0}
        self.northd = Client(remote, timeout=60)

    def disconnect(self) -> None:
        if self.fleet is not None:
            self.fleet.close()
            self.fleet = None
        if self.northd is not None:
            self.northd.close()
            self.northd = None

    def change(self, scenario: str) -> tuple[list[dict[str, Any]], list[int]]:
        """The next change of `scenario` and the chassis that must see it."""
        self.seq += 1
        s, n = self.seq, self.n
        k = s * 7919 % n
        everyone = list(range(n))
        if scenario == "port-local":
            return ([{"op": "update", "table": "Port_Binding",
                      "where": [["logical_port", "==", f"pod-{k}-{s % PODS}"]],
                      "row": {"external_ids": ["map", [["seq", str(s)]]]}}], [k])
        if scenario == "flows-local":
            ref = ["uuid", self.dps[f"node{k}"]]
            return [flow(("logical_datapath", ref), (1 << 24) + s * 5 + j)
                    for j in range(5)], [k]
        if scenario == "flows-router":
            ref = ["uuid", self.dps["cluster-router"]]
            return [flow(("logical_datapath", ref), (1 << 25) + s * 5 + j)
                    for j in range(5)], everyone
        if scenario == "flows-group":
            ref = ["uuid", self.group]
            return [flow(("logical_dp_group", ref), (1 << 26) + s * 5 + j)
                    for j in range(5)], everyone
        assert scenario == "nb-cfg"
        return ([{"op": "mutate", "table": "SB_Global", "where": [],
                  "mutations": [["nb_cfg", "+=", 1]]}], everyone)

    def batch(self, scenario: str, changes: int) -> dict[str, float]:
        fleet, northd = self.fleet, self.northd
        assert fleet is not None and northd is not None and self.server.proc is not None
        pid = self.server.proc.pid
        walls: list[float] = []
        firsts: list[float] = []
        recipients = 0
        sent_bytes = sent_msgs = 0
        cpu0 = cpu_seconds(pid)
        for _ in range(changes):
            ops, who = self.change(scenario)
            before = [fleet.chassis[i].updates for i in who]
            b0 = sum(c.bytes for c in fleet.chassis)
            m0 = sum(c.messages for c in fleet.chassis)
            t0 = time.perf_counter()
            msg_id = northd.send("transact", ["OVN_Southbound", *ops])
            fleet.poll_until(lambda who=who, before=before: all(
                fleet.chassis[i].updates > b for i, b in zip(who, before, strict=True)), 60,
                f"of {self.kind} to receive {scenario} #{self.seq}")
            walls.append(time.perf_counter() - t0)
            firsts.append(min(fleet.chassis[i].updated_at for i in who) - t0)
            reply = northd.wait(msg_id)
            if reply.get("error") is not None or any(
                    r is not None and "error" in r for r in reply["result"]):
                raise SystemExit(f"{self.kind}: change failed: {reply}")
            recipients += len(who)
            sent_bytes += sum(c.bytes for c in fleet.chassis) - b0
            sent_msgs += sum(c.messages for c in fleet.chassis) - m0
        cpu = cpu_seconds(pid) - cpu0
        return {"cpu_us_per_change": cpu / changes * 1e6,
                "cpu_us_per_recipient": cpu / recipients * 1e6,
                "wall_ms": statistics.median(walls) * 1e3,
                "first_ms": statistics.median(firsts) * 1e3,
                "bytes_per_change": sent_bytes / changes,
                "messages_per_change": sent_msgs / changes}

    def burst(self, scenario: str, k: int) -> dict[str, float]:
        """`k` changes of `scenario` at once, then the marker; until every chassis
        has the marker."""
        fleet, northd = self.fleet, self.northd
        assert fleet is not None and northd is not None and self.server.proc is not None
        pid = self.server.proc.pid
        self.marker += 1
        marker = self.marker
        u0 = sum(c.updates for c in fleet.chassis)
        b0 = sum(c.bytes for c in fleet.chassis)
        cpu0, t0 = cpu_seconds(pid), time.perf_counter()
        ids = [northd.send("transact", ["OVN_Southbound", *self.change(scenario)[0]])
               for _ in range(k)]
        ids.append(northd.send("transact", ["OVN_Southbound", {
            "op": "update", "table": "SB_Global", "where": [], "row": {"nb_cfg": marker}}]))
        fleet.poll_until(lambda: all(c.nb_cfg == marker for c in fleet.chassis), 120,
                         f"of {self.kind} to receive the marker of a {scenario} burst")
        wall = time.perf_counter() - t0
        for msg_id in ids:
            reply = northd.wait(msg_id)
            if reply.get("error") is not None or any(
                    r is not None and "error" in r for r in reply["result"]):
                raise SystemExit(f"{self.kind}: change failed: {reply}")
        time.sleep(0.05)  # (what the server still does for the burst: counted)
        for key, _ in fleet.sel.select(0):
            key.data.on_readable()
        cpu = cpu_seconds(pid) - cpu0
        n = len(fleet.chassis)
        return {"cpu_ms": cpu * 1e3, "wall_ms": wall * 1e3,
                "updates_per_chassis": (sum(c.updates for c in fleet.chassis) - u0) / n,
                "bytes_per_chassis": (sum(c.bytes for c in fleet.chassis) - b0) / n}

    def stop(self) -> None:
        self.disconnect()
        self.server.stop()


def _kind(kind: str) -> tuple[str, int]:
    """The server of a kind (`real`, `ours`, `ours-dN`) and its update delay in ms."""
    if kind.startswith("ours-d") and kind[6:].isdigit():
        return "ours", int(kind[6:])
    if kind in KINDS:
        return kind, 0
    raise SystemExit(f"fanout: unknown kind {kind!r} (real, ours, ours-dN)")


# -- the run ----------------------------------------------------------------------------


def measure(targets: dict[str, Target], transport: str, args: argparse.Namespace,
            ) -> dict[str, dict[str, dict[str, float]]]:
    runs: dict[str, dict[str, list[dict[str, float]]]] = {
        s: {k: [] for k in targets} for s in args.scenarios.split(",")}
    for t in targets.values():
        t.connect(transport, args.monitor_all)
    connect = {k: t.connected for k, t in targets.items()}
    try:
        for r in range(args.reps):
            order = list(targets) if r % 2 == 0 else list(reversed(targets))
            for scenario in args.scenarios.split(","):
                for kind in order:
                    if args.changes:
                        targets[kind].batch(scenario, 3)  # warm-up, not counted
                        runs[scenario][kind].append(targets[kind].batch(scenario,
                                                                        args.changes))
                    if args.burst:
                        runs.setdefault(f"burst {scenario}", {k: [] for k in targets})
                        runs[f"burst {scenario}"][kind].append(
                            targets[kind].burst(scenario, args.burst))
    finally:
        for t in targets.values():
            t.disconnect()
    out = {s: {k: {m: statistics.median(x[m] for x in v) for m in v[0]}
               for k, v in per.items() if v} for s, per in runs.items()}
    out["connect-all"] = connect
    return out


def report(n: int, transport: str, res: dict[str, dict[str, dict[str, float]]]) -> None:
    print(f"\n{n} chassis, {transport}: server CPU per change (us), per recipient (us), "
          "wall to the last recipient (ms), bytes sent per change")
    print(f"{'change':<14}{'real cpu':>10}{'ours cpu':>10}{'ratio':>7}"
          f"{'real/rcpt':>11}{'ours/rcpt':>11}{'real ms':>9}{'ours ms':>9}{'ratio':>7}"
          f"{'real B':>10}{'ours B':>10}{'1st real':>10}{'1st ours':>10}")
    for s, per in res.items():
        if s.startswith("burst "):
            continue
        r, o = per.get("real"), per.get("ours")
        if r is None or o is None:
            continue
        if s == "connect-all":
            print(f"{'(all connect)':<14}{r['cpu_s']:>9.2f}s{o['cpu_s']:>9.2f}s"
                  f"{o['cpu_s'] / r['cpu_s']:>7.2f}{'':>22}{r['wall_s']:>8.2f}s"
                  f"{o['wall_s']:>8.2f}s{o['wall_s'] / r['wall_s']:>7.2f}")
            continue
        print(f"{s:<14}{r['cpu_us_per_change']:>10.0f}{o['cpu_us_per_change']:>10.0f}"
              f"{o['cpu_us_per_change'] / max(r['cpu_us_per_change'], 1):>7.2f}"
              f"{r['cpu_us_per_recipient']:>11.1f}{o['cpu_us_per_recipient']:>11.1f}"
              f"{r['wall_ms']:>9.2f}{o['wall_ms']:>9.2f}{o['wall_ms'] / r['wall_ms']:>7.2f}"
              f"{r['bytes_per_change']:>10.0f}{o['bytes_per_change']:>10.0f}"
              f"{r['first_ms']:>10.2f}{o['first_ms']:>10.2f}")


def report_kinds(n: int, transport: str, res: dict[str, dict[str, dict[str, float]]]
                 ) -> None:
    """Every kind against the real server: per change (one at a time) and bursts."""
    kinds = sorted({k for per in res.values() for k in per if k != "real"})
    print(f"\n{n} chassis, {transport}, each kind / real:")
    for s, per in res.items():
        r = per.get("real")
        if r is None or s == "connect-all":
            continue
        for k in kinds:
            o = per.get(k)
            if o is None:
                continue
            if s.startswith("burst "):
                print(f"  {s:<20} {k:<8} cpu {o['cpu_ms']:8.1f} ms "
                      f"({o['cpu_ms'] / max(r['cpu_ms'], 1e-3):.2f}x)"
                      f"  to the marker {o['wall_ms']:7.1f} ms ({o['wall_ms'] / r['wall_ms']:.2f}x)"
                      f"  updates/chassis {o['updates_per_chassis']:6.1f} (real "
                      f"{r['updates_per_chassis']:.1f})  bytes/chassis "
                      f"{o['bytes_per_chassis']:8.0f} (real {r['bytes_per_chassis']:.0f})")
            else:
                print(f"  {s:<20} {k:<8} cpu/change {o['cpu_us_per_change']:8.0f} us "
                      f"({o['cpu_us_per_change'] / max(r['cpu_us_per_change'], 1):.2f}x)  "
                      f"to the last {o['wall_ms']:7.2f} ms ({o['wall_ms'] / r['wall_ms']:.2f}x)"
                      f"  to the first {o['first_ms']:6.2f} ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chassis", default="100,300")
    ap.add_argument("--changes", type=int, default=40)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--transport", default="unix,tcp")
    ap.add_argument("--kinds", default="real,ours")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--monitor-all", action="store_true")
    ap.add_argument("--burst", type=int, default=0,
                    help="also send each change kind as a burst of this many")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    compile_bytecode()
    if "ssl" in args.transport.split(","):
        ca = Authority(Path(tempfile.mkdtemp(prefix="fanout-pki-")))
        PKI["server"], PKI["chassis"] = ca.issue("server"), ca.issue("chassis")
        c = PKI["chassis"]
        tls.set_client_pki(tls.PkiFiles(c.key, c.cert, c.ca))
    out: dict[str, Any] = {"monitor_all": args.monitor_all, "changes": args.changes,
                           "burst": args.burst, "reps": args.reps, "runs": []}
    for n in (int(x) for x in args.chassis.split(",")):
        with tempfile.TemporaryDirectory(prefix="fanout-") as tmp:
            targets: dict[str, Target] = {}
            try:
                for kind in args.kinds.split(","):
                    targets[kind] = Target(kind, Path(tmp), n)
                    targets[kind].populate()
                for transport in args.transport.split(","):
                    res = measure(targets, transport, args)
                    report(n, transport, res)
                    report_kinds(n, transport, res)
                    out["runs"].append({"chassis": n, "transport": transport,
                                        "results": res})
                    if args.json:  # what is measured survives a later failure
                        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
            finally:
                for t in targets.values():
                    t.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
