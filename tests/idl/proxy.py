"""A JSON-RPC proxy between an IDL and a server, for tests: it records what the client
sends and can change what the server looks like (methods it lacks, its `_Server` row,
silence), on the test's own event loop. Nothing here starts a process."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import orjson

from pyovsdb.jsonrpc.stream import JsonStream

Message = dict[str, Any]


class Proxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.port = 0
        self.server: asyncio.AbstractServer | None = None
        # Client requests with these methods are answered "unknown method" here.
        self.reject: set[str] = set()
        # reply_hook(request, reply) -> reply: change a server reply.
        self.reply_hook: Callable[[Message, Message], Message] | None = None
        # Drop echo replies from the server and answer nothing: a server gone silent.
        self.silent = False
        # Close new connections at once: a server that cannot be reached.
        self.paused = False
        # What clients sent: (message, size in bytes as the client wrote it).
        self.sent: list[tuple[Message, int]] = []
        self.received_bytes = 0
        self.connections = 0
        self._clients: list[asyncio.StreamWriter] = []
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def remote(self) -> str:
        return f"tcp:127.0.0.1:{self.port}"

    async def start(self) -> Proxy:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
        self.drop_clients()
        for t in list(self._tasks):
            t.cancel()
        for t in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t

    async def __aenter__(self) -> Proxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def drop_clients(self) -> None:
        for w in self._clients:
            w.close()
        self._clients.clear()

    def requests(self, method: str) -> list[tuple[Message, int]]:
        return [(m, n) for m, n in self.sent if m.get("method") == method]

    def inject(self, msg: Message) -> None:
        """Send `msg` to every client, as if from the server."""
        data = orjson.dumps(msg)
        for w in self._clients:
            w.write(data)

    # -- pumping -------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.paused:
            writer.close()
            return
        self.connections += 1
        kind, _, addr = self.upstream.partition(":")
        try:
            if kind == "unix":
                up_r, up_w = await asyncio.open_unix_connection(addr)
            else:
                host, _, port = addr.rpartition(":")
                up_r, up_w = await asyncio.open_connection(host, int(port))
        except OSError:
            writer.close()
            return
        self._clients.append(writer)
        pending: dict[Any, Message] = {}
        t1 = asyncio.ensure_future(self._client_to_server(reader, up_w, writer, pending))
        t2 = asyncio.ensure_future(self._server_to_client(up_r, writer, pending))
        self._tasks.update((t1, t2))
        try:
            await asyncio.wait({t1, t2}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (t1, t2):
                t.cancel()
                self._tasks.discard(t)
            writer.close()
            up_w.close()
            if writer in self._clients:
                self._clients.remove(writer)

    async def _client_to_server(self, reader: asyncio.StreamReader,
                                up: asyncio.StreamWriter, client: asyncio.StreamWriter,
                                pending: dict[Any, Message]) -> None:
        stream = JsonStream()
        while True:
            data = await reader.read(1 << 16)
            if not data:
                return
            for msg in stream.feed(data):
                raw = orjson.dumps(msg)
                self.sent.append((msg, len(raw)))
                method = msg.get("method")
                if method in self.reject and msg.get("id") is not None:
                    client.write(orjson.dumps({"id": msg["id"], "error": "unknown method",
                                               "result": None}))
                    continue
                if self.silent and method == "echo":
                    continue
                if msg.get("id") is not None and method is not None:
                    pending[orjson.dumps(msg["id"])] = msg
                up.write(raw)

    async def _server_to_client(self, up: asyncio.StreamReader, client: asyncio.StreamWriter,
                                pending: dict[Any, Message]) -> None:
        stream = JsonStream()
        while True:
            data = await up.read(1 << 16)
            if not data:
                return
            self.received_bytes += len(data)
            for msg in stream.feed(data):
                if self.silent:
                    continue
                if msg.get("method") is None and msg.get("id") is not None:
                    request = pending.pop(orjson.dumps(msg["id"]), None)
                    if request is not None and self.reply_hook is not None:
                        msg = self.reply_hook(request, msg)
                client.write(orjson.dumps(msg))
