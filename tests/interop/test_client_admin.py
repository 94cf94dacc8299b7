"""`pyovsdb client` convert, needs-conversion, wait, backup, restore and lock/steal/
unlock side by side with the real `ovsdb-client`, on our server and the real one: the
same output, errors and exit statuses (log lines compared without their time), files
written by one read by the other."""

from __future__ import annotations

import io
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from types import SimpleNamespace

import pytest
from interop_helpers import dump_json, label_uuids, nbctl, wait_until

from procs import NB_SCHEMA, ServerProcess, create_db, require
from pyovsdb.cli import client, client_admin
from pyovsdb.util import vlog

pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("own_vlog")]

DB = "OVN_Northbound"
_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\|", re.M)


@pytest.fixture(autouse=True)
def _tools() -> None:
    require("ovsdb-client", "ovn-nbctl", "ovs-appctl")




def real(*args: str, stdin: bytes | None = None) -> tuple[int, bytes, str]:
    """The real client; `stdin` comes from a file (`restore` seeks in its input)."""
    with tempfile.TemporaryFile() as f:
        f.write(stdin or b"")
        f.seek(0)
        p = subprocess.run(["ovsdb-client", *args], stdin=f, capture_output=True,
                           timeout=30)
    return p.returncode, p.stdout, _STAMP.sub("", p.stderr.decode())


def ours(*args: str, stdin: bytes | None = None) -> tuple[int, bytes, str]:
    """Our client in this process (`wait` ends by SystemExit, as the real one exits);
    its log lines are numbered from 1, as in a process of its own."""
    vlog.current().seq = 0
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.StringIO()
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin or b""), encoding="utf-8")
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                rc = client.main(list(args))
            except SystemExit as e:
                rc = int(e.code or 0)
        out.flush()
    finally:
        sys.stdin = saved
    assert isinstance(out.buffer, io.BytesIO)
    text = _STAMP.sub("", err.getvalue()).replace("pyovsdb client: ", "ovsdb-client: ")
    return rc, out.buffer.getvalue(), text


def same(*args: str, stdin: bytes | None = None) -> tuple[int, bytes, str]:
    """Run both clients; they must agree. Returns what they did."""
    theirs = real(*args, stdin=stdin)
    assert ours(*args, stdin=stdin) == theirs, args
    return theirs


NB_TXN = [DB, {"op": "insert", "table": "NB_Global", "row": {}},
          {"op": "insert", "table": "Logical_Switch", "row": {
              "name": "sw0", "ports": ["named-uuid", "p"],
              "external_ids": ["map", [["a", "b"]]]}},
          {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "p",
           "row": {"name": "p0", "addresses": "00:00:00:00:00:01 10.0.0.1"}},
          {"op": "insert", "table": "Logical_Switch", "row": {"name": "sw1"}},
          {"op": "insert", "table": "Logical_Router", "row": {"name": "lr0"}}]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ServerProcess]]:
    """Our server and the real one, each with the rows of NB_TXN; shared by the tests
    of this module, each of which leaves them with those rows (and the schema)."""
    require("ovsdb-server", "ovsdb-tool")
    servers: dict[str, ServerProcess] = {}
    try:
        for kind in ("ours", "real"):
            d = tmp_path_factory.mktemp(kind)
            db = create_db(kind, d / "db.db", NB_SCHEMA)
            servers[kind] = ServerProcess(kind, d, [db], name="db", tcp=True).start()
            rc, out, err = real("transact", servers[kind].unix, json.dumps(NB_TXN))
            assert rc == 0 and b'"error"' not in out, err
        yield servers
    finally:
        for srv in servers.values():
            srv.stop()


def schema_file(path: Path, version: str, extra_column: bool = True) -> str:
    schema = json.loads(Path(NB_SCHEMA).read_text())
    schema["version"] = version
    if extra_column:
        schema["tables"]["Logical_Switch"]["columns"]["extra"] = {
            "type": {"key": "string", "min": 0, "max": 1}}
    path.write_text(json.dumps(schema))
    return str(path)


def test_convert_needs_conversion_and_wait(pair: dict[str, ServerProcess],
                                           tmp_path: Path) -> None:
    """On either server: `needs-conversion` answers yes/no as the real client does,
    `convert` (ours, then the real one back) changes the schema keeping the rows,
    `wait` returns at once for a reached state; bad arguments and files, the same
    errors. The servers' conversion and compaction leave the file with the mode of a
    new file, whatever it had."""
    umask = os.umask(0)
    os.umask(umask)  # the servers' too
    new = schema_file(tmp_path / "new.ovsschema", "7.0.1")
    (tmp_path / "bad.json").write_text("root:x:0:0")
    for srv in pair.values():
        u = srv.unix
        assert same("needs-conversion", u, new)[:2] == (0, b"yes\n")
        assert same("needs-conversion", u, NB_SCHEMA)[:2] == (0, b"no\n")
        for args in (["needs-conversion", u, str(tmp_path / "missing")],
                     ["needs-conversion", u, str(tmp_path / "bad.json")],
                     ["convert", u, str(tmp_path / "missing")], ["convert"],
                     ["convert", "a", "b", "c"], ["wait", u, DB, "bogus"], ["wait", DB],
                     ["wait", "a", "b", "c", "d"]):
            assert same(*args)[0] == 1
        path = Path(srv.dbs[0])
        path.chmod(0o604)
        assert ours("convert", u, new) == (0, b"", "")
        assert same("get-schema-version", u, DB)[:2] == (0, b"7.0.1\n")
        # The server wrote the file anew: mode 0660 less its umask, as a new file.
        assert stat.S_IMODE(path.stat().st_mode) == 0o660 & ~umask
        path.chmod(0o604)
        srv.appctl("ovsdb-server/compact")
        assert stat.S_IMODE(path.stat().st_mode) == 0o660 & ~umask
        rows = dump_json(u, DB, "Logical_Switch", "name", "extra")[0]["data"]
        assert sorted(rows) == [[["set", []], "sw0"], [["set", []], "sw1"]]
        assert same("needs-conversion", u, new)[:2] == (0, b"no\n")
        assert real("convert", u, NB_SCHEMA)[0] == 0
        for args in (["wait", u, DB, "added"], ["wait", u, DB, "connected"],
                     ["wait", u, "Nope", "removed"]):
            assert same(*args) == (0, b"", f"00001|reconnect|INFO|{u}: connecting...\n"
                                            f"00002|reconnect|INFO|{u}: connected\n")
    # A database the server does not have: the real client crashes (SIGSEGV), ours
    # reports the server's answer.
    other = tmp_path / "other.ovsschema"
    other.write_text(Path(NB_SCHEMA).read_text().replace(DB, "Other", 1))
    rc, _, err = ours("convert", pair["ours"].unix, str(other))
    assert rc == 1 and err.startswith('ovsdb-client: transaction returned error: '
                                      '{"details":"convert request specifies unknown '
                                      'database Other"')


def test_wait_retries_until_the_server_is_up(tmp_path: Path) -> None:
    """`wait` on a server that is not there yet keeps trying, with the real backoff
    and log lines, and returns once the database is there (the upgrade scripts start
    the server, then wait for it)."""
    require("ovsdb-server", "ovsdb-tool")
    u = f"unix:{tmp_path / 'db.sock'}"
    logs = {kind: tmp_path / f"{kind}.err" for kind in ("real", "ours")}
    waiters = {}
    for kind, cmd in (("real", ["ovsdb-client"]),
                      ("ours", [sys.executable, "-m", "pyovsdb", "client"])):
        with open(logs[kind], "wb") as err:
            waiters[kind] = subprocess.Popen([*cmd, "-t", "20", "wait", u, DB, "connected"],
                                             stdout=subprocess.PIPE, stderr=err)
    try:
        assert wait_until(lambda: all(b"attempt failed" in f.read_bytes()
                                      for f in logs.values()), 10)
        # The real server: it is up well before the clients' retry after a second.
        db = create_db("real", tmp_path / "nb.db", NB_SCHEMA)
        with ServerProcess("real", tmp_path, [db], name="db"):
            seen = {}
            for kind, p in waiters.items():
                out, _ = p.communicate(timeout=20)
                seen[kind] = (p.returncode, out, _STAMP.sub("", logs[kind].read_text()))
    finally:
        for p in waiters.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    assert seen["ours"] == seen["real"] == (0, b"", (
        f"00001|reconnect|INFO|{u}: connecting...\n"
        f"00002|reconnect|INFO|{u}: connection attempt failed (No such file or directory)\n"
        f"00003|reconnect|INFO|{u}: connecting...\n"
        f"00004|reconnect|INFO|{u}: connected\n"))


def test_wait_backs_off_then_goes_quiet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    """With no server, `wait` retries after 1, 2 and 4 s, then every 8 s, logging as
    lib/reconnect.c does: once at the maximum backoff, neither the attempts nor their
    failures (the seconds pass in the test, not on the clock)."""
    u = f"unix:{tmp_path / 'none.sock'}"
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 6:
            raise SystemExit(9)

    monkeypatch.setattr(client_admin, "time", SimpleNamespace(
        sleep=sleep, monotonic=time.monotonic, time=time.time))
    rc, out, err = ours("wait", u, DB, "connected")
    failed = f"reconnect|INFO|{u}: connection attempt failed (No such file or directory)"
    assert (rc, out, sleeps) == (9, b"", [1, 2, 4, 8, 8, 8])
    assert err.splitlines() == [f"{n:05d}|{line}" for n, line in enumerate([
        f"reconnect|INFO|{u}: connecting...", failed,
        f"reconnect|INFO|{u}: connecting...", failed,
        f"reconnect|INFO|{u}: waiting 2 seconds before reconnect",
        f"reconnect|INFO|{u}: connecting...", failed,
        f"reconnect|INFO|{u}: waiting 4 seconds before reconnect",
        f"reconnect|INFO|{u}: connecting...", failed,
        f"reconnect|INFO|{u}: continuing to reconnect in the background but "
        "suppressing further logging"], 1)]


def backup_records(data: bytes) -> list[bytes]:
    return [re.sub(rb'"_date":\d+', b'"_date":0', line) for line in data.split(b"\n")[1::2]]


def test_backup_and_restore(pair: dict[str, ServerProcess], tmp_path: Path) -> None:
    """`backup` from either server: the real client's file byte for byte (but the
    date), which the real tool reads; `restore` of it after changes brings the rows
    back (with new UUIDs, references between them kept); a backup of another schema
    version is refused unless --force, with the real texts."""
    backups = {}
    for kind, srv in pair.items():
        u = srv.unix
        rc, theirs, _ = real("backup", u)
        assert rc == 0
        rc, mine, err = ours("backup", u)
        assert (rc, err) == (0, "")
        assert backup_records(mine) == backup_records(theirs), kind
        backups[kind] = mine
        path = tmp_path / f"{kind}.backup"
        path.write_bytes(mine)
        show = subprocess.run(["ovsdb-tool", "show-log", str(path)], capture_output=True,
                              text=True, check=True).stdout
        assert 'record 1: ' in show and '"produced by "ovsdb-client backup""' in show

        before = label_uuids(dump_json(u, DB))
        nbctl(srv, "ls-del", "sw1", "--", "ls-add", "sw9", "--", "lsp-del", "p0")
        assert ours("restore", u, stdin=mine) == (0, b"", "")
        assert label_uuids(dump_json(u, DB)) == before
        # The real client restores our backup the same way.
        nbctl(srv, "ls-del", "sw0")
        assert real("restore", u, stdin=mine) == (0, b"", "")
        assert label_uuids(dump_json(u, DB)) == before

    u = pair["ours"].unix
    for version, extra in (("7.0.2", False), ("7.0.0", True)):
        other = tmp_path / f"other-{version}.db"
        create_db("real", other, schema_file(tmp_path / f"{version}.ovsschema", version,
                                             extra))
        data = other.read_bytes()
        rc, _, err = same("restore", u, stdin=data)
        assert rc == 1 and "(use --force to override differences" in err
        rc, _, err = same("--force", "restore", u, stdin=data)  # an empty backup
        assert rc == 0 and "|ovsdb_client|INFO|backup schema" in err
    assert dump_json(u, DB, "Logical_Switch")[0]["data"] == []
    for data in (b"", b"garbage\n"):
        assert same("restore", u, stdin=data)[0] == 1
    assert ours("restore", u, stdin=backups["ours"])[0] == 0  # as the fixture had it


def _lock_run(cmd: list[str], srv: ServerProcess, run: Path, env: dict[str, str]
              ) -> tuple[str, str]:
    """The lock scenario with `cmd`: a detached client takes L and serves its control
    socket; a second one queues for L; the first unlocks (the second gets L) and asks
    again (and queues); the second goes away (the first gets L back) and the first
    exits. Returns what each one printed."""
    first, second = run / "first.out", run / "second.out"
    with open(first, "wb") as f:
        p = subprocess.run([*cmd, "--detach", "--pidfile", "--no-chdir", "lock", srv.unix,
                            "L"], stdout=f, stderr=subprocess.PIPE, env=env, timeout=30)
    assert p.returncode == 0, p.stderr
    pid = int((run / "ovsdb-client.pid").read_text())
    assert (run / f"ovsdb-client.{pid}.ctl").exists()

    def appctl(*args: str) -> None:
        subprocess.run(["ovs-appctl", "-t", "ovsdb-client", *args], env=env, check=True,
                       capture_output=True, timeout=10)

    with open(second, "wb") as f:
        waiter = subprocess.Popen([*cmd, "-vconsole:off", "lock", srv.unix, "L"], stdout=f,
                                  env=env)
    try:
        assert wait_until(lambda: second.read_text() == '{"locked":false}\n', 10)
        appctl("unlock", "L")
        assert wait_until(lambda: second.read_text().endswith('locked\n["L"]\n'), 10)
        appctl("lock", "L")
        assert wait_until(lambda: first.read_text().endswith('{"locked":false}\n'), 10)
    finally:
        waiter.terminate()
        waiter.wait(10)
    assert wait_until(lambda: first.read_text().endswith('locked\n["L"]\n'), 10)
    appctl("exit")
    assert wait_until(lambda: not (run / "ovsdb-client.pid").exists(), 10)
    assert not (run / f"ovsdb-client.{pid}.ctl").exists()
    return first.read_text(), second.read_text()


def test_lock_steal_unlock(tmp_path: Path) -> None:
    """`lock` with --detach and the control socket's unlock/lock/exit, a second client
    queued behind it; `steal` ended by OVS_CTL_TIMEOUT (the reply, the real fatal_signal line, death
    by SIGALRM): the same from both clients."""
    require("ovsdb-server", "ovsdb-tool")
    db = create_db("real", tmp_path / "nb.db", NB_SCHEMA)
    clients = {"real": ["ovsdb-client"], "ours": [sys.executable, "-m", "pyovsdb", "client"]}
    with ServerProcess("real", tmp_path, [db], name="db") as srv:
        # The timeout from the environment, as the real tools take it.
        steals = {kind: subprocess.Popen([*cmd, "steal", srv.unix, f"S{kind}"],
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True, env={**os.environ, "OVS_CTL_TIMEOUT": "1"})
                  for kind, cmd in clients.items()}
        seen: dict[str, tuple[str, ...]] = {}
        for kind, cmd in clients.items():
            run = tmp_path / kind
            run.mkdir()
            seen[kind] = _lock_run(cmd, srv, run, {**os.environ, "OVS_RUNDIR": str(run)})
        for kind, p in steals.items():
            out, err = p.communicate(timeout=30)
            seen[kind] += (str(p.returncode), out, _STAMP.sub("", err))
    assert seen["ours"] == seen["real"]
    assert seen["real"] == (
        '{"locked":true}\n{}\n{"locked":false}\nlocked\n["L"]\n',
        '{"locked":false}\nlocked\n["L"]\n',
        "-14", '{"locked":true}\n',
        "00001|fatal_signal|WARN|terminating with signal 14 (Alarm clock)\n")


def test_lock_in_process_until_the_server_goes(tmp_path: Path) -> None:
    """`lock` run in this process, ended by the server going away: the real client's
    output, error and exit status, and every file descriptor it opened (its socket, the
    standard output it saves for a daemon) closed again."""
    require("ovsdb-server", "ovsdb-tool")
    db = create_db("real", tmp_path / "nb.db", NB_SCHEMA)
    outs = {kind: tmp_path / f"{kind}.out" for kind in ("real", "ours")}
    with ServerProcess("real", tmp_path, [db], name="db") as srv:
        with open(outs["real"], "wb") as f:
            theirs = subprocess.Popen(["ovsdb-client", "lock", srv.unix, "R"], stdout=f,
                                      stderr=subprocess.PIPE)

        def stop_once_both_locked() -> None:
            wait_until(lambda: all(f.exists() and f.read_bytes() == b'{"locked":true}\n'
                                   for f in outs.values()), 10)
            srv.appctl("exit")  # ends both, whatever they did

        fds = sorted(os.listdir("/proc/self/fd"))
        saved = os.dup(1)  # the command writes its lines to the file descriptor
        out = os.open(outs["ours"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, 1)
        os.close(out)
        stopper = threading.Thread(target=stop_once_both_locked)
        stopper.start()
        try:
            rc, _, err = ours("lock", srv.unix, "O")
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            stopper.join()
        assert sorted(os.listdir("/proc/self/fd")) == fds
        _, real_err = theirs.communicate(timeout=10)
    assert (rc, outs["ours"].read_text(), err) == (
        theirs.returncode, outs["real"].read_text(), _STAMP.sub("", real_err.decode()))
    assert rc == 1 and err == f"ovsdb-client: {srv.unix}: receive failed (End of file)\n"
