"""The network between cluster members: Raft RPCs as JSON-RPC notifications over TCP,
TLS (`ssl:` addresses, with the server's PKI both ways) or unix sockets, as the real
ovsdb-server exchanges them.

Rules kept here:
- Each member listens on its raft address and keeps one outgoing connection to every
  other member it knows an address for, reconnecting with backoff. Messages go out on
  whichever live connection leads to the destination server (outgoing, or incoming from
  it), as the real server does; a pair of members normally holds two connections.
- When an outgoing connection comes up, `on_up(sid, address)` lets the Raft core
  introduce us (`hello_request`, or a joiner's `add_server_request`); when a
  connection to a known server goes down, `on_down(sid)`.
- Incoming messages that do not parse, or come from the wrong cluster, are logged and
  dropped; echo probes are answered by the connection layer.
- Nothing here knows Raft's rules: messages in, messages out. Messages that find no
  connection are dropped (Raft retransmits).
- Paused (`set_paused`), no connection is read, new ones included: what arrives stays
  in the sockets until reading resumes.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import ssl
from collections.abc import Callable
from typing import Any

from ..jsonrpc.client import unix_path
from ..jsonrpc.connection import Connection
from ..jsonrpc.message import NOTIFY
from ..jsonrpc.tls import TlsAcceptor
from ..raft import rpc
from ..util.unixsock import listen_unix

log = logging.getLogger("raft")

RECONNECT_MIN = 0.1
RECONNECT_MAX = 4.0


class _RaftConn(Connection):
    def __init__(self, net: RaftNet, name: str, outgoing_to: str | None = None) -> None:
        super().__init__(name, probe_interval=0.0)
        self.net = net
        self.peer_sid: str | None = None
        self.outgoing_to = outgoing_to  # the address we dialed, for outgoing connections

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self.net.conns[self] = None
        if self.net.paused:
            self.set_reading(False)

    def set_reading(self, on: bool) -> None:
        t = self.transport
        if t is not None and not self.closed and t.is_reading() != on:
            if on:
                t.resume_reading()
            else:
                t.pause_reading()

    def on_message(self, kind: str, msg: dict[str, Any]) -> None:
        if kind != NOTIFY:
            return
        net = self.net
        try:
            m = rpc.from_jsonrpc(msg, cluster=net.cluster_id, sid=net.sid)
        except rpc.RpcError as e:
            log.info("%s: dropping message: %s", self.name, e)
            return
        if self.peer_sid is None:
            self.peer_sid = m.src
        net.deliver(m)

    def on_close(self) -> None:
        self.net.conns.pop(self, None)
        self.net.disconnections += 1
        if self.peer_sid is not None and self.net.on_down is not None:
            self.net.on_down(self.peer_sid)


class RaftNet:
    def __init__(self, sid: str, local_address: str, cluster_id: str | None,
                 deliver: Callable[[rpc.RaftRpc], None],
                 tls_in: Callable[[], ssl.SSLContext | None] | None = None,
                 tls_out: Callable[[], ssl.SSLContext | None] | None = None) -> None:
        self.sid = sid
        # (`ssl:` addresses) the server's PKI, accepting and connecting
        self.tls_in = tls_in or (lambda: None)
        self.tls_out = tls_out or (lambda: None)
        self.local_address = local_address
        self.cluster_id = cluster_id
        self.deliver = deliver
        self.conns: dict[_RaftConn, None] = {}  # an ordered set: oldest first
        self.peers: dict[str, str] = {}  # sid -> address (from the configuration)
        self.joining_addresses: list[str] = []
        self._dialers: dict[str, asyncio.Task[None]] = {}
        self._server: asyncio.AbstractServer | None = None
        self.on_up: Callable[[str | None, str], None] | None = None
        self.on_down: Callable[[str], None] | None = None
        self.closed = False
        self.disconnections = 0
        self.paused = False

    # -- listening ---------------------------------------------------------------------

    async def listen(self) -> None:
        loop = asyncio.get_running_loop()
        kind, _, rest = self.local_address.partition(":")

        def factory() -> _RaftConn:
            return _RaftConn(self, f"raft:{kind}")

        if kind == "unix":
            path = unix_path(rest)  # a relative name is in the run directory
            self._server = await loop.create_unix_server(factory,
                                                         sock=listen_unix(path, 128))
        elif kind == "tcp":
            host, _, port = rest.rpartition(":")
            self._server = await loop.create_server(factory, host.strip("[]"), int(port),
                                                    reuse_address=True)
        elif kind == "ssl":
            host, _, port = rest.rpartition(":")
            tls_in, name = self.tls_in, f"pssl:{port}:{host.strip('[]')}"

            def accept() -> TlsAcceptor:
                return TlsAcceptor(factory, tls_in, name)

            self._server = await loop.create_server(accept, host.strip("[]"), int(port),
                                                    reuse_address=True)
        else:
            raise ValueError(f"{self.local_address}: unsupported raft address")

    # -- peers -------------------------------------------------------------------------

    def set_peers(self, servers: dict[str, str]) -> None:
        """Keep outgoing connections to exactly these other members."""
        wanted = {sid: addr for sid, addr in servers.items() if sid != self.sid}
        for addr in list(self._dialers):
            if addr not in wanted.values() and addr not in self.joining_addresses:
                self._dialers.pop(addr).cancel()
        self.peers = wanted
        for c in self.conns:
            if c.outgoing_to is not None:
                # Who is at an address we dialed is what the configuration says (it
                # changes when a server is replaced by a new one at the same address,
                # and a joiner dials before it knows anybody).
                c.peer_sid = self._sid_for(c.outgoing_to) or c.peer_sid
        for sid, addr in wanted.items():
            if addr not in self._dialers:
                self._dial(addr, sid)

    def set_joining(self, addresses: list[str]) -> None:
        self.joining_addresses = list(addresses)
        for addr in addresses:
            if addr not in self._dialers and addr != self.local_address:
                self._dial(addr, None)

    def _dial(self, address: str, sid: str | None) -> None:
        self._dialers[address] = asyncio.get_running_loop().create_task(
            self._keep_connected(address, sid))

    async def _keep_connected(self, address: str, sid: str | None) -> None:
        from ..jsonrpc.session import connect

        backoff = RECONNECT_MIN
        while not self.closed:
            try:
                ctx = self.tls_out() if address.startswith("ssl:") else None
                conn = await connect(address, lambda: _RaftConn(self, address, address),
                                     timeout=5, ssl_context=ctx)
            except (OSError, TimeoutError, ValueError):
                await asyncio.sleep(backoff * random.uniform(0.5, 1.0))
                backoff = min(RECONNECT_MAX, backoff * 2)
                continue
            backoff = RECONNECT_MIN
            conn.peer_sid = self._sid_for(address) or sid
            lost = asyncio.get_running_loop().create_future()
            conn.on_closed.append(lambda f=lost: f.done() or f.set_result(None))
            if self.on_up is not None:
                self.on_up(conn.peer_sid, address)
            await lost

    # -- sending -----------------------------------------------------------------------

    def send(self, msg: rpc.RaftRpc) -> bool:
        """Send on a live connection to the destination; False if there is none."""
        dst = msg.dst
        target = msg.address_hint
        conn = None
        for c in self.conns:
            if c.closed:
                continue
            if dst is not None and c.peer_sid == dst:
                conn = c
                if c.outgoing_to is not None:
                    break  # prefer our own outgoing connection
            elif dst is None and target is not None and c.outgoing_to == target:
                conn = c
        if conn is None:
            return False
        conn.send(msg.to_jsonrpc())
        return True

    def set_paused(self, paused: bool) -> None:
        """Stop reading from every connection, or go on (`cluster/failure-test
        stop-raft-rpc`): what peers send meanwhile waits unread, and is handled once
        reading resumes, as when the real server leaves its sessions unrun."""
        self.paused = paused
        for c in self.conns:
            c.set_reading(not paused)

    def connected_peers(self) -> set[str]:
        return {c.peer_sid for c in self.conns if not c.closed and c.peer_sid is not None}

    def describe(self, nickname: Callable[[str], str]) -> list[str]:
        """`Connections:` items of cluster/status: <- incoming, -> outgoing, in
        parentheses while not connected (an outgoing one being re-dialed)."""
        parts = []
        for c in self.conns:
            if c.closed:
                continue
            arrow = "->" if c.outgoing_to is not None else "<-"
            name = nickname(c.peer_sid) if c.peer_sid is not None else "0000"
            parts.append(f"{arrow}{name}")
        connected = {c.outgoing_to for c in self.conns if not c.closed}
        for addr in self._dialers:
            if addr not in connected:
                sid = self._sid_for(addr)
                parts.append(f"(->{nickname(sid) if sid else '0000'})")
        return parts

    def _sid_for(self, address: str) -> str | None:
        for sid, addr in self.peers.items():
            if addr == address:
                return sid
        return None

    def close(self) -> None:
        self.closed = True
        for task in self._dialers.values():
            task.cancel()
        self._dialers.clear()
        if self._server is not None:
            self._server.close()
            self._server = None
        for c in list(self.conns):
            c.close()
        kind, _, rest = self.local_address.partition(":")
        if kind == "unix":
            try:
                os.unlink(unix_path(rest))
            except FileNotFoundError:
                pass
