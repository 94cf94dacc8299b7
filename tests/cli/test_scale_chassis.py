"""The scale harness's simulated chassis against a real Southbound server that goes
away: it reconnects, monitors again from scratch, and keeps its place (its rows, its
claims) as ovn-controller does, instead of sitting on a dead connection."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from pyovsdb.scale.chassis import SimChassis
from pyovsdb.storage.schemafile import load_schema
from pyovsdb.testing import SB_SCHEMA, ServerProcess, create_db


async def _until(check: object, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("kind", ["real", "ours"])
def test_a_chassis_reconnects_after_the_server_restarts(tmp_path: Path, kind: str) -> None:
    db = create_db(kind, tmp_path / "sb.db", SB_SCHEMA)
    srv = ServerProcess(kind, tmp_path, [db], name="sb").start()
    try:
        async def scenario() -> None:
            nonlocal srv
            chassis = SimChassis(0, srv.unix, load_schema(SB_SCHEMA))
            await chassis.start()
            try:
                await _until(lambda: chassis.chassis_uuid is not None
                             and chassis._mine()[2] is not None)
                registered = chassis.chassis_uuid
                srv.stop()
                srv = ServerProcess(kind, tmp_path, [db], name="sb").start()
                await _until(lambda: chassis.reconnects == 1)
                # a fresh replica of the same database: its own rows are back, and it
                # registered nothing twice
                assert chassis.conn is not None and not chassis.conn.closed
                await _until(lambda: chassis._mine()[0] is not None)
                ch, enc, priv = chassis._mine()
                assert ch is not None and ch.uuid == registered
                assert enc is not None and priv is not None
                assert len(chassis.replica["Chassis"].rows) == 1
            finally:
                await chassis.stop()

        asyncio.run(scenario())
    finally:
        srv.stop()
