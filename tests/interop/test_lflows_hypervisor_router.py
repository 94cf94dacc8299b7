"""Real hypervisors on our router flows: one scenario with routers, run once with the
real `ovn-northd` and once with ours, each with two real hypervisors (`ovs-vswitchd` on
the dummy datapath and `ovn-controller`) consuming the SB.

The scenario: switches sw0 (vm1 on hv1, vm2 on hv2) and sw1 (vm3 on hv1, vm4 on hv2)
joined by a distributed router lr0, whose default route leads over a join switch to a
gateway router gr0 bound to hv2; gr0 has a port on the switch ext (ext1, a VIF on hv2),
SNATs the subnets and gives vm2 a floating IP; and a router lr1 between sw2 (vm5 on
hv1, vm6 on hv2) and the switch pub (pub1 on hv2) through a distributed gateway port
on hv2 that SNATs sw2 ("bound"); then the floating IP moves to
vm4 and a router policy of lr0 drops vm1's packets to vm3 ("changed"). What must hold
with our northd as with the real one, in both phases: every VIF claimed, up and
ovn-installed; the same number of OpenFlow flows on each hypervisor, and the same flow
tables once normalized; `ofproto/trace` taking the same datapath actions in every
pass: vm1 to vm3 through lr0 on one hypervisor (dropped once changed) and vm1 to vm4
on the other (the port or tunnel, both MACs rewritten, the TTL decremented), vm1 to
vm3 with a TTL of 1 (an ICMP reply from the controller, not delivered), and through
the gateway router on its chassis: vm2 and vm4 to ext1 (SNAT to the floating IP or
the router's address) and ext1 to the floating IP (DNAT to its VIF); through lr1, vm5
to pub1 (sent to the gateway chassis) and vm6 to pub1 (SNAT there).

Rules kept here:
- The northd is the only thing that differs between the two runs: the databases and
  conf.db are on the real server both times (the server pairs are the switch
  scenario's concern), each run on fresh databases in its own directories, and every
  daemon is stopped by its pid before the next run starts, also when a run breaks off
  (then every test fails with the step it was at).
- What differs between two runs even with one northd (conntrack zones, cookies,
  datapath port and recirculation numbers) is normalized away by the switch
  scenario's helpers; nothing else is.
- Every NB change is its own `--wait=sb` transaction, so tunnel keys do not depend on
  UUID-hash order; gr0 names its chassis before any hypervisor exists, as a CMS would.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from test_lflows_hypervisor import (
    Deployment,
    normalize_learned_cookies,
    normalize_odp_actions,
    odp_port_names,
)

pytestmark = pytest.mark.interop

NORTHDS = ("real", "ours")
SERVERS = "real"
WAIT = 30.0
GATEWAY = "hv2"  # gr0's chassis
RULE_COOKIE = re.compile(r"\brule_cookie=0x[0-9a-f]+")
RECIRC_ID = re.compile(r"\brecirc_id=\d+")


@dataclass(frozen=True)
class Vif:
    switch: str
    hv: str
    mac: str
    ip: str


VIFS: dict[str, Vif] = {
    "vm1": Vif("sw0", "hv1", "0a:00:00:00:00:01", "10.0.0.11"),
    "vm2": Vif("sw0", "hv2", "0a:00:00:00:00:02", "10.0.0.12"),
    "vm3": Vif("sw1", "hv1", "0a:00:00:00:01:03", "10.0.1.13"),
    "vm4": Vif("sw1", "hv2", "0a:00:00:00:01:04", "10.0.1.14"),
    "ext1": Vif("ext", GATEWAY, "0a:00:00:00:02:01", "172.16.0.10"),
    "vm5": Vif("sw2", "hv1", "0a:00:00:00:03:05", "10.2.0.15"),
    "vm6": Vif("sw2", GATEWAY, "0a:00:00:00:03:06", "10.2.0.16"),
    "pub1": Vif("pub", GATEWAY, "0a:00:00:00:04:01", "172.17.0.10"),
}
# router port -> (router, MAC, network, switch)
ROUTER_PORTS: dict[str, tuple[str, str, str, str]] = {
    "lr0-sw0": ("lr0", "00:00:00:00:ff:01", "10.0.0.1/24", "sw0"),
    "lr0-sw1": ("lr0", "00:00:00:00:ff:02", "10.0.1.1/24", "sw1"),
    "lr0-join": ("lr0", "00:00:00:00:ff:03", "100.64.0.1/16", "join"),
    "gr0-join": ("gr0", "00:00:00:00:fe:01", "100.64.0.2/16", "join"),
    "gr0-ext": ("gr0", "00:00:00:00:fe:02", "172.16.0.1/24", "ext"),
    "lr1-sw2": ("lr1", "00:00:00:00:fd:01", "10.2.0.1/24", "sw2"),
    "lr1-pub": ("lr1", "00:00:00:00:fd:02", "172.17.0.1/24", "pub"),
}
DGP_SNAT_IP = "172.17.0.1"  # lr1's, on its distributed gateway port lr1-pub
FLOATING_IP = "172.16.0.50"  # vm2's
SNAT_IP = "172.16.0.1"
PHASES = ("bound", "changed")
FLOATING = {"bound": "vm2", "changed": "vm4"}  # the VIF behind the floating IP


def mac_of(port: str) -> str:
    return ROUTER_PORTS[port][1]


@dataclass
class Run:
    """What one run observed."""

    northd: str
    error: str = ""
    step: str = ""
    bindings: dict[str, str | None] = field(default_factory=dict)
    up: dict[str, bool] = field(default_factory=dict)
    installed: dict[str, bool] = field(default_factory=dict)
    # per phase, then per hypervisor: the number of flows, and the normalized table
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    flows: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    traces: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # per phase
    sb_flows: dict[str, int] = field(default_factory=dict)  # Logical_Flow rows per phase

    def ok(self) -> None:
        if self.error:
            pytest.fail(f"the run with the {self.northd} northd broke off:\n{self.error}",
                        pytrace=False)


class RouterDeployment(Deployment):
    """The switch scenario's deployment (a control plane with either northd, hv1 and
    hv2), tracing from this scenario's VIFs."""

    def trace(self, src: str, flow: str) -> list[str]:
        hv = self.hvs[VIFS[src].hv]
        out = hv.appctl("ofproto/trace", "br-int",
                        f"in_port={hv.ofport(f'if-{src}')},{flow}").stdout
        passes = [x for x in out.splitlines() if x.startswith("Datapath actions:")]
        assert passes, out
        ports = odp_port_names(hv)
        return [normalize_controller(normalize_odp_actions(p, ports)) for p in passes]


def normalize_controller(actions: str) -> str:
    """Datapath actions with a controller action's rule cookie (the first 32 bits of
    the logical flow's UUID, as a flow's own cookie) and recirculation id masked."""
    actions = RULE_COOKIE.sub("rule_cookie=<lflow>", actions)
    return RECIRC_ID.sub("recirc_id=<id>", actions)


def topology(d: RouterDeployment, run: Run) -> None:
    cp = d.cp
    run.step = "making the switches, routers, routes and NAT"
    for sw in ("sw0", "sw1", "join", "ext", "sw2", "pub"):
        cp.nbctl("--wait=sb", "ls-add", sw)
    cp.nbctl("--wait=sb", "lr-add", "lr0")
    cp.nbctl("--wait=sb", "lr-add", "lr1")
    cp.nbctl("--wait=sb", "lr-add", "gr0", "--", "set", "Logical_Router", "gr0",
             f"options:chassis={GATEWAY}")
    for lrp, (router, mac, net, sw) in ROUTER_PORTS.items():
        cp.nbctl("--wait=sb", "lrp-add", router, lrp, mac, net)
        lsp = f"{sw}-{router}"
        cp.nbctl("--wait=sb", "lsp-add", sw, lsp, "--", "lsp-set-type", lsp, "router",
                 "--", "lsp-set-addresses", lsp, "router",
                 "--", "lsp-set-options", lsp, f"router-port={lrp}")
    for lport, vif in VIFS.items():
        cp.nbctl("--wait=sb", "lsp-add", vif.switch, lport, "--", "lsp-set-addresses",
                 lport, f"{vif.mac} {vif.ip}")
    cp.nbctl("--wait=sb", "lr-route-add", "lr0", "0.0.0.0/0", "100.64.0.2")
    cp.nbctl("--wait=sb", "lr-route-add", "gr0", "10.0.0.0/16", "100.64.0.1")
    cp.nbctl("--wait=sb", "lr-nat-add", "gr0", "snat", SNAT_IP, "10.0.0.0/16")
    cp.nbctl("--wait=sb", "lr-nat-add", "gr0", "dnat_and_snat", FLOATING_IP,
             VIFS[FLOATING["bound"]].ip)
    cp.nbctl("--wait=sb", "lrp-set-gateway-chassis", "lr1-pub", GATEWAY, "10")
    cp.nbctl("--wait=sb", "lr-nat-add", "lr1", "snat", DGP_SNAT_IP, "10.2.0.0/24")


def build(d: RouterDeployment, run: Run) -> None:
    cp = d.cp
    run.step = "starting the control plane and the hypervisors"
    d.start()
    topology(d, run)
    run.step = "binding the VIFs"
    for lport, vif in VIFS.items():
        d.hvs[vif.hv].add_vif(f"if-{lport}", lport, vif.mac)
    for lport, vif in VIFS.items():
        cp.wait_claimed(lport, vif.hv, up=True, logs=d.logs)
        d.hvs[vif.hv].wait_installed(lport)
    cp.nbctl("--wait=hv", "sync", timeout=WAIT)
    run.step = "reading what the hypervisors installed"
    run.bindings = {p: cp.port_chassis(p) for p in VIFS}
    run.up = {p: cp.port_up(p) for p in VIFS}
    run.installed = {p: d.hvs[v.hv].interface_ids(f"if-{p}").get("ovn-installed") == "true"
                     for p, v in VIFS.items()}
    snapshot(d, run, "bound")


def changes(d: RouterDeployment, run: Run) -> None:
    """The floating IP moved from vm2 to vm4, and a policy of lr0 that drops vm1's
    packets to vm3; flows updated on the hypervisors."""
    cp = d.cp
    run.step = "moving the floating IP and adding a router policy"
    cp.nbctl("--wait=sb", "lr-nat-del", "gr0", "dnat_and_snat", FLOATING_IP)
    cp.nbctl("--wait=sb", "lr-nat-add", "gr0", "dnat_and_snat", FLOATING_IP,
             VIFS[FLOATING["changed"]].ip)
    cp.nbctl("--wait=sb", "lr-policy-add", "lr0", "1000",
             f"ip4.src == {VIFS['vm1'].ip} && ip4.dst == {VIFS['vm3'].ip}", "drop")
    cp.nbctl("--wait=hv", "sync", timeout=WAIT)
    snapshot(d, run, "changed")


def snapshot(d: RouterDeployment, run: Run, phase: str) -> None:
    """Each hypervisor's settled flow table, the SB's flow count, and the traces."""
    run.step = f"reading what the hypervisors installed ({phase})"
    run.counts[phase], run.flows[phase] = {}, {}
    for name, hv in d.hvs.items():
        hv.wait_flows_stable()
        run.counts[phase][name] = hv.flow_count()
        run.flows[phase][name] = normalize_learned_cookies(hv.flows())
    run.sb_flows[phase] = len(d.cp.sbctl("--bare", "--columns=_uuid", "list",
                                         "Logical_Flow").stdout.split())
    run.step = f"tracing packets through the routers ({phase})"
    run.traces[phase] = {name: d.trace(src, flow) for name, (src, flow) in PACKETS.items()}


def udp(src: str, dst_mac: str, dst_ip: str, ttl: int = 64) -> tuple[str, str]:
    s = VIFS[src]
    return src, (f"udp,dl_src={s.mac},dl_dst={dst_mac},nw_src={s.ip},nw_dst={dst_ip},"
                 f"nw_ttl={ttl},udp_src=5000,udp_dst=53")


# name -> (source VIF, the rest of the microflow)
PACKETS: dict[str, tuple[str, str]] = {
    "vm1->vm3 (lr0, same hv)": udp("vm1", mac_of("lr0-sw0"), VIFS["vm3"].ip),
    "vm1->vm4 (lr0, other hv)": udp("vm1", mac_of("lr0-sw0"), VIFS["vm4"].ip),
    "vm3->vm1 (lr0, back)": udp("vm3", mac_of("lr0-sw1"), VIFS["vm1"].ip),
    "vm1->vm3 ttl 1 (expires in lr0)": udp("vm1", mac_of("lr0-sw0"), VIFS["vm3"].ip, ttl=1),
    "vm2->ext1 (gr0, SNAT)": udp("vm2", mac_of("lr0-sw0"), VIFS["ext1"].ip),
    "vm4->ext1 (gr0, SNAT)": udp("vm4", mac_of("lr0-sw1"), VIFS["ext1"].ip),
    "ext1->floating IP (gr0, DNAT)": udp("ext1", mac_of("gr0-ext"), FLOATING_IP),
    "vm5->pub1 (lr1, to its gateway chassis)": udp("vm5", mac_of("lr1-sw2"),
                                                   VIFS["pub1"].ip),
    "vm6->pub1 (lr1, SNAT on the gateway chassis)": udp("vm6", mac_of("lr1-sw2"),
                                                        VIFS["pub1"].ip),
}


def run_one(northd: str, workdir: Path) -> Run:
    run = Run(northd)
    d = RouterDeployment(SERVERS, northd, workdir)
    try:
        build(d, run)
        changes(d, run)
    except Exception as e:  # reported by every test (Run.ok)
        run.error = f"while {run.step}: {type(e).__name__}: {e}\n{d.flow_counts()}"
    finally:
        d.stop()
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """The scenario with the real northd, then with ours."""
    return {n: run_one(n, tmp_path_factory.mktemp(f"lflows-router-{n}")) for n in NORTHDS}


@pytest.mark.parametrize("northd", NORTHDS)
def test_every_vif_claimed_up_and_installed(runs: dict[str, Run], northd: str) -> None:
    run = runs[northd]
    run.ok()
    assert run.bindings == {p: v.hv for p, v in VIFS.items()}
    assert run.up == dict.fromkeys(VIFS, True)
    assert run.installed == dict.fromkeys(VIFS, True)


@pytest.mark.parametrize("phase", PHASES)
def test_same_flow_count_as_real(runs: dict[str, Run], phase: str) -> None:
    real, ours = runs["real"], runs["ours"]
    real.ok()
    ours.ok()
    counts = real.counts[phase]
    for hv in ("hv1", "hv2"):
        assert counts[hv] > 100, (hv, counts)  # router pipelines installed
    # hv2 also hosts the gateway router, which hv1 has no flows for.
    assert counts["hv2"] > counts["hv1"], counts
    assert ours.counts[phase] == counts, (
        f"OpenFlow flows per hypervisor: ours {ours.counts[phase]}, real {counts} "
        f"(Logical_Flow rows: ours {ours.sb_flows[phase]}, real {real.sb_flows[phase]})")


@pytest.mark.parametrize("phase", PHASES)
def test_same_flows_as_real(runs: dict[str, Run], phase: str) -> None:
    real, ours = runs["real"], runs["ours"]
    real.ok()
    ours.ok()
    for hv in ("hv1", "hv2"):
        o, r = ours.flows[phase][hv], real.flows[phase][hv]
        only_o, only_r = sorted(set(o) - set(r)), sorted(set(r) - set(o))
        assert o == r, (f"{hv}: {len(only_o)} flows only with ours, {len(only_r)} only "
                        "with the real northd\n  only ours:\n    " + "\n    ".join(only_o[:15])
                        + "\n  only real:\n    " + "\n    ".join(only_r[:15]))


def test_changes_reach_the_hypervisors(runs: dict[str, Run]) -> None:
    """Moving the floating IP and the policy replaced flows on both hypervisors (hv1
    has lr0's policy, hv2 lr0's and gr0's NAT), with either northd."""
    for run in runs.values():
        run.ok()
        for hv in ("hv1", "hv2"):
            assert run.flows["changed"][hv] != run.flows["bound"][hv], (run.northd, hv)


@pytest.mark.parametrize("phase", PHASES)
def test_trace_through_routers_as_real(runs: dict[str, Run], phase: str) -> None:
    real, ours = runs["real"], runs["ours"]
    real.ok()
    # What the real northd's flows do, so that equal traces mean something.
    t = real.traces[phase]
    same_hv = t["vm1->vm3 (lr0, same hv)"][-1]
    if phase == "bound":
        assert same_hv.endswith("if-vm3"), same_hv
        rewritten = f"set(eth(src={mac_of('lr0-sw1')},dst={VIFS['vm3'].mac}))"
        assert rewritten in same_hv and "ttl=63" in same_hv, same_hv
    else:
        assert same_hv.endswith("drop"), same_hv  # lr0's policy
    assert t["vm1->vm4 (lr0, other hv)"][-1].endswith("ovn-hv2-0")
    assert t["vm3->vm1 (lr0, back)"][-1].endswith("if-vm1")
    expired = t["vm1->vm3 ttl 1 (expires in lr0)"][-1]
    assert "if-vm3" not in expired and "controller(" in expired, expired  # ICMP reply
    floating = FLOATING[phase]
    for vm in ("vm2", "vm4"):
        snat = "\n".join(t[f"{vm}->ext1 (gr0, SNAT)"])
        to = FLOATING_IP if vm == floating else SNAT_IP
        assert snat.endswith("if-ext1") and f"nat(src={to})" in snat, (vm, snat)
    dnat = "\n".join(t["ext1->floating IP (gr0, DNAT)"])
    assert dnat.endswith(f"if-{floating}") and f"nat(dst={VIFS[floating].ip})" in dnat, dnat
    # lr1's gateway port lives on hv2: hv1 sends the packet there, hv2 SNATs it.
    assert t["vm5->pub1 (lr1, to its gateway chassis)"][-1].endswith("ovn-hv2-0")
    dgp = "\n".join(t["vm6->pub1 (lr1, SNAT on the gateway chassis)"])
    assert dgp.endswith("if-pub1") and f"nat(src={DGP_SNAT_IP})" in dgp, dgp
    ours.ok()
    for name in PACKETS:
        assert ours.traces[phase][name] == t[name], name
