"""`pyovsdb sandbox`: the README's main job starts, serves NB and SB with northd between
them, simulated chassis claim ports and echo nb_cfg so the real `ovn-nbctl --wait=sb`
and `--wait=hv` return, standalone and clustered; it stops exactly its children.
Also the pure claim policy of the simulated chassis."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from procs import free_port, require, run
from pyovsdb.cli.sandbox import ours_available
from pyovsdb.sim_chassis import (
    BASE_OTHER_CONFIG,
    ChassisSpec,
    Claim,
    PortView,
    default_specs,
    plan_claims,
)

OURS = ours_available()
NORTHDS = ["ovn-northd", pytest.param("ours", marks=pytest.mark.skipif(
    not OURS, reason="pyovsdb northd is not in this build"))]


# -- the claim policy (pure) ------------------------------------------------------------

CH = [ChassisSpec("ch1", "127.0.0.1"), ChassisSpec("ch2", "127.0.0.2", hostname="host2")]


def pv(name: str, chassis: str | None = None, up: bool = False, requested: str | None = None,
       type: str = "") -> PortView:
    return PortView(name, type, chassis, up, requested)


def test_unbound_vifs_go_round_robin_in_name_order() -> None:
    ports = [pv("c"), pv("a"), pv("b"), pv("r", type="patch"), pv("l", type="localnet")]
    claims, rr = plan_claims(CH, ports, auto_claim=True)
    assert claims == [Claim("a", "ch1", True), Claim("b", "ch2", True),
                      Claim("c", "ch1", True)]
    assert rr == 3
    # the round-robin goes on where it stopped
    claims, rr = plan_claims(CH, [pv("d")], auto_claim=True, next_rr=rr)
    assert claims == [Claim("d", "ch2", True)] and rr == 4


def test_requested_chassis_wins_by_name_or_hostname_and_others_are_left_alone() -> None:
    ports = [pv("a", requested="host2"), pv("b", chassis="ch1", up=True, requested="ch2"),
             pv("c", chassis="ch1", up=True, requested="elsewhere"),
             pv("d", chassis="foreign", up=True), pv("e", requested="elsewhere"),
             pv("f", chassis="ch2", up=True), pv("g", chassis="ch1", up=False)]
    claims, rr = plan_claims(CH, ports, auto_claim=True)
    assert claims == [Claim("a", "ch2", True), Claim("b", "ch2", True),
                      Claim("c", None, False), Claim("g", "ch1", True)]
    assert rr == 0  # nothing was unbound without a request
    assert plan_claims(CH, [pv("x")], auto_claim=False) == ([], 0)


def test_default_specs_register_like_ovn_controller() -> None:
    specs = default_specs(3)
    assert [s.name for s in specs] == ["sim-ch1", "sim-ch2", "sim-ch3"]
    assert len({s.encap_ip for s in default_specs(600)}) == 600  # Encap (type, ip) unique
    assert specs[0].full_other_config()["port-up-notif"] == "true"
    assert BASE_OTHER_CONFIG["ovn-ct-lb-related"] == "true"


# -- the sandbox as a program -------------------------------------------------------------


class Sandbox:
    def __init__(self, tmp: Path, *args: str) -> None:
        self.dir = tmp / "box"  # one directory: a second sandbox reuses the databases
        self.ready = tmp / f"ready-{len(list(tmp.glob('ready-*')))}"
        self.nb_port, self.sb_port = free_port(), free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pyovsdb", "sandbox", f"--dir={self.dir}",
             f"--nb-port={self.nb_port}", f"--sb-port={self.sb_port}",
             f"--ready-file={self.ready}", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.out = self.err = ""

    def wait_ready(self, timeout: float = 120) -> list[str]:
        deadline = time.monotonic() + timeout
        while not self.ready.exists():
            if self.proc.poll() is not None:
                out, err = self.proc.communicate()
                raise AssertionError(f"sandbox exited: {out}\n{err}")
            assert time.monotonic() < deadline, "sandbox did not become ready"
            time.sleep(0.05)
        return self.ready.read_text().split()

    def pids(self) -> dict[str, int]:
        return {p.stem: int(p.read_text()) for p in self.dir.glob("*.pid")}

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.out, self.err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.out, self.err = self.proc.communicate()
        return self.proc.returncode


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[list[Sandbox]]:
    boxes: list[Sandbox] = []
    yield boxes
    for b in boxes:
        b.stop()


def assert_gone(pids: dict[str, int]) -> None:
    for name, pid in pids.items():
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
            pytest.fail(f"{name} (pid {pid}) still runs")


def nbctl(db: str, *args: str, timeout: float = 60) -> str:
    return run(["ovn-nbctl", f"--db={db}", "--timeout=30", *args], timeout=timeout).stdout


def sbctl(db: str, *args: str) -> str:
    return run(["ovn-sbctl", f"--db={db}", "--timeout=30", *args]).stdout


def test_sandbox_serves_nb_and_sb_and_stops(tmp_path: Path, sandbox: list[Sandbox]) -> None:
    """The README's main job: `pyovsdb sandbox` with no option."""
    require("ovn-nbctl", "ovn-sbctl", "ovsdb-client")
    box = Sandbox(tmp_path)
    sandbox.append(box)
    nb_unix, nb_tcp, sb_unix, sb_tcp = box.wait_ready()
    assert nb_tcp == f"tcp:127.0.0.1:{box.nb_port}" and sb_tcp == f"tcp:127.0.0.1:{box.sb_port}"
    nbctl(nb_unix, "init")
    nbctl(nb_tcp, "ls-add", "sw0")
    assert nbctl(nb_unix, "ls-list").split()[1] == "(sw0)"
    sbctl(sb_tcp, "init")
    sbctl(sb_unix, "chassis-add", "ch0", "geneve", "127.0.0.1")
    assert "ch0" in sbctl(sb_unix, "show")
    assert run(["ovsdb-client", "list-dbs", sb_unix]).stdout.split() == \
        ["OVN_Southbound", "_Server"]
    pids = box.pids()
    assert {"nb", "sb"} <= set(pids)
    assert box.stop() == 0, box.err
    assert "Northbound" in box.out and "export OVN_NB_DB=" in box.out
    assert_gone(pids)
    # the databases persist for the next run
    assert (box.dir / "nb.db").stat().st_size > 0


def wait_for(pred: object, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not pred():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def check_wait_hv(nb: str, sb: str) -> None:
    """ovn-nbctl --wait=sb/--wait=hv return; the simulated chassis claimed the ports
    (requested chassis honoured), set them up, echoed nb_cfg."""
    nbctl(nb, "--wait=sb", "ls-add", "sw0")
    assert "sw0" in sbctl(sb, "--bare", "--columns=external_ids", "list", "Datapath_Binding")
    nbctl(nb, "--wait=hv", "lsp-add", "sw0", "p1")
    nbctl(nb, "--wait=hv", "lsp-add", "sw0", "p2", "--", "lsp-set-options", "p2",
          "requested-chassis=sim-ch2")
    nb_cfg = int(nbctl(nb, "get", "NB_Global", ".", "nb_cfg"))
    assert nb_cfg >= 3
    assert int(nbctl(nb, "get", "NB_Global", ".", "hv_cfg")) == nb_cfg
    echoed = sbctl(sb, "--bare", "--columns=nb_cfg", "list", "Chassis_Private").split()
    assert echoed and all(int(c) >= nb_cfg for c in echoed)

    def chassis_of(lport: str) -> str:
        uuid = sbctl(sb, "--bare", "--columns=chassis", "find", "Port_Binding",
                     f"logical_port={lport}").strip()
        return sbctl(sb, "--bare", "--columns=name", "list", "Chassis", uuid).strip() \
            if uuid else ""
    assert chassis_of("p1") == "sim-ch1"
    assert chassis_of("p2") == "sim-ch2"
    wait_for(lambda: nbctl(nb, "--bare", "--columns=up", "find", "Logical_Switch_Port",
                           "name=p1").strip() == "true", "NB up of p1")
    # a port moved by its requested chassis
    nbctl(nb, "--wait=hv", "lsp-set-options", "p1", "requested-chassis=sim-ch2")
    wait_for(lambda: chassis_of("p1") == "sim-ch2", "p1 moved to sim-ch2")


@pytest.mark.parametrize("northd", NORTHDS)
def test_sandbox_with_northd_and_chassis_wait_hv(tmp_path: Path, sandbox: list[Sandbox],
                                                 northd: str) -> None:
    """... and a hangup (SIGHUP, the terminal closed) stops the servers, northd and the
    chassis, and frees their ports, as Ctrl-C and SIGTERM do."""
    require("ovn-nbctl", "ovn-sbctl", "ovn-appctl", "ovn-northd")
    box = Sandbox(tmp_path, "--chassis=2", f"--northd={northd}")
    sandbox.append(box)
    _, nb_tcp, sb_unix, _ = box.wait_ready()
    assert sorted(sbctl(sb_unix, "--bare", "--columns=name", "list", "Chassis").split()) == \
        ["sim-ch1", "sim-ch2"]
    check_wait_hv(nb_tcp, sb_unix)
    status = run(["ovn-appctl", "-t", str(box.dir / "northd.ctl"), "status"]).stdout
    assert status.strip() == "Status: active"
    pids = box.pids()
    assert {"nb", "sb", "northd", "chassis"} <= set(pids)
    assert box.stop(signal.SIGHUP if northd == "ours" else signal.SIGTERM) == 0, box.err
    assert_gone(pids)
    for port in (box.nb_port, box.sb_port):
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_sandbox_clustered(tmp_path: Path, sandbox: list[Sandbox]) -> None:
    require("ovn-nbctl", "ovn-sbctl", "ovs-appctl", "ovn-northd")
    args = ["--clustered", "--chassis=2"] + ([] if OURS else ["--northd=ovn-northd"])
    box = Sandbox(tmp_path, *args)
    sandbox.append(box)
    nb_unix, nb_tcp, _, sb_tcp = box.wait_ready()
    assert len(nb_unix.split(",")) == 3 and len(sb_tcp.split(",")) == 3
    assert nb_tcp.split(",")[0] == f"tcp:127.0.0.1:{box.nb_port}"
    for db, name in (("nb", "OVN_Northbound"), ("sb", "OVN_Southbound")):
        st = run(["ovs-appctl", "-t", str(box.dir / f"{db}1.ctl"), "cluster/status",
                  name]).stdout
        assert st.count("at tcp:127.0.0.1:") == 3, st  # three servers listed
    check_wait_hv(nb_unix, sb_tcp)
    pids = box.pids()
    assert len(pids) == 8, pids  # 3 + 3 servers, northd, the chassis
    assert box.stop() == 0, box.err
    assert_gone(pids)
    # a second run reuses the clusters' files
    box2 = Sandbox(tmp_path, *args)
    sandbox.append(box2)
    nb2 = box2.wait_ready()[0]
    assert "sw0" in nbctl(nb2, "ls-list")
    assert box2.stop() == 0, box2.err


# -- the simulated chassis on a Southbound server, without northd -------------------------


def test_chassis_group_registers_claims_and_echoes(tmp_path: Path) -> None:
    """On our SB server with hand-made bindings: the rows ovn-controller writes, claims
    round-robin and by request, a release when the request names another chassis, and
    nb_cfg echoed with the injected clock."""
    import asyncio

    from procs import SB_SCHEMA, ServerProcess, create_db
    from pyovsdb.idl import Idl
    from pyovsdb.sim_chassis import ChassisGroup

    db = create_db("ours", tmp_path / "sb.db", SB_SCHEMA)
    srv = ServerProcess("ours", tmp_path, [db], name="sb").start()
    clock = [1_000]

    async def until(pred: object, what: str) -> None:
        for _ in range(300):
            if pred():  # type: ignore[operator]
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what}")

    async def scenario() -> None:
        group = ChassisGroup(srv.unix, default_specs(2), wall_ms=lambda: clock[0])
        sb = Idl(srv.unix, "OVN_Southbound")
        await sb.start()
        try:
            txn = sb.transaction()
            txn.insert("SB_Global", nb_cfg=0)
            dp = txn.insert("Datapath_Binding", tunnel_key=1)
            for i, name in enumerate(("a", "b", "c")):
                txn.insert("Port_Binding", logical_port=name, datapath=dp, tunnel_key=i + 1)
            txn.insert("Port_Binding", logical_port="r", datapath=dp, tunnel_key=9,
                       type="patch")
            assert (await txn.commit()).ok
            await group.start()

            def chassis_of(lport: str) -> str | None:
                pb = next(r for r in sb["Port_Binding"].rows.values()
                          if r.logical_port == lport)
                return pb.chassis.name if pb.chassis is not None else None

            def up(lport: str) -> bool:
                return any(r.up is True for r in sb["Port_Binding"].rows.values()
                           if r.logical_port == lport)
            await until(lambda: chassis_of("c") is not None, "claims")
            assert [chassis_of(p) for p in "abc"] == ["sim-ch1", "sim-ch2", "sim-ch1"]
            assert all(up(p) for p in "abc") and chassis_of("r") is None
            ch = {r.name: r for r in sb["Chassis"].rows.values()}
            assert sorted(ch) == ["sim-ch1", "sim-ch2"]
            assert ch["sim-ch1"].other_config == BASE_OTHER_CONFIG
            (encap,) = ch["sim-ch1"].encaps
            assert (encap.type, encap.ip, encap.options, encap.chassis_name) == \
                ("geneve", "127.1.0.1", {"csum": "true"}, "sim-ch1")
            priv = {r.name: r for r in sb["Chassis_Private"].rows.values()}
            assert priv["sim-ch2"].chassis == ch["sim-ch2"] and priv["sim-ch2"].nb_cfg == 0
            # requested elsewhere: released; requested to one of ours: moved there
            pbs = {r.logical_port: r for r in sb["Port_Binding"].rows.values()}
            txn = sb.transaction()
            txn.update(pbs["a"], options={"requested-chassis": "other-host"})
            txn.update(pbs["b"], requested_chassis=ch["sim-ch1"])
            row = next(iter(sb["SB_Global"].rows.values()))
            txn.update(row, nb_cfg=7)
            clock[0] = 2_000
            assert (await txn.commit()).ok
            await until(lambda: chassis_of("b") == "sim-ch1" and chassis_of("a") is None
                        and all(r.nb_cfg == 7 for r in sb["Chassis_Private"].rows.values()),
                        "the release, the move and the echo")
            assert not up("a")
            assert {r.nb_cfg_timestamp for r in sb["Chassis_Private"].rows.values()} == {2000}
        finally:
            await group.stop()
            await sb.close()

    try:
        asyncio.run(asyncio.wait_for(scenario(), 60))
    finally:
        srv.stop()


# -- what the sandbox refuses, and what it leaves behind --------------------------------


def test_bad_options_and_places_are_one_line_errors(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Bad values: status 2 (as argparse); a directory that cannot be used or a port in
    use: status 1; one line each, naming the problem; nothing started."""
    from pyovsdb.cli import sandbox

    def no_start(*args: object) -> None:
        raise AssertionError("the sandbox started")

    monkeypatch.setattr(sandbox, "Sandbox", no_start)
    a_file = tmp_path / "file"
    a_file.write_text("")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cases = [
            (["--nb-port=abc"], 2, "--nb-port=abc: not a TCP port number (0 to 65535)"),
            (["--sb-port=70000"], 2, "--sb-port=70000: not a TCP port number (0 to 65535)"),
            (["--chassis=-1"], 2, "--chassis=-1: the number of simulated chassis must be 0 "
                                  "or more"),
            ([f"--dir={a_file}"], 1, f"--dir={a_file}: not a directory"),
            ([f"--dir={a_file}/box"], 1, f"--dir={a_file}/box: cannot create it (Not a "
                                         "directory)"),
            (["--dir=/proc/self"], 1, "--dir=/proc/self: not writable (No such file or "
                                      "directory)"),
            ([f"--dir={tmp_path}/box", f"--nb-port={port}"], 1,
             f"--nb-port={port}: port in use by pid {os.getpid()} "),
        ]
        for args, status, text in cases:
            assert sandbox.main(["--northd=none", f"--dir={tmp_path}/box", *args]) == status
            err = capsys.readouterr().err
            assert err.startswith(f"pyovsdb sandbox: {text}") and err.count("\n") == 1, err
    assert not (tmp_path / "box" / "nb.db").exists()
    # From the command line: the same line and status, no traceback.
    p = run([sys.executable, "-m", "pyovsdb", "sandbox", "--chassis=x"], check=False,
            cwd=tmp_path)
    assert (p.returncode, p.stdout, p.stderr) == (
        2, "", "pyovsdb sandbox: --chassis=x: the number of simulated chassis must be 0 or "
               "more\n")
    assert sandbox.main(["--help"]) == 0
    usage = " ".join(capsys.readouterr().out.split())
    assert "Everything goes in DIR (default ./sandbox" in usage
    assert "The databases persist across runs: a second start in the same DIR serves them " \
           "again" in usage


def test_a_directory_still_in_use_is_refused(tmp_path: Path) -> None:
    """Processes of an earlier sandbox still running (killed where the children could
    not follow, or running elsewhere) are named with their pids; nothing is started or
    signalled."""
    from procs import NB_SCHEMA, ServerProcess, create_db

    require("ovsdb-server", "ovsdb-tool")
    box = tmp_path / "box"
    box.mkdir()
    db = create_db("real", box / "nb.db", NB_SCHEMA)
    with ServerProcess("real", box, [db], name="nb") as left:
        assert left.proc is not None
        p = run([sys.executable, "-m", "pyovsdb", "sandbox", f"--dir={box}",
                 "--northd=none"], check=False, timeout=30)
        assert (p.returncode, p.stdout) == (1, "")
        assert p.stderr == (f"pyovsdb sandbox: {box} is in use: nb (pid {left.proc.pid}) "
                            "from an earlier sandbox still running; stop it (kill "
                            f"{left.proc.pid}) or use another --dir\n")
        assert left.proc.poll() is None
        assert not (box / "sb.db").exists()


def test_children_die_with_the_sandbox(tmp_path: Path) -> None:
    """The kernel stops a child the sandbox started when the sandbox dies of SIGKILL."""
    parent = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time\n"
        "from pyovsdb.cli.sandbox import _die_with_parent\n"
        "c = subprocess.Popen(['sleep', '60'], preexec_fn=_die_with_parent)\n"
        "print(c.pid, flush=True)\n"
        "time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    child = 0
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        parent.kill()
        parent.wait(timeout=10)
        wait_for(lambda: not Path(f"/proc/{child}").exists()
                 or Path(f"/proc/{child}/stat").read_text().split(") ")[1][0] == "Z",
                 "the child to die", timeout=10)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
        if child and Path(f"/proc/{child}/cmdline").exists() and \
                Path(f"/proc/{child}/cmdline").read_bytes() == b"sleep\x0060\x00":
            os.kill(child, signal.SIGKILL)  # the test's own grandchild, left by a failure
