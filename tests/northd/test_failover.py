"""Active/standby and forced recomputes of `pyovsdb northd`, as processes on our servers
and on the real ones: of two northds one holds the SB lock and the other is a hot
standby, which runs on every change and writes nothing; killed, the active is replaced
by the standby, which writes only what the active left unwritten, with no recompute
(one paused meanwhile recomputes once); an NB server restart and a refused commit
force a recompute."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_daemon_procs import NorthdProc, plane, poll

from procs import run

pytestmark = pytest.mark.interop

# The nodes with change handlers (`sync_cfg` and the root recompute on every run: each
# is a few assignments).
NODES = ("northd", "lflow", "sync_from_sb", "mac_binding_aging", "sync_to_sb")
TAKEOVER = "Hot standby taking over without a recompute"


def _bindings(p: object) -> str:
    from test_daemon_procs import Plane

    assert isinstance(p, Plane)
    return p.sbctl("--bare", "--columns=_uuid,logical_port,tunnel_key", "list",
                   "Port_Binding")


def _counter(n: NorthdProc, name: str) -> int:
    return int(n.appctl("coverage/read-counter", name).stdout)


def _standby_of(p: object, active: NorthdProc, name: str) -> NorthdProc:
    from test_daemon_procs import Plane

    assert isinstance(p, Plane)
    b = p.northd(name)
    poll(f"{name} standby", lambda: b.status() == "Status: standby", logs=b.logs)
    poll(f"{name}'s first run", lambda: b.appctl("inc-engine/show-stats", "northd",
                                                  "standby").stdout.strip() == "1",
         logs=b.logs)
    return b


def test_a_hot_standby_takes_over_without_a_recompute(tmp_path: Path) -> None:
    with plane("ours", tmp_path) as p:
        a = p.northd("a")
        poll("a active", lambda: a.status() == "Status: active", logs=a.logs)
        b = _standby_of(p, a, "b")
        p.nbctl("--wait=sb", "ls-add", "sw0")
        p.nbctl("--wait=sb", "lsp-add", "sw0", "p1")
        before = _bindings(p)
        dps = p.sb_names("Datapath_Binding", "_uuid")
        # The standby kept up (its runs counted as standby work) and wrote nothing.
        poll("b kept up", lambda: b.stat("northd", "compute") >= 2, logs=b.diagnose)
        recomputes = {node: b.stat(node) for node in NODES}
        assert "- standby:" in b.appctl("inc-engine/show-stats", "northd").stdout
        assert _counter(b, "txn_success") == 0
        a.kill()
        poll("b active", lambda: b.status() == "Status: active", logs=b.logs)
        assert "ovn-northd lock acquired. This ovn-northd instance is now active." in b.log()
        poll("the takeover", lambda: _counter(b, "txn_unchanged") >= 1, logs=b.logs)
        assert TAKEOVER in b.log()
        # Nothing between the active's last commit and the takeover: nothing written,
        # nothing recomputed, SB as it was.
        assert _counter(b, "txn_success") == 0
        p.nbctl("--wait=sb", "sync")
        assert {node: b.stat(node) for node in NODES} == recomputes
        assert _bindings(p) == before
        assert p.sb_names("Datapath_Binding", "_uuid") == dps
        p.nbctl("--wait=sb", "lsp-add", "sw0", "p2")
        assert p.sb_names("Port_Binding", "logical_port") == ["p1", "p2"]
        assert b.stat("northd") == recomputes["northd"]
        assert p.nbctl("get", "NB_Global", ".", "sb_cfg").strip() == \
            p.nbctl("get", "NB_Global", ".", "nb_cfg").strip()


def test_a_takeover_writes_the_changes_made_while_no_one_was_active(tmp_path: Path) -> None:
    """The active is paused (it writes nothing, and releases the lock only when told
    to run again), NB changes, and the standby, which ran them, takes over: it writes
    exactly those, with no recompute; then the paused one runs again as the standby
    and, having missed changes, recomputes once and says so."""
    with plane("ours", tmp_path) as p:
        a = p.northd("a")
        poll("a active", lambda: a.status() == "Status: active", logs=a.logs)
        b = _standby_of(p, a, "b")
        p.nbctl("--wait=sb", "ls-add", "sw0")
        poll("b kept up", lambda: b.stat("northd", "compute") >= 1, logs=b.diagnose)
        recomputes = b.stat("northd")
        a.appctl("pause")
        poll("b active", lambda: b.status() == "Status: active", logs=b.logs)
        p.nbctl("--wait=sb", "lsp-add", "sw0", "p1")
        assert p.sb_names("Port_Binding", "logical_port") == ["p1"]
        assert b.stat("northd") == recomputes
        assert TAKEOVER in b.log()
        p.nbctl("--wait=sb", "lsp-add", "sw0", "p2")
        paused = a.stat("northd")
        a.appctl("resume")
        poll("a standby", lambda: a.status() == "Status: standby", logs=a.logs)
        poll("a's recompute", lambda: "Hot standby recomputing" in a.log(), logs=a.logs)
        p.nbctl("--wait=sb", "lsp-del", "p2")
        p.nbctl("--wait=sb", "lsp-add", "sw0", "p2")
        assert a.stat("northd") == paused + 1  # (once, then it keeps up)
        b.kill()
        poll("a active", lambda: a.status() == "Status: active", logs=a.logs)
        poll("a's takeover", lambda: a.log().count(TAKEOVER) == 1, logs=a.logs)
        settled = a.stat("northd")
        p.nbctl("--wait=sb", "lsp-add", "sw0", "p3")
        assert p.sb_names("Port_Binding", "logical_port") == ["p1", "p2", "p3"]
        assert a.stat("northd") == settled


def test_ours_is_a_hot_standby_of_the_real_northd(tmp_path: Path) -> None:
    """ovn-northd 23.03 active on the real servers, ours its hot standby: ours
    computes what 23.03 wrote, so when 23.03 dies ours takes over writing nothing,
    and then serves the next change."""
    with plane("real", tmp_path) as p:
        real = NorthdProc(tmp_path, p.nb.unix, p.sb.unix, name="real",
                          command=["ovn-northd"])
        p.northds.append(real)
        real.start()
        poll("23.03 active", lambda: real.status() == "Status: active", logs=real.logs)
        ours = _standby_of(p, real, "ours")
        p.nbctl("ls-add", "sw0")
        p.nbctl("lsp-add", "sw0", "p1", "--", "lsp-set-addresses", "p1",
                "00:00:00:00:00:01 10.0.0.1")
        p.nbctl("lr-add", "lr0", "--", "lrp-add", "lr0", "lrp0", "00:00:00:00:ff:01",
                "10.0.0.254/24")
        p.nbctl("--wait=sb", "lsp-add", "sw0", "sw0-lr0", "--", "lsp-set-type", "sw0-lr0",
                "router", "--", "lsp-set-options", "sw0-lr0", "router-port=lrp0",
                "--", "lsp-set-addresses", "sw0-lr0", "router")
        flows = p.sbctl("--bare", "--columns=_uuid", "list", "Logical_Flow")
        time.sleep(1)  # (ours takes in 23.03's last writes)
        recomputes = ours.stat("northd")
        real.kill()
        poll("ours active", lambda: ours.status() == "Status: active", logs=ours.logs)
        poll("the takeover", lambda: _counter(ours, "txn_unchanged") >= 1, logs=ours.logs)
        assert TAKEOVER in ours.log()
        assert _counter(ours, "txn_success") == 0, ours.log()
        assert ours.stat("northd") == recomputes
        assert p.sbctl("--bare", "--columns=_uuid", "list", "Logical_Flow") == flows
        p.nbctl("--wait=sb", "lsp-add", "sw0", "p2")
        assert p.sb_names("Port_Binding", "logical_port") == ["lrp0", "p1", "p2", "sw0-lr0"]


def test_nb_restart_reconnects_and_recomputes(tmp_path: Path) -> None:
    with plane("ours", tmp_path) as p:
        n = p.northd()
        poll("active", lambda: n.status() == "Status: active", logs=n.logs)
        p.nbctl("--wait=sb", "ls-add", "sw0")
        line = "OVN NB IDL reconnected, force recompute."
        assert n.log().count(line) == 1
        before = n.stat("northd")
        p.nb.stop()
        p.nb.start()
        poll("the reconnect", lambda: n.log().count(line) == 2, timeout=30, logs=n.logs)
        poll("the forced recompute", lambda: n.stat("northd") >= before + 1, logs=n.logs)
        p.nbctl("--wait=sb", "lsp-add", "sw0", "p1")
        assert p.sb_names("Port_Binding", "logical_port") == ["p1"]


def test_failed_commit_forces_a_recompute(tmp_path: Path) -> None:
    """The SB server refuses northd's writes (its connection has the role of a
    chassis, whose RBAC permits none of them; the lock is still granted): each run's
    SB commit fails, is logged as ovn-northd logs it, and the next run, even for a
    change northd handles without recomputing (an nb_cfg bump), recomputes."""
    with plane("ours", tmp_path,
               sb_extra=["--remote=db:OVN_Southbound,SB_Global,connections"]) as p:
        limited = tmp_path / "sb-rbac.sock"
        p.sbctl("set-connection", "role=ovn-controller", f"punix:{limited}")
        poll("the RBAC socket", limited.exists)
        n = p.northd(extra=[f"--ovnsb-db=unix:{limited}"])
        poll("active", lambda: n.status() == "Status: active", logs=n.logs)
        failed = "OVNSB commit failed, force recompute next time."
        p.nbctl("ls-add", "sw0")
        poll("a failed SB commit", lambda: failed in n.log(), logs=n.logs)
        assert p.sb_names("Datapath_Binding", "_uuid") == []
        for cfg in (1, 2):
            time.sleep(0.5)
            before = n.stat("northd")
            count = n.log().count(failed)
            # nb_cfg only: without a failure, no recompute
            p.nbctl("set", "NB_Global", ".", f"nb_cfg={cfg}")
            poll("a forced recompute", lambda before=before: n.stat("northd")  # type: ignore[misc]
                 > before, logs=n.logs)
            poll("another failed commit", lambda count=count: n.log().count(failed)  # type: ignore[misc]
                 > count, logs=n.logs)
        # A refused commit is not retried in a loop: the next change retries it (the
        # server's periodic Connection status writes are changes: one at most here).
        time.sleep(0.5)
        quiet = n.stat("northd")
        time.sleep(1)
        assert n.stat("northd") <= quiet + 1
        # Without the failure (the real SB socket), an nb_cfg bump recomputes nothing.
        ok = p.northd("ok")
        n.kill()
        poll("ok active", lambda: ok.status() == "Status: active", logs=ok.logs)
        p.nbctl("--wait=sb", "sync")
        assert p.sb_names("Datapath_Binding", "_uuid") != []
        settled = ok.stat("northd")
        for _ in range(2):
            p.nbctl("--wait=sb", "sync")
        assert ok.stat("northd") == settled


def test_clustered_sb_leader_change(tmp_path: Path) -> None:
    """SB a 3-member cluster of ours given as three remotes: northd works through the
    leader (leader-only), and when the leader dies it reconnects to the new one,
    recomputes, and keeps serving --wait=sb."""
    from test_daemon_procs import NorthdProc

    from procs import NB_SCHEMA, SB_SCHEMA, ServerProcess, create_db
    from pyovsdb.testing_cluster import Cluster

    nb = ServerProcess("ours", tmp_path, [create_db("ours", tmp_path / "nb.db", NB_SCHEMA)],
                       name="nb")
    (tmp_path / "sb").mkdir()
    with nb, Cluster(tmp_path / "sb", SB_SCHEMA, "OVN_Southbound",
                     ["ours", "ours", "ours"]) as sb:
        sb.create()
        sb.start()
        leader = sb.wait_formed()
        n = NorthdProc(tmp_path, nb.unix, sb.remotes())
        try:
            n.start()
            poll("active", lambda: n.status() == "Status: active", logs=n.logs)
            plane_nbctl = ["ovn-nbctl", f"--db={nb.unix}", "--timeout=30"]
            run([*plane_nbctl, "--wait=sb", "ls-add", "sw0"])
            line = "OVN SB IDL reconnected, force recompute."
            before = n.stat("northd")
            assert n.log().count(line) == 1
            sb.kill(leader)
            sb.wait_formed()
            poll("the reconnect", lambda: n.log().count(line) == 2, timeout=40,
                 logs=n.logs)
            run([*plane_nbctl, "--wait=sb", "lsp-add", "sw0", "p1"], timeout=60)
            assert n.stat("northd") >= before + 1   # the reconnect (the port: in place)
            ports = run(["ovn-sbctl", f"--db={sb.remotes()}", "--timeout=30", "--bare",
                         "--columns=logical_port", "list", "Port_Binding"]).stdout.split()
            assert ports == ["p1"]
        finally:
            n.stop()
