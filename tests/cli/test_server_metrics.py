"""`pyovsdb server --metrics=ptcp:PORT[:IP]`: real clients' transactions, sessions and
monitors counted, a clustered database's Raft state, read back with the parsers of
Prometheus's own client library in both exposition formats; bad HTTP requests and bad
targets refused without harm to the database clients."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pyovsdb.testing import (
    NB_SCHEMA,
    ServerProcess,
    free_port,
    metrics_port,
    run,
    sample,
    scrape_metrics,
    stop_process,
)

VSWITCH = "/usr/share/openvswitch/vswitch.ovsschema"

pytestmark = pytest.mark.interop


def _transact(sock: str, *ops: dict[str, Any]) -> Any:
    out = run(["ovsdb-client", "transact", f"unix:{sock}",
               json.dumps(["Open_vSwitch", *ops])]).stdout
    return json.loads(out)


@pytest.fixture
def server(tmp_path: Path):  # type: ignore[no-untyped-def]
    run(["ovsdb-tool", "create", str(tmp_path / "conf.db"), VSWITCH])
    raft = f"tcp:127.0.0.1:{free_port()}"
    run(["ovsdb-tool", "create-cluster", str(tmp_path / "nb.db"), NB_SCHEMA, raft])
    s = ServerProcess("ours", tmp_path, ["conf.db", "nb.db"], name="db",
                      extra=["--metrics=ptcp:0:127.0.0.1"])
    s.start()
    try:
        yield s
    finally:
        s.stop()


def test_real_clients_counted_and_read_back_as_prometheus_reads_them(server: ServerProcess
                                                                     ) -> None:
    port = metrics_port(server.logfile)
    # (Open_vSwitch is a root table: its row stays without references)
    assert _transact(server.sock, {"op": "insert", "table": "Open_vSwitch",
                                   "row": {}})[0]["uuid"]
    assert len(_transact(server.sock, {"op": "select", "table": "Open_vSwitch",
                                       "where": []})[0]["rows"]) == 1
    aborted = _transact(server.sock, {"op": "abort"})
    assert aborted[0]["error"] == "aborted"
    nbctl = ["ovn-nbctl", f"--db={server.unix}", "--no-wait", "--no-leader-only"]
    run([*nbctl, "ls-add", "sw0"])
    monitor = subprocess.Popen(["ovsdb-client", "monitor", server.unix, "Open_vSwitch",
                                "Open_vSwitch", "ovs_version"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            om = scrape_metrics(port, openmetrics=True)
            if sample(om, "ovsdb_server_monitors", db="Open_vSwitch") == 1:
                break
            assert time.monotonic() < deadline, "the monitor never showed"
            time.sleep(0.05)
        text = scrape_metrics(port, openmetrics=False)
        for samples in (om, text):
            total = "ovsdb_server_transactions_total"
            assert sample(samples, total, db="Open_vSwitch", result="ok") == 2
            assert sample(samples, total, db="Open_vSwitch", result="error") == 1
            assert sample(samples, total, db="OVN_Northbound", result="ok") >= 1
            hist = "ovsdb_server_transaction_duration_seconds"
            assert sample(samples, hist + "_count", db="Open_vSwitch") == 3
            assert sample(samples, hist + "_bucket", db="Open_vSwitch", le="+Inf") == 3
            assert 0 < sample(samples, hist + "_sum", db="Open_vSwitch") < 30
            assert sample(samples, "ovsdb_server_sessions") >= 1
            assert sample(samples, "ovsdb_server_db_rows", db="Open_vSwitch") == 1
            assert sample(samples, "ovsdb_server_db_file_bytes", db="Open_vSwitch") > 0
            role = "ovsdb_server_raft_role"
            assert sample(samples, role, db="OVN_Northbound", role="leader") == 1
            assert sample(samples, role, db="OVN_Northbound", role="follower") == 0
            assert sample(samples, "ovsdb_server_raft_term", db="OVN_Northbound") >= 1
            commit = sample(samples, "ovsdb_server_raft_commit_index", db="OVN_Northbound")
            assert commit >= 2  # (the cluster's creation, the switch)
            assert sample(samples, "ovsdb_server_raft_applied_index",
                           db="OVN_Northbound") == commit
            assert sample(samples, "ovsdb_server_raft_elections_total",
                           db="OVN_Northbound") >= 1
        # The database clients were not disturbed by the scrapes.
        assert "sw0" in run([*nbctl, "ls-list"]).stdout
    finally:
        stop_process(monitor)


def _raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def test_bad_requests_answered_and_the_server_goes_on(server: ServerProcess) -> None:
    port = metrics_port(server.logfile)
    assert _raw(port, b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n").startswith(
        b"HTTP/1.1 404 ")
    assert _raw(port, b"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n").startswith(
        b"HTTP/1.1 405 ")
    assert _raw(port, b"hello there\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    assert _raw(port, b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 20000).startswith(
        b"HTTP/1.1 400 ")
    head = _raw(port, b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    whole = _raw(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and head.endswith(b"\r\n\r\n")
    length = int(re.search(rb"Content-Length: (\d+)", head).group(1))  # type: ignore[union-attr]
    assert whole.startswith(b"HTTP/1.1 200 ")
    assert len(whole.split(b"\r\n\r\n", 1)[1]) >= length > 0
    assert "Open_vSwitch" in run(["ovsdb-client", "list-dbs", server.unix]).stdout


def test_bad_targets_refused(tmp_path: Path) -> None:
    run(["ovsdb-tool", "create", str(tmp_path / "conf.db"), VSWITCH])
    for target, said in (("tcp:1", "the metrics endpoint takes ptcp:PORT[:IP]"),
                         ("ptcp:http", "bad port 'http'"), ("ptcp:70000", "bad port 70000")):
        res = run([sys.executable, "-m", "pyovsdb", "server", "conf.db", f"--metrics={target}",
                   "--no-chdir", "-vconsole:off", f"--pidfile={tmp_path / 'x.pid'}",
                   f"--remote=punix:{tmp_path / 'x.sock'}"], check=False, cwd=tmp_path)
        assert res.returncode == 1 and f"--metrics={target}: {said}" in res.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        res = run([sys.executable, "-m", "pyovsdb", "server", "conf.db",
                   f"--metrics=ptcp:{port}:127.0.0.1", "--no-chdir", "-vconsole:off",
                   f"--pidfile={tmp_path / 'y.pid'}", f"--log-file={tmp_path / 'y.log'}",
                   f"--unixctl={tmp_path / 'y.ctl'}",
                   f"--remote=punix:{tmp_path / 'y.sock'}"], check=False, cwd=tmp_path)
        assert res.returncode != 0
        assert f"--metrics=ptcp:{port}:127.0.0.1: " in res.stderr + \
            (tmp_path / "y.log").read_text()
