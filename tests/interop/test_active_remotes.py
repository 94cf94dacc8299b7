"""Active remotes (`--remote=tcp:IP:PORT`, `ssl:IP:PORT`, and a Connection row whose
target is one), side by side with the real ovsdb-server 3.1: the server connects out
to a real `ovsdb-client` listening (`ptcp:`/`pssl:`), backs off and logs as the real one
does while nobody listens, and reports the remote in the Connection row."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from interop_helpers import wait_until

from procs import NB_SCHEMA, ServerProcess, create_db, free_port, require, run
from pyovsdb.testing_pki import Authority

pytestmark = pytest.mark.interop

KINDS = ("ours", "real")


@pytest.fixture(autouse=True)
def _tools() -> None:
    require("ovsdb-server", "ovsdb-tool", "ovsdb-client", "ovn-nbctl")


def _server(kind: str, d: Path, extra: list[str]) -> ServerProcess:
    d.mkdir(parents=True, exist_ok=True)
    db = create_db(kind, d / "nb.db", NB_SCHEMA)
    return ServerProcess(kind, d, [db], extra=extra).start()


def _reconnect_lines(srv: ServerProcess, port: int) -> list[str]:
    out = []
    for line in Path(srv.logfile).read_text().splitlines():
        if "|reconnect|" in line:
            out.append(line.split("|", 2)[-1].replace(str(port), "P"))
    return out


def _with_connections(kind: str, d: Path) -> tuple[ServerProcess, list[str]]:
    """A server whose remotes are NB_Global's connections, initialized; its ovn-nbctl."""
    srv = _server(kind, d, ["--remote=db:OVN_Northbound,NB_Global,connections"])
    nbctl = ["ovn-nbctl", "--timeout=20", f"--db=unix:{srv.sock}"]
    try:
        run([*nbctl, "init"])
    except BaseException:
        srv.stop()
        raise
    return srv, nbctl


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[dict[str, tuple[ServerProcess, int]]]:
    """Both servers, each with an active `tcp:` remote that nobody listens on yet."""
    out: dict[str, tuple[ServerProcess, int]] = {}
    try:
        for kind in KINDS:
            port = free_port()
            out[kind] = (_server(kind, tmp_path / kind,
                                 [f"--remote=tcp:127.0.0.1:{port}"]), port)
        yield out
    finally:
        for srv, _ in out.values():
            srv.stop()


def test_the_server_connects_out_and_backs_off_as_the_real_one(
        servers: dict[str, tuple[ServerProcess, int]]) -> None:
    """Attempts at 0, 1, 3 and 7 s (refused, with the real lines), then a real client
    listening (`ovsdb-client list-dbs ptcp:`) is reached and answered."""
    for kind, (srv, port) in servers.items():
        assert wait_until(lambda s=srv, p=port: "waiting 4 seconds before reconnect"
                          in "".join(_reconnect_lines(s, p)), timeout=10), kind
    clients = {kind: subprocess.Popen(["ovsdb-client", "--timeout=20", "list-dbs",
                                       f"ptcp:{port}:127.0.0.1"], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
               for kind, (_, port) in servers.items()}
    got = {}
    for kind, client in clients.items():
        out, _ = client.communicate(timeout=30)
        srv, port = servers[kind]
        assert wait_until(lambda s=srv, p=port: "connection closed by peer"
                          in "".join(_reconnect_lines(s, p))), kind
        got[kind] = (client.returncode, out, _reconnect_lines(srv, port)[:12])
    assert got["ours"] == got["real"]
    assert got["ours"][:2] == (0, "OVN_Northbound\n_Server\n")
    assert got["ours"][2][:3] == [
        "reconnect|INFO|tcp:127.0.0.1:P: connecting...",
        "reconnect|INFO|tcp:127.0.0.1:P: connection attempt failed (Connection refused)",
        "reconnect|INFO|tcp:127.0.0.1:P: connecting..."]


def test_an_ssl_remote_connects_out_with_the_servers_certificate(tmp_path: Path) -> None:
    require("openssl")
    ca = Authority(tmp_path / "pki")
    server, manager = ca.issue("server"), ca.issue("manager")
    got = {}
    for kind in KINDS:
        port = free_port()
        srv = _server(kind, tmp_path / kind, [f"--remote=ssl:127.0.0.1:{port}",
                                               *server.options()])
        try:
            p = run(["ovsdb-client", "--timeout=20", *manager.options(), "list-dbs",
                     f"pssl:{port}:127.0.0.1"])
            got[kind] = p.stdout
        finally:
            srv.stop()
    assert got["ours"] == got["real"] == "OVN_Northbound\n_Server\n"


def test_a_connection_rows_active_target_is_reported_not_connected(tmp_path: Path) -> None:
    """`ovn-nbctl set-connection tcp:...` with nobody listening: `is_connected` false
    and the state `BACKOFF` in the row, as the real server writes them."""
    got = {}
    for kind in KINDS:
        srv, nbctl = _with_connections(kind, tmp_path / kind)
        try:
            run([*nbctl, "set-connection", f"tcp:127.0.0.1:{free_port()}"])

            def row(nbctl: list[str] = nbctl) -> str:
                return run([*nbctl, "--columns=is_connected,status", "list",
                            "Connection"]).stdout
            assert wait_until(lambda: "BACKOFF" in row(), timeout=10), (kind, row())
            got[kind] = re.sub(r"\s+", " ", row())
        finally:
            srv.stop()
    assert got["ours"] == got["real"]
    assert "is_connected : false" in got["ours"]


def test_a_rows_max_backoff_is_followed(tmp_path: Path) -> None:
    """`max_backoff=2000` in the Connection row: the attempts of an active target that
    nobody listens on stop doubling at 2 s (and from then on are not logged), on both
    servers."""
    got = {}
    for kind in KINDS:
        srv, nbctl = _with_connections(kind, tmp_path / kind)
        try:
            port = free_port()
            run([*nbctl, "--", "--id=@c", "create", "Connection",
                 f'target="tcp:127.0.0.1:{port}"', "max_backoff=2000", "--", "set",
                 "NB_Global", ".", "connections=@c"])
            assert wait_until(lambda s=srv, p=port: any(
                "suppressing" in x for x in _reconnect_lines(s, p)), timeout=20)
            time.sleep(2.5)  # (attempts go on, unlogged, every 2 s)
            got[kind] = _reconnect_lines(srv, port)
        finally:
            srv.stop()
    assert got["ours"] == got["real"]
