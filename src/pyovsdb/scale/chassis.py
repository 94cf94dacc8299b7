"""Simulated chassis for the scale harness: what ovn-controller 23.03 does on the
Southbound, one connection and one replica per chassis, many chassis per process.

Each chassis holds, in its replica (`idl.replica.Replica`, as the IDL's), the rows it
reasons about (bindings, datapaths, chassis, encaps, its private row, SB_Global). It
monitors Logical_Flow as ovn-controller does, so the server sends it every flow of its
datapaths, but counts those rows instead of holding them: their cost stands in the work
burnt per row. That keeps hundreds of chassis in one process on a small machine.

Rules kept here:
- A chassis registers as ovn-controller does (`Encap`, `Chassis` with its feature flags,
  `Chassis_Private`), then monitors the Southbound with the conditions
  `update_sb_monitors` sends (controller/ovn-controller.c, `local_conditions`):
  Port_Binding by type, by its chassis, by `requested_chassis`, by gateway options, by
  its local ports and local datapaths; Logical_Flow by local datapath or any datapath
  group; its own Chassis_Private; every Datapath_Binding, Logical_DP_Group, Chassis,
  Encap and SB_Global row. `monitor_all` asks for every row instead.
- Local datapaths are those of the ports it holds or is asked for, and every datapath
  reachable from them through `patch` ports, or `l3gateway` ports bound to it (as
  `add_local_datapath__` and `need_add_peer_to_local` walk them); when they change, the
  conditions change (`monitor_cond_change`). It binds the `l3gateway` ports of the
  gateway routers pinned to it, and the `chassisredirect` ports (distributed gateway
  ports) whose HA group ranks it first, as ovn-controller does without BFD.
- A reaction does, in one transaction: claim the ports requested for it (`chassis`,
  `encap`), mark up the ports it claimed in an earlier reaction (the flows for them are
  "installed" by then), release ports requested elsewhere, and echo `SB_Global.nb_cfg`
  into its `Chassis_Private` with a timestamp. It looks at the bindings that changed
  since the last reaction and those waiting to go up, not at every row, and walks its
  local datapaths again only after a change that can move them (a link, or a port of
  its own), as ovn-controller's incremental engine does: a pod on one node costs the
  other chassis nothing but the update itself.
- Before reacting it does the work that stands for flow computation: `work_ms` per
  wake plus `work_us_per_row` per row its replica changed since the last wake, burnt
  as CPU. It is woken through a delayed-wake seq (`util.seq`, seed 004): with
  `wake_delay_ms`, a burst of updates costs one wake, not one per update.
- With several Southbound remotes (the members of a cluster), chassis n connects to
  the n-th modulo their number and stays there: ovn-controller picks one at random
  and, not asking for the leader, keeps it while it answers.
- A chassis whose connection drops (an inactivity probe this busy process did not
  answer in time, a server restarted) reconnects with backoff, 1 s doubling to 8 s,
  and monitors again from scratch, as ovn-controller does; it counts its reconnections.
- Each chassis's CPU (applying its updates to its replica, its reactions and their
  work, measured with the thread's CPU clock) and its wakes are counted; the process's
  total (the framing and JSON parsing too) is the stack's to sample.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from ..idl.replica import Replica
from ..idl.row import IdlRow
from ..jsonrpc.session import ClientConnection, ConnectionLost, connect
from ..ovsdb.schema import DatabaseSchema
from ..sim_chassis import BASE_OTHER_CONFIG, run_program, stop_on_signals, write_pidfile
from ..storage.schemafile import load_schema
from ..testing import SB_SCHEMA
from ..util.seq import Seq
from .topology import chassis_name, node_name

log = logging.getLogger("scale_chassis")

def local_conditions(name: str, chassis: str | None, ports: list[str],
                     datapaths: list[str], monitor_all: bool) -> dict[str, list[Any]]:
    """ovn-controller 23.03's monitor conditions (`update_sb_monitors`) for chassis
    `name` (uuid `chassis`, None before it is registered), its local `ports` and local
    `datapaths` (uuids)."""
    if monitor_all:
        return {"Port_Binding": [True], "Logical_Flow": [True], "Chassis_Private": [True]}
    pb: list[Any] = [["type", "==", "patch"], ["type", "==", "chassisredirect"],
                     ["type", "==", "external"]]
    private: list[Any] = [True]
    if chassis is not None:
        pb += [["chassis", "==", ["uuid", chassis]],
               ["requested_chassis", "==", ["uuid", chassis]],
               ["options", "includes", ["map", [["l2gateway-chassis", name]]]],
               ["options", "includes", ["map", [["l3gateway-chassis", name]]]]]
        private = [["name", "==", name]]
    for p in sorted(ports):
        pb += [["logical_port", "==", p], ["parent_port", "==", p]]
    lf: list[Any] = []
    for d in sorted(datapaths):
        pb.append(["datapath", "==", ["uuid", d]])
        lf.append(["logical_datapath", "==", ["uuid", d]])
    lf.append(["logical_dp_group", "!=", ["set", []]])
    return {"Port_Binding": pb, "Logical_Flow": lf, "Chassis_Private": private}


def burn(ms: float) -> None:
    """Spend `ms` of CPU (the stand-in for computing flows)."""
    end = time.thread_time() + ms / 1000.0
    x = 0
    while time.thread_time() < end:
        for _ in range(200):
            x += 1


MONID = ["monid", "OVN_Southbound"]
ZERO_UUID = "00000000-0000-0000-0000-000000000000"
# Replicated as rows; Logical_Flow is monitored as ovn-controller monitors it, but its
# rows are only counted (their cost is the `work_us_per_row` burnt for each).
REPLICATED = ("Chassis", "Chassis_Private", "Encap", "Port_Binding", "Datapath_Binding",
              "Logical_DP_Group", "SB_Global", "HA_Chassis_Group", "HA_Chassis")


class SimChassis:
    """One simulated ovn-controller (module rules)."""

    def __init__(self, node: int, sb: str, schema: DatabaseSchema, *, work_ms: float = 0.0,
                 work_us_per_row: float = 0.0, wake_delay_ms: float = 0.0,
                 monitor_all: bool = False,
                 wall_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.name = chassis_name(node)
        self.hostname = node_name(node)
        self.encap_ip = f"192.168.{node // 250}.{node % 250 + 1}"
        self.sb = sb
        self.work_ms = work_ms
        self.work_us_per_row = work_us_per_row
        self.wake_delay_ms = wake_delay_ms
        self.monitor_all = monitor_all
        self.wall_ms = wall_ms
        self.schema = schema
        self.replica = Replica(schema, {t: None for t in REPLICATED})
        self.conditions = local_conditions(self.name, None, [], [], monitor_all)
        self.conn: ClientConnection | None = None
        self.seq = Seq()
        self.rows_pending = 0
        self.flows = 0  # Logical_Flow rows it holds
        self.chassis_uuid: str | None = None
        self.datapaths: frozenset[str] = frozenset()
        self.ports: frozenset[str] = frozenset()
        # Port_Bindings changed since the last reaction, and those it claimed in an
        # earlier reaction that are not up yet: what a reaction looks at (not every row).
        self.dirty: set[str] = set()
        self.pending_up: set[str] = set()
        self.relocate = True  # a change that may move its local datapaths
        self.cpu = 0.0
        self.wakes = 0
        self.updates = 0  # update notifications received
        self.claims = 0
        self.reconnects = 0
        self._task: asyncio.Task[None] | None = None
        self._keeper: asyncio.Task[None] | None = None

    # -- the connection and the replica ------------------------------------------------

    def _apply(self, updates: dict[str, Any]) -> None:
        t0 = time.thread_time()
        flows = updates.pop("Logical_Flow", None)
        if flows:
            self.rows_pending += len(flows)
            for change in flows.values():
                if "insert" in change or "initial" in change:
                    self.flows += 1
                elif "delete" in change:
                    self.flows -= 1
        if updates:
            cs = self.replica.apply_update2(updates)
            self.rows_pending += sum(len(rows) for rows in cs.tables.values())
            for uuid, change in cs.tables.get("Port_Binding", {}).items():
                self.dirty.add(uuid)
                if not self.relocate and any(
                        r is not None and self._shapes_locality(r)
                        for r in (change.old, change.new)):
                    self.relocate = True
        self.seq.change()
        self.cpu += time.thread_time() - t0

    def _notified(self, method: str, params: list[Any]) -> None:
        if method == "update3" and len(params) == 3:
            self.updates += 1
            self._apply(params[2])

    def _requests(self) -> dict[str, Any]:
        out: dict[str, Any] = {t: [{}] for t in REPLICATED}
        for table, where in self.conditions.items():
            out[table] = [{"where": where}]
        return out

    async def _transact(self, ops: list[dict[str, Any]]) -> list[Any]:
        assert self.conn is not None
        results = await self.conn.request("transact", ["OVN_Southbound", *ops])
        for r in results:
            if r is not None and "error" in r:
                raise RuntimeError(f"{self.name}: transaction failed: {r}")
        return list(results)

    # -- reading the replica ----------------------------------------------------------

    def _mine(self) -> tuple[IdlRow | None, IdlRow | None, IdlRow | None]:
        r = self.replica
        ch = next((x for x in r["Chassis"].rows.values() if x.name == self.name), None)
        enc = next((x for x in r["Encap"].rows.values() if x.chassis_name == self.name), None)
        priv = next((x for x in r["Chassis_Private"].rows.values() if x.name == self.name),
                    None)
        return ch, enc, priv

    def _local(self, ch: IdlRow) -> tuple[frozenset[str], frozenset[str]]:
        """Its local ports and datapaths (module rules)."""
        by_name: dict[str, IdlRow] = {}
        ports: set[str] = set()
        start: set[str | None] = set()
        for pb in self.replica["Port_Binding"].rows.values():
            by_name[pb.logical_port] = pb
            if _uuid_of(pb.chassis) == ch.uuid or _uuid_of(pb.requested_chassis) == ch.uuid:
                if pb.type == "":
                    ports.add(pb.logical_port)
                start.add(_uuid_of(pb.datapath))
        links: dict[str, list[IdlRow]] = {}
        for pb in by_name.values():
            # patch ports join datapaths; a gateway router's ports only on its chassis
            if pb.type == "patch" or (pb.type == "l3gateway"
                                      and _uuid_of(pb.chassis) == ch.uuid):
                links.setdefault(_uuid_of(pb.datapath) or "", []).append(pb)
        seen: set[str | None] = set(start)
        todo = list(start)
        while todo:
            for pb in links.get(todo.pop() or "", ()):
                peer = by_name.get(pb.options.get("peer", ""))
                dp = _uuid_of(peer.datapath) if peer is not None else None
                if dp is not None and dp not in seen:
                    seen.add(dp)
                    todo.append(dp)
        return frozenset(ports), frozenset(d for d in seen if d)

    # -- one reaction -----------------------------------------------------------------

    def _register_ops(self) -> list[dict[str, Any]]:
        return [
            {"op": "insert", "table": "Encap", "uuid-name": "encap", "row": {
                "type": "geneve", "ip": self.encap_ip, "chassis_name": self.name,
                "options": ["map", [["csum", "true"]]]}},
            {"op": "insert", "table": "Chassis", "uuid-name": "chassis", "row": {
                "name": self.name, "hostname": self.hostname,
                "encaps": ["named-uuid", "encap"],
                "other_config": ["map", sorted(BASE_OTHER_CONFIG.items())]}},
            {"op": "insert", "table": "Chassis_Private", "row": {
                "name": self.name, "chassis": ["named-uuid", "chassis"]}},
        ]

    def _reaction_ops(self, ch: IdlRow, enc: IdlRow, priv: IdlRow) -> list[dict[str, Any]]:
        ops: list[dict[str, Any]] = []

        def update(row: IdlRow, values: dict[str, Any]) -> None:
            ops.append({"op": "update", "table": row.table.name,
                        "where": [["_uuid", "==", ["uuid", row.uuid]]], "row": values})

        me, encap = ["uuid", ch.uuid], ["uuid", enc.uuid]
        table = self.replica["Port_Binding"]
        todo, self.dirty = self.dirty | self.pending_up, set()
        claimed: set[str] = set()
        for uuid in sorted(todo):
            pb = table.get(uuid)
            if pb is None:
                self.pending_up.discard(uuid)
                continue
            mine = _uuid_of(pb.chassis) == ch.uuid
            if pb.type == "l3gateway":  # a gateway router's port: bound where it is pinned
                if pb.options.get("l3gateway-chassis") == self.name and not mine:
                    update(pb, {"chassis": me})
                continue
            if pb.type == "chassisredirect":  # a gateway port: bound where it is active
                if not mine and active_gateway(pb) == ch.uuid:
                    update(pb, {"chassis": me})
                continue
            if pb.type != "":
                continue
            wanted = _uuid_of(pb.requested_chassis) == ch.uuid
            if wanted and not mine:
                update(pb, {"chassis": me, "encap": encap, "up": ["set", [False]]})
                self.claims += 1
                claimed.add(uuid)
            elif wanted and pb.up is not True:
                if uuid in self.pending_up:  # its flows were computed since the claim
                    update(pb, {"up": ["set", [True]]})
                    self.pending_up.discard(uuid)
                else:
                    claimed.add(uuid)
            elif mine and not wanted and pb.requested_chassis:
                update(pb, {"chassis": ["set", []], "encap": ["set", []],
                            "up": ["set", [False]]})
            else:
                self.pending_up.discard(uuid)
        self.pending_up |= claimed
        sb_global = next(iter(self.replica["SB_Global"].rows.values()), None)
        if sb_global is not None and priv.nb_cfg != sb_global.nb_cfg:
            update(priv, {"nb_cfg": sb_global.nb_cfg, "nb_cfg_timestamp": self.wall_ms()})
        return ops

    def _shapes_locality(self, pb: IdlRow) -> bool:
        """Whether a Port_Binding (before or after a change) can move the local
        datapaths: a link between datapaths, or a port of this chassis."""
        if pb.type in ("patch", "l3gateway", "chassisredirect"):
            return True
        me = self.chassis_uuid
        return me is None or _uuid_of(pb.chassis) == me or _uuid_of(pb.requested_chassis) == me

    def _follow(self, ch: IdlRow) -> dict[str, Any] | None:
        """The monitor conditions to change, if the local ports or datapaths did."""
        if not self.relocate and ch.uuid == self.chassis_uuid:
            return None
        self.relocate = False
        ports, datapaths = self._local(ch)
        if ch.uuid == self.chassis_uuid and ports == self.ports \
                and datapaths == self.datapaths:
            return None
        self.chassis_uuid, self.ports, self.datapaths = ch.uuid, ports, datapaths
        conds = local_conditions(self.name, ch.uuid, sorted(ports), sorted(datapaths),
                                 self.monitor_all)
        changed = {t: [{"where": w}] for t, w in conds.items() if w != self.conditions.get(t)}
        self.conditions = conds
        return changed or None

    async def react(self) -> None:
        """One wake: the work, the reaction's transaction, the conditions followed.
        Only what runs between awaits is counted as this chassis's CPU."""
        t0 = time.thread_time()
        self.wakes += 1
        rows, self.rows_pending = self.rows_pending, 0
        burn(self.work_ms + rows * self.work_us_per_row / 1000.0)
        ch, enc, priv = self._mine()
        if ch is None or enc is None or priv is None:
            ops = self._register_ops()
        else:
            ops = self._reaction_ops(ch, enc, priv)
        self.cpu += time.thread_time() - t0
        if ops:
            await self._transact(ops)
        t1 = time.thread_time()
        ch, _, _ = self._mine()
        changed = self._follow(ch) if ch is not None else None
        self.cpu += time.thread_time() - t1
        if changed and self.conn is not None:
            await self.conn.request("monitor_cond_change", [MONID, MONID, changed])

    # -- life cycle -------------------------------------------------------------------

    async def start(self) -> None:
        await self._connect()
        await self.react()  # registers
        loop = asyncio.get_running_loop()
        self._task = loop.create_task(self._loop())
        self._keeper = loop.create_task(self._keep_connected())

    async def _connect(self) -> None:
        """Connect and monitor from scratch: a new replica of what the server sends,
        every binding looked at again (ovn-controller's reconnection with no
        transaction to resume from)."""
        conn = await connect(self.sb, lambda: ClientConnection(
            f"{self.name}->{self.sb}", on_notify=self._notified))
        self.replica = Replica(self.schema, {t: None for t in REPLICATED})
        self.flows, self.relocate = 0, True
        self.conn = conn
        result = await conn.request("monitor_cond_since", [
            "OVN_Southbound", MONID, self._requests(), ZERO_UUID])
        self._apply(result[2])

    async def _keep_connected(self) -> None:
        """Reconnect when the server drops the connection (an inactivity probe this
        busy process did not answer in time, a member restarted), with backoff."""
        while True:
            assert self.conn is not None
            await self.conn.lost
            backoff = 1.0
            while True:
                log.info("%s: connection lost, reconnecting in %.0f s", self.name, backoff)
                await asyncio.sleep(backoff)
                try:
                    await self._connect()
                    break
                except (OSError, ConnectionLost) as e:
                    log.info("%s: reconnection failed: %s", self.name, e)
                    backoff = min(backoff * 2, 8.0)
            self.reconnects += 1
            self.seq.change()

    async def _loop(self) -> None:
        seen = self.seq.read()
        while True:
            seen = await self.seq.wait(seen, self.wake_delay_ms)
            try:
                await self.react()
            except RuntimeError as e:  # a conflicting write: the next update retries
                log.warning("%s", e)
                await asyncio.sleep(0.2)
            except ConnectionLost:  # (`_keep_connected` reconnects, then wakes it)
                pass

    async def stop(self) -> None:
        for task in (self._keeper, self._task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._task = self._keeper = None
        if self.conn is not None:
            self.conn.close()

    def stats(self) -> dict[str, Any]:
        return {"name": self.name, "remote": self.sb, "reconnects": self.reconnects,
                "cpu_s": self.cpu, "wakes": self.wakes,
                "claims": self.claims, "local_datapaths": len(self.datapaths),
                "flows": self.flows, "updates": self.updates,
                "bytes_in": self.conn.bytes_in if self.conn is not None else 0}


def active_gateway(pb: IdlRow) -> str | None:
    """The chassis (uuid) a `chassisredirect` port is active on: its HA group's
    member of the highest priority (ovn-controller's choice when no BFD session says
    otherwise), None without a group."""
    group = pb.ha_chassis_group
    if not isinstance(group, IdlRow):
        return None
    members = group.ha_chassis
    members = [members] if isinstance(members, IdlRow) else list(members or ())
    best = max(members, key=lambda h: (h.priority, _uuid_of(h.chassis) or ""), default=None)
    return _uuid_of(best.chassis) if best is not None else None


def _uuid_of(ref: Any) -> str | None:
    if isinstance(ref, IdlRow):
        return ref.uuid
    return None


# -- the program ----------------------------------------------------------------------


def _args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m pyovsdb.scale.chassis",
                                 description="Simulated ovn-controllers for pyovsdb scale.")
    ap.add_argument("--ovnsb-db", required=True, help="REMOTE[,REMOTE...] (module rules)")
    ap.add_argument("--nodes", required=True, help="FIRST-LAST: the nodes to simulate")
    ap.add_argument("--work-ms", type=float, default=0.0)
    ap.add_argument("--work-us-per-row", type=float, default=0.0)
    ap.add_argument("--wake-delay-ms", type=float, default=0.0)
    ap.add_argument("--monitor-all", action="store_true")
    ap.add_argument("--pidfile", required=True, help="written once every chassis is in")
    ap.add_argument("--stats", required=True, help="per-chassis figures, written on exit")
    ap.add_argument("--log-file")
    return ap.parse_args(argv)


async def _amain(args: argparse.Namespace) -> int:
    first, _, last = args.nodes.partition("-")
    schema = load_schema(SB_SCHEMA)
    remotes = args.ovnsb_db.split(",")
    fleet = [SimChassis(n, remotes[n % len(remotes)], schema, work_ms=args.work_ms,
                        work_us_per_row=args.work_us_per_row,
                        wake_delay_ms=args.wake_delay_ms, monitor_all=args.monitor_all)
             for n in range(int(first), int(last or first) + 1)]
    stopping = stop_on_signals()
    try:
        for i in range(0, len(fleet), 25):  # a few at a time, as hypervisors boot
            await asyncio.gather(*(c.start() for c in fleet[i:i + 25]))
        log.info("%d chassis registered", len(fleet))
        write_pidfile(args.pidfile)
        await stopping.wait()
    finally:
        with open(args.stats, "w") as f:
            json.dump([c.stats() for c in fleet], f)
        await asyncio.gather(*(c.stop() for c in fleet), return_exceptions=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _args(sys.argv[1:] if argv is None else argv)
    return run_program("scale chassis", lambda: _amain(args), args.log_file)


if __name__ == "__main__":
    sys.exit(main())
