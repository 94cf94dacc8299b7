"""The safety net for bugs: a request whose handler raises something unexpected is
answered with an "internal error" reply and its connection is closed, while the server
and other sessions go on. Run in-process with a handler made to fail, since no known
input makes one fail any more.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import orjson
import pytest
from robust_helpers import DB, SCHEMA

from procs import create_db
from pyovsdb.jsonrpc.stream import JsonStream
from pyovsdb.server import methods
from pyovsdb.server.server import Server


async def _talk(sock: str, data: bytes, until_close: bool, n: int = 1) -> list[Any]:
    reader, writer = await asyncio.open_unix_connection(sock)
    writer.write(data)
    stream = JsonStream()
    msgs: list[Any] = []
    try:
        while until_close or len(msgs) < n:
            chunk = await asyncio.wait_for(reader.read(65536), 10)
            if not chunk:
                break
            msgs += stream.feed(chunk)
    finally:
        writer.close()
    return msgs


def test_handler_failure_is_answered_and_contained(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    db = create_db("ours", tmp_path / "r.db", SCHEMA)
    sock = str(tmp_path / "s.sock")

    def broken(session: Any, params: list[Any], msg_id: Any) -> Any:
        raise RuntimeError("simulated bug")

    monkeypatch.setitem(methods.HANDLERS, "get_server_id", broken)

    async def main() -> None:
        server = Server()
        try:
            server.add_db_file(db)
            await server.listeners.add(f"punix:{sock}")
            bystander = asyncio.create_task(_talk(sock, b"".join(orjson.dumps(
                {"method": "transact", "params": [DB, {"op": "insert", "table": "Txn",
                                                       "row": {"tag": f"ok-{i}"}}],
                 "id": i}) for i in range(3)), until_close=False, n=3))
            # the failing request comes after a committed transaction in the same read:
            # that one is still answered, then the error, then the connection closes
            got = await _talk(sock, orjson.dumps(
                {"method": "transact", "params": [DB, {"op": "insert", "table": "Txn",
                                                       "row": {"tag": "before"}}],
                 "id": "t"}) + orjson.dumps(
                {"method": "get_server_id", "params": [], "id": "boom"}) + orjson.dumps(
                {"method": "echo", "params": [], "id": "never"}), until_close=True)
            assert [m["id"] for m in got] == ["t", "boom"], got
            assert got[1]["error"]["error"] == "internal error"
            assert "uuid" in got[0]["result"][0]
            assert len(await bystander) == 3
            after = await _talk(sock, orjson.dumps(
                {"method": "transact", "params": [DB, {"op": "select", "table": "Txn",
                                                       "where": [], "columns": ["tag"]}],
                 "id": 1}), until_close=False)
            tags = sorted(r["tag"] for r in after[0]["result"][0]["rows"])
            assert tags == ["before", "ok-0", "ok-1", "ok-2"]
        finally:
            server.close()

    with caplog.at_level(logging.ERROR):
        asyncio.run(main())
    assert any("internal error handling request get_server_id" in r.getMessage()
               for r in caplog.records)


def test_a_wait_that_fails_at_once_took_no_time_however_slow_the_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `wait` with timeout 0 whose rows differ fails with ovsdb-server's "where"
    clause message: its first execution is at the transaction's start, even when the
    server's clock moved while it read the request (here 7 ms per reading)."""
    from pyovsdb.server import server as server_module

    readings = iter(range(0, 10**9, 7))
    monkeypatch.setattr(server_module, "monotonic_ms", lambda: float(next(readings)))
    db = create_db("ours", tmp_path / "w.db", SCHEMA)
    sock = str(tmp_path / "w.sock")

    async def main() -> None:
        server = Server()
        try:
            server.add_db_file(db)
            await server.listeners.add(f"punix:{sock}")
            got = await _talk(sock, orjson.dumps(
                {"method": "transact", "params": [DB, {
                    "op": "wait", "table": "Txn", "where": [], "columns": ["tag"],
                    "until": "==", "rows": [{"tag": "never"}], "timeout": 0}],
                 "id": 1}), until_close=False)
            assert got[0]["result"] == [{"error": "timed out",
                                         "details": '"where" clause test failed'}], got
        finally:
            server.close()

    asyncio.run(main())
