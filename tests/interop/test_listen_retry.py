"""A remote that cannot listen, side by side with the real ovsdb-server: at startup and
when added with `ovsdb-server/add-remote`, both servers log why, keep running and
listen as soon as the port frees up (or the socket directory appears).

Rules kept here:
- The port is held by a plain socket of the test, so the failure is real (EADDRINUSE)
  and freeing it is under the test's control; each server runs on its own port, one
  after the other, since only one of them could take a freed port.
- Compared: the lines of the modules that report a listen failure (their module,
  level and text, each distinct line once; sorted, since the real server opens its
  remotes in its hash order), the reply of add-remote and the remotes listed; then
  each server must accept a connection on the freed port within a few seconds.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import time
from pathlib import Path

from procs import NB_SCHEMA, ServerProcess, create_db, require, run

KINDS = ("ours", "real")
LISTEN_MODULES = ("ovsdb_jsonrpc_server", "socket_util", "stream_unix")
LINE_RE = re.compile(r"^\S+\|\d+\|(?P<module>[^|]+)\|(?P<level>[^|]+)\|(?P<text>.*)$")
ACCEPT_WITHIN = 5.0


def _blocker() -> tuple[socket.socket, int]:
    """A listening socket on an ephemeral loopback port (what "port in use" means)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    return s, int(s.getsockname()[1])


def _listen_lines(srv: ServerProcess, workdir: Path, port: int) -> list[str]:
    """The distinct listen-failure lines of the server's log, sorted, with its port and
    directory replaced so the two servers' lines compare."""
    out: list[str] = []
    for line in Path(srv.logfile).read_text().splitlines():
        m = LINE_RE.match(line)
        if m is None or m["module"] not in LISTEN_MODULES:
            continue
        text = m["text"].replace(str(workdir), "DIR").replace(str(port), "PORT")
        entry = f"{m['module']}|{m['level']}|{text}"
        if entry not in out:
            out.append(entry)
    return sorted(out)


def _wait_log(srv: ServerProcess, needle: str) -> None:
    deadline = time.monotonic() + ACCEPT_WITHIN
    while needle not in Path(srv.logfile).read_text():
        assert time.monotonic() < deadline, f"{srv.kind}: {needle!r} never logged"
        time.sleep(0.05)


def _accepts_tcp(port: int) -> float:
    """Seconds until a connection to the port is accepted (fails after a few)."""
    start = time.monotonic()
    while True:
        with socket.socket() as c:
            try:
                c.connect(("127.0.0.1", port))
                return time.monotonic() - start
            except OSError:
                pass
        assert time.monotonic() - start < ACCEPT_WITHIN, f"port {port} never listened"
        time.sleep(0.05)


def _accepts_unix(path: str) -> None:
    start = time.monotonic()
    while True:
        with socket.socket(socket.AF_UNIX) as c:
            try:
                c.connect(path)
                return
            except OSError:
                pass
        assert time.monotonic() - start < ACCEPT_WITHIN, f"{path} never listened"
        time.sleep(0.05)


def test_startup_remote_that_cannot_listen_is_retried(tmp_path: Path) -> None:
    require("ovsdb-server", "ovsdb-tool")
    seen: dict[str, list[str]] = {}
    for kind in KINDS:
        work = tmp_path / kind
        work.mkdir()
        db = create_db(kind, work / "nb.db", NB_SCHEMA)
        blocker, port = _blocker()
        gone = work / "gone"
        extra = [f"--remote=ptcp:{port}:127.0.0.1", f"--remote=punix:{gone}/x.sock"]
        srv = ServerProcess(kind, work, [db], extra=extra)
        try:
            srv.start()
            _wait_log(srv, f"ptcp:{port}:127.0.0.1: listen failed")
            _wait_log(srv, f"punix:{gone}/x.sock: listen failed")
            time.sleep(0.3)  # a retry or two: still running, still failing
            assert srv.proc is not None and srv.proc.poll() is None
            assert "ptcp:PORT:127.0.0.1" in srv.appctl("ovsdb-server/list-remotes").stdout \
                .replace(str(port), "PORT")
            seen[kind] = _listen_lines(srv, work, port)
            blocker.close()
            _accepts_tcp(port)
            os.mkdir(gone)
            _accepts_unix(f"{gone}/x.sock")
            assert srv.proc.poll() is None
        finally:
            blocker.close()
            srv.stop()
    assert seen["ours"] == seen["real"]
    assert "ovsdb_jsonrpc_server|ERR|ptcp:PORT:127.0.0.1: listen failed: Address already " \
        "in use" in seen["real"]
    assert "ovsdb_jsonrpc_server|ERR|punix:DIR/gone/x.sock: listen failed: No such file " \
        "or directory" in seen["real"]


def test_added_remote_that_cannot_listen_is_retried(tmp_path: Path) -> None:
    require("ovsdb-server", "ovsdb-tool", "ovs-appctl")
    replies: dict[str, tuple[int, str, str, str]] = {}
    seen: dict[str, list[str]] = {}
    for kind in KINDS:
        work = tmp_path / kind
        work.mkdir()
        db = create_db(kind, work / "nb.db", NB_SCHEMA)
        blocker, port = _blocker()
        srv = ServerProcess(kind, work, [db])
        try:
            srv.start()
            target = f"ptcp:{port}:127.0.0.1"
            p = srv.appctl("ovsdb-server/add-remote", target, check=False)
            _wait_log(srv, f"{target}: listen failed")
            listed = srv.appctl("ovsdb-server/list-remotes").stdout
            replies[kind] = (p.returncode, p.stdout, p.stderr,
                             listed.replace(str(port), "PORT").replace(str(work), "DIR"))
            time.sleep(0.3)
            assert srv.proc is not None and srv.proc.poll() is None
            seen[kind] = _listen_lines(srv, work, port)
            blocker.close()
            _accepts_tcp(port)
            assert srv.proc.poll() is None
        finally:
            blocker.close()
            srv.stop()
    assert replies["ours"] == replies["real"]
    assert replies["real"][:3] == (0, "", "")
    assert seen["ours"] == seen["real"]


def test_remote_we_cannot_serve_is_refused_in_one_line(tmp_path: Path) -> None:
    """Unlike a listener that fails, a name of no kind cannot start working later:
    startup stops with one line naming it. (An active remote nobody listens on is
    tried again: tests/interop/test_active_remotes.py.)"""
    db = create_db("ours", tmp_path / "nb.db", NB_SCHEMA)
    for remote, why in (("foo:bar", 'unknown remote type "foo"'),):
        p = run([sys.executable, "-m", "pyovsdb", "server", "--no-chdir", "--unixctl=none",
                 "-vconsole:off", f"--remote={remote}", db], check=False, timeout=20)
        assert (p.returncode, p.stderr) == (1, f"ovsdb-server: {remote}: {why}\n")


def test_listen_failures_are_rate_limited_as_the_real_server(tmp_path: Path) -> None:
    """VLOG_RATE_LIMIT_INIT(1, 5) at each call site: while a remote keeps failing, a
    burst of five lines and then one a minute, so both servers log it five times in
    the first seconds (ours logged one a second after the burst)."""
    require("ovsdb-server", "ovsdb-tool")
    blocker, port = _blocker()
    servers = []
    try:
        for kind in KINDS:
            work = tmp_path / kind
            work.mkdir()
            db = create_db(kind, work / "nb.db", NB_SCHEMA)
            srv = ServerProcess(kind, work, [db], extra=[f"--remote=ptcp:{port}:127.0.0.1"])
            servers.append(srv)
            srv.start()
        time.sleep(4.5)  # the burst is spent within a few retries; then a minute's wait
        counts = {srv.kind: Path(srv.logfile).read_text().count(
            f"ptcp:{port}:127.0.0.1: listen failed") for srv in servers}
    finally:
        blocker.close()
        for srv in servers:
            srv.stop()
    assert counts == {"ours": 5, "real": 5}, counts
