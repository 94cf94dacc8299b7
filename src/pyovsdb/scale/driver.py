"""The measuring CMS of the scale harness: builds the cluster, writes what a scenario
asks for over IDLs, and times what each write costs the control plane.

Rules kept here:
- The topology goes in before northd starts, one transaction for the cluster rows and
  one per node, over a plain client; the scenarios (`scale/scenarios.py`) run over
  IDLs, as a CMS does, one transaction per command ovn-heater issues.
- Pods (and VMs) go to the nodes in turn, as ovn-heater's `select_worker_for_port`; a pod's
  number on its node only grows (a deleted pod's address is not reused), at most
  `PODS_PER_NODE` per node.
- Per measured pod, the times from its Northbound transaction's send to: its reply
  (`nb`), the Southbound Port_Binding's appearance (`sb`), the chassis' claim
  (`claim`), the Southbound `up` (`up_sb`) and the Northbound `up=true` northd writes
  back (`up`). They are read from the driver's own monitors of both databases.
- A measured write of anything else (a policy's ACL) carries `NB_Global.nb_cfg += 1`
  in its transaction, as `ovn-nbctl --wait=hv` does, and is timed until `sb_cfg`
  (northd has written its flows) and `hv_cfg` (every chassis has them) reach it.
- Waits time out after `timeout` seconds per 100 things waited for (at least one).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..idl import Idl, IdlRow
from ..jsonrpc.client import Client
from . import cloud
from .topology import (
    PODS_PER_NODE,
    cluster_ops,
    global_ops,
    node_ops,
    pod_delete_ops,
    pod_name,
    pod_ops,
)

Ops = list[dict[str, Any]]


@dataclass
class PodTimes:
    """A pod (or a VM's port): where it is, and when each stage was seen."""

    name: str
    node: int
    index: int
    ns: str
    sent: float
    marks: dict[str, float] = field(default_factory=dict)
    port: str = ""  # its Logical_Switch_Port's uuid, once written

    def latencies_ms(self) -> dict[str, float]:
        return {k: (t - self.sent) * 1000 for k, t in self.marks.items()}


def _check(results: list[Any]) -> list[Any]:
    for r in results:
        if r is not None and "error" in r:
            raise RuntimeError(f"transaction failed: {r}")
    return results


def build_topology(nb_remote: str, nodes: int, backoff_ms: int = 0,
                   kind: str = "kubernetes") -> None:
    """The cluster before northd starts: ovn-kubernetes' node topology, or the
    external network of an OpenStack-like cloud (`kind` "openstack")."""
    with Client(nb_remote, timeout=120) as c:
        if kind == "openstack":
            _check(c.call("transact", ["OVN_Northbound", *global_ops(backoff_ms),
                                       *cloud.external_network_ops()]))
            return
        got = _check(c.call("transact", ["OVN_Northbound", *global_ops(backoff_ms),
                                          *cluster_ops()]))
        lb_group = got[-1]["uuid"][1]
        for n in range(nodes):
            _check(c.call("transact", ["OVN_Northbound", *node_ops(n, lb_group)]))


class Driver:
    """The CMS side of a run on a started stack (module rules)."""

    def __init__(self, nb_remote: str, sb_remote: str, nodes: int, timeout: float = 60.0,
                 progress: Callable[[str], None] = lambda line: None) -> None:
        self.nodes, self.timeout, self.progress = nodes, timeout, progress
        self.nb = Idl(nb_remote, "OVN_Northbound", tables={
            "Logical_Switch_Port": ["name", "up"], "NB_Global": ["nb_cfg", "sb_cfg", "hv_cfg"]})
        self.sb = Idl(sb_remote, "OVN_Southbound", tables={
            "Port_Binding": ["logical_port", "chassis", "up"]})
        self.watching: dict[str, PodTimes] = {}
        self.changed = asyncio.Event()
        self.nb.watch("Logical_Switch_Port", self._on_lsp, columns=["up"])
        self.sb.watch("Port_Binding", self._on_pb)
        self.nb.on_change(lambda cs: self.changed.set())
        self._turn = itertools.count(1)  # ovn-heater's first pod goes to the second node
        self._next_index = [0] * nodes

    async def __aenter__(self) -> Driver:
        await self.nb.start()
        await self.sb.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.nb.close()
        await self.sb.close()

    # -- what the monitors tell -------------------------------------------------------

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

    async def until(self, done: Callable[[], bool], what: str, count: int = 1,
                    timeout: float | None = None) -> None:
        """Wait for `done()` (module rules for the timeout, unless given)."""
        if timeout is None:
            timeout = self.timeout * max(1.0, count / 100)
        deadline = time.monotonic() + timeout
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RuntimeError(f"timed out waiting for {what}")
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), remaining)
            except TimeoutError:
                pass

    async def until_up(self, pods: list[PodTimes], what: str) -> None:
        await self.until(lambda: all("up" in p.marks for p in pods), what, len(pods))

    # -- writing ----------------------------------------------------------------------

    async def write(self, ops: Ops) -> list[Any]:
        txn = self.nb.transaction()
        for op in ops:
            txn.add_op(op)
        result = await txn.commit()
        if not result.ok:
            raise RuntimeError(f"NB transaction failed: {result}")
        return result.results

    def next_node(self) -> int:
        return next(self._turn) % self.nodes

    def place(self, node: int | None = None) -> tuple[int, int]:
        """The node of the next pod (in turn, or `node`) and its number there."""
        if node is None:
            node = self.next_node()
        index = self._next_index[node]
        if index >= PODS_PER_NODE:
            raise RuntimeError(f"more than {PODS_PER_NODE} pods on node {node}")
        self._next_index[node] += 1
        return node, index

    def watch(self, node: int, index: int, ns: str, name: str | None = None) -> PodTimes:
        name = name or pod_name(node, index)
        pod = self.watching[name] = PodTimes(name, node, index, ns, time.perf_counter())
        return pod

    async def add_port(self, name: str, node: int, ops: Ops, index: int = 0,
                       ns: str = "") -> PodTimes:
        """A port (a VM's, a pod's) written by `ops`, whose first is its insert;
        watched from the send."""
        port = self.watch(node, index, ns, name)
        results = await self.write(ops)
        port.marks.setdefault("nb", time.perf_counter())
        port.port = results[0]["uuid"][1]
        return port

    async def add_pod(self, ns: str, enforcing: bool = False) -> PodTimes:
        """A pod on the next node, in its own transaction, watched from its send."""
        node, index = self.place()
        return await self.add_port(pod_name(node, index), node,
                                   pod_ops(node, index, ns, "pod", enforcing), index, ns)

    async def add_pods_on(self, node: int, count: int, ns: str,
                          extra: Callable[[list[PodTimes]], Ops] = lambda pods: []
                          ) -> list[PodTimes]:
        """`count` pods on `node` in one transaction (a node's pods at startup), with
        `extra(pods)` after them in it."""
        pods = [self.watch(*self.place(node), ns) for _ in range(count)]
        ops: Ops = []
        firsts = []
        for i, p in enumerate(pods):
            firsts.append(len(ops))
            ops += pod_ops(p.node, p.index, ns, f"pod{i}")
        if ops:
            results = await self.write(ops + extra(pods))
            for p, first in zip(pods, firsts, strict=True):
                p.port = results[first]["uuid"][1]
        return pods

    async def delete_pod(self, pod: PodTimes) -> None:
        await self.write(pod_delete_ops(pod.node, pod.index, pod.ns, pod.port))
        self.watching.pop(pod.name, None)

    async def write_and_wait_hv(self, ops: Ops) -> dict[str, float]:
        """`ovn-nbctl --wait=hv`: `ops` with `nb_cfg` incremented in one transaction,
        then the times until `sb_cfg` and `hv_cfg` reach it (ms from the send)."""
        t0 = time.perf_counter()
        results = await self.write([
            *ops, {"op": "mutate", "table": "NB_Global", "where": [],
                   "mutations": [["nb_cfg", "+=", 1]]},
            {"op": "select", "table": "NB_Global", "where": [], "columns": ["nb_cfg"]}])
        target = int(results[-1]["rows"][0]["nb_cfg"])
        out: dict[str, float] = {}

        def reached() -> bool:
            g = next(iter(self.nb["NB_Global"].rows.values()))
            now = time.perf_counter()
            if "sb_cfg" not in out and int(g.sb_cfg) >= target:
                out["sb_cfg"] = (now - t0) * 1000
            if "hv_cfg" not in out and int(g.hv_cfg) >= target:
                out["hv_cfg"] = (now - t0) * 1000
            return "sb_cfg" in out and "hv_cfg" in out

        await self.until(reached, "hv_cfg")
        return out
