"""The real `ovs-appctl -t CTL` on our server's control socket (and the real one's)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from interop_helpers import Monitor, client, nbctl, select, transact, wait_until

from procs import NB_SCHEMA, SB_SCHEMA, ServerProcess, create_db, free_port, require, run

pytestmark = pytest.mark.interop


@pytest.fixture(autouse=True)
def _tools() -> None:
    require("ovs-appctl", "ovsdb-client", "ovn-nbctl", "ovsdb-tool")


def appctl(srv: ServerProcess, *args: str) -> tuple[int, str, str]:
    p = srv.appctl(*args, check=False)
    return p.returncode, p.stdout, p.stderr


def error_text(srv: ServerProcess, stderr: str) -> str:
    """The server's error text from ovs-appctl's stderr (it adds a line of its own)."""
    suffix = f"ovs-appctl: {srv.ctl}: server returned an error\n"
    assert stderr.endswith(suffix), stderr
    return stderr[: -len(suffix)]


def test_list_commands(any_nb_server: ServerProcess) -> None:
    rc, out, _ = appctl(any_nb_server, "list-commands")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0] == "The available commands are:"
    names = {line.split()[0] for line in lines[1:]}
    assert names >= {
        "exit",
        "list-commands",
        "memory/show",
        "version",
        "ovsdb-server/add-remote",
        "ovsdb-server/remove-remote",
        "ovsdb-server/list-remotes",
        "ovsdb-server/list-dbs",
        "ovsdb-server/compact",
        "ovsdb-server/reconnect",
    }
    usage = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert usage["ovsdb-server/add-remote"] == ["REMOTE"]
    assert usage["ovsdb-server/remove-remote"] == ["REMOTE"]


def test_version(any_nb_server: ServerProcess) -> None:
    rc, out, err = appctl(any_nb_server, "version")
    assert (rc, err) == (0, "")
    # One line, newline-terminated (unixctl adds the newline to every reply).
    assert out.endswith("\n") and out.count("\n") == 1
    assert re.fullmatch(r"ovsdb-server \(.+\) \d+\.\d+\.\d+\n", out), out


def test_memory_show(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server

    def counters() -> dict[str, int]:
        rc, out, _ = appctl(srv, "memory/show")
        assert rc == 0 and out.endswith("\n")
        items = out.split()
        assert all(re.fullmatch(r"[a-z][a-z-]*:\d+", i) for i in items), out
        return {k: int(v) for k, v in (i.split(":") for i in items)}

    before = counters()
    assert {"atoms", "cells"} <= set(before)
    args: list[str] = []
    for i in range(20):
        args += [
            "--",
            "ls-add",
            f"sw{i}",
            "--",
            "set",
            "Logical_Switch",
            f"sw{i}",
            f"external_ids:k{i}=v{i}",
        ]
    nbctl(srv, *args[1:])
    after = counters()
    assert after["cells"] > before["cells"] and after["atoms"] > before["atoms"]
    with Monitor(["monitor", srv.unix, "Logical_Switch"]) as mon:
        mon.wait_lines(3)
        assert counters()["monitors"] == 1


def test_list_dbs_and_remotes(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server
    assert appctl(srv, "ovsdb-server/list-dbs") == (0, "OVN_Northbound\n_Server\n", "")
    assert appctl(srv, "ovsdb-server/list-remotes") == (
        0,
        f"ptcp:{srv.port}:127.0.0.1\npunix:{srv.sock}\n",
        "",
    )


def test_add_and_remove_remote(any_nb_server: ServerProcess, tmp_path: Path) -> None:
    srv = any_nb_server
    extra = tmp_path / "extra.sock"
    port = free_port()
    assert appctl(srv, "ovsdb-server/add-remote", f"punix:{extra}") == (0, "", "")
    assert appctl(srv, "ovsdb-server/add-remote", f"ptcp:{port}:127.0.0.1") == (0, "", "")
    # Adding one again is not an error.
    assert appctl(srv, "ovsdb-server/add-remote", f"punix:{extra}")[0] == 0
    rc, out, _ = appctl(srv, "ovsdb-server/list-remotes")
    assert rc == 0
    assert out.splitlines() == sorted(
        [
            f"ptcp:{port}:127.0.0.1",
            f"ptcp:{srv.port}:127.0.0.1",
            f"punix:{extra}",
            f"punix:{srv.sock}",
        ]
    )

    # The new remotes serve the databases: a change made through one is seen on another.
    assert wait_until(lambda: client("list-dbs", f"unix:{extra}", check=False).returncode == 0)
    assert client("list-dbs", f"unix:{extra}").stdout == "OVN_Northbound\n_Server\n"
    run(["ovn-nbctl", f"--db=unix:{extra}", "ls-add", "via-extra"])
    run(["ovn-nbctl", f"--db=tcp:127.0.0.1:{port}", "ls-add", "via-tcp"])
    assert select(srv, "Logical_Switch", ["name"]) == [{"name": "via-extra"}, {"name": "via-tcp"}]

    assert appctl(srv, "ovsdb-server/remove-remote", f"punix:{extra}") == (0, "", "")
    assert appctl(srv, "ovsdb-server/remove-remote", f"ptcp:{port}:127.0.0.1") == (0, "", "")
    assert appctl(srv, "ovsdb-server/list-remotes") == (
        0,
        f"ptcp:{srv.port}:127.0.0.1\npunix:{srv.sock}\n",
        "",
    )
    assert wait_until(lambda: client("list-dbs", f"unix:{extra}", check=False).returncode != 0)
    assert wait_until(
        lambda: (
            "Connection refused" in client("list-dbs", f"tcp:127.0.0.1:{port}", check=False).stderr
        )
    )
    # The original remotes still work.
    assert client("list-dbs", srv.tcp).stdout == "OVN_Northbound\n_Server\n"


def test_remove_unknown_remote(any_nb_server: ServerProcess) -> None:
    rc, out, err = appctl(any_nb_server, "ovsdb-server/remove-remote", "punix:/nonexistent")
    assert (rc, out) == (2, "")
    assert error_text(any_nb_server, err) == "no such remote\n"


def test_command_errors(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server
    cases = [
        (
            ["nope"],
            '"nope" is not a valid command (use "list-commands" to see a list of valid commands)\n',
        ),
        (
            ["ovsdb-server/add-remote"],
            '"ovsdb-server/add-remote" command requires at least 1 arguments\n',
        ),
        (["exit", "extra"], '"exit" command takes at most 0 arguments\n'),
        (
            ["ovsdb-server/list-dbs", "x"],
            '"ovsdb-server/list-dbs" command takes at most 0 arguments\n',
        ),
        (["ovsdb-server/compact", "Nope"], "no database by that name\n"),
        (["ovsdb-server/compact", "_Server"], "cannot compact built-in databases\n"),
    ]
    for args, text in cases:
        rc, out, err = appctl(srv, *args)
        assert (rc, out, error_text(srv, err)) == (2, "", text), args
    # The server is still serving after all that.
    assert client("list-dbs", srv.unix).stdout == "OVN_Northbound\n_Server\n"


def _grow(srv: ServerProcess, n: int = 30) -> None:
    """Many small transactions, each rewriting the same rows: a log much bigger than
    its contents."""
    nbctl(srv, "ls-add", "sw0", "--", "ls-add", "sw1", "--", "ls-add", "gone")
    for i in range(n):
        nbctl(
            srv,
            "set",
            "Logical_Switch",
            "sw0",
            f"external_ids:gen={i}",
            f"other_config:k{i % 3}=v{i}",
        )
    nbctl(srv, "ls-del", "gone")
    nbctl(srv, "lsp-add", "sw1", "p1", "--", "lsp-set-addresses", "p1", "00:00:00:00:00:01")


def _db_path(srv: ServerProcess) -> str:
    return srv.dbs[0]


def test_compact(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server
    path = _db_path(srv)
    empty = os.path.getsize(path)  # the schema record
    _grow(srv)
    big = os.path.getsize(path)
    log_before = run(["ovsdb-tool", "show-log", path]).stdout
    assert log_before.count("\nrecord ") > 30

    assert appctl(srv, "ovsdb-server/compact") == (0, "", "")
    small = os.path.getsize(path)
    assert small - empty < (big - empty) / 5, (empty, small, big)
    log = run(["ovsdb-tool", "show-log", path]).stdout
    assert log.startswith('record 0: "OVN_Northbound" schema, version="7.0.0"')
    assert log.count("\nrecord ") == 1, log  # one snapshot record after the schema

    query = json.dumps(
        [
            "OVN_Northbound",
            {
                "op": "select",
                "table": "Logical_Switch",
                "where": [],
                "columns": ["name", "external_ids"],
                "sort": ["name"],
            },
        ]
    )
    rows = json.loads(run(["ovsdb-tool", "query", path, query]).stdout)[0]["rows"]
    assert rows == [
        {"name": "sw0", "external_ids": ["map", [["gen", "29"]]]},
        {"name": "sw1", "external_ids": ["map", []]},
    ]

    # The server keeps appending to the compacted file.
    nbctl(srv, "ls-add", "after")
    assert run(["ovsdb-tool", "show-log", path]).stdout.count("\nrecord ") == 2
    rows = json.loads(run(["ovsdb-tool", "query", path, query]).stdout)[0]["rows"]
    assert [r["name"] for r in rows] == ["after", "sw0", "sw1"]
    assert select(srv, "Logical_Switch", ["name"]) == [
        {"name": "after"},
        {"name": "sw0"},
        {"name": "sw1"},
    ]
    # With the database named explicitly.
    assert appctl(srv, "ovsdb-server/compact", "OVN_Northbound") == (0, "", "")
    assert run(["ovsdb-tool", "show-log", path]).stdout.count("\nrecord ") == 1


def test_compacted_file_restarts(any_nb_server: ServerProcess, tmp_path: Path) -> None:
    """After compaction and a restart (of the same kind of server), the data is intact."""
    srv = any_nb_server
    _grow(srv, 10)
    before = client("-f", "json", "dump", srv.unix).stdout
    assert appctl(srv, "ovsdb-server/compact")[0] == 0
    srv.stop()
    srv.start()
    assert client("-f", "json", "dump", srv.unix).stdout == before


def test_reconnect_drops_clients(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server
    nbctl(srv, "ls-add", "sw0")
    with Monitor(["monitor", srv.unix, "Logical_Switch"]) as mon:
        mon.wait_lines(3)
        assert appctl(srv, "ovsdb-server/reconnect") == (0, "", "")
        assert wait_until(lambda: mon.proc.poll() is not None, 10)
        mon.stop()
        assert "receive failed (End of file)" in mon.stderr
    # New connections are accepted.
    assert transact(
        srv, {"op": "select", "table": "Logical_Switch", "where": [], "columns": ["name"]}
    ) == [{"rows": [{"name": "sw0"}]}]


def test_exit(tmp_path: Path, kind: str) -> None:
    db = create_db(kind, tmp_path / "nb.db", NB_SCHEMA)
    srv = ServerProcess(kind, tmp_path, [db], name="nb", tcp=True).start()
    try:
        assert srv.proc is not None
        nbctl(srv, "ls-add", "sw0")
        assert appctl(srv, "exit") == (0, "", "")
        assert srv.proc.wait(timeout=10) == 0
        # Pidfile, database socket and control socket are cleaned up; the data is on disk.
        assert not os.path.exists(srv.pidfile)
        assert not os.path.exists(srv.sock)
        assert not os.path.exists(srv.ctl)
        p = run(
            [
                "ovsdb-tool",
                "query",
                db,
                json.dumps(
                    [
                        "OVN_Northbound",
                        {
                            "op": "select",
                            "table": "Logical_Switch",
                            "where": [],
                            "columns": ["name"],
                        },
                    ]
                ),
            ]
        )
        assert json.loads(p.stdout) == [{"rows": [{"name": "sw0"}]}]
    finally:
        srv.stop()


# ---------------------------------------------------------------------------------------
# Commands of the real ovsdb-server beyond the basics: several databases, add-db /
# remove-db, and the vlog commands that logrotate and operators use.


@pytest.fixture
def nb_sb_server(kind: str, tmp_path: Path) -> Any:
    nb = create_db(kind, tmp_path / "nb.db", NB_SCHEMA)
    sb = create_db(kind, tmp_path / "sb.db", SB_SCHEMA)
    srv = ServerProcess(kind, tmp_path, [nb, sb], name="both", tcp=True).start()
    try:
        yield srv
    finally:
        srv.stop()


def test_two_databases(nb_sb_server: ServerProcess) -> None:
    srv = nb_sb_server
    assert appctl(srv, "ovsdb-server/list-dbs") == (
        0,
        "OVN_Northbound\nOVN_Southbound\n_Server\n",
        "",
    )
    nbctl(srv, "ls-add", "sw0")
    run(["ovn-sbctl", f"--db={srv.unix}", "chassis-add", "ch0", "geneve", "1.2.3.4"])
    assert nbctl(srv, "ls-list").stdout.endswith("(sw0)\n")
    assert (
        run(["ovn-sbctl", f"--db={srv.unix}", "--bare", "--columns=name", "list", "Chassis"]).stdout
        == "ch0\n"
    )
    assert appctl(srv, "ovsdb-server/compact", "OVN_Southbound") == (0, "", "")
    assert run(["ovsdb-tool", "show-log", srv.dbs[1]]).stdout.count("record ") == 2


def test_remove_and_add_db(nb_sb_server: ServerProcess, request: pytest.FixtureRequest) -> None:
    srv = nb_sb_server
    run(["ovn-sbctl", f"--db={srv.unix}", "chassis-add", "ch0", "geneve", "1.2.3.4"])
    assert appctl(srv, "ovsdb-server/remove-db", "OVN_Southbound") == (0, "", "")
    assert appctl(srv, "ovsdb-server/list-dbs")[1] == "OVN_Northbound\n_Server\n"
    assert client("list-dbs", srv.unix).stdout == "OVN_Northbound\n_Server\n"
    rc, _, err = appctl(srv, "ovsdb-server/remove-db", "OVN_Southbound")
    assert rc == 2 and error_text(srv, err) == "Failed to find the database.\n"
    assert appctl(srv, "ovsdb-server/add-db", srv.dbs[1]) == (0, "", "")
    assert client("list-dbs", srv.unix).stdout == ("OVN_Northbound\nOVN_Southbound\n_Server\n")
    assert (
        run(["ovn-sbctl", f"--db={srv.unix}", "--bare", "--columns=name", "list", "Chassis"]).stdout
        == "ch0\n"
    )


def test_vlog_reopen_after_rotation(
    any_nb_server: ServerProcess, request: pytest.FixtureRequest
) -> None:
    """What logrotate does: move the log away, `vlog/reopen`, and the server writes to a
    new file at the original path."""
    srv = any_nb_server
    os.rename(srv.logfile, srv.logfile + ".1")
    assert appctl(srv, "vlog/reopen") == (0, "", "")
    assert os.path.exists(srv.logfile)
    assert appctl(srv, "vlog/set", "ANY:file:dbg") == (0, "", "")
    nbctl(srv, "ls-add", "sw0")
    assert wait_until(lambda: os.path.getsize(srv.logfile) > 0)


def test_vlog_list_and_set(any_nb_server: ServerProcess, request: pytest.FixtureRequest) -> None:
    srv = any_nb_server
    rc, out, _ = appctl(srv, "vlog/list")
    assert rc == 0
    assert out.splitlines()[0].split() == ["console", "syslog", "file"]
    assert any(line.split()[0] == "ovsdb_server" for line in out.splitlines()[2:])
    assert appctl(srv, "vlog/set", "ovsdb_server:file:dbg") == (0, "", "")
    rc, out, _ = appctl(srv, "vlog/list")
    line = next(x for x in out.splitlines() if x.split()[:1] == ["ovsdb_server"])
    assert line.split()[3] == "DBG"
    rc, _, err = appctl(srv, "vlog/set", "bogus:file:dbg")
    assert rc == 2 and error_text(srv, err) == 'no destination, level, or module "bogus"\n'


def test_detach_and_exit(kind: str, tmp_path: Path) -> None:
    """`--detach --pidfile`, as ovn-ctl starts it: the command returns once the
    daemon serves, and `exit` on the control socket ends it."""
    import signal
    import sys
    import time

    db = create_db(kind, tmp_path / "nb.db", NB_SCHEMA)
    base = [sys.executable, "-m", "pyovsdb", "server"] if kind == "ours" else ["ovsdb-server"]
    pidfile, sock, ctl = tmp_path / "d.pid", tmp_path / "d.sock", tmp_path / "d.ctl"
    cmd = [
        *base,
        "--detach",
        "--no-chdir",
        f"--pidfile={pidfile}",
        f"--log-file={tmp_path / 'd.log'}",
        f"--remote=punix:{sock}",
        f"--unixctl={ctl}",
        "-vconsole:off",
        db,
    ]
    pid = None
    try:
        run(cmd, timeout=30)
        pid = int(pidfile.read_text())
        # Ready as soon as the command returned.
        assert client("list-dbs", f"unix:{sock}").stdout == "OVN_Northbound\n_Server\n"
        assert run(["ovs-appctl", "-t", str(ctl), "exit"]).returncode == 0
        assert wait_until(lambda: not os.path.exists(f"/proc/{pid}"), 10)
        pid = None
        assert not pidfile.exists()
    finally:
        if pid is not None and os.path.exists(f"/proc/{pid}"):
            os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)


def test_memory_show_counts_as_the_real_server(
        server_pair: Callable[[str], dict[str, ServerProcess]]) -> None:
    """`atoms` and `cells` count the same data the same way on both servers (the atoms
    of every row's columns, `_uuid` and `_version` included), so an operator's
    dashboards read the same figures."""
    pair = server_pair(NB_SCHEMA)
    counts = {}
    for kind, srv in pair.items():
        nbctl(srv, "init")
        nbctl(srv, "ls-add", "sw0", "--", "set", "Logical_Switch", "sw0",
              "external_ids:a=b", "other_config:c=d")
        nbctl(srv, "lsp-add", "sw0", "p0", "--", "lsp-set-addresses", "p0",
              "00:00:00:00:00:01 10.0.0.1", "00:00:00:00:00:02")
        _, out, _ = appctl(srv, "memory/show")
        items = dict(i.split(":") for i in out.split())
        counts[kind] = {k: items.get(k) for k in ("atoms", "cells")}
    assert counts["ours"] == counts["real"], counts
