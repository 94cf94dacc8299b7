"""Active/standby and forced recomputes of `pyovsdb northd`, as processes on our servers:
of two northds one holds the SB lock; killed, the other takes over, recomputes fully
and keeps SB right; an NB server restart and a refused commit force a recompute."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_daemon_procs import plane, poll

from procs import run

pytestmark = pytest.mark.interop

NODES = ("northd", "sync_cfg", "mac_binding_aging", "sync_to_sb", "northd_output")


def _bindings(p: object) -> str:
    from test_daemon_procs import Plane

    assert isinstance(p, Plane)
    return p.sbctl("--bare", "--columns=_uuid,logical_port,tunnel_key", "list",
                   "Port_Binding")


def test_standby_takes_over_when_the_active_dies(tmp_path: Path) -> None:
    with plane("ours", tmp_path) as p:
        a = p.northd("a")
        poll("a active", lambda: a.status() == "Status: active", logs=a.logs)
        b = p.northd("b")
        poll("b standby", lambda: "lock" in b.log() or b.status() == "Status: standby",
             logs=b.logs)
        assert b.status() == "Status: standby"
        p.nbctl("--wait=sb", "ls-add", "sw0")
        p.nbctl("--wait=sb", "lsp-add", "sw0", "p1")
        before = _bindings(p)
        dps = p.sb_names("Datapath_Binding", "_uuid")
        # The standby ran nothing.
        assert all(b.stat(node) == 0 for node in NODES)
        a.kill()
        poll("b active", lambda: b.status() == "Status: active", logs=b.logs)
        assert "ovn-northd lock acquired. This ovn-northd instance is now active." in b.log()
        # Became active: every node recomputed, `northd` exactly once (the cfg the
        # first commit carried is reported by a second run, without it), and SB was
        # already right.
        poll("b's first run", lambda: b.stat("northd_output") >= 1, logs=b.logs)
        p.nbctl("--wait=sb", "sync")
        assert all(b.stat(node) >= 1 for node in NODES)
        assert b.stat("northd") == 1, b.appctl("inc-engine/show-stats").stdout
        assert _bindings(p) == before
        assert p.sb_names("Datapath_Binding", "_uuid") == dps
        p.nbctl("--wait=sb", "lsp-add", "sw0", "p2")
        assert p.sb_names("Port_Binding", "logical_port") == ["p1", "p2"]
        assert p.nbctl("get", "NB_Global", ".", "sb_cfg").strip() == \
            p.nbctl("get", "NB_Global", ".", "nb_cfg").strip()


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

    from cluster.cluster_helpers import Cluster
    from procs import NB_SCHEMA, SB_SCHEMA, ServerProcess, create_db

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
