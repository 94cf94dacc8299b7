"""Simulated chassis for the scale harness: what ovn-controller 23.03 does on the
Southbound, one connection and one replica per chassis, many chassis per process.

Rules kept here:
- A chassis registers as ovn-controller does (`Encap`, `Chassis` with its feature flags,
  `Chassis_Private`), then monitors the Southbound with the conditions
  `update_sb_monitors` sends (controller/ovn-controller.c, `local_conditions`):
  Port_Binding by type, by its chassis, by `requested_chassis`, by gateway options, by
  its local ports and local datapaths; Logical_Flow by local datapath or any datapath
  group; its own Chassis_Private; every Datapath_Binding, Logical_DP_Group, Chassis,
  Encap and SB_Global row. `monitor_all` asks for every row instead.
- Local datapaths are those of the ports it holds or is asked for, and every datapath
  reachable from them through `patch` ports (as `add_local_datapath` walks them); when
  they change, the conditions change (`monitor_cond_change`).
- A reaction does, in one transaction: claim the ports requested for it (`chassis`,
  `encap`), mark up the ports it claimed in an earlier reaction (the flows for them are
  "installed" by then), release ports requested elsewhere, and echo `SB_Global.nb_cfg`
  into its `Chassis_Private` with a timestamp.
- Before reacting it does the work that stands for flow computation: `work_ms` per
  wake plus `work_us_per_row` per row its replica changed since the last wake, burnt
  as CPU. It is woken through a delayed-wake seq (`util.seq`, seed 004): with
  `wake_delay_ms`, a burst of updates costs one wake, not one per update.
- Each chassis's CPU (its reactions and their work, measured with the thread's CPU
  clock) and its wakes are counted; the process's total (the replicas' parsing too)
  is the stack's to sample.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from ..idl import Idl, IdlRow, Status, Transaction
from ..sim_chassis import BASE_OTHER_CONFIG
from ..util.seq import Seq
from .topology import chassis_name, node_name

log = logging.getLogger("scale_chassis")

TABLES = ("Chassis", "Chassis_Private", "Encap", "Port_Binding", "Datapath_Binding",
          "Logical_Flow", "Logical_DP_Group", "SB_Global")


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


class SimChassis:
    """One simulated ovn-controller (module rules)."""

    def __init__(self, node: int, sb: str, *, work_ms: float = 0.0,
                 work_us_per_row: float = 0.0, wake_delay_ms: float = 0.0,
                 monitor_all: bool = False,
                 wall_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.name = chassis_name(node)
        self.hostname = node_name(node)
        self.encap_ip = f"192.168.{node // 250}.{node % 250 + 1}"
        self.work_ms = work_ms
        self.work_us_per_row = work_us_per_row
        self.wake_delay_ms = wake_delay_ms
        self.monitor_all = monitor_all
        self.wall_ms = wall_ms
        self.idl = Idl(sb, "OVN_Southbound", tables=list(TABLES),
                       conditions=local_conditions(self.name, None, [], [], monitor_all))
        self.seq = Seq()
        self.rows_pending = 0
        self.idl.on_change(self._changed)
        self.chassis_uuid: str | None = None
        self.datapaths: frozenset[str] = frozenset()
        self.ports: frozenset[str] = frozenset()
        self.claimed: set[str] = set()  # claimed in an earlier reaction, not yet up
        self.cpu = 0.0
        self.wakes = 0
        self.claims = 0
        self._task: asyncio.Task[None] | None = None

    def _changed(self, cs: Any) -> None:
        self.rows_pending += sum(len(rows) for rows in cs.tables.values())
        self.seq.change()

    # -- reading the replica ----------------------------------------------------------

    def _mine(self) -> tuple[IdlRow | None, IdlRow | None, IdlRow | None]:
        ch = next((r for r in self.idl["Chassis"].rows.values() if r.name == self.name), None)
        enc = next((r for r in self.idl["Encap"].rows.values()
                    if r.chassis_name == self.name), None)
        priv = next((r for r in self.idl["Chassis_Private"].rows.values()
                     if r.name == self.name), None)
        return ch, enc, priv

    def _local(self, ch: IdlRow) -> tuple[frozenset[str], frozenset[str]]:
        """Its local ports and datapaths (module rules)."""
        by_name: dict[str, IdlRow] = {}
        ports: set[str] = set()
        start: set[str | None] = set()
        for pb in self.idl["Port_Binding"].rows.values():
            by_name[pb.logical_port] = pb
            if _uuid_of(pb.chassis) == ch.uuid or _uuid_of(pb.requested_chassis) == ch.uuid:
                ports.add(pb.logical_port)
                start.add(_uuid_of(pb.datapath))
        patches: dict[str, list[IdlRow]] = {}
        for pb in by_name.values():
            if pb.type == "patch":
                patches.setdefault(_uuid_of(pb.datapath) or "", []).append(pb)
        seen: set[str | None] = set(start)
        todo = list(start)
        while todo:
            for pb in patches.get(todo.pop() or "", ()):
                peer = by_name.get(pb.options.get("peer", ""))
                dp = _uuid_of(peer.datapath) if peer is not None else None
                if dp is not None and dp not in seen:
                    seen.add(dp)
                    todo.append(dp)
        return frozenset(ports), frozenset(d for d in seen if d)

    # -- one reaction -----------------------------------------------------------------

    def _register(self, txn: Transaction) -> None:
        enc = txn.insert("Encap", type="geneve", ip=self.encap_ip, options={"csum": "true"},
                         chassis_name=self.name)
        ch = txn.insert("Chassis", name=self.name, hostname=self.hostname, encaps=[enc],
                        other_config=dict(BASE_OTHER_CONFIG))
        txn.insert("Chassis_Private", name=self.name, chassis=ch)

    def _react(self, txn: Transaction) -> None:
        ch, enc, priv = self._mine()
        if ch is None or enc is None or priv is None:
            self._register(txn)
            return
        for pb in self.idl["Port_Binding"].rows.values():
            if pb.type != "":
                continue
            mine = _uuid_of(pb.chassis) == ch.uuid
            wanted = _uuid_of(pb.requested_chassis) == ch.uuid
            if wanted and not mine:
                txn.update(pb, chassis=ch, encap=enc, up=[False])
                self.claims += 1
            elif wanted and pb.up is not True and pb.logical_port in self.claimed:
                txn.update(pb, up=[True])
            elif mine and not wanted and pb.requested_chassis:
                txn.update(pb, chassis=[], encap=[], up=[False])
        self.claimed = {pb.logical_port for pb in self.idl["Port_Binding"].rows.values()
                        if _uuid_of(pb.chassis) == ch.uuid
                        or _uuid_of(pb.requested_chassis) == ch.uuid}
        sb_global = next(iter(self.idl["SB_Global"].rows.values()), None)
        if sb_global is not None and priv.nb_cfg != sb_global.nb_cfg:
            txn.update(priv, nb_cfg=sb_global.nb_cfg, nb_cfg_timestamp=self.wall_ms())

    async def _follow(self) -> None:
        """Change the conditions when the local ports or datapaths did."""
        ch, _, _ = self._mine()
        if ch is None:
            return
        ports, datapaths = self._local(ch)
        if ch.uuid == self.chassis_uuid and ports == self.ports \
                and datapaths == self.datapaths:
            return
        self.chassis_uuid, self.ports, self.datapaths = ch.uuid, ports, datapaths
        conds = local_conditions(self.name, ch.uuid, sorted(ports), sorted(datapaths),
                                 self.monitor_all)
        for table, where in conds.items():
            if where != self.idl.conditions.get(table):
                await self.idl.set_condition(table, where)

    async def react(self) -> Status:
        t0 = time.thread_time()
        self.wakes += 1
        rows, self.rows_pending = self.rows_pending, 0
        burn(self.work_ms + rows * self.work_us_per_row / 1000.0)
        self.cpu += time.thread_time() - t0
        result = await self.idl.run(self._react)
        t1 = time.thread_time()
        await self._follow()
        self.cpu += time.thread_time() - t1
        return result.status

    # -- life cycle -------------------------------------------------------------------

    async def start(self) -> None:
        await self.idl.start()
        status = await self.react()
        if status not in (Status.SUCCESS, Status.UNCHANGED):
            raise RuntimeError(f"{self.name}: registering failed: {status}")
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def _loop(self) -> None:
        seen = self.seq.read()
        while True:
            seen = await self.seq.wait(seen, self.wake_delay_ms)
            status = await self.react()
            if status is Status.ERROR:
                await asyncio.sleep(0.2)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.idl.close()

    def stats(self) -> dict[str, Any]:
        return {"name": self.name, "cpu_s": self.cpu, "wakes": self.wakes,
                "claims": self.claims, "local_datapaths": len(self.datapaths)}


def _uuid_of(ref: Any) -> str | None:
    if isinstance(ref, IdlRow):
        return ref.uuid
    return None


# -- the program ----------------------------------------------------------------------


def _args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m pyovsdb.scale.chassis",
                                 description="Simulated ovn-controllers for pyovsdb scale.")
    ap.add_argument("--ovnsb-db", required=True)
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
    fleet = [SimChassis(n, args.ovnsb_db, work_ms=args.work_ms,
                        work_us_per_row=args.work_us_per_row,
                        wake_delay_ms=args.wake_delay_ms, monitor_all=args.monitor_all)
             for n in range(int(first), int(last or first) + 1)]
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    try:
        for i in range(0, len(fleet), 25):  # a few at a time, as hypervisors boot
            await asyncio.gather(*(c.start() for c in fleet[i:i + 25]))
        log.info("%d chassis registered", len(fleet))
        tmp = f"{args.pidfile}.tmp"
        with open(tmp, "w") as f:
            f.write(f"{os.getpid()}\n")
        os.replace(tmp, args.pidfile)
        await stopping.wait()
    finally:
        with open(args.stats, "w") as f:
            json.dump([c.stats() for c in fleet], f)
        await asyncio.gather(*(c.stop() for c in fleet), return_exceptions=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _args(sys.argv[1:] if argv is None else argv)
    handler: logging.Handler = (logging.FileHandler(args.log_file) if args.log_file
                                else logging.StreamHandler())
    handler.setFormatter(logging.Formatter("%(asctime)s|%(name)s|%(levelname)s|%(message)s"))
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.INFO)
    try:
        return asyncio.run(_amain(args))
    except Exception as e:  # one line, not a traceback
        print(f"scale chassis: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
