"""Helpers of the IDL suite: the IdlTest schema, servers with it, an out-of-band client
to change the database behind the IDL's back, and running asyncio test bodies."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from procs import ServerProcess, create_db
from pyovsdb.jsonrpc.client import Client
from pyovsdb.ovsdb.schema import DatabaseSchema
from pyovsdb.storage.schemafile import load_schema

SCHEMA_FILE = str(Path(__file__).resolve().parent / "idltest.ovsschema")
SCHEMA: DatabaseSchema = load_schema(SCHEMA_FILE)
DB = "IdlTest"


def arun(coro: Coroutine[Any, Any, Any], timeout: float = 30.0) -> Any:
    """Run an async test body, bounded in time."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


def make_server(kind: str, workdir: Path, name: str = "idl") -> ServerProcess:
    workdir.mkdir(parents=True, exist_ok=True)
    db = create_db(kind, workdir / f"{name}.db", SCHEMA_FILE)
    return ServerProcess(kind, workdir, [db], name=name, tcp=True)


class Direct:
    """A plain JSON-RPC client writing and reading the database, not through the IDL."""

    def __init__(self, remote: str) -> None:
        self.client = Client(remote, timeout=30)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Direct:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def transact(self, *ops: dict[str, Any]) -> list[Any]:
        results = self.client.call("transact", [DB, *ops])
        errors = [r for r in results if isinstance(r, dict) and "error" in r]
        if errors:
            raise AssertionError(f"transaction failed: {errors}")
        return list(results)

    def insert(self, table: str, **row: Any) -> str:
        return str(self.transact({"op": "insert", "table": table, "row": row})[0]["uuid"][1])

    def update(self, table: str, uuid: str, **row: Any) -> None:
        self.transact({"op": "update", "table": table, "row": row,
                       "where": [["_uuid", "==", ["uuid", uuid]]]})

    def delete(self, table: str, uuid: str) -> None:
        self.transact({"op": "delete", "table": table,
                       "where": [["_uuid", "==", ["uuid", uuid]]]})

    def contents(self, table: str, columns: list[str] | None = None) -> dict[str, dict[str, Any]]:
        """{uuid: {column: canonical datum}} as the server holds them."""
        ts = SCHEMA.tables[table]
        cols = columns or list(ts.columns)
        rows = self.transact({"op": "select", "table": table, "where": [],
                              "columns": ["_uuid", *cols]})[0]["rows"]
        return {r["_uuid"][1]: {c: ts.columns[c].type.codec.from_json(r[c]) for c in cols}
                for r in rows}


def replica_contents(idl: Any, table: str) -> dict[str, dict[str, Any]]:
    return {u: dict(r.data) for u, r in idl[table].rows.items()}


async def until(pred: Any, timeout: float = 10.0, what: str = "condition") -> None:
    """Wait (on the running loop) until `pred()` holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)
