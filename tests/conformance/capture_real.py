"""Capture what real clients send to the real ovsdb-server 3.1 and write it as corpus
cases (cases/real_*.json) for the differential harness to replay.

    python tests/conformance/capture_real.py [SCENARIO...]   # default: all of them
    python tests/conformance/capture_real.py --out DIR ...   # elsewhere than cases/
    python tests/conformance/capture_real.py --list

A developer's tool, not run in CI: it starts real daemons (ovn-northd, ovs-vswitchd,
ovn-controller) and real command-line clients, whose timing varies from run to run, so
each run writes slightly different (equally valid) cases.

Rules kept here:
- Every client talks to a real ovsdb-server through a recording proxy (recorder.py) on
  a unix socket; nothing else connects to the server, so the recording is the whole
  conversation that made the database what it is.
- One case per database per scenario: all the connections to that server, in the order
  the proxy saw them (real_traffic.recording_to_steps). Each database is served by its
  own server, as in deployments (ovn-northd between NB and SB); a replay of one server's
  conversation does not need the other's.
- The cases are scrubbed of the capture's directories, the host name and the pids of
  the processes started here (real_traffic.Scrubber).
- Every process started here is stopped by its pid, also when a scenario fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from real_traffic import Scrubber, recording_to_steps  # noqa: E402
from recorder import Recorder  # noqa: E402

from procs import (  # noqa: E402
    NB_SCHEMA,
    SB_SCHEMA,
    VSWITCH_SCHEMA,
    ServerProcess,
    create_db,
    free_port,
    stop_process,
)

CASES = HERE / "cases"
TIMEOUT = "--timeout=20"


class Run:
    """One scenario's processes and recorders; `close()` stops them all by pid."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.servers: dict[str, ServerProcess] = {}
        self.recorders: dict[str, Recorder] = {}
        self.schemas: dict[str, str] = {}
        self.clustered: set[str] = set()  # recorders in front of a clustered database
        self.daemons: list[subprocess.Popen[bytes]] = []
        self.pids: list[int] = []
        self.env = {**os.environ, "OVS_RUNDIR": str(workdir), "OVS_LOGDIR": str(workdir),
                    "OVS_DBDIR": str(workdir), "OVN_RUNDIR": str(workdir),
                    "OVN_LOGDIR": str(workdir), "OVN_DBDIR": str(workdir)}

    def database(self, name: str, schema_key: str, schema: str) -> str:
        """A real server for `schema` behind a recorder; returns the remote to use."""
        d = self.workdir / name
        d.mkdir()
        db = create_db("real", d / f"{name}.db", schema)
        srv = ServerProcess("real", d, [db], name=name).start()
        self.servers[name] = srv
        self.pids.append(srv.proc.pid if srv.proc else 0)
        rec = Recorder(str(self.workdir / f"{name}.rec.sock"), srv.sock, name).start()
        self.recorders[name] = rec
        self.schemas[name] = schema_key
        return rec.remote

    def daemon(self, cmd: list[str], name: str) -> subprocess.Popen[bytes]:
        p = subprocess.Popen([*cmd, f"--log-file={self.workdir / (name + '.log')}",
                              f"--pidfile={self.workdir / (name + '.pid')}",
                              "-vconsole:off", "--no-chdir"],
                             cwd=self.workdir, env=self.env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.daemons.append(p)
        self.pids.append(p.pid)
        return p

    def stop_daemon(self, p: subprocess.Popen[bytes]) -> None:
        stop_process(p)

    def cmd(self, *args: str, check: bool = True, stdin: str | None = None) -> str:
        """A client command, run to completion; its pid is scrubbed too."""
        p = subprocess.Popen(list(args), cwd=self.workdir, env=self.env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        self.pids.append(p.pid)
        try:
            out, err = p.communicate(stdin, timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise
        if check and p.returncode != 0:
            raise AssertionError(f"{args!r} exited {p.returncode}: {err}")
        return out

    def python(self, code: str, *argv: str) -> str:
        return self.cmd(sys.executable, "-c", textwrap.dedent(code), *argv)

    def quiet(self, settle: float = 1.0, timeout: float = 30) -> None:
        """Until no recorder has seen a message for `settle` seconds."""
        deadline = time.monotonic() + timeout
        last = -1
        while time.monotonic() < deadline:
            n = sum(len(r.events) for r in self.recorders.values())
            if n == last:
                return
            last = n
            time.sleep(settle)

    def close(self) -> None:
        for p in reversed(self.daemons):
            with contextlib.suppress(Exception):
                self.stop_daemon(p)
        for r in self.recorders.values():
            with contextlib.suppress(Exception):
                r.stop()
        for s in self.servers.values():
            with contextlib.suppress(Exception):
                s.stop()

    def cases(self, scenario: str, note: str) -> list[dict[str, Any]]:
        # (a client names the program that started it: this interpreter)
        scrub = Scrubber({str(self.workdir): "@RUNDIR@", str(self.workdir.resolve()): "@RUNDIR@",
                          tempfile.gettempdir(): "@TMPDIR@", sys.executable: "@PYTHON@",
                          os.path.realpath(sys.executable): "@PYTHON@"},
                         socket.gethostname(), self.pids)
        out = []
        for name, rec in self.recorders.items():
            events = [e.to_json() for e in rec.snapshot()]
            steps, counts, seen = recording_to_steps(events, scrub)
            if not steps:
                continue
            case = {"name": f"real-{scenario.replace('_', '-')}-{name}",
                    "schema": self.schemas[name],
                    "recorded": True, "note": note, "recording": counts,
                    "recorded_seen": seen, "steps": steps}
            if name in self.clustered:
                case["clustered"] = True
            out.append(case)
        return out


@contextlib.contextmanager
def scenario_run() -> Iterator[Run]:
    with tempfile.TemporaryDirectory(prefix="capture-") as tmp:
        run = Run(Path(tmp))
        try:
            yield run
        finally:
            run.close()


def wait_for(pred: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


# ---------------------------------------------------------------------------------------
# Scenarios


def scenario_northd(run: Run) -> str:
    """ovn-northd between NB and SB; ovn-nbctl and ovn-sbctl scripts, with --wait=sb."""
    nb = run.database("nb", "NB", NB_SCHEMA)
    sb = run.database("sb", "SB", SB_SCHEMA)

    def nbctl(*a: str) -> str:
        return run.cmd("ovn-nbctl", f"--db={nb}", TIMEOUT, *a)

    def sbctl(*a: str) -> str:
        return run.cmd("ovn-sbctl", f"--db={sb}", TIMEOUT, *a)

    nbctl("init")
    sbctl("init")
    run.daemon(["ovn-northd", f"--ovnnb-db={nb}", f"--ovnsb-db={sb}",
                f"--unixctl={run.workdir / 'northd.ctl'}"], "ovn-northd")
    wait_for(lambda: bool(sbctl("--bare", "--columns=_uuid", "list", "SB_Global").strip()),
             "ovn-northd to write SB_Global")
    nbctl("--wait=sb", "ls-add", "sw0")
    nbctl("ls-add", "sw1")
    for i in range(1, 4):
        nbctl("lsp-add", "sw0", f"vif{i}", "--", "lsp-set-addresses", f"vif{i}",
              f"50:54:00:00:00:0{i} 10.0.0.{i}")
    nbctl("lsp-add", "sw1", "vif4", "--", "lsp-set-addresses", "vif4", "dynamic")
    nbctl("set", "Logical_Switch", "sw1", "other_config:subnet=10.1.0.0/24")
    nbctl("--wait=sb", "lr-add", "lr0")
    nbctl("lrp-add", "lr0", "lrp0", "00:00:00:00:ff:01", "10.0.0.254/24")
    nbctl("lsp-add", "sw0", "sw0-lr0", "--", "lsp-set-type", "sw0-lr0", "router", "--",
          "lsp-set-addresses", "sw0-lr0", "router", "--",
          "lsp-set-options", "sw0-lr0", "router-port=lrp0")
    nbctl("acl-add", "sw0", "from-lport", "1002", "ip4 && udp.dst == 53", "allow-related")
    nbctl("acl-add", "sw0", "to-lport", "1001", 'outport == "vif2" && ip4', "drop")
    nbctl("--wait=sb", "lb-add", "lb0", "10.0.0.100:80", "10.0.0.1:8080,10.0.0.2:8080",
          "tcp")
    nbctl("ls-lb-add", "sw0", "lb0")
    nbctl("create", "Address_Set", "name=as1", 'addresses="10.0.0.1","10.0.0.2"')
    nbctl("add", "Address_Set", "as1", "addresses", '"10.0.0.3"')
    nbctl("remove", "Address_Set", "as1", "addresses", '"10.0.0.1"')
    nbctl("list", "Logical_Switch_Port")
    nbctl("--bare", "--columns=name,addresses", "find", "Logical_Switch_Port",
          "type=router")
    nbctl("lsp-set-options", "vif3", "requested-chassis=hv1")
    nbctl("set", "Logical_Switch_Port", "vif1", "external_ids:owner=capture")
    nbctl("clear", "Logical_Switch_Port", "vif1", "external_ids")
    nbctl("--if-exists", "lsp-del", "no-such-port")
    nbctl("--wait=sb", "lsp-del", "vif3")
    nbctl("acl-del", "sw0", "to-lport", "1001", 'outport == "vif2" && ip4')
    nbctl("show")
    sbctl("chassis-add", "hv1", "geneve", "127.0.0.11")
    sbctl("chassis-add", "hv2", "geneve", "127.0.0.12")
    sbctl("lsp-bind", "vif1", "hv1")
    sbctl("lsp-bind", "vif2", "hv2")
    nbctl("--wait=sb", "sync")
    sbctl("list", "Port_Binding")
    sbctl("--bare", "--columns=logical_port", "find", "Port_Binding", "chassis!=[]")
    sbctl("lsp-unbind", "vif2")
    sbctl("lsp-bind", "vif2", "hv1")
    sbctl("set", "Chassis", "hv2", "external_ids:ovn-bridge-mappings=phys:br-phys")
    sbctl("lflow-list", "sw0")
    sbctl("chassis-del", "hv2")
    nbctl("--wait=sb", "ls-del", "sw1")
    sbctl("show")
    run.quiet()
    return "ovn-northd, ovn-nbctl and ovn-sbctl scripts"


PY_IDL = """
    import sys, time
    import ovs.db.idl, ovs.poller
    remote, schema = sys.argv[1], sys.argv[2]
    helper = ovs.db.idl.SchemaHelper(location=schema)
    helper.register_table("Logical_Switch")
    helper.register_columns("Logical_Switch_Port", ["name", "type", "addresses",
                                                    "external_ids", "tag"])
    idl = ovs.db.idl.Idl(remote, helper, leader_only=False)

    def spin(pred, what):
        deadline = time.time() + 20
        while not pred():
            if time.time() > deadline:
                raise SystemExit("timed out: " + what)
            idl.run()
            poller = ovs.poller.Poller()
            idl.wait(poller)
            poller.timer_wait(100)
            poller.block()

    spin(lambda: idl.has_ever_connected(), "connect")
    # Two clauses (a disjunction), then a change to other clauses, then true/false.
    idl.cond_change("Logical_Switch_Port", [["type", "==", "router"],
                                            ["name", "==", "p1"]])
    seq = idl.change_seqno
    spin(lambda: idl.change_seqno != seq or True, "cond")
    for _ in range(5):
        idl.run(); time.sleep(0.05)

    def txn(fn):
        while True:
            t = ovs.db.idl.Transaction(idl)
            fn(t)
            status = t.commit_block()
            if status != ovs.db.idl.Transaction.TRY_AGAIN:
                return status

    def add_switch(t):
        ls = t.insert(idl.tables["Logical_Switch"])
        ls.name = "py-sw"
        ports = []
        for name, typ in (("p1", ""), ("p2", ""), ("rp", "router")):
            p = t.insert(idl.tables["Logical_Switch_Port"])
            p.name = name
            p.type = typ
            p.addresses = ["unknown"] if typ == "" else ["router"]
            ports.append(p)
        ls.ports = ports
    print(txn(add_switch))
    spin(lambda: len(idl.tables["Logical_Switch_Port"].rows) == 2, "two ports seen")
    idl.cond_change("Logical_Switch_Port", [["name", "==", "p2"], ["tag", "<", 5],
                                            ["external_ids", "includes", ["map", [["k", "v"]]]]])
    for _ in range(10):
        idl.run(); time.sleep(0.05)

    def tag(t):
        for row in idl.tables["Logical_Switch"].rows.values():
            row.verify("ports")
            row.setkey("external_ids", "owner", "python-idl")
        for row in idl.tables["Logical_Switch_Port"].rows.values():
            row.external_ids = {"k": "v"}
    print(txn(tag))
    idl.cond_change("Logical_Switch_Port", [True])
    spin(lambda: len(idl.tables["Logical_Switch_Port"].rows) == 3, "all ports")
    idl.cond_change("Logical_Switch_Port", [False])
    for _ in range(10):
        idl.run(); time.sleep(0.05)

    def delete(t):
        for row in list(idl.tables["Logical_Switch"].rows.values()):
            row.delete()
    print(txn(delete))
    idl.close()
"""

OVSDBAPP = """
    import sys
    from ovsdbapp.backend.ovs_idl import connection
    from ovsdbapp.schema.ovn_northbound import impl_idl
    idl = connection.OvsdbIdl.from_server(sys.argv[1], "OVN_Northbound")
    conn = connection.Connection(idl=idl, timeout=20)
    api = impl_idl.OvnNbApiIdlImpl(conn)
    api.ls_add("app-sw").execute(check_error=True)
    api.lsp_add("app-sw", "app-p1").execute(check_error=True)
    api.lsp_set_addresses("app-p1", ["00:00:00:00:00:a1 10.2.0.1"]).execute(
        check_error=True)
    with api.transaction(check_error=True) as txn:
        txn.add(api.lsp_add("app-sw", "app-p2", type="localport"))
        txn.add(api.acl_add("app-sw", "to-lport", 1001, "outport == \\"app-p2\\"",
                            "allow"))
    api.lb_add("app-lb", "10.2.0.100:80", ["10.2.0.1:80"], protocol="tcp").execute(
        check_error=True)
    api.ls_lb_add("app-sw", "app-lb").execute(check_error=True)
    api.lr_add("app-lr").execute(check_error=True)
    api.lrp_add("app-lr", "app-lrp", "00:00:00:00:00:b1", ["10.2.0.254/24"]).execute(
        check_error=True)
    print(sorted(p.name for p in api.lsp_list("app-sw").execute(check_error=True)))
    api.db_set("Logical_Switch", "app-sw", ("external_ids", {"tenant": "t1"})).execute(
        check_error=True)
    api.acl_del("app-sw").execute(check_error=True)
    api.lsp_del("app-p2").execute(check_error=True)
    api.ls_lb_del("app-sw", "app-lb").execute(check_error=True)
    api.lb_del("app-lb").execute(check_error=True)
    conn.stop()
"""


def scenario_idl(run: Run) -> str:
    """The PyPI `ovs` Python IDL (conditions, transactions) and ovsdbapp on NB."""
    nb = run.database("nb", "NB", NB_SCHEMA)
    run.cmd("ovn-nbctl", f"--db={nb}", TIMEOUT, "init")
    run.python(PY_IDL, nb, NB_SCHEMA)
    try:
        import ovsdbapp  # noqa: F401
    except ImportError as e:
        raise SystemExit("ovsdbapp is missing: pip install -e '.[test]'") from e
    run.python(OVSDBAPP, nb)
    run.quiet(0.5)
    return "the PyPI ovs Python IDL (cond_change, transactions) and ovsdbapp (OVN NB API)"


def scenario_vswitchd(run: Run) -> str:
    """ovs-vswitchd on a dummy datapath and an ovs-vsctl script on its conf.db."""
    db = run.database("conf", "VS", VSWITCH_SCHEMA)

    def vsctl(*a: str, wait: bool = True) -> str:
        return run.cmd("ovs-vsctl", f"--db={db}", TIMEOUT, *([] if wait else ["--no-wait"]),
                       *a)

    vsctl("init", wait=False)
    run.daemon(["ovs-vswitchd", "--enable-dummy=override",
                f"--unixctl={run.workdir / 'vswitchd.ctl'}", db], "ovs-vswitchd")
    wait_for(lambda: vsctl("get", "Open_vSwitch", ".", "iface_types",
                           wait=False).strip() not in ("", "[]"),
             "ovs-vswitchd to write iface_types")
    vsctl("add-br", "br0", "--", "set", "Bridge", "br0", "datapath_type=dummy")
    vsctl("add-port", "br0", "p1", "--", "set", "Interface", "p1", "type=dummy",
          "external_ids:iface-id=vif1")
    vsctl("add-port", "br0", "p2", "--", "set", "Interface", "p2", "type=dummy")
    vsctl("set", "Port", "p2", "tag=10")
    vsctl("add-bond", "br0", "bond0", "b1", "b2", "--", "set", "Interface", "b1",
          "type=dummy", "--", "set", "Interface", "b2", "type=dummy")
    vsctl("list-br")
    vsctl("list-ports", "br0")
    vsctl("--columns=name,ofport", "list", "Interface")
    vsctl("--bare", "--columns=name", "find", "Interface", "external_ids:iface-id=vif1")
    vsctl("set", "Open_vSwitch", ".", "external_ids:ovn-remote=unix:nowhere",
          "other_config:vlan-limit=2")
    vsctl("remove", "Open_vSwitch", ".", "other_config", "vlan-limit")
    vsctl("wait-until", "Interface", "p1", "ofport!=-1")
    vsctl("--if-exists", "del-port", "br0", "nope")
    vsctl("del-port", "br0", "p2")
    vsctl("del-br", "br0")
    run.quiet()
    return "ovs-vswitchd (dummy datapath) and an ovs-vsctl script, with and without --wait"


class _RecordedServer(ServerProcess):
    """A real server whose clients reach it through a recorder: `unix` (what
    tests/hypervisor.py hands to daemons and tools) names the recorder's socket."""

    registry: list[_RecordedServer] = []

    def start(self, timeout: float = 30) -> ServerProcess:
        super().start(timeout)
        self.recorder = Recorder(f"{self.sock}.rec", self.sock, self.name).start()
        self.registry.append(self)
        return self

    @property
    def unix(self) -> str:
        return self.recorder.remote

    def stop(self) -> None:
        rec = getattr(self, "recorder", None)
        if rec is not None:
            rec.stop()
        super().stop()


def _recorded_hypervisors() -> Any:
    import hypervisor

    hypervisor.ServerProcess = _RecordedServer  # type: ignore[misc]
    _RecordedServer.registry = []
    return hypervisor


def _collect(run: Run, only: set[str] | None = None) -> None:
    keys = {"nb": "NB", "sb": "SB", "conf": "VS"}
    for srv in _RecordedServer.registry:
        if only is not None and srv.name not in only:
            continue
        label = srv.name if srv.name != "conf" else f"conf-{srv.workdir.name}"
        run.recorders[label] = srv.recorder
        run.schemas[label] = keys[srv.name]


def scenario_reconnect(run: Run) -> str:
    """A clustered SB (it keeps a transaction history): ovn-northd and ovn-controller
    lose their connections and resume their monitors with monitor_cond_since."""
    hypervisor = _recorded_hypervisors()
    plain_create = hypervisor.create_db

    def create(kind: str, path: Path, schema: str) -> str:
        if path.name != "sb.db":
            return str(plain_create(kind, path, schema))
        run.cmd("ovsdb-tool", "create-cluster", str(path), schema,
                f"tcp:127.0.0.1:{free_port()}")
        return str(path)

    hypervisor.create_db = create
    cp = hypervisor.ControlPlane("real", run.workdir / "cp")
    hv = None
    try:
        cp.start()
        hv = hypervisor.Hypervisor("hv1", run.workdir / "hv1", cp.sb_remote,
                                   "127.0.0.11", "real").start()
        cp.nbctl("ls-add", "sw0")
        cp.nbctl("lsp-add", "sw0", "vm1", "--", "lsp-set-addresses", "vm1",
                 "0a:00:00:00:00:01 10.0.0.1")
        hv.add_vif("if-vm1", "vm1", "0a:00:00:00:00:01")
        cp.wait_claimed("vm1", "hv1", up=True)
        cp.nbctl("--wait=hv", "sync", timeout=60)
        sb = next(s for s in _RecordedServer.registry if s.name == "sb")
        run.quiet(0.5)
        for c in sb.recorder.open_connections():
            sb.recorder.drop(c)
        # While they reconnect: a change they must catch up with.
        cp.nbctl("lsp-add", "sw0", "vm2", "--", "lsp-set-addresses", "vm2",
                 "0a:00:00:00:00:02 10.0.0.2")
        hv.add_vif("if-vm2", "vm2", "0a:00:00:00:00:02")
        cp.wait_claimed("vm2", "hv1", up=True)
        cp.nbctl("--wait=hv", "sync", timeout=60)
        run.pids += [hv.vswitchd.pid, hv.controller.pid]
        if cp.northd is not None and cp.northd.proc is not None:
            run.pids.append(cp.northd.proc.pid)
        run.quiet(1.0)
    finally:
        if hv is not None:
            hv.stop()
        cp.stop()
        hypervisor.create_db = plain_create
    _collect(run, {"sb"})
    run.clustered = {"sb"}
    return "ovn-northd and ovn-controller reconnecting to a clustered SB"


def scenario_hypervisors(run: Run, monitor_all: bool = False) -> str:
    """ovn-controller on two hypervisors (tests/hypervisor.py) through claims, a move
    between them and releases, with ovn-northd and ovn-nbctl --wait=hv."""
    hypervisor = _recorded_hypervisors()
    cp = hypervisor.ControlPlane("real", run.workdir / "cp")
    hvs: dict[str, Any] = {}
    try:
        cp.start()
        for i, name in enumerate(("hv1", "hv2")):
            hvs[name] = hypervisor.Hypervisor(name, run.workdir / name, cp.sb_remote,
                                              f"127.0.0.{11 + i}", "real",
                                              monitor_all=monitor_all).start()

        def mac(n: int) -> str:
            return f"0a:00:00:00:00:{n:02x}"

        cp.nbctl("ls-add", "sw0")
        cp.nbctl("ls-add", "sw1")
        ports = {"vm1": ("sw0", "hv1"), "vm2": ("sw0", "hv1"), "vm3": ("sw0", "hv2"),
                 "vm4": ("sw1", "hv2")}
        for n, (lport, (sw, _)) in enumerate(ports.items(), 1):
            cp.nbctl("lsp-add", sw, lport, "--", "lsp-set-addresses", lport,
                     f"{mac(n)} 10.0.{0 if sw == 'sw0' else 1}.{n}")
        for n, (lport, (_, hv)) in enumerate(ports.items(), 1):
            hvs[hv].add_vif(f"if-{lport}", lport, mac(n))
        for lport, (_, hv) in ports.items():
            cp.wait_claimed(lport, hv, up=True)
            hvs[hv].wait_installed(lport)
        cp.nbctl("--wait=hv", "sync", timeout=60)
        # A move: released by hv1, claimed by hv2.
        hvs["hv1"].del_vif("if-vm2")
        cp.wait_claimed("vm2", None)
        hvs["hv2"].add_vif("if-vm2", "vm2", mac(2))
        cp.wait_claimed("vm2", "hv2", up=True)
        cp.nbctl("--wait=hv", "sync", timeout=60)
        # Releases: a VIF unplugged, a logical port deleted.
        hvs["hv2"].del_vif("if-vm4")
        cp.wait_claimed("vm4", None)
        cp.nbctl("--wait=hv", "lsp-del", "vm3", timeout=60)
        for hv in hvs.values():
            run.pids += [hv.vswitchd.pid, hv.controller.pid]
        if cp.northd is not None and cp.northd.proc is not None:
            run.pids.append(cp.northd.proc.pid)
        run.quiet(1.0)
    finally:
        for hv in hvs.values():
            hv.stop()
        cp.stop()
    # With ovn-monitor-all only the SB conversation differs.
    _collect(run, {"sb"} if monitor_all else None)
    return ("ovn-controller on two hypervisors" + (" with ovn-monitor-all=true" if monitor_all
                                                   else "") + ", ovn-northd, ovs-vswitchd, "
            "ovn-nbctl")


def scenario_hypervisors_monitor_all(run: Run) -> str:
    """The same with ovn-monitor-all=true (monitors without conditions); SB only."""
    return scenario_hypervisors(run, monitor_all=True)


SCENARIOS: dict[str, Callable[[Run], str]] = {
    "hypervisors": scenario_hypervisors,
    "hypervisors_monitor_all": scenario_hypervisors_monitor_all,
    "reconnect": scenario_reconnect,
    "northd": scenario_northd,
    "idl": scenario_idl,
    "vswitchd": scenario_vswitchd,
}


def main(argv: list[str]) -> int:
    if "--list" in argv:
        for name, fn in SCENARIOS.items():
            print(f"{name}: {(fn.__doc__ or '').strip()}")
        return 0
    out_dir = CASES
    if "--out" in argv:
        i = argv.index("--out")
        out_dir = Path(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    names = [a for a in argv if not a.startswith("-")] or list(SCENARIOS)
    for name in names:
        with scenario_run() as run:
            note = SCENARIOS[name](run)
            cases = run.cases(name, f"recorded from the real ovsdb-server 3.1: {note}")
        path = out_dir / f"real_{name}.json"
        # A known bug or intended difference noted by hand on a case stays noted.
        kept = ({c["name"]: c for c in json.loads(path.read_text())["cases"]}
                if path.exists() else {})
        for c in cases:
            for k in ("known_bug", "intended"):
                if k in kept.get(c["name"], {}):
                    c[k] = kept[c["name"]][k]
        path.write_text(json.dumps({
            "topic": f"real clients: {name}",
            "description": "Made by capture_real.py; replayed by the harness, one "
                           "connection per recorded client connection.",
            "cases": cases}, indent=1, ensure_ascii=False) + "\n")
        for c in cases:
            print(f"{path.name}: {c['name']}: {c['recording']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
