"""Unix sockets whose paths do not fit a socket address (over 107 bytes), side by side
with the real ovsdb-server: the real tools reach them through their directory
(/proc/self/fd/N/NAME), so a run directory deep in a harness or a container works.
Both servers listen (client socket, control socket, a one-member cluster's Raft
socket), and the real clients and ours reach them."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from procs import NB_SCHEMA, ServerProcess, require, run
from pyovsdb.idl import Idl
from pyovsdb.jsonrpc.client import Client

pytestmark = pytest.mark.interop


def _deep(base: Path, kind: str) -> Path:
    d = base / ("d" * 60) / kind / ("e" * 40)
    d.mkdir(parents=True)
    return d


async def _idl_names(remote: str) -> list[str]:
    async with Idl(remote, "OVN_Northbound", tables={"Logical_Switch": None},
                   connect_timeout=10) as idl:
        return sorted(r.name for r in idl["Logical_Switch"].rows.values())


@pytest.mark.parametrize("kind", ["real", "ours"])
def test_servers_and_clients_on_long_unix_paths(kind: str, tmp_path: Path) -> None:
    require("ovsdb-server", "ovsdb-tool", "ovn-nbctl", "ovs-appctl")
    d = _deep(tmp_path, kind)
    tool = ["ovsdb-tool"] if kind == "real" else [sys.executable, "-m", "pyovsdb", "tool"]
    raft = f"unix:{d}/member-of-the-cluster.raft"
    run([*tool, "create-cluster", str(d / "nb.db"), NB_SCHEMA, raft])
    srv = ServerProcess(kind, d, [str(d / "nb.db")], name="northbound-database")
    assert len(srv.sock) > 107 and len(srv.ctl) > 107
    with srv:
        assert "Role: leader" in srv.appctl("cluster/status", "OVN_Northbound").stdout
        subprocess.run(["ovn-nbctl", f"--db={srv.unix}", "ls-add", "sw0"], check=True,
                       timeout=30)
        with Client(srv.unix, timeout=10) as c:
            got = c.call("transact", ["OVN_Northbound", {
                "op": "select", "table": "Logical_Switch", "where": [],
                "columns": ["name"]}])
        assert got[0]["rows"] == [{"name": "sw0"}]
        assert asyncio.run(_idl_names(srv.unix)) == ["sw0"]
        out = subprocess.run([sys.executable, "-m", "pyovsdb", "client", "list-dbs",
                              srv.unix], capture_output=True, text=True, timeout=30,
                             check=True).stdout
        assert out.split() == ["OVN_Northbound", "_Server"]
