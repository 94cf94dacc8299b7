"""A real OVN deployment on our server: two hypervisors (real `ovs-vswitchd` on a dummy
datapath and real `ovn-controller`), their conf.db, the NB and the SB on our server,
the real `ovn-northd` between them, and the very same scenario on the real
ovsdb-server in the same session to compare with.

The scenario: two logical switches joined by a router, six VIFs spread over both
hypervisors and both switches, a seventh port added with `--wait=hv`, then a VIF
moved from hv1 to hv2. What must hold on ours as on the real server: every VIF
claimed by the chassis it sits on, `up` in NB, `ovn-installed` on the OVS Interface,
`--wait=hv` returning, the same OpenFlow flows on each hypervisor, the move releasing
and re-claiming the port, and `ofproto/trace` taking a packet to the same port; with
ovn-controller's conditional monitoring (the default) and with `ovn-monitor-all`.

Rules kept here:
- Both runs of a mode happen in the same session, real first, each on fresh databases
  in its own directories; every daemon is stopped by its pid before the next run
  starts, also when a run breaks off (then every test of that run fails with the
  daemons' log tails and the flow counts reached).
- What may legitimately differ between two runs of one scenario, even on the real
  server, is normalized away (see `hypervisor.normalize_flows`, `name_odp_ports`);
  nothing else is.
- Steps whose order decides a number (tunnel keys, ofports) are taken one at a time.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import hypervisor
from hypervisor import Hypervisor, split_actions

pytestmark = pytest.mark.interop

KINDS = ("real", "ours")
MODES = {"conditional": False, "monitor-all": True}
WAIT = 30.0

# lport -> (logical switch, hypervisor): six VIFs, both switches on both hypervisors,
# so each hypervisor has local and remote ports on each switch.
VIFS = {
    "vm1": ("sw0", "hv1"),
    "vm2": ("sw0", "hv1"),
    "vm3": ("sw1", "hv1"),
    "vm4": ("sw0", "hv2"),
    "vm5": ("sw1", "hv2"),
    "vm6": ("sw1", "hv2"),
}
PHASES = ("bound", "added", "moved", "restarted")
ADDED = ("vm7", "sw0", "hv1")  # added with --wait=hv after the others are up
MOVED = ("vm2", "hv1", "hv2")  # moved after that


def mac(lport: str) -> str:
    return f"0a:00:00:00:00:{int(lport[2:]):02x}"


def ip(lport: str, switch: str) -> str:
    return f"10.0.{switch[2:]}.{int(lport[2:]) + 10}"


@dataclass
class Run:
    """What one scenario run observed, phase by phase."""

    kind: str
    monitor_all: bool
    error: str = ""
    step: str = ""  # the step the scenario was at
    bindings: dict[str, dict[str, str | None]] = field(default_factory=dict)
    up: dict[str, dict[str, bool]] = field(default_factory=dict)
    installed: dict[str, dict[str, bool]] = field(default_factory=dict)
    flows: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    waits: dict[str, float] = field(default_factory=dict)  # --wait=hv seconds
    released: dict[str, bool] = field(default_factory=dict)
    traces: dict[str, dict[str, str]] = field(default_factory=dict)
    sb_cells: dict[str, dict[str, int]] = field(default_factory=dict)
    chassis_after_exit: list[str] = field(default_factory=list)

    def ok(self) -> None:
        """Fail the calling test with the diagnostics if the scenario broke off."""
        if self.error:
            pytest.fail(f"{self.kind} run ({'monitor-all' if self.monitor_all else 'conditional'})"
                        f" broke off:\n{self.error}", pytrace=False)


class Deployment(hypervisor.Deployment):
    """The control plane and both hypervisors of one run."""

    def __init__(self, kind: str, monitor_all: bool, workdir: Path, *,
                 sb_cluster: int = 0) -> None:
        super().__init__(kind, workdir, monitor_all=monitor_all, sb_cluster=sb_cluster)
        self.where: dict[str, str] = {}  # lport -> hypervisor it sits on

    def add_vif(self, lport: str, hv: str) -> None:
        self.hvs[hv].add_vif(f"if-{lport}", lport, mac(lport))
        self.where[lport] = hv

    def wait_bound(self, lport: str) -> None:
        """Until `lport` is claimed by its hypervisor, up in NB and ovn-installed."""
        hv = self.where[lport]
        self.cp.wait_claimed(lport, hv, up=True, logs=self.logs)
        self.hvs[hv].wait_installed(lport)

    def snapshot(self, run: Run, phase: str) -> None:
        """Bindings, NB up, ovn-installed and the settled flows of every hypervisor,
        once every hypervisor has caught up with the NB (--wait=hv)."""
        self.cp.nbctl("--wait=hv", "sync", timeout=WAIT)
        lports = sorted(self.where)
        run.bindings[phase] = {p: self.cp.port_chassis(p) for p in lports}
        run.up[phase] = {p: self.cp.port_up(p) for p in lports}
        run.installed[phase] = {
            p: self.hvs[self.where[p]].interface_ids(f"if-{p}").get("ovn-installed") == "true"
            for p in lports}
        for hv in self.hvs.values():
            hv.wait_flows_stable()
        run.flows[phase] = {name: hv.flows() for name, hv in self.hvs.items()}
        run.sb_cells[phase] = {name: sb_cells(hv) for name, hv in self.hvs.items()}

    def trace(self, src: str, dst: str, dst_switch: str) -> str:
        """ofproto/trace of an IPv4 packet from VIF `src` to `dst` at `src`'s hypervisor:
        its datapath actions, with datapath port numbers named."""
        hv = self.hvs[self.where[src]]
        src_switch = VIFS.get(src, (ADDED[1],))[0]
        flow = (f"in_port={hv.ofport(f'if-{src}')},dl_src={mac(src)},"
                f"dl_dst={mac(dst) if src_switch == dst_switch else ROUTER_MAC[src_switch]},"
                f"ip,nw_src={ip(src, src_switch)},nw_dst={ip(dst, dst_switch)},nw_ttl=64")
        out = hv.appctl("ofproto/trace", "br-int", flow).stdout
        line = next((x for x in out.splitlines() if x.startswith("Datapath actions:")), None)
        assert line is not None, out
        return name_odp_ports(hv, line)


ROUTER_MAC = {"sw0": "0a:00:00:00:ff:00", "sw1": "0a:00:00:00:ff:01"}


def sb_cells(hv: Hypervisor) -> int:
    """How many cells ovn-controller's SB replica holds (its `memory/show`): what the
    server sent it under its monitor conditions."""
    out = hv.controller_appctl("memory/show").stdout
    m = re.search(r"idl-cells-OVN_Southbound:(\d+)", out)
    assert m is not None, out
    return int(m.group(1))


def name_odp_ports(hv: Hypervisor, actions: str) -> str:
    """Datapath actions with output port numbers replaced by port names: numbering
    follows creation order, which need not be the same in two runs."""
    names: dict[str, str] = {}
    for line in hv.appctl("dpif/show").stdout.splitlines():
        m = re.match(r"\s+(\S+) (\d+)/(\d+)", line)
        if m:
            names[m.group(3)] = m.group(1)
    head, _, acts = actions.partition(": ")
    return f"{head}: " + ",".join(names.get(a, a) for a in split_actions(acts))


def build(d: Deployment, run: Run) -> None:
    """Start the deployment, make the logical topology and bind the six VIFs."""
    cp = d.cp
    run.step = "starting the control plane and the hypervisors"
    d.start()
    run.step = "binding the six VIFs"
    # --wait=sb: ovn-northd gives each new datapath and port the next free tunnel key
    # only when it sees them one at a time; in one batch it goes by UUID hash order,
    # and the two runs' flows would differ in their keys.
    cp.nbctl("--wait=sb", "lr-add", "lr0")
    for sw in ("sw0", "sw1"):
        lrp = f"lr0-{sw}"
        cp.nbctl("--wait=sb", "ls-add", sw, "--", "lrp-add", "lr0", lrp, ROUTER_MAC[sw],
                 f"10.0.{sw[2:]}.1/24", "--",
                 "lsp-add", sw, f"{sw}-lr0", "--", "lsp-set-type", f"{sw}-lr0", "router",
                 "--", "lsp-set-addresses", f"{sw}-lr0", "router",
                 "--", "lsp-set-options", f"{sw}-lr0", f"router-port={lrp}")
    # A switch no hypervisor has a port on: with conditional monitoring no
    # ovn-controller hears of it, with ovn-monitor-all each does.
    cp.nbctl("--wait=sb", "ls-add", "far", "--", "lsp-add", "far", "far1")
    for lport, (sw, _) in VIFS.items():
        cp.nbctl("--wait=sb", "lsp-add", sw, lport, "--", "lsp-set-addresses", lport,
                 f"{mac(lport)} {ip(lport, sw)}")
    for lport, (_, hv) in VIFS.items():
        d.add_vif(lport, hv)
    for lport in VIFS:
        d.wait_bound(lport)
    t0 = time.monotonic()
    cp.nbctl("--wait=hv", "sync", timeout=WAIT)
    run.waits["sync"] = time.monotonic() - t0
    d.snapshot(run, "bound")
    run.traces["bound"] = {
        "vm1->vm2 (same switch, same hv)": d.trace("vm1", "vm2", "sw0"),
        "vm1->vm4 (same switch, other hv)": d.trace("vm1", "vm4", "sw0"),
        "vm1->vm3 (through lr0, same hv)": d.trace("vm1", "vm3", "sw1"),
    }


def scenario(d: Deployment, run: Run) -> None:
    cp = d.cp
    build(d, run)

    run.step = "adding a port with --wait=hv"
    lport, sw, hv = ADDED
    t0 = time.monotonic()
    cp.nbctl("--wait=hv", "lsp-add", sw, lport, "--", "lsp-set-addresses", lport,
             f"{mac(lport)} {ip(lport, sw)}", timeout=WAIT)
    run.waits["lsp-add"] = time.monotonic() - t0
    d.add_vif(lport, hv)
    d.wait_bound(lport)
    d.snapshot(run, "added")

    run.step = "moving a VIF"
    lport, old, new = MOVED
    d.hvs[old].del_vif(f"if-{lport}")
    # Released: no chassis, and ovn-northd shows the port down.
    cp.wait_claimed(lport, None, up=False, logs=d.logs)
    run.released[lport] = True
    d.add_vif(lport, new)
    d.wait_bound(lport)
    cp.nbctl("--wait=hv", "sync", timeout=WAIT)
    d.snapshot(run, "moved")
    run.traces["moved"] = {
        "vm1->vm2 (same switch, now other hv)": d.trace("vm1", "vm2", "sw0"),
        "vm4->vm2 (same switch, now same hv)": d.trace("vm4", "vm2", "sw0"),
    }

    run.step = "adding a port on the far switch"
    # A port on the far switch reaches the hypervisors' replicas only under
    # ovn-monitor-all.
    cp.nbctl("--wait=hv", "lsp-add", "far", "far2", timeout=WAIT)
    run.sb_cells["far port added"] = {name: sb_cells(hv) for name, hv in d.hvs.items()}

    run.step = "restarting the SB server and an ovn-controller"
    # Restarts: the SB server, with vm1 released in its file while it is down (only a
    # client that resynchronizes hears of it: hv1 must claim vm1 again), then hv1's
    # ovn-controller leaving by `exit` (its Chassis goes) and coming back.
    cp.restart_sb(offline=[{"op": "update", "table": "Port_Binding",
                            "where": [["logical_port", "==", "vm1"]],
                            "row": {"chassis": ["set", []]}}])
    d.wait_bound("vm1")
    cp.nbctl("--wait=hv", "sync", timeout=WAIT)
    d.hvs["hv1"].stop_controller(graceful=True)
    run.chassis_after_exit = cp.chassis()
    d.hvs["hv1"].start_controller()
    for lport, hv in d.where.items():
        if hv == "hv1":
            d.wait_bound(lport)
    cp.nbctl("--wait=hv", "sync", timeout=WAIT)
    d.snapshot(run, "restarted")


def run_both(tmp_path_factory: pytest.TempPathFactory, label: str, monitor_all: bool,
             steps: Callable[[Deployment, Run], None], sb_cluster: int = 0) -> dict[str, Run]:
    """`steps` on the real ovsdb-server and on ours, one after the other, every daemon
    stopped (by pid) before the next run starts."""
    out = {}
    for kind in KINDS:
        run = Run(kind, monitor_all)
        d = Deployment(kind, monitor_all, tmp_path_factory.mktemp(f"{kind}-{label}"),
                       sb_cluster=sb_cluster)
        try:
            steps(d, run)
        except Exception as e:  # reported by every test of this run (Run.ok)
            run.error = (f"while {run.step}: {type(e).__name__}: {e}\n"
                         f"{d.flow_counts()}")
        finally:
            d.stop()
        out[kind] = run
    return out


@pytest.fixture(scope="module", params=list(MODES))
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
         ) -> dict[str, Run]:
    """The whole scenario on real and on ours, in one monitoring mode."""
    return run_both(tmp_path_factory, request.param, MODES[request.param], scenario)


def expected_bindings(phase: str) -> dict[str, str]:
    where = {p: hv for p, (_, hv) in VIFS.items()}
    if phase != "bound":
        where[ADDED[0]] = ADDED[2]
    if phase in ("moved", "restarted"):
        where[MOVED[0]] = MOVED[2]
    return dict(sorted(where.items()))


@pytest.mark.parametrize("kind", KINDS)
def test_every_vif_claimed_up_and_installed(runs: dict[str, Run], kind: str) -> None:
    run = runs[kind]
    run.ok()
    for phase in PHASES:
        want = expected_bindings(phase)
        assert run.bindings[phase] == want, phase
        assert run.up[phase] == dict.fromkeys(want, True), phase
        assert run.installed[phase] == dict.fromkeys(want, True), phase


@pytest.mark.parametrize("kind", KINDS)
def test_wait_hv_returns(runs: dict[str, Run], kind: str) -> None:
    run = runs[kind]
    run.ok()
    assert set(run.waits) == {"sync", "lsp-add"}
    assert all(t < WAIT for t in run.waits.values()), run.waits


def flow_diff(phase: str, hv: str, ours: list[str], real: list[str]) -> str:
    only_o = sorted(set(ours) - set(real))
    only_r = sorted(set(real) - set(ours))
    return (f"{phase}, {hv}: flows differ\n  only on ours:\n    " + "\n    ".join(only_o[:10])
            + "\n  only on real:\n    " + "\n    ".join(only_r[:10]))


def test_same_flows_as_real(runs: dict[str, Run]) -> None:
    real, ours = runs["real"], runs["ours"]
    real.ok()
    ours.ok()
    for phase in PHASES:
        for hv in ("hv1", "hv2"):
            r, o = real.flows[phase][hv], ours.flows[phase][hv]
            # A deployment that works has a full pipeline, not the few default flows.
            assert len(r) > 100, (phase, hv, len(r))
            assert len(o) == len(r), (phase, hv, "flow count", len(o), len(r))
            assert o == r, flow_diff(phase, hv, o, r)


def test_move_releases_and_reclaims(runs: dict[str, Run]) -> None:
    lport, old, new = MOVED
    for run in runs.values():
        run.ok()
        assert run.bindings["added"][lport] == old
        assert run.released.get(lport) is True
        assert run.bindings["moved"][lport] == new
        assert run.up["moved"][lport] is True
    # The old hypervisor forgot the port's VIF flows, the new one has them, as on real.
    for hv in ("hv1", "hv2"):
        o, r = runs["ours"].flows["moved"][hv], runs["real"].flows["moved"][hv]
        assert o == r, flow_diff("moved", hv, o, r)


def test_trace_reaches_the_same_port(runs: dict[str, Run]) -> None:
    real, ours = runs["real"], runs["ours"]
    real.ok()
    ours.ok()
    assert ours.traces == real.traces
    bound = real.traces["bound"]
    assert bound["vm1->vm2 (same switch, same hv)"] == "Datapath actions: if-vm2"
    assert bound["vm1->vm4 (same switch, other hv)"] == "Datapath actions: ovn-hv2-0"
    assert real.traces["moved"]["vm4->vm2 (same switch, now same hv)"].endswith("if-vm2")


def test_sb_replica_same_as_real(runs: dict[str, Run]) -> None:
    """ovn-controller's SB replica holds as many cells on ours as on real at every
    phase: our server sent it the rows its conditions select, no more, no fewer."""
    real, ours = runs["real"], runs["ours"]
    real.ok()
    ours.ok()
    assert ours.sb_cells == real.sb_cells


@pytest.mark.parametrize("kind", KINDS)
def test_conditions_select_local_datapaths(runs: dict[str, Run], kind: str) -> None:
    """A port on a switch no hypervisor uses grows the replicas only with
    ovn-monitor-all: with the default, the conditions keep it out."""
    run = runs[kind]
    run.ok()
    before, after = run.sb_cells["moved"], run.sb_cells["far port added"]
    for hv in ("hv1", "hv2"):
        if run.monitor_all:
            assert after[hv] > before[hv], (hv, before, after)
        else:
            assert after[hv] == before[hv], (hv, before, after)


def test_restarts(runs: dict[str, Run]) -> None:
    """After the SB server's restart and ovn-controller's `exit` and start on hv1, the
    deployment is whole again (test_every_vif_claimed_up_and_installed and
    test_same_flows_as_real check the "restarted" phase); `exit` removed hv1's
    Chassis, as on real."""
    for run in runs.values():
        run.ok()
        assert run.chassis_after_exit == ["hv2"]


# ---------------------------------------------------------------------------------------
# A clustered SB, as central nodes run it.


def cluster_scenario(d: Deployment, run: Run) -> None:
    """The six VIFs bound with a 3-member SB cluster; then its leader stopped, a port
    added and bound meanwhile."""
    build(d, run)
    run.step = "losing the SB leader"
    leader = d.cp.sb_leader()
    leader.stop()
    d.cp.sb_leader()  # a new one is elected
    lport, sw, hv = ADDED
    d.cp.nbctl("--wait=hv", "lsp-add", sw, lport, "--", "lsp-set-addresses", lport,
               f"{mac(lport)} {ip(lport, sw)}", timeout=WAIT)
    d.add_vif(lport, hv)
    d.wait_bound(lport)
    d.snapshot(run, "leader lost")


@pytest.fixture(scope="module")
def cluster_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    return run_both(tmp_path_factory, "cluster", False, cluster_scenario, sb_cluster=3)


def test_clustered_sb(cluster_runs: dict[str, Run]) -> None:
    """With the SB a 3-member cluster, before and after its leader goes: every VIF
    claimed, up and installed, and the same flows as with a real cluster."""
    real, ours = cluster_runs["real"], cluster_runs["ours"]
    for run in (real, ours):
        run.ok()
        for phase, want in (("bound", expected_bindings("bound")),
                            ("leader lost", expected_bindings("added"))):
            assert run.bindings[phase] == want, (run.kind, phase)
            assert run.up[phase] == dict.fromkeys(want, True), (run.kind, phase)
            assert run.installed[phase] == dict.fromkeys(want, True), (run.kind, phase)
    for phase in ("bound", "leader lost"):
        for hv in ("hv1", "hv2"):
            o, r = ours.flows[phase][hv], real.flows[phase][hv]
            assert len(r) > 100, (phase, hv, len(r))
            assert o == r, flow_diff(phase, hv, o, r)
    assert ours.sb_cells == real.sb_cells
