"""A database added at run time (`ovsdb-server/add-db`), side by side with the real
ovsdb-server 3.1: a client that did not call `set_db_change_aware` gets no `_Server`
update for it (it is disconnected, to reconnect and find it, with the real line), and a
db-change-aware one gets the new `Database` row."""

from __future__ import annotations

from pathlib import Path

import pytest

from procs import NB_SCHEMA, SB_SCHEMA, ServerProcess, create_db, require
from rawrpc import Rpc

pytestmark = pytest.mark.interop


def _updates(rpc: Rpc) -> list[str] | None:
    """The names in the `_Server` updates received within a second; None if the
    server closed the connection instead."""
    names: list[str] = []
    while True:
        msg = rpc.receive(timeout=1)
        if msg is None:
            return None if rpc.eof else names
        for row in msg["params"][1].get("Database", {}).values():
            names.append(row.get("insert", {}).get("name", "?"))


def test_a_database_added_at_run_time(tmp_path: Path) -> None:
    require("ovsdb-server", "ovsdb-tool")
    got = {}
    for kind in ("ours", "real"):
        d = tmp_path / kind
        d.mkdir()
        srv = ServerProcess(kind, d, [create_db(kind, d / "nb.db", NB_SCHEMA)]).start()
        try:
            sb = create_db(kind, d / "sb.db", SB_SCHEMA)
            aware, unaware = Rpc(srv.unix), Rpc(srv.unix)
            aware.call("set_db_change_aware", [True])
            for rpc in (aware, unaware):
                rpc.call("monitor_cond", ["_Server", "m", {"Database": [{"columns": ["name"]}]}])
            srv.appctl("ovsdb-server/add-db", sb)
            got[kind] = (_updates(aware), _updates(unaware),
                         [line.split("|", 2)[-1] for line in
                          Path(srv.logfile).read_text().splitlines() if "disconnecting" in line])
            aware.close()
            unaware.close()
        finally:
            srv.stop()
    assert got["ours"] == got["real"]
    assert got["ours"][:2] == (["OVN_Southbound"], None)
