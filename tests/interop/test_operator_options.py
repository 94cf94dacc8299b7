"""What operators' scripts meet, side by side with the real ovsdb-server and
ovsdb-client: `db:` remotes naming something that does not exist (at startup, with
`ovsdb-server/add-remote`, and when their database goes away), and relative unix
socket names, which both tools resolve in $OVS_RUNDIR.

Rules kept here:
- The same command lines run against both servers; the texts compared are the exit
  status, stderr, the replies of `ovs-appctl`, and the log lines of the modules that
  report (module, level and text) with the test's directory masked.
- Every process a test starts is stopped by its pid, also when the test fails.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from procs import NB_SCHEMA, ServerProcess, create_db, require, run, stop_process

pytestmark = pytest.mark.interop

KINDS = ("ours", "real")
LINE_RE = re.compile(r"^\S+\|\d+\|(?P<module>[^|]+)\|(?P<level>[^|]+)\|(?P<text>.*)$")
NB_REMOTE = "db:OVN_Northbound,NB_Global,connections"
# Each kind of problem, the bad syntax and a column of another type (no problem).
BAD_DB_REMOTES = ["db:Foo,NB_Global,connections", "db:OVN_Northbound,Nope,connections",
                  "db:OVN_Northbound,NB_Global,nope", "db:OVN_Northbound,NB_Global",
                  "db:a,b,c,d", "db:,,"]


@pytest.fixture(autouse=True)
def _tools() -> None:
    require("ovsdb-server", "ovsdb-tool", "ovsdb-client", "ovs-appctl")


def server_cmd(kind: str) -> list[str]:
    return [sys.executable, "-m", "pyovsdb", "server"] if kind == "ours" else ["ovsdb-server"]


def tool_cmd(kind: str) -> list[str]:
    return [sys.executable, "-m", "pyovsdb", "tool"] if kind == "ours" else ["ovsdb-tool"]


def log_entries(path: Path, modules: tuple[str, ...], workdir: Path) -> list[str]:
    """The log lines of `modules` as module|level|text, continuation lines (a message
    of several lines) kept with their line, the directory masked."""
    out: list[str] = []
    for line in path.read_text().splitlines():
        m = LINE_RE.match(line)
        if m is None:
            if out and out[-1] != "-":
                out[-1] += "\n" + line
            continue
        if m["module"] in modules:
            out.append(f"{m['module']}|{m['level']}|{m['text']}")
        else:
            out.append("-")  # a line of another module ends a continuation
    return [e.replace(str(workdir), "DIR") for e in out if e != "-"]


def test_db_remote_naming_nothing_is_fatal_at_startup(tmp_path: Path) -> None:
    """Every bad `db:` remote is named, one line each in the real server's order, then
    a blank line; exit status 1; nothing of it in the log."""
    seen = {}
    for kind in KINDS:
        d = tmp_path / kind
        d.mkdir()
        db = create_db(kind, d / "nb.db", NB_SCHEMA)
        log = d / "s.log"
        remotes = [f"--remote={r}" for r in [*BAD_DB_REMOTES, "db:OVN_Northbound,NB_Global,name",
                                             NB_REMOTE]]
        p = run([*server_cmd(kind), *remotes, f"--remote=punix:{d / 's.sock'}",
                 f"--unixctl={d / 's.ctl'}", "--no-chdir", "-vconsole:off",
                 f"--log-file={log}", db], check=False, timeout=10)
        seen[kind] = (p.returncode, p.stdout, p.stderr, log_entries(log, ("ovsdb_server",), d))
    assert seen["ours"] == seen["real"]
    rc, _, err, logged = seen["real"]
    assert rc == 1 and err.startswith("ovsdb-server: ") and err.endswith("\n\n")
    assert sorted(err[len("ovsdb-server: "):].splitlines()[:-1]) == [
        '"db:,,": invalid syntax',
        '"db:Foo,NB_Global,connections": no database named Foo',
        '"db:OVN_Northbound,NB_Global": invalid syntax',
        '"db:OVN_Northbound,NB_Global,nope": table "NB_Global" has no column "nope"',
        '"db:OVN_Northbound,Nope,connections": no table named Nope',
        '"db:a,b,c,d": no database named a']
    assert logged == []


def test_db_remote_problems_at_run_time(tmp_path: Path) -> None:
    """`ovsdb-server/add-remote` refuses a bad `db:` remote with the same text (a column
    of another type is accepted); when the database goes away, both servers log the
    problems of the `db:` remotes once (ovsdb_server WARN) and again once it is back and
    gone again."""
    seen = {}
    for kind in KINDS:
        d = tmp_path / kind
        d.mkdir()
        db = create_db(kind, d / "nb.db", NB_SCHEMA)
        srv = ServerProcess(kind, d, [db], name="s", extra=[f"--remote={NB_REMOTE}"])
        try:
            srv.start()
            replies = []
            for remote in [*BAD_DB_REMOTES, "db:OVN_Northbound,NB_Global,name"]:
                p = srv.appctl("ovsdb-server/add-remote", remote, check=False)
                replies.append((p.returncode, p.stdout, p.stderr.replace(srv.ctl, "CTL")))
            listed = srv.appctl("ovsdb-server/list-remotes").stdout.replace(str(d), "DIR")
            srv.appctl("ovsdb-server/remove-db", "OVN_Northbound")
            srv.appctl("ovsdb-server/add-db", db)
            srv.appctl("ovsdb-server/remove-db", "OVN_Northbound")
            log = Path(srv.logfile)
            deadline = time.monotonic() + 5
            while log.read_text().count("|WARN|") < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            srv.appctl("exit")
            assert srv.proc is not None
            srv.proc.wait(timeout=10)
            warnings = [e for e in log_entries(log, ("ovsdb_server",), d) if "|WARN|" in e]
            seen[kind] = (replies, listed, warnings)
        finally:
            srv.stop()
    assert seen["ours"] == seen["real"]
    replies, listed, logged = seen["real"]
    assert replies[-1] == (0, "", "")
    assert replies[0] == (2, "", '"db:Foo,NB_Global,connections": no database named Foo\n'
                                 'ovs-appctl: CTL: server returned an error\n')
    assert listed == f"{NB_REMOTE}\ndb:OVN_Northbound,NB_Global,name\npunix:DIR/s.sock\n"
    warning = ('ovsdb_server|WARN|"db:OVN_Northbound,NB_Global,name": no database named '
               'OVN_Northbound\n"db:OVN_Northbound,NB_Global,connections": no database '
               'named OVN_Northbound')
    assert logged == [warning, warning]


def test_relative_unix_names_are_in_the_run_directory(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`--remote=punix:NAME`, a Raft address `unix:NAME`, `--unixctl=NAME` and
    `ovsdb-server/add-remote punix:NAME` are made in $OVS_RUNDIR, not in the working
    directory; `ovsdb-client` and our clients (`jsonrpc.client`, as `pyovsdb client`
    uses it, and the IDL) find `unix:NAME` there; a remote keeps its name as given; a
    binding failure names the resolved path."""
    from pyovsdb.idl import Idl
    from pyovsdb.jsonrpc.client import Client

    seen = {}
    for kind in KINDS:
        rundir, cwd = tmp_path / kind / "run", tmp_path / kind / "cwd"
        rundir.mkdir(parents=True)
        cwd.mkdir()
        env = {**os.environ, "OVS_RUNDIR": str(rundir)}
        monkeypatch.setenv("OVS_RUNDIR", str(rundir))
        run(["ovsdb-tool", "create-cluster", "c.db", NB_SCHEMA, "unix:raft.sock"], cwd=cwd)
        proc = subprocess.Popen(
            [*server_cmd(kind), "--remote=punix:nb.sock", "--unixctl=s.ctl",
             "--log-file=s.log", "-vconsole:off", "--no-chdir", "c.db"],
            cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            ctl = str(rundir / "s.ctl")
            deadline = time.monotonic() + 30
            while not (rundir / "s.ctl").exists() or not (rundir / "nb.sock").exists():
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, f"{kind} server did not start"
                time.sleep(0.02)
            dbs = [run(["ovsdb-client", "list-dbs", "unix:nb.sock"], env=env).stdout]
            with Client("unix:nb.sock", timeout=10) as c:
                dbs.append(c.call("list_dbs", []))

            async def idl_sees_the_database() -> list[str]:
                async with Idl("unix:nb.sock", "OVN_Northbound", tables=["NB_Global"],
                               connect_timeout=10) as idl:
                    return sorted(idl.replica.tables)
            dbs.append(asyncio.run(idl_sees_the_database()))
            run(["ovs-appctl", "-t", ctl, "ovsdb-server/add-remote", "punix:two.sock"])
            run(["ovs-appctl", "-t", ctl, "ovsdb-server/add-remote", "punix:gone/x.sock"])
            deadline = time.monotonic() + 5
            while (not (rundir / "two.sock").exists()
                   or "listen failed" not in (cwd / "s.log").read_text()):
                assert time.monotonic() < deadline, f"{kind}: add-remote did nothing"
                time.sleep(0.02)
            status = run(["ovs-appctl", "-t", ctl, "cluster/status", "OVN_Northbound"]).stdout
            listed = run(["ovs-appctl", "-t", ctl, "ovsdb-server/list-remotes"]).stdout
            files = sorted(p.name for p in rundir.iterdir() if p.suffix == ".sock")
            here = sorted(p.name for p in cwd.iterdir() if not p.name.startswith("."))
            errors = [e for e in log_entries(cwd / "s.log", ("stream_unix",), tmp_path / kind)
                      if "binding failed" in e][:1]
            seen[kind] = (dbs, listed, files, here, errors,
                          re.search(r"Address: (.*)", status)[1])  # type: ignore[index]
        finally:
            stop_process(proc)
            if proc.stderr is not None:
                proc.stderr.close()
    assert seen["ours"] == seen["real"]
    dbs, listed, files, here, errors, address = seen["real"]
    assert dbs == ["OVN_Northbound\n_Server\n", ["OVN_Northbound", "_Server"], ["NB_Global"]]
    assert listed == "punix:gone/x.sock\npunix:nb.sock\npunix:two.sock\n"
    assert files == ["nb.sock", "raft.sock", "two.sock"]
    assert here == ["c.db", "s.log"]
    assert errors == ["stream_unix|ERR|DIR/run/gone/x.sock: binding failed: No such file or "
                      "directory"]
    assert address == "unix:raft.sock"
    # Where the run directory has no such socket, both clients say so, naming the remote
    # as given.
    elsewhere = {**os.environ, "OVS_RUNDIR": str(tmp_path)}
    real = run(["ovsdb-client", "list-dbs", "unix:nb.sock"], env=elsewhere,
               cwd=tmp_path / "real" / "run", check=False)
    ours = run([sys.executable, "-m", "pyovsdb", "client", "list-dbs", "unix:nb.sock"],
               env=elsewhere, cwd=tmp_path / "ours" / "run", check=False)
    text = 'failed to connect to "unix:nb.sock" (No such file or directory)\n'
    assert (real.returncode, real.stderr) == (1, f"ovsdb-client: {text}")
    assert (ours.returncode, ours.stderr) == (1, f"pyovsdb client: {text}")
