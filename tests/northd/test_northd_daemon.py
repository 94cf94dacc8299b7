"""`pyovsdb northd` as a process: its options, its control commands reached with the
real `ovn-appctl` (by socket path and by name), `ovn-nbctl --wait=sb|hv` against it on
our servers and on the real ovsdb-server, and which changes recompute its `northd` node."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_daemon_procs import NorthdProc, Plane, plane, poll

from procs import require, run, stop_process

pytestmark = pytest.mark.interop

BLOCK = re.compile(r"Node: (\S+)\n- recompute: ( *\d+)\n- compute:   ( *\d+)\n"
                   r"- abort:     ( *\d+)\n")


def northd_cmd(*args: str, env: dict[str, str] | None = None,
               real: bool = False) -> subprocess.CompletedProcess[str]:
    base = ["ovn-northd"] if real else [sys.executable, "-m", "pyovsdb", "northd"]
    return run([*base, *args], check=False, env=env, timeout=20)


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OVN_NB_DB", "OVN_SB_DB")}
    env["OVN_RUNDIR"] = str(tmp_path / "run")
    env["OVN_LOGDIR"] = str(tmp_path / "log")
    return env


def test_version_help_and_option_errors(tmp_path: Path) -> None:
    v = northd_cmd("--version")
    assert v.returncode == 0
    first, second = v.stdout.splitlines()
    assert first.startswith("ovn-northd ") and first.endswith(" 23.03.1")
    assert second.startswith("Open vSwitch Library 3.1.")
    env = _env(tmp_path)
    h = northd_cmd("--help", env=env)
    assert h.returncode == 0
    run_dir = env["OVN_RUNDIR"]
    assert f"(default: unix:{run_dir}/ovnnb_db.sock)" in h.stdout
    assert f"(default: unix:{run_dir}/ovnsb_db.sock)" in h.stdout
    assert "seq-delay" not in h.stdout  # ours alone: not advertised
    require("ovn-northd")
    real = northd_cmd("--help", env=env, real=True)
    # The options section, word for word as the real one's.
    ours_head = h.stdout.split("\nDaemon options:")[0]
    real_head = real.stdout.split("\nDaemon options:")[0]
    assert ours_head == real_head
    o = northd_cmd("-o").stdout.splitlines()
    for line in ("--ovnnb-db=ARG", "-D ARG", "--ovnsb-db=ARG", "-d ARG", "--dry-run",
                 "--n-threads=ARG", "--pidfile=[ARG]", "--unixctl=ARG", "-u ARG"):
        assert line in o
    assert not any("seq-delay" in line for line in o)
    bad = northd_cmd("--bogus")
    assert bad.returncode == 1
    assert bad.stderr == "ovn-northd: unrecognized option '--bogus'\n"
    neg = northd_cmd("--seq-delay-ms=-1", "--unixctl=none")
    assert neg.returncode == 1 and "--seq-delay-ms" in neg.stderr


def _control_transcript(n: NorthdProc) -> list[str]:
    """The replies (rc and text) of the control commands whose texts ours must share
    with the real ovn-northd, numbers blanked."""
    out: list[str] = []
    for args in (["status"], ["is-paused"], ["pause"], ["status"], ["is-paused"],
                 ["resume"], ["inc-engine/show-stats", "northd", "foo"],
                 ["inc-engine/show-stats", "no-such-node"],
                 ["inc-engine/show-stats", "northd", "abort"],
                 ["inc-engine/compute-log-timeout", "x"],
                 ["inc-engine/compute-log-timeout", "500"],
                 ["inc-engine/compute-log-timeout", "500 "],  # str_to_uint: the whole text
                 ["inc-engine/show-stats", "a", "b", "c"], ["nb-connection-status"],
                 ["sb-connection-status"], ["parallel-build/get-n-threads"],
                 ["parallel-build/set-n-threads", "0"],
                 ["parallel-build/set-n-threads", "99999999999"],  # atoi: cut to an int
                 ["nb-cluster-state-reset"]):
        if args == ["resume"]:
            poll("paused", lambda: n.status() == "Status: paused")
        r = n.appctl(*args, check=False)
        if args[0] == "status" and r.stdout.strip() not in ("Status: paused",):
            poll("active", lambda: n.status() == "Status: active")
            r = n.appctl(*args, check=False)
        text = f"{args}: {r.returncode} {r.stdout!r} {r.stderr!r}"
        out.append(text.replace(n.ctl, "CTL"))
    mem = n.appctl("memory/show").stdout
    out.append(re.sub(r":\d+", ":N", mem))
    return out


def test_control_texts_as_the_real_northd(tmp_path: Path) -> None:
    require("ovn-northd")
    transcripts = {}
    for kind in ("ours", "real"):
        with plane("ours", tmp_path / kind) as p:
            if kind == "ours":
                n = p.northd()
            else:
                n = NorthdProc(tmp_path / kind, p.nb.unix, p.sb.unix,
                               command=["ovn-northd"])
                p.northds.append(n)
                n.start()
            poll("active", lambda n=n: n.status() == "Status: active")  # type: ignore[misc]
            transcripts[kind] = _control_transcript(n)
            for line in ("This ovn-northd instance is now paused.",
                         "Resetting northbound database cluster state"):
                poll(line, lambda n=n, line=line: line in n.log(),  # type: ignore[misc]
                     logs=n.logs)
    assert transcripts["ours"] == transcripts["real"]


def test_control_commands(tmp_path: Path) -> None:
    with plane("ours", tmp_path) as p:
        n = p.northd()
        poll("active", lambda: n.status() == "Status: active", logs=n.logs)
        p.nbctl("--wait=sb", "ls-add", "sw0")
        full = n.appctl("inc-engine/show-stats").stdout
        blocks = BLOCK.findall(full)
        assert "".join(f"Node: {b[0]}\n- recompute: {b[1]}\n- compute:   {b[2]}\n"
                       f"- abort:     {b[3]}\n" for b in blocks) == full
        assert all(len(b[1]) == 12 for b in blocks)
        names = [b[0] for b in blocks]
        for name in ("NB_logical_switch", "NB_nb_global", "SB_port_binding",
                     "SB_logical_DP_group", "SB_chassis_private", "northd", "sync_to_sb",
                     "mac_binding_aging", "mac_binding_aging_waker"):
            assert name in names
        assert names[-1] == "northd_output"
        assert names.index("northd") < names.index("sync_to_sb")
        block = n.appctl("inc-engine/show-stats", "northd").stdout
        shown = BLOCK.fullmatch(block)
        assert shown and block.startswith("Node: northd\n")
        # (startup recomputes, once or twice as the databases come; the ls-add is taken
        # in place)
        assert int(shown.group(2)) == n.stat("northd") >= 1
        # inc-engine/recompute: the next run recomputes every node.
        before = n.stat("northd")
        n.appctl("inc-engine/recompute")
        poll("a recompute", lambda: n.stat("northd") == before + 1, logs=n.logs)
        n.appctl("inc-engine/clear-stats")
        assert n.stat("northd") == 0 and n.stat("northd", "compute") == 0
        assert n.stat("NB_logical_switch") == 0
        mem = n.appctl("memory/show").stdout
        m = re.fullmatch(r"idl-cells-OVN_Northbound:(\d+) idl-cells-OVN_Southbound:(\d+)\n",
                         mem)
        assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0
        n.appctl("sb-cluster-state-reset")
        poll("the reset logged", lambda: "Resetting southbound database cluster state"
             in n.log(), logs=n.logs)
        commands = n.appctl("list-commands").stdout
        for name in ("exit", "pause", "resume", "is-paused", "status",
                     "nb-cluster-state-reset", "sb-cluster-state-reset",
                     "inc-engine/show-stats", "inc-engine/clear-stats",
                     "inc-engine/recompute", "inc-engine/compute-log-timeout",
                     "memory/show", "vlog/set", "vlog/list"):
            assert f"  {name} " in commands
        assert n.appctl("version").stdout.startswith("ovn-northd (pyovsdb ")
        dot = n.appctl("inc-engine/dump-graph").stdout
        assert '"northd" -> "sync_to_sb"' in dot
        assert n.proc is not None
        n.appctl("exit")
        assert n.proc.wait(timeout=15) == 0
        assert not os.path.exists(n.pidfile) and not os.path.exists(n.ctl)


def test_by_name_with_ovn_rundir_and_dry_run(tmp_path: Path) -> None:
    env = _env(tmp_path)
    run_dir = Path(env["OVN_RUNDIR"])
    run_dir.mkdir()
    with plane("ours", tmp_path) as p:
        n = p.northd(files=False, extra=["--pidfile", "--dry-run", "--n-threads=300"],
                     env=env)
        # Accepted and clamped with the real warnings; the engine runs in one thread.
        assert "Setting n_threads to 256 as --n-threads option was set to : [300]" in n.log()
        assert "Using 256 threads" in n.log()
        pidfile = run_dir / "ovn-northd.pid"
        poll("the pidfile", pidfile.exists, logs=n.logs)
        assert pidfile.read_text() == f"{n.pid}\n"
        ctl = run_dir / f"ovn-northd.{n.pid}.ctl"
        poll("the control socket", ctl.exists, logs=n.logs)
        by_name = ["ovn-appctl", "-t", "ovn-northd"]
        assert run([*by_name, "status"], env=env).stdout == "Status: paused\n"
        assert run(["ovn-appctl", "-t", str(ctl), "is-paused"], env=env).stdout == "true\n"
        assert run([*by_name, "parallel-build/get-n-threads"], env=env).stdout == "256\n"
        p.nbctl("ls-add", "sw0")
        time.sleep(0.5)
        # Paused: nothing written.
        assert p.sb_names("Datapath_Binding", "_uuid") == []
        run([*by_name, "resume"], env=env)
        poll("active", lambda: run([*by_name, "status"], env=env).stdout
             == "Status: active\n", logs=n.logs)
        poll("the datapath", lambda: len(p.sb_names("Datapath_Binding", "_uuid")) == 1,
             logs=n.logs)


def _echo_nb_cfg_until(p: Plane, proc: subprocess.Popen[str], chassis: str) -> None:
    """A fake hypervisor: echo NB's nb_cfg into its Chassis_Private until `proc` ends."""
    deadline = time.monotonic() + 30
    while proc.poll() is None:
        if time.monotonic() > deadline:
            raise AssertionError("ovn-nbctl --wait=hv did not return")
        cfg = p.nbctl("get", "NB_Global", ".", "nb_cfg").strip()
        p.sbctl("set", "Chassis_Private", chassis, f"nb_cfg={cfg}")
        time.sleep(0.1)


def test_self_check_runs_every_incremental_run_against_a_recompute(tmp_path: Path) -> None:
    """`--self-check`: every run not forced to recompute is compared with a recompute
    from scratch; `inc-engine/self-check` says how many were and how many differed,
    and turns the check off and on."""
    with plane("ours", tmp_path) as p:
        n = p.northd(extra=["--self-check"])
        poll("active", lambda: n.status() == "Status: active", logs=n.logs)
        p.nbctl("--wait=sb", "ls-add", "sw0")
        for i in range(3):
            p.nbctl("--wait=sb", "lsp-add", "sw0", f"p{i}")
        p.nbctl("--wait=sb", "lr-add", "lr0")
        p.nbctl("--wait=sb", "lrp-add", "lr0", "lrp0", "00:00:00:00:ff:01", "10.0.0.1/24")
        text = n.appctl("inc-engine/self-check").stdout
        m = re.fullmatch(r"self-check on: (\d+) runs checked, (\d+) differed\n", text)
        assert m and int(m.group(1)) >= 5 and m.group(2) == "0", text
        assert "self-check" not in n.log()
        n.appctl("inc-engine/self-check", "off")
        p.nbctl("--wait=sb", "lsp-add", "sw0", "p9")
        assert n.appctl("inc-engine/self-check").stdout.startswith(
            f"self-check off: {m.group(1)} runs")
        bad = n.appctl("inc-engine/self-check", "maybe", check=False)
        assert bad.returncode != 0 and "argument must be on or off" in bad.stderr


@pytest.mark.parametrize("kind", ["ours", "real"])
def test_wait_sb_hv_and_what_recomputes(tmp_path: Path, kind: str) -> None:
    with plane(kind, tmp_path) as p:
        n = p.northd()
        poll("active", lambda: n.status() == "Status: active", logs=n.logs)
        p.nbctl("--wait=sb", "ls-add", "sw0")
        ids = p.sbctl("--bare", "--columns=external_ids", "list", "Datapath_Binding")
        assert "name=sw0" in ids
        p.nbctl("--wait=sb", "lsp-add", "sw0", "p1")
        assert p.sb_names("Port_Binding", "logical_port") == ["p1"]
        p.nbctl("--wait=sb", "sync")
        r0 = n.stat("northd")
        p.nbctl("--wait=sb", "lsp-add", "sw0", "p2")
        p.nbctl("--wait=sb", "sync")
        # The new port on an existing switch, its binding coming back, the sb_cfg
        # written and the nb_cfg bumps of --wait are all handled without a recompute
        # (23.03: two).
        assert n.stat("northd") == r0, n.appctl("inc-engine/show-stats").stdout
        assert p.sb_names("Port_Binding", "logical_port") == ["p1", "p2"]
        p.sbctl("chassis-add", "ch1", "geneve", "127.0.0.1")
        ch = p.sbctl("--bare", "--columns=_uuid", "find", "Chassis", "name=ch1").strip()
        p.sbctl("create", "Chassis_Private", "name=ch1", f"chassis={ch}")
        p.nbctl("--wait=sb", "sync")
        r1 = n.stat("northd")
        s1 = n.stat("sync_to_sb") + n.stat("sync_to_sb", "compute")
        p.sbctl("lsp-bind", "p1", "ch1")     # a chassis claim
        p.nbctl("--wait=sb", "sync")
        assert n.stat("northd") == r1
        # (ours plans the claim's table in a handler: a compute; 23.03 recomputes)
        assert n.stat("sync_to_sb") + n.stat("sync_to_sb", "compute") > s1
        proc = subprocess.Popen(["ovn-nbctl", f"--db={p.nb.unix}", "--timeout=30",
                                 "--wait=hv", "lsp-add", "sw0", "p3"], text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            _echo_nb_cfg_until(p, proc, "ch1")
        finally:
            stop_process(proc)
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
        nb_cfg = p.nbctl("get", "NB_Global", ".", "nb_cfg").strip()
        assert p.nbctl("get", "NB_Global", ".", "hv_cfg").strip() == nb_cfg
        assert p.nbctl("get", "NB_Global", ".", "sb_cfg").strip() == nb_cfg
        assert p.sb_names("Port_Binding", "logical_port") == ["p1", "p2", "p3"]


def test_mac_binding_aging_on_the_timer(tmp_path: Path) -> None:
    """A router with a 1 s age threshold: the binding is kept at first, and deleted by
    the run the aging timer asks for, with no other change to wake northd."""
    with plane("ours", tmp_path) as p:
        n = p.northd()
        poll("active", lambda: n.status() == "Status: active", logs=n.logs)
        p.nbctl("--wait=sb", "lr-add", "lr0", "--", "set", "Logical_Router", "lr0",
                "options:mac_binding_age_threshold=1")
        dp = p.sbctl("--bare", "--columns=_uuid", "list", "Datapath_Binding").strip()
        now_ms = int(time.time() * 1000)
        p.sbctl("create", "MAC_Binding", "logical_port=lrp0", "ip=192.0.2.9",
                "mac=\"0a:00:00:00:00:09\"", f"datapath={dp}", f"timestamp={now_ms}")
        time.sleep(0.3)
        assert len(p.sb_names("MAC_Binding", "_uuid")) == 1
        poll("the binding aged out", lambda: p.sb_names("MAC_Binding", "_uuid") == [],
             timeout=10, logs=n.logs)
        assert time.time() * 1000 - now_ms >= 1000


def _ppid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:   # a zombie is gone for our purpose
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_ovn_ctl_starts_and_stops_it_by_name(tmp_path: Path) -> None:
    """The real `ovn-ctl start_northd` with ours on PATH as `ovn-northd`: it runs it
    detached under a --monitor supervisor, finds it by name, stops it gracefully."""
    ovn_ctl = "/usr/share/ovn/scripts/ovn-ctl"
    if not os.path.exists(ovn_ctl):
        require("ovn-ctl")
    entry = Path(sys.executable).parent / "pyovsdb"
    if not entry.exists():
        pytest.skip("the pyovsdb entry point is not installed")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "ovn-northd").symlink_to(entry)
    env = _env(tmp_path)
    env["PATH"] = f"{bindir}:{env['PATH']}"
    env["OVS_RUNDIR"] = env["OVN_RUNDIR"]
    pids: list[int] = []
    with plane("ours", tmp_path) as p:
        try:
            r = run([ovn_ctl, "--ovn-manage-ovsdb=no", f"--ovn-northd-nb-db={p.nb.unix}",
                     f"--ovn-northd-sb-db={p.sb.unix}", "start_northd"], env=env, check=False)
            assert r.returncode == 0, r.stdout + r.stderr
            pidfile = Path(env["OVN_RUNDIR"]) / "ovn-northd.pid"
            pid = int(pidfile.read_text())
            pids += [pid, _ppid(pid)]
            with open(f"/proc/{pid}/comm") as f:
                assert f.read().strip() == "ovn-northd"
            poll("active", lambda: run(["ovn-appctl", "-t", "ovn-northd", "status"],
                                       env=env).stdout == "Status: active\n")
            status = run([ovn_ctl, "status_northd"], env=env, check=False)
            assert status.returncode == 0 and "running" in status.stdout
            p.nbctl("--wait=sb", "ls-add", "sw0")
            r = run([ovn_ctl, "stop_northd"], env=env, check=False)
            assert r.returncode == 0, r.stdout + r.stderr
            poll("both gone", lambda: not any(_alive(x) for x in pids))
            assert not pidfile.exists()
            assert "Exiting ovn-northd" in r.stdout
        finally:
            for x in reversed(pids):
                if _alive(x):
                    os.kill(x, 9)
