"""Active-backup replication (`--sync-from`), side by side with the real ovsdb-server
3.1: ours as the backup of a real active server and the real one as the backup of
ours, clients refused writes on a backup, promotion to active, the control commands'
texts, and a server told to follow itself."""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from interop_helpers import wait_until

from procs import NB_SCHEMA, ServerProcess, create_db, require, run

pytestmark = pytest.mark.interop

PAIRS = [("real", "ours"), ("ours", "real")]


@pytest.fixture(autouse=True)
def _tools() -> None:
    require("ovsdb-server", "ovsdb-tool", "ovsdb-client", "ovn-nbctl")


def _nbctl(srv: ServerProcess, *args: str, check: bool = True) -> str:
    p = run(["ovn-nbctl", "--timeout=20", f"--db={srv.unix}", *args], check=check)
    return p.stdout + p.stderr


def _dump(srv: ServerProcess) -> str:
    return run(["ovsdb-client", "--timeout=20", "dump", srv.unix, "OVN_Northbound"]).stdout


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[ServerProcess]]:
    made: list[ServerProcess] = []
    yield made
    for srv in made:
        srv.stop()


def _server(kind: str, d: Path, made: list[ServerProcess], extra: list[str] | None = None,
            name: str = "db") -> ServerProcess:
    d.mkdir(parents=True, exist_ok=True)
    db = create_db(kind, d / f"{name}.db", NB_SCHEMA)
    srv = ServerProcess(kind, d, [db], name=name, extra=extra)
    made.append(srv)
    return srv.start()


@pytest.mark.parametrize(("active_kind", "backup_kind"), PAIRS,
                         ids=["ours-follows-real", "real-follows-ours"])
def test_a_backup_follows_its_active_server(tmp_path: Path, started: list[ServerProcess],
                                            active_kind: str, backup_kind: str) -> None:
    active = _server(active_kind, tmp_path / "active", started)
    _nbctl(active, "init")
    _nbctl(active, "ls-add", "sw0", "--", "lsp-add", "sw0", "p0", "--",
           "lsp-set-addresses", "p0", "00:00:00:00:00:01 10.0.0.1")
    backup = _server(backup_kind, tmp_path / "backup", started,
                     [f"--sync-from={active.unix}"], name="backup")
    assert wait_until(lambda: _dump(backup) == _dump(active)), _dump(backup)
    _nbctl(active, "ls-add", "sw1", "--", "set", "Logical_Switch", "sw0",
           "external_ids:owner=neutron", "--", "lsp-del", "p0")
    assert wait_until(lambda: _dump(backup) == _dump(active)), _dump(backup)
    status = backup.appctl("ovsdb-server/sync-status").stdout
    assert status == (f"state: backup\nreplicating: {active.unix}\n"
                      "database: OVN_Northbound\n"), status
    refused = _nbctl(backup, "ls-add", "mine", check=False)
    assert "insert operation not allowed when database server is in read only mode" \
        in refused, refused
    assert backup.appctl("ovsdb-server/get-active-ovsdb-server").stdout == \
        f"{active.unix}\n"
    backup.appctl("ovsdb-server/disconnect-active-ovsdb-server")
    assert backup.appctl("ovsdb-server/sync-status").stdout == "state: active\n"
    _nbctl(backup, "ls-add", "mine")
    assert "mine" in _nbctl(backup, "ls-list") and "mine" not in _nbctl(active, "ls-list")


def test_the_control_commands_answer_as_the_real_ones(tmp_path: Path,
                                                      started: list[ServerProcess]) -> None:
    got = {}
    for kind in ("ours", "real"):
        srv = _server(kind, tmp_path / kind, started)
        texts = [srv.appctl("ovsdb-server/sync-status").stdout,
                 srv.appctl("ovsdb-server/get-active-ovsdb-server").stdout,
                 srv.appctl("ovsdb-server/connect-active-ovsdb-server").stdout,
                 srv.appctl("ovsdb-server/set-sync-exclude-tables", "nodb").stdout,
                 srv.appctl("ovsdb-server/set-sync-exclude-tables",
                            "OVN_Northbound:NB_Global,OVN_Northbound:ACL").stdout,
                 srv.appctl("ovsdb-server/get-sync-exclude-tables").stdout,
                 srv.appctl("ovsdb-server/set-active-ovsdb-server-probe-interval",
                            "x").stdout]
        got[kind] = texts
    assert got["ours"] == got["real"]
    assert got["ours"][5] == "OVN_Northbound:ACL,OVN_Northbound:NB_Global\n"


def test_a_server_told_to_follow_itself_refuses(tmp_path: Path,
                                                started: list[ServerProcess]) -> None:
    got = {}
    for kind in ("ours", "real"):
        d = tmp_path / kind
        sock = d / "db.sock"
        srv = _server(kind, d, started, [f"--sync-from=unix:{sock}"])
        assert wait_until(lambda s=srv: "Self replicating is not allowed"
                          in Path(s.logfile).read_text()), Path(srv.logfile).read_text()
        line = next(x for x in Path(srv.logfile).read_text().splitlines()
                    if "Self replicating" in x)
        got[kind] = (re.sub(r"^.*?\|\d+\|", "", line),
                     srv.appctl("ovsdb-server/sync-status").stdout.replace(str(sock), "S"))
    assert got["ours"] == got["real"]


def test_a_backup_whose_active_server_changes_schema(tmp_path: Path,
                                                     started: list[ServerProcess]) -> None:
    """The active server's database converted to a schema the backup cannot hold: each
    backup logs why, as the real one does, stops replicating and is active, with what it
    had."""
    from old_schemas import old_nb_schema

    old = tmp_path / "old.ovsschema"
    old.write_text(json.dumps(old_nb_schema()))
    got = {}
    for kind in ("ours", "real"):
        d = tmp_path / kind
        d.mkdir()
        active = ServerProcess("ours", d, [create_db("ours", d / "a.db", str(old))],
                               name="a")
        started.append(active)
        active.start()
        _nbctl(active, "init")
        _nbctl(active, "ls-add", "sw0")
        backup = ServerProcess(kind, d, [create_db(kind, d / "b.db", str(old))], name="b",
                               extra=[f"--sync-from={active.unix}"])
        started.append(backup)
        backup.start()
        assert wait_until(lambda b=backup, a=active: _dump(b) == _dump(a)), _dump(backup)
        run(["ovsdb-client", "--timeout=20", "convert", active.unix, NB_SCHEMA])
        assert wait_until(lambda b=backup: b.appctl("ovsdb-server/sync-status").stdout
                          == "state: active\n", timeout=30), \
            backup.appctl("ovsdb-server/sync-status").stdout
        got[kind] = ([re.sub(r"^.*?\|\d+\|", "", line) for line in
                      Path(backup.logfile).read_text().splitlines()
                      if "|replication|" in line and "Monitor request" not in line],
                     "sw0" in _nbctl(backup, "ls-list"))
    assert got["ours"] == got["real"]
    assert "replication|INFO|OVN_Northbound cannot be replicated." in got["ours"][0]


@pytest.mark.parametrize("backup_kind", ["ours", "real"])
def test_the_probe_interval_of_the_active_connection(
        tmp_path: Path, started: list[ServerProcess], backup_kind: str) -> None:
    """`set-active-ovsdb-server-probe-interval 1000` on a backup, then the active server
    frozen (SIGSTOP): the backup gives up on it after two intervals (a probe, then no
    answer for one), with the real client's lines."""
    active = _server("ours", tmp_path / "active", started)
    _nbctl(active, "init")
    backup = _server(backup_kind, tmp_path / "backup", started,
                     [f"--sync-from={active.unix}"], name="backup")
    assert wait_until(lambda: "replicating" in
                      backup.appctl("ovsdb-server/sync-status").stdout)
    backup.appctl("ovsdb-server/set-active-ovsdb-server-probe-interval", "1000")
    assert active.proc is not None
    os.kill(active.proc.pid, signal.SIGSTOP)
    try:
        want = [f"reconnect|ERR|{active.unix}: no response to inactivity probe after 1 "
                "seconds, disconnecting", f"reconnect|INFO|{active.unix}: connection dropped"]

        def lines() -> list[str]:
            return [re.sub(r"^.*?\|\d+\|", "", x)
                    for x in Path(backup.logfile).read_text().splitlines()]
        assert wait_until(lambda: want[0] in lines(), timeout=15), lines()
        assert lines()[lines().index(want[0]) + 1] == want[1], lines()
    finally:
        os.kill(active.proc.pid, signal.SIGCONT)
