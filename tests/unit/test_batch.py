"""Output batching (`util.batch`) on a real connection: what one burst of input causes
leaves in one write per connection, storage first, including what a storage flush
sends (a clustered member applying the entries a message committed: the update, the
_Server update and the reply of one transaction)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from pyovsdb.jsonrpc.connection import Connection
from pyovsdb.jsonrpc.stream import JsonStream
from pyovsdb.util import batch


class _Conn(Connection):
    def on_message(self, kind: str, msg: dict[str, Any]) -> None:
        pass


async def _burst(storage_sends: bool) -> tuple[list[bytes], list[str], list[Any]]:
    loop = asyncio.get_running_loop()
    ours, peer = socket.socketpair()
    conn = _Conn("test")
    await loop.connect_accepted_socket(lambda: conn, ours)
    assert conn.transport is not None
    writes: list[bytes] = []
    real_write = conn.transport.write

    def write(data: Any) -> None:
        writes.append(bytes(data))
        real_write(data)

    conn.transport.write = write  # type: ignore[method-assign]
    events: list[str] = []

    def storage_flush() -> None:
        events.append("storage")
        if storage_sends:
            conn.send({"method": "update3", "params": [1]})
            conn.send({"method": "update2", "params": [2]})
            conn.send({"id": 7, "result": [], "error": None})

    batch.begin()
    try:
        conn.send({"method": "echo", "params": [], "id": "first"})
        batch.defer_storage(conn, storage_flush)
        assert writes == []  # nothing leaves while the batch is open
    finally:
        batch.end()
    events.append(f"writes={len(writes)}")
    peer.setblocking(False)
    stream, got = JsonStream(), []
    want = 4 if storage_sends else 1
    while len(got) < want:
        await asyncio.sleep(0.01)
        try:
            got += stream.feed(peer.recv(65536))
        except BlockingIOError:
            continue
    conn.close()
    peer.close()
    return writes, events, got


def test_storage_flush_sends_join_the_burst_write() -> None:
    writes, events, got = asyncio.run(_burst(storage_sends=True))
    assert events == ["storage", "writes=1"]
    assert len(writes) == 1
    assert [m.get("method", m.get("id")) for m in got] == ["echo", "update3", "update2", 7]


def test_plain_burst_is_one_write() -> None:
    writes, events, got = asyncio.run(_burst(storage_sends=False))
    assert events == ["storage", "writes=1"] and len(writes) == 1
    assert got[0]["id"] == "first"
