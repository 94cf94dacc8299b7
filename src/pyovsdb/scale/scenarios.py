"""ovn-heater's ovn-kubernetes scenarios, replayed by the measuring CMS (`driver.py`).

Rules kept here:
- Each scenario does what its ovn-heater test does (`ovn-tester/cms/ovn_kubernetes/
  tests/*.py`), one Northbound transaction per command it issues, in its order, over
  the node topology `topology.py` builds. Where ovn-heater pings, we wait for what a
  ping needs: the pods up (the chassis bound them and northd saw it) and, after a
  policy, its transaction's `--wait=hv` (every chassis has its flows).
- A startup phase brings the cluster to its steady state and is not measured
  (ovn-heater's `n_startup`, passive iterations: written, waited for once at the end).
  Then the measured phase: per pod its stages (`driver.PodTimes`), per policy its
  `--wait=hv` times, per iteration its total time.
- `density-light`: pods one at a time, each waited for until up before the next;
  with a `rate`, written at that many per second without waiting (the load under
  which northd falls behind, seed 000).
- `density-heavy`: iterations of two pods and a load balancer whose VIP the first
  backs (`pods_vip_ratio` 2).
- `cluster-density`: iterations of a namespace, six short-lived build pods (up, then
  deleted), four pods and the namespace's load balancer with three VIPs (two, one and
  one backends).
- `netpol-multitenant`: iterations of a namespace with 1, 5, 20 or 100 pods (by the
  shares of ovn-heater's ranges: the first 40% of the namespaces 1, up to 96% 5, up
  to 99% 20, then 100), default deny, allow within, allow from two sets of external
  addresses; two policies measured per namespace (within, and external).
- `openstack`: iterations of a project (`cloud.py`): router, network, subnet, security
  group, the router's interface and gateway, `vms` VMs spread over the nodes, a
  floating IP each; the last floating IP's `--wait=hv` is the project's policy figure
  (ovn-heater pings every VM of the project from every other). Startup projects are
  written without waiting, then waited for once. With a `rate`, the measured projects
  start at that many per second, each without waiting for the others (a busy
  Neutron's API workers: the load under which a northd that recomputes for a new
  router falls behind, seed 000).
- The measured figures are read once the Southbound monitor has told every measured
  pod's stages, or after a grace of `SB_GRACE_S`: a pod is done when the Northbound
  says up, and the other monitor may tell its last Southbound stage a little later.
- Startup pods (`startup` per node) are written one transaction per node; they are in
  the scenario's namespace, except for netpol-multitenant, whose startup pods are
  ovn-heater's `base_cluster_bringup` in a namespace of their own. openstack has none.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from . import cloud
from .driver import Driver, PodTimes
from .report import STAGES
from .topology import (
    allow_from_external_ops,
    allow_within_ops,
    default_deny_ops,
    enforce_ops,
    lb_ops,
    namespace_ops,
    pod_ip,
)

SCENARIOS = ("density-light", "density-heavy", "cluster-density", "netpol-multitenant",
             "openstack")
VIP_PORT, BACKEND_PORT = 80, 8080
BUILD_PODS, TEST_PODS = 6, 4  # cluster-density's short-lived and kept pods
EXTERNAL_1 = [f"42.42.42.{1 + i}" for i in range(3)]
EXTERNAL_2 = [f"43.43.43.{1 + i}" for i in range(20)]
SB_GRACE_S = 5.0  # how long the last Southbound stages are waited for (see `run`)


@dataclass
class Config:
    nodes: int
    startup: int = 0  # pods per node, not measured
    pods: int = 0  # measured pods (density-light, density-heavy)
    iterations: int = 0  # measured iterations (cluster-density, netpol-multitenant)
    startup_iterations: int = 0  # cluster-density's passive iterations
    rate: float = 0.0  # density-light's pods (openstack's projects) per second; 0: in turn
    vms: int = 10  # openstack's VMs per project


@dataclass
class Outcome:
    """What a scenario measured (module rules)."""

    startup_s: float = 0.0
    measured_s: float = 0.0
    pods: list[PodTimes] = field(default_factory=list)
    policies: list[dict[str, float]] = field(default_factory=list)
    iterations_ms: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"startup_s": self.startup_s, "pods_s": self.measured_s,
                "pods": [p.latencies_ms() for p in self.pods], "policies": self.policies,
                "iterations_ms": self.iterations_ms}


def netpol_pods(i: int, n: int) -> int:
    """Pods of namespace `i` of `n` in netpol-multitenant (module rules)."""
    share = i / n
    return 100 if share >= 0.99 else 20 if share >= 0.96 else 5 if share >= 0.4 else 1


def pods_needed(scenario: str, cfg: Config) -> int:
    """The most pods the scenario puts on one node, deleted ones included."""
    if scenario == "openstack":
        return 0  # VMs are ports of their project's network, not of a node's
    if scenario == "netpol-multitenant":
        total = sum(netpol_pods(i, cfg.iterations) for i in range(cfg.iterations))
    elif scenario == "cluster-density":
        total = (BUILD_PODS + TEST_PODS) * cfg.iterations + TEST_PODS * cfg.startup_iterations
    else:
        total = cfg.pods
    return cfg.startup + (total + cfg.nodes - 1) // cfg.nodes


async def _startup(d: Driver, cfg: Config, ns: str, lbs_every: int = 0) -> Outcome:
    """`startup` pods per node, one transaction per node, waited for: the outcome so
    far. With `lbs_every`, a load balancer backed by every such pod in the same
    transaction (density-heavy's passive iterations)."""
    out = Outcome()
    t0 = time.perf_counter()
    await d.write(namespace_ops(ns))
    def lbs(written: list[PodTimes]) -> list[dict[str, Any]]:
        return [op for i, p in enumerate(written) if lbs_every and i % lbs_every == 0
                for op in _vip_lb(p, f"lb{i}")]

    pods: list[PodTimes] = []
    for n in range(cfg.nodes):
        pods += await d.add_pods_on(n, cfg.startup, ns, lbs)
    await d.until_up(pods, f"the {len(pods)} startup pods to be up")
    out.startup_s = time.perf_counter() - t0
    d.progress(f"{len(pods)} startup pods up in {out.startup_s:.1f} s")
    return out


def _vip_lb(pod: PodTimes, ref: str) -> list[dict[str, Any]]:
    """density-heavy's load balancer: a VIP in 100.0.0.0/8 backed by `pod`."""
    k = pod.node * 256 + pod.index + 1
    vip = f"100.{k >> 16 & 255}.{k >> 8 & 255}.{k & 255}:{VIP_PORT}"
    return lb_ops(f"lb_density_heavy_{pod.node}_{pod.index}",
                  {vip: f"{pod_ip(pod.node, pod.index)}:{BACKEND_PORT}"}, ref)


async def density_light(d: Driver, cfg: Config) -> Outcome:
    out = await _startup(d, cfg, "ns_density_light")
    writes: list[asyncio.Task[PodTimes]] = []
    t1 = time.perf_counter()
    for i in range(cfg.pods):
        if cfg.rate:
            await asyncio.sleep(max(0.0, t1 + i / cfg.rate - time.perf_counter()))
            writes.append(asyncio.ensure_future(d.add_pod("ns_density_light")))
            continue
        pod = await d.add_pod("ns_density_light")
        out.pods.append(pod)
        await d.until_up([pod], f"{pod.name} to be up")
    for write in writes:
        out.pods.append(await write)
    await d.until_up(out.pods, "the measured pods to be up")
    out.measured_s = time.perf_counter() - t1
    return out


async def density_heavy(d: Driver, cfg: Config) -> Outcome:
    ns = "ns_density_heavy"
    out = await _startup(d, cfg, ns, lbs_every=2)
    t1 = time.perf_counter()
    for _ in range(0, cfg.pods, 2):
        ti = time.perf_counter()
        pods = [await d.add_pod(ns) for _ in range(min(2, cfg.pods - len(out.pods)))]
        await d.write(_vip_lb(pods[0], "lb"))
        await d.until_up(pods, f"{pods[0].name} to be up")
        out.pods += pods
        out.iterations_ms.append((time.perf_counter() - ti) * 1000)
    out.measured_s = time.perf_counter() - t1
    return out


async def _cluster_density_iteration(d: Driver, index: int, passive: bool,
                                     out: Outcome) -> list[PodTimes]:
    ns = f"NS_density_{index}"
    await d.write(namespace_ops(ns))
    build: list[PodTimes] = []
    if not passive:
        build = [await d.add_pod(ns) for _ in range(BUILD_PODS)]
        await d.until_up(build, f"the build pods of {ns} to be up")
    pods = [await d.add_pod(ns) for _ in range(TEST_PODS)]
    vips = {}
    for k, backends in enumerate((pods[0:2], pods[2:3], pods[3:4])):
        vip = f"30.{index // 250 & 255}.{index % 250}.{1 + k}:{VIP_PORT}"
        vips[vip] = ",".join(f"{pod_ip(p.node, p.index)}:{BACKEND_PORT}" for p in backends)
    await d.write(lb_ops(f"lb_{ns}", vips))
    if not passive:
        await d.until_up(pods, f"the pods of {ns} to be up")
        out.pods += build + pods
        for p in build:
            await d.delete_pod(p)
    return pods


async def cluster_density(d: Driver, cfg: Config) -> Outcome:
    t0 = time.perf_counter()
    out = await _startup(d, cfg, "ns_cluster_bringup")
    passive: list[PodTimes] = []
    for i in range(cfg.startup_iterations):
        passive += await _cluster_density_iteration(d, i, True, out)
    await d.until_up(passive, f"the {len(passive)} pods of the startup iterations to be up")
    out.startup_s = time.perf_counter() - t0
    d.progress(f"{cfg.startup_iterations} startup iterations up in {out.startup_s:.1f} s")
    t1 = time.perf_counter()
    for i in range(cfg.iterations):
        ti = time.perf_counter()
        await _cluster_density_iteration(d, cfg.startup_iterations + i, False, out)
        out.iterations_ms.append((time.perf_counter() - ti) * 1000)
    out.measured_s = time.perf_counter() - t1
    return out


async def netpol_multitenant(d: Driver, cfg: Config) -> Outcome:
    out = await _startup(d, cfg, "ns_cluster_bringup")
    t1 = time.perf_counter()
    for i in range(cfg.iterations):
        ti = time.perf_counter()
        ns = f"ns_netpol_multitenant_{i}"
        await d.write(namespace_ops(ns))
        pods = [await d.add_pod(ns) for _ in range(netpol_pods(i, cfg.iterations))]
        for ops in enforce_ops(ns, [p.port for p in pods]) + default_deny_ops(ns):
            await d.write(ops)
        first, last = allow_within_ops(ns)
        await d.write(first)
        out.policies.append(await d.write_and_wait_hv(last))
        await d.until_up(pods, f"the pods of {ns} to be up")
        await d.write(allow_from_external_ops(ns, EXTERNAL_1))
        out.policies.append(await d.write_and_wait_hv(
            allow_from_external_ops(ns, EXTERNAL_2)))
        out.pods += pods
        out.iterations_ms.append((time.perf_counter() - ti) * 1000)
    out.measured_s = time.perf_counter() - t1
    return out


async def _project(d: Driver, p: int, cfg: Config, passive: bool,
                   out: Outcome) -> list[PodTimes]:
    for ops in (cloud.router_ops(p), cloud.network_ops(p)):
        await d.write(ops)
    dhcp = (await d.write(cloud.subnet_ops(p)))[0]["uuid"][1]
    for ops in (cloud.security_group_ops(p), cloud.interface_ops(p),
                cloud.gateway_ops(p, cfg.nodes)):
        await d.write(ops)
    vms = []
    for v in range(cfg.vms):
        node = d.next_node()
        vms.append(await d.add_port(cloud.vm_port(p, v), node,
                                    cloud.vm_ops(p, v, node, dhcp)))
    for v in range(cfg.vms - 1):
        await d.write(cloud.floating_ip_ops(p, v))
    last = cloud.floating_ip_ops(p, cfg.vms - 1) if cfg.vms else []
    if passive:
        if last:
            await d.write(last)
        return vms
    out.policies.append(await d.write_and_wait_hv(last))
    await d.until_up(vms, f"the VMs of project {p} to be up")
    out.pods += vms
    return vms


async def openstack(d: Driver, cfg: Config) -> Outcome:
    out = Outcome()
    t0 = time.perf_counter()
    passive: list[PodTimes] = []
    for p in range(cfg.startup_iterations):
        passive += await _project(d, p, cfg, True, out)
    await d.until_up(passive, f"the {len(passive)} VMs of the startup projects to be up")
    out.startup_s = time.perf_counter() - t0
    d.progress(f"{cfg.startup_iterations} startup projects up in {out.startup_s:.1f} s")
    t1 = time.perf_counter()

    async def project(p: int) -> None:
        ti = time.perf_counter()
        await _project(d, p, cfg, False, out)
        out.iterations_ms.append((time.perf_counter() - ti) * 1000)

    tasks: list[asyncio.Task[None]] = []
    for i in range(cfg.iterations):
        p = cfg.startup_iterations + i
        if not cfg.rate:
            await project(p)
            continue
        await asyncio.sleep(max(0.0, t1 + i / cfg.rate - time.perf_counter()))
        tasks.append(asyncio.ensure_future(project(p)))
    for task in tasks:
        await task
    out.measured_s = time.perf_counter() - t1
    return out


RUN = {"density-light": density_light, "density-heavy": density_heavy,
       "cluster-density": cluster_density, "netpol-multitenant": netpol_multitenant,
       "openstack": openstack}


async def run(scenario: str, d: Driver, cfg: Config) -> dict[str, Any]:
    """The scenario on the driver's stack, then one `--wait=hv` (module rules)."""
    out = await RUN[scenario](d, cfg)
    # A pod is done when the Northbound says up; the Southbound monitor may tell its
    # last stages a little later (a server holding its updates, another connection).
    # Its marks are read once it did, or after a grace.
    try:
        await d.until(lambda: all(p.marks.keys() >= set(STAGES) for p in out.pods),
                      "the Southbound stages of the measured pods", timeout=SB_GRACE_S)
    except RuntimeError:
        pass  # (a pod deleted meanwhile, its stages merged away: reported as missing)
    d.progress(f"{len(out.pods)} measured pods, {len(out.iterations_ms)} iterations "
               f"in {out.measured_s:.1f} s")
    return {**out.as_dict(), "wait_hv_ms": await d.write_and_wait_hv([])}
