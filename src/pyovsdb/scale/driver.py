"""The CMS driver of the scale harness: builds the cluster, replays a scenario, and
measures what each pod costs.

Rules kept here:
- `density-light` is ovn-heater's: `startup` pods per node are created first and not
  measured (the cluster's steady state), then `pods` more are created across the
  nodes in turn, each waited for until its port is up in the Northbound before the
  next is written (ovn-heater's iteration: create, bind, ping), so a pod's latency is
  the control plane's alone. With a `rate`, the pods are written at that many per
  second without waiting, as a busy cluster's CMS does: the load under which northd
  falls behind (seed 000).
- Per measured pod, the times from the Northbound transaction's send to: its reply
  (`nb`), the Southbound Port_Binding's appearance (`sb`), the chassis' claim
  (`claim`), the Southbound `up` (`up_sb`) and the Northbound `up=true` northd writes
  back (`up`). They are read from the driver's own monitors of both databases.
- After the pods, one `--wait=hv`: `NB_Global.nb_cfg` incremented, and the time until
  `sb_cfg` and `hv_cfg` reach it (northd's and every chassis' acknowledgement).
- The topology goes in before northd starts, one transaction for the cluster rows and
  one per node, over a plain client; the scenario runs over IDLs, as a CMS does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..idl import Idl, IdlRow
from ..jsonrpc.client import Client
from .topology import cluster_ops, node_ops, pod_name, pod_ops


@dataclass
class PodTimes:
    name: str
    sent: float
    marks: dict[str, float] = field(default_factory=dict)

    def latencies_ms(self) -> dict[str, float]:
        return {k: (t - self.sent) * 1000 for k, t in self.marks.items()}


def _check(results: list[Any]) -> None:
    for r in results:
        if r is not None and "error" in r:
            raise RuntimeError(f"transaction failed: {r}")


def build_topology(nb_remote: str, nodes: int, backoff_ms: int = 0) -> None:
    with Client(nb_remote, timeout=120) as c:
        _check(c.call("transact", ["OVN_Northbound", *cluster_ops(backoff_ms)]))
        for n in range(nodes):
            _check(c.call("transact", ["OVN_Northbound", *node_ops(n)]))


class Scenario:
    """density-light on a started stack (module rules)."""

    def __init__(self, nb_remote: str, sb_remote: str, nodes: int, startup: int, pods: int,
                 timeout: float = 60.0, rate: float = 0.0,
                 progress: Callable[[str], None] = lambda line: None) -> None:
        self.nodes, self.startup, self.pods, self.timeout = nodes, startup, pods, timeout
        self.rate = rate
        self.progress = progress
        self.nb = Idl(nb_remote, "OVN_Northbound", tables={
            "Logical_Switch_Port": ["name", "up"], "NB_Global": ["nb_cfg", "sb_cfg", "hv_cfg"]})
        self.sb = Idl(sb_remote, "OVN_Southbound", tables={
            "Port_Binding": ["logical_port", "chassis", "up"]})
        self.watching: dict[str, PodTimes] = {}
        self.changed = asyncio.Event()
        self.nb.watch("Logical_Switch_Port", self._on_lsp, columns=["up"])
        self.sb.watch("Port_Binding", self._on_pb)
        self.nb.on_change(lambda cs: self.changed.set())

    def _mark(self, name: str, stage: str) -> None:
        pod = self.watching.get(name)
        if pod is not None and stage not in pod.marks:
            pod.marks[stage] = time.perf_counter()
            self.changed.set()

    def _on_lsp(self, event: str, row: IdlRow, old: IdlRow | None) -> None:
        if row.up == [True] or row.up is True:
            self._mark(row.name, "up")

    def _on_pb(self, event: str, row: IdlRow, old: IdlRow | None) -> None:
        if event == "delete":
            return
        self._mark(row.logical_port, "sb")
        if row.chassis not in (None, [], ()):  # a uuid: Chassis is not replicated here
            self._mark(row.logical_port, "claim")
        if row.up == [True] or row.up is True:
            self._mark(row.logical_port, "up_sb")

    async def _until(self, done: Any, what: str, pods: int = 1) -> None:
        """Wait for `done()`, `timeout` per 100 pods waited for (at least one)."""
        deadline = time.monotonic() + self.timeout * max(1.0, pods / 100)
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RuntimeError(f"timed out waiting for {what}")
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), remaining)
            except TimeoutError:
                pass

    async def _write(self, ops: list[dict[str, Any]]) -> None:
        txn = self.nb.transaction()
        for op in ops:
            txn.add_op(op)
        result = await txn.commit()
        if not result.ok:
            raise RuntimeError(f"NB transaction failed: {result}")

    async def _write_pod(self, node: int, pod: int, times: PodTimes) -> None:
        await self._write(pod_ops(node, pod))
        times.marks.setdefault("nb", time.perf_counter())

    async def run(self) -> dict[str, Any]:
        await self.nb.start()
        await self.sb.start()
        try:
            return await self._run()
        finally:
            await self.nb.close()
            await self.sb.close()

    async def _run(self) -> dict[str, Any]:
        # the steady state: every node's startup pods, one transaction per node
        startup = [pod_name(n, p) for n in range(self.nodes) for p in range(self.startup)]
        for name in startup:
            self.watching[name] = PodTimes(name, time.perf_counter())
        t0 = time.perf_counter()
        for n in range(self.nodes):
            ops = [op for p in range(self.startup) for op in pod_ops(n, p, f"pod{p}")]
            if ops:
                await self._write(ops)
        await self._until(lambda: all("up" in self.watching[p].marks for p in startup),
                          f"the {len(startup)} startup pods to be up", len(startup))
        startup_s = time.perf_counter() - t0
        self.progress(f"{len(startup)} startup pods up in {startup_s:.1f} s")
        # the measured pods: one at a time, or at a fixed rate without waiting
        measured: list[PodTimes] = []
        writes: list[asyncio.Task[None]] = []
        t1 = time.perf_counter()
        for i in range(self.pods):
            node, pod = i % self.nodes, self.startup + i // self.nodes
            name = pod_name(node, pod)
            if self.rate:
                await asyncio.sleep(max(0.0, t1 + i / self.rate - time.perf_counter()))
            times = self.watching[name] = PodTimes(name, time.perf_counter())
            measured.append(times)
            write = asyncio.ensure_future(self._write_pod(node, pod, times))
            if self.rate:
                writes.append(write)
                continue
            await write
            await self._until(lambda t=times: "up" in t.marks, f"{name} to be up")
        for write in writes:
            await write
        await self._until(lambda: all("up" in t.marks for t in measured),
                          "the measured pods to be up", len(measured))
        pods_s = time.perf_counter() - t1
        self.progress(f"{len(measured)} measured pods up in {pods_s:.1f} s")
        return {"startup_s": startup_s, "pods_s": pods_s,
                "pods": [p.latencies_ms() for p in measured],
                "wait_hv_ms": await self._wait_hv()}

    async def _wait_hv(self) -> dict[str, float]:
        """`ovn-nbctl --wait=hv sync`: nb_cfg incremented, then sb_cfg and hv_cfg."""
        glob = next(iter(self.nb["NB_Global"].rows.values()))
        target = int(glob.nb_cfg) + 1
        t0 = time.perf_counter()
        await self._write([{"op": "mutate", "table": "NB_Global", "where": [],
                            "mutations": [["nb_cfg", "+=", 1]]}])
        out: dict[str, float] = {}

        def reached() -> bool:
            g = next(iter(self.nb["NB_Global"].rows.values()))
            now = time.perf_counter()
            if "sb_cfg" not in out and int(g.sb_cfg) >= target:
                out["sb_cfg"] = (now - t0) * 1000
            if "hv_cfg" not in out and int(g.hv_cfg) >= target:
                out["hv_cfg"] = (now - t0) * 1000
            return "sb_cfg" in out and "hv_cfg" in out

        await self._until(reached, "hv_cfg")
        return out
