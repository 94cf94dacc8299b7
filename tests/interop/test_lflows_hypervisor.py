"""Real hypervisors on the logical flows of our northd: the same scenario once with the
real `ovn-northd` and once with ours (`python -m pyovsdb northd`), each between NB and
SB databases on the same kind of server, with two real hypervisors (`ovs-vswitchd` on
the dummy datapath and `ovn-controller`) consuming the SB.

The scenario: one switch with VIFs vm1 and vm2 on hv1 and vm3 on hv2, a stateful ACL
(allow-related from vm1), a drop ACL (TCP port 22 to vm2) and a TCP load balancer
whose backends are vm2 and vm3 ("bound"); then a port group of vm1 and vm3 with a
drop ACL for DNS to them, and the load balancer taken off the switch ("changed").
What must hold with our northd as with the real one, in both phases: every VIF
claimed, up and ovn-installed; the same number of OpenFlow flows on each hypervisor,
and the same flow tables once normalized; and `ofproto/trace` of packets taking the
same datapath actions in every pass: vm1 to vm2 and to vm3 on the other hypervisor
(the same output port), vm1 to vm2's dropped port (dropped), vm2 to vm1's DNS
(dropped once changed), an ARP request for vm2 (answered back to vm1) and vm1 to the
VIP (up to the backend choice, a dp_hash recirculation the trace does not follow,
then by MAC once the load balancer has gone).

Rules kept here:
- Both runs of a pair use the same server kind for NB, SB and conf.db, so the northd
  is the only thing that differs between them; the pair runs on the real
  ovsdb-server and again on ours (`SERVERS`). Runs go one after the other, real
  northd first, each on fresh databases in its own directories, and every daemon is
  stopped by its pid before the next run starts, also when a run breaks off (then
  every test of the pair fails with the step it was at and the daemons' log tails).
- What differs between two runs of one scenario even with the same northd (conntrack
  zones, cookies also inside `learn()`, a flood's member order, datapath port and
  recirculation numbers) is normalized away, by `hypervisor.normalize_flows` and
  `normalize_learned_cookies` for the tables and `normalize_odp_actions` for the
  traces; nothing else is.
- Every NB change is its own `--wait=sb` transaction, so tunnel keys do not depend on
  UUID-hash order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import hypervisor
from hypervisor import (
    Hypervisor,
    split_actions,
)

pytestmark = pytest.mark.interop

SERVERS = ("real", "ours")  # the server of every database, per pair of runs
NORTHDS = ("real", "ours")
WAIT = 30.0
SWITCH = "sw0"
VIFS = {"vm1": "hv1", "vm2": "hv1", "vm3": "hv2"}  # lport -> hypervisor
VIP = ("10.0.0.100", 80)
DROPPED_PORT = 22
PHASES = ("bound", "changed")
LEARN_COOKIE = re.compile(r"\bcookie=0x[0-9a-f]+")


def mac(lport: str) -> str:
    return f"0a:00:00:00:00:{int(lport[2:]):02x}"


def ip(lport: str) -> str:
    return f"10.0.0.{int(lport[2:]) + 10}"


@dataclass
class Run:
    """What one run observed."""

    northd: str
    servers: str
    error: str = ""
    step: str = ""
    bindings: dict[str, str | None] = field(default_factory=dict)
    up: dict[str, bool] = field(default_factory=dict)
    installed: dict[str, bool] = field(default_factory=dict)
    # per phase, then per hypervisor: dump-flows lines, and the normalized table
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    flows: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    traces: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # per phase
    sb_flows: dict[str, int] = field(default_factory=dict)  # Logical_Flow rows per phase

    def ok(self) -> None:
        if self.error:
            pytest.fail(f"the run with the {self.northd} northd ({self.servers} servers) "
                        f"broke off:\n{self.error}", pytrace=False)


class Deployment(hypervisor.Deployment):
    """hv1 and hv2 on a control plane with `northd`, its databases on `servers`."""

    def __init__(self, servers: str, northd: str, workdir: Path) -> None:
        super().__init__(servers, workdir, northd=northd)
        self.servers = servers

    def trace(self, src: str, flow: str) -> list[str]:
        """`ofproto/trace` of `flow` entering from VIF `src`: the datapath actions of
        every pass (one per recirculation), normalized."""
        hv = self.hvs[VIFS[src]]
        out = hv.appctl("ofproto/trace", "br-int",
                        f"in_port={hv.ofport(f'if-{src}')},{flow}").stdout
        passes = [x for x in out.splitlines() if x.startswith("Datapath actions:")]
        assert passes, out
        ports = odp_port_names(hv)
        return [normalize_odp_actions(p, ports) for p in passes]


def odp_port_names(hv: Hypervisor) -> dict[str, str]:
    """Datapath port number -> port name (`dpif/show`)."""
    names: dict[str, str] = {}
    for line in hv.appctl("dpif/show").stdout.splitlines():
        m = re.match(r"\s+(\S+) (\d+)/(\d+)", line)
        if m:
            names[m.group(3)] = m.group(1)
    return names


def normalize_odp_actions(line: str, ports: dict[str, str]) -> str:
    """Datapath actions with output port numbers named, and conntrack zones and
    recirculation ids (numbered by ovn-controller and ovs-vswitchd in the order they
    come to them) masked."""
    head, _, acts = line.partition(": ")
    acts = re.sub(r"zone=\d+", "zone=<z>", acts)
    acts = re.sub(r"recirc\(0x[0-9a-f]+\)", "recirc(<id>)", acts)
    return f"{head}: " + ",".join(ports.get(a, a) for a in split_actions(acts))


def normalize_learned_cookies(flows: list[str]) -> list[str]:
    """A normalized flow table with the cookies of `learn()` actions masked: like a
    flow's own cookie (which `normalize_flows` drops) it is the first 32 bits of the
    logical flow's UUID (the load balancer's hairpin flows learn with it)."""
    return sorted(LEARN_COOKIE.sub("cookie=<lflow>", f) for f in flows)


def build(d: Deployment, run: Run) -> None:
    cp = d.cp
    run.step = "starting the control plane and the hypervisors"
    d.start()
    run.step = "making the logical switch, its ports, ACLs and load balancer"
    cp.nbctl("--wait=sb", "ls-add", SWITCH)
    for lport in VIFS:
        cp.nbctl("--wait=sb", "lsp-add", SWITCH, lport, "--", "lsp-set-addresses", lport,
                 f"{mac(lport)} {ip(lport)}")
    cp.nbctl("--wait=sb", "acl-add", SWITCH, "from-lport", "1001",
             'inport == "vm1" && ip4', "allow-related")
    cp.nbctl("--wait=sb", "acl-add", SWITCH, "to-lport", "1002",
             f'outport == "vm2" && tcp && tcp.dst == {DROPPED_PORT}', "drop")
    backends = ",".join(f"{ip(p)}:{VIP[1]}" for p in ("vm2", "vm3"))
    cp.nbctl("--wait=sb", "lb-add", "lb0", f"{VIP[0]}:{VIP[1]}", backends, "tcp")
    cp.nbctl("--wait=sb", "ls-lb-add", SWITCH, "lb0")
    run.step = "binding the VIFs"
    for lport, where in VIFS.items():
        d.hvs[where].add_vif(f"if-{lport}", lport, mac(lport))
    for lport, where in VIFS.items():
        cp.wait_claimed(lport, where, up=True, logs=d.logs)
        d.hvs[where].wait_installed(lport)
    cp.nbctl("--wait=hv", "sync", timeout=WAIT)
    run.step = "reading what the hypervisors installed"
    run.bindings = {p: cp.port_chassis(p) for p in VIFS}
    run.up = {p: cp.port_up(p) for p in VIFS}
    run.installed = {p: d.hvs[where].interface_ids(f"if-{p}").get("ovn-installed") == "true"
                     for p, where in VIFS.items()}
    snapshot(d, run, "bound")


def changes(d: Deployment, run: Run) -> None:
    """After the VIFs are up: a port group with a drop ACL for DNS to vm1 and vm3, and
    the load balancer taken off the switch; flows updated on the hypervisors."""
    cp = d.cp
    run.step = "changing ACLs and load balancers"
    cp.nbctl("--wait=sb", "pg-add", "pg1", "vm1", "vm3")
    cp.nbctl("--wait=sb", "--type=port-group", "acl-add", "pg1", "to-lport", "1003",
             "outport == @pg1 && udp.dst == 53", "drop")
    cp.nbctl("--wait=sb", "ls-lb-del", SWITCH, "lb0")
    cp.nbctl("--wait=hv", "sync", timeout=WAIT)
    snapshot(d, run, "changed")


def snapshot(d: Deployment, run: Run, phase: str) -> None:
    """Each hypervisor's settled flow table, the SB's flow count, and the traces."""
    run.step = f"reading what the hypervisors installed ({phase})"
    run.counts[phase], run.flows[phase] = {}, {}
    for name, hv in d.hvs.items():
        hv.wait_flows_stable()
        run.counts[phase][name] = hv.flow_count()
        run.flows[phase][name] = normalize_learned_cookies(hv.flows())
    run.sb_flows[phase] = len(d.cp.sbctl("--bare", "--columns=_uuid", "list",
                                         "Logical_Flow").stdout.split())
    run.step = f"tracing packets from vm1 ({phase})"
    base = f"dl_src={mac('vm1')},nw_src={ip('vm1')},nw_ttl=64"
    run.traces[phase] = {
        "vm1->vm2 udp (same hv)": d.trace(
            "vm1", f"udp,{base},dl_dst={mac('vm2')},nw_dst={ip('vm2')},udp_src=5000,udp_dst=53"),
        "vm1->vm3 udp (other hv)": d.trace(
            "vm1", f"udp,{base},dl_dst={mac('vm3')},nw_dst={ip('vm3')},udp_src=5000,udp_dst=53"),
        f"vm1->vm2 tcp/{DROPPED_PORT} (ACL drop)": d.trace(
            "vm1", f"tcp,{base},dl_dst={mac('vm2')},nw_dst={ip('vm2')},tcp_src=5000,"
                   f"tcp_dst={DROPPED_PORT}"),
        "vm1 ARP for vm2 (responder)": d.trace(
            "vm1", f"arp,dl_src={mac('vm1')},dl_dst=ff:ff:ff:ff:ff:ff,arp_op=1,"
                   f"arp_spa={ip('vm1')},arp_tpa={ip('vm2')},arp_sha={mac('vm1')}"),
        "vm2->vm1 udp (pg1's drop once changed)": d.trace(
            "vm2", f"udp,dl_src={mac('vm2')},nw_src={ip('vm2')},nw_ttl=64,"
                   f"dl_dst={mac('vm1')},nw_dst={ip('vm1')},udp_src=5000,udp_dst=53"),
        "vm1->VIP tcp (load balancer)": d.trace(
            "vm1", f"tcp,{base},dl_dst={mac('vm2')},nw_dst={VIP[0]},tcp_src=5000,"
                   f"tcp_dst={VIP[1]}"),
    }


def run_one(servers: str, northd: str, workdir: Path) -> Run:
    run = Run(northd, servers)
    d = Deployment(servers, northd, workdir)
    try:
        build(d, run)
        changes(d, run)
    except Exception as e:  # reported by every test (Run.ok)
        run.error = f"while {run.step}: {type(e).__name__}: {e}\n{d.flow_counts()}"
    finally:
        d.stop()
    return run


@pytest.fixture(scope="module", params=SERVERS)
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
         ) -> dict[str, Run]:
    """The scenario with the real northd, then with ours, on one server kind."""
    servers = str(request.param)
    return {n: run_one(servers, n, tmp_path_factory.mktemp(f"lflows-{servers}-{n}"))
            for n in NORTHDS}


@pytest.mark.parametrize("northd", NORTHDS)
def test_every_vif_claimed_up_and_installed(runs: dict[str, Run], northd: str) -> None:
    run = runs[northd]
    run.ok()
    assert run.bindings == VIFS
    assert run.up == dict.fromkeys(VIFS, True)
    assert run.installed == dict.fromkeys(VIFS, True)


@pytest.mark.parametrize("phase", PHASES)
def test_same_flow_count_as_real(runs: dict[str, Run], phase: str) -> None:
    real, ours = runs["real"], runs["ours"]
    real.ok()
    ours.ok()
    for hv in ("hv1", "hv2"):
        # A switch with ACLs has a full pipeline, not the few flows ovn-controller
        # installs without any logical flow.
        assert real.counts[phase][hv] > 100, (hv, real.counts)
    assert ours.counts[phase] == real.counts[phase], (
        f"OpenFlow flows per hypervisor: ours {ours.counts[phase]}, real "
        f"{real.counts[phase]} (Logical_Flow rows: ours {ours.sb_flows[phase]}, real "
        f"{real.sb_flows[phase]})")


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
    """The changes replaced flows on both hypervisors, with either northd."""
    for run in runs.values():
        run.ok()
        for hv in ("hv1", "hv2"):
            assert run.flows["changed"][hv] != run.flows["bound"][hv], (run.northd, hv)


@pytest.mark.parametrize("phase", PHASES)
def test_trace_reaches_the_same_port(runs: dict[str, Run], phase: str) -> None:
    real, ours = runs["real"], runs["ours"]
    real.ok()
    # What the real northd's flows do, so that equal traces mean something.
    traces = real.traces[phase]
    assert traces["vm1->vm2 udp (same hv)"][-1].endswith("if-vm2")
    assert "if-vm2" not in traces[f"vm1->vm2 tcp/{DROPPED_PORT} (ACL drop)"][-1]
    assert traces["vm1 ARP for vm2 (responder)"][-1].endswith("if-vm1")
    # (the to-lport drop for vm3 applies on vm3's hypervisor, after the tunnel)
    assert traces["vm1->vm3 udp (other hv)"][-1].endswith("ovn-hv2-0")
    to_vm1 = traces["vm2->vm1 udp (pg1's drop once changed)"][-1]
    assert to_vm1.endswith("if-vm1" if phase == "bound" else "drop"), to_vm1
    ours.ok()
    assert ours.traces[phase] == real.traces[phase]
